//! The key step with the real SDK (`azure_identity`'s client-secret credential and the Key Vault
//! keys client) against the simulator's loopback HTTPS endpoint.

use super::*;
use crate::azure::AzureEnvironment;
use crate::azure::credential::{CredentialCache, CredentialRequest};
use crate::azure::secret::SecretMaterial;
use crate::azuresim::https::directory::{SimIdentity, StaticDirectory};
use crate::azuresim::https::{SimHttps, SimHttpsConfig};
use crate::azuresim::keyvault::{KeyVaults, VaultPlan};
use crate::identity::AzureIdentity;
use crate::reconcile::aro::{KeyManager, KeyState};
use crate::retry::{Backoff, RetryPlan};
use serde_json::json;
use std::time::{Duration, Instant};

const SECRET: &str = "planted-client-secret-9f1c";
const NS: &str = "aro-dev";

struct Fixed(VaultAccess);

impl AccessSource for Fixed {
    fn access<'a>(&'a self, _acp: &'a Value) -> BoxFuture<'a, Result<VaultAccess, String>> {
        Box::pin(std::future::ready(Ok(self.0.clone())))
    }
}

struct Sim {
    https: SimHttps,
    vaults: KeyVaults,
    access: Arc<Fixed>,
}

impl Sim {
    async fn start() -> Sim {
        let identity = AzureIdentity::parse(&json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "AzureClusterIdentity",
            "metadata": {"name": "id", "namespace": NS},
            "spec": {"type": "ServicePrincipal", "tenantID": "tenant-1", "clientID": "client-1",
                "clientSecret": {"name": "id-secret"}, "allowedNamespaces": {}}}))
        .unwrap();
        let directory = StaticDirectory::new(vec![SimIdentity {
            identity: identity.clone(),
            secret: Some(SecretMaterial::new(SECRET)),
        }]);
        let https = SimHttps::start(Arc::new(directory), SimHttpsConfig::default())
            .await
            .unwrap();
        let vaults = KeyVaults::default();
        https.set_key_vault_handler(Arc::new(vaults.clone()));
        let endpoints = https.endpoints(AzureEnvironment::AzurePublicCloud);
        let cache = CredentialCache::new(https.transport().unwrap());
        let request = CredentialRequest::from_identity(
            &identity,
            Some(SecretMaterial::new(SECRET)),
            endpoints.clone(),
        );
        let access = Arc::new(Fixed(VaultAccess {
            credential: cache.credential(&request).unwrap(),
            options: cache.client_options(&endpoints),
            endpoints,
            identity: format!("AzureClusterIdentity {NS}/id (client ID client-1)"),
        }));
        Sim {
            https,
            vaults,
            access,
        }
    }

    fn keys(&self) -> KeyVaultKeys {
        KeyVaultKeys::new(self.access.clone()).with_retry(RetryPlan {
            backoff: Backoff {
                base: Duration::from_millis(10),
                max: Duration::from_millis(50),
                jitter: 0.5,
            },
            max_retry_after: Duration::from_secs(5),
            max_retries: 3,
            max_elapsed: Duration::from_secs(20),
        })
    }

    fn requests(&self) -> u64 {
        self.https.counts().key_vault_requests()
    }
}

fn acp() -> Value {
    json!({"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "AROControlPlane",
        "metadata": {"name": "dev", "namespace": NS, "labels": {"cluster.x-k8s.io/cluster-name": "dev"}},
        "spec": {"identityRef": {"kind": "AzureClusterIdentity", "name": "id"}}})
}

fn hcp(version: Option<&str>) -> Value {
    let mut key = json!({"name": "etcd-key", "vaultName": "dev-kv"});
    if let Some(v) = version {
        key["version"] = json!(v);
    }
    json!({"apiVersion": "redhatopenshift.azure.com/v1api20240610preview", "kind": "HcpOpenShiftCluster",
        "metadata": {"name": "dev", "namespace": NS},
        "spec": {"properties": {"etcd": {"dataEncryption": {"customerManaged": {"kms": {"activeKey": key}}}}}}})
}

/// The AROCluster declaring the vault, and the live Vault (Ready or not).
fn world(vault_ready: bool) -> Vec<Value> {
    let cluster = json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AROCluster",
        "metadata": {"name": "dev", "namespace": NS, "labels": {"cluster.x-k8s.io/cluster-name": "dev"}},
        "spec": {"resources": [{"apiVersion": "keyvault.azure.com/v1api20230701", "kind": "Vault",
            "metadata": {"name": "dev-kv"}, "spec": {"azureName": "dev-kv"}}]}});
    let status = if vault_ready { "True" } else { "False" };
    let vault = json!({"apiVersion": "keyvault.azure.com/v1api20230701", "kind": "Vault",
        "metadata": {"name": "dev-kv", "namespace": NS, "generation": 1},
        "status": {"conditions": [{"type": "Ready", "status": status, "observedGeneration": 1}]}});
    vec![cluster, vault]
}

fn version_of_state(state: &KeyState) -> &str {
    match state {
        KeyState::Known {
            version,
            inject: true,
            condition,
        } => {
            assert_eq!(
                (condition.status, condition.reason.as_str()),
                ("True", "KeyReady")
            );
            version
        }
        other => panic!("expected the key ready, got {other:?}"),
    }
}

#[tokio::test]
async fn an_absent_key_is_created_then_known_without_requests() {
    let sim = Sim::start().await;
    let keys = sim.keys();
    let live = world(true);
    let state = keys.key_state(&acp(), &hcp(None), &live).await;
    let version = version_of_state(&state).to_string();
    assert_eq!(
        sim.vaults.versions("dev-kv", "etcd-key"),
        vec![version.clone()]
    );
    assert_eq!(sim.requests(), 2, "get (404) and create");
    assert_eq!(
        sim.vaults.challenges(),
        1,
        "one challenge for the vault client"
    );
    assert_eq!(sim.https.counts().token_requests(), 1);
    let message = &state.condition().unwrap().message;
    assert_eq!(
        message,
        &format!("Encryption key 'etcd-key' version '{version}' ready in vault 'dev-kv'")
    );

    // Again in this process: known, no request.
    let again = keys.key_state(&acp(), &hcp(None), &live).await;
    assert_eq!(version_of_state(&again), version);
    // A new process that sees the version on the live HcpOpenShiftCluster: no request either.
    let mut with_live = live.clone();
    with_live.push(hcp(Some(&version)));
    let fresh = sim.keys().key_state(&acp(), &hcp(None), &with_live).await;
    assert_eq!(version_of_state(&fresh), version);
    assert_eq!(sim.requests(), 2, "no-op reruns make no request");
}

#[tokio::test]
async fn an_existing_key_is_read_not_created_again() {
    let sim = Sim::start().await;
    let first = sim.keys().key_state(&acp(), &hcp(None), &world(true)).await;
    let version = version_of_state(&first).to_string();
    let before = sim.requests();
    let second = sim.keys().key_state(&acp(), &hcp(None), &world(true)).await;
    assert_eq!(version_of_state(&second), version);
    assert_eq!(sim.requests() - before, 1, "one get");
    assert_eq!(sim.vaults.versions("dev-kv", "etcd-key").len(), 1);
}

#[tokio::test]
async fn throttling_and_unavailability_are_retried_honouring_retry_after() {
    let sim = Sim::start().await;
    sim.vaults.plan("dev-kv", |p| {
        p.faults = VaultPlan::parse_faults("429:1,503").unwrap();
    });
    let started = Instant::now();
    let state = sim.keys().key_state(&acp(), &hcp(None), &world(true)).await;
    version_of_state(&state);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited for Retry-After"
    );
    assert_eq!(sim.requests(), 4, "429, 503, then get (404) and create");
}

#[tokio::test]
async fn a_vault_that_keeps_failing_is_the_units_error_after_the_retries() {
    let sim = Sim::start().await;
    sim.vaults.plan("dev-kv", |p| {
        p.faults = VaultPlan::parse_faults("503,503,503,503,503").unwrap();
    });
    let state = sim.keys().key_state(&acp(), &hcp(None), &world(true)).await;
    let KeyState::Failed { condition } = &state else {
        panic!("{state:?}")
    };
    assert_eq!(condition.reason, "CreatingKey");
    assert!(condition.message.contains("503"), "{}", condition.message);
    assert_eq!(sim.requests(), 4, "the first try and 3 retries");
    // The next pass gets on with it.
    let state = sim.keys().key_state(&acp(), &hcp(None), &world(true)).await;
    version_of_state(&state);
}

#[tokio::test]
async fn a_forbidden_vault_names_the_vault_and_the_identity_never_the_secret() {
    let sim = Sim::start().await;
    sim.vaults.plan("dev-kv", |p| {
        p.denied.insert("client-1".into());
    });
    let state = sim.keys().key_state(&acp(), &hcp(None), &world(true)).await;
    let KeyState::Failed { condition } = &state else {
        panic!("{state:?}")
    };
    assert_eq!(condition.reason, "KeyVaultAccessDenied");
    let m = &condition.message;
    assert!(m.contains("Key Vault 'dev-kv'"), "{m}");
    assert!(
        m.contains("AzureClusterIdentity aro-dev/id (client ID client-1)"),
        "{m}"
    );
    assert!(m.contains("403"), "{m}");
    assert!(
        m.contains("does not have keys get permission"),
        "the vault's word: {m}"
    );
    assert!(
        !m.contains(SECRET) && !m.contains("simulated-entra-token"),
        "{m}"
    );
    assert_eq!(sim.requests(), 1, "a 403 is not retried");
}

#[tokio::test]
async fn nothing_is_asked_before_the_vault_is_ready_or_without_an_identity() {
    let sim = Sim::start().await;
    let keys = sim.keys();
    let state = keys.key_state(&acp(), &hcp(None), &world(false)).await;
    assert_eq!(state.condition().unwrap().reason, "WaitingForVault");
    let mut manual = acp();
    manual["spec"]
        .as_object_mut()
        .unwrap()
        .remove("identityRef");
    let state = keys
        .key_state(&manual, &hcp(Some("v1")), &world(true))
        .await;
    assert_eq!(state.condition().unwrap().reason, "ManualKeyManagement");
    assert_eq!(sim.requests() + sim.vaults.challenges(), 0);
}

#[test]
fn the_version_is_the_last_segment_of_the_key_id() {
    let cases = [
        (
            "https://v.vault.azure.net/keys/k/0123456789abcdef0123456789abcdef",
            Some("0123456789abcdef0123456789abcdef"),
        ),
        (
            "https://v.vault.azure.net/keys/k/abc?api-version=7.6",
            Some("abc"),
        ),
        ("https://v.vault.azure.net/keys/k", None),
        ("https://v.vault.azure.net/keys/k/", None),
        ("https://v.vault.azure.net/secrets/k/abc", None),
        ("", None),
    ];
    for (id, want) in cases {
        assert_eq!(key_version(id), want, "{id}");
    }
}

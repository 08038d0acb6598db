//! The ARM read client (`azure::resource_manager`, the `azure_core` pipeline with a client-secret
//! credential from `azure_identity`) against the simulator's Resource Manager endpoint over
//! loopback HTTPS: found (200), absent (404, both codes), refused (403), throttled then found
//! (429 with `Retry-After`, honoured), throttled for good (429 after the retries), and other
//! statuses (an error with ARM's code). No token ever shows in an error.

use aro_gitops::azure::AzureEnvironment;
use aro_gitops::azure::credential::{CredentialCache, CredentialRequest};
use aro_gitops::azure::resource_manager::{ArmError, ResourceManager};
use aro_gitops::azure::secret::SecretMaterial;
use aro_gitops::azuresim::https::arm::{ArmFault, ArmInventory, SimArm};
use aro_gitops::azuresim::https::directory::{SimIdentity, StaticDirectory};
use aro_gitops::azuresim::https::tokens::TOKEN_PREFIX;
use aro_gitops::azuresim::https::{SimHttps, SimHttpsConfig};
use aro_gitops::identity::AzureIdentity;
use aro_gitops::retry::{Backoff, RetryPlan};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SECRET: &str = "planted-arm-client-secret-7d2e";
const ZERO: &str = "/subscriptions/00000000-0000-0000-0000-000000000000";
/// A subscription the simulator answers from its all-zero one.
const SUB: &str = "/subscriptions/8f1c2a34-5b6d-4e7f-9a0b-1c2d3e4f5a60";
const IDENTITY: &str = "AzureClusterIdentity aro-dev/id (client ID client-arm)";

/// The simulated inventory, in memory: records by lower-cased ARM id.
struct Records(HashMap<String, Value>);

#[async_trait::async_trait]
impl ArmInventory for Records {
    async fn get(&self, arm_id: &str) -> Result<Option<Value>, String> {
        Ok(self.0.get(&arm_id.to_ascii_lowercase()).cloned())
    }
}

struct Sim {
    https: SimHttps,
    arm: Arc<SimArm>,
    cache: CredentialCache,
    request: CredentialRequest,
}

impl Sim {
    async fn start() -> Sim {
        let identity = AzureIdentity::parse(&json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "AzureClusterIdentity",
            "metadata": {"name": "id", "namespace": "aro-dev"},
            "spec": {"type": "ServicePrincipal", "tenantID": "tenant-arm", "clientID": "client-arm",
                "clientSecret": {"name": "id-secret"}, "allowedNamespaces": {}}}))
        .unwrap();
        let directory = StaticDirectory::new(vec![SimIdentity {
            identity: identity.clone(),
            secret: Some(SecretMaterial::new(SECRET)),
        }]);
        let https = SimHttps::start(Arc::new(directory), SimHttpsConfig::default())
            .await
            .unwrap();
        let rg = format!("{ZERO}/resourceGroups/existing-rg");
        let records = Records(HashMap::from([(
            rg.to_ascii_lowercase(),
            json!({"spec": {"armId": rg, "type": "Microsoft.Resources/resourceGroups", "location": "eastus"}}),
        )]));
        let arm = Arc::new(SimArm::new(Arc::new(records)));
        https.set_arm(arm.clone());
        let endpoints = https.endpoints(AzureEnvironment::AzurePublicCloud);
        let cache = CredentialCache::new(https.transport().unwrap());
        let request = CredentialRequest::from_identity(
            &identity,
            Some(SecretMaterial::new(SECRET)),
            endpoints,
        );
        Sim {
            https,
            arm,
            cache,
            request,
        }
    }

    fn client(&self) -> ResourceManager {
        let endpoints = &self.request.endpoints;
        ResourceManager::new(
            endpoints,
            self.cache.credential(&self.request).unwrap(),
            self.cache.client_options(endpoints),
            IDENTITY.into(),
        )
        .with_retry(RetryPlan {
            backoff: Backoff {
                base: Duration::from_millis(10),
                max: Duration::from_millis(50),
                jitter: 0.0,
            },
            max_retry_after: Duration::from_secs(5),
            max_retries: 2,
            max_elapsed: Duration::from_secs(20),
        })
    }
}

fn rg(name: &str) -> String {
    format!("{SUB}/resourceGroups/{name}")
}

fn no_token(e: &ArmError) {
    let text = e.to_string();
    assert!(
        !text.contains(TOKEN_PREFIX) && !text.contains(SECRET),
        "{text}"
    );
}

#[tokio::test]
async fn found_and_absent_resources_are_answers() {
    let sim = Sim::start().await;
    let arm = sim.client();
    assert_eq!(arm.exists(&rg("existing-rg"), "2020-06-01").await, Ok(true));
    // 404 ResourceGroupNotFound: the group itself, or anything under a missing group.
    assert_eq!(arm.exists(&rg("missing-rg"), "2020-06-01").await, Ok(false));
    let vnet = |group: &str| {
        format!(
            "{}/providers/Microsoft.Network/virtualNetworks/v1",
            rg(group)
        )
    };
    assert_eq!(
        arm.exists(&vnet("missing-rg"), "2020-11-01").await,
        Ok(false)
    );
    // 404 ResourceNotFound: under a group that exists.
    assert_eq!(
        arm.exists(&vnet("existing-rg"), "2020-11-01").await,
        Ok(false)
    );
    assert_eq!(
        sim.https
            .endpoints(AzureEnvironment::AzurePublicCloud)
            .resource_manager_url(),
        format!(
            "https://management.public.azure-sim.invalid:{}",
            sim.https.port()
        )
    );
}

#[tokio::test]
async fn a_refusal_names_the_identity_and_the_missing_read_permission() {
    let sim = Sim::start().await;
    sim.arm.push_faults([ArmFault::Forbidden]);
    let e = sim
        .client()
        .exists(&rg("existing-rg"), "2020-06-01")
        .await
        .unwrap_err();
    assert!(
        matches!(e, ArmError::Forbidden { ref code, .. } if code == "AuthorizationFailed"),
        "{e}"
    );
    let text = e.to_string();
    assert!(
        text.contains(IDENTITY) && text.contains("read access"),
        "{text}"
    );
    assert!(text.contains("existing-rg"), "{text}");
    no_token(&e);
}

#[tokio::test]
async fn throttling_is_retried_after_the_servers_retry_after() {
    let sim = Sim::start().await;
    sim.arm.push_faults([ArmFault::Throttle {
        retry_after_secs: 1,
    }]);
    let started = Instant::now();
    let found = sim.client().exists(&rg("existing-rg"), "2020-06-01").await;
    assert_eq!(found, Ok(true));
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "Retry-After: 1 was honoured ({:?})",
        started.elapsed()
    );
}

#[tokio::test]
async fn throttling_that_does_not_end_is_an_error_after_the_retries() {
    let sim = Sim::start().await;
    sim.arm.push_faults(std::iter::repeat_n(
        ArmFault::Throttle {
            retry_after_secs: 0,
        },
        10,
    ));
    let e = sim
        .client()
        .exists(&rg("existing-rg"), "2020-06-01")
        .await
        .unwrap_err();
    assert_eq!(
        e,
        ArmError::Throttled {
            arm_id: rg("existing-rg"),
            retries: 2
        }
    );
    assert!(e.to_string().contains("429"), "{e}");
    no_token(&e);
    sim.arm.clear_faults();
}

#[tokio::test]
async fn other_statuses_are_errors_with_arms_code() {
    let sim = Sim::start().await;
    sim.arm.push_faults([ArmFault::Status(409)]);
    let e = sim
        .client()
        .exists(&rg("existing-rg"), "2020-06-01")
        .await
        .unwrap_err();
    assert!(
        matches!(e, ArmError::Status { status: 409, ref code, .. } if code == "SimulatedFault"),
        "{e}"
    );

    // Without an api-version ARM answers 400 MissingApiVersionParameter: an error with its code.
    let e = sim
        .client()
        .exists(&rg("existing-rg"), "")
        .await
        .unwrap_err();
    assert!(
        matches!(e, ArmError::Status { status: 400, ref code, .. } if code == "MissingApiVersionParameter"),
        "{e}"
    );
    no_token(&e);
}

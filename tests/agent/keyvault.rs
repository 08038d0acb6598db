//! The agent-managed etcd encryption key through a full run (issue 13, part 4): the dev cluster's
//! AROControlPlane names a ServicePrincipal identity and gives no key version; the agent gets or
//! creates the key in the simulated Key Vault with the real SDK, injects the version into the
//! HcpOpenShiftCluster and reports `EncryptionKeyReady` True `KeyReady`.

use super::*;

/// The identity's client secret: planted, searched for in every output.
const SECRET: &str = "kv-agent-test-secret-7d1f0c";

fn acp() -> ObjectKey {
    key(
        "controlplane.cluster.x-k8s.io/v1beta2",
        "AROControlPlane",
        "aro-dev",
        "dev",
    )
}

fn hcp_key() -> ObjectKey {
    key(HCP, "HcpOpenShiftCluster", "aro-dev", "aro-dev")
}

/// What the example's prod cluster asks of the simulated Azure on a first run (its key is
/// agent-managed through the workload identity aro-prod/aro-identity): (token requests, Key Vault
/// requests: get (404) and create).
const PROD_KEY: (u64, u64) = (1, 2);

const CLIENT_ID: &str = "0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f";

/// JSON 6902 patches of the dev cluster's objects: `(kind, ops)`, in one patch list.
fn patch_dev(f: &Fleet, patches: &[(&str, &str)]) {
    let rel = format!("{DEV}/kustomization.yaml");
    let text = std::fs::read_to_string(f.repo.join(&rel)).expect("read the kustomization");
    let mut out = format!("{text}\npatches:\n");
    for (kind, ops) in patches {
        let ops: String = ops.lines().map(|l| format!("      {l}\n")).collect();
        out += &format!("  - target: {{kind: {kind}, name: dev}}\n    patch: |-\n{ops}");
    }
    f.write(&rel, &out);
}

const MANAGED_KEY: &str = "- op: add\n  path: /spec/identityRef\n  value: {kind: AzureClusterIdentity, name: kv-identity}\n- op: add\n  path: /spec/resources/0/spec/properties/etcd\n  value: {dataEncryption: {keyManagementMode: CustomerManaged, customerManaged: {encryptionType: KMS, kms: {activeKey: {name: etcd-data-kms-encryption-key, vaultName: arogitops-dev-kv}}}}}";

/// The dev cluster with an agent-managed key: its own ServicePrincipal identity (and Secret) and
/// no key version in git; `vault_annotations`: on its Vault (the simulator's settings).
fn managed_key_fixture_with(vault_annotations: Option<&str>) -> Fleet {
    managed_key_fixture_in("aro-dev", vault_annotations)
}

/// As [`managed_key_fixture_with`], the identity allowing only namespace `allowed`.
fn managed_key_fixture_in(allowed: &str, vault_annotations: Option<&str>) -> Fleet {
    let f = Fleet::plain();
    f.write(
        &format!("{DEV}/kv-identity.yaml"),
        &format!(
            "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureClusterIdentity
metadata:
  name: kv-identity
spec:
  type: ServicePrincipal
  clientID: {CLIENT_ID}
  tenantID: 3e5a7c9d-1b2f-4a6c-8d0e-2f4a6c8e0b13
  clientSecret:
    name: kv-identity-secret
  allowedNamespaces:
    list: [{allowed}]
---
apiVersion: v1
kind: Secret
metadata:
  name: kv-identity-secret
type: Opaque
stringData:
  clientSecret: {SECRET}
"
        ),
    );
    f.add_resource(DEV, "kv-identity.yaml");
    let vault = vault_annotations.map(|a| {
        format!("- op: add\n  path: /spec/resources/4/metadata/annotations\n  value: {{{a}}}")
    });
    let mut patches = vec![("AROControlPlane", MANAGED_KEY)];
    if let Some(v) = &vault {
        patches.push(("AROCluster", v));
    }
    patch_dev(&f, &patches);
    f
}

pub(super) fn managed_key_fixture() -> Fleet {
    managed_key_fixture_with(None)
}

fn condition<'a>(obj: &'a Value, type_: &str) -> &'a Value {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .unwrap_or_else(|| panic!("condition {type_} in {obj:#}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_creates_the_key_injects_its_version_and_reports_it() {
    let f = managed_key_fixture();
    let s = f.run().await;
    assert_converged(outcome(&s, DEV));
    assert_converged(outcome(&s, PROD));
    let (cp, hcp) = f
        .inspect(|c| async move { (live(&c, &acp()).await, live(&c, &hcp_key()).await) })
        .await;
    let version = hcp
        .pointer("/spec/properties/etcd/dataEncryption/customerManaged/kms/activeKey/version")
        .and_then(Value::as_str)
        .expect("the version is injected")
        .to_string();
    assert_eq!(version.len(), 32, "{version}");
    assert!(version.chars().all(|c| c.is_ascii_hexdigit()), "{version}");
    let ready = condition(&cp, "EncryptionKeyReady");
    assert_eq!(ready["status"], "True", "{ready}");
    assert_eq!(ready["reason"], "KeyReady");
    assert_eq!(
        ready["message"],
        format!(
            "Encryption key 'etcd-data-kms-encryption-key' version '{version}' ready in vault 'arogitops-dev-kv'"
        )
    );
    let azure = s.azure_requests.expect("Azure is simulated by the run");
    // The example's prod cluster makes its own key too (PROD_KEY): the dev key is the rest.
    assert_eq!(azure.key_vault, 2 + PROD_KEY.1, "get (404) and create");
    assert_eq!(azure.token, 1 + PROD_KEY.0, "one token for each identity");
    let md = f.report("reports/aro-dev/dev.md").expect("the dev report");
    assert!(!md.contains(SECRET), "no secret in the report");

    // A rerun (a new process) reads the version back from the live HcpOpenShiftCluster: the same
    // version, nothing created.
    let again = f.run().await;
    assert_converged(outcome(&again, DEV));
    let azure = again.azure_requests.expect("Azure is simulated by the run");
    assert_eq!(
        (azure.key_vault, azure.token),
        (0, 0),
        "a no-op rerun asks nothing"
    );
    let hcp = f
        .inspect(|c| async move { live(&c, &hcp_key()).await })
        .await;
    assert_eq!(
        hcp.pointer("/spec/properties/etcd/dataEncryption/customerManaged/kms/activeKey/version")
            .and_then(Value::as_str),
        Some(version.as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vault_that_refuses_the_identity_fails_that_cluster_only_naming_vault_and_identity() {
    let f = managed_key_fixture_with(Some(&format!(
        "aro-gitops.dev/simulate-keyvault-deny: {CLIENT_ID}"
    )));
    let s = f.run().await;
    let o = outcome(&s, DEV);
    assert_eq!(report::phase(o), Phase::Failed, "{}", describe(o));
    assert_converged(outcome(&s, PROD));
    let error = o
        .errors
        .iter()
        .find(|e| e.message.contains("403"))
        .unwrap_or_else(|| panic!("a 403 error: {}", describe(o)));
    assert!(
        error.message.contains("Key Vault 'arogitops-dev-kv'"),
        "{}",
        error.message
    );
    assert!(
        error.message.contains(&format!(
            "AzureClusterIdentity aro-dev/kv-identity (client ID {CLIENT_ID})"
        )),
        "{}",
        error.message
    );
    // Nothing of the cluster's control plane is created without its key.
    let (cp, hcp) = f
        .inspect(|c| async move {
            (
                live(&c, &acp()).await,
                c.get(&hcp_key()).await.expect("get"),
            )
        })
        .await;
    assert!(hcp.is_none(), "the HcpOpenShiftCluster waits for its key");
    let ready = condition(&cp, "EncryptionKeyReady");
    assert_eq!(ready["reason"], "KeyVaultAccessDenied", "{ready}");
    let md = f.report("reports/aro-dev/dev.md").expect("the dev report");
    assert!(md.contains("KeyVaultAccessDenied"), "{md}");
    assert!(!md.contains(SECRET) && !format!("{s:?}").contains(SECRET));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vault_the_aro_cluster_does_not_declare_fails_that_cluster_without_a_request() {
    let f = managed_key_fixture();
    let rel = format!("{DEV}/kustomization.yaml");
    let text = std::fs::read_to_string(f.repo.join(&rel)).expect("read the kustomization");
    f.write(
        &rel,
        &format!(
            "{text}      - op: replace\n        path: /spec/resources/0/spec/properties/etcd/dataEncryption/customerManaged/kms/activeKey/vaultName\n        value: undeclared-kv\n"
        ),
    );
    let s = f.run().await;
    let o = outcome(&s, DEV);
    assert_eq!(report::phase(o), Phase::Failed, "{}", describe(o));
    assert_converged(outcome(&s, PROD));
    assert!(
        o.errors.iter().any(|e| e
            .message
            .contains("Key Vault 'undeclared-kv' must be declared in AROCluster.spec.resources[]")),
        "{}",
        describe(o)
    );
    let azure = s.azure_requests.expect("Azure is simulated by the run");
    assert_eq!(
        azure.key_vault, PROD_KEY.1,
        "nothing asked of an undeclared vault (only prod's key)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_identity_that_does_not_allow_the_namespace_is_never_used_for_the_key() {
    let f = managed_key_fixture_in("aro-elsewhere", None);
    let s = f.run().await;
    let o = outcome(&s, DEV);
    assert_eq!(report::phase(o), Phase::Failed, "{}", describe(o));
    assert_converged(outcome(&s, PROD));
    assert!(
        o.errors.iter().any(|e| e.message.contains(
            "AzureClusterIdentity list of allowed namespaces doesn't include current cluster namespace"
        )),
        "{}",
        describe(o)
    );
    let azure = s.azure_requests.expect("Azure is simulated by the run");
    assert_eq!(
        (azure.token, azure.key_vault),
        PROD_KEY,
        "no token, no Key Vault request for dev (only prod's key)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_then_failing_vault_is_retried_and_the_key_made() {
    let f = managed_key_fixture_with(Some("aro-gitops.dev/simulate-keyvault-faults: '429:1,503'"));
    let s = f.run().await;
    assert_converged(outcome(&s, DEV));
    assert_converged(outcome(&s, PROD));
    let azure = s.azure_requests.expect("Azure is simulated by the run");
    assert_eq!(
        azure.key_vault,
        4 + PROD_KEY.1,
        "429 and 503 retried, then get (404) and create (and prod's key)"
    );
    let cp = f.inspect(|c| async move { live(&c, &acp()).await }).await;
    assert_eq!(condition(&cp, "EncryptionKeyReady")["reason"], "KeyReady");
}

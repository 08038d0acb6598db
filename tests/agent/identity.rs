//! AzureClusterIdentity on `examples-repo` (issue 13): both clusters name the workload identity
//! `aro-identity` (allowed in `aro-dev` and `aro-prod`). A cluster its identity allows converges
//! with its ASO credential Secret (`<cluster>-aso-secret`) and every ASO resource annotated
//! `serviceoperator.azure.com/credential-from`; a cluster whose namespace is not allowed gets
//! `NamespaceNotAllowedByIdentity` on its ARO objects and none of its ASO objects exist, while the
//! other cluster carries on, and a cluster its identity stops allowing keeps everything as it was;
//! a missing identity or identity Secret is a per-cluster error; an identity another unit declares
//! is waited for.

use super::*;
use base64::Engine as _;

const INFRA_API: &str = "infrastructure.cluster.x-k8s.io/v1beta2";
const CONTROL_PLANE_API: &str = "controlplane.cluster.x-k8s.io/v1beta2";
const RG_API: &str = "resources.azure.com/v1api20200601";
const CREDENTIAL_FROM: &str = "serviceoperator.azure.com/credential-from";

fn secret_key(ns: &str, name: &str) -> ObjectKey {
    key("v1", "Secret", ns, name)
}

fn decoded(secret: &Value, k: &str) -> String {
    let v = secret["data"][k]
        .as_str()
        .unwrap_or_else(|| panic!("{k} in {secret:?}"));
    String::from_utf8(base64::engine::general_purpose::STANDARD.decode(v).unwrap()).unwrap()
}

fn ready_condition(obj: &Value) -> Value {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
        .cloned()
        .unwrap_or(Value::Null)
}

/// Every ASO object of namespace `ns` (the kinds the examples embed).
async fn aso_objects(c: &Cluster, ns: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (api, kind) in [
        (RG_API, "ResourceGroup"),
        ("network.azure.com/v1api20201101", "VirtualNetwork"),
        ("keyvault.azure.com/v1api20230701", "Vault"),
        (
            "managedidentity.azure.com/v1api20230131",
            "UserAssignedIdentity",
        ),
        (HCP, "HcpOpenShiftCluster"),
    ] {
        for o in c.list(&key(api, kind, ns, ""), None).await.expect("list") {
            out.push(format!(
                "{kind}/{}",
                o["metadata"]["name"].as_str().unwrap_or("")
            ));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn an_allowed_cluster_converges_with_its_credential_and_a_disallowed_one_gets_nothing() {
    let f = Fleet::plain();
    f.add_patch(
        DEV,
        "AzureClusterIdentity",
        "aro-identity",
        "- op: replace\n  path: /spec/allowedNamespaces/list\n  value: [aro-prod]",
    );
    let summary = f.run().await;
    assert_converged(outcome(&summary, PROD));
    let dev = outcome(&summary, DEV);
    assert_eq!(report::phase(dev), Phase::Failed, "{}", describe(dev));
    assert!(
        dev.errors.iter().any(|e| e.message.contains(
            "AzureClusterIdentity aro-dev/aro-identity does not allow namespace aro-dev"
        )),
        "{}",
        describe(dev)
    );
    f.inspect(|c| async move {
        // prod: its credential Secret, named on every ASO resource.
        let secret = live(&c, &secret_key("aro-prod", "prod-aso-secret")).await;
        assert_eq!(decoded(&secret, "AUTH_MODE"), "workloadidentity");
        assert_eq!(decoded(&secret, "AZURE_CLIENT_ID"), "6b8d0f2a-4c6e-4a8b-9c1d-3e5f7a9b1c2d");
        assert_eq!(decoded(&secret, "AZURE_TENANT_ID"), "3e5a7c9d-1b2f-4a6c-8d0e-2f4a6c8e0b13");
        assert!(!decoded(&secret, "AZURE_SUBSCRIPTION_ID").is_empty());
        let rg = live(&c, &key(RG_API, "ResourceGroup", "aro-prod", "aro-prod-rg")).await;
        assert_eq!(rg["metadata"]["annotations"][CREDENTIAL_FROM], "prod-aso-secret");
        let hcp = live(&c, &key(HCP, "HcpOpenShiftCluster", "aro-prod", "aro-prod")).await;
        assert_eq!(hcp["metadata"]["annotations"][CREDENTIAL_FROM], "prod-aso-secret");
        // dev: the condition on its ARO objects, nothing of it in Azure.
        for (api, kind) in [
            (CONTROL_PLANE_API, "AROControlPlane"),
            (INFRA_API, "AROCluster"),
        ] {
            let o = live(&c, &key(api, kind, "aro-dev", "dev")).await;
            let ready = ready_condition(&o);
            assert_eq!(ready["status"], "False", "{kind}: {ready}");
            assert_eq!(ready["reason"], "NamespaceNotAllowedByIdentity", "{kind}: {ready}");
            // CAPZ's v1beta2 conditions have no severity.
            assert!(ready.get("severity").is_none(), "{kind}: {ready}");
            assert_eq!(
                ready["message"],
                "AzureClusterIdentity list of allowed namespaces doesn't include current cluster namespace"
            );
            assert_eq!(o["status"]["ready"], false);
        }
        let pools = c
            .list(&key(INFRA_API, "AROMachinePool", "aro-dev", ""), None)
            .await
            .expect("list");
        assert!(!pools.is_empty());
        for p in &pools {
            assert_eq!(ready_condition(p)["reason"], "NamespaceNotAllowedByIdentity");
        }
        assert_eq!(aso_objects(&c, "aro-dev").await, Vec::<String>::new());
        assert!(c.get(&secret_key("aro-dev", "dev-aso-secret")).await.unwrap().is_none());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_identity_is_an_error_of_that_cluster_only() {
    let f = Fleet::plain();
    f.add_patch(
        DEV,
        "AROControlPlane",
        "dev",
        "- op: replace\n  path: /spec/identityRef/name\n  value: nowhere",
    );
    let summary = f.run().await;
    assert_converged(outcome(&summary, PROD));
    let dev = outcome(&summary, DEV);
    assert_eq!(report::phase(dev), Phase::Failed, "{}", describe(dev));
    assert!(
        dev.errors.iter().any(|e| e.message
            == "AROControlPlane/aro-dev/dev: its AzureClusterIdentity aro-dev/nowhere does not exist"),
        "{}",
        describe(dev)
    );
    // A broken definition: nothing of the cluster is applied.
    f.inspect(|c| async move {
        assert_eq!(aso_objects(&c, "aro-dev").await, Vec::<String>::new());
        let acp = key(CONTROL_PLANE_API, "AROControlPlane", "aro-dev", "dev");
        assert!(c.get(&acp).await.expect("get").is_none());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_principal_without_its_secret_fails_and_with_it_converges_unseen() {
    const PLANTED: &str = "planted-sp-client-secret-2f8e1c";
    let f = Fleet::plain();
    f.add_patch(
        DEV,
        "AzureClusterIdentity",
        "aro-identity",
        "- op: replace\n  path: /spec/type\n  value: ServicePrincipal\n\
         - op: add\n  path: /spec/clientSecret\n  value: {name: dev-identity-secret}",
    );
    let summary = f.run().await;
    assert_converged(outcome(&summary, PROD));
    let dev = outcome(&summary, DEV);
    assert!(
        dev.errors.iter().any(|e| e.message.contains(
            "AzureClusterIdentity/aro-dev/aro-identity (type ServicePrincipal): its Secret aro-dev/dev-identity-secret does not exist"
        )),
        "{}",
        describe(dev)
    );
    // The platform team puts the identity's Secret on the control plane (never in git).
    f.inspect(|c| async move {
        let k = secret_key("aro-dev", "dev-identity-secret");
        let body = serde_json::json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "dev-identity-secret", "namespace": "aro-dev"},
            "stringData": {"clientSecret": PLANTED}});
        c.apply(&k, &body, "platform-team")
            .await
            .expect("apply the Secret");
    })
    .await;
    let summary = f.run().await;
    assert_converged(outcome(&summary, DEV));
    f.inspect(|c| async move {
        let secret = live(&c, &secret_key("aro-dev", "dev-aso-secret")).await;
        assert_eq!(decoded(&secret, "AZURE_CLIENT_SECRET"), PLANTED);
        assert!(secret["data"].get("AUTH_MODE").is_none());
    })
    .await;
    let encoded = base64::engine::general_purpose::STANDARD.encode(PLANTED);
    for path in ["reports/aro-dev/dev.md", "reports/aro-dev/dev.json"] {
        if let Some(text) = f.report(path) {
            assert!(
                !text.contains(PLANTED) && !text.contains(&encoded),
                "{path}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_identity_of_another_unit_is_waited_for_and_used_across_namespaces() {
    let f = Fleet::plain();
    f.write(
        "clusters/shared/kustomization.yaml",
        "resources: [identity.yaml]\n",
    );
    f.write(
        "clusters/shared/identity.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: aro-shared}\n---\n\
         apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: AzureClusterIdentity\n\
         metadata: {name: shared, namespace: aro-shared}\n\
         spec:\n  type: WorkloadIdentity\n  clientID: 11111111-2222-4333-a444-555555555555\n  \
         tenantID: 3e5a7c9d-1b2f-4a6c-8d0e-2f4a6c8e0b13\n  allowedNamespaces: {list: [aro-dev]}\n",
    );
    f.add_patch(
        DEV,
        "AROControlPlane",
        "dev",
        "- op: replace\n  path: /spec/identityRef\n  value: {kind: AzureClusterIdentity, name: shared, namespace: aro-shared}",
    );
    let summary = f.run().await;
    assert_converged(outcome(&summary, DEV));
    assert_converged(outcome(&summary, PROD));
    f.inspect(|c| async move {
        let secret = live(&c, &secret_key("aro-dev", "dev-aso-secret")).await;
        assert_eq!(
            decoded(&secret, "AZURE_CLIENT_ID"),
            "11111111-2222-4333-a444-555555555555"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cluster_its_identity_stops_allowing_keeps_everything_and_changes_nothing() {
    let f = Fleet::plain();
    let summary = f.run().await;
    assert_converged(outcome(&summary, DEV));
    let generations = |c: Cluster| async move {
        let mut out = Vec::new();
        for (api, kind, name) in [
            (RG_API, "ResourceGroup", "aro-dev-rg"),
            (HCP, "HcpOpenShiftCluster", "aro-dev"),
        ] {
            let o = live(&c, &key(api, kind, "aro-dev", name)).await;
            out.push((name, o["metadata"]["generation"].clone()));
        }
        (aso_objects(&c, "aro-dev").await, out)
    };
    let before = f.inspect(generations).await;
    f.add_patch(
        DEV,
        "AzureClusterIdentity",
        "aro-identity",
        "- op: replace\n  path: /spec/allowedNamespaces\n  value: {list: []}",
    );
    let summary = f.run().await;
    let dev = outcome(&summary, DEV);
    assert_eq!(report::phase(dev), Phase::Failed, "{}", describe(dev));
    assert!(
        with_action(dev, &ObjectAction::Deleted).is_empty(),
        "{}",
        describe(dev)
    );
    assert_converged(outcome(&summary, PROD));
    let after = f.inspect(generations).await;
    assert_eq!(after, before);
    f.inspect(|c| async move {
        assert!(
            c.get(&secret_key("aro-dev", "dev-aso-secret"))
                .await
                .unwrap()
                .is_some()
        );
        let acp = live(
            &c,
            &key(CONTROL_PLANE_API, "AROControlPlane", "aro-dev", "dev"),
        )
        .await;
        assert_eq!(
            ready_condition(&acp)["reason"],
            "NamespaceNotAllowedByIdentity"
        );
    })
    .await;
}

//! Tests of the cross-object rules of `validate` (identity, duplicates, reconcile policy, secrets,
//! display) and of `validate_report`: good and bad cases, messages asserted.

use super::fixtures::*;
use super::*;
use serde_json::json;
use std::path::PathBuf;

#[test]
fn object_without_identity_is_reported_with_its_file() {
    let found = messages(vec![
        (
            "a.yaml",
            json!({"kind": "ConfigMap", "metadata": {"name": "x"}}),
        ),
        (
            "b.yaml",
            json!({"apiVersion": "v1", "metadata": {"name": "x"}}),
        ),
        (
            "c.yaml",
            json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AROCluster", "metadata": {}}),
        ),
        ("d.yaml", json!(["not", "an", "object"])),
    ]);
    assert_eq!(
        found,
        vec![
            "a.yaml: object has no apiVersion",
            "b.yaml: object has no kind",
            "c.yaml: AROCluster has no metadata.name",
            "d.yaml: object is not a mapping",
        ]
    );
}

#[test]
fn duplicates_name_both_origins() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "aro-dev"}});
    let mut other_ns = cm.clone();
    other_ns["metadata"]["namespace"] = json!("aro-prod");
    assert_eq!(
        messages(vec![
            ("a.yaml", cm.clone()),
            ("b.yaml", other_ns),
            ("c.yaml", cm)
        ]),
        vec!["c.yaml: ConfigMap/aro-dev/c: defined twice: in a.yaml and in c.yaml"]
    );
}

#[test]
fn embedded_duplicates_count_in_the_owner_namespace() {
    // Two machine pools embedding the same node pool: the agent would apply one object twice.
    let found = messages(vec![
        ("a.yaml", machine_pool("dev-a", json!([node_pool("dev-a")]))),
        ("b.yaml", machine_pool("dev-b", json!([node_pool("dev-a")]))),
    ]);
    assert_eq!(
        found,
        vec![
            "b.yaml: HcpOpenShiftClustersNodePool/aro-dev/dev-a: defined twice: in a.yaml (AROMachinePool/aro-dev/dev-a \
              spec.resources[0]) and in b.yaml (AROMachinePool/aro-dev/dev-b spec.resources[0])"
        ]
    );
    // An embedded resource also declared as a top-level object in the same namespace.
    let mut top = vault(json!({}));
    top["metadata"]["namespace"] = json!("aro-dev");
    let found = messages(vec![
        ("c.yaml", aro_cluster(json!([vault(json!({}))]))),
        ("v.yaml", top),
    ]);
    assert_eq!(
        found,
        vec![
            "v.yaml: Vault/aro-dev/dev-kv: defined twice: in c.yaml (AROCluster/aro-dev/dev spec.resources[0]) and in v.yaml"
        ]
    );
}

#[test]
fn reconcile_policy_on_objects_and_embedded_resources() {
    let mut top = vault(json!({RECONCILE_POLICY: "adopt"}));
    top["metadata"]["namespace"] = json!("aro-prod");
    let embedded_both =
        vault(json!({RECONCILE_POLICY: "skip", RECONCILE_POLICY_IF_EXISTS: "manage"}));
    let found = messages(vec![
        ("v.yaml", top),
        ("c.yaml", aro_cluster(json!([embedded_both]))),
    ]);
    assert_eq!(
        found,
        vec![
            "v.yaml: Vault/aro-prod/dev-kv: /metadata/annotations/serviceoperator.azure.com~1reconcile-policy: \"adopt\" is not a \
             reconcile policy: use manage, skip or detach-on-delete",
            "c.yaml: AROCluster/aro-dev/dev: /spec/resources/0 (Vault/dev-kv)/metadata/annotations: \
             serviceoperator.azure.com/reconcile-policy and serviceoperator.azure.com/reconcile-policy-if-exists cannot both \
             be set: keep serviceoperator.azure.com/reconcile-policy-if-exists to choose the policy only when the Azure resource \
             already exists",
        ]
    );
}

#[test]
fn secret_data_never_appears_in_messages() {
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "aro-dev",
                        "annotations": {RECONCILE_POLICY: "bogus"}}, "data": {"clientSecret": "czNjcjN0LXZhbHVl"}});
    let found = messages(vec![("s.yaml", secret.clone()), ("t.yaml", secret)]);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(
        found.iter().all(|m| !m.contains("czNjcjN0LXZhbHVl")),
        "{found:#?}"
    );
}

#[test]
fn display_names_file_document_object_and_pointer() {
    let err = ValidationError {
        origin: Some(Origin {
            file: PathBuf::from("clusters/dev/controlplane.yaml"),
            document: 1,
        }),
        object: ObjectKey::from_object(&control_plane(json!([]))).ok(),
        message: "/spec/resources: must hold exactly one HcpOpenShiftCluster; it holds none".into(),
    };
    assert_eq!(
        err.to_string(),
        "clusters/dev/controlplane.yaml (document 2): AROControlPlane/aro-dev/dev: /spec/resources: must hold exactly one \
         HcpOpenShiftCluster; it holds none"
    );
    let bare = ValidationError {
        origin: None,
        object: None,
        message: "m".into(),
    };
    assert_eq!(bare.to_string(), "m");
}

fn report() -> Value {
    json!({
        "apiVersion": "aro-gitops.dev/v1alpha1",
        "kind": "ClusterReport",
        "cluster": {"namespace": "aro-dev", "name": "dev"},
        "revision": "4ce1881c05da374ce1881c05da374ce1881c05da",
        "azure": "simulated",
        "phase": "Blocked",
        "chain": {"step": 2, "total": 8, "stage": "ResourcesReady", "steps": [
            {"step": 1, "name": "infrastructure created", "done": true},
            {"step": 2, "name": "ResourcesReady", "done": false}]},
        "objects": [
            {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AROCluster", "namespace": "aro-dev", "name": "dev",
             "action": "unchanged", "ready": false, "reason": "ProvisioningInfrastructure", "message": "Waiting for infrastructure resources: 3/9 ready"},
            {"apiVersion": "keyvault.azure.com/v1api20230701", "kind": "Vault", "namespace": "aro-dev", "name": "dev-kv",
             "action": "blocked", "blockedOn": ["ResourceGroup/aro-dev/dev-rg"], "ready": false}
        ],
        "errors": [{"object": null, "message": "render: nothing changed"}, {"object": "Vault/aro-dev/dev-kv", "file": "clusters/dev/arocluster.yaml", "message": "x"}]
    })
}

#[test]
fn a_well_formed_report_passes() {
    assert_eq!(validate_report(&report()), Vec::<String>::new());
}

#[test]
fn report_problems_are_named_by_pointer() {
    let mut r = report();
    r["azure"] = json!("probably");
    r["phase"] = json!("Done");
    r["chain"]["step"] = json!(9);
    r["objects"][1]["action"] = json!("borrowed");
    r["objects"][1]["blockedOn"] = json!(["the resource group"]);
    r["errors"][0].as_object_mut().unwrap().remove("object");
    r["generatedAt"] = json!("2026-01-01T00:00:00Z");
    assert_eq!(
        validate_report(&r),
        vec![
            "/: unknown field `generatedAt`",
            "/azure: must be one of \"simulated\" or \"real\"",
            "/phase: must be one of \"Converged\", \"Progressing\", \"Blocked\", \"Failed\", \"NotStarted\" or \"Interrupted\"",
            "/objects/1/action: must be one of \"created\", \"updated\", \"unchanged\", \"blocked\", \"failed\", \"deleted\", \"adopted\", \"skipped\", \"drifted\", \"deleting\", \"deletionBlocked\" or \"kept\"",
            "/objects/1/blockedOn/0: must name an object as Kind/namespace/name",
            "/errors/0/object: is required but missing",
            "/chain/step: step 9 is beyond the chain's 8 steps",
        ]
    );
}

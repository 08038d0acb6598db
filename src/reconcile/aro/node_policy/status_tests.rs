//! The AutoNodePolicy's `Ready` condition, row by row.

use super::*;
use crate::reconcile::aro::fixtures::NS;

fn policy(name: &str, status: Option<Value>) -> Value {
    let mut p = json!({"apiVersion": "karpenter.hypershift.openshift.io/v1beta1", "kind": "AutoNodePolicy",
        "metadata": {"name": name, "namespace": NS, "generation": 2},
        "spec": {"nodePoolDefaults": {"requirements": [
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["Standard_D4s_v3"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]},
            "azureNodeClassDefaults": {"rootVolume": {"volumeSize": "128Gi", "volumeType": "Premium_LRS"}}}});
    if let Some(s) = status {
        p["status"] = s;
    }
    p
}

fn node_pool(name: &str, vm_size: &str, disk: u64) -> Value {
    json!({"apiVersion": "redhatopenshift.azure.com/v1api20240610preview", "kind": NODE_POOL,
        "metadata": {"name": name, "namespace": NS},
        "spec": {"properties": {"platform": {"vmSize": vm_size,
            "osDisk": {"sizeGiB": disk, "diskStorageAccountType": "Premium_LRS"}}}}})
}

fn machine_pool(name: &str, reason: &str, message: &str) -> Value {
    json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AROMachinePool",
        "metadata": {"name": name, "namespace": NS},
        "status": {"conditions": [{"type": "NodePoolReady", "status": if reason == "Succeeded" { "True" } else { "False" },
            "reason": reason, "message": message}]}})
}

fn ready(patch: &Value) -> (&str, &str, &str) {
    let c = &patch["status"]["conditions"][0];
    (
        c["status"].as_str().unwrap(),
        c["reason"].as_str().unwrap(),
        c["message"].as_str().unwrap_or(""),
    )
}

#[test]
fn the_ready_condition_table() {
    let good = node_pool("a", "Standard_D4s_v3", 128);
    let old_disk = node_pool("b", "Standard_D4s_v3", 64);
    let mut skipped = old_disk.clone();
    skipped["metadata"]["annotations"] =
        json!({"serviceoperator.azure.com/reconcile-policy": "skip"});
    let mut deleting = old_disk.clone();
    deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    let refused = machine_pool(
        "dev-workers",
        NODE_POLICY_VIOLATION,
        "AutoNodePolicy aro-dev/default does not allow vmSize X (…)",
    );
    let fine = machine_pool("dev-infra", "Succeeded", "");
    let mut invalid = policy("default", None);
    invalid["spec"]["azureNodeClassDefaults"]["rootVolume"]["volumeSize"] = json!("lots");
    // (case, policy, the rest of the world, (status, reason, message))
    type Row<'a> = (&'a str, Value, Vec<&'a Value>, (&'a str, &'a str, &'a str));
    let rows: Vec<Row> = vec![
        (
            "every node pool carries it",
            policy("default", None),
            vec![&good, &fine, &skipped, &deleting],
            (
                "True",
                POLICY_APPLIED,
                "merged into every node pool of namespace aro-dev (1); requirement karpenter.sh/capacity-type ignored: no ARO node pool field",
            ),
        ),
        (
            "no node pool yet",
            policy("default", None),
            vec![],
            (
                "True",
                POLICY_APPLIED,
                "merged into every node pool of namespace aro-dev (0); requirement karpenter.sh/capacity-type ignored: no ARO node pool field",
            ),
        ),
        (
            "a node pool from before the policy",
            policy("default", None),
            vec![&good, &old_disk],
            (
                "False",
                NODE_POOLS_NOT_UPDATED,
                "not merged into node pools yet: b",
            ),
        ),
        (
            "a machine pool the policy refuses",
            policy("default", None),
            vec![&good, &old_disk, &refused, &fine],
            (
                "False",
                NODE_POLICY_VIOLATION,
                "not applied to every node pool: AROMachinePool aro-dev/dev-workers: AutoNodePolicy aro-dev/default does not allow vmSize X (…)",
            ),
        ),
        (
            "a policy that cannot be read",
            invalid,
            vec![&good],
            (
                "False",
                NODE_POLICY_INVALID,
                "AutoNodePolicy aro-dev/default cannot be merged: spec.azureNodeClassDefaults.rootVolume.volumeSize \"lots\" is not a positive quantity",
            ),
        ),
        (
            "not named default",
            policy("strict", None),
            vec![&good],
            (
                "False",
                NOT_DEFAULT,
                "ignored: only the AutoNodePolicy named default counts in namespace aro-dev",
            ),
        ),
    ];
    let namespaces = BTreeSet::from([NS.to_string()]);
    for (name, p, mut world, want) in rows {
        world.push(&p);
        let patches = policy_status_patches(&namespaces, &world, "t1");
        assert_eq!(patches.len(), 1, "case {name}");
        assert_eq!(ready(&patches[0]), want, "case {name}");
        assert_eq!(patches[0]["metadata"]["name"], p["metadata"]["name"]);
        assert_eq!(
            patches[0]["status"]["conditions"][0]["observedGeneration"], 2,
            "case {name}"
        );
    }
}

#[test]
fn an_unchanged_condition_is_not_written_again() {
    let good = node_pool("a", "Standard_D4s_v3", 128);
    let namespaces = BTreeSet::from([NS.to_string()]);
    let first = policy("default", None);
    let patch = &policy_status_patches(&namespaces, &[&good, &first], "t1")[0];
    let written = policy("default", Some(patch["status"].clone()));
    assert!(policy_status_patches(&namespaces, &[&good, &written], "t2").is_empty());
    // A change keeps nothing stale: the status moves, and so does the transition time.
    let old_disk = node_pool("b", "Standard_D4s_v3", 64);
    let moved = policy_status_patches(&namespaces, &[&good, &old_disk, &written], "t3");
    assert_eq!(
        moved[0]["status"]["conditions"][0]["lastTransitionTime"],
        "t3"
    );
    // Policies of namespaces the unit does not reconcile are left alone.
    assert!(policy_status_patches(&BTreeSet::new(), &[&good, &first], "t1").is_empty());
}

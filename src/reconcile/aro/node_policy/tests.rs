//! The merge, table by table: which policy counts, the requirements on each field, the hidden
//! fields, and the AROMachinePool decision with a policy.
#![allow(clippy::type_complexity)] // tables of tuples

use super::*;
use crate::kinds::NODE_POOL;
use crate::reconcile::aro::decide_machine_pool;
use crate::reconcile::aro::fixtures::*;
use serde_json::{Value, json};

const SIZE: &str = "node.kubernetes.io/instance-type";
const ZONE: &str = "topology.kubernetes.io/zone";
const ARCH: &str = "kubernetes.io/arch";

fn policy_in(ns: &str, name: &str, requirements: Value) -> Value {
    json!({"apiVersion": "karpenter.hypershift.openshift.io/v1beta1", "kind": "AutoNodePolicy",
        "metadata": {"name": name, "namespace": ns, "generation": 3},
        "spec": {"nodePoolDefaults": {"requirements": requirements},
            "azureNodeClassDefaults": {"rootVolume": {"volumeSize": "256Gi", "volumeType": "StandardSSD_LRS", "encrypted": true}}}})
}

/// The examples' policy, with a 256 GiB StandardSSD_LRS root volume.
fn examples_policy() -> Value {
    policy_in(
        NS,
        "default",
        json!([
            {"key": SIZE, "operator": "In", "values": ["Standard_D4s_v3", "Standard_D8s_v3"]},
            {"key": ZONE, "operator": "In", "values": ["1", "2", "3"]},
            {"key": ARCH, "operator": "In", "values": ["amd64"]}
        ]),
    )
}

fn pool(platform: Value) -> Value {
    json!({"apiVersion": "redhatopenshift.azure.com/v1api20240610preview", "kind": NODE_POOL,
        "metadata": {"name": "np", "namespace": NS},
        "spec": {"owner": {"name": "hcp"}, "properties": {"platform": platform, "autoRepair": true}}})
}

fn os_disk(size: u64, kind: &str) -> Value {
    json!({"sizeGiB": size, "diskStorageAccountType": kind})
}

#[test]
fn the_merge_table() {
    let user_disk =
        json!({"sizeGiB": 64, "diskStorageAccountType": "Standard_LRS", "encryptionSetId": "/x"});
    let empty = policy_in(NS, "default", json!([]));
    let mut no_requirements = empty.clone();
    no_requirements["spec"]
        .as_object_mut()
        .unwrap()
        .remove("nodePoolDefaults");
    let examples = examples_policy();
    let picky = policy_in(
        NS,
        "default",
        json!([
            {"key": SIZE, "operator": "In", "values": ["Standard_D4ps_v5", "Standard_D8s_v3"]},
            {"key": ARCH, "operator": "In", "values": ["amd64"]}
        ]),
    );
    let exists = policy_in(NS, "default", json!([{"key": SIZE, "operator": "Exists"}]));
    let min_values = policy_in(
        NS,
        "default",
        json!([{"key": SIZE, "operator": "In", "values": ["Standard_D4s_v3", "Standard_D8s_v3"], "minValues": 2}]),
    );
    let other_keys = policy_in(
        NS,
        "default",
        json!([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]),
    );
    // (case, policy, node pool platform, Ok(platform after the merge) or Err(message))
    type Row<'a> = (&'a str, Option<&'a Value>, Value, Result<Value, &'a str>);
    let rows: Vec<Row> = vec![
        (
            "no policy: user values pass, the OS disk gets the defaults",
            None,
            json!({"vmSize": "Standard_X", "availabilityZone": "9", "osDisk": user_disk}),
            Ok(
                json!({"vmSize": "Standard_X", "availabilityZone": "9", "osDisk": os_disk(128, "Premium_LRS")}),
            ),
        ),
        (
            "empty requirements allow everything; the root volume replaces the OS disk",
            Some(&empty),
            json!({"vmSize": "Standard_D4ps_v5", "availabilityZone": "9", "osDisk": user_disk}),
            Ok(
                json!({"vmSize": "Standard_D4ps_v5", "availabilityZone": "9", "osDisk": os_disk(256, "StandardSSD_LRS")}),
            ),
        ),
        (
            "no nodePoolDefaults at all",
            Some(&no_requirements),
            json!({"vmSize": "Standard_X"}),
            Ok(json!({"vmSize": "Standard_X", "osDisk": os_disk(256, "StandardSSD_LRS")})),
        ),
        (
            "inside the allowed set",
            Some(&examples),
            json!({"vmSize": "Standard_D8s_v3", "availabilityZone": "2"}),
            Ok(
                json!({"vmSize": "Standard_D8s_v3", "availabilityZone": "2", "osDisk": os_disk(256, "StandardSSD_LRS")}),
            ),
        ),
        (
            "a pool without a zone is regional",
            Some(&examples),
            json!({"vmSize": "Standard_D4s_v3"}),
            Ok(json!({"vmSize": "Standard_D4s_v3", "osDisk": os_disk(256, "StandardSSD_LRS")})),
        ),
        (
            "vmSize outside the set",
            Some(&examples),
            json!({"vmSize": "Standard_D2s_v3"}),
            Err(
                "AutoNodePolicy aro-dev/default does not allow vmSize Standard_D2s_v3 (node.kubernetes.io/instance-type In [Standard_D4s_v3, Standard_D8s_v3])",
            ),
        ),
        (
            "zone outside the set",
            Some(&examples),
            json!({"vmSize": "Standard_D4s_v3", "availabilityZone": "4"}),
            Err(
                "AutoNodePolicy aro-dev/default does not allow availabilityZone 4 (topology.kubernetes.io/zone In [1, 2, 3])",
            ),
        ),
        (
            "a zone written as a number",
            Some(&examples),
            json!({"vmSize": "Standard_D4s_v3", "availabilityZone": 4}),
            Err(
                "AutoNodePolicy aro-dev/default does not allow availabilityZone 4 (topology.kubernetes.io/zone In [1, 2, 3])",
            ),
        ),
        (
            "architecture implied by the VM size",
            Some(&picky),
            json!({"vmSize": "Standard_D4ps_v5"}),
            Err(
                "AutoNodePolicy aro-dev/default does not allow architecture arm64 (vmSize Standard_D4ps_v5) (kubernetes.io/arch In [amd64])",
            ),
        ),
        (
            "no vmSize: the first allowed one that every requirement accepts",
            Some(&picky),
            json!({}),
            Ok(json!({"vmSize": "Standard_D8s_v3", "osDisk": os_disk(256, "StandardSSD_LRS")})),
        ),
        (
            "no vmSize and nothing listed to pick from",
            Some(&exists),
            json!({"availabilityZone": "1"}),
            Err(
                "AutoNodePolicy aro-dev/default requires vmSize to be set (node.kubernetes.io/instance-type Exists)",
            ),
        ),
        (
            "minValues above one cannot be met by one node pool",
            Some(&min_values),
            json!({"vmSize": "Standard_D4s_v3"}),
            Err(
                "AutoNodePolicy aro-dev/default requires at least 2 values of vmSize, and a node pool has one (node.kubernetes.io/instance-type In [Standard_D4s_v3, Standard_D8s_v3], minValues 2)",
            ),
        ),
        (
            "keys without an ARO field constrain nothing",
            Some(&other_keys),
            json!({"vmSize": "Standard_X"}),
            Ok(json!({"vmSize": "Standard_X", "osDisk": os_disk(256, "StandardSSD_LRS")})),
        ),
    ];
    for (name, policy, platform, want) in rows {
        let got = merge(&pool(platform), policy);
        match want {
            Ok(p) => {
                let merged = got.unwrap_or_else(|e| panic!("case {name}: {e}"));
                assert_eq!(merged["spec"]["properties"]["platform"], p, "case {name}");
                assert_eq!(
                    merged["spec"]["properties"]["autoRepair"], true,
                    "case {name}: the rest is kept"
                );
            }
            Err(message) => {
                let e = got.expect_err(name);
                assert_eq!(e.to_string(), message, "case {name}");
                assert_eq!(e.reason(), NODE_POLICY_VIOLATION, "case {name}");
            }
        }
    }
}

#[test]
fn only_the_default_policy_of_the_namespace_counts() {
    let live_default = examples_policy();
    let mut rendered_default = examples_policy();
    rendered_default["spec"]["nodePoolDefaults"]["requirements"] = json!([]);
    let other_name = policy_in(NS, "strict", json!([]));
    let other_ns = policy_in("aro-prod", "default", json!([]));
    let mut deleting = examples_policy();
    deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    let none: &[&Value] = &[];
    let rows: Vec<(&str, Vec<&Value>, Vec<Value>, Option<&Value>)> = vec![
        (
            "live default",
            vec![],
            vec![other_name.clone(), live_default.clone()],
            Some(&live_default),
        ),
        (
            "git counts before live",
            vec![&rendered_default],
            vec![live_default.clone()],
            Some(&rendered_default),
        ),
        (
            "other names are ignored",
            vec![&other_name],
            vec![other_name.clone()],
            None,
        ),
        (
            "other namespaces do not count",
            vec![&other_ns],
            vec![other_ns.clone()],
            None,
        ),
        ("one being deleted", vec![], vec![deleting.clone()], None),
    ];
    for (name, rendered, live, want) in rows {
        assert_eq!(effective_policy(NS, &rendered, &live), want, "case {name}");
    }
    assert_eq!(effective_policy(NS, none, &[]), None);
}

#[test]
fn hidden_fields_from_the_root_volume() {
    // (volumeSize, volumeType, encrypted) → Ok((sizeGiB, type, notes)) or Err(message)
    type Row = (
        Value,
        Result<(u64, &'static str, Vec<&'static str>), &'static str>,
    );
    let rows: Vec<Row> = vec![
        (
            json!({"volumeSize": "128Gi", "volumeType": "Premium_LRS", "encrypted": true}),
            Ok((128, "Premium_LRS", vec![])),
        ),
        (
            json!({"volumeSize": "75G"}),
            Ok((70, "Premium_LRS", vec![])),
        ),
        (
            json!({"volumeSize": "1Ti"}),
            Ok((1024, "Premium_LRS", vec![])),
        ),
        (
            json!({"volumeSize": "1.5Gi"}),
            Ok((2, "Premium_LRS", vec![])),
        ),
        (json!({"volumeSize": 100}), Ok((1, "Premium_LRS", vec![]))),
        (
            json!({"volumeType": "StandardSSD_LRS"}),
            Ok((128, "StandardSSD_LRS", vec![])),
        ),
        (
            json!({"encrypted": false, "iops": 3000}),
            Ok((
                128,
                "Premium_LRS",
                vec![
                    "rootVolume.encrypted false ignored: Azure managed OS disks are always encrypted at rest",
                    "rootVolume.iops ignored: no ARO node pool field",
                ],
            )),
        ),
        (
            json!({"volumeSize": "lots"}),
            Err(
                "AutoNodePolicy aro-dev/default cannot be merged: spec.azureNodeClassDefaults.rootVolume.volumeSize \"lots\" is not a positive quantity",
            ),
        ),
        (
            json!({"volumeSize": "0"}),
            Err(
                "AutoNodePolicy aro-dev/default cannot be merged: spec.azureNodeClassDefaults.rootVolume.volumeSize \"0\" is not a positive quantity",
            ),
        ),
    ];
    for (volume, want) in rows {
        let mut p = policy_in(NS, "default", json!([]));
        p["spec"]["azureNodeClassDefaults"]["rootVolume"] = volume.clone();
        match (parse(&p), want) {
            (Ok(parsed), Ok((size, kind, notes))) => {
                assert_eq!(parsed.os_disk.size_gib, size, "{volume}");
                assert_eq!(parsed.os_disk.storage_type, kind, "{volume}");
                assert_eq!(parsed.notes, notes, "{volume}");
            }
            (Err(e), Err(message)) => {
                assert_eq!(e.to_string(), message);
                assert_eq!(e.reason(), NODE_POLICY_INVALID);
            }
            (got, want) => panic!("{volume}: got {got:?}, want {want:?}"),
        }
    }
    // Another platform's defaults and keys without an ARO field are noted.
    let mut p = policy_in(
        NS,
        "default",
        json!([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]),
    );
    p["spec"]["ec2NodeClassDefaults"] = json!({"rootVolume": {"volumeSize": "75Gi"}});
    assert_eq!(
        parse(&p).unwrap().notes,
        [
            "requirement karpenter.sh/capacity-type ignored: no ARO node pool field",
            "ec2NodeClassDefaults ignored: not the Azure platform"
        ]
    );
    // A malformed requirement (from a live policy that no validation saw).
    let bad = policy_in(
        NS,
        "default",
        json!([{"key": SIZE, "operator": "Gt", "values": ["big"]}]),
    );
    assert_eq!(
        merge(&pool(json!({})), Some(&bad)).unwrap_err().to_string(),
        "AutoNodePolicy aro-dev/default cannot be merged: spec.nodePoolDefaults.requirements[0]: Gt takes one integer value, not \"big\""
    );
}

#[test]
fn a_node_pool_without_a_platform_object_cannot_be_merged() {
    let mut np = pool(json!({}));
    np["spec"]["properties"] = json!("text");
    let e = merge(&np, None).unwrap_err();
    assert_eq!(e.reason(), NODE_POLICY_INVALID);
    assert_eq!(
        e.to_string(),
        "no AutoNodePolicy can be merged: the node pool's spec.properties.platform is not an object"
    );
    // A missing platform is created.
    let mut bare = pool(json!({}));
    bare["spec"].as_object_mut().unwrap().remove("properties");
    assert_eq!(
        merge(&bare, None).unwrap()["spec"]["properties"]["platform"],
        json!({"osDisk": os_disk(128, "Premium_LRS")})
    );
}

#[test]
fn a_live_pool_carries_the_policy_once_merged() {
    let p = parse(&examples_policy()).unwrap();
    let merged = p
        .merge(&pool(json!({"vmSize": "Standard_D4s_v3"})))
        .unwrap();
    assert!(p.carried_by(&merged));
    assert!(!p.carried_by(&pool(json!({"vmSize": "Standard_D4s_v3"}))));
    let mut outside = merged.clone();
    outside["spec"]["properties"]["platform"]["vmSize"] = json!("Standard_D2s_v3");
    assert!(!p.carried_by(&outside));
}

/// The AROMachinePool `dev-workers` whose node pool has `platform`, with a ready control plane.
fn machine_pool_with(platform: Value) -> (Value, Vec<Value>) {
    let mut amp = machine_pool_obj("dev-workers", &[(NODE_POOL, "np")]);
    amp["spec"]["resources"][0]["spec"]["properties"] = json!({"platform": platform});
    let mut cp = control_plane_obj(&[("HcpOpenShiftCluster", "hcp")]);
    cp["metadata"]["uid"] = json!("uid-cp");
    cp["status"] = json!({"conditions": [{"type": "HcpClusterReady", "status": "True", "reason": "Succeeded"}]});
    let live = with_owner(&amp, vec![cp]);
    (amp, live)
}

#[test]
fn the_machine_pool_applies_the_merged_node_pool() {
    let (amp, mut live) = machine_pool_with(json!({"vmSize": "Standard_D4s_v3"}));
    let d = decide_machine_pool(&amp, &live, "t");
    assert_eq!(
        d.applies[0]["spec"]["properties"]["platform"]["osDisk"],
        os_disk(128, "Premium_LRS"),
        "no policy: the default OS disk"
    );
    live.push(examples_policy());
    let d = decide_machine_pool(&amp, &live, "t");
    assert!(d.held.is_empty(), "{:?}", d.held);
    assert_eq!(
        d.applies[0]["spec"]["properties"]["platform"]["osDisk"],
        os_disk(256, "StandardSSD_LRS")
    );
    assert_eq!(d.applies[0]["spec"]["owner"]["name"], "hcp");
}

#[test]
fn a_refused_node_pool_is_held_whatever_the_gates_say() {
    let message = "AutoNodePolicy aro-dev/default does not allow vmSize Standard_D2s_v3 (node.kubernetes.io/instance-type In [Standard_D4s_v3, Standard_D8s_v3])";
    let (amp, mut live) = machine_pool_with(json!({"vmSize": "Standard_D2s_v3"}));
    live.push(examples_policy());
    let mut gate_closed = live.clone();
    gate_closed.retain(|o| o["kind"] != "AROControlPlane");
    for (name, world) in [("gate open", &live), ("gate closed", &gate_closed)] {
        let d = decide_machine_pool(&amp, world, "t");
        assert!(d.applies.is_empty(), "case {name}");
        assert!(d.record_owned_kinds.is_none(), "case {name}");
        assert_eq!(d.held.len(), 1, "case {name}");
        let h = &d.held[0];
        assert_eq!(
            (h.reason.as_str(), h.message.as_str()),
            (NODE_POLICY_VIOLATION, message),
            "case {name}"
        );
        assert!(h.needs_person());
        assert_eq!(h.on[0].to_string(), "AutoNodePolicy/aro-dev/default");
        for t in ["NodePoolReady", "AROMachinePoolReady"] {
            assert_cond(&d.status, t, "False", NODE_POLICY_VIOLATION, message);
        }
        assert_eq!(d.status["ready"], false, "case {name}");
        assert!(d.error.is_none(), "case {name}");
    }
    // A live node pool from before stays as it is, and the AROMachinePool is not ready.
    let mut np = owned_by(aso(NODE_POOL, "np", Ready::Yes), "hcp");
    np["status"]["properties"] = json!({"provisioningState": "Succeeded"});
    live.push(np);
    let d = decide_machine_pool(&amp, &live, "t");
    assert_cond(
        &d.status,
        "NodePoolReady",
        "False",
        NODE_POLICY_VIOLATION,
        message,
    );
    assert_eq!(d.status["ready"], false);
}

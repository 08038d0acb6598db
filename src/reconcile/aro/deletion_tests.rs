//! Table tests of the reverse-order deletion: every stage of a whole cluster, waits within a
//! stage, another cluster of the namespace, `skip`, pause, and what holds a finalizer.

use super::super::OWNED_KINDS_ANNOTATION;
use super::*;
use serde_json::json;

const NS: &str = "aro-dev";
const HCP_API: &str = "redhatopenshift.azure.com/v1api20240610preview";

fn aro(api: &str, kind: &str, name: &str, cluster: &str, deleting: bool) -> Value {
    let mut o = json!({"apiVersion": api, "kind": kind,
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{kind}-{name}"),
                     "labels": {"cluster.x-k8s.io/cluster-name": cluster},
                     "finalizers": [finalizer_for(kind).unwrap()]}});
    if deleting {
        o["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    }
    o
}

fn aro_cluster(cluster: &str, deleting: bool) -> Value {
    aro(
        "infrastructure.cluster.x-k8s.io/v1beta2",
        "AROCluster",
        cluster,
        cluster,
        deleting,
    )
}

fn control_plane(cluster: &str, deleting: bool) -> Value {
    aro(
        "controlplane.cluster.x-k8s.io/v1beta2",
        "AROControlPlane",
        cluster,
        cluster,
        deleting,
    )
}

fn machine_pool(name: &str, cluster: &str, deleting: bool) -> Value {
    aro(
        "infrastructure.cluster.x-k8s.io/v1beta2",
        "AROMachinePool",
        name,
        cluster,
        deleting,
    )
}

/// An ASO resource controlled by `owner`, with `spec` (owner, references).
fn owned(api: &str, kind: &str, name: &str, owner: &Value, spec: Value) -> Value {
    json!({"apiVersion": api, "kind": kind,
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{kind}-{name}"),
            "ownerReferences": [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"], "controller": true}]},
        "spec": spec})
}

fn owner_name(name: &str) -> Value {
    json!({"owner": {"name": name}})
}

/// The dev cluster, every ARO object deleted: infrastructure (RG, VNet, subnet referencing the
/// NSG, NSG), the HcpOpenShiftCluster and ExternalAuth, one node pool.
fn whole_cluster() -> Vec<Value> {
    let (c, p, m) = (
        aro_cluster("dev", true),
        control_plane("dev", true),
        machine_pool("dev-workers", "dev", true),
    );
    let net = "network.azure.com/v1api20201101";
    vec![
        owned(
            "resources.azure.com/v1api20200601",
            "ResourceGroup",
            "rg",
            &c,
            json!({}),
        ),
        owned(net, "VirtualNetwork", "vnet", &c, owner_name("rg")),
        owned(
            net,
            "VirtualNetworksSubnet",
            "subnet",
            &c,
            json!({"owner": {"name": "vnet"}, "networkSecurityGroup": {"reference":
                {"group": "network.azure.com", "kind": "NetworkSecurityGroup", "name": "nsg"}}}),
        ),
        owned(net, "NetworkSecurityGroup", "nsg", &c, owner_name("rg")),
        owned(HCP_API, HCP_CLUSTER, "hcp", &p, owner_name("rg")),
        owned(HCP_API, EXTERNAL_AUTH, "auth", &p, owner_name("hcp")),
        owned(HCP_API, NODE_POOL, "workers", &m, owner_name("hcp")),
        c,
        p,
        m,
    ]
}

fn find<'a>(live: &'a [Value], kind: &str, name: &str) -> &'a Value {
    live.iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("{kind}/{name}"))
}

fn names(keys: impl IntoIterator<Item = ObjectKey>) -> Vec<String> {
    let mut v: Vec<String> = keys.into_iter().map(|k| k.name).collect();
    v.sort();
    v
}

fn step_of<'a>(d: &'a Deletion, name: &str) -> &'a Step {
    &d.steps
        .iter()
        .find(|(k, _)| k.name == name)
        .unwrap_or_else(|| panic!("a step for {name}: {d:?}"))
        .1
}

#[test]
fn finalizers_and_owned_kinds() {
    let rows = [
        ("AROCluster", Some("arocluster/finalizer")),
        ("AROControlPlane", Some("arocontrolplanes/finalizer")),
        ("AROMachinePool", Some("aromachinepool/finalizer")),
        ("MachinePool", None),
    ];
    for (kind, want) in rows {
        assert_eq!(finalizer_for(kind), want, "{kind}");
    }
    let entries = [
        (
            "HcpOpenShiftCluster.v1api20240610preview.redhatopenshift.azure.com",
            Some((
                "redhatopenshift.azure.com",
                "v1api20240610preview",
                "HcpOpenShiftCluster",
            )),
        ),
        (
            "ResourceGroup.v1api20200601.resources.azure.com",
            Some(("resources.azure.com", "v1api20200601", "ResourceGroup")),
        ),
        ("Secret.v1", Some(("", "v1", "Secret"))),
        ("Orphan", None),
        ("", None),
    ];
    for (entry, want) in entries {
        let want = want.map(|(g, v, k)| (g.to_string(), v.to_string(), k.to_string()));
        assert_eq!(super::super::parse_owned_kind(entry), want, "{entry:?}");
    }
    let mut owner = control_plane("dev", false);
    owner["metadata"]["annotations"] = json!({OWNED_KINDS_ANNOTATION:
        "HcpOpenShiftCluster.v1api20240610preview.redhatopenshift.azure.com;HcpOpenShiftClustersExternalAuth.v1api20240610preview.redhatopenshift.azure.com"});
    assert_eq!(super::super::owned_kinds(&owner).len(), 2);
    assert!(holds_finalizer(&owner));
    owner["metadata"]["finalizers"] = json!(["other", CONTROL_PLANE_FINALIZER]);
    assert_eq!(without_own_finalizer(&owner), vec!["other".to_string()]);
    assert!(!is_deleting(&owner));
}

/// Deletes, wave after wave, what the three owners say may go now (each delete completes at once),
/// and records each wave and when each owner may release its finalizer.
#[test]
fn a_whole_cluster_goes_in_reverse_order_and_finalizers_are_released_last() {
    let mut live = whole_cluster();
    let owners = [
        ("AROMachinePool", "dev-workers"),
        ("AROControlPlane", "dev"),
        ("AROCluster", "dev"),
    ];
    let mut waves: Vec<Vec<String>> = Vec::new();
    let mut released: Vec<(usize, &str)> = Vec::new();
    for wave in 0..10 {
        let mut now = Vec::new();
        for (kind, name) in owners {
            if released.iter().any(|(_, k)| *k == kind) {
                continue;
            }
            let d = decide(find(&live, kind, name), &live);
            if d.release {
                released.push((wave, kind));
            }
            now.extend(d.to_delete().cloned());
        }
        if now.is_empty() {
            break;
        }
        live.retain(|o| !now.iter().any(|k| k.name == o["metadata"]["name"]));
        waves.push(names(now));
    }
    assert_eq!(
        waves,
        vec![
            vec!["auth", "workers"],
            vec!["hcp"],
            vec!["subnet"],
            vec!["nsg", "vnet"],
            vec!["rg"],
        ]
    );
    assert_eq!(
        released,
        vec![
            (1, "AROMachinePool"),
            (2, "AROControlPlane"),
            (5, "AROCluster")
        ]
    );
}

#[test]
fn each_step_names_what_it_waits_for() {
    let live = whole_cluster();
    let acp = decide(find(&live, "AROControlPlane", "dev"), &live);
    assert_eq!(step_of(&acp, "auth"), &Step::Delete);
    match step_of(&acp, "hcp") {
        Step::Wait { on, stuck } => {
            assert_eq!(names(on.clone()), vec!["auth", "workers"]);
            assert!(!stuck, "the node pool's owner is being deleted too");
        }
        s => panic!("{s:?}"),
    }
    assert!(!acp.release);
    let infra = decide(find(&live, "AROCluster", "dev"), &live);
    match step_of(&infra, "rg") {
        Step::Wait { on, .. } => assert_eq!(
            names(on.clone()),
            vec!["auth", "hcp", "nsg", "vnet", "workers"]
        ),
        s => panic!("{s:?}"),
    }
    match step_of(&infra, "nsg") {
        // The subnet refers to it; the HcpOpenShiftCluster and what depends on it go first.
        Step::Wait { on, .. } => {
            assert_eq!(names(on.clone()), vec!["auth", "hcp", "subnet", "workers"])
        }
        s => panic!("{s:?}"),
    }
}

#[test]
fn a_delete_already_sent_is_going_and_holds_the_finalizer() {
    let mut live = whole_cluster();
    live.retain(|o| o["kind"] != HCP_CLUSTER && o["kind"] != EXTERNAL_AUTH);
    let pool = live
        .iter_mut()
        .find(|o| o["kind"] == NODE_POOL)
        .expect("a pool");
    pool["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    let d = decide(find(&live, "AROMachinePool", "dev-workers"), &live);
    assert_eq!(step_of(&d, "workers"), &Step::Going);
    assert!(!d.release);
    // The control plane has nothing left: it may go, though the node pool is still there.
    let acp = decide(find(&live, "AROControlPlane", "dev"), &live);
    assert_eq!((acp.steps.len(), acp.release), (0, true));
}

#[test]
fn another_cluster_in_the_namespace_holds_nothing_back() {
    let mut live = whole_cluster();
    live.retain(|o| o["kind"] != NODE_POOL && o["kind"] != EXTERNAL_AUTH);
    let other_pool = machine_pool("other-workers", "other", false);
    live.push(owned(
        HCP_API,
        NODE_POOL,
        "other-workers",
        &other_pool,
        owner_name("other-hcp"),
    ));
    live.push(other_pool);
    let acp = decide(find(&live, "AROControlPlane", "dev"), &live);
    assert_eq!(step_of(&acp, "hcp"), &Step::Delete);
}

#[test]
fn a_node_pool_whose_owner_stays_blocks_the_control_plane_for_a_person() {
    let mut live = whole_cluster();
    for o in &mut live {
        if o["kind"] == "AROMachinePool" {
            o["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("deletionTimestamp");
        }
    }
    let acp = decide(find(&live, "AROControlPlane", "dev"), &live);
    match step_of(&acp, "hcp") {
        Step::Wait { on, stuck } => {
            assert!(on.iter().any(|k| k.name == "workers"));
            assert!(stuck, "nobody deletes that node pool");
        }
        s => panic!("{s:?}"),
    }
}

#[test]
fn skip_is_left_alone_and_holds_nothing() {
    let mut live = whole_cluster();
    live.retain(|o| o["kind"] != HCP_CLUSTER && o["kind"] != EXTERNAL_AUTH);
    let pool = live
        .iter_mut()
        .find(|o| o["kind"] == NODE_POOL)
        .expect("a pool");
    pool["metadata"]["annotations"] = json!({"serviceoperator.azure.com/reconcile-policy": "skip"});
    let amp = decide(find(&live, "AROMachinePool", "dev-workers"), &live);
    assert_eq!(step_of(&amp, "workers"), &Step::Left);
    assert!(amp.release);
    let infra = decide(find(&live, "AROCluster", "dev"), &live);
    assert_eq!(step_of(&infra, "subnet"), &Step::Delete);
}

#[test]
fn a_paused_owner_or_cluster_deletes_nothing_and_keeps_its_finalizer() {
    let mut live = whole_cluster();
    live.push(
        json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": {"name": "dev", "namespace": NS}, "spec": {"paused": true}}),
    );
    let d = decide(find(&live, "AROControlPlane", "dev"), &live);
    assert!(d.steps.iter().all(|(_, s)| *s == Step::Paused), "{d:?}");
    assert_eq!(d.to_delete().count(), 0);
    assert!(!d.release);
    // Paused by its own annotation with nothing left: still held until resumed.
    let mut acp = control_plane("dev", true);
    let empty = vec![acp.clone()];
    assert!(decide(&acp, &empty).release);
    acp["metadata"]["annotations"] = json!({"cluster.x-k8s.io/paused": ""});
    assert!(!decide(&acp, &empty).release);
}

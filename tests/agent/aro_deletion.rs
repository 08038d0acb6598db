//! Deleting ARO clusters (issue 6): a whole cluster removed from git (with consent) goes in reverse
//! order, ExternalAuth and node pools, then the HcpOpenShiftCluster, then the infrastructure, while
//! its ARO objects wait with a deletionTimestamp and their finalizers, released only once what they
//! own is gone. And a real `kill -9` between recording an owned kind and applying leaves nothing
//! orphaned once the agent runs again.

use super::events;
use super::*;
use aro_gitops::reconcile::aro::deletion::finalizer_for;
use aro_gitops::reconcile::aro::owned_kinds;
use std::collections::BTreeMap;

const ARO_KINDS: [(&str, &str); 3] = [
    ("infrastructure.cluster.x-k8s.io/v1beta2", "AROCluster"),
    ("controlplane.cluster.x-k8s.io/v1beta2", "AROControlPlane"),
    ("infrastructure.cluster.x-k8s.io/v1beta2", "AROMachinePool"),
];

/// One live object of a cluster, with the ARO object that controls it (for embedded resources).
#[derive(Debug, Clone)]
struct Owned {
    key: ObjectKey,
    owner: Option<String>,
}

fn uid(o: &Value) -> &str {
    o.pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn controller(o: &Value) -> Option<&str> {
    o.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r["controller"] == true)?
        .get("uid")?
        .as_str()
}

/// The ARO objects of `namespace` and every live object of the kinds they recorded as owned, each
/// with the ARO object controlling it; checks each ARO object holds its finalizer.
async fn cluster_objects(c: &Cluster, namespace: &str) -> Vec<Owned> {
    let mut aro = Vec::new();
    for (api, kind) in ARO_KINDS {
        aro.extend(
            c.list(&key(api, kind, namespace, ""), None)
                .await
                .expect("list"),
        );
    }
    let mut out = Vec::new();
    let mut kinds = std::collections::BTreeSet::new();
    for o in &aro {
        let k = ObjectKey::from_object(o).expect("a key");
        let finalizer = finalizer_for(&k.kind).expect("an ARO kind");
        assert!(
            aro_gitops::object::finalizers(o)
                .iter()
                .any(|f| f == finalizer),
            "{k} holds {finalizer}: {o:#}"
        );
        kinds.extend(owned_kinds(o));
        out.push(Owned {
            key: k,
            owner: None,
        });
    }
    for (group, version, kind) in kinds {
        let api = aro_gitops::object::join_api_version(&group, &version);
        for o in c
            .list(&key(&api, &kind, namespace, ""), None)
            .await
            .expect("list")
        {
            let owner = aro
                .iter()
                .find(|a| Some(uid(a)) == controller(&o))
                .map(|a| ObjectKey::from_object(a).expect("a key").to_string());
            out.push(Owned {
                key: ObjectKey::from_object(&o).expect("a key"),
                owner,
            });
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_a_whole_cluster_deletes_it_in_reverse_order_and_releases_finalizers_last() {
    let f = Fleet::plain();
    f.run().await;
    let objects = f
        .inspect(|c| async move { cluster_objects(&c, "aro-dev").await })
        .await;
    assert_eq!(objects.iter().filter(|o| o.owner.is_none()).count(), 4);
    assert_eq!(objects.len(), 4 + 34 + 2 + 2, "{objects:#?}");
    assert!(
        objects.iter().all(|o| {
            o.owner.is_some() || aro_gitops::kinds::is_aro_kind(&o.key.group, &o.key.kind)
        }),
        "every embedded resource is controlled by an ARO object: {objects:#?}"
    );

    // The whole cluster leaves git; its deletion needs consent.
    std::fs::remove_dir_all(f.repo.join(DEV)).expect("remove the dev cluster");
    let mut config = f.config();
    config.safety.allow_deletion = true;
    f.wait_store_free().await;
    let s = agent::run(config).await.expect("runs");
    assert!(s.timed_out.is_empty(), "{:?}", s.timed_out);
    let o = outcome(&s, DEV);
    assert!(o.errors.is_empty(), "{}", describe(o));
    assert_converged(outcome(&s, PROD));
    // The report of the removed cluster lists everything it deleted, under its CAPI Cluster (so it
    // replaces the cluster's last report rather than leaving it saying "converged").
    assert_eq!(
        o.cluster
            .as_ref()
            .map(|c| (c.namespace.as_deref(), c.name.as_str())),
        Some((Some("aro-dev"), "dev")),
        "{}",
        describe(o)
    );
    let deleted = with_action(o, &ObjectAction::Deleted);
    for x in &objects {
        assert!(
            deleted.contains(&x.key.to_string()),
            "{}: {}",
            x.key,
            describe(o)
        );
    }

    // Everything of the cluster is gone, in Kubernetes and in the simulated Azure.
    let all = objects.clone();
    let (lives, rg_in_azure, left) = f
        .inspect(|c| async move {
            let rg = aro_gitops::azuresim::inventory::exists(
                c.client(),
                &super::pruning::rg_arm_id("aro-dev-rg"),
            )
            .await
            .expect("read the simulated Azure");
            let mut left = Vec::new();
            for o in &all {
                if c.get(&o.key).await.expect("get").is_some() {
                    left.push(o.key.to_string());
                }
            }
            (deletions(&c, &all).await, rg, left)
        })
        .await;
    assert!(left.is_empty(), "still live: {left:?}");
    assert!(
        !rg_in_azure,
        "the resource group is gone from the simulated Azure"
    );
    let l = |kind: &str, name: &str| -> (u64, u64) {
        *lives
            .get(&(kind.to_string(), name.to_string()))
            .unwrap_or_else(|| panic!("{kind}/{name} in {lives:#?}"))
    };
    let stage = |kinds: &[&str]| -> Vec<(u64, u64)> {
        objects
            .iter()
            .filter(|o| o.owner.is_some() && kinds.contains(&o.key.kind.as_str()))
            .map(|o| l(&o.key.kind, &o.key.name))
            .collect()
    };
    let first_started = |v: &[(u64, u64)]| v.iter().map(|x| x.0).min().expect("some");
    let last_gone = |v: &[(u64, u64)]| v.iter().map(|x| x.1).max().expect("some");
    let leaves = stage(&[
        "HcpOpenShiftClustersNodePool",
        "HcpOpenShiftClustersExternalAuth",
    ]);
    let hcp = stage(&["HcpOpenShiftCluster"]);
    let infra: Vec<(u64, u64)> = objects
        .iter()
        .filter(|o| {
            o.owner
                .as_deref()
                .is_some_and(|w| w.starts_with("AROCluster/"))
        })
        .map(|o| l(&o.key.kind, &o.key.name))
        .collect();
    assert_eq!((leaves.len(), hcp.len(), infra.len()), (3, 1, 34));
    assert!(
        last_gone(&leaves) < first_started(&hcp),
        "ExternalAuth and node pools gone before the HcpOpenShiftCluster goes: {leaves:?} {hcp:?}"
    );
    assert!(
        last_gone(&hcp) < first_started(&infra),
        "the HcpOpenShiftCluster gone before the infrastructure goes: {hcp:?} {infra:?}"
    );
    // Within the infrastructure, dependents first: the subnet, then its network; the group last.
    let (subnet, vnet, rg) = (
        l("VirtualNetworksSubnet", "aro-dev-subnet"),
        l("VirtualNetwork", "aro-dev-vnet"),
        l("ResourceGroup", "aro-dev-rg"),
    );
    assert!(
        subnet.1 < vnet.0 && vnet.1 < rg.0,
        "{subnet:?} {vnet:?} {rg:?}"
    );
    assert!(infra.iter().all(|x| x.1 <= rg.1), "{infra:?} {rg:?}");
    // Each ARO object is deleted first, waits with its finalizer, and goes after all it owns.
    for aro in objects.iter().filter(|o| o.owner.is_none()) {
        let (started, gone) = l(&aro.key.kind, &aro.key.name);
        let owned: Vec<(u64, u64)> = objects
            .iter()
            .filter(|o| o.owner.as_deref() == Some(aro.key.to_string().as_str()))
            .map(|o| l(&o.key.kind, &o.key.name))
            .collect();
        assert!(!owned.is_empty(), "{} owns something", aro.key);
        assert!(
            started < first_started(&owned),
            "{} deleted before what it owns: {started} vs {owned:?}",
            aro.key
        );
        assert!(
            last_gone(&owned) < gone,
            "{} finalizer released only after what it owns is gone: {gone} vs {owned:?}",
            aro.key
        );
    }
}

/// Reads the deletion of every object of `objects` back from the event log: kind and name →
/// (deletion started, gone), as resourceVersions.
async fn deletions(c: &Cluster, objects: &[Owned]) -> BTreeMap<(String, String), (u64, u64)> {
    let mut by_kind: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for o in objects {
        by_kind
            .entry((o.key.api_version(), o.key.kind.to_string()))
            .or_default()
            .push(o.key.name.clone());
    }
    let mut out = BTreeMap::new();
    for ((api, kind), names) in by_kind {
        let log = events::read(c, &key(&api, &kind, "aro-dev", ""), |evs| {
            events::all_seen(evs, &names, |e| e.type_ == "DELETED")
        })
        .await;
        for n in names {
            out.insert((kind.clone(), n.clone()), events::deletion(&log, &n));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_between_recording_owned_kinds_and_applying_leaves_nothing_orphaned() {
    use std::os::unix::process::ExitStatusExt;
    let f = Fleet::plain();
    // The binary records the kinds an ARO object owns, then is killed (SIGKILL) before it
    // applies anything of them.
    f.wait_store_free().await;
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
        .args(["run", "--repo"])
        .arg(&f.url)
        .arg("--state")
        .arg(&f.state)
        .args(["--once", "--sim-delay", "0s", "--timeout", "60s"])
        .env("ARO_GITOPS_LOG", "warn")
        .env(agent::FAILPOINT_ENV, "exit-after-owned-kinds-record")
        .output()
        .expect("the binary runs");
    assert_eq!(out.status.signal(), Some(9), "{out:?}");
    let recorded = f
        .inspect(|c| async move {
            let mut recorded = Vec::new();
            for ns in ["aro-dev", "aro-prod"] {
                for (api, kind) in ARO_KINDS {
                    for o in c.list(&key(api, kind, ns, ""), None).await.expect("list") {
                        for (group, version, kind) in owned_kinds(&o) {
                            let api = aro_gitops::object::join_api_version(&group, &version);
                            let live = c.list(&key(&api, &kind, ns, ""), None).await.expect("list");
                            recorded.push((kind, live.len()));
                        }
                    }
                }
            }
            recorded
        })
        .await;
    // The owner records the kinds it is about to apply (all of this pass's, in one write) before
    // the first of them exists.
    assert!(
        !recorded.is_empty(),
        "kinds recorded before the kill: {recorded:?}"
    );
    assert!(
        recorded.iter().all(|(_, live)| *live == 0),
        "and nothing of them applied: {recorded:?}"
    );

    // The restart converges, and every embedded resource is known to its owner and the inventory.
    let s = f.run().await;
    assert_converged(outcome(&s, DEV));
    assert_converged(outcome(&s, PROD));
    let scope = f.scope();
    let (objects, inventories) = f
        .inspect(|c| async move {
            let mut objects = Vec::new();
            for ns in ["aro-dev", "aro-prod"] {
                objects.extend(cluster_objects(&c, ns).await);
            }
            let (inventories, broken, _) =
                aro_gitops::apply::inventory::read_all(&c, &scope, |_| true)
                    .await
                    .expect("inventories");
            assert!(broken.is_empty());
            (objects, inventories)
        })
        .await;
    let embedded: Vec<&Owned> = objects.iter().filter(|o| o.owner.is_some()).collect();
    assert_eq!(embedded.len(), 2 * (34 + 2 + 2), "{objects:#?}");
    for o in &objects {
        let in_inventory = inventories.values().any(|inv| {
            inv.entries.keys().any(|id| {
                (id.kind.as_str(), id.namespace.as_deref(), id.name.as_str())
                    == (
                        o.key.kind.as_str(),
                        o.key.namespace.as_deref(),
                        o.key.name.as_str(),
                    )
            })
        });
        assert!(in_inventory, "{} is in a unit's inventory", o.key);
    }
}

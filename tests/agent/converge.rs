//! The first run of the fleet: the dependency chain is created in order, both clusters converge,
//! and the reports land on the status branch.

use super::*;
use futures::StreamExt;
use kube::api::{Api, DynamicObject, WatchEvent, WatchParams};
use std::collections::BTreeMap;

/// The resourceVersion each object of `key`'s kind in `key`'s namespace was created at, read
/// from the ADDED events of the durable event log (a watch from resourceVersion 1).
async fn creation_versions(cluster: &Cluster, key: &ObjectKey) -> BTreeMap<String, u64> {
    let names: Vec<String> = cluster
        .list(key, None)
        .await
        .expect("list")
        .iter()
        .map(|o| o["metadata"]["name"].as_str().expect("a name").to_string())
        .collect();
    let kind = cluster
        .kind(&key.group, &key.version, &key.kind)
        .await
        .expect("discovery")
        .expect("the kind is served");
    let ns = key.namespace.as_deref().expect("namespaced");
    let api: Api<DynamicObject> =
        Api::namespaced_with(cluster.client().clone(), ns, &kind.resource);
    let mut events = api
        .watch(&WatchParams::default().timeout(10), "1")
        .await
        .expect("watch from the start of the event log")
        .boxed();
    let mut created = BTreeMap::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while names.iter().any(|n| !created.contains_key(n)) {
        let ev = tokio::time::timeout_at(deadline, events.next())
            .await
            .unwrap_or_else(|_| panic!("ADDED events of every {} in {ns}", key.kind));
        match ev {
            Some(Ok(WatchEvent::Added(o))) => {
                let rv = o.metadata.resource_version.as_deref().expect("an rv");
                created
                    .entry(o.metadata.name.clone().expect("a name"))
                    .or_insert(rv.parse::<u64>().expect("a numeric resourceVersion"));
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => panic!("watch of {}: {e}", key.kind),
            None => panic!("the watch of {} ended early: {created:?}", key.kind),
        }
    }
    created
}

/// The ASO resources the AROCluster of `unit` embeds, as keys in `namespace`.
fn infrastructure(f: &Fleet, unit: &str, namespace: &str) -> Vec<ObjectKey> {
    let rendered = aro_gitops::render::render(&f.repo, Path::new(unit)).expect("the unit renders");
    let cluster = rendered
        .into_iter()
        .map(|s| s.object)
        .find(|o| o["kind"] == "AROCluster")
        .expect("the unit has an AROCluster");
    cluster["spec"]["resources"]
        .as_array()
        .expect("embedded resources")
        .iter()
        .map(|r| {
            key(
                r["apiVersion"].as_str().unwrap(),
                r["kind"].as_str().unwrap(),
                namespace,
                r["metadata"]["name"].as_str().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_clusters_converge_with_the_chain_created_in_order() {
    let f = Fleet::plain();
    let summary = f.run().await;
    assert!(!summary.failed());
    assert_eq!(summary.outcomes.len(), 2);
    for unit in [DEV, PROD] {
        let o = outcome(&summary, unit);
        assert_converged(o);
        assert!(
            o.objects
                .iter()
                .all(|ob| ob.action == ObjectAction::Created),
            "a first run creates everything: {}",
            describe(o)
        );
        assert!(o.stale_source.is_none());
    }
    assert!(summary.writes > 0);

    let infra = infrastructure(&f, DEV, "aro-dev");
    assert_eq!(infra.len(), 34, "{infra:?}");
    let (infra_created, hcp, pools, auth) = f
        .inspect(|cluster| async move {
            let cp = key(
                "controlplane.cluster.x-k8s.io/v1beta2",
                "AROControlPlane",
                "aro-dev",
                "dev",
            );
            assert_eq!(live(&cluster, &cp).await["status"]["ready"], true);
            let aro_cluster = key(
                "infrastructure.cluster.x-k8s.io/v1beta2",
                "AROCluster",
                "aro-dev",
                "dev",
            );
            assert_eq!(live(&cluster, &aro_cluster).await["status"]["ready"], true);
            for pool in ["dev-workers", "dev-infra"] {
                let mp = key(
                    "infrastructure.cluster.x-k8s.io/v1beta2",
                    "AROMachinePool",
                    "aro-dev",
                    pool,
                );
                assert_eq!(live(&cluster, &mp).await["status"]["ready"], true, "{pool}");
                let np = key(
                    HCP,
                    "HcpOpenShiftClustersNodePool",
                    "aro-dev",
                    &format!("aro-{pool}"),
                );
                let np = live(&cluster, &np).await;
                assert!(condition_true(&np, "Ready"), "{np:#}");
            }
            let prod_cp = key(
                "controlplane.cluster.x-k8s.io/v1beta2",
                "AROControlPlane",
                "aro-prod",
                "prod",
            );
            assert_eq!(live(&cluster, &prod_cp).await["status"]["ready"], true);

            let mut infra_created = BTreeMap::new();
            for k in &infra {
                let created = creation_versions(&cluster, k).await;
                let rv = *created
                    .get(&k.name)
                    .unwrap_or_else(|| panic!("{k} created: {created:?}"));
                infra_created.insert(k.to_string(), rv);
            }
            let created = |kind: &'static str| {
                let cluster = &cluster;
                async move { creation_versions(cluster, &key(HCP, kind, "aro-dev", "-")).await }
            };
            let hcp = created("HcpOpenShiftCluster").await;
            let pools = created("HcpOpenShiftClustersNodePool").await;
            let auth = created("HcpOpenShiftClustersExternalAuth").await;
            (infra_created, hcp, pools, auth)
        })
        .await;
    assert_eq!(hcp.len(), 1, "{hcp:?}");
    assert_eq!(pools.len(), 2, "{pools:?}");
    assert_eq!(auth.len(), 1, "{auth:?}");
    let hcp_rv = hcp["aro-dev"];
    let auth_rv = auth["aro-dev-entra"];
    let last_infra = infra_created.iter().max_by_key(|(_, rv)| **rv).unwrap();
    assert!(
        *last_infra.1 < hcp_rv,
        "every infrastructure resource before the HcpOpenShiftCluster ({hcp_rv}): {infra_created:?}"
    );
    for (pool, rv) in &pools {
        assert!(
            hcp_rv < *rv,
            "HcpOpenShiftCluster ({hcp_rv}) before node pool {pool} ({rv})"
        );
        assert!(
            *rv < auth_rv,
            "node pool {pool} ({rv}) before the ExternalAuth ({auth_rv})"
        );
    }

    // The reports, on the status branch of the origin.
    let commit = summary.report_commit.as_deref().expect("reports committed");
    assert_eq!(
        git::git(&f.origin(), &["rev-parse", STATUS_BRANCH]),
        commit,
        "the status branch's tip is the run's report commit"
    );
    for (unit, ns, name) in [(DEV, "aro-dev", "dev"), (PROD, "aro-prod", "prod")] {
        let o = outcome(&summary, unit);
        let md = f
            .report(&format!("reports/{ns}/{name}.md"))
            .unwrap_or_else(|| panic!("the Markdown report of {unit}"));
        assert!(md.contains("Converged"), "{md}");
        assert!(md.contains(&o.revision), "{md}");
        let yaml = f
            .report(&format!("reports/{ns}/{name}.yaml"))
            .unwrap_or_else(|| panic!("the YAML report of {unit}"));
        let r = aro_gitops::yaml::from_str(&yaml).expect("the report is YAML");
        assert_eq!(r["kind"], "ClusterReport");
        assert_eq!(r["unit"], unit);
        assert_eq!(r["cluster"]["namespace"], ns);
        assert_eq!(r["cluster"]["name"], name);
        assert_eq!(r["phase"], "Converged");
        assert_eq!(r["azure"], "simulated");
        assert_eq!(r["revision"], o.revision.as_str());
        assert_eq!(r["chain"]["step"], r["chain"]["total"], "{yaml}");
        assert!(
            aro_gitops::validate::validate_report(&r).is_empty(),
            "{:?}\n{yaml}",
            aro_gitops::validate::validate_report(&r)
        );
    }
}

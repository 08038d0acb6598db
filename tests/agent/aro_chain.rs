//! The ARO dependency chain on the simulator (issue 6): `examples-repo` provisions in chain order
//! (asserted on the control plane's event log), a node pool is held until `HcpClusterReady`, the
//! ExternalAuth waits for a Ready node pool of its own cluster (not another cluster's in the same
//! namespace), and a missing kubeconfig Secret keeps the AROControlPlane not ready.

use super::events::{self, Event, first};
use super::*;

const INFRA_API: &str = "infrastructure.cluster.x-k8s.io/v1beta2";
const CONTROL_PLANE_API: &str = "controlplane.cluster.x-k8s.io/v1beta2";
const NODE_POOL: &str = "HcpOpenShiftClustersNodePool";
const EXTERNAL_AUTH: &str = "HcpOpenShiftClustersExternalAuth";

fn acp(ns: &str, name: &str) -> ObjectKey {
    key(CONTROL_PLANE_API, "AROControlPlane", ns, name)
}

fn status_true(e: &Event, pointer: &str) -> bool {
    e.object.pointer(pointer) == Some(&Value::Bool(true))
}

fn added(e: &Event) -> bool {
    e.type_ == "ADDED"
}

fn ready(e: &Event) -> bool {
    condition_true(&e.object, "Ready")
}

/// The resourceVersion of the first event of `name` in the log of `kind` (in `ns`) that `pred`
/// holds for; read until there is one.
async fn when(
    c: &Cluster,
    (api, kind): (&str, &str),
    ns: &str,
    name: &str,
    pred: impl Fn(&Event) -> bool + Copy,
) -> u64 {
    let log = events::read(c, &key(api, kind, ns, ""), |evs| {
        first(evs, name, pred).is_some()
    })
    .await;
    first(&log, name, pred).expect("read until found")
}

/// Runs the agent until `unit` has converged: a run stops at a failed unit, and the simulator
/// takes a moment to provision again what failed before (`--once` runs, with a deadline).
async fn run_until_converged(f: &Fleet, unit: &str) -> RunSummary {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let s = f.run().await;
        if report::phase(outcome(&s, unit)) == Phase::Converged {
            return s;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{unit} did not converge: {}",
            describe(outcome(&s, unit))
        );
    }
}

/// When the last of the infrastructure of `ns` was created, and when the last was Ready.
async fn infrastructure(c: &Cluster, ns: &str) -> (u64, u64) {
    let (mut created, mut ready_at) = (0, 0);
    for (api, kind) in [
        ("resources.azure.com/v1api20200601", "ResourceGroup"),
        ("network.azure.com/v1api20201101", "VirtualNetwork"),
        ("network.azure.com/v1api20201101", "NetworkSecurityGroup"),
        ("network.azure.com/v1api20201101", "VirtualNetworksSubnet"),
        ("keyvault.azure.com/v1api20230701", "Vault"),
        (
            "managedidentity.azure.com/v1api20230131",
            "UserAssignedIdentity",
        ),
    ] {
        let k = key(api, kind, ns, "");
        let names: Vec<String> = c
            .list(&k, None)
            .await
            .expect("list")
            .iter()
            .map(|o| o["metadata"]["name"].as_str().expect("a name").to_string())
            .collect();
        let log = events::read(c, &k, |evs| events::all_seen(evs, &names, ready)).await;
        for n in &names {
            created = created.max(first(&log, n, added).expect("created"));
            ready_at = ready_at.max(first(&log, n, ready).expect("Ready"));
        }
    }
    (created, ready_at)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn examples_repo_provisions_in_chain_order() {
    let f = Fleet::plain();
    f.run().await;
    let steps = f
        .inspect(|c| async move {
            let ns = "aro-dev";
            let (infra_created, infra_ready) = infrastructure(&c, ns).await;
            let cluster = (INFRA_API, "AROCluster");
            let control_plane = (CONTROL_PLANE_API, "AROControlPlane");
            let hcp = (HCP, "HcpOpenShiftCluster");
            let pools = [
                when(&c, (HCP, NODE_POOL), ns, "aro-dev-workers", added).await,
                when(&c, (HCP, NODE_POOL), ns, "aro-dev-infra", added).await,
            ];
            let first_pool_ready = when(&c, (HCP, NODE_POOL), ns, "aro-dev-workers", ready)
                .await
                .min(when(&c, (HCP, NODE_POOL), ns, "aro-dev-infra", ready).await);
            vec![
                ("1 infrastructure created", infra_created),
                ("1b infrastructure Ready", infra_ready),
                (
                    "2 ResourcesReady",
                    when(&c, cluster, ns, "dev", |e| {
                        condition_true(&e.object, "ResourcesReady")
                    })
                    .await,
                ),
                (
                    "3 HcpOpenShiftCluster created",
                    when(&c, hcp, ns, "aro-dev", added).await,
                ),
                (
                    "3b HcpOpenShiftCluster Ready",
                    when(&c, hcp, ns, "aro-dev", ready).await,
                ),
                (
                    "4 HcpClusterReady",
                    when(&c, control_plane, ns, "dev", |e| {
                        condition_true(&e.object, "HcpClusterReady")
                    })
                    .await,
                ),
                (
                    "5 kubeconfig Secret",
                    when(&c, ("v1", "Secret"), ns, "dev-kubeconfig", added).await,
                ),
                (
                    "6 AROControlPlane ready",
                    when(&c, control_plane, ns, "dev", |e| {
                        status_true(e, "/status/ready")
                    })
                    .await,
                ),
                (
                    "7 AROCluster ready",
                    when(&c, cluster, ns, "dev", |e| status_true(e, "/status/ready")).await,
                ),
                (
                    "8 AROCluster provisioned",
                    when(&c, cluster, ns, "dev", |e| {
                        status_true(e, "/status/initialization/provisioned")
                    })
                    .await,
                ),
                ("node pools created", pools[0].min(pools[1])),
                ("a node pool Ready", first_pool_ready),
                (
                    "ExternalAuth created",
                    when(&c, (HCP, EXTERNAL_AUTH), ns, "aro-dev-entra", added).await,
                ),
            ]
        })
        .await;
    let at = |step: &str| {
        steps
            .iter()
            .find(|(s, _)| s.starts_with(step))
            .unwrap_or_else(|| panic!("{step}"))
            .1
    };
    // Each stage is applied once what it waits for is Ready. The AROCluster's and AROControlPlane's
    // conditions are written at the end of the pass that sees the ASO resources Ready, so they
    // bound the order from above; the simulator writes the kubeconfig Secret as the
    // HcpOpenShiftCluster becomes Ready.
    let strictly = [
        ("1 ", "1b "),
        ("1b ", "2 "),
        ("1b ", "3 "),
        ("2 ", "4 "),
        ("3 ", "3b "),
        ("3 ", "5 "),
        ("3b ", "4 "),
        ("5 ", "6 "),
        ("6 ", "7 "),
        ("3b ", "node pools"),
        ("a node pool Ready", "ExternalAuth"),
    ];
    for (before, after) in strictly {
        assert!(
            at(before) < at(after),
            "{before} before {after}: {steps:#?}"
        );
    }
    for (before, after) in [("4 ", "6 "), ("7 ", "8 ")] {
        assert!(at(before) <= at(after), "{before} by {after}: {steps:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_pool_is_held_until_hcp_cluster_ready() {
    let f = Fleet::plain();
    let original = std::fs::read_to_string(f.repo.join(DEV).join("kustomization.yaml")).unwrap();
    f.add_patch(
        DEV,
        "AROControlPlane",
        "dev",
        "- op: add\n  path: /spec/resources/0/metadata/annotations\n  value: {aro-gitops.dev/simulate-arm-error: InvalidTemplateDeployment}",
    );
    // The HcpOpenShiftCluster fails: HcpClusterReady never turns True, no node pool is created.
    let s = f.run().await;
    let o = outcome(&s, DEV);
    assert_eq!(report::phase(o), Phase::Failed, "{}", describe(o));
    for name in ["aro-dev-workers", "aro-dev-infra"] {
        let pool = o
            .objects
            .iter()
            .find(|x| x.key.kind == NODE_POOL && x.key.name == name)
            .unwrap_or_else(|| panic!("{name}: {}", describe(o)));
        assert!(
            matches!(pool.action, ObjectAction::Blocked { .. }),
            "{}",
            describe(o)
        );
    }
    let (pools, hcp_ready) = f
        .inspect(|c| async move {
            let pools = c
                .list(&key(HCP, NODE_POOL, "aro-dev", ""), None)
                .await
                .expect("list")
                .len();
            (
                pools,
                condition_true(&live(&c, &acp("aro-dev", "dev")).await, "HcpClusterReady"),
            )
        })
        .await;
    assert_eq!((pools, hcp_ready), (0, false));

    // Fixed in git: the node pools are created once the HcpOpenShiftCluster is Ready, not before.
    f.write(&format!("{DEV}/kustomization.yaml"), &original);
    let s = run_until_converged(&f, DEV).await;
    assert_converged(outcome(&s, DEV));
    let (hcp_ready, pools) = f
        .inspect(|c| async move {
            let ns = "aro-dev";
            let ready = when(&c, (HCP, "HcpOpenShiftCluster"), ns, "aro-dev", ready).await;
            let pools = [
                when(&c, (HCP, NODE_POOL), ns, "aro-dev-workers", added).await,
                when(&c, (HCP, NODE_POOL), ns, "aro-dev-infra", added).await,
            ];
            (ready, pools)
        })
        .await;
    assert!(
        pools.iter().all(|p| hcp_ready < *p),
        "{hcp_ready} < {pools:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_external_auth_waits_for_a_ready_node_pool_of_its_own_cluster() {
    let f = Fleet::plain();
    // A second cluster, `other`, in the same namespace (its own unit; the fleet objects come from dev).
    let other = "clusters/other";
    git::copy_dir(&f.repo.join(DEV), &f.repo.join(other));
    f.replace(
        &format!("{other}/cluster-params.yaml"),
        "  name: dev\n",
        "  name: other\n",
    );
    f.replace(
        &format!("{other}/kustomization.yaml"),
        "  - ../../base/fleet",
        "",
    );
    // The Namespace is dev's: an object belongs to one unit.
    let kustomization = format!("{other}/kustomization.yaml");
    let text = std::fs::read_to_string(f.repo.join(&kustomization)).unwrap();
    std::fs::write(
        f.repo.join(&kustomization),
        format!(
            "{text}patches:\n  - target: {{kind: Namespace}}\n    patch: |-\n      $patch: delete\n      apiVersion: v1\n      kind: Namespace\n      metadata:\n        name: any\n"
        ),
    )
    .unwrap();
    let original = std::fs::read_to_string(f.repo.join(DEV).join("kustomization.yaml")).unwrap();
    // The dev cluster's node pools fail: none of them is ever Ready.
    f.add_patch(
        DEV,
        "AROMachinePool",
        "dev-.*",
        "- op: add\n  path: /spec/resources/0/metadata/annotations\n  value: {aro-gitops.dev/simulate-arm-error: QuotaExceeded}",
    );
    let first_run = f.run().await;
    assert_converged(outcome(&first_run, other));
    // Run again: dev is passed over with the other cluster's node pool Ready in its namespace.
    let s = f.run().await;
    assert_converged(outcome(&s, other));
    let o = outcome(&s, DEV);
    assert_eq!(report::phase(o), Phase::Failed, "{}", describe(o));
    let auth = o
        .objects
        .iter()
        .find(|x| x.key.kind == EXTERNAL_AUTH)
        .unwrap_or_else(|| panic!("{}", describe(o)));
    assert!(
        matches!(auth.action, ObjectAction::Blocked { .. }),
        "{}",
        describe(o)
    );
    let (other_pool_ready, dev_auth, other_auth, deferred) = f
        .inspect(|c| async move {
            let pool = live(&c, &key(HCP, NODE_POOL, "aro-dev", "aro-other-workers")).await;
            let dev_auth = c
                .get(&key(HCP, EXTERNAL_AUTH, "aro-dev", "aro-dev-entra"))
                .await
                .unwrap();
            let other_auth = c
                .get(&key(HCP, EXTERNAL_AUTH, "aro-dev", "aro-other-entra"))
                .await
                .unwrap();
            let cp = live(&c, &acp("aro-dev", "dev")).await;
            let deferred = cp
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .and_then(|cs| cs.iter().find(|c| c["type"] == "ExternalAuthReady"))
                .map(|c| (c["status"].clone(), c["reason"].clone()));
            (
                condition_true(&pool, "Ready"),
                dev_auth.is_some(),
                other_auth.is_some(),
                deferred,
            )
        })
        .await;
    assert!(other_pool_ready, "the other cluster's node pool is Ready");
    assert!(other_auth, "the other cluster's ExternalAuth was created");
    assert!(!dev_auth, "dev's ExternalAuth is still deferred");
    assert_eq!(
        deferred,
        Some((Value::from("False"), Value::from("WaitingForNodePool")))
    );

    // Dev's node pools fixed: its ExternalAuth comes after one of them is Ready.
    f.write(&format!("{DEV}/kustomization.yaml"), &original);
    let s = run_until_converged(&f, DEV).await;
    assert_converged(outcome(&s, DEV));
    let (pool_ready, auth_created) = f
        .inspect(|c| async move {
            let ns = "aro-dev";
            // They were never Ready before: their first Ready is after the fix.
            let pool = (HCP, NODE_POOL);
            let pool_ready = when(&c, pool, ns, "aro-dev-workers", ready)
                .await
                .min(when(&c, pool, ns, "aro-dev-infra", ready).await);
            let auth = when(&c, (HCP, EXTERNAL_AUTH), ns, "aro-dev-entra", added).await;
            (pool_ready, auth)
        })
        .await;
    assert!(pool_ready < auth_created, "{pool_ready} < {auth_created}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_kubeconfig_secret_keeps_the_control_plane_not_ready() {
    let f = Fleet::plain();
    // The simulated ASO provisions the cluster but never writes `dev-kubeconfig`.
    f.add_patch(
        DEV,
        "AROControlPlane",
        "dev",
        "- op: add\n  path: /spec/resources/0/metadata/annotations\n  value: {aro-gitops.dev/simulate-withhold-secrets: \"true\"}",
    );
    let mut config = f.config();
    // Dev cannot converge without the Secret: the run ends at this deadline, which leaves prod
    // room to converge on a loaded machine.
    config.timeout = Duration::from_secs(40);
    f.wait_store_free().await;
    let s = agent::run(config).await.expect("runs");
    assert_eq!(
        s.timed_out,
        vec![DEV.to_string()],
        "{}",
        describe(outcome(&s, DEV))
    );
    assert_converged(outcome(&s, PROD));
    let cp = f
        .inspect(|c| async move { live(&c, &acp("aro-dev", "dev")).await })
        .await;
    assert!(condition_true(&cp, "HcpClusterReady"), "{cp:#}");
    assert_eq!(
        cp.pointer("/status/ready"),
        Some(&Value::Bool(false)),
        "{cp:#}"
    );

    // The Secret appears (the simulated ASO writes it again): the control plane is ready and the
    // cluster converges.
    f.replace(
        &format!("{DEV}/kustomization.yaml"),
        "simulate-withhold-secrets: \"true\"",
        "simulate-withhold-secrets: \"false\"",
    );
    let s = f.run().await;
    assert_converged(outcome(&s, DEV));
    let cp = f
        .inspect(|c| async move { live(&c, &acp("aro-dev", "dev")).await })
        .await;
    assert_eq!(
        cp.pointer("/status/ready"),
        Some(&Value::Bool(true)),
        "{cp:#}"
    );
}

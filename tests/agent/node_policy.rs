//! The AutoNodePolicy merged into the ARO node pools (`policies.md` §3) on the simulator: the
//! examples converge with the policy's OS disk on every live node pool and the policy `Ready`, a
//! rerun and a plan right after find nothing to do, a policy change re-applies the node pools of
//! its namespace; a node pool whose VM size the policy refuses is not applied and its
//! AROMachinePool says why, while the other cluster converges.

use super::*;
use aro_gitops::agent::{PlanRequest, Safety};

const POLICY_API: &str = "karpenter.hypershift.openshift.io/v1beta1";
const POLICY_FILE: &str = "base/fleet/autonodepolicy.yaml";
const ROOT_VOLUME: &str = "volumeSize: 128Gi\n      volumeType: Premium_LRS";

fn policy(ns: &str, name: &str) -> ObjectKey {
    key(POLICY_API, "AutoNodePolicy", ns, name)
}

fn node_pool(ns: &str, name: &str) -> ObjectKey {
    key(HCP, "HcpOpenShiftClustersNodePool", ns, name)
}

/// `(status, reason, message)` of condition `type_` of `obj`.
fn cond(obj: &Value, type_: &str) -> (String, String, String) {
    let c = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .unwrap_or_else(|| panic!("condition {type_} in {obj:#}"));
    let s = |f: &str| c[f].as_str().unwrap_or_default().to_string();
    (s("status"), s("reason"), s("message"))
}

/// The live objects `keys`, in order.
async fn read(f: &Fleet, keys: Vec<ObjectKey>) -> Vec<Value> {
    f.inspect(|c| async move {
        let mut out = Vec::new();
        for k in &keys {
            out.push(live(&c, k).await);
        }
        out
    })
    .await
}

const POOLS: [(&str, &str); 4] = [
    ("aro-dev", "aro-dev-workers"),
    ("aro-dev", "aro-dev-infra"),
    ("aro-prod", "aro-prod-workers"),
    ("aro-prod", "aro-prod-infra"),
];

async fn os_disks(f: &Fleet) -> Vec<Value> {
    let keys = POOLS.iter().map(|(ns, n)| node_pool(ns, n)).collect();
    read(f, keys)
        .await
        .iter()
        .map(|np| np["spec"]["properties"]["platform"]["osDisk"].clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_replaces_every_os_disk_is_ready_and_a_change_reapplies_the_node_pools() {
    let f = Fleet::plain();
    // The node pools write 128 GiB Premium_LRS; the policy says otherwise.
    f.replace(
        POLICY_FILE,
        ROOT_VOLUME,
        "volumeSize: 256Gi\n      volumeType: StandardSSD_LRS",
    );
    // A second policy in dev's namespace, not named default: ignored.
    f.write(
        &format!("{DEV}/strict-policy.yaml"),
        "apiVersion: karpenter.hypershift.openshift.io/v1beta1\nkind: AutoNodePolicy\nmetadata:\n  name: strict\nspec:\n  nodePoolDefaults:\n    requirements:\n      - key: node.kubernetes.io/instance-type\n        operator: In\n        values: [Standard_D2s_v3]\n",
    );
    f.add_resource(DEV, "strict-policy.yaml");
    let first = f.run().await;
    assert_converged(outcome(&first, DEV));
    assert_converged(outcome(&first, PROD));
    let ignored = outcome(&first, DEV)
        .objects
        .iter()
        .find(|o| o.key.name == "strict")
        .expect("the strict policy's outcome");
    assert_eq!(ignored.reason.as_deref(), Some("NotDefault"));
    let disk = serde_json::json!({"sizeGiB": 256, "diskStorageAccountType": "StandardSSD_LRS"});
    assert_eq!(os_disks(&f).await, vec![disk; 4]);
    let policies = read(
        &f,
        vec![
            policy("aro-dev", "default"),
            policy("aro-prod", "default"),
            policy("aro-dev", "strict"),
        ],
    )
    .await;
    for (p, ns) in policies[..2].iter().zip(["aro-dev", "aro-prod"]) {
        assert_eq!(
            cond(p, "Ready"),
            (
                "True".into(),
                "Applied".into(),
                format!("merged into every node pool of namespace {ns} (2)")
            )
        );
    }
    assert_eq!(
        cond(&policies[2], "Ready"),
        (
            "False".into(),
            "NotDefault".into(),
            "ignored: only the AutoNodePolicy named default counts in namespace aro-dev".into()
        )
    );

    // Nothing to do right after: a rerun writes nothing, a plan shows nothing.
    let again = f.run().await;
    assert_eq!(again.writes, 0, "{}", describe(outcome(&again, DEV)));
    f.wait_store_free().await;
    let plan = aro_gitops::agent::plan(PlanRequest {
        repo: f.url.to_string_lossy().into_owned(),
        head: GitRef::RemoteHead,
        base: None,
        state_dir: f.state.clone(),
        kubeconfig: None,
        in_cluster: false,
        safety: Safety::default(),
        use_azure_simulator: false,
        fleet: Default::default(),
        verify_signatures: None,
    })
    .await
    .expect("the plan runs");
    for c in &plan.preview.clusters {
        assert!(
            c.changes.is_empty() && c.errors.is_empty(),
            "{}: {:?} {:?}",
            c.unit,
            c.changes.iter().map(|x| &x.diff).collect::<Vec<_>>(),
            c.errors
        );
    }

    // A change of the policy alone re-applies every node pool of both namespaces.
    f.replace(POLICY_FILE, "volumeSize: 256Gi", "volumeSize: 512Gi");
    let third = f.run().await;
    for unit in [DEV, PROD] {
        let o = outcome(&third, unit);
        assert_converged(o);
        let updated = with_action(o, &ObjectAction::Updated);
        assert_eq!(
            updated
                .iter()
                .filter(|k| k.starts_with("HcpOpenShiftClustersNodePool/"))
                .count(),
            2,
            "{}",
            describe(o)
        );
    }
    let disk = serde_json::json!({"sizeGiB": 512, "diskStorageAccountType": "StandardSSD_LRS"});
    assert_eq!(os_disks(&f).await, vec![disk; 4]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_pool_the_policy_refuses_is_not_applied_while_the_other_cluster_converges() {
    let f = Fleet::plain();
    f.replace(
        "components/dev/kustomization.yaml",
        "value: Standard_D4s_v3",
        "value: Standard_D2s_v3",
    );
    let s = f.run().await;
    assert_converged(outcome(&s, PROD));
    let dev = outcome(&s, DEV);
    assert_eq!(report::phase(dev), Phase::Failed, "{}", describe(dev));
    // `validate` refuses it before apply: the whole cluster waits for a size the policy allows.
    let message = "AutoNodePolicy aro-dev/default does not allow vmSize Standard_D2s_v3";
    assert!(
        dev.errors.iter().any(|e| e.message.contains(message)
            && e.object.as_ref().is_some_and(|o| o.name == "dev-workers")),
        "{}",
        describe(dev)
    );
    let amp = key(
        "infrastructure.cluster.x-k8s.io/v1beta2",
        "AROMachinePool",
        "aro-dev",
        "dev-workers",
    );
    let pool = node_pool("aro-dev", "aro-dev-workers");
    let (amp, pool, prod_policy) = f
        .inspect(|c| async move {
            (
                c.get(&amp).await.expect("get"),
                c.get(&pool).await.expect("get"),
                live(&c, &policy("aro-prod", "default")).await,
            )
        })
        .await;
    assert!(
        amp.is_none(),
        "the refused machine pool was applied: {amp:#?}"
    );
    assert!(
        pool.is_none(),
        "the refused node pool was applied: {pool:#?}"
    );
    assert_eq!(cond(&prod_policy, "Ready").0, "True");
    let md = (f.report("reports/aro-dev/dev.md"))
        .or_else(|| f.report("reports/_units/clusters_dev.md"))
        .expect("the dev report");
    assert!(md.contains("Standard_D2s_v3"), "{md}");
}

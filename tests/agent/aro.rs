//! The embedded ARO reconcilers on the simulator (issue 6, the parts in place so far): a failing
//! HcpOpenShiftCluster shows `[Error] <message>` in `HcpClusterReady` and in the report, the
//! control plane endpoint is mirrored into the AROCluster, and a node pool removed from git is
//! deleted (with consent), its Azure-backed objects dependents first.

use super::*;

fn acp() -> ObjectKey {
    key(
        "controlplane.cluster.x-k8s.io/v1beta2",
        "AROControlPlane",
        "aro-dev",
        "dev",
    )
}

fn condition<'a>(obj: &'a Value, type_: &str) -> &'a Value {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .unwrap_or_else(|| panic!("condition {type_} in {obj:#}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_hcp_cluster_shows_error_in_hcp_cluster_ready_and_the_report() {
    let f = Fleet::plain();
    f.add_patch(
        DEV,
        "AROControlPlane",
        "dev",
        "- op: add\n  path: /spec/resources/0/metadata/annotations\n  value: {aro-gitops.dev/simulate-arm-error: InvalidTemplateDeployment}",
    );
    let s = f.run().await;
    let o = outcome(&s, DEV);
    assert_eq!(report::phase(o), Phase::Failed, "{}", describe(o));
    assert_converged(outcome(&s, PROD));
    let live = f.inspect(|c| async move { live(&c, &acp()).await }).await;
    let ready = condition(&live, "HcpClusterReady");
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], "InvalidTemplateDeployment");
    let message = ready["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("[Error] "), "{message}");
    // The report names the failed step and carries the condition with its `[Error] ` message.
    let md = f.report("reports/aro-dev/dev.md").expect("the dev report");
    assert!(md.contains("HcpClusterReady failed"), "{md}");
    assert!(
        md.contains("| HcpClusterReady | False | InvalidTemplateDeployment | [Error] "),
        "{md}"
    );
    assert!(md.contains("InvalidTemplateDeployment"), "{md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_endpoint_is_mirrored_into_the_aro_cluster() {
    let f = Fleet::plain();
    f.run().await;
    let (cp, cluster) = f
        .inspect(|c| async move {
            let cluster = key(
                "infrastructure.cluster.x-k8s.io/v1beta2",
                "AROCluster",
                "aro-dev",
                "dev",
            );
            (live(&c, &acp()).await, live(&c, &cluster).await)
        })
        .await;
    let url = cp
        .pointer("/status/apiURL")
        .and_then(Value::as_str)
        .expect("apiURL");
    let endpoint = &cluster["spec"]["controlPlaneEndpoint"];
    let host = endpoint["host"].as_str().expect("host");
    assert!(url.contains(host), "{url} vs {endpoint}");
    let port = endpoint["port"].as_u64().expect("port");
    assert!(
        url.ends_with(&format!(":{port}")) || port == 443,
        "{url} vs {endpoint}"
    );
    assert_eq!(cluster.pointer("/status/ready"), Some(&Value::Bool(true)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_pool_removed_from_git_is_deleted_with_consent() {
    let f = Fleet::plain();
    f.run().await;
    let pool = key(
        HCP,
        "HcpOpenShiftClustersNodePool",
        "aro-dev",
        "aro-dev-infra",
    );
    let amp = key(
        "infrastructure.cluster.x-k8s.io/v1beta2",
        "AROMachinePool",
        "aro-dev",
        "dev-infra",
    );
    let text = std::fs::read_to_string(f.repo.join(DEV).join("kustomization.yaml")).unwrap();
    f.write(
        &format!("{DEV}/kustomization.yaml"),
        &format!(
            "{text}\npatches:\n  - patch: |-\n      $patch: delete\n      apiVersion: cluster.x-k8s.io/v1beta2\n      kind: MachinePool\n      metadata:\n        name: dev-infra\n  - patch: |-\n      $patch: delete\n      apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\n      kind: AROMachinePool\n      metadata:\n        name: dev-infra\n"
        ),
    );
    // Without consent: blocked, still live.
    let held = f.run().await;
    let o = outcome(&held, DEV);
    let blocked = with_action(o, &ObjectAction::DeletionBlocked);
    assert!(blocked.contains(&pool.to_string()), "{}", describe(o));
    assert!(blocked.contains(&amp.to_string()), "{}", describe(o));
    // With consent: gone, the node pool before the AROMachinePool that embeds it.
    let mut config = f.config();
    config.safety.allow_deletion = true;
    f.wait_store_free().await;
    let done = agent::run(config).await.expect("runs");
    let o = outcome(&done, DEV);
    let deleted = with_action(o, &ObjectAction::Deleted);
    assert!(deleted.contains(&pool.to_string()), "{}", describe(o));
    assert!(deleted.contains(&amp.to_string()), "{}", describe(o));
    let (p, a) = (pool.clone(), amp.clone());
    let gone = f
        .inspect(|c| async move {
            (
                c.get(&p).await.unwrap().is_none(),
                c.get(&a).await.unwrap().is_none(),
            )
        })
        .await;
    assert_eq!(gone, (true, true));
    assert!(
        outcome(&done, PROD)
            .objects
            .iter()
            .all(|x| x.action != ObjectAction::Deleted)
    );
}

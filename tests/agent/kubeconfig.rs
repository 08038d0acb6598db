//! `--kubeconfig`: the agent works on that cluster (here a standalone local control plane served on
//! loopback), starts no simulator, and does not pretend Azure answered.

use super::*;
use common::kubectl::Server;

#[tokio::test]
async fn with_a_kubeconfig_the_agent_uses_that_cluster_and_no_simulator() {
    let server = Server::start();
    let f = Fixture::plain();
    let mut config = f.config();
    config.kubeconfig = Some(server.kubeconfig.clone());
    config.timeout = Duration::from_secs(3);
    let summary = agent::run(config).await.expect("the run itself works");
    // Nothing plays ASO on that cluster, so the infrastructure is applied but never Ready.
    assert_eq!(summary.timed_out.len(), 2, "{summary:?}");
    assert!(summary.failed());
    let dev = outcome(&summary, DEV);
    assert_eq!(dev.azure, report::AzureMode::Real);
    assert_eq!(report::phase(dev), Phase::Blocked, "{}", describe(dev));
    let rg = dev
        .objects
        .iter()
        .find(|o| o.key.kind == "ResourceGroup")
        .expect("the resource group was applied");
    assert_eq!(rg.action, ObjectAction::Created);
    assert!(!rg.ready);
    let hcp = dev
        .objects
        .iter()
        .find(|o| o.key.kind == "HcpOpenShiftCluster")
        .unwrap();
    assert!(
        matches!(hcp.action, ObjectAction::Blocked { .. }),
        "{hcp:?}"
    );
    // The objects are on the server the kubeconfig names.
    let k = server.kubectl();
    let json = k
        .get_json(&["resourcegroups.resources.azure.com", "-n", "aro-dev"])
        .expect("listed");
    assert!(!json["items"].as_array().unwrap().is_empty());
    assert!(
        json["items"][0].pointer("/status/conditions").is_none(),
        "no simulator wrote a status"
    );
    let yaml = f
        .report("reports/aro-dev/dev.yaml")
        .expect("the report was committed");
    assert!(yaml.contains("azure: real"), "{yaml}");
}

//! `--kubeconfig`: the agent works on that cluster (here a standalone local control plane served on
//! loopback), starts no simulator, and does not pretend Azure answered. With `control-plane serve
//! --simulate-azure` the simulator runs in the server's process instead, and the fleet converges.

use super::*;
use common::kubectl::Server;

#[tokio::test]
async fn with_a_kubeconfig_the_agent_uses_that_cluster_and_no_simulator() {
    let server = Server::start();
    let f = Fleet::plain();
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

#[test]
fn against_a_served_control_plane_with_simulated_azure_run_once_converges() {
    let server = Server::start_with_args(&["--simulate-azure", "--sim-delay", "0s"]);
    assert!(
        server.log().contains("Azure is SIMULATED"),
        "the server says Azure is simulated: {}",
        server.log()
    );
    let fleet = Fleet::plain();
    let kubeconfig = server.kubeconfig.to_str().expect("UTF-8 path");
    let out = fleet.aro_gitops(&[
        "run",
        "--once",
        "--timeout",
        "60s",
        "--kubeconfig",
        kubeconfig,
    ]);
    assert_eq!(out.code, 0, "the run did not converge:\n{}", out.all());
    // The served control plane is marked as simulating Azure: the reports never call it real.
    let report = fleet.report("reports/aro-dev/dev.yaml").unwrap_or_default();
    assert!(
        report.contains("azure: simulated"),
        "{report}\n{}",
        out.all()
    );
    for unit in [DEV, PROD] {
        let row = out
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{unit} ")))
            .unwrap_or_else(|| panic!("{unit} in the summary:\n{}", out.all()));
        assert!(row.contains(" Converged "), "{row}\n{}", out.all());
    }
    // The simulator wrote ASO's status on the served control plane.
    let json = server
        .kubectl()
        .get_json(&["resourcegroups.resources.azure.com", "-n", "aro-dev"])
        .expect("listed");
    assert!(
        json["items"][0].pointer("/status/conditions").is_some(),
        "{json}"
    );
}

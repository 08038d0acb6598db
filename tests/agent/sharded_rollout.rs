//! A rollout over two shards against one served control plane: each shard reconciles its own
//! units but decides over the whole fleet, reading the other shard's units from its standing on
//! the fleet's rollout Lease. A failure in one shard's wave pauses the rollout in the other, which
//! never saw the failure itself.
//!
//! The four-cluster fleet's production clusters are shard 1's and its staging clusters shard 0's
//! (see `sharding::OF_TWO`); the waves are production, then staging.

use super::sharding::{OF_TWO, ShardedFleet};
use super::*;
use common::kubectl::Server;

/// Production first, then staging.
const WAVES: &str = "rollout:
  waves:
    - name: prod
      selector: {matchLabels: {environment: production}}
    - name: staging
      selector: {matchLabels: {environment: staging}}
";

/// A patch that production's component adds: a channel group ASO's CRD refuses.
const BROKEN_CHANNEL: &str = "- target:
    group: controlplane.cluster.x-k8s.io
    kind: AROControlPlane
  patch: |
    - op: replace
      path: /spec/resources/0/spec/properties/version/channelGroup
      value: nightly-bogus
";

#[test]
fn a_failure_in_one_shard_pauses_the_rollout_in_the_other() {
    let server = Server::start_with_args(&["--simulate-azure", "--sim-delay", "0s"]);
    let fleet = ShardedFleet::new(4);
    std::fs::write(fleet.repo.join("aro-gitops.yaml"), WAVES).expect("settings");
    fleet.push("a rollout in two waves");
    for run in fleet.round(&server, 1, 2, &[]) {
        assert_eq!(
            run.code,
            0,
            "the fleet converges from empty:\n{}",
            run.all()
        );
    }

    // A change to every cluster, through the shared template, that breaks production.
    let template = fleet.repo.join("cluster-template/cluster.yaml");
    let text = std::fs::read_to_string(&template).expect("the template");
    let text = text.replacen(
        "metadata:\n  name: cluster\n",
        "metadata:\n  name: cluster\n  annotations:\n    example.com/rollout: \"one\"\n",
        1,
    );
    std::fs::write(&template, text).expect("the template");
    let prod = fleet.repo.join("components/prod/kustomization.yaml");
    let mut text = std::fs::read_to_string(&prod).expect("the component");
    text.push_str(BROKEN_CHANNEL);
    std::fs::write(&prod, text).expect("the component");
    let broken = fleet.push("a shared change, broken for production");
    let paused = format!("rollout of {} paused at wave prod: 2 failing", &broken[..7]);

    // Shard 1 takes it in its production clusters, which fail: the rollout pauses.
    let one = fleet.one(&server, 2, (1, 2), &[]);
    assert_eq!(
        one.code,
        1,
        "a paused rollout fails the run:\n{}",
        one.all()
    );
    assert!(one.stdout.contains(&paused), "{}", one.all());

    // Shard 0 alone: the pause it did not see happen holds its staging clusters. Its run
    // passes: its units are converged where they stay, the failures are shard 1's (whose run
    // failed).
    let zero = fleet.one(&server, 3, (0, 2), &[]);
    assert_eq!(zero.code, 0, "{}", zero.all());
    assert!(zero.stdout.contains(&paused), "{}", zero.all());
    assert!(!zero.stdout.contains("(staging) rolling"), "{}", zero.all());
    let reports = fleet.reports();
    for unit in OF_TWO[0] {
        let report = &reports[*unit];
        assert!(
            report.contains(&format!("newest: {broken}")) && report.contains("paused"),
            "{unit} is held by the pause:\n{report}\n{}",
            zero.all()
        );
        assert!(
            !report.contains(&format!("\nrevision: {broken}")),
            "{unit} stays on its revision:\n{report}"
        );
    }
}

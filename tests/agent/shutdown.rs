//! Graceful shutdown of `aro-gitops run`: a SIGTERM during a run stops it taking work, lets the
//! passes in flight end, publishes the reports, releases the Lease and exits 0; a pass still
//! running at `--shutdown-timeout` is cut short and reported as interrupted; a second signal
//! exits at once. `--once` runs stop the same way.

use super::leader::{Replica, holder, lease, simulated_server};
use super::*;
use common::kubectl::Server;
use std::os::unix::process::ExitStatusExt;

#[test]
fn sigterm_lets_passes_end_publishes_releases_the_lease_and_exits_zero() {
    let server = simulated_server();
    let f = Fleet::with_remote();
    let mut agent = Replica::start(&f, "a", &server, &[]);
    agent.wait_for("leader election: leading", Duration::from_secs(30));
    // Passes are in flight (the simulator takes 200 ms per resource: nothing is converged yet).
    agent.wait_for("applied object=", Duration::from_secs(60));
    assert_eq!(holder(&server).as_deref(), Some(agent.identity.as_str()));

    let out = agent.terminate_leader(Duration::from_secs(60));
    let at = |what: &str| out.find(what).expect("found");
    assert!(at("shutting down") < at("reports committed"), "{out}");
    assert!(at("reports committed") < at("Lease released"), "{out}");
    // Released: no holder, and it expires at once.
    let spec = lease(&server).expect("the Lease stays");
    assert!(
        spec.get("holderIdentity").is_none_or(Value::is_null),
        "{spec}"
    );
    assert_eq!(spec["leaseDurationSeconds"].as_i64(), Some(1), "{spec}");
    // What was done is on the status branch.
    assert!(!f.status_commits().is_empty());
    for path in ["reports/aro-dev/dev.yaml", "reports/aro-prod/prod.yaml"] {
        let yaml = f.report(path).unwrap_or_else(|| panic!("{path} committed"));
        assert!(!yaml.contains("interrupted"), "{yaml}");
    }
}

/// A replica (with `extra` arguments) whose every pass waits a minute, once they are in flight.
fn in_slow_passes(f: &Fleet, server: &Server, extra: &[&str]) -> Replica {
    let mut agent = Replica::start_env(
        f,
        "a",
        server,
        extra,
        &[(agent::FAILPOINT_ENV, "slow-pass")],
    );
    agent.wait_for(
        "failpoint: this pass waits a minute",
        Duration::from_secs(60),
    );
    agent
}

#[test]
fn a_pass_cut_short_by_the_shutdown_timeout_is_reported_interrupted() {
    let server = simulated_server();
    let f = Fleet::with_remote();
    // `--once` this time: a run that would end on its own stops the same way.
    let mut agent = in_slow_passes(&f, &server, &["--once", "--shutdown-timeout", "1s"]);
    agent.signal("TERM");
    let status = agent.wait_exit(Duration::from_secs(30));
    let out = agent.seen.join("\n");
    // A `--once` run cut short did not do its job.
    assert_eq!(status.code(), Some(1), "{status:?}; output:\n{out}");
    assert!(out.contains("pass interrupted"), "{out}");
    // The record of the cut: the unit's report says it was interrupted, not that it converged.
    let yaml = f
        .report("reports/aro-dev/dev.yaml")
        .expect("dev's report committed");
    assert!(yaml.contains("interrupted"), "{yaml}");
    assert!(yaml.contains("phase: Interrupted"), "{yaml}");
}

#[test]
fn a_second_signal_exits_at_once() {
    let server = simulated_server();
    let f = Fleet::with_remote();
    let mut agent = in_slow_passes(&f, &server, &["--shutdown-timeout", "60s"]);
    agent.signal("TERM");
    agent.wait_for("shutting down", Duration::from_secs(10));
    let second = Instant::now();
    agent.signal("INT");
    let status = agent.wait_exit(Duration::from_secs(10));
    assert!(
        second.elapsed() < Duration::from_secs(5),
        "{:?}",
        second.elapsed()
    );
    assert_eq!(
        status.code(),
        Some(130),
        "{status:?} (signal {:?})",
        status.signal()
    );
    assert!(agent.seen.join("\n").contains("second signal"));
}

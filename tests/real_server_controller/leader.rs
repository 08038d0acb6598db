//! Leader election on a real coordination.k8s.io/v1 Lease (`run --leader-elect`, the Role of
//! deploy/base): two agents, exactly one leads and applies; after a kill -9 of the leader the
//! other takes the Lease over once it expires (a transition counted) and applies the next commit;
//! a SIGTERM then lets it finish, release the Lease and exit 0.

use super::*;
use common::kubectl::poll_until;
use common::running::Process;
use serde_json::Value;
use std::time::Instant;

/// Short election timings, so a handover takes seconds (lease 4 s, renew deadline 3 s, retry
/// 500 ms), as `tests/agent/leader.rs` runs them.
const FAST: &[&str] = &[
    "--leader-election-lease-duration",
    "4s",
    "--leader-election-renew-deadline",
    "3s",
    "--leader-election-retry-period",
    "500ms",
];
const LEASE_DURATION: Duration = Duration::from_secs(4);

/// One replica: the process and its holder identity.
struct Replica {
    process: Process,
    identity: String,
}

fn replica(f: &RealFleet, name: &str) -> Replica {
    let mut process = Process::spawn(
        f.agent(&["run", "--leader-elect", "--interval", "1s"])
            .arg("--state")
            .arg(f.state(name))
            .args(FAST),
    );
    let id = process.after("leader election: identity ", DEADLINE);
    let identity = id.split(',').next().expect("an identity").to_string();
    Replica { process, identity }
}

/// The Lease's spec, read as cluster admin (`None`: no Lease yet).
fn lease(f: &RealFleet) -> Option<Value> {
    let lease = f.get_json(&["-n", "aro-gitops-system", "lease", "aro-gitops"])?;
    Some(lease["spec"].clone())
}

fn holder(f: &RealFleet) -> Option<String> {
    lease(f)?["holderIdentity"].as_str().map(str::to_string)
}

#[test]
fn two_agents_share_a_real_lease_through_a_kill_9_handover_and_a_sigterm() {
    let Some(f) = RealFleet::start(&[APP]) else {
        return;
    };
    let a = replica(&f, "a");
    let b = replica(&f, "b");
    let first = poll_until(DEADLINE, "a Lease holder", || holder(&f));
    let (mut leader, mut standby) = if first == a.identity {
        (a, b)
    } else {
        assert_eq!(first, b.identity, "the holder is one of the two agents");
        (b, a)
    };
    leader
        .process
        .wait_for("leader election: leading", DEADLINE);
    poll_until(DEADLINE, "the fleet applied", || {
        f.configmap(APP, "settings", "greeting")
    });
    leader.process.wait_for("cycle 0 (initial)", DEADLINE);

    // The standby writes nothing.
    standby.process.drain();
    let applied = |p: &Process| p.seen.iter().any(|l| l.contains("applied object="));
    assert!(!applied(&standby.process), "{}", standby.process.output());
    assert!(applied(&leader.process), "{}", leader.process.output());
    let transitions = lease(&f).expect("a Lease")["leaseTransitions"]
        .as_i64()
        .unwrap_or(0);

    // kill -9 the leader (no release), then a change.
    leader.process.kill9();
    let killed = Instant::now();
    f.set_greeting(APP, "after the handover");
    f.commit("a change for the new leader");

    // The standby takes the Lease over once it expires.
    poll_until(
        LEASE_DURATION + Duration::from_secs(15),
        "a new holder",
        || holder(&f).filter(|h| *h == standby.identity),
    );
    let took = killed.elapsed();
    assert!(
        took >= LEASE_DURATION - Duration::from_secs(1),
        "{took:?}: before the Lease expired"
    );
    let spec = lease(&f).expect("a Lease");
    assert_eq!(
        spec["leaseTransitions"].as_i64(),
        Some(transitions + 1),
        "{spec}"
    );
    standby
        .process
        .wait_for("leader election: leading", Duration::from_secs(10));
    poll_until(DEADLINE, "the change applied by the new leader", || {
        (f.configmap(APP, "settings", "greeting").as_deref() == Some("after the handover"))
            .then_some(())
    });

    // SIGTERM: the passes end, the Lease is released, exit 0.
    standby.process.signal("TERM");
    let status = standby.process.wait_exit(DEADLINE);
    let out = standby.process.output();
    assert_eq!(status.code(), Some(0), "{status:?}; output:\n{out}");
    for stage in [
        "shutting down",
        "leader election: Lease released",
        "shutdown complete",
    ] {
        assert!(out.contains(stage), "no {stage:?} in:\n{out}");
    }
    let spec = lease(&f).expect("the Lease stays");
    assert!(
        spec.get("holderIdentity").is_none_or(Value::is_null),
        "{spec}"
    );
    assert_eq!(spec["leaseDurationSeconds"].as_i64(), Some(1), "{spec}");
}

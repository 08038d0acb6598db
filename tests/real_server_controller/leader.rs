//! Leader election on a real coordination.k8s.io/v1 Lease (`run --leader-elect`, the Role of
//! deploy/base): two agents, polling off, the webhook on. Exactly one leads and applies; a push
//! that reaches the standby is passed to the leader through the Lease (a patch of its annotation)
//! and applied. After a kill -9 of the leader the other takes the Lease over once it expires (a
//! transition counted) and applies the next push; a SIGTERM then lets it finish, release the Lease
//! and exit 0.

use super::*;
use aro_gitops::trigger::webhook::github_signature;
use common::kubectl::poll_until;
use common::running::{FAST_ELECTION as FAST, FAST_LEASE_DURATION as LEASE_DURATION, Process};
use serde_json::Value;
use std::time::Instant;

const SECRET: &str = "a-webhook-secret-for-two-replicas";

/// One replica: the process, its holder identity and its webhook's address.
struct Replica {
    process: Process,
    identity: String,
    webhook: String,
}

/// A replica with its own state directory, polling off (only a push fetches).
fn replica(f: &RealFleet, name: &str) -> Replica {
    let secret = f.dir.path().join("webhook-secret");
    std::fs::write(&secret, SECRET).expect("the webhook secret");
    let mut process = Process::spawn(
        f.agent(&["run", "--leader-elect", "--interval", "1h"])
            .arg("--state")
            .arg(f.state(name))
            .args(["--webhook-bind-address", "127.0.0.1:0"])
            .arg("--webhook-secret-file")
            .arg(&secret)
            .args(FAST),
    );
    let id = process.after("leader election: identity ", DEADLINE);
    let identity = id.split(',').next().expect("an identity").to_string();
    let webhook = process.after("webhook: serving on http://", DEADLINE);
    Replica {
        process,
        identity,
        webhook,
    }
}

impl Replica {
    /// GitHub's signed delivery of a push to `main` of the fleet: accepted.
    fn push(&self, f: &RealFleet) {
        let body = serde_json::json!({
            "ref": "refs/heads/main",
            "repository": {"clone_url": f.url(), "html_url": f.url(), "default_branch": "main"}
        })
        .to_string();
        let signature = github_signature(SECRET.as_bytes(), body.as_bytes());
        let headers = [
            ("X-GitHub-Event", "push"),
            ("X-Hub-Signature-256", signature.as_str()),
        ];
        let (status, answer) =
            common::http::post(&self.webhook, "/hooks/github", &headers, body.as_bytes());
        assert_eq!(status, 202, "{answer}");
    }
}

/// Waits until the live greeting is `value`.
fn greeting_becomes(f: &RealFleet, value: &str, what: &str) {
    poll_until(DEADLINE, what, || {
        (f.configmap(APP, "settings", "greeting").as_deref() == Some(value)).then_some(())
    });
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

    // A push that reaches the standby: passed to the leader through the Lease, applied.
    f.set_greeting(APP, "through the standby");
    f.commit("a change pushed to the standby");
    standby.push(&f);
    greeting_becomes(
        &f,
        "through the standby",
        "the push through the standby applied",
    );
    standby.process.wait_for(
        "a push passed to the leader through the Lease",
        Duration::from_secs(10),
    );
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
    eprintln!("the standby took the real Lease over {took:?} after the kill -9");
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
    standby.push(&f);
    greeting_becomes(
        &f,
        "after the handover",
        "the change applied by the new leader",
    );

    // SIGTERM: the passes end, the Lease is released, exit 0.
    standby.process.terminate_leader(DEADLINE);
    let spec = lease(&f).expect("the Lease stays");
    assert!(
        spec.get("holderIdentity").is_none_or(Value::is_null),
        "{spec}"
    );
    assert_eq!(spec["leaseDurationSeconds"].as_i64(), Some(1), "{spec}");
}

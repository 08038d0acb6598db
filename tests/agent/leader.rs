//! `run --leader-elect`: two agent processes on one git fleet against `aro-gitops control-plane
//! serve --simulate-azure`. Exactly one leads (the Lease's holder, `aro_gitops_leader` 1 against
//! 0, `/readyz` says which) and converges the fleet; after a SIGKILL of the leader the standby
//! takes the Lease over within the lease duration and applies the next commit.
//!
//! A push webhook that reaches the standby (two replicas behind one Service) is passed to the
//! leader through the Lease, and applied with polling off.
//!
//! `Replica` (one such process) is shared with `shutdown`.

use super::resync::http_get;
use super::*;
use common::kubectl::{Server, poll_until};
use common::running::Process;
pub(super) use common::running::{FAST_ELECTION as FAST, FAST_LEASE_DURATION as LEASE_DURATION};
use std::process::Command;

/// How long the first sync of the fleet may take (a debug build, a shared machine).
pub(super) const CONVERGE_DEADLINE: Duration = Duration::from_secs(180);
pub(super) const LEASE_PATH: &str =
    "/apis/coordination.k8s.io/v1/namespaces/aro-gitops-system/leases/aro-gitops";

/// One `aro-gitops run --kubeconfig K --leader-elect` process, its stdout and stderr as lines
/// (a [`Process`], which it derefs to); killed when dropped.
pub(super) struct Replica {
    process: Process,
    pub(super) identity: String,
    pub(super) metrics: String,
    pub(super) health: String,
}

impl std::ops::Deref for Replica {
    type Target = Process;
    fn deref(&self) -> &Process {
        &self.process
    }
}

impl std::ops::DerefMut for Replica {
    fn deref_mut(&mut self) -> &mut Process {
        &mut self.process
    }
}

impl Replica {
    /// Starts a replica of `f` with its own state directory `state-{name}`.
    pub(super) fn start(f: &Fleet, name: &str, server: &Server, extra: &[&str]) -> Replica {
        Replica::start_env(f, name, server, extra, &[])
    }

    pub(super) fn start_env(
        f: &Fleet,
        name: &str,
        server: &Server,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Replica {
        let mut process = Process::spawn(
            Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
                .arg("run")
                .arg("--repo")
                .arg(&f.url)
                .arg("--state")
                .arg(f.dir().join(format!("state-{name}")))
                .arg("--kubeconfig")
                .arg(&server.kubeconfig)
                .arg("--leader-elect")
                .args(if extra.contains(&"--interval") {
                    &[][..]
                } else {
                    &["--interval", "1s"]
                })
                .args(["--metrics-bind-address", "127.0.0.1:0"])
                .args(["--health-probe-bind-address", "127.0.0.1:0"])
                .args(FAST)
                .args(extra)
                .envs(env.iter().copied())
                .env("ARO_GITOPS_LOG", "info")
                .env("NO_COLOR", "1"),
        );
        let wait = Duration::from_secs(60);
        let metrics = process
            .after("metrics: serving on http://", wait)
            .replace("/metrics", "");
        let id = process.after("leader election: identity ", wait);
        let identity = id.split(',').next().expect("an identity").to_string();
        let health = process.after("health: serving on http://", wait);
        Replica {
            process,
            identity,
            metrics,
            health,
        }
    }

    /// `aro_gitops_leader` on its `/metrics`.
    pub(super) fn leader_gauge(&self) -> Option<i64> {
        let (_, body) = http_get(&self.metrics, "/metrics").ok()?;
        body.lines()
            .find_map(|l| l.strip_prefix("aro_gitops_leader "))
            .and_then(|v| v.trim().parse().ok())
    }

    pub(super) fn readyz(&self) -> String {
        http_get(&self.health, "/readyz")
            .map(|(_, b)| b)
            .unwrap_or_default()
    }
}

/// The Lease's spec on `server` (`None`: no Lease yet).
pub(super) fn lease(server: &Server) -> Option<Value> {
    let r = server.http("GET", LEASE_PATH, None, b"");
    (r.status == 200).then(|| r.json()["spec"].clone())
}

pub(super) fn holder(server: &Server) -> Option<String> {
    lease(server)?["holderIdentity"]
        .as_str()
        .map(str::to_string)
}

/// Both units' reports on the status branch say Converged.
pub(super) fn fleet_converged(f: &Fleet) -> bool {
    ["reports/aro-dev/dev.yaml", "reports/aro-prod/prod.yaml"]
        .iter()
        .all(|p| f.report(p).is_some_and(|y| y.contains("phase: Converged")))
}

pub(super) fn simulated_server() -> Server {
    Server::start_with_args(&["--simulate-azure", "--sim-delay", "200ms"])
}

#[test]
fn one_replica_leads_and_the_standby_takes_over_after_a_sigkill() {
    let server = simulated_server();
    let f = Fleet::with_remote();
    let mut a = Replica::start(&f, "a", &server, &[]);
    let mut b = Replica::start(&f, "b", &server, &[]);

    // Exactly one leads: the Lease's holder, with the gauge at 1; the other stands by at 0.
    let first = poll_until(Duration::from_secs(30), "a Lease holder", || {
        holder(&server)
    });
    let (leader, standby) = if first == a.identity {
        (&mut a, &mut b)
    } else {
        assert_eq!(first, b.identity, "the holder is one of the two replicas");
        (&mut b, &mut a)
    };
    poll_until(Duration::from_secs(10), "the gauges 1 and 0", || {
        (leader.leader_gauge() == Some(1) && standby.leader_gauge() == Some(0)).then_some(())
    });
    leader.wait_for("leader election: leading", Duration::from_secs(10));

    // The leader converges the fleet and publishes; the standby writes nothing.
    poll_until(CONVERGE_DEADLINE, "the fleet converged", || {
        fleet_converged(&f).then_some(())
    });
    assert!(
        leader.readyz().starts_with("ok: leading"),
        "{}",
        leader.readyz()
    );
    let ready = poll_until(Duration::from_secs(30), "the standby ready", || {
        Some(standby.readyz()).filter(|b| b.starts_with("ok: standby"))
    });
    assert!(ready.contains(&leader.identity), "{ready}");
    standby.drain();
    assert!(
        !standby.seen.iter().any(|l| l.contains("applied object=")),
        "the standby applied something:\n{}",
        standby.seen.join("\n")
    );
    assert_eq!(holder(&server).as_deref(), Some(leader.identity.as_str()));
    let transitions = lease(&server).expect("a Lease")["leaseTransitions"]
        .as_i64()
        .unwrap_or(0);

    // SIGKILL the leader (no release), then a change to one cluster.
    leader.kill9();
    let killed = Instant::now();
    f.write(
        "clusters/dev/handover.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: handover\ndata:\n  from: the new leader\n",
    );
    f.add_resource(DEV, "handover.yaml");

    // The standby takes the Lease over once it expires: within the lease duration and a slack
    // for its retry period and a loaded machine.
    let new = poll_until(
        LEASE_DURATION + Duration::from_secs(10),
        "a new holder",
        || holder(&server).filter(|h| *h == standby.identity),
    );
    let took = killed.elapsed();
    assert_eq!(new, standby.identity);
    let spec = lease(&server).expect("a Lease");
    assert_eq!(
        spec["leaseTransitions"].as_i64(),
        Some(transitions + 1),
        "{spec}"
    );
    assert!(
        took >= LEASE_DURATION - Duration::from_secs(1),
        "{took:?}: before the Lease expired"
    );
    poll_until(Duration::from_secs(10), "the new leader's gauge", || {
        (standby.leader_gauge() == Some(1)).then_some(())
    });
    // ... and applies the change.
    poll_until(Duration::from_secs(60), "the change applied", || {
        (server
            .http(
                "GET",
                "/api/v1/namespaces/aro-dev/configmaps/handover",
                None,
                b"",
            )
            .status
            == 200)
            .then_some(())
    });
}

#[test]
fn a_leader_that_cannot_renew_stops_before_its_lease_expires_and_leads_again_later() {
    let server = simulated_server();
    let f = Fleet::with_remote();
    let mut a = Replica::start(&f, "a", &server, &[]);
    a.wait_for("leader election: leading", Duration::from_secs(30));
    poll_until(CONVERGE_DEADLINE, "the fleet converged", || {
        fleet_converged(&f).then_some(())
    });

    // The API server goes away: no renewal. The leader stands by before its Lease could expire
    // for anyone else (the renew deadline, 3 s, against the lease duration, 4 s).
    let cut = Instant::now();
    let stopped = server.stop();
    a.wait_for("leader election: lost the Lease", LEASE_DURATION);
    assert!(cut.elapsed() < LEASE_DURATION, "{:?}", cut.elapsed());
    poll_until(Duration::from_secs(2), "the gauge at 0", || {
        (a.leader_gauge() == Some(0)).then_some(())
    });

    // Back: it still holds the Lease (nobody took it) and leads again.
    let server = stopped.start();
    let before = a.seen.len();
    poll_until(Duration::from_secs(30), "leading again", || {
        a.drain();
        a.seen[before..]
            .iter()
            .any(|l| l.contains("leader election: leading"))
            .then_some(())
    });
    assert_eq!(holder(&server).as_deref(), Some(a.identity.as_str()));
    poll_until(Duration::from_secs(10), "the gauge back at 1", || {
        (a.leader_gauge() == Some(1)).then_some(())
    });
}

#[test]
fn a_push_to_the_standby_is_passed_to_the_leader() {
    let server = simulated_server();
    let f = Fleet::with_remote();
    let secret = f.dir().join("webhook-secret");
    std::fs::write(&secret, super::webhook::SECRET).expect("write the secret");
    let secret = secret.to_str().expect("UTF-8");
    // No polling: only a push fetches.
    let extra = [
        "--interval",
        "1h",
        "--webhook-bind-address",
        "127.0.0.1:0",
        "--webhook-secret-file",
        secret,
    ];
    let mut a = Replica::start(&f, "a", &server, &extra);
    let mut b = Replica::start(&f, "b", &server, &extra);
    let first = poll_until(Duration::from_secs(30), "a Lease holder", || {
        holder(&server)
    });
    let standby = if first == a.identity { &mut b } else { &mut a };
    poll_until(CONVERGE_DEADLINE, "the fleet converged", || {
        fleet_converged(&f).then_some(())
    });
    let webhook = standby.after("webhook: serving on http://", Duration::from_secs(10));

    f.write(
        "clusters/dev/pushed.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pushed\ndata:\n  through: the standby\n",
    );
    f.add_resource(DEV, "pushed.yaml");
    let url = f.url.to_string_lossy().into_owned();
    let body = serde_json::json!({
        "ref": "refs/heads/main",
        "repository": {"clone_url": url, "html_url": url, "default_branch": "main"}
    })
    .to_string();
    let signature = super::webhook::sign(body.as_bytes());
    let headers = [
        ("X-GitHub-Event", "push"),
        ("X-Hub-Signature-256", signature.as_str()),
    ];
    let (status, answer) =
        super::webhook::post(&webhook, "/hooks/github", &headers, body.as_bytes());
    assert_eq!(status, 202, "{answer}");
    poll_until(Duration::from_secs(60), "the pushed change applied", || {
        (server
            .http(
                "GET",
                "/api/v1/namespaces/aro-dev/configmaps/pushed",
                None,
                b"",
            )
            .status
            == 200)
            .then_some(())
    });
    standby.wait_for(
        "a push passed to the leader through the Lease",
        Duration::from_secs(10),
    );
}

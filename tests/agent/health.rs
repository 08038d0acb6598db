//! A long-running `aro-gitops run --health-probe-bind-address 127.0.0.1:0`: it says where it
//! serves, `/readyz` turns 200 once its watch caches have synced, and `/healthz` answers 200.

use super::resync::{Running, http_get};
use super::*;

/// How long the agent may take to start serving, and then to sync its caches (a debug build, a
/// shared machine).
const DEADLINE: Duration = Duration::from_secs(180);

#[test]
fn readyz_turns_ready_once_the_caches_synced_and_healthz_answers() {
    let f = Fleet::plain();
    let agent = Running::start_with(&f, &["--health-probe-bind-address", "127.0.0.1:0"]);
    let addr = agent.served_address("health: serving on http://", "", DEADLINE);

    let deadline = Instant::now() + DEADLINE;
    let mut answers = Vec::new();
    let body = loop {
        let (head, body) = http_get(&addr, "/readyz").expect("the probe endpoint answers");
        let status = head.lines().next().unwrap_or_default();
        if status.starts_with("HTTP/1.1 200") {
            break body;
        }
        assert!(status.starts_with("HTTP/1.1 503"), "{status}: {body}");
        assert!(body.starts_with("not ready: "), "{body}");
        if answers.last() != Some(&body) {
            answers.push(body);
        }
        assert!(
            Instant::now() < deadline,
            "not ready within {DEADLINE:?}; answers:\n{}",
            answers.join("")
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(body, "ok\n");
    let (head, body) = http_get(&addr, "/healthz").expect("the probe endpoint answers");
    let status = head.lines().next().unwrap_or_default();
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert_eq!(body, "ok\n");
}

/// `/readyz`: the status line's code and the body (`None` while the agent does not answer).
fn readyz(addr: &str) -> Option<(u16, String)> {
    let (head, body) = http_get(addr, "/readyz").ok()?;
    let code = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, body))
}

#[test]
fn readyz_shows_a_lost_api_server_and_an_unreachable_source_and_recovers() {
    use common::kubectl::{Server, poll_until};
    let server = Server::start_with_args(&["--simulate-azure", "--sim-delay", "0s"]);
    let f = Fleet::with_remote();
    let kubeconfig = server.kubeconfig.to_str().expect("UTF-8").to_string();
    let agent = Running::start_with(
        &f,
        &[
            "--health-probe-bind-address",
            "127.0.0.1:0",
            "--kubeconfig",
            &kubeconfig,
            "--interval",
            "1s",
        ],
    );
    let addr = agent.served_address("health: serving on http://", "", DEADLINE);
    let answer = |what: &str, want: &dyn Fn(u16, &str) -> bool| {
        poll_until(DEADLINE, what, || {
            readyz(&addr).filter(|(code, body)| want(*code, body))
        })
    };
    answer("ready", &|code, body| code == 200 && body == "ok\n");

    // The API server goes away: the watches fail, readiness says so; the agent lives on.
    let stopped = server.stop();
    let (_, body) = answer("not ready: watches failing", &|code, body| {
        code == 503 && body.contains("watches failing (retrying with backoff)")
    });
    assert!(body.starts_with("not ready: "), "{body}");
    let server = stopped.start();
    answer("ready again", &|code, body| code == 200 && body == "ok\n");

    // The source goes away: still ready (the last good revision serves), and degraded.
    let moved = f.dir().join("moved.git");
    std::fs::rename(&f.url, &moved).expect("move the remote away");
    answer("degraded", &|code, body| {
        code == 200 && body.contains("degraded: the source could not be fetched")
    });
    std::fs::rename(&moved, &f.url).expect("move the remote back");
    answer("no longer degraded", &|code, body| {
        code == 200 && body == "ok\n"
    });
    drop(server);
}

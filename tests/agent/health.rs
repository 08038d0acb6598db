//! A long-running `aro-gitops run --health-probe-bind-address 127.0.0.1:0`: it says where it
//! serves, `/readyz` turns 200 once its watch caches have synced, and `/healthz` answers 200.

use super::resync::{Running, http_get};
use super::*;

/// How long the agent may take to start serving, and then to sync its caches (a debug build, a
/// shared machine).
const DEADLINE: Duration = Duration::from_secs(180);

#[test]
fn readyz_turns_ready_once_the_caches_synced_and_healthz_answers() {
    let f = Fixture::plain();
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

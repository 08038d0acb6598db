//! The rollout's clock is injectable through the binary (`run --rollout-clock`, hidden): an agent
//! started thirty seconds before a cluster's maintenance window opens holds it, reporting when the
//! window opens, then takes it when its clock reaches the window, on its own, without waiting for
//! the wall clock's hour. On the embedded control plane with the Azure simulator.

mod common;

use common::fleet::Fleet;
use common::running::Running;
use serde_json::Value;
use std::time::{Duration, Instant};

/// Production changes only inside its window, 03:00 to 04:00 UTC.
const WINDOW: &str = "rollout:
  windows:
    - kind: allow
      schedule: \"0 3 * * *\"
      duration: 1h
      timeZone: UTC
      units: [\"clusters/prod\"]
";

/// The report of `unit` (`dev`, `prod`) on the status branch, parsed, once there is one.
fn report(fleet: &Fleet, unit: &str) -> Option<Value> {
    let ns = format!("aro-{unit}");
    let text = fleet.report(&format!("reports/{ns}/{unit}.yaml"))?;
    aro_gitops::yaml::from_str(&text).ok()
}

/// Polls until `unit`'s report satisfies `done`, for at most `within`.
fn poll_report(fleet: &Fleet, unit: &str, within: Duration, done: impl Fn(&Value) -> bool) {
    let deadline = Instant::now() + within;
    loop {
        let r = report(fleet, unit);
        if r.as_ref().is_some_and(&done) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{unit}'s report never got there: {r:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_window_opens_on_the_rollouts_clock() {
    let (fleet, _) = Fleet::git();
    fleet.write("aro-gitops.yaml", WINDOW);
    let revision = fleet.commit("production changes inside its maintenance window");
    let agent = Running::start(
        &fleet.url,
        &fleet.state,
        &["--rollout-clock", "2031-05-06T02:59:30Z"],
        false,
    );

    // Outside its window, production waits and says until when; development has no window.
    let said = |r: &Value| r["held"]["why"].as_str().map(str::to_string);
    poll_report(&fleet, "prod", Duration::from_secs(300), |r| {
        said(r).is_some_and(|w| {
            w.contains("waiting for the maintenance window (opens at 2031-05-06 03:00 UTC)")
        })
    });
    let dev = report(&fleet, "dev").expect("a report of dev");
    assert_eq!(dev["revision"], revision.as_str(), "{dev}");
    assert_eq!(dev["phase"], "Converged", "{dev}");

    // The agent's clock reaches 03:00 thirty seconds after it started: production takes the revision then, on
    // the agent's own (no push, no fetch: the interval is an hour).
    poll_report(&fleet, "prod", Duration::from_secs(300), |r| {
        r["phase"] == "Converged" && r["revision"] == revision.as_str() && r["held"].is_null()
    });
    let said: Vec<String> = agent.lines.try_iter().collect();
    assert!(
        said.iter()
            .any(|l| l.ends_with("; 1 waiting for the maintenance window")),
        "{said:?}"
    );
}

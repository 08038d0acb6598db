//! A long-running `aro-gitops run` (no `--once`): it reaches converged, and then each drift cycle
//! over the converged fleet sends no write, no LIST and no GET (live state comes from the watch
//! caches), as its cycle line says.

use super::*;
use aro_gitops::agent::{CycleLine, CycleTrigger};
use std::sync::mpsc::RecvTimeoutError;

/// How long the initial sync and then one drift cycle may take (a debug build, a shared machine).
const CYCLE_DEADLINE: Duration = Duration::from_secs(180);

pub(super) use common::running::Running;

impl Running {
    fn start_default(f: &Fleet) -> Running {
        Running::start_with(f, &["--drift-interval", "1s"])
    }

    /// `aro-gitops run` on `f` ([`Running::start`]), its standard output as lines.
    pub(super) fn start_with(f: &Fleet, extra: &[&str]) -> Running {
        Running::start(&f.url, &f.state, extra, false)
    }

    /// The lines up to the next cycle line, and that line (within [`CYCLE_DEADLINE`]).
    pub(super) fn next_cycle(&self) -> (Vec<String>, CycleLine) {
        let deadline = Instant::now() + CYCLE_DEADLINE;
        let mut before = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => match CycleLine::parse(&line) {
                    Some(c) => return (before, c),
                    None => before.push(line),
                },
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no cycle line within {CYCLE_DEADLINE:?}; output:\n{}",
                        before.join("\n")
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the agent ended; output:\n{}", before.join("\n"))
                }
            }
        }
    }
}

pub(super) use common::http::get as http_get;

#[test]
fn a_drift_check_passes_over_the_units_a_change_touched_only() {
    let server =
        common::kubectl::Server::start_with_args(&["--simulate-azure", "--sim-delay", "0s"]);
    let f = Fleet::plain();
    let kubeconfig = server.kubeconfig.to_str().expect("UTF-8 path");
    let agent = Running::start_with(&f, &["--kubeconfig", kubeconfig, "--drift-interval", "1s"]);
    let (_, initial) = agent.next_cycle();
    assert_eq!(initial.units, 2, "{initial}");

    // Drift checks over the converged fleet: no change touched a unit, no pass.
    let (_, quiet) = agent.next_cycle();
    assert_eq!(
        (quiet.trigger, quiet.passes, quiet.writes),
        (CycleTrigger::Drift, 0, 0),
        "{quiet}"
    );

    // Someone changes the dev resource group's location: the next drift check passes over dev
    // alone, and its report says the resource group drifted (reported, not corrected).
    let patch = r#"{"spec":{"location":"westus2"}}"#;
    let rg = [
        "resourcegroups.resources.azure.com",
        "aro-dev-rg",
        "-n",
        "aro-dev",
    ];
    (server.kubectl()).ok(&[&["patch"], &rg[..], &["--type", "merge", "-p", patch]].concat());
    let deadline = Instant::now() + CYCLE_DEADLINE;
    let touched = loop {
        let (_, c) = agent.next_cycle();
        if c.passes > 0 {
            break c;
        }
        assert!(Instant::now() < deadline, "no pass saw the change: {c}");
    };
    assert_eq!(
        (touched.trigger, touched.passes),
        (CycleTrigger::Drift, 1),
        "{touched}"
    );
    let md = common::kubectl::poll_until(CYCLE_DEADLINE, "dev's report of the drift", || {
        f.report("reports/aro-dev/dev.md")
            .filter(|md| md.contains("drifted"))
    });
    assert!(md.contains("aro-dev-rg"), "{md}");
    let live = server
        .kubectl()
        .ok(&[&["get"], &rg[..], &["-o", "jsonpath={.spec.location}"]].concat());
    assert_eq!(live, "westus2", "reported, not corrected");

    // A drifted unit is not settled as it was: each check judges it again (and the other unit
    // still not).
    let (_, after) = agent.next_cycle();
    assert_eq!(
        (after.trigger, after.passes),
        (CycleTrigger::Drift, 1),
        "{after}"
    );
}

#[test]
fn a_drift_cycle_over_a_converged_fleet_sends_no_request() {
    let f = Fleet::plain();
    let agent = Running::start_default(&f);

    // The initial sync: every unit converges (the progress lines say so), then its cycle line.
    let (progress, initial) = agent.next_cycle();
    assert_eq!(
        (initial.number, initial.trigger),
        (0, CycleTrigger::Initial),
        "{initial}"
    );
    assert_eq!(initial.units, 2, "{initial}");
    assert!(
        initial.writes > 0,
        "the first sync creates the fleet: {initial}"
    );
    for unit in [DEV, PROD] {
        let last = progress
            .iter()
            .rev()
            .find(|l| l.starts_with(&format!("{unit}: ")))
            .unwrap_or_else(|| panic!("no progress of {unit} in:\n{}", progress.join("\n")));
        assert!(last.contains("Converged"), "{last}");
    }

    // The next cycle is a drift check over the converged fleet: everything from the caches.
    let (_, drift) = agent.next_cycle();
    assert_eq!(
        (drift.number, drift.trigger, drift.units),
        (1, CycleTrigger::Drift, 2),
        "{drift}"
    );
    assert_eq!(
        (drift.writes, drift.lists, drift.gets),
        (0, 0, 0),
        "{drift}"
    );
}

#[test]
fn a_new_revision_passes_over_the_units_it_changed_only() {
    let f = Fleet::with_remote();
    let agent = Running::start_with(&f, &["--interval", "1s"]);
    let (_, initial) = agent.next_cycle();
    assert_eq!(initial.units, 2, "{initial}");
    // A fetch that finds the same revision looks for drift: no change touched a unit since its
    // pass, so every judgement stands and none passes again.
    let (_, same) = agent.next_cycle();
    assert_eq!(
        (same.trigger, same.passes, same.writes),
        (CycleTrigger::Source, 0, 0),
        "{same}"
    );

    // A commit that changes dev alone: the next revision passes over dev, not prod.
    f.write(
        &format!("{DEV}/team-notes.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team-notes\n  namespace: dev\ndata:\n  owner: platform\n",
    );
    f.add_resource(DEV, "team-notes.yaml");
    let deadline = Instant::now() + CYCLE_DEADLINE;
    let changed = loop {
        let (_, c) = agent.next_cycle();
        if c.writes > 0 {
            break c;
        }
        assert!(
            Instant::now() < deadline,
            "the commit was never applied: {c}"
        );
    };
    assert_eq!(
        (changed.trigger, changed.passes),
        (CycleTrigger::Source, 1),
        "{changed}"
    );
}

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
    // A fetch that finds the same revision passes over every unit (that is how drift is seen).
    let (_, same) = agent.next_cycle();
    assert_eq!(
        (same.trigger, same.passes, same.writes),
        (CycleTrigger::Source, 2, 0),
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

//! Feeding the commit statuses (`--commit-status`, see [`crate::notify::commit_status`]) from
//! where the outcomes are produced: each converge's start and end, and each pass. Nothing here
//! waits on the host: the statuses are queued.

use crate::agent::controller::context::Signals;
use crate::agent::controller::revision::Revision;
use crate::report::UnitOutcome;
use std::time::Duration;

/// How long the end of a run waits for the statuses still queued.
const FLUSH: Duration = Duration::from_secs(10);

impl Signals {
    /// Passes over `rev`'s units begin: each unit with no status on its commit is pending.
    pub(in crate::agent) fn statuses_begin(&self, rev: &Revision) {
        if let Some(statuses) = &self.commit_status {
            let units = (rev.units.iter())
                .map(|(u, p)| (u.name(), p.as_ref().ok().and_then(|p| p.cluster.clone())));
            statuses.begin(&rev.commit, units);
        }
    }

    /// A unit's pass ended (or its outcome stands as it was).
    pub(in crate::agent) fn status_unit(&self, outcome: &UnitOutcome) {
        if let Some(statuses) = &self.commit_status {
            statuses.unit(outcome, false);
        }
    }

    /// A converge ended with `outcomes`; `last`: the run ends with it (`--once`), so what has not
    /// converged did not.
    pub(in crate::agent) fn statuses_end(&self, outcomes: &[UnitOutcome], last: bool) {
        if let Some(statuses) = &self.commit_status {
            for o in outcomes {
                statuses.unit(o, last);
            }
        }
    }

    /// The run ends: the statuses still queued are posted, for a short while.
    pub(in crate::agent) async fn flush_statuses(&self) {
        if let Some(statuses) = &self.commit_status {
            statuses.flush(FLUSH).await;
        }
    }
}

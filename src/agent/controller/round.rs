//! A converge's moving state ([`Round`]): the outcomes, what is settled, the work queue and the
//! inventories between passes, and what a pass's end, a change or a stop does to them. No IO.

use super::cache::Change;
use super::carry::carry_actions;
use super::judged::Judged;
use super::lifecycle::Stop;
use super::progress::Progress;
use super::queue::WorkQueue;
use super::revision::Revision;
use super::scope::{kept_outcome, reads_what_was_rendered};
use super::wakes::{DuringPass, Wakes};
use crate::apply::Echoes;
use crate::apply::inventory::Inventory;
use crate::report::{self, AzureMode, ObjectAction, UnitOutcome};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// How long a woken unit waits before its pass, so that the changes that follow (an Azure
/// resource's status, then the next) share one pass.
pub(super) const DEBOUNCE: Duration = Duration::from_millis(100);

/// A piece of work: a unit of the revision (by index), or a unit that left git (by name).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Job {
    Unit(usize),
    Removed(String),
}

pub(super) fn settled(o: &UnitOutcome) -> bool {
    matches!(
        report::phase(o),
        report::Phase::Converged | report::Phase::Failed
    )
}

pub(super) fn deleting(o: &UnitOutcome) -> bool {
    o.objects.iter().any(|x| x.action == ObjectAction::Deleting)
}

/// The outcome of a unit that left git, before anything is known of it.
pub(super) fn removed_outcome(unit: &str, rev: &Revision, azure: AzureMode) -> UnitOutcome {
    UnitOutcome {
        rendered_at: None,
        held: None,
        unit: unit.to_string(),
        cluster: None,
        revision: rev.commit.clone(),
        stale_source: rev.stale.clone(),
        azure,
        objects: vec![],
        errors: vec![],
        standing: report::Standing::unknown(None),
    }
}

/// Why a prepared unit has no pass when a converge ends without a stop: its deadline came first.
pub(super) const NOT_STARTED: &str =
    "not started: the run's deadline (--timeout) passed before a pass reached this unit";

/// A unit's outcome before its first pass: not started (it says so until a pass ends), or its
/// errors when it could not be prepared.
pub(super) fn first_outcome(
    rev: &Revision,
    u: &crate::unit::Unit,
    p: &crate::agent::pass::prepare::Preparation,
    azure: AzureMode,
) -> UnitOutcome {
    let standing = match p {
        Ok(_) => report::Standing::not_started(NOT_STARTED.to_string()),
        Err(_) => report::Standing::unknown(None),
    };
    UnitOutcome {
        rendered_at: None,
        held: None,
        unit: u.name(),
        cluster: p.as_ref().ok().and_then(|p| p.cluster.clone()),
        revision: rev.commit_of(&u.name()).to_string(),
        stale_source: rev.stale.clone(),
        azure,
        objects: vec![],
        errors: p.as_ref().err().cloned().unwrap_or_default(),
        standing,
    }
}

/// Marks settled, before any pass, the units whose outcome from the converge before (`earlier`)
/// still holds, and takes that outcome: those that had converged, that no change touched since
/// their last pass (`touched`, by index), and
/// - on a new commit: that `rev` did not render again, and that read nothing a unit rendered
///   again renders;
/// - on the same commit (a drift check, a fetch that found nothing new): whose last pass is
///   recent enough to stand ([`Judged::recent`]).
///
/// A kept outcome is moved, not copied: its place in `earlier` gets the unit's first outcome
/// (the caller has no more use for `earlier` once the converge begins).
pub(super) fn keep_earlier(
    rev: &Revision,
    earlier: Option<&mut [UnitOutcome]>,
    (judged, touched): (&Judged, &[bool]),
    index: &super::wakes::Wakes,
    outcomes: &mut [UnitOutcome],
    held: &mut [bool],
) {
    let earlier = earlier.unwrap_or_default();
    let at: HashMap<String, usize> = (earlier.iter().enumerate())
        .map(|(j, o)| (o.unit.clone(), j))
        .collect();
    if at.is_empty() {
        return;
    }
    let now = Instant::now();
    // Built only for a new commit (a drift check has no use for it).
    let mut reads_rendered = None;
    for (i, (u, p)) in rev.units.iter().enumerate() {
        let name = u.name();
        if held[i] || touched[i] {
            continue;
        }
        let Some(&j) = at.get(&name) else {
            continue;
        };
        let before = &mut earlier[j];
        let commit = rev.commit_of(&name);
        let stands = if before.revision == commit {
            judged.recent(&name, now)
        } else {
            let reads = reads_rendered.get_or_insert_with(|| reads_what_was_rendered(rev, index));
            !rev.rendered.contains(&name) && !p.as_deref().is_ok_and(|p| reads(i, p))
        };
        if !stands || !kept_outcome(before, commit) {
            continue;
        }
        before.stale_source = rev.stale.clone();
        std::mem::swap(&mut outcomes[i], before);
        held[i] = true;
    }
}

/// A converge's moving state.
pub(super) struct Round<'r> {
    pub(super) rev: &'r Revision,
    pub(super) azure: AzureMode,
    pub(super) outcomes: Vec<UnitOutcome>,
    /// Settled before any pass (not prepared, held by a check, or kept from the revision before).
    pub(super) held: Vec<bool>,
    /// Settled by now: held, or settled by a pass in this converge. Before its first pass a unit
    /// is not settled, whatever its first outcome says. Kept up to date as passes end, so the
    /// loop never re-judges the fleet.
    pub(super) done: Vec<bool>,
    /// Prepared units not settled yet.
    pub(super) pending: usize,
    /// The units a pass ran over (or was cut short on).
    pub(super) ran: Vec<bool>,
    /// Every unit's inventory, but those of the passes in flight (each pass holds its own).
    pub(super) inventories: BTreeMap<String, Inventory>,
    /// Units that left git with an inventory to prune.
    pub(super) removals: Vec<String>,
    /// Their outcomes, and those of units gone from git whose inventory is not acted on.
    pub(super) removed_outcomes: BTreeMap<String, UnitOutcome>,
    pub(super) queue: WorkQueue<Job>,
    pub(super) during_pass: DuringPass,
    /// When each unit's last pass in this converge began.
    pub(super) began: Vec<Option<Instant>>,
    /// The units a change touched after their last pass began (see [`Judged`]).
    pub(super) touched: Vec<bool>,
    pub(super) passes: u64,
    pub(super) quiet_since: Instant,
}

impl Round<'_> {
    /// Every unit settled and no removal still deleting.
    pub(super) fn all_settled(&self) -> bool {
        self.pending == 0 && !self.removed_outcomes.values().any(deleting)
    }

    /// The passes in flight were cut short (`stop`'s drain deadline passed): what they did is not
    /// known; their reports say so, with the step the pass before reached.
    pub(super) fn interrupt(&mut self, stop: Stop, progress: &mut Progress) {
        let why = stop.interruption();
        for i in (0..self.rev.units.len()).filter(|&i| self.queue.is_active(&Job::Unit(i))) {
            tracing::warn!(unit = %self.outcomes[i].unit, "pass interrupted");
            self.outcomes[i].standing.pass = report::PassState::Interrupted(why.clone());
            self.ran[i] = true;
            progress.update(i, &self.outcomes[i]);
        }
        let interrupted: Vec<String> = (self.removals.iter())
            .filter(|u| self.queue.is_active(&Job::Removed((*u).clone())))
            .cloned()
            .collect();
        for u in interrupted {
            tracing::warn!(unit = %u, "removal interrupted");
            let (rev, azure) = (self.rev, self.azure);
            let o = (self.removed_outcomes.entry(u.clone()))
                .or_insert_with(|| removed_outcome(&u, rev, azure));
            o.standing.pass = report::PassState::Interrupted(why.clone());
        }
    }

    /// Takes what a pass of `job` ended with; the unit's index when it is one of the revision's.
    pub(super) fn pass_ended(
        &mut self,
        job: &Job,
        outcome: UnitOutcome,
        inv: Inventory,
    ) -> Option<usize> {
        self.passes += 1;
        let failed = report::phase(&outcome) == report::Phase::Failed;
        let (name, shown) = match job {
            Job::Unit(i) => {
                let i = *i;
                let mut next = outcome;
                carry_actions(&self.outcomes[i], &mut next);
                self.outcomes[i] = next;
                self.ran[i] = true;
                let now_done = settled(&self.outcomes[i]);
                if now_done != self.done[i] {
                    if now_done {
                        self.pending -= 1
                    } else {
                        self.pending += 1
                    }
                    self.done[i] = now_done;
                }
                (self.rev.units[i].0.name(), Some(i))
            }
            Job::Removed(u) => {
                let mut next = outcome;
                if let Some(previous) = self.removed_outcomes.get(u) {
                    carry_actions(previous, &mut next);
                }
                self.removed_outcomes.insert(u.clone(), next);
                (u.clone(), None)
            }
        };
        self.inventories.insert(name, inv);
        self.queue.done(job, failed, Instant::now());
        shown
    }

    /// Queues the unsettled units the changes in `changed` concern (see `wakes`; a unit whose
    /// pass runs holds them until it ends), and the removals still deleting.
    pub(super) fn wake(&mut self, changed: &BTreeSet<Change>, index: &Wakes, echoes: &Echoes) {
        let now = Instant::now();
        for change in changed {
            // Only prepared units are in the index. A settled unit is not passed again in this
            // converge; the next drift check looks at it again, unless the change is the echo of
            // a write of the agent's (taken here only when no pass in flight holds it).
            let units = index.units(change);
            let held = units.iter().any(|&i| self.queue.is_active(&Job::Unit(i)));
            let settled: Vec<usize> = units.iter().copied().filter(|&i| self.done[i]).collect();
            if !settled.is_empty() && (held || !change.is_echo(echoes)) {
                for &i in &settled {
                    self.touched[i] = true;
                }
            }
            for i in units.into_iter().filter(|&i| !self.done[i]) {
                if self.queue.is_active(&Job::Unit(i)) {
                    self.during_pass.hold(i, change);
                } else {
                    self.queue.wake(Job::Unit(i), now);
                }
            }
        }
        for (u, o) in &self.removed_outcomes {
            if deleting(o) {
                self.queue.wake(Job::Removed(u.clone()), now);
            }
        }
        // A removal before the end of its first pass has no outcome to say it is still
        // deleting: what changes meanwhile (its own deletes) runs it again.
        for u in (self.removals.iter()).filter(|u| !self.removed_outcomes.contains_key(*u)) {
            self.queue.wake(Job::Removed(u.clone()), Instant::now());
        }
    }

    /// The units `stop` kept from their pass: nothing was done to them (their last reports
    /// stand); their names, and their outcomes say why (not started).
    pub(super) fn not_reconciled(&mut self, stop: Stop) -> BTreeSet<String> {
        let mut unreconciled = BTreeSet::new();
        for i in (0..self.outcomes.len()).filter(|&i| !self.ran[i] && !self.held[i]) {
            unreconciled.insert(self.outcomes[i].unit.clone());
            let why = match stop {
                Stop::Shutdown => "not started: the agent shut down before this unit's pass",
                Stop::LostLease { .. } => {
                    "not started: this agent lost its leader Lease before this unit's pass"
                }
            };
            self.outcomes[i].standing.pass = report::PassState::NotStarted(why.to_string());
        }
        unreconciled
    }
}

/// The unit a job is about (by name: its inventory's).
pub(super) fn job_name(rev: &Revision, job: &Job) -> String {
    match job {
        Job::Unit(i) => rev.units[*i].0.name(),
        Job::Removed(u) => u.clone(),
    }
}

/// How long the loop may wait for a pass to end, a change, a retry's time or the deadline. A
/// retry already due waits for a free worker (a pass to end).
pub(super) fn wait_for(
    now: Instant,
    deadline: Option<Instant>,
    past_deadline: bool,
    due: Option<Instant>,
    interval: Duration,
    stopping: Option<(Stop, Instant)>,
) -> Duration {
    let due = due.filter(|t| *t > now);
    let wait = match (deadline.filter(|_| !past_deadline), due) {
        (Some(d), Some(t)) => d.min(t) - now,
        (Some(d), None) => d - now,
        (None, Some(t)) => t - now,
        (None, None) if past_deadline => Duration::from_secs(3600),
        (None, None) => interval,
    };
    match stopping {
        Some((_, until)) => wait.min(until.saturating_duration_since(now)),
        None => wait,
    }
}

#[cfg(test)]
#[path = "round_tests.rs"]
mod tests;

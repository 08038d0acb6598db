//! The rollout decision: which units may take the newest revision now (a pure function).

use super::settings::Rollout;
use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, BTreeSet};

/// How the newest revision changes a unit, against the revision the unit is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitChange {
    /// It renders the same: the unit takes the revision with nothing to apply.
    None,
    /// Only files of its own folder changed (or the unit is new): waves do not hold it (unless
    /// `rollout.scope: all`); windows and a pause do.
    Own,
    /// Something it shares with other units changed (a base, a component).
    Shared,
}

/// A unit's state at the newest revision, once it has taken it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Applying it, not converged yet.
    Progressing,
    /// Converged on it (chain complete and `Available` True) since `since`.
    Converged { since: DateTime<Utc> },
    /// Failed on it, with its errors (as the report says them).
    Failed { errors: Vec<String> },
}

/// What the decision knows of one unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitInput {
    /// The unit's repository path (`clusters/dev-1`).
    pub unit: String,
    /// The labels of the unit's CAPI Cluster at the newest revision.
    pub labels: BTreeMap<String, String>,
    /// The revision the unit is on (its inventory's), when it ever converged on one.
    pub on: Option<String>,
    pub change: UnitChange,
    /// `Some` once the unit has taken the newest revision: its state there.
    pub newest: Option<State>,
    /// Its apply-now annotation in git, if any ([`super::APPLY_NOW_ANNOTATION`]).
    pub apply_now: Option<String>,
}

/// A paused rollout resumed by `aro-gitops rollout resume --revision SHA`: the failures of
/// `forgiven` no longer pause the rollout of `revision`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Resume {
    pub revision: String,
    pub forgiven: BTreeSet<String>,
}

/// Why a unit does not take the newest revision now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hold {
    /// Its wave waits for the wave before it (`after`) to converge (and soak).
    Wave { wave: String, after: String },
    /// Its wave is rolling but `max` of it are already applying the revision.
    Budget { wave: String, max: usize },
    /// The rollout of the revision is paused by failures.
    Paused { revision: String },
    /// Outside its maintenance window (or inside a deny window).
    Window { opens_at: Option<DateTime<Utc>> },
}

/// Each unit's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It takes (or keeps) the newest revision.
    Take,
    /// It stays on the revision it is on, still reconciled there.
    Hold(Hold),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaveState {
    /// Every changed unit of it converged on the revision and soaked.
    Done,
    /// Converged, soaking until then.
    Soaking { until: DateTime<Utc> },
    /// Its units are taking the revision.
    Rolling,
    /// Stopped by failures.
    Paused,
    /// Waiting for the waves before it.
    Waiting,
}

/// One wave of the rollout, as shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaveView {
    pub name: String,
    /// Its units the revision changes (through what they share, or all with `scope: all`).
    pub units: Vec<String>,
    pub state: WaveState,
}

/// A paused rollout: the wave it stopped in and the failing units with their errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paused {
    pub wave: String,
    pub failing: Vec<(String, Vec<String>)>,
}

/// The rollout of one revision, as every view shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolloutView {
    pub revision: String,
    pub waves: Vec<WaveView>,
    /// The index in `waves` of the wave in progress (rolling, soaking or paused); `None` when
    /// every wave is done.
    pub current: Option<usize>,
    pub paused: Option<Paused>,
    /// Units waiting for their maintenance window, with when it opens.
    pub waiting_for_window: Vec<(String, Option<DateTime<Utc>>)>,
}

/// What the decision says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Every input unit's verdict, by unit path.
    pub verdicts: BTreeMap<String, Verdict>,
    /// `None` without a `rollout:` section, or when the revision changes no unit through waves.
    pub view: Option<RolloutView>,
    /// The next instant the decision may change with no other change (a soak ends, a window
    /// opens): when to decide again.
    pub next_check: Option<DateTime<Utc>>,
}

/// Which units may take `revision` now. Without `settings`, every unit takes it.
pub fn decide(
    revision: &str,
    settings: Option<&Rollout>,
    units: &[UnitInput],
    resume: Option<&Resume>,
    now: DateTime<Utc>,
) -> Decision {
    let _ = (revision, settings, units, resume, now);
    unimplemented!("helper D")
}

impl Hold {
    /// The unit's wait in the user's words: "waiting for wave dev to converge", "rollout paused
    /// at wave dev", "waiting for the maintenance window (opens at 2026-11-30 00:00 UTC)".
    pub fn message(&self) -> String {
        unimplemented!("helper D")
    }
}

//! The `rollout:` section of the repository's `aro-gitops.yaml`, parsed and checked.

use super::select::Select;
use serde_json::Value;
use std::time::Duration;

mod parse;

/// How many of a wave's units may be applying the new revision, not yet converged, at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    Count(usize),
    /// A percentage of the wave's changed units, rounded down, at least 1.
    Percent(u32),
}

impl Budget {
    /// The count this budget allows in a wave of `size` changed units (at least 1).
    pub fn of(&self, size: usize) -> usize {
        match *self {
            Budget::Count(n) => n.max(1),
            Budget::Percent(p) => (size * p as usize / 100).max(1),
        }
    }
}

/// Which changes the waves hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// Only changes that reach a unit from outside its own folder (bases, components); a unit whose
    /// own folder alone changed (a new cluster, a change to one cluster) is not held by waves.
    #[default]
    Shared,
    /// Every change (`rollout.scope: all`).
    All,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Wave {
    pub name: String,
    pub select: Select,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowKind {
    Allow,
    Deny,
}

/// A maintenance window: open for `duration` from each time `schedule` fires, in `time_zone`.
#[derive(Debug, Clone)]
pub struct Window {
    pub kind: WindowKind,
    /// The cron expression as written (five fields), for messages.
    pub schedule: String,
    pub cron: croner::Cron,
    pub duration: Duration,
    pub time_zone: chrono_tz::Tz,
    pub select: Select,
    /// Drift is corrected outside the window too.
    pub self_heal: bool,
}

/// The whole `rollout:` section.
#[derive(Debug, Clone)]
pub struct Rollout {
    /// In order; a unit in no wave goes last (in an implicit wave named `rest`). Names are
    /// unique and not `rest`.
    pub waves: Vec<Wave>,
    /// `None`: the whole wave at once.
    pub max_unavailable: Option<Budget>,
    pub soak: Duration,
    pub failure_threshold: usize,
    pub windows: Vec<Window>,
    pub scope: Scope,
}

/// A `rollout:` section that does not parse or breaks a rule: the field (`rollout.waves[1].name`)
/// and what is wrong, in the user's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct SettingsError {
    pub field: String,
    pub message: String,
}

impl Rollout {
    /// The `rollout:` value of the settings file (`None` when absent or null).
    pub fn parse(value: Option<&serde_json::Value>) -> Result<Option<Rollout>, SettingsError> {
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(v) => parse::rollout(v).map(Some),
        }
    }

    /// The path globs of waves and windows that select none of `units` (the repository's unit
    /// paths), each with its field (`rollout.waves[0].units[1]`): most likely a typo, which
    /// would quietly leave units to the last wave or outside their window.
    pub fn unused_globs(&self, units: &[String]) -> Vec<(String, String)> {
        let selections = self
            .waves
            .iter()
            .enumerate()
            .map(|(i, w)| (format!("rollout.waves[{i}]"), &w.select))
            .chain(
                self.windows
                    .iter()
                    .enumerate()
                    .map(|(i, w)| (format!("rollout.windows[{i}]"), &w.select)),
            );
        let mut out = Vec::new();
        for (field, select) in selections {
            let Select::Units(globs) = select else {
                continue;
            };
            for (j, glob) in globs.iter().enumerate() {
                if !units.iter().any(|u| super::select::glob_matches(glob, u)) {
                    out.push((format!("{field}.units[{j}]"), glob.clone()));
                }
            }
        }
        out
    }
}

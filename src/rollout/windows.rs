//! Maintenance windows: whether a unit may take a change (or have its drift corrected) now.

use super::settings::{Window, WindowKind};
use chrono::{DateTime, TimeDelta, Utc};
use std::collections::BTreeMap;

/// Whether a unit's windows let a change through at an instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    Open,
    /// Closed; when it next opens, if that is known within a year.
    Closed {
        opens_at: Option<DateTime<Utc>>,
    },
}

/// How far ahead a closed gate is searched for its opening.
const HORIZON: TimeDelta = TimeDelta::days(366);
/// A bound on the instants a search visits (each a window starting or ending), so a schedule
/// that fires every minute cannot make one gate search run away.
const MAX_STEPS: usize = 20_000;

/// What the windows selecting the unit at `path` (Cluster `labels`) say at `now`: a deny window in
/// force closes; else, when allow windows select the unit, one of them must be in force; else open.
/// Deny wins over allow. `drift`: for drift correction, where windows with `selfHeal: true` do not
/// close.
pub fn gate(
    windows: &[Window],
    path: &str,
    labels: &BTreeMap<String, String>,
    now: DateTime<Utc>,
    drift: bool,
) -> Gate {
    let windows = relevant(windows, path, labels, drift);
    if open(&windows, now) {
        return Gate::Open;
    }
    let horizon = now + HORIZON;
    let mut at = now;
    for _ in 0..MAX_STEPS {
        match next_change(&windows, at, horizon) {
            Some(next) => {
                at = next;
                if open(&windows, at) {
                    return Gate::Closed { opens_at: Some(at) };
                }
            }
            None => break,
        }
    }
    Gate::Closed { opens_at: None }
}

/// The next instant after `now` when a window of the unit starts or ends, within a year: when
/// its [`gate`] may change by the clock alone (for the decision's next check).
pub fn next_transition(
    windows: &[Window],
    path: &str,
    labels: &BTreeMap<String, String>,
    now: DateTime<Utc>,
    drift: bool,
) -> Option<DateTime<Utc>> {
    let windows = relevant(windows, path, labels, drift);
    next_change(&windows, now, now + HORIZON)
}

/// The windows that apply to the unit: those selecting it, but for drift not the self-healing.
fn relevant<'a>(
    windows: &'a [Window],
    path: &str,
    labels: &BTreeMap<String, String>,
    drift: bool,
) -> Vec<&'a Window> {
    windows
        .iter()
        .filter(|w| w.select.selects(path, labels) && !(drift && w.self_heal))
        .collect()
}

/// Whether `windows` (all selecting the unit) let a change through at `at`.
fn open(windows: &[&Window], at: DateTime<Utc>) -> bool {
    let deny = windows
        .iter()
        .any(|w| w.kind == WindowKind::Deny && w.in_force(at));
    let mut allows = windows
        .iter()
        .filter(|w| w.kind == WindowKind::Allow)
        .peekable();
    let allowed = allows.peek().is_none() || allows.any(|w| w.in_force(at));
    !deny && allowed
}

/// The earliest instant after `at`, up to `horizon`, when one of `windows` starts or ends.
fn next_change(
    windows: &[&Window],
    at: DateTime<Utc>,
    horizon: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    windows
        .iter()
        .filter_map(|w| match w.in_force_until(at, horizon) {
            Some(end) => end,
            None => w.next_start(at),
        })
        .filter(|t| *t <= horizon)
        .min()
}

impl Window {
    fn length(&self) -> TimeDelta {
        TimeDelta::from_std(self.duration).unwrap_or(TimeDelta::MAX)
    }

    /// The latest time the schedule fires at or before `at`.
    fn last_start(&self, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let local = at.with_timezone(&self.time_zone);
        self.cron
            .find_previous_occurrence(&local, true)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    }

    /// The first time the schedule fires after `at`.
    fn next_start(&self, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let local = at.with_timezone(&self.time_zone);
        self.cron
            .find_next_occurrence(&local, false)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    }

    /// Whether the window is open at `at`: it started at `t <= at` and `at < t + duration`.
    /// The latest start reaches furthest, as every opening lasts as long.
    pub fn in_force(&self, at: DateTime<Utc>) -> bool {
        self.last_start(at).is_some_and(|t| {
            at < t
                .checked_add_signed(self.length())
                .unwrap_or(DateTime::<Utc>::MAX_UTC)
        })
    }

    /// `None` when the window is not in force at `at`; else `Some` of when it stops being in
    /// force, openings that overlap or touch counted as one (`None` inside when that is past
    /// `horizon`).
    fn in_force_until(
        &self,
        at: DateTime<Utc>,
        horizon: DateTime<Utc>,
    ) -> Option<Option<DateTime<Utc>>> {
        let end_of = |t: DateTime<Utc>| {
            t.checked_add_signed(self.length())
                .unwrap_or(DateTime::<Utc>::MAX_UTC)
        };
        let mut end = end_of(self.last_start(at)?);
        if at >= end {
            return None;
        }
        // Jump to the latest start within the opening so far: it reaches furthest.
        while end <= horizon {
            match self.last_start(end).map(end_of) {
                Some(further) if further > end => end = further,
                _ => return Some(Some(end)),
            }
        }
        Some(None)
    }
}

#[cfg(test)]
#[path = "windows_tests.rs"]
mod tests;

//! The rollout decision: which units may take the newest revision now (a pure function).

use super::settings::{Rollout, Scope};
use super::windows::{self, Gate};
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
    /// The rollout of the revision is paused by failures in `wave`.
    Paused { revision: String, wave: String },
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
    /// Units waiting for their maintenance window, with when it opens, in path order: those held
    /// by it now, and those of waiting waves whose window is closed now (they will wait for it
    /// too). Not while the rollout is paused.
    pub waiting_for_window: Vec<(String, Option<DateTime<Utc>>)>,
}

/// What the decision says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Every input unit's verdict, by unit path.
    pub verdicts: BTreeMap<String, Verdict>,
    /// `None` without a `rollout:` section, or when the revision changes no unit through waves
    /// and no unit waits for a window.
    pub view: Option<RolloutView>,
    /// The next instant the decision may change with no other change (a soak ends, a window
    /// opens): when to decide again.
    pub next_check: Option<DateTime<Utc>>,
}

/// The implicit last wave: the changed units no wave selects.
pub const REST_WAVE: &str = "rest";

/// Which units may take `revision` now. Without `settings`, every unit takes it.
///
/// Units that render the same, and units already on the revision, take (keep) it. Units changed
/// through what they share (every changed unit with `scope: all`) go in waves: the first wave
/// whose selection holds them, else the implicit last wave `rest`. The first wave not done
/// (every unit converged and soaked) is the current one: its units take the revision while at
/// most `maxUnavailable` of it are applying, and the later waves wait. More than
/// `failureThreshold` failures in it (those a resume of this revision forgave left out) pause the
/// rollout: no unit takes the revision any more. A closed maintenance window holds a unit about
/// to take a change, unless its apply-now annotation names the revision; a unit so held does not
/// use its wave's budget. A failure a resume forgave neither holds its wave back nor counts as
/// applying.
pub fn decide(
    revision: &str,
    settings: Option<&Rollout>,
    units: &[UnitInput],
    resume: Option<&Resume>,
    now: DateTime<Utc>,
) -> Decision {
    let Some(settings) = settings else {
        return Decision {
            verdicts: units
                .iter()
                .map(|u| (u.unit.clone(), Verdict::Take))
                .collect(),
            view: None,
            next_check: None,
        };
    };
    let forgiven = resume
        .filter(|r| r.revision == revision)
        .map(|r| &r.forgiven);
    let is_forgiven = |u: &UnitInput| forgiven.is_some_and(|f| f.contains(&u.unit));
    let mut sorted: Vec<&UnitInput> = units.iter().collect();
    sorted.sort_by(|a, b| a.unit.cmp(&b.unit));

    let mut verdicts = BTreeMap::new();
    let waves = wave_members(settings, &sorted);
    let waved: usize = waves.iter().map(|(_, m)| m.len()).sum();
    let mut next_check: Option<DateTime<Utc>> = None;
    let mut earliest = |at: DateTime<Utc>| {
        next_check = Some(next_check.map_or(at, |n| n.min(at)));
    };

    // The waves' states, up to the current one.
    let soak = chrono::Duration::from_std(settings.soak).unwrap_or(chrono::Duration::MAX);
    let mut states = Vec::with_capacity(waves.len());
    let mut current = None;
    let mut paused = None;
    for (i, (name, members)) in waves.iter().enumerate() {
        if current.is_some() {
            states.push(WaveState::Waiting);
            continue;
        }
        let failing: Vec<(String, Vec<String>)> = members
            .iter()
            .filter(|u| !is_forgiven(u))
            .filter_map(|u| match &u.newest {
                Some(State::Failed { errors }) => Some((u.unit.clone(), errors.clone())),
                _ => None,
            })
            .collect();
        if failing.len() > settings.failure_threshold {
            states.push(WaveState::Paused);
            current = Some(i);
            paused = Some(Paused {
                wave: name.clone(),
                failing,
            });
            continue;
        }
        // Each unit settled since when (a forgiven failure settles at once), or not settled.
        let settled: Option<Vec<Option<DateTime<Utc>>>> = members
            .iter()
            .map(|u| match &u.newest {
                Some(State::Converged { since }) => Some(Some(*since)),
                Some(State::Failed { .. }) if is_forgiven(u) => Some(None),
                _ => None,
            })
            .collect();
        match settled {
            Some(since) => {
                let until = since
                    .into_iter()
                    .flatten()
                    .map(|s| {
                        s.checked_add_signed(soak)
                            .unwrap_or(DateTime::<Utc>::MAX_UTC)
                    })
                    .max();
                match until.filter(|u| *u > now) {
                    None => states.push(WaveState::Done),
                    Some(until) => {
                        earliest(until);
                        states.push(WaveState::Soaking { until });
                        current = Some(i);
                    }
                }
            }
            None => {
                states.push(WaveState::Rolling);
                current = Some(i);
            }
        }
    }

    // Whether a unit's windows let a change through now (`Ok`), or when they open.
    let gate = |u: &UnitInput| -> Result<(), Option<DateTime<Utc>>> {
        if settings.windows.is_empty()
            || u.apply_now
                .as_deref()
                .is_some_and(|v| super::names_revision(v, revision))
        {
            return Ok(());
        }
        match windows::gate(&settings.windows, &u.unit, &u.labels, now, false) {
            Gate::Open => Ok(()),
            Gate::Closed { opens_at } => Err(opens_at),
        }
    };
    let mut waiting_for_window = Vec::new();

    // The units waves do not hold.
    for u in &sorted {
        let verdict = if u.change == UnitChange::None || u.newest.is_some() {
            Verdict::Take
        } else if is_waved(settings, u) {
            continue;
        } else if let Some(p) = &paused {
            Verdict::Hold(Hold::Paused {
                revision: revision.to_string(),
                wave: p.wave.clone(),
            })
        } else {
            match gate(u) {
                Ok(()) => Verdict::Take,
                Err(opens_at) => {
                    if let Some(at) = opens_at {
                        earliest(at);
                    }
                    waiting_for_window.push((u.unit.clone(), opens_at));
                    Verdict::Hold(Hold::Window { opens_at })
                }
            }
        };
        verdicts.insert(u.unit.clone(), verdict);
    }

    // The waved units, wave by wave.
    for (i, (name, members)) in waves.iter().enumerate() {
        let waiting: Vec<&&UnitInput> = members.iter().filter(|u| u.newest.is_none()).collect();
        for u in members.iter().filter(|u| u.newest.is_some()) {
            verdicts.insert(u.unit.clone(), Verdict::Take);
        }
        match current {
            Some(c) if i < c => {}
            _ if paused.is_some() => {
                let wave = paused.as_ref().map(|p| p.wave.clone()).unwrap_or_default();
                for u in waiting {
                    verdicts.insert(
                        u.unit.clone(),
                        Verdict::Hold(Hold::Paused {
                            revision: revision.to_string(),
                            wave: wave.clone(),
                        }),
                    );
                }
            }
            Some(c) if i > c => {
                for u in waiting {
                    if let Err(opens_at) = gate(u) {
                        waiting_for_window.push((u.unit.clone(), opens_at));
                    }
                    verdicts.insert(
                        u.unit.clone(),
                        Verdict::Hold(Hold::Wave {
                            wave: name.clone(),
                            after: waves[c].0.clone(),
                        }),
                    );
                }
            }
            _ => {
                let budget = settings
                    .max_unavailable
                    .map_or(members.len(), |b| b.of(members.len()));
                let mut unavailable = members
                    .iter()
                    .filter(|u| match &u.newest {
                        Some(State::Progressing) => true,
                        Some(State::Failed { .. }) => !is_forgiven(u),
                        _ => false,
                    })
                    .count();
                for u in waiting {
                    let verdict = match gate(u) {
                        Err(opens_at) => {
                            if let Some(at) = opens_at {
                                earliest(at);
                            }
                            waiting_for_window.push((u.unit.clone(), opens_at));
                            Verdict::Hold(Hold::Window { opens_at })
                        }
                        Ok(()) if unavailable < budget => {
                            unavailable += 1;
                            Verdict::Take
                        }
                        Ok(()) => Verdict::Hold(Hold::Budget {
                            wave: name.clone(),
                            max: budget,
                        }),
                    };
                    verdicts.insert(u.unit.clone(), verdict);
                }
            }
        }
    }
    waiting_for_window.sort();

    let view = (waved > 0 || !waiting_for_window.is_empty()).then(|| RolloutView {
        revision: revision.to_string(),
        waves: waves
            .into_iter()
            .zip(states)
            .map(|((name, members), state)| WaveView {
                name,
                units: members.iter().map(|u| u.unit.clone()).collect(),
                state,
            })
            .collect(),
        current,
        paused,
        waiting_for_window,
    });
    Decision {
        verdicts,
        view,
        next_check,
    }
}

/// Whether waves hold the unit's change: a change through what it shares, or any change with
/// `scope: all`.
fn is_waved(settings: &Rollout, u: &UnitInput) -> bool {
    match u.change {
        UnitChange::None => false,
        UnitChange::Shared => true,
        UnitChange::Own => settings.scope == Scope::All,
    }
}

/// The waves in order with their changed units (in path order): the declared waves, each unit in
/// the first that selects it, then `rest` with the units none selects (when there are any).
fn wave_members<'a>(
    settings: &Rollout,
    sorted: &[&'a UnitInput],
) -> Vec<(String, Vec<&'a UnitInput>)> {
    let mut waves: Vec<(String, Vec<&UnitInput>)> = settings
        .waves
        .iter()
        .map(|w| (w.name.clone(), Vec::new()))
        .collect();
    let mut rest = Vec::new();
    for u in sorted.iter().copied().filter(|u| is_waved(settings, u)) {
        match settings
            .waves
            .iter()
            .position(|w| w.select.selects(&u.unit, &u.labels))
        {
            Some(i) => waves[i].1.push(u),
            None => rest.push(u),
        }
    }
    if !rest.is_empty() {
        waves.push((REST_WAVE.to_string(), rest));
    }
    waves
}

/// The first 7 characters of a commit id, as messages name it.
fn short(revision: &str) -> &str {
    revision
        .char_indices()
        .nth(7)
        .map_or(revision, |(i, _)| &revision[..i])
}

/// An instant as messages show it: `2026-11-30 00:00 UTC`.
pub fn show_instant(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M UTC").to_string()
}

impl Hold {
    /// The unit's wait in the user's words: "waiting for wave dev to converge", "rollout paused
    /// at wave dev (revision abc1234)", "waiting for the maintenance window (opens at 2026-11-30
    /// 00:00 UTC)".
    pub fn message(&self) -> String {
        match self {
            Hold::Wave { after, .. } => format!("waiting for wave {after} to converge"),
            Hold::Budget { wave, max } => {
                format!("waiting: {max} of wave {wave} already applying (maxUnavailable {max})")
            }
            Hold::Paused { revision, wave } => {
                format!(
                    "rollout paused at wave {wave} (revision {})",
                    short(revision)
                )
            }
            Hold::Window { opens_at } => format!(
                "waiting for the maintenance window ({})",
                window_opening(*opens_at)
            ),
        }
    }
}

/// `opens at 2026-11-30 00:00 UTC`, or `no opening within a year`.
pub fn window_opening(opens_at: Option<DateTime<Utc>>) -> String {
    match opens_at {
        Some(at) => format!("opens at {}", show_instant(at)),
        None => "no opening within a year".to_string(),
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;

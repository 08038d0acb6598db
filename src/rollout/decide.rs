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
        .map(|r| r.forgiven.clone())
        .unwrap_or_default();
    let mut sorted: Vec<&UnitInput> = units.iter().collect();
    sorted.sort_by(|a, b| a.unit.cmp(&b.unit));
    let waves = wave_members(settings, &sorted);
    let walk = walk_waves(settings, &waves, &forgiven, now);
    let mut out = Out {
        gates: Gates {
            settings,
            revision,
            now,
        },
        verdicts: BTreeMap::new(),
        waiting_for_window: Vec::new(),
        next_check: walk.states.iter().find_map(|s| match s {
            WaveState::Soaking { until } => Some(*until),
            _ => None,
        }),
    };
    let paused_hold = walk.paused.as_ref().map(|p| Hold::Paused {
        revision: revision.to_string(),
        wave: p.wave.clone(),
    });

    // The units waves do not hold.
    for u in &sorted {
        if u.change == UnitChange::None || u.newest.is_some() {
            out.verdicts.insert(u.unit.clone(), Verdict::Take);
        } else if !is_waved(settings, u) {
            match &paused_hold {
                Some(hold) => out.hold(u, hold.clone()),
                None => out.take_in_window(u),
            }
        }
    }
    // The waved units not on the revision yet, wave by wave.
    for (i, (name, members)) in waves.iter().enumerate() {
        let waiting = members.iter().filter(|u| u.newest.is_none());
        match (walk.current, &paused_hold) {
            (Some(c), _) if i < c => {}
            (_, Some(hold)) => waiting.for_each(|u| out.hold(u, hold.clone())),
            (Some(c), None) if i > c => {
                for u in waiting {
                    out.note_window(u);
                    let after = waves[c].0.clone();
                    out.hold(
                        u,
                        Hold::Wave {
                            wave: name.clone(),
                            after,
                        },
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
                        Some(State::Failed { .. }) => !forgiven.contains(&u.unit),
                        _ => false,
                    })
                    .count();
                for u in waiting {
                    if !out.window_open(u) {
                        continue;
                    }
                    if unavailable < budget {
                        unavailable += 1;
                        out.verdicts.insert(u.unit.clone(), Verdict::Take);
                    } else {
                        out.hold(
                            u,
                            Hold::Budget {
                                wave: name.clone(),
                                max: budget,
                            },
                        );
                    }
                }
            }
        }
    }
    out.waiting_for_window.sort();

    let waved = waves.iter().any(|(_, m)| !m.is_empty());
    let view = (waved || !out.waiting_for_window.is_empty()).then(|| RolloutView {
        revision: revision.to_string(),
        waves: waves
            .iter()
            .zip(walk.states)
            .map(|((name, members), state)| WaveView {
                name: name.clone(),
                units: members.iter().map(|u| u.unit.clone()).collect(),
                state,
            })
            .collect(),
        current: walk.current,
        paused: walk.paused,
        waiting_for_window: out.waiting_for_window,
    });
    Decision {
        verdicts: out.verdicts,
        view,
        next_check: out.next_check,
    }
}

/// The waves' states in order: done ones, then the current one (rolling, soaking or paused),
/// then waiting ones.
struct Walk {
    states: Vec<WaveState>,
    current: Option<usize>,
    paused: Option<Paused>,
}

/// Goes through the waves in order up to the first not done: paused when more of its units than
/// the threshold failed (but those forgiven), soaking when every unit converged (or failed and was
/// forgiven) less than `soak` ago, else rolling.
fn walk_waves(
    settings: &Rollout,
    waves: &[(String, Vec<&UnitInput>)],
    forgiven: &BTreeSet<String>,
    now: DateTime<Utc>,
) -> Walk {
    let soak = chrono::Duration::from_std(settings.soak).unwrap_or(chrono::Duration::MAX);
    let mut walk = Walk {
        states: Vec::with_capacity(waves.len()),
        current: None,
        paused: None,
    };
    for (i, (name, members)) in waves.iter().enumerate() {
        if walk.current.is_some() {
            walk.states.push(WaveState::Waiting);
            continue;
        }
        let failing: Vec<(String, Vec<String>)> = members
            .iter()
            .filter(|u| !forgiven.contains(&u.unit))
            .filter_map(|u| match &u.newest {
                Some(State::Failed { errors }) => Some((u.unit.clone(), errors.clone())),
                _ => None,
            })
            .collect();
        let state = if failing.len() > settings.failure_threshold {
            walk.paused = Some(Paused {
                wave: name.clone(),
                failing,
            });
            WaveState::Paused
        } else {
            // Each unit settled since when (a forgiven failure: at once), or not settled.
            let settled: Option<Vec<Option<DateTime<Utc>>>> = members
                .iter()
                .map(|u| match &u.newest {
                    Some(State::Converged { since }) => Some(Some(*since)),
                    Some(State::Failed { .. }) if forgiven.contains(&u.unit) => Some(None),
                    _ => None,
                })
                .collect();
            match settled {
                None => WaveState::Rolling,
                Some(since) => since
                    .into_iter()
                    .flatten()
                    .map(|s| {
                        s.checked_add_signed(soak)
                            .unwrap_or(DateTime::<Utc>::MAX_UTC)
                    })
                    .max()
                    .filter(|until| *until > now)
                    .map_or(WaveState::Done, |until| WaveState::Soaking { until }),
            }
        };
        if state != WaveState::Done {
            walk.current = Some(i);
        }
        walk.states.push(state);
    }
    walk
}

/// The maintenance windows of one decision.
struct Gates<'a> {
    settings: &'a Rollout,
    revision: &'a str,
    now: DateTime<Utc>,
}

impl Gates<'_> {
    /// Whether the unit's windows let a change through now (`Ok`), or when they open. An apply-now
    /// annotation naming the revision lets it through.
    fn check(&self, u: &UnitInput) -> Result<(), Option<DateTime<Utc>>> {
        if self.settings.windows.is_empty()
            || u.apply_now
                .as_deref()
                .is_some_and(|v| super::names_revision(v, self.revision))
        {
            return Ok(());
        }
        match windows::gate(&self.settings.windows, &u.unit, &u.labels, self.now, false) {
            Gate::Open => Ok(()),
            Gate::Closed { opens_at } => Err(opens_at),
        }
    }
}

/// The decision as it is made.
struct Out<'a> {
    gates: Gates<'a>,
    verdicts: BTreeMap<String, Verdict>,
    waiting_for_window: Vec<(String, Option<DateTime<Utc>>)>,
    next_check: Option<DateTime<Utc>>,
}

impl Out<'_> {
    fn hold(&mut self, u: &UnitInput, hold: Hold) {
        self.verdicts.insert(u.unit.clone(), Verdict::Hold(hold));
    }

    /// Whether the unit's window is open; when closed, the unit is held by it (and decided again
    /// when it opens).
    fn window_open(&mut self, u: &UnitInput) -> bool {
        let Err(opens_at) = self.gates.check(u) else {
            return true;
        };
        if let Some(at) = opens_at {
            self.next_check = Some(self.next_check.map_or(at, |n| n.min(at)));
        }
        self.waiting_for_window.push((u.unit.clone(), opens_at));
        self.hold(u, Hold::Window { opens_at });
        false
    }

    /// The unit takes the revision when its window is open.
    fn take_in_window(&mut self, u: &UnitInput) {
        if self.window_open(u) {
            self.verdicts.insert(u.unit.clone(), Verdict::Take);
        }
    }

    /// A unit held for another reason whose window is closed now is shown waiting for it too.
    fn note_window(&mut self, u: &UnitInput) {
        if let Err(opens_at) = self.gates.check(u) {
            self.waiting_for_window.push((u.unit.clone(), opens_at));
        }
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
                    super::short(revision)
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

//! Carries out a rollout (see [`crate::rollout`]): before each converge, the decision says which
//! units may take the newest revision; the others run the revision they are on, whose preparation
//! is kept here (or rendered again from git after a restart). The converge then runs that composed
//! revision; when it ends, the decision is taken again, until it admits no one more.
//!
//! What a rollout stands on lives outside the process: which revision each unit converged on is
//! in its inventory, and each shard's standing (its units that took the newest revision, failed
//! or converged there since when) and a resume are on the rollout's Lease (see
//! [`super::rollout_standing`]). What this keeps in memory only saves work.

use super::context::Agent;
use super::revision::Revision;
use super::rollout_record as record;
use super::rollout_standing::Standing;
use crate::agent::AgentError;
use crate::agent::pass::prepare::{Preparation, PreparedUnit};
use crate::report::{self, Held, UnitOutcome};
use crate::rollout::{self, Decision, State, UnitChange, UnitInput, Verdict};
use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// What the rollout keeps between converges.
#[derive(Default)]
pub(in crate::agent) struct Rollouts {
    /// The units that run another revision than the newest: that commit and its preparation.
    pub(super) kept: BTreeMap<String, (String, Preparation)>,
    /// The newest revision, and when each unit that took it was first seen converged on it.
    newest: String,
    pub(super) converged_since: BTreeMap<String, DateTime<Utc>>,
    /// The units the last composed revision let take the newest revision.
    pub(super) taking: BTreeSet<String>,
    /// The paths changed from each commit a unit is kept on to the newest revision.
    pub(super) changed: BTreeMap<String, Vec<PathBuf>>,
    /// How the newest revision changed each unit, as first seen (see `rollout_decision`).
    changes: BTreeMap<String, UnitChange>,
    /// When to decide again with no other change (a soak ends, a window opens).
    pub next_check: Option<DateTime<Utc>>,
    /// The last decision's view, as shown.
    pub view: Option<rollout::RolloutView>,
    /// The rollout's last line said on the terminal (said again only when it changes).
    said: Option<String>,
    /// This shard's standing as last recorded on the rollout's Lease.
    pub(super) recorded: Option<Standing>,
}

impl Rollouts {
    /// Whether nothing is rolling out: no rollout settings and no unit held.
    fn idle(&self, target: &Revision) -> bool {
        target.rollout.is_none() && self.kept.is_empty()
    }

    /// The newest revision moves from `old` to `new`: a unit that ran `old` and renders
    /// differently at `new` keeps `old`'s preparation (until the decision lets it take `new`).
    pub(in crate::agent) fn advance(&mut self, old: &Revision, new: &Revision) {
        if new.commit == self.newest || (self.idle(new) && old.rollout.is_none()) {
            return;
        }
        let fresh: BTreeMap<String, &Preparation> = (new.fleet_units.iter())
            .map(|(u, p)| (u.name(), p))
            .collect();
        for (u, p) in old.fleet_units.iter() {
            let name = u.name();
            if self.kept.contains_key(&name) {
                continue;
            }
            // A unit held with nothing to run (new, never converged) never ran `old`.
            if !self.taking.is_empty() && !self.taking.contains(&name) {
                continue;
            }
            if fresh.get(&name).is_some_and(|n| !same_render(n, p)) {
                self.kept.insert(name, (old.commit.clone(), p.clone()));
            }
        }
        self.start(&new.commit);
    }

    /// The newest revision is `commit`: what was known of the one before is forgotten.
    fn start(&mut self, commit: &str) {
        if self.newest != commit {
            self.newest = commit.to_string();
            self.converged_since.clear();
            self.taking.clear();
            self.changed.clear();
            self.changes.clear();
        }
    }
}

/// Whether two preparations render the same objects.
pub(super) fn same_render(a: &Preparation, b: &Preparation) -> bool {
    match (a, b) {
        (Ok(a), Ok(b)) => {
            a.objects.len() == b.objects.len()
                && a.objects
                    .iter()
                    .zip(&b.objects)
                    .all(|(x, y)| x.key == y.key && x.same_body(y))
        }
        _ => false,
    }
}

impl Agent {
    /// Converges `target` through its rollout: each step converges the composed revision the
    /// decision allows, then decides again, until it admits no one more (with a deadline, soaks
    /// ending before it are waited for). Without rollout settings and with no unit held, one
    /// converge of `target`.
    ///
    /// `drift`: the outcomes of the converge before, when this one looks for drift over every unit
    /// (those whose judgement still holds keep their outcome, see [`super::round::keep_earlier`]):
    /// a unit outside its maintenance window (but those with `selfHeal`) gets no pass and keeps
    /// its outcome.
    pub(in crate::agent) async fn roll(
        &mut self,
        target: &Revision,
        deadline: Option<Instant>,
        earlier: Option<&mut [UnitOutcome]>,
        mut drift: Option<&mut [UnitOutcome]>,
    ) -> Result<Vec<UnitOutcome>, AgentError> {
        if self.memo.rollout.idle(target) {
            self.memo.rollout.view = None;
            self.memo.rollout.next_check = None;
            self.signals.rollout(None);
            // A drift check keeps the outcomes whose judgement still holds (see `keep_earlier`).
            return self.converge(target, deadline, earlier.or(drift)).await;
        }
        self.memo.rollout.start(&target.commit);
        let frozen = (drift.as_deref())
            .map(|before| frozen(target, before, self.schedule.clock.now()))
            .unwrap_or_default();
        if !frozen.is_empty() {
            tracing::info!(
                units = frozen.len(),
                "drift not corrected outside the maintenance windows"
            );
        }
        let mut earlier: Option<Vec<UnitOutcome>> = earlier.map(|e| e.to_vec());
        let mut first = true;
        loop {
            let decision = self.rollout_decision(target, earlier.as_deref()).await;
            let taking: BTreeSet<String> = (decision.verdicts.iter())
                .filter(|(_, v)| matches!(v, Verdict::Take))
                .map(|(u, _)| u.clone())
                .collect();
            let more = !taking.is_subset(&self.memo.rollout.taking);
            if !first && !more {
                let waiting = (decision.verdicts.values())
                    .any(|v| matches!(v, Verdict::Hold(rollout::Hold::Wave { .. })));
                let soak_ends = soak_end(&decision).filter(|_| deadline.is_some() && waiting);
                match soak_ends.and_then(|t| instant_of(self.schedule.clock.until(t), deadline)) {
                    Some(at) => {
                        tracing::info!(until = %soak_ends.expect("soak end"), "soaking");
                        tokio::time::sleep_until(at.into()).await;
                        continue;
                    }
                    None => {
                        let mut outcomes = earlier.unwrap_or_default();
                        self.note_holds(target, &decision, &mut outcomes);
                        return Ok(outcomes);
                    }
                }
            }
            first = false;
            let composed = self.compose(target, &decision, &frozen);
            self.memo.rollout.taking = taking;
            let mut outcomes = self
                .converge(
                    &composed,
                    deadline,
                    earlier.as_deref_mut().or(drift.as_deref_mut()),
                )
                .await?;
            outcomes.extend(frozen.values().cloned());
            self.note_converged(target, &outcomes);
            let stopped =
                self.stopping.shutting_down() || deadline.is_some_and(|d| Instant::now() >= d);
            if stopped {
                self.note_holds(target, &decision, &mut outcomes);
                return Ok(outcomes);
            }
            earlier = Some(outcomes);
        }
    }

    /// The decision for `target` now, from the units' standing; shown (metrics, status page,
    /// Events) and its pause recorded.
    async fn rollout_decision(
        &mut self,
        target: &Revision,
        outcomes: Option<&[UnitOutcome]>,
    ) -> Decision {
        let record = self.rollout_record(target).await;
        let (index, count) = self.shard.layout();
        // The other shards' units, as their standings say (this layout's, on this revision).
        let theirs: BTreeMap<String, State> = (record.standings.iter())
            .filter(|((i, c), s)| *c == count && *i != index && s.revision == target.commit)
            .flat_map(|(_, s)| s.units.clone())
            .collect();
        self.resume_standing(target, record.standings.get(&(index, count)));
        let inventories = self.live.inventories(&target.fleet.scope, |_| true).await.0;
        let applied: BTreeMap<String, Option<String>> = (inventories.into_iter())
            .map(|(u, inv)| (u, inv.revision))
            .collect();
        self.keep_at_applied(target, &applied).await;
        self.changed_since_kept(target).await;
        let outcomes: BTreeMap<&str, &UnitOutcome> = (outcomes.unwrap_or_default().iter())
            .map(|o| (o.unit.as_str(), o))
            .collect();
        let now = self.schedule.clock.now();
        let state = &mut self.memo.rollout;
        let in_progress = !state.kept.is_empty();
        let inputs: Vec<UnitInput> = (target.fleet_units.iter())
            .map(|(u, p)| {
                let name = u.name();
                let kept = state.kept.get(&name);
                // A unit that does not render at the newest revision is placed by what it renders
                // where it is.
                let facts = (p.as_ref().ok())
                    .or_else(|| kept.and_then(|(_, k)| k.as_ref().ok()))
                    .map(|p| p.rollout.clone())
                    .unwrap_or_default();
                let on = match kept {
                    Some((commit, _)) => Some(commit.clone()),
                    None => applied.get(&name).cloned().flatten(),
                };
                let change = match kept {
                    Some((_, old)) if same_render(old, p) => UnitChange::None,
                    Some((commit, _)) => {
                        let changed = state.changed.get(commit);
                        let inputs = target.inputs.get(u);
                        match (changed, inputs) {
                            (Some(changed), Some(inputs)) => rollout::units::change_of(
                                &name,
                                false,
                                |p| inputs.touched_by(p),
                                changed,
                            ),
                            _ => UnitChange::Shared,
                        }
                    }
                    None if on.is_none() => UnitChange::Own,
                    // On the newest revision while others are not: it counts in its wave (the
                    // change it took is not known after a restart; it took it through the waves).
                    None if in_progress => UnitChange::Shared,
                    None => UnitChange::None,
                };
                // What changed a unit is remembered until the next revision: a unit that took
                // it still counts in its wave (for the soak), wherever its inventory says it is.
                let change = match state.changes.get(&name) {
                    Some(first) if change == UnitChange::None || *first != UnitChange::None => {
                        *first
                    }
                    _ => {
                        state.changes.insert(name.clone(), change);
                        change
                    }
                };
                // Taken: admitted before, on it by its inventory, or nothing to take.
                let on_it = applied
                    .get(&name)
                    .is_some_and(|a| a.as_deref() == Some(&target.commit));
                let newest = match theirs.get(&name) {
                    // Another shard's unit stands as that shard recorded it.
                    Some(recorded) => Some(recorded.clone()),
                    None if !state.taking.contains(&name)
                        && !on_it
                        && change != UnitChange::None =>
                    {
                        None
                    }
                    None => Some(newest_state(
                        outcomes.get(name.as_str()).copied(),
                        &target.commit,
                        applied.get(&name).cloned().flatten().as_deref(),
                        state.converged_since.entry(name.clone()),
                        now,
                    )),
                };
                UnitInput {
                    unit: name,
                    labels: facts.labels,
                    on,
                    change,
                    newest,
                    apply_now: facts.apply_now,
                }
            })
            .collect();
        let decision = rollout::decide(
            &target.commit,
            target.rollout.as_deref(),
            &inputs,
            record.resume.as_ref(),
            now,
        );
        self.record_standing(target, &inputs, &decision).await;
        self.memo.rollout.next_check = decision.next_check;
        self.memo.rollout.view = decision.view.clone();
        let line = decision.view.as_ref().map(rollout::view::headline);
        if line.is_some() && line != self.memo.rollout.said {
            let line = line.clone().unwrap_or_default();
            tracing::info!(revision = %target.commit, "{line}");
            crate::output::println(&line);
        }
        self.memo.rollout.said = line;
        self.rollout_shown(target, decision.view.as_ref()).await;
        decision
    }

    /// The revision the decision allows: `target`'s units that take it, the others with the
    /// preparation of the revision they are on. A unit held with nothing to run (new, or never
    /// converged) is left out (it gets an outcome saying why, see [`Agent::note_holds`]).
    fn compose(
        &mut self,
        target: &Revision,
        decision: &Decision,
        frozen: &BTreeMap<String, UnitOutcome>,
    ) -> Revision {
        let state = &self.memo.rollout;
        let mut held_at = BTreeMap::new();
        let mut rendered: BTreeSet<String> = BTreeSet::new();
        let units: Vec<PreparedUnit> = (target.units.iter())
            .filter_map(|(u, p)| {
                let name = u.name();
                if frozen.contains_key(&name) {
                    return None;
                }
                let take = matches!(decision.verdicts.get(&name), Some(Verdict::Take) | None);
                if take {
                    if !state.taking.contains(&name) || target.rendered.contains(&name) {
                        rendered.insert(name);
                    }
                    return Some((u.clone(), p.clone()));
                }
                let (commit, kept) = state.kept.get(&name)?;
                held_at.insert(name, commit.clone());
                Some((u.clone(), kept.clone()))
            })
            .collect();
        Revision {
            commit: target.commit.clone(),
            checkout: target.checkout.clone(),
            stale: target.stale.clone(),
            units: Arc::new(units),
            fleet_units: target.fleet_units.clone(),
            inputs: target.inputs.clone(),
            conflicted: target.conflicted.clone(),
            fleet: target.fleet.clone(),
            rendered: Arc::new(rendered),
            rollout: target.rollout.clone(),
            held_at: Arc::new(held_at),
        }
    }

    /// Records when each unit that took `target` was first seen converged on it; such a unit
    /// leaves what it kept (until then, a unit that took it and fails stays placed by what it
    /// kept, and goes back to it if a later revision holds it).
    fn note_converged(&mut self, target: &Revision, outcomes: &[UnitOutcome]) {
        let now = self.schedule.clock.now();
        for o in outcomes {
            if o.revision == target.commit && report::phase(o) == report::Phase::Converged {
                self.memo.rollout.kept.remove(&o.unit);
                (self.memo.rollout.converged_since)
                    .entry(o.unit.clone())
                    .or_insert(now);
            }
        }
    }

    /// Says on each held unit's outcome why it is not on the newest revision; a held unit with
    /// nothing to run gets an outcome of its own.
    fn note_holds(&self, target: &Revision, decision: &Decision, outcomes: &mut Vec<UnitOutcome>) {
        let present: BTreeSet<String> = outcomes.iter().map(|o| o.unit.clone()).collect();
        for (unit, verdict) in &decision.verdicts {
            let Verdict::Hold(hold) = verdict else {
                continue;
            };
            if !self.shard.owns(unit) {
                continue;
            }
            let held = Held {
                newest: target.commit.clone(),
                why: hold.message(),
            };
            if let Some(o) = outcomes.iter_mut().find(|o| &o.unit == unit) {
                o.held = Some(held);
            } else if !present.contains(unit) {
                let mut o = UnitOutcome {
                    rendered_at: None,
                    held: Some(held.clone()),
                    unit: unit.clone(),
                    cluster: None,
                    revision: target.commit.clone(),
                    stale_source: target.stale.clone(),
                    azure: self.live.env.azure,
                    objects: vec![],
                    errors: vec![],
                    standing: report::Standing::not_started(format!("not started: {}", held.why)),
                };
                o.cluster = (target.units.iter())
                    .find(|(u, _)| &u.name() == unit)
                    .and_then(|(_, p)| p.as_ref().ok()?.cluster.clone());
                outcomes.push(o);
            }
        }
    }
}

/// A unit's state on the newest revision `newest`, once it took it: from its last outcome there,
/// else (another shard's unit, or after a restart) from its inventory.
fn newest_state(
    outcome: Option<&UnitOutcome>,
    newest: &str,
    applied: Option<&str>,
    since: std::collections::btree_map::Entry<'_, String, DateTime<Utc>>,
    now: DateTime<Utc>,
) -> State {
    match outcome.filter(|o| o.revision == newest) {
        Some(o) => match report::phase(o) {
            report::Phase::Converged => State::Converged {
                since: *since.or_insert(now),
            },
            report::Phase::Failed => State::Failed {
                errors: o.errors.iter().map(|e| e.text()).collect(),
            },
            _ => State::Progressing,
        },
        None if applied == Some(newest) => State::Converged {
            since: *since.or_insert(now),
        },
        None => State::Progressing,
    }
}

/// The units of `target` whose windows keep drift from being corrected now, with their outcomes
/// of the converge `before` (a unit without one passes).
fn frozen(
    target: &Revision,
    before: &[UnitOutcome],
    now: DateTime<Utc>,
) -> BTreeMap<String, UnitOutcome> {
    let Some(settings) = target.rollout.as_deref().filter(|r| !r.windows.is_empty()) else {
        return BTreeMap::new();
    };
    (target.units.iter())
        .filter_map(|(u, p)| {
            let name = u.name();
            let labels = p
                .as_ref()
                .map(|p| p.rollout.labels.clone())
                .unwrap_or_default();
            let gate = rollout::windows::gate(&settings.windows, &name, &labels, now, true);
            if gate == rollout::windows::Gate::Open {
                return None;
            }
            let o = before.iter().find(|o| o.unit == name)?;
            Some((name, o.clone()))
        })
        .collect()
}

/// When the wave soaking ends, if one is.
fn soak_end(decision: &Decision) -> Option<DateTime<Utc>> {
    let view = decision.view.as_ref()?;
    view.waves.iter().find_map(|w| match w.state {
        rollout::WaveState::Soaking { until } => Some(until),
        _ => None,
    })
}

/// The instant `wait` from now, when it comes before `deadline`.
fn instant_of(wait: std::time::Duration, deadline: Option<Instant>) -> Option<Instant> {
    let at = Instant::now() + wait;
    deadline.is_none_or(|d| at < d).then_some(at)
}

impl Agent {
    /// Shows the decision's `view` (metrics, status page, Event) and, when it is paused and this
    /// instance leads, records the pause on the fleet's rollout Lease (what `rollout resume` reads).
    async fn rollout_shown(&self, target: &Revision, view: Option<&rollout::RolloutView>) {
        self.signals.rollout(view);
        let Some((view, paused)) = view.and_then(|v| Some((v, v.paused.as_ref()?))) else {
            return;
        };
        if !self.stopping.leading() {
            return;
        }
        let client = self.live.env.cluster.client();
        let fleet = &target.fleet.scope.name;
        if let Err(e) = record::record_paused(client, fleet, paused, &view.revision).await {
            tracing::warn!(error = %e, "the paused rollout could not be recorded on its Lease");
        }
    }
}

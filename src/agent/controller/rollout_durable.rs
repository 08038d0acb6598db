//! What a rollout keeps outside the process, and reads back after a restart or a handover: the
//! fleet's rollout record on its Lease (this shard's standing, written when it changes, and the
//! other shards'), and the preparations of the revisions the units held back are on, rendered
//! again from git (only those a change touches, from a checkout linked to the newest revision's).

use super::context::Agent;
use super::revision::Revision;
use super::rollout::same_render;
use super::rollout_record as record;
use super::rollout_standing::Standing;
use crate::agent::AgentError;
use crate::agent::pass::prepare::{Preparation, PreparedUnit};
use crate::rollout::{Decision, State, UnitChange, UnitInput, Verdict};
use crate::unit::Unit;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Instant;

impl Agent {
    /// The fleet's rollout record (empty when the Lease cannot be read: no resume is taken, the
    /// rollout stays paused, and the other shards' units stand as their inventories say).
    pub(super) async fn rollout_record(&self, target: &Revision) -> record::Record {
        let client = self.live.env.cluster.client();
        match record::read(client, &target.fleet.scope.name).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "the rollout's Lease could not be read: no resume taken");
                record::Record::default()
            }
        }
    }

    /// After a restart or a handover, what this shard recorded of the newest revision: the units
    /// that took it, and since when those converged (a soak goes on from then).
    pub(super) fn resume_standing(&mut self, target: &Revision, mine: Option<&Standing>) {
        let state = &mut self.memo.rollout;
        let Some(mine) = mine.filter(|s| s.revision == target.commit) else {
            return;
        };
        if state.recorded.is_none() {
            state.recorded = Some(mine.clone());
        }
        for (unit, s) in &mine.units {
            if let State::Converged { since } = s {
                state.converged_since.entry(unit.clone()).or_insert(*since);
            }
            state.taking.insert(unit.clone());
        }
    }

    /// Records this shard's standing on the newest revision when it changed, if this instance
    /// leads: its units the revision changes that took it (or take it now), and their state.
    pub(super) async fn record_standing(
        &mut self,
        target: &Revision,
        inputs: &[UnitInput],
        decision: &Decision,
    ) {
        if target.rollout.is_none() || !self.stopping.leading() {
            return;
        }
        let units = (inputs.iter())
            .filter(|u| u.change != UnitChange::None && self.shard.owns(&u.unit))
            .filter_map(|u| {
                let taken = matches!(decision.verdicts.get(&u.unit), Some(Verdict::Take));
                let state = u.newest.clone().or(taken.then_some(State::Progressing))?;
                Some((u.unit.clone(), state))
            })
            .collect();
        let standing = Standing {
            revision: target.commit.clone(),
            units,
        }
        .as_recorded();
        if self.memo.rollout.recorded.as_ref() == Some(&standing) {
            return;
        }
        let client = self.live.env.cluster.client();
        let fleet = &target.fleet.scope.name;
        match record::record_standing(client, fleet, self.shard.layout(), &standing).await {
            Ok(()) => self.memo.rollout.recorded = Some(standing),
            Err(e) => {
                tracing::warn!(error = %e, "the rollout standing could not be recorded on its Lease")
            }
        }
    }

    /// After a restart, a unit whose inventory says it converged on another commit than the
    /// newest keeps that commit's preparation (rendered again from git) when it renders
    /// differently at the newest: the decision then says whether it takes the newest. Only the
    /// units whose input closure a change since that commit touches are rendered again (none:
    /// no checkout either).
    pub(super) async fn keep_at_applied(
        &mut self,
        target: &Revision,
        applied: &BTreeMap<String, Option<String>>,
    ) {
        let state = &self.memo.rollout;
        let mut wanted: BTreeMap<String, Vec<Unit>> = BTreeMap::new();
        for (u, _) in target.fleet_units.iter() {
            let name = u.name();
            if state.kept.contains_key(&name) || state.taking.contains(&name) {
                continue;
            }
            if let Some(Some(commit)) = applied.get(&name)
                && *commit != target.commit
                && !state.converged_since.contains_key(&name)
            {
                wanted.entry(commit.clone()).or_default().push(u.clone());
            }
        }
        let fresh: BTreeMap<String, &Preparation> = (target.fleet_units.iter())
            .map(|(u, p)| (u.name(), p))
            .collect();
        for (commit, mut units) in wanted {
            // A unit whose input closure no change since `commit` touches renders the same
            // there: it has nothing to keep, and is not rendered again.
            if let Some(changed) = self.changed_since(&commit, target).await {
                units.retain(|u| {
                    (target.inputs.get(u)).is_none_or(|i| i.first_touched(changed).is_some())
                });
            }
            if units.is_empty() {
                continue;
            }
            let (started, count) = (Instant::now(), units.len());
            let rendered = self.render_at(&commit, target, units).await;
            tracing::debug!(commit = %commit, units = count, elapsed_ms = started.elapsed().as_millis() as u64, "units rendered again at the revision they converged on");
            match rendered {
                Ok(prepared) => {
                    for (u, p) in prepared {
                        let name = u.name();
                        if fresh.get(&name).is_some_and(|n| !same_render(n, &p)) {
                            self.memo.rollout.kept.insert(name, (commit.clone(), p));
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(commit = %commit, error = %e, "the revision units converged on cannot be rendered again: they take the newest");
                }
            }
        }
    }

    /// The paths changed from each commit a unit is kept on to `target` (each asked of git once).
    pub(super) async fn changed_since_kept(&mut self, target: &Revision) {
        let commits: BTreeSet<String> = (self.memo.rollout.kept.values())
            .map(|(c, _)| c.clone())
            .collect();
        for from in commits {
            self.changed_since(&from, target).await;
        }
    }

    /// The paths changed from `from` to `target`, asked of git once per `from` (`None`, said,
    /// when git cannot tell: the units kept there count as shared changes).
    async fn changed_since(&mut self, from: &str, target: &Revision) -> Option<&Vec<PathBuf>> {
        if !self.memo.rollout.changed.contains_key(from) {
            let (f, to) = (from.to_string(), target.commit.clone());
            match self.git.blocking(move |s| s.changed_paths(&f, &to)).await {
                Ok(Ok(paths)) => {
                    self.memo.rollout.changed.insert(from.to_string(), paths);
                }
                Ok(Err(e)) => {
                    tracing::warn!(from = %from, error = %e, "the changes since a kept revision are unknown: its units count as shared changes")
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the changes since a kept revision are unknown")
                }
            }
        }
        self.memo.rollout.changed.get(from)
    }

    /// Renders `units` at `commit`, checked out from the source's mirror (linked from the
    /// checkout of `target`, the newest revision: only the files the two differ in are written).
    async fn render_at(
        &self,
        commit: &str,
        target: &Revision,
        units: Vec<Unit>,
    ) -> Result<Vec<PreparedUnit>, AgentError> {
        let commit = commit.to_string();
        let seed = (target.checkout.clone(), target.commit.clone());
        let checkout = (self.git)
            .blocking(move |s| s.materialize_kept(&commit, Some((&seed.0, &seed.1))))
            .await??;
        let prepared = tokio::task::spawn_blocking(move || -> Result<_, AgentError> {
            Ok(crate::agent::pass::prepare::prepare_all(&checkout, units))
        })
        .await
        .map_err(|e| AgentError::Task(e.to_string()));
        // The preparations hold what the units need: the checkout goes, rendered or not.
        self.git.blocking(|s| s.remove_kept()).await?;
        prepared?
    }
}

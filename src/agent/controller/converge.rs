//! One converge: the units of a revision passed over until each has converged or failed (or the
//! deadline passed), woken by the caches' changes. [`Round`](super::round::Round) holds its moving state (outcomes,
//! what is settled, the queue, the inventories between passes); [`Agent::converge`] sets it up,
//! then only dispatches passes, waits, and hands what happened to the round.

use super::cache::KindKey;
use super::context::{Agent, LiveContext, LiveIdentities, LiveIds};
use super::lifecycle::Stop;
use super::progress::Progress;
use super::queue::{WorkQueue, Workers};
use super::revision::Revision;
use super::round::{
    DEBOUNCE, Job, Round, first_outcome, job_name, keep_earlier, removed_outcome, wait_for,
};
use super::wakes::{DuringPass, Wakes};
use super::{kinds_of, shard, wakes_of};
use crate::agent::pass::{self, guest};
use crate::agent::{AgentError, fleet};
use crate::apply::inventory::Inventory;
use crate::object::ObjectKey;
use crate::plan::ownership::Fleet;
use crate::report::{self, UnitOutcome};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

/// What a converge starts from: its round, the fleet the deletion guard asks, and the wake index.
struct Setup<'r> {
    round: Round<'r>,
    fleet: Arc<Fleet>,
    index: Wakes,
}

impl Agent {
    /// Runs the units of `rev` until each has converged or failed (or `deadline`; without one,
    /// until nothing changed for an interval), woken by the caches' changes. With `earlier` (the
    /// outcomes of the converge before: of the revision before, or of this one in a drift check),
    /// a unit that had converged and whose judgement still holds keeps its outcome and gets no
    /// pass unless a change of its objects wakes it (see [`keep_earlier`]).
    pub(in crate::agent) async fn converge(
        &mut self,
        rev: &Revision,
        deadline: Option<Instant>,
        earlier: Option<&mut [UnitOutcome]>,
    ) -> Result<Vec<UnitOutcome>, AgentError> {
        let Setup {
            mut round,
            fleet,
            index,
        } = self.set_up(rev, earlier).await;
        let started = Instant::now();
        let mut progress = self.signals.progress.take().expect("progress set");
        self.signals.statuses_begin(rev);
        for (i, o) in round.outcomes.iter().enumerate() {
            if round.held[i] {
                progress.update(i, o);
                let inv = round.inventories.get(&rev.units[i].0.name());
                self.signals.record_events(&self.live, o, inv);
            }
        }
        tracing::debug!(
            held = round.held.iter().filter(|h| **h).count(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "settled units recorded"
        );
        let mut workers = Workers::new(self.schedule.concurrency);
        // A shutdown or a lost Lease: no new pass; those in flight may end until the deadline.
        let mut stopping: Option<(Stop, Instant)> = None;
        loop {
            let now = Instant::now();
            let past_deadline = deadline.is_some_and(|d| now >= d);
            if stopping.is_none()
                && let Some(stop) = self.stopping.stop()
            {
                tracing::info!(?stop, "no new passes: waiting for the passes in flight");
                stopping = Some((stop, stop.drain_deadline(now, self.stopping.timeout)));
            }
            if let Some((stop, until)) = stopping {
                if workers.is_empty() {
                    break;
                }
                if now >= until {
                    round.interrupt(stop, &mut progress);
                    break;
                }
            }
            if !past_deadline && stopping.is_none() {
                let inventories = &mut round.inventories;
                let (began, touched) = (&mut round.began, &mut round.touched);
                workers.fill(&mut round.queue, now, |job| {
                    if let Job::Unit(i) = job {
                        (began[i], touched[i]) = (Some(Instant::now()), false);
                    }
                    let name = job_name(rev, &job);
                    let inv = inventories.remove(&name);
                    let inv = inv.unwrap_or_else(|| Inventory::new(&name));
                    self.run_job(rev, &fleet, job, inv)
                });
            }
            self.signals.metrics.set_queue_depth(round.queue.len());
            let busy = !workers.is_empty() || round.queue.has_ready(now);
            if !busy && (past_deadline || round.all_settled()) {
                break;
            }
            if past_deadline && workers.is_empty() {
                break;
            }
            let wait = (round.queue.next_due(), self.schedule.interval);
            let wait = wait_for(now, deadline, past_deadline, wait.0, wait.1, stopping);
            tokio::select! {
                _ = self.stopping.stop_asked(), if stopping.is_none() => {}
                (job, outcome, inv) = workers.next() => {
                    self.after_pass(&mut round, job, outcome, inv, &mut progress);
                }
                change = self.live.caches.next_change(wait) => {
                    let Some(first) = change else {
                        let quiet = round.quiet_since.elapsed() >= self.schedule.interval;
                        if deadline.is_none() && workers.is_empty() && quiet {
                            break;
                        }
                        continue;
                    };
                    round.quiet_since = Instant::now();
                    let mut changed = self.live.caches.drain().await;
                    changed.insert(first);
                    tracing::trace!(?changed, "changes seen");
                    round.wake(&changed, &index, self.live.env.cluster.echoes());
                }
            }
        }
        drop(workers);
        Ok(self.wrap_up(round, stopping.map(|(stop, _)| stop), progress))
    }

    /// What a pass's end changes: the round's state, the progress, the unit's events, and when
    /// to look at the unit again.
    fn after_pass(
        &self,
        round: &mut Round<'_>,
        job: Job,
        outcome: UnitOutcome,
        inv: Inventory,
        progress: &mut Progress,
    ) {
        if let Job::Removed(u) = &job {
            self.signals.events.forget(u);
        }
        if let Some(i) = round.pass_ended(&job, outcome, inv) {
            progress.update(i, &round.outcomes[i]);
            let inv = round.inventories.get(&round.rev.units[i].0.name());
            self.signals
                .record_events(&self.live, &round.outcomes[i], inv);
        }
        // Nothing here changes when a guest cluster gets better: look again.
        if let Job::Unit(i) = job
            && !round.done[i]
            && guest::waits_on_guest(&round.outcomes[i])
        {
            let at = Instant::now() + guest::RECHECK_AFTER;
            round.queue.add_at(job.clone(), at);
        }
        if let Job::Unit(i) = job
            && round.during_pass.release(i, self.live.env.cluster.echoes())
        {
            if round.done[i] {
                round.touched[i] = true;
            } else {
                round.queue.wake(job, Instant::now());
            }
        }
        round.quiet_since = Instant::now();
    }

    /// Ends a converge: what it leaves for the cycle and the publish, and its outcomes (those of
    /// the units that left git after the others).
    fn wrap_up(
        &mut self,
        mut round: Round<'_>,
        stopped: Option<Stop>,
        mut progress: Progress,
    ) -> Vec<UnitOutcome> {
        self.memo.passes = round.passes;
        let units = (round.rev.units.iter().enumerate())
            .map(|(i, (u, _))| (u.name(), round.began[i], round.touched[i]));
        self.memo.judged.record(units);
        self.signals.metrics.set_queue_depth(0);
        // Stopped before their pass: nothing was done to them (their last reports stand).
        self.memo.unreconciled = match stopped {
            Some(stop) => round.not_reconciled(stop),
            None => BTreeSet::new(),
        };
        for o in round.removed_outcomes.values() {
            progress.left_git(o);
        }
        progress.finish();
        self.signals.progress = Some(progress);
        let mut outcomes = round.outcomes;
        outcomes.extend(round.removed_outcomes.into_values());
        self.signals
            .metrics
            .set_units(outcomes.iter().map(report::phase));
        self.signals.feed_units(&outcomes);
        self.signals.statuses_end(&outcomes, self.schedule.once);
        outcomes
    }

    /// Sets a converge up: every unit's first outcome and inventory (units that left git are
    /// pruned from theirs), the caches of every kind read, the wake index, the fleet-wide checks,
    /// what is settled before any pass, and the queue.
    async fn set_up<'r>(
        &mut self,
        rev: &'r Revision,
        earlier: Option<&mut [UnitOutcome]>,
    ) -> Setup<'r> {
        let started = Instant::now();
        let phase = |what: &str| {
            tracing::debug!(
                phase = what,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "converge setup"
            );
        };
        let azure = self.live.env.azure;
        let mut outcomes: Vec<UnitOutcome> = (rev.units.iter())
            .map(|(u, p)| first_outcome(rev, u, p, azure))
            .collect();
        self.signals.feed_revision(rev);
        phase("first outcomes");
        let present: BTreeSet<String> = rev.fleet_units.iter().map(|(u, _)| u.name()).collect();
        let declared = |u: &str| present.contains(u);
        let (inventories, broken) = self.live.inventories(&rev.fleet.scope, declared).await;
        phase("inventories");
        // An inventory that does not decode or that the agent does not trust: its unit is not
        // acted on (nothing applied, nothing pruned) until a person restores or deletes it.
        // With shards, a unit (in git or gone from it) is acted on by its own shard only.
        let shard = self.shard;
        let mut refused = fleet::refused(&broken);
        refused.retain(|u, _| shard.owns(u));
        // (No unit at all is an empty render of the whole repository: never pruned on.)
        let removed = shard::gone_units(shard, &present, inventories.keys());
        let caches = &self.live.caches;
        caches
            .ensure(&self.live.env.cluster, &kinds_of(rev, &inventories))
            .await;
        caches.revision_watched();
        // What changed since the last converge: read fresh by every pass below, and no unit it
        // touched keeps its earlier outcome.
        let between = caches.drain().await;
        phase("caches");
        let index = wakes_of(rev, &inventories, &mut self.memo.wake_keys);
        let mut touched: Vec<bool> = (rev.units.iter())
            .map(|(u, _)| self.memo.judged.touched(&u.name()))
            .collect();
        let echoes = self.live.env.cluster.echoes();
        let others = between.iter().filter(|c| !c.is_echo(echoes));
        for i in others.flat_map(|c| index.units(c)) {
            touched[i] = true;
        }
        phase("wakes");
        // Live ASO objects no unit declares that stand for an Azure resource a unit declares.
        // The deletion guard counts them too.
        let memo = (
            &mut self.memo.live_identities,
            &mut self.memo.identities_read,
        );
        let live_ids = self.live.live_identities(rev, memo).await;
        phase("live identities read");
        let fleet = self.memo.fleet_with_live(&rev.fleet, &live_ids);
        let holding = |k: &ObjectKey| fleet::inventory_holding(&inventories, k);
        let mut live_conflicts = fleet::live_conflict_errors(&fleet, holding);
        tracing::debug!(
            live = live_ids.iter().map(|n| n.len()).sum::<usize>(),
            undeclared = fleet.undeclared_live(),
            "live objects standing for Azure resources"
        );
        phase("live identities");
        for (i, (u, _)) in rev.units.iter().enumerate() {
            if let Some(e) = refused.remove(&u.name()) {
                outcomes[i].errors.push(e);
            }
            if let Some(e) = live_conflicts.remove(&u.name()) {
                outcomes[i].errors.extend(e);
            }
        }
        // A unit failed before its first pass (not prepared, or held above) is settled as it is.
        let mut held: Vec<bool> = (0..outcomes.len())
            .map(|i| rev.units[i].1.is_err() || !outcomes[i].errors.is_empty())
            .collect();
        // A converged unit whose judgement still holds is settled as it was.
        let judged = (&self.memo.judged, touched.as_slice());
        keep_earlier(rev, earlier, judged, &index, &mut outcomes, &mut held);
        phase("earlier outcomes kept");
        let mut queue: WorkQueue<Job> =
            WorkQueue::new(crate::retry::UNIT_QUEUE, rev.units.len() as u64)
                .with_debounce(DEBOUNCE);
        for i in (0..rev.units.len()).filter(|&i| !held[i]) {
            queue.add(Job::Unit(i));
        }
        let mut removals = Vec::new();
        for unit in &removed {
            if (inventories.get(unit)).is_some_and(|inv| !inv.entries.is_empty()) {
                queue.add(Job::Removed(unit.clone()));
                removals.push(unit.clone());
            }
        }
        // Units that left git with an inventory not acted on: reported, never pruned.
        let removed_outcomes = (refused.into_iter())
            .map(|(unit, e)| {
                let mut o = removed_outcome(&unit, rev, azure);
                o.errors.push(e);
                (unit, o)
            })
            .collect();
        let pending = (0..outcomes.len())
            .filter(|&i| rev.units[i].1.is_ok() && !held[i])
            .count();
        let round = Round {
            rev,
            azure,
            ran: vec![false; outcomes.len()],
            done: held.clone(),
            held,
            pending,
            outcomes,
            inventories,
            removals,
            removed_outcomes,
            queue,
            during_pass: DuringPass::default(),
            began: vec![None; rev.units.len()],
            touched,
            passes: 0,
            quiet_since: Instant::now(),
        };
        Setup {
            round,
            fleet,
            index,
        }
    }

    /// One pass of `job`, with its inventory; gives the inventory back.
    async fn run_job(
        &self,
        rev: &Revision,
        fleet: &Fleet,
        job: Job,
        mut inv: Inventory,
    ) -> (Job, UnitOutcome, Inventory) {
        let mut ctx = self.live.pass_context(self.pass_policy, rev, fleet);
        if let Job::Unit(i) = &job {
            ctx.revision = rev.commit_of(&rev.units[*i].0.name());
        }
        let started = Instant::now();
        crate::agent::failpoint::failpoint_slow_pass().await;
        let outcome = match &job {
            Job::Unit(i) => {
                let prepared = rev.units[*i].1.as_ref().expect("only prepared units run");
                pass::run(&ctx, prepared, &mut inv).await
            }
            Job::Removed(_) => pass::remove(&ctx, &mut inv).await,
        };
        let phase = report::phase(&outcome);
        self.signals.metrics.pass_ended(phase, started.elapsed());
        tracing::debug!(unit = %outcome.unit, ?phase,
            elapsed_ms = started.elapsed().as_millis() as u64, "pass done");
        (job, outcome, inv)
    }
}

impl LiveContext {
    /// The live Azure identities of the fleet's kinds: read from the caches again only when one
    /// of their kinds changed since the last time.
    /// `memo`: the identities last read, with the change counts of their kinds then, and what
    /// was read of each namespace.
    async fn live_identities(
        &self,
        rev: &Revision,
        (memo, read): (&mut Option<LiveIdentities>, &mut fleet::IdentitiesRead),
    ) -> LiveIds {
        let stamp: Option<Vec<(KindKey, u64)>> = fleet::identity_kinds(&rev.fleet_units)
            .into_iter()
            .map(|k| {
                let key = (k.group, k.version, k.kind);
                self.caches.generation(&key).map(|g| (key, g))
            })
            .collect();
        if let (Some(now), Some((then, ids))) = (&stamp, &*memo)
            && now == then
        {
            return ids.clone();
        }
        let (cluster, caches) = (&self.env.cluster, Some(&*self.caches));
        let ids =
            Arc::new(fleet::live_identities_in(cluster, caches, &rev.fleet_units, read).await);
        *memo = stamp.map(|s| (s, ids.clone()) as LiveIdentities);
        ids
    }
}

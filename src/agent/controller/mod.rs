//! The controller: brings every unit of a revision to its converged state. Units are keys in a
//! work queue (`queue`); up to `--concurrency` passes run at once, one per unit; live state comes
//! from the shared caches (`cache`), whose changes wake the unit that owns the changed object
//! (`wakes`: an index, not a scan of the fleet). The per-unit work is `pass`.

pub mod cache;
pub(super) mod carry;
pub mod cycle_line;
pub(super) mod cycles;
pub mod incremental;
pub(super) mod k8s_events;
pub mod leader;
pub mod lifecycle;
pub(super) mod progress;
pub(super) mod publish;
pub mod queue;
mod scope;
pub(super) mod servers;
pub mod shard;
pub(super) mod status_page;
pub(super) mod triggers;
pub(super) mod verify;
pub mod wakes;

use crate::agent::{Agent, AgentError, Revision, pass};
use crate::apply::inventory::{self, Identity, Inventory, InventoryError};
use crate::report::{self, ObjectAction, UnitOutcome};
use cache::{Change, KindKey};
use carry::carry_actions;
use queue::{WorkQueue, Workers};
use scope::{kept_outcome, reads_what_was_rendered};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wakes::{DuringPass, Wakes};

/// How long a woken unit waits before its pass, so that the changes that follow (an Azure
/// resource's status, then the next) share one pass.
const DEBOUNCE: Duration = Duration::from_millis(100);

/// A piece of work: a unit of the revision (by index), or a unit that left git (by name).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Job {
    Unit(usize),
    Removed(String),
}

/// The kinds cached whatever the units declare: Secrets (a unit's readiness may wait on one) and
/// ConfigMaps (the inventories are read from their cache).
fn always() -> [KindKey; 2] {
    let inventories = crate::apply::inventory::config_map_key("");
    [
        (String::new(), "v1".to_string(), "Secret".to_string()),
        (inventories.group, inventories.version, inventories.kind),
    ]
}

/// Every kind the units of `rev` (this shard's) and the inventories read, and the kinds the
/// fleet-wide Azure identity check lists (every shard's).
fn kinds_of(rev: &Revision, inventories: &BTreeMap<String, Inventory>) -> BTreeSet<KindKey> {
    let prepared = || rev.units.iter().filter_map(|(_, p)| p.as_ref().ok());
    let rendered = prepared().flat_map(|p| {
        p.objects.iter().map(|o| {
            (
                o.key.group.clone(),
                o.key.version.clone(),
                o.key.kind.clone(),
            )
        })
    });
    // A live AutoNodePolicy changes the node pools of its namespace, in git or not.
    let policies = prepared()
        .any(|p| !p.node_policy_namespaces().is_empty())
        .then(|| {
            let k = crate::reconcile::aro::node_policy::list_key(None);
            (k.group, k.version, k.kind)
        });
    let inventoried = inventories.values().flat_map(|inv| {
        inv.entries
            .values()
            .map(|e| (e.id.group.clone(), e.version.clone(), e.id.kind.clone()))
    });
    let identities = crate::agent::fleet::identity_kinds(&rev.fleet_units)
        .into_iter()
        .map(|k| (k.group, k.version, k.kind));
    rendered
        .chain(identities)
        .chain(always())
        .chain(crate::agent::pass::identity_check::read_kinds())
        .chain(policies)
        .chain(inventoried)
        .collect()
}

/// The wake index of `rev`'s prepared units: what each renders and what its inventory holds
/// (the identities its clusters name may be rendered by a unit of another shard).
fn wakes_of(rev: &Revision, inventories: &BTreeMap<String, Inventory>) -> Wakes {
    let identities = crate::agent::pass::identity_check::rendered_identities(
        rev.fleet_units.iter().filter_map(|(_, p)| p.as_ref().ok()),
    );
    Wakes::new(rev.units.iter().enumerate().filter_map(|(i, (u, p))| {
        let p = p.as_ref().ok()?;
        let rendered = p.objects.iter().map(|o| Identity::from(&o.key));
        // The identities its clusters use and their Secrets: a change to one wakes them.
        let rendered = rendered.chain(
            crate::agent::pass::identity_check::watched(p, &identities)
                .into_iter()
                .map(|k| Identity::from(&k)),
        );
        let inventoried = inventories
            .get(&u.name())
            .into_iter()
            .flat_map(|inv| inv.entries.keys().cloned());
        Some((i, rendered.chain(inventoried).collect::<Vec<_>>()))
    }))
}

fn settled(o: &UnitOutcome) -> bool {
    matches!(
        report::phase(o),
        report::Phase::Converged | report::Phase::Failed
    )
}

fn deleting(o: &UnitOutcome) -> bool {
    o.objects.iter().any(|x| x.action == ObjectAction::Deleting)
}

impl Agent {
    /// Runs the units of `rev` until each has converged or failed (or `deadline`; without one,
    /// until nothing changed for an interval), woken by the caches' changes. With `earlier` (the
    /// outcomes of the revision before), a unit `rev` did not render again that had converged
    /// keeps its outcome and gets no pass unless a change of its objects wakes it.
    pub(super) async fn converge(
        &mut self,
        rev: &Revision,
        deadline: Option<Instant>,
        earlier: Option<&[UnitOutcome]>,
    ) -> Result<Vec<UnitOutcome>, AgentError> {
        let mut outcomes: Vec<UnitOutcome> = rev
            .units
            .iter()
            .map(|(u, p)| self.first_outcome(rev, u, p))
            .collect();
        self.feed_revision(rev);
        // Every unit's inventory (from the cache, or one LIST); units that left git are pruned
        // from theirs.
        let started = Instant::now();
        let phase = |what: &str| {
            tracing::debug!(
                phase = what,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "converge setup"
            );
        };
        let (mut inventories, broken) = self.inventories().await;
        phase("inventories");
        // An inventory that does not decode or that the agent does not trust: its unit is not
        // acted on (nothing applied, nothing pruned) until a person restores or deletes it.
        // With shards, a unit (in git or gone from it) is acted on by its own shard only.
        let shard = self.config.shard;
        let mut refused = crate::agent::fleet::refused(&broken);
        refused.retain(|u, _| shard.owns(u));
        // (No unit at all is an empty render of the whole repository: never pruned on.)
        let present: BTreeSet<String> = rev.fleet_units.iter().map(|(u, _)| u.name()).collect();
        let removed =
            crate::agent::controller::shard::gone_units(shard, &present, inventories.keys());
        self.caches
            .ensure(&self.env.cluster, &kinds_of(rev, &inventories))
            .await;
        self.caches.revision_watched();
        self.caches.drain().await; // what changed before is read fresh by every pass below
        phase("caches");
        let index = wakes_of(rev, &inventories);
        phase("wakes");
        // Live ASO objects no unit declares that stand for an Azure resource a unit declares.
        // The deletion guard counts them too.
        // Read from the caches again only when one of their kinds changed since the last time.
        let stamp: Option<Vec<(KindKey, u64)>> =
            crate::agent::fleet::identity_kinds(&rev.fleet_units)
                .into_iter()
                .map(|k| {
                    let key = (k.group, k.version, k.kind);
                    self.caches.generation(&key).map(|g| (key, g))
                })
                .collect();
        let live_ids = match (&stamp, &self.live_identities) {
            (Some(now), Some((then, ids))) if now == then => ids.clone(),
            _ => {
                let ids = Arc::new(
                    crate::agent::fleet::live_identities_in(
                        &self.env.cluster,
                        Some(&*self.caches),
                        &rev.fleet_units,
                    )
                    .await,
                );
                self.live_identities = stamp.map(|s| (s, ids.clone()));
                ids
            }
        };
        let mut live_conflicts =
            crate::agent::fleet::live_conflict_errors(&rev.fleet, &live_ids, &inventories);
        let fleet = (*rev.fleet).clone().with_live(&live_ids);
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
        // A converged unit the revision did not render again is settled as it was.
        let earlier: BTreeMap<&str, &UnitOutcome> = earlier
            .unwrap_or_default()
            .iter()
            .map(|o| (o.unit.as_str(), o))
            .collect();
        if !earlier.is_empty() {
            let reads_rendered = reads_what_was_rendered(rev);
            for (i, (u, p)) in rev.units.iter().enumerate() {
                let name = u.name();
                if held[i] || rev.rendered.contains(&name) {
                    continue;
                }
                let Some(mut o) = earlier
                    .get(name.as_str())
                    .and_then(|o| kept_outcome(o, &rev.commit))
                else {
                    continue;
                };
                if p.as_ref().is_ok_and(&reads_rendered) {
                    continue;
                }
                o.stale_source = rev.stale.clone();
                outcomes[i] = o;
                held[i] = true;
            }
        }
        let held = |i: usize| held[i];

        let mut progress = self.progress.take().expect("progress set");
        for (i, o) in outcomes.iter().enumerate() {
            if held(i) {
                progress.update(i, o);
                let inv = inventories.get(&rev.units[i].0.name());
                self.record_events(o, inv);
            }
        }
        let mut queue: WorkQueue<Job> =
            WorkQueue::new(crate::retry::UNIT_QUEUE, rev.units.len() as u64)
                .with_debounce(DEBOUNCE);
        for i in (0..rev.units.len()).filter(|&i| !held(i)) {
            queue.add(Job::Unit(i));
        }
        let mut removals = Vec::new();
        for unit in &removed {
            if inventories
                .get(unit)
                .is_some_and(|inv| !inv.entries.is_empty())
            {
                queue.add(Job::Removed(unit.clone()));
                removals.push(unit.clone());
            }
        }
        // Units that left git with an inventory not acted on: reported, never pruned.
        let mut removed_outcomes: BTreeMap<String, UnitOutcome> = refused
            .into_iter()
            .map(|(unit, e)| {
                let o = UnitOutcome {
                    unit: unit.clone(),
                    cluster: None,
                    revision: rev.commit.clone(),
                    stale_source: rev.stale.clone(),
                    azure: self.env.azure,
                    objects: vec![],
                    errors: vec![e],
                    standing: report::Standing::unknown(None),
                };
                (unit, o)
            })
            .collect();
        // Units settled by a pass in this call: before it, a unit is not settled, whatever its
        // first outcome says (a unit held before its first pass is settled as it is). Kept up
        // to date as passes end, so the loop never re-judges the fleet.
        let mut done: Vec<bool> = (0..outcomes.len()).map(held).collect();
        let held: Vec<bool> = done.clone();
        let mut pending = (0..outcomes.len())
            .filter(|&i| rev.units[i].1.is_ok() && !done[i])
            .count();
        let mut workers = Workers::new(self.config.concurrency);
        let mut during_pass = DuringPass::default();
        let mut quiet_since = Instant::now();
        let mut passes = 0;
        // A shutdown or a lost Lease: no new pass; those in flight may end until the deadline.
        let mut stopping: Option<(crate::agent::controller::lifecycle::Stop, Instant)> = None;
        let mut ran = vec![false; outcomes.len()];
        loop {
            let now = Instant::now();
            let past_deadline = deadline.is_some_and(|d| now >= d);
            if stopping.is_none()
                && let Some(stop) = self.stop()
            {
                tracing::info!(?stop, "no new passes: waiting for the passes in flight");
                stopping = Some((stop, stop.drain_deadline(now, self.shutdown_timeout)));
            }
            if let Some((stop, until)) = stopping {
                if workers.is_empty() {
                    break;
                }
                if now >= until {
                    // Cut short: what those passes did is not known; their reports say so.
                    let why = stop.interruption();
                    for i in (0..rev.units.len()).filter(|&i| queue.is_active(&Job::Unit(i))) {
                        tracing::warn!(unit = %outcomes[i].unit, "pass interrupted");
                        outcomes[i]
                            .errors
                            .push(report::UnitError::new(None, None, why.clone()));
                        ran[i] = true;
                        progress.update(i, &outcomes[i]);
                    }
                    for u in removals
                        .iter()
                        .filter(|u| queue.is_active(&Job::Removed((*u).clone())))
                    {
                        tracing::warn!(unit = %u, "removal interrupted");
                        let o = removed_outcomes
                            .entry(u.clone())
                            .or_insert_with(|| UnitOutcome {
                                unit: u.clone(),
                                cluster: None,
                                revision: rev.commit.clone(),
                                stale_source: rev.stale.clone(),
                                azure: self.env.azure,
                                objects: vec![],
                                errors: vec![],
                                standing: report::Standing::unknown(None),
                            });
                        o.errors
                            .push(report::UnitError::new(None, None, why.clone()));
                    }
                    break;
                }
            }
            if !past_deadline && stopping.is_none() {
                workers.fill(&mut queue, now, |job| {
                    let inv = match &job {
                        Job::Unit(i) => {
                            let name = rev.units[*i].0.name();
                            inventories
                                .remove(&name)
                                .unwrap_or_else(|| Inventory::new(&name))
                        }
                        Job::Removed(u) => {
                            inventories.remove(u).unwrap_or_else(|| Inventory::new(u))
                        }
                    };
                    self.run_job(rev, &fleet, job, inv)
                });
            }
            self.metrics.set_queue_depth(queue.len());
            let busy = !workers.is_empty() || queue.has_ready(now);
            if !busy
                && (past_deadline || (pending == 0 && !removed_outcomes.values().any(deleting)))
            {
                break;
            }
            if past_deadline && workers.is_empty() {
                break;
            }
            // Wait for a pass to end, a change, a retry's time or the deadline. A retry already
            // due waits for a free worker (a pass to end).
            let due = queue.next_due().filter(|t| *t > now);
            let wait = match (deadline.filter(|_| !past_deadline), due) {
                (Some(d), Some(t)) => d.min(t) - now,
                (Some(d), None) => d - now,
                (None, Some(t)) => t - now,
                (None, None) if past_deadline => Duration::from_secs(3600),
                (None, None) => self.config.interval,
            };
            let wait = match stopping {
                Some((_, until)) => wait.min(until.saturating_duration_since(now)),
                None => wait,
            };
            tokio::select! {
                _ = self.stop_asked(), if stopping.is_none() => {}
                (job, outcome, inv) = workers.next() => {
                    passes += 1;
                    let failed = report::phase(&outcome) == report::Phase::Failed;
                    match &job {
                        Job::Unit(i) => {
                            let mut next = outcome;
                            carry_actions(&outcomes[*i], &mut next);
                            outcomes[*i] = next;
                            ran[*i] = true;
                            let now_done = settled(&outcomes[*i]);
                            if now_done != done[*i] {
                                if now_done { pending -= 1 } else { pending += 1 }
                                done[*i] = now_done;
                            }
                            progress.update(*i, &outcomes[*i]);
                            self.record_events(&outcomes[*i], Some(&inv));
                        }
                        Job::Removed(u) => {
                            self.events.forget(u);
                            let mut next = outcome;
                            if let Some(previous) = removed_outcomes.get(u) {
                                carry_actions(previous, &mut next);
                            }
                            removed_outcomes.insert(u.clone(), next);
                        }
                    }
                    let name = match &job {
                        Job::Unit(i) => rev.units[*i].0.name(),
                        Job::Removed(u) => u.clone(),
                    };
                    inventories.insert(name, inv);
                    queue.done(&job, failed, Instant::now());
                    // Nothing here changes when a guest cluster gets better: look again.
                    if let Job::Unit(i) = job && !done[i] && crate::agent::pass::guest::waits_on_guest(&outcomes[i]) {
                        queue.add_at(job.clone(), Instant::now() + crate::agent::pass::guest::RECHECK_AFTER);
                    }
                    if let Job::Unit(i) = job && during_pass.release(i, self.env.cluster.echoes()) && !done[i] {
                        queue.wake(job, Instant::now());
                    }
                    quiet_since = Instant::now();
                }
                change = self.caches.next_change(wait) => {
                    let Some(first) = change else {
                        if deadline.is_none() && workers.is_empty() && quiet_since.elapsed() >= self.config.interval {
                            break;
                        }
                        continue;
                    };
                    quiet_since = Instant::now();
                    let mut changed = self.caches.drain().await;
                    changed.insert(first);
                    tracing::trace!(?changed, "changes seen");
                    self.wake(&changed, &index, &done, &removed_outcomes, (&mut queue, &mut during_pass));
                    // A removal before the end of its first pass has no outcome to say it is
                    // still deleting: what changes meanwhile (its own deletes) runs it again.
                    for u in removals.iter().filter(|u| !removed_outcomes.contains_key(*u)) {
                        queue.wake(Job::Removed(u.clone()), Instant::now());
                    }
                }
            }
        }
        drop(workers);
        self.passes = passes;
        self.metrics.set_queue_depth(0);
        // Stopped before their pass: nothing was done to them (their last reports stand).
        self.unreconciled.clear();
        if let Some((stop, _)) = stopping {
            for i in (0..outcomes.len()).filter(|&i| !ran[i] && !held[i]) {
                self.unreconciled.insert(outcomes[i].unit.clone());
                let why = match stop {
                    crate::agent::controller::lifecycle::Stop::Shutdown => {
                        "not reconciled: the agent shut down before this unit's pass"
                    }
                    crate::agent::controller::lifecycle::Stop::LostLease { .. } => {
                        "not reconciled: this agent lost its leader Lease before this unit's pass"
                    }
                };
                outcomes[i]
                    .errors
                    .push(report::UnitError::new(None, None, why.to_string()));
            }
        }
        progress.finish();
        self.progress = Some(progress);
        outcomes.extend(removed_outcomes.into_values());
        self.metrics.set_units(outcomes.iter().map(report::phase));
        self.feed_units(&outcomes);
        Ok(outcomes)
    }

    /// Sets up the watch caches of every kind `rev` and the inventories read, and runs no pass
    /// (a standby keeping them warm).
    pub(super) async fn warm_caches(&self, rev: &Revision) {
        let (inventories, _) = self.inventories().await;
        self.caches
            .ensure(&self.env.cluster, &kinds_of(rev, &inventories))
            .await;
        self.caches.revision_watched();
    }

    /// Every unit's inventory, and those not acted on: from the ConfigMaps' cache once it is
    /// synced and has seen the agent's own last writes, else with one LIST. When they cannot be
    /// read at all, none (nothing is pruned this round).
    async fn inventories(&self) -> (BTreeMap<String, Inventory>, Vec<InventoryError>) {
        let cluster = &self.env.cluster;
        self.caches.ensure(cluster, &always().into()).await;
        if let Some(config_maps) = self.caches.inventories(cluster).await {
            return inventory::from_config_maps(config_maps);
        }
        match inventory::read_all(cluster).await {
            Ok(found) => found,
            Err(e) => {
                tracing::error!(error = %e, "reading the inventories failed: nothing is pruned this round");
                (BTreeMap::new(), vec![])
            }
        }
    }

    /// Queues the unsettled units the changes in `changed` concern (see `wakes`; a unit whose
    /// pass runs holds them until it ends), and the removals still deleting.
    fn wake(
        &self,
        changed: &BTreeSet<Change>,
        index: &Wakes,
        done: &[bool],
        removed: &BTreeMap<String, UnitOutcome>,
        (queue, during_pass): (&mut WorkQueue<Job>, &mut DuringPass),
    ) {
        let now = Instant::now();
        for change in changed {
            // Only prepared units are in the index.
            for i in index.units(change).into_iter().filter(|&i| !done[i]) {
                if queue.is_active(&Job::Unit(i)) {
                    during_pass.hold(i, change);
                } else {
                    queue.wake(Job::Unit(i), now);
                }
            }
        }
        for (u, o) in removed {
            if deleting(o) {
                queue.wake(Job::Removed(u.clone()), now);
            }
        }
    }

    /// One pass of `job`, with its inventory; gives the inventory back.
    async fn run_job(
        &self,
        rev: &Revision,
        fleet: &crate::plan::ownership::Fleet,
        job: Job,
        mut inv: Inventory,
    ) -> (Job, UnitOutcome, Inventory) {
        let ctx = self.pass_context(rev, fleet);
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
        self.metrics.pass_ended(phase, started.elapsed());
        tracing::debug!(unit = %outcome.unit, ?phase,
            elapsed_ms = started.elapsed().as_millis() as u64, "pass done");
        (job, outcome, inv)
    }

    /// Kubernetes Events on the unit's ARO objects, when its phase (or its failure) changed;
    /// `inv`: the unit's inventory (its objects, when the pass did not render them).
    fn record_events(&self, outcome: &UnitOutcome, inv: Option<&Inventory>) {
        let cluster = &self.env.cluster;
        let known = || {
            inv.into_iter()
                .flat_map(|inv| inv.entries.values())
                .filter(|e| crate::kinds::is_aro_kind(&e.id.group, &e.id.kind))
                .map(inventory::Entry::key)
                .collect()
        };
        let uid = |key: &crate::object::ObjectKey| {
            let live = self.caches.read(cluster, key)?;
            live.iter()
                .find(|o| {
                    o.pointer("/metadata/name")
                        .and_then(serde_json::Value::as_str)
                        == Some(&key.name)
                })
                .and_then(|o| o.pointer("/metadata/uid")?.as_str().map(str::to_string))
        };
        self.events
            .pass_ended(outcome, known, cluster.client().default_namespace(), uid);
        self.feed_unit(outcome);
    }

    /// A unit's outcome before its first pass (its errors, when it could not be prepared).
    fn first_outcome(
        &self,
        rev: &Revision,
        u: &crate::unit::Unit,
        p: &Result<crate::agent::pass::prepare::Prepared, Vec<report::UnitError>>,
    ) -> UnitOutcome {
        UnitOutcome {
            unit: u.name(),
            cluster: p.as_ref().ok().and_then(|p| p.cluster.clone()),
            revision: rev.commit.clone(),
            stale_source: rev.stale.clone(),
            azure: self.env.azure,
            objects: vec![],
            errors: p.as_ref().err().cloned().unwrap_or_default(),
            standing: report::Standing::unknown(p.as_ref().ok().and_then(|p| p.cluster.as_ref())),
        }
    }
}

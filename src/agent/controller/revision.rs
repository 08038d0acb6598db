//! A revision of the source, prepared: fetched, rendered where its inputs changed (see
//! [`crate::agent::controller::incremental`]), checked fleet-wide, and cut to this agent's shard.

use crate::agent::controller::context::SourceContext;
use crate::agent::controller::{incremental, shard};
use crate::agent::pass::prepare;
use crate::agent::{AgentError, fleet};
use crate::apply::inventory::Inventory;
use crate::plan::ownership::FleetScope;
use crate::source::{Source, SyncOutcome};
use crate::unit::Unit;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// One revision, prepared.
pub(in crate::agent) struct Revision {
    pub(in crate::agent) commit: String,
    /// Where the commit's files are checked out (the status page renders failed units from it).
    pub(in crate::agent) checkout: PathBuf,
    pub(in crate::agent) stale: Option<String>,
    /// The units this agent reconciles (its shard's; see [`shard`]), as prepared, those in a
    /// conflict with another unit failed ([`fleet::check`]).
    pub(in crate::agent) units: Arc<Vec<prepare::PreparedUnit>>,
    /// Every unit of the revision, whichever shard it belongs to (the same as `units` without
    /// sharding): what is fleet-wide reads them (units gone from git, identities, live conflicts).
    pub(in crate::agent) fleet_units: Arc<Vec<prepare::PreparedUnit>>,
    /// The input closure of each unit's render (see [`incremental`]).
    pub(in crate::agent) inputs: Arc<BTreeMap<Unit, crate::render::Inputs>>,
    /// The units the fleet check failed: their own preparation is not kept for the next revision
    /// (the conflict may be gone then, with none of their inputs changed).
    pub(in crate::agent) conflicted: Arc<BTreeSet<String>>,
    /// What every unit declares (ownership's deletion guard).
    pub(in crate::agent) fleet: Arc<crate::plan::ownership::Fleet>,
    /// The units rendered for this revision (every unit the first time); the others kept their
    /// preparation from the revision before, so a unit of theirs that had converged needs no pass.
    pub(in crate::agent) rendered: Arc<BTreeSet<String>>,
    /// The revision's `rollout:` settings (see [`crate::rollout`]), when it has them.
    pub(in crate::agent) rollout: Option<Arc<crate::rollout::Rollout>>,
    /// The units a rollout holds on another commit, with it: their preparation in `units` is that
    /// commit's (see [`super::rollout`]).
    pub(in crate::agent) held_at: Arc<BTreeMap<String, String>>,
}

impl SourceContext {
    /// Runs `f` on the source, off the async workers.
    pub(in crate::agent) async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Source) -> T + Send + 'static,
    ) -> Result<T, AgentError> {
        let source = self.source.clone();
        tokio::task::spawn_blocking(move || f(&mut source.lock().expect("source lock")))
            .await
            .map_err(|e| AgentError::Task(e.to_string()))
    }

    /// Fetches the source and prepares the revision it gives: every unit the first time; after
    /// `previous`, only the units whose input closure changed since (see [`incremental`]). Also
    /// returns the paths changed since `previous` (`None`: the first revision, or not known).
    /// The revision's units are cut to `shard`'s; the fetch and the render are counted in
    /// `metrics`; `owners` says who owns each object live in the revision's fleet, which decides
    /// who fails in a conflict between units ([`fleet::check`]).
    pub(in crate::agent) async fn load(
        &self,
        previous: Option<&Revision>,
        shard: shard::Shard,
        metrics: &crate::metrics::Metrics,
        owners: impl AsyncFnOnce(&FleetScope) -> Arc<BTreeMap<String, Inventory>>,
    ) -> Result<(Revision, Option<Vec<PathBuf>>), AgentError> {
        let started = Instant::now();
        let (outcome, verification) = self
            .blocking(|s| {
                let outcome = s.sync();
                (outcome, s.verification_result().cloned())
            })
            .await?;
        tracing::debug!(
            elapsed_ms = started.elapsed().as_millis() as u64,
            "source synced"
        );
        if let Some(result) = verification {
            self.verified(metrics, result, outcome.as_ref().ok().map(|o| o.revision()));
        }
        metrics.count_fetch(match &outcome {
            Ok(SyncOutcome::Stale { .. }) => "stale",
            Ok(_) => "success",
            Err(_) => "failure",
        });
        *self.error.write().expect("source error lock") = match &outcome {
            Ok(SyncOutcome::Stale { error, .. }) => Some(error.to_string()),
            Ok(_) => None,
            Err(e) => Some(e.to_string()),
        };
        let outcome = outcome?;
        let (revision, stale) = match &outcome {
            SyncOutcome::Fresh(r) | SyncOutcome::Unchanged(r) => (r.clone(), None),
            SyncOutcome::Stale { last_good, error } if error.refusal().is_some() => {
                (last_good.clone(), Some(error.to_string()))
            }
            SyncOutcome::Stale { last_good, error } => {
                tracing::warn!(error = %error, commit = %last_good.commit, "source unreachable: using the last good revision");
                (last_good.clone(), Some(error.to_string()))
            }
        };
        let changed = match previous {
            Some(p) if p.commit == revision.commit => Some(vec![]),
            Some(p) => {
                let (from, to) = (p.commit.clone(), revision.commit.clone());
                match self.blocking(move |s| s.changed_paths(&from, &to)).await? {
                    Ok(c) => Some(c),
                    Err(e) => {
                        tracing::warn!(error = %e, "the changes between revisions are unknown: every unit renders");
                        None
                    }
                }
            }
            None => None,
        };
        tracing::debug!(
            elapsed_ms = started.elapsed().as_millis() as u64,
            "changed paths read"
        );
        if let Some(p) = previous
            && p.commit == revision.commit
        {
            let rev = Revision {
                commit: revision.commit,
                checkout: revision.checkout,
                stale,
                units: p.units.clone(),
                fleet_units: p.fleet_units.clone(),
                inputs: p.inputs.clone(),
                conflicted: p.conflicted.clone(),
                fleet: p.fleet.clone(),
                rendered: Arc::new(BTreeSet::new()),
                rollout: p.rollout.clone(),
                held_at: Arc::default(),
            };
            return Ok((rev, changed));
        }
        let root = revision.checkout.clone();
        let checkout = revision.checkout;
        let (naming, url) = &self.fleet;
        let setting = crate::unit::fleet_setting(&root).map_err(AgentError::from);
        let scope = match setting {
            Ok(setting) => naming.at(setting.as_deref(), url),
            Err(e) => return Err(self.failed_before_units(&revision.commit, e)),
        };
        let rollout = match crate::rollout::rollout_setting(&root) {
            Ok(r) => r.map(Arc::new),
            Err(e) => return Err(self.failed_before_units(&revision.commit, e.into())),
        };
        let owners = owners(&scope).await;
        tracing::debug!(
            elapsed_ms = started.elapsed().as_millis() as u64,
            "live owners read"
        );
        let (prepared, fleet, conflicted) =
            match prepare_and_check(root, previous, changed.clone(), owners, scope).await {
                Ok(prepared) => prepared,
                Err(e) => return Err(self.failed_before_units(&revision.commit, e)),
            };
        let rendered = prepared.rendered.iter().map(|(u, _)| u.name()).collect();
        metrics.rendered(prepared.rendered.len());
        let fleet_units = Arc::new(prepared.units);
        let rev = Revision {
            commit: revision.commit,
            checkout,
            stale,
            rendered: Arc::new(rendered),
            units: shard::units_of(shard, &fleet_units),
            fleet_units,
            inputs: Arc::new(prepared.inputs),
            conflicted: Arc::new(conflicted),
            fleet: Arc::new(fleet),
            rollout,
            held_at: Arc::default(),
        };
        Ok((rev, changed))
    }

    /// Commit `commit` failed before its units were known (`error`): its commit status says so.
    fn failed_before_units(&self, commit: &str, error: AgentError) -> AgentError {
        if let Some(statuses) = &self.commit_status {
            statuses.revision_failed(commit, &error.to_string());
        }
        error
    }
}

/// Prepares the revision checked out at `root` (after `previous`, only the units whose inputs
/// `changed`; see [`incremental`]) and runs the fleet check on it ([`fleet::check`], with who owns
/// what live, `owners`), off the async workers: the units, the fleet named `scope`, and the units
/// the check failed.
async fn prepare_and_check(
    root: PathBuf,
    previous: Option<&Revision>,
    changed: Option<Vec<PathBuf>>,
    owners: Arc<BTreeMap<String, Inventory>>,
    scope: FleetScope,
) -> Result<
    (
        incremental::PreparedRevision,
        crate::plan::ownership::Fleet,
        BTreeSet<String>,
    ),
    AgentError,
> {
    let earlier = previous.map(|p| {
        let inputs = if p.conflicted.is_empty() {
            p.inputs.clone()
        } else {
            let mut inputs = (*p.inputs).clone();
            inputs.retain(|u, _| !p.conflicted.contains(&u.name()));
            Arc::new(inputs)
        };
        (p.fleet_units.clone(), inputs, p.fleet.clone())
    });
    let paths = changed;
    tokio::task::spawn_blocking(move || {
        let before = earlier
            .as_ref()
            .map(|(units, _, fleet)| (units.as_slice(), &**fleet));
        let earlier = earlier
            .as_ref()
            .map(|(units, inputs, _)| incremental::Earlier {
                units,
                inputs,
                changed: paths.as_deref(),
            });
        let started = Instant::now();
        let mut prepared = incremental::prepare_revision(&root, earlier)?;
        tracing::debug!(
            elapsed_ms = started.elapsed().as_millis() as u64,
            "revision prepared"
        );
        let owner_of = fleet::owner_in(&owners);
        let (fleet, conflicted) = fleet::check(&mut prepared.units, owner_of, before);
        let fleet = fleet.named(scope);
        tracing::debug!(
            elapsed_ms = started.elapsed().as_millis() as u64,
            "fleet checked"
        );
        Ok::<_, AgentError>((prepared, fleet, conflicted))
    })
    .await
    .map_err(|e| AgentError::Task(e.to_string()))?
}

impl Revision {
    /// A revision of `units` (each unit of the fleet), for tests.
    #[cfg(test)]
    pub(super) fn of_units(units: Vec<prepare::PreparedUnit>) -> Revision {
        let units = Arc::new(units);
        Revision {
            commit: "0123456789abcdef".into(),
            checkout: Default::default(),
            stale: None,
            units: units.clone(),
            fleet_units: units,
            inputs: Arc::default(),
            conflicted: Arc::default(),
            fleet: Arc::default(),
            rendered: Arc::default(),
            rollout: None,
            held_at: Arc::default(),
        }
    }

    /// The commit `unit` runs at in this revision: the revision's own, unless a rollout holds the
    /// unit on another.
    pub(in crate::agent) fn commit_of(&self, unit: &str) -> &str {
        self.held_at.get(unit).map_or(&self.commit, String::as_str)
    }

    /// With several shards, says which of its units are `shard`'s.
    pub(in crate::agent) fn say_shard(&self, shard: shard::Shard) {
        if shard.is_partial() {
            tracing::info!(
                shard = shard.index(),
                shards = shard.count(),
                units = self.units.len(),
                fleet = self.fleet_units.len(),
                "sharded revision"
            );
            let line = shard::line(shard, self.units.len(), self.fleet_units.len());
            crate::output::println(&line);
        }
    }
}

//! The agent: source → render → plan → apply → reconcile → report, per unit, driven by git
//! revisions and by watches on live state.
//!
//! `run` prepares every unit of the current revision, passes over each until it has converged
//! or is stuck (a pass applies whatever is unblocked and never waits), is woken by watches in
//! between, and commits the reports back to git. With `once` it stops when every unit has
//! settled or the deadline passes; otherwise it keeps following the repository.

mod aro_deletion;
pub(crate) mod controller;
mod drift;
mod env;
mod failpoint;
mod fleet;
mod guest;
mod identity;
pub mod incremental;
pub mod leader;
mod lifecycle;
mod live;
mod pass;
mod plan;
mod preflight;
pub mod prepare;
mod progress;
pub mod prune;
mod status;

pub use controller::cycle::{CycleLine, Trigger as CycleTrigger};
pub use drift::{DriftReport, drift};
pub use env::{Environment, mark_simulated, simulate_azure, simulate_azure_endpoints};
pub use failpoint::FAILPOINT_ENV;
pub use lifecycle::{Lifecycle, SHUTDOWN_TIMEOUT, Shutdown, ShutdownTrigger};
pub use plan::{PlanRequest, PlanRun, RenderedNames, RenderedUnits, plan};
pub use prune::Safety;

use crate::report::{self, UnitOutcome};
use crate::source::{GitRef, Identity, ReportTarget, Source, SourceConfig, SyncOutcome};
use crate::unit::Unit;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What `aro-gitops run` was asked to do.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub repo: String,
    pub reference: GitRef,
    pub state_dir: PathBuf,
    pub kubeconfig: Option<PathBuf>,
    pub once: bool,
    /// With `once`: how long to wait for units to settle.
    pub timeout: Duration,
    /// The Azure simulator's provisioning delay (embedded control plane only).
    pub sim_delay: Duration,
    /// How often to fetch the source when following it.
    pub interval: Duration,
    pub report_target: ReportTarget,
    /// Progress bars (a terminal) instead of plain lines.
    pub progress_bars: bool,
    /// Consent and guard for deletions.
    pub safety: Safety,
    /// Re-apply objects whose live state drifted from what was applied.
    pub self_heal: bool,
    /// Look for drift on this schedule (a pass over every unit), when set.
    pub drift_interval: Option<Duration>,
    /// How many units are reconciled at once (at least one).
    pub concurrency: usize,
    /// Serve `/metrics` here (OpenMetrics text) for the life of the run, when set.
    pub metrics_bind_address: Option<std::net::SocketAddr>,
    /// Serve `/healthz` and `/readyz` here for the life of the run, when set.
    pub health_probe_bind_address: Option<std::net::SocketAddr>,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Source(Box<crate::source::SourceError>),
    #[error(transparent)]
    Units(#[from] crate::unit::UnitError),
    #[error(transparent)]
    Apply(Box<crate::apply::ApplyError>),
    #[error(transparent)]
    ControlPlane(Box<crate::controlplane::ControlPlaneError>),
    #[error("publishing reports failed: {0}")]
    Publish(Box<crate::source::SourceError>),
    #[error("background task failed: {0}")]
    Task(String),
    #[error("the metrics server could not listen on {addr}: {source}")]
    Metrics {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("the health probe server could not listen on {addr}: {source}")]
    Health {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("the simulated Azure endpoints could not start: {0}")]
    AzureEndpoints(String),
}

impl From<crate::source::SourceError> for AgentError {
    fn from(e: crate::source::SourceError) -> Self {
        AgentError::Source(Box::new(e))
    }
}

impl From<crate::apply::ApplyError> for AgentError {
    fn from(e: crate::apply::ApplyError) -> Self {
        AgentError::Apply(Box::new(e))
    }
}

impl From<crate::controlplane::ControlPlaneError> for AgentError {
    fn from(e: crate::controlplane::ControlPlaneError) -> Self {
        AgentError::ControlPlane(Box::new(e))
    }
}

/// How a run ended.
#[derive(Debug)]
pub struct RunSummary {
    pub outcomes: Vec<UnitOutcome>,
    pub reads: u64,
    pub writes: u64,
    pub report_commit: Option<String>,
    /// Units that neither converged nor failed before the deadline.
    pub timed_out: Vec<String>,
    /// Why the reports could not be committed, if they could not.
    pub report_error: Option<String>,
    /// The requests the simulated Azure endpoints served (token, Key Vault), when simulated.
    pub azure_requests: Option<crate::azuresim::https::AzureRequestTotals>,
    /// The run ended because a shutdown was asked (a signal), not on its own.
    pub shut_down: bool,
}

impl RunSummary {
    /// A unit failed (an error or a failed object) or did not settle in time.
    pub fn failed(&self) -> bool {
        !self.timed_out.is_empty()
            || self.report_error.is_some()
            || self
                .outcomes
                .iter()
                .any(|o| report::phase(o) == report::Phase::Failed)
    }
}

/// Runs the agent.
pub async fn run(config: RunConfig) -> Result<RunSummary, AgentError> {
    run_with(config, Lifecycle::default()).await
}

/// Runs the agent until it ends on its own or `lifecycle` stops it; with leader election, it
/// writes only while it leads and releases the Lease when it ends.
pub async fn run_with(config: RunConfig, lifecycle: Lifecycle) -> Result<RunSummary, AgentError> {
    let mut env = Environment::start(
        &config.state_dir,
        config.kubeconfig.as_deref(),
        Some(config.sim_delay),
    )
    .await?;
    env.detect_simulated_azure(&config.state_dir).await;
    let source = Arc::new(Mutex::new(Source::open(SourceConfig {
        url: config.repo.clone(),
        reference: config.reference.clone(),
        state_dir: config.state_dir.join("source"),
    })?));
    let keys = crate::keyvault::key_manager(&env.cluster, env.azure_sdk.clone());
    let metrics = Arc::new(crate::metrics::Metrics::new(
        env.cluster.counter().clone(),
        env.azure_request_counts(),
    ));
    let metrics_server = match config.metrics_bind_address {
        Some(addr) => {
            let server = crate::metrics::serve(metrics.clone(), addr)
                .await
                .map_err(|source| AgentError::Metrics { addr, source })?;
            crate::output::println(&format!(
                "metrics: serving on http://{}/metrics",
                server.addr
            ));
            Some(server)
        }
        None => None,
    };
    let caches = Arc::new(controller::cache::Caches::default());
    let elector = lifecycle::elect(
        lifecycle.leader_election.clone(),
        env.cluster.client(),
        &metrics,
    );
    let health_server = match config.health_probe_bind_address {
        Some(addr) => {
            let watched = caches.clone();
            let sync = Arc::new(move || watched.sync_state());
            let standing = elector.as_ref().map(|e| e.watch());
            let role =
                Arc::new(move || standing.as_ref().map(|s| crate::health::role(&s.borrow())));
            let server = crate::health::serve_with_role(sync, role, addr)
                .await
                .map_err(|source| AgentError::Health { addr, source })?;
            crate::output::println(&format!("health: serving on http://{}", server.addr));
            Some(server)
        }
        None => None,
    };
    let mut agent = Agent {
        env,
        source,
        config,
        progress: None,
        caches,
        keys,
        guests: guest::GuestClients::default(),
        metrics,
        _metrics_server: metrics_server,
        _health_server: health_server,
        elector,
        shutdown: lifecycle.shutdown,
        shutdown_timeout: lifecycle.shutdown_timeout,
        unreconciled: BTreeSet::new(),
    };
    let result = agent.run().await;
    if let Some(elector) = agent.elector.take() {
        elector.release().await;
    }
    result
}

struct Agent {
    env: Environment,
    source: Arc<Mutex<Source>>,
    config: RunConfig,
    progress: Option<progress::Progress>,
    /// Live state, for the agent's whole life (shared with the readiness probe).
    caches: Arc<controller::cache::Caches>,
    /// Where the etcd encryption keys stand (see [`crate::keyvault::key_manager`]).
    keys: Arc<dyn crate::reconcile::aro::KeyManager>,
    /// Clients of the guest clusters (the aggregated-APIServices gate).
    guests: guest::GuestClients,
    /// The process's metrics (see [`crate::metrics`]).
    metrics: Arc<crate::metrics::Metrics>,
    /// Serves them while the agent lives, with `--metrics-bind-address`.
    _metrics_server: Option<crate::metrics::Server>,
    /// Serves `/healthz` and `/readyz` while the agent lives, with `--health-probe-bind-address`.
    _health_server: Option<crate::serving::Server>,
    /// The leader election, with `--leader-elect` (see [`lifecycle`]).
    elector: Option<leader::Elector>,
    shutdown: Shutdown,
    shutdown_timeout: Duration,
    /// The units the last converge stopped before their pass (a shutdown, a lost Lease): nothing
    /// was done to them, so their last published reports stay as they are.
    unreconciled: BTreeSet<String>,
}

/// One revision, prepared.
struct Revision {
    commit: String,
    stale: Option<String>,
    /// The units as prepared, those in a conflict with another unit failed ([`fleet::check`]).
    units: Arc<Vec<prepare::PreparedUnit>>,
    /// The input closure of each unit's render (see [`incremental`]).
    inputs: Arc<BTreeMap<Unit, crate::render::Inputs>>,
    /// The units the fleet check failed: their own preparation is not kept for the next revision
    /// (the conflict may be gone then, with none of their inputs changed).
    conflicted: Arc<BTreeSet<String>>,
    /// What every unit declares (ownership's deletion guard).
    fleet: Arc<crate::plan::ownership::Fleet>,
}

impl Agent {
    async fn blocking<T: Send + 'static>(
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
    async fn load(
        &self,
        previous: Option<&Revision>,
    ) -> Result<(Revision, Option<Vec<PathBuf>>), AgentError> {
        let outcome = self.blocking(|s| s.sync()).await??;
        let (revision, stale) = match &outcome {
            SyncOutcome::Fresh(r) | SyncOutcome::Unchanged(r) => (r.clone(), None),
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
        if let Some(p) = previous
            && p.commit == revision.commit
        {
            let rev = Revision {
                commit: revision.commit,
                stale,
                units: p.units.clone(),
                inputs: p.inputs.clone(),
                conflicted: p.conflicted.clone(),
                fleet: p.fleet.clone(),
            };
            return Ok((rev, changed));
        }
        let root = revision.checkout.clone();
        let earlier = previous.map(|p| {
            let inputs = if p.conflicted.is_empty() {
                p.inputs.clone()
            } else {
                let mut inputs = (*p.inputs).clone();
                inputs.retain(|u, _| !p.conflicted.contains(&u.name()));
                Arc::new(inputs)
            };
            (p.units.clone(), inputs)
        });
        let paths = changed.clone();
        let (prepared, fleet, conflicted) = tokio::task::spawn_blocking(move || {
            let earlier = earlier
                .as_ref()
                .map(|(units, inputs)| incremental::Earlier {
                    units,
                    inputs,
                    changed: paths.as_deref(),
                });
            let mut prepared = incremental::prepare_revision(&root, earlier)?;
            let (fleet, conflicted) = fleet::check(&mut prepared.units);
            Ok::<_, AgentError>((prepared, fleet, conflicted))
        })
        .await
        .map_err(|e| AgentError::Task(e.to_string()))??;
        let rev = Revision {
            commit: revision.commit,
            stale,
            units: Arc::new(prepared.units),
            inputs: Arc::new(prepared.inputs),
            conflicted: Arc::new(conflicted),
            fleet: Arc::new(fleet),
        };
        Ok((rev, changed))
    }

    async fn run(&mut self) -> Result<RunSummary, AgentError> {
        let (mut rev, _) = self.load(None).await?;
        tracing::info!(commit = %rev.commit, units = rev.units.len(), "revision loaded");
        self.progress = Some(progress::Progress::new(
            self.config.progress_bars,
            rev.units.iter().map(|(u, _)| u.name()),
        ));
        if !self.stand_by(&mut rev).await? {
            return Ok(self.stopped(vec![], None));
        }
        let deadline = Instant::now() + self.config.timeout;
        let meter = controller::cycle::Meter::start(self.env.cluster.counter());
        let mut outcomes = self.converge(&rev, Some(deadline)).await?;
        let mut published = BTreeMap::new();
        let (commit, report_error) = match self.publish(&outcomes, &mut published).await {
            Ok(c) => (c, None),
            Err(e) => {
                tracing::error!(error = %e, "reports were not published");
                (None, Some(e.to_string()))
            }
        };
        if self.config.once || self.shutting_down() {
            let mut summary = if self.shutting_down() {
                self.stopped(outcomes, commit)
            } else {
                self.summary(outcomes, commit)
            };
            summary.report_error = report_error;
            return Ok(summary);
        }
        use controller::cycle::{Meter, Trigger};
        let counter = self.env.cluster.counter().clone();
        meter
            .line(&counter, 0, Trigger::Initial, outcomes.len())
            .report();
        // Follow the repository: fetch on an interval, re-converge on a new revision. Nothing in
        // here ends the agent: a failure is logged and tried again on the next round.
        // A pass over every unit also looks for drift; --drift-interval makes that happen on its
        // own schedule, between fetches.
        let mut next_fetch = Instant::now() + self.config.interval;
        let mut last_commit = commit;
        for cycle in 1.. {
            let next_drift = self.config.drift_interval.map(|d| Instant::now() + d);
            let wake = next_drift.map_or(next_fetch, |d| d.min(next_fetch));
            tokio::select! {
                _ = tokio::time::sleep_until(wake.into()) => {}
                _ = self.stop_asked() => {}
            }
            if self.shutting_down() {
                break;
            }
            if !self.leading() {
                tracing::warn!("not leading: standing by");
                if !self.stand_by(&mut rev).await? {
                    break;
                }
                // Leading again: the revision of now, at once.
                next_fetch = Instant::now();
            }
            let meter = Meter::start(&counter);
            if Instant::now() < next_fetch {
                tracing::info!("drift check");
                outcomes = self.converge(&rev, None).await?;
                match self.publish(&outcomes, &mut published).await {
                    Ok(c) => last_commit = c.or(last_commit),
                    Err(e) => {
                        tracing::warn!(error = %e, "reports were not published; retrying next round")
                    }
                }
                meter
                    .line(&counter, cycle, Trigger::Drift, outcomes.len())
                    .report();
                if self.shutting_down() {
                    break;
                }
                continue;
            }
            next_fetch = Instant::now() + self.config.interval;
            let previous = rev.commit.clone();
            match self.load(Some(&rev)).await {
                Ok((next, changed)) => {
                    let changed = changed.unwrap_or_default();
                    if next.commit != previous && !self.config.report_target.only_reports(&changed)
                    {
                        tracing::info!(from = %previous, to = %next.commit, "new revision");
                        rev = next;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, commit = %previous, "loading the source failed; keeping the current revision")
                }
            }
            outcomes = self.converge(&rev, None).await?;
            match self.publish(&outcomes, &mut published).await {
                Ok(c) => last_commit = c.or(last_commit),
                Err(e) => {
                    tracing::warn!(error = %e, "reports were not published; retrying next round")
                }
            }
            meter
                .line(&counter, cycle, Trigger::Source, outcomes.len())
                .report();
            if self.shutting_down() {
                break;
            }
        }
        // Only a shutdown ends the cycles: what the last converge did is published by now.
        Ok(self.stopped(outcomes, last_commit))
    }

    /// The summary of a run a shutdown ended.
    fn stopped(&self, outcomes: Vec<UnitOutcome>, commit: Option<String>) -> RunSummary {
        let mut summary = self.summary(outcomes, commit);
        summary.shut_down = true;
        // Units left unsettled by a shutdown are reported as such, not as timed out.
        summary.timed_out.clear();
        summary
    }

    /// What every pass over `rev` shares.
    fn pass_context<'a>(
        &'a self,
        rev: &'a Revision,
        fleet: &'a crate::plan::ownership::Fleet,
    ) -> pass::PassContext<'a> {
        pass::PassContext {
            cluster: &self.env.cluster,
            azure_view: &self.env.azure_view,
            azure: self.env.azure,
            revision: &rev.commit,
            stale_source: rev.stale.clone(),
            safety: self.config.safety,
            self_heal: self.config.self_heal,
            keys: self.keys.as_ref(),
            guests: &self.guests,
            azure_sdk: self.env.azure_sdk.as_deref(),
            caches: Some(&*self.caches),
            fleet,
        }
    }

    /// Commits the reports whose content changed since the last publish.
    async fn publish(
        &self,
        outcomes: &[UnitOutcome],
        published: &mut BTreeMap<PathBuf, Vec<u8>>,
    ) -> Result<Option<String>, AgentError> {
        if !self.leading() {
            tracing::warn!("not leading: reports not published (the leader publishes its own)");
            return Ok(None);
        }
        let mut files = BTreeMap::new();
        for o in outcomes
            .iter()
            .filter(|o| !self.unreconciled.contains(&o.unit))
        {
            let r = report::build(o);
            let (md, yaml) = report::outcome_paths(o);
            files.insert(md, report::to_markdown(&r).into_bytes());
            files.insert(yaml, report::to_yaml(&r).into_bytes());
        }
        if files.iter().all(|(p, b)| published.get(p) == Some(b)) {
            return Ok(None);
        }
        let target = self.config.report_target.clone();
        let short: String = outcomes
            .first()
            .map(|o| o.revision.chars().take(12).collect())
            .unwrap_or_default();
        let message = format!("aro-gitops: status of {short}");
        let to_publish = files.clone();
        let commit = match self
            .blocking(move |s| s.publish(&target, &to_publish, &message, &Identity::default()))
            .await?
        {
            Ok(commit) => commit,
            // The remote is unreachable (that is why the revision is stale): the reports wait
            // for it to come back (`published` is left as it was, so they are tried again).
            Err(e) if outcomes.iter().any(|o| o.stale_source.is_some()) => {
                tracing::warn!(error = %e, "the source is unreachable: reports not published");
                return Ok(None);
            }
            Err(e) => return Err(AgentError::Publish(Box::new(e))),
        };
        *published = files;
        if let Some(c) = &commit {
            tracing::info!(commit = %c, "reports committed");
        }
        Ok(commit)
    }

    fn summary(&self, outcomes: Vec<UnitOutcome>, report_commit: Option<String>) -> RunSummary {
        let counter = self.env.cluster.counter();
        let timed_out = outcomes
            .iter()
            .filter(|o| {
                !matches!(
                    report::phase(o),
                    report::Phase::Converged | report::Phase::Failed
                )
            })
            .map(|o| o.unit.clone())
            .collect();
        RunSummary {
            outcomes,
            reads: counter.reads(),
            writes: counter.writes(),
            report_commit,
            timed_out,
            report_error: None,
            azure_requests: self.env.azure_requests(),
            shut_down: false,
        }
    }
}

/// A run reports what it did to each object: a create or update in an earlier pass of this run
/// is not forgotten when a later pass finds the object unchanged.
fn carry_actions(previous: &UnitOutcome, next: &mut UnitOutcome) {
    use crate::report::ObjectAction;
    // A unit being removed forgets its CAPI Cluster once that is deleted: the report keeps it.
    if next.cluster.is_none() {
        next.cluster = previous.cluster.clone();
    }
    // A deletion finished in an earlier pass leaves no trace in later ones: keep it reported.
    let gone: Vec<_> = previous
        .objects
        .iter()
        .filter(|p| p.action == ObjectAction::Deleted)
        .filter(|p| !next.objects.iter().any(|o| o.key == p.key))
        .cloned()
        .collect();
    next.objects.extend(gone);
    for o in &mut next.objects {
        if o.action != ObjectAction::Unchanged {
            continue;
        }
        if let Some(p) = previous.objects.iter().find(|p| p.key == o.key)
            && matches!(
                p.action,
                ObjectAction::Created | ObjectAction::Updated | ObjectAction::Adopted
            )
        {
            o.action = p.action.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::ObjectKey;
    use crate::report::{AzureMode, ObjectAction, ObjectOutcome};

    fn outcome(actions: &[(&str, ObjectAction)]) -> UnitOutcome {
        UnitOutcome {
            unit: "u".into(),
            cluster: None,
            revision: "r".into(),
            stale_source: None,
            azure: AzureMode::Simulated,
            objects: actions
                .iter()
                .map(|(n, a)| ObjectOutcome {
                    key: ObjectKey {
                        group: String::new(),
                        version: "v1".into(),
                        kind: "ConfigMap".into(),
                        namespace: None,
                        name: n.to_string(),
                    },
                    action: a.clone(),
                    ready: true,
                    reason: None,
                    message: None,
                })
                .collect(),
            errors: vec![],
            standing: crate::report::Standing::unknown(None),
        }
    }

    #[test]
    fn earlier_creates_survive_later_unchanged_passes() {
        let first = outcome(&[
            ("a", ObjectAction::Created),
            ("b", ObjectAction::Blocked { on: vec![] }),
            ("c", ObjectAction::Updated),
        ]);
        let mut second = outcome(&[
            ("a", ObjectAction::Unchanged),
            ("b", ObjectAction::Created),
            ("c", ObjectAction::Failed),
        ]);
        carry_actions(&first, &mut second);
        let actions: Vec<_> = second.objects.iter().map(|o| o.action.clone()).collect();
        assert_eq!(
            actions,
            vec![
                ObjectAction::Created,
                ObjectAction::Created,
                ObjectAction::Failed
            ]
        );
    }
}

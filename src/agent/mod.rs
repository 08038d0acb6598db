//! The agent: source → render → plan → apply → reconcile → report, per unit, driven by git
//! revisions and by watches on live state.
//!
//! `run` prepares every unit of the current revision, passes over each until it has converged
//! or is stuck (a pass applies whatever is unblocked and never waits), is woken by watches in
//! between, and commits the reports back to git. With `once` it stops when every unit has
//! settled or the deadline passes; otherwise it keeps following the repository.

mod commands;
pub(crate) mod controller;
mod env;
mod failpoint;
mod fleet;
mod pass;
mod plan;

pub use commands::drift::{DriftReport, drift};
pub use controller::cycle_line::{CycleLine, Trigger as CycleTrigger};
pub use controller::lifecycle::{Lifecycle, SHUTDOWN_TIMEOUT, Shutdown, ShutdownTrigger};
pub use controller::shard::{Shard, ShardError};
pub use controller::{incremental, leader, shard};
pub use env::target::LiveTarget;
pub use env::{Environment, mark_simulated, simulate_azure, simulate_azure_endpoints};
pub use failpoint::FAILPOINT_ENV;
pub use pass::prune::Safety;
pub use pass::{prepare, prune};
pub use plan::{PlanRequest, PlanRun, RenderedNames, RenderedUnits, plan};

use crate::report::{self, UnitOutcome};
use crate::source::{GitRef, ReportTarget, Source, SourceConfig, SyncOutcome};
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
    /// Live state is the cluster this process runs in (`--in-cluster`; not with `kubeconfig`).
    pub in_cluster: bool,
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
    /// Serve the status page here for the life of the run, when set (see [`crate::statuspage`]).
    pub status_bind_address: Option<std::net::SocketAddr>,
    /// Receive push webhooks here for the life of the run, when set (see [`crate::trigger`]).
    pub webhook_bind_address: Option<std::net::SocketAddr>,
    /// The secret webhooks are checked against; without it every webhook is refused.
    pub webhook_secret: Option<crate::trigger::webhook::Secret>,
    /// The part of the fleet this agent reconciles (`--shard-index`, `--shard-count`).
    pub shard: Shard,
    /// Faults injected into the agent's requests (`--inject-faults`; embedded control plane only).
    pub faults: Option<crate::controlplane::faults::FaultConfig>,
    /// Apply only revisions signed by a trusted key (`--verify-signatures`, `--trusted-keys`).
    pub verify_signatures: Option<Arc<crate::source::signature::Verification>>,
    /// Where the age identities decrypting SOPS files come from (`--decryption-key-file`,
    /// `--decryption-secret`), when given.
    pub decryption: Option<crate::decrypt::keys::KeySource>,
    /// `--use-azure-simulator`: on a cluster, Azure is the simulator running against it.
    pub use_azure_simulator: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Source(Box<crate::source::SourceError>),
    #[error("state directory {}: {source}", path.display())]
    StateDir {
        path: PathBuf,
        source: std::io::Error,
    },
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
    #[error("the status page could not listen on {addr}: {source}")]
    StatusPage {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("the webhook server could not listen on {addr}: {source}")]
    Webhook {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("the simulated Azure endpoints could not start: {0}")]
    AzureEndpoints(String),
    #[error(
        "--inject-faults works only on the embedded local control plane (without --kubeconfig or --in-cluster); to inject faults into a served one, give --inject-faults to `aro-gitops control-plane serve`"
    )]
    FaultsNeedEmbedded,
    /// `--use-azure-simulator` and no simulator runs against the cluster (what to do is said).
    #[error("{0}")]
    NoAzureSimulator(String),
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
    /// The faults injected into the agent's requests, with `--inject-faults`.
    pub faults: Option<crate::controlplane::faults::FaultCounts>,
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
    env::prepare_state_dir(&config.state_dir)?;
    let target = LiveTarget::select(config.kubeconfig.as_deref(), config.in_cluster)?;
    if config.faults.is_some() && target.is_cluster() {
        return Err(AgentError::FaultsNeedEmbedded);
    }
    let mut env = Environment::start_with_faults(
        &config.state_dir,
        &target,
        Some(config.sim_delay),
        config.faults.clone(),
    )
    .await?;
    if config.use_azure_simulator {
        env.use_azure_simulator(&config.state_dir).await?;
    } else {
        env.detect_simulated_azure(&config.state_dir).await;
    }
    // In force for the whole run: the checkouts under the state directory decrypt with it.
    let _decryption = match &config.decryption {
        Some(keys) => {
            let secret = match keys.secret_key() {
                Some(key) => env.cluster.get(&key).await.map_err(|e| e.to_string()),
                None => Ok(None),
            };
            Some(crate::decrypt::register(
                &config.state_dir,
                crate::decrypt::Decryption::load(keys, secret),
            ))
        }
        None => None,
    };
    let mut source = Source::open(SourceConfig {
        url: config.repo.clone(),
        reference: config.reference.clone(),
        state_dir: config.state_dir.join("source"),
    })?;
    if let Some(verification) = &config.verify_signatures {
        source.verify_signatures(verification.clone());
    }
    let source = Arc::new(Mutex::new(source));
    let keys = crate::keyvault::key_manager(&env.cluster, env.azure_sdk.clone());
    let metrics = Arc::new(crate::metrics::Metrics::new(
        env.cluster.counter().clone(),
        env.azure_request_counts(),
    ));
    let metrics_server = controller::servers::metrics(&config, &metrics).await?;
    let caches = Arc::new(controller::cache::Caches::default());
    let events = controller::k8s_events::publish::Events::start(env.cluster.client().clone());
    let fetches = crate::trigger::FetchSignal::default();
    let source_error: Arc<std::sync::RwLock<Option<String>>> = Arc::default();
    let elector = controller::lifecycle::elect(
        lifecycle.leader_election.clone(),
        env.cluster.client(),
        &metrics,
        &fetches,
    );
    let health_server =
        controller::servers::health(&config, &caches, &source_error, elector.as_ref()).await?;
    let status_page = controller::status_page::start(&config).await?;
    let triggers = controller::triggers::start(&config, &fetches, &metrics).await?;
    let mut agent = Agent {
        env,
        source,
        config,
        progress: None,
        caches,
        keys,
        guests: pass::guest::GuestClients::default(),
        passes: 0,
        live_identities: None,
        source_error,
        metrics,
        _metrics_server: metrics_server,
        _health_server: health_server,
        status_page,
        fetches,
        _triggers: triggers,
        events,
        elector,
        shutdown: lifecycle.shutdown,
        shutdown_timeout: lifecycle.shutdown_timeout,
        unreconciled: BTreeSet::new(),
        shown_refusal: Mutex::new(None),
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
    progress: Option<controller::progress::Progress>,
    /// Live state, for the agent's whole life (shared with the readiness probe).
    caches: Arc<controller::cache::Caches>,
    /// Where the etcd encryption keys stand (see [`crate::keyvault::key_manager`]).
    keys: Arc<dyn crate::reconcile::aro::KeyManager>,
    /// Clients of the guest clusters (the aggregated-APIServices gate).
    guests: pass::guest::GuestClients,
    /// The passes the last `converge` ran (its cycle line says how many).
    passes: u64,
    /// The live Azure identities last read from the caches, with the change counts of the kinds
    /// read (read again once one moved).
    live_identities: Option<LiveIdentities>,
    /// Why the last fetch of the source failed, if it did (shown by `/readyz`).
    source_error: Arc<std::sync::RwLock<Option<String>>>,
    /// The process's metrics (see [`crate::metrics`]).
    metrics: Arc<crate::metrics::Metrics>,
    /// Serves them while the agent lives, with `--metrics-bind-address`.
    _metrics_server: Option<crate::metrics::Server>,
    /// Serves `/healthz` and `/readyz` while the agent lives, with `--health-probe-bind-address`.
    _health_server: Option<crate::serving::Server>,
    /// The status page's feed and server, with `--status-bind-address`.
    status_page: controller::status_page::StatusPage,
    /// Raised by a push webhook or a change in a local repository: fetch now.
    fetches: crate::trigger::FetchSignal,
    /// The webhook server and the local watcher raising it, while the agent lives.
    _triggers: controller::triggers::Triggers,
    /// Kubernetes Events on the clusters' ARO objects (see [`k8s_events`]).
    events: controller::k8s_events::publish::Events,
    /// The leader election, with `--leader-elect` (see [`lifecycle`]).
    elector: Option<controller::leader::Elector>,
    shutdown: Shutdown,
    shutdown_timeout: Duration,
    /// The units the last converge stopped before their pass (a shutdown, a lost Lease): nothing
    /// was done to them, so their last published reports stay as they are.
    unreconciled: BTreeSet<String>,
    /// The last refusal of `--verify-signatures` said on the terminal (said once, not each fetch).
    shown_refusal: Mutex<Option<String>>,
}

type LiveIdentities = (
    Vec<(controller::cache::KindKey, u64)>,
    Arc<
        Vec<(
            crate::object::ObjectKey,
            crate::plan::azure_identity::AzureIdentity,
        )>,
    >,
);

/// One revision, prepared.
struct Revision {
    commit: String,
    stale: Option<String>,
    /// The units this agent reconciles (its shard's; see [`shard`]), as prepared, those in a
    /// conflict with another unit failed ([`fleet::check`]).
    units: Arc<Vec<pass::prepare::PreparedUnit>>,
    /// Every unit of the revision, whichever shard it belongs to (the same as `units` without
    /// sharding): what is fleet-wide reads them (units gone from git, identities, live conflicts).
    fleet_units: Arc<Vec<pass::prepare::PreparedUnit>>,
    /// The input closure of each unit's render (see [`incremental`]).
    inputs: Arc<BTreeMap<Unit, crate::render::Inputs>>,
    /// The units the fleet check failed: their own preparation is not kept for the next revision
    /// (the conflict may be gone then, with none of their inputs changed).
    conflicted: Arc<BTreeSet<String>>,
    /// What every unit declares (ownership's deletion guard).
    fleet: Arc<crate::plan::ownership::Fleet>,
    /// The units rendered for this revision (every unit the first time); the others kept their
    /// preparation from the revision before, so a unit of theirs that had converged needs no pass.
    rendered: Arc<BTreeSet<String>>,
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
            self.verified(result, outcome.as_ref().ok().map(|o| o.revision()));
        }
        self.metrics.count_fetch(match &outcome {
            Ok(SyncOutcome::Stale { .. }) => "stale",
            Ok(_) => "success",
            Err(_) => "failure",
        });
        *self.source_error.write().expect("source error lock") = match &outcome {
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
        if let Some(p) = previous
            && p.commit == revision.commit
        {
            let rev = Revision {
                commit: revision.commit,
                stale,
                units: p.units.clone(),
                fleet_units: p.fleet_units.clone(),
                inputs: p.inputs.clone(),
                conflicted: p.conflicted.clone(),
                fleet: p.fleet.clone(),
                rendered: Arc::new(BTreeSet::new()),
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
            (p.fleet_units.clone(), inputs)
        });
        let paths = changed.clone();
        let (prepared, fleet, conflicted) = tokio::task::spawn_blocking(move || {
            let earlier =
                earlier
                    .as_ref()
                    .map(|(units, inputs)| controller::incremental::Earlier {
                        units,
                        inputs,
                        changed: paths.as_deref(),
                    });
            let started = Instant::now();
            let mut prepared = controller::incremental::prepare_revision(&root, earlier)?;
            tracing::debug!(
                elapsed_ms = started.elapsed().as_millis() as u64,
                "revision prepared"
            );
            let (fleet, conflicted) = fleet::check(&mut prepared.units);
            tracing::debug!(
                elapsed_ms = started.elapsed().as_millis() as u64,
                "fleet checked"
            );
            Ok::<_, AgentError>((prepared, fleet, conflicted))
        })
        .await
        .map_err(|e| AgentError::Task(e.to_string()))??;
        let rendered = prepared.rendered.iter().map(|(u, _)| u.name()).collect();
        self.metrics.rendered(prepared.rendered.len());
        let fleet_units = Arc::new(prepared.units);
        let rev = Revision {
            commit: revision.commit,
            stale,
            rendered: Arc::new(rendered),
            units: controller::shard::units_of(self.config.shard, &fleet_units),
            fleet_units,
            inputs: Arc::new(prepared.inputs),
            conflicted: Arc::new(conflicted),
            fleet: Arc::new(fleet),
        };
        Ok((rev, changed))
    }

    /// With several shards, says which units of `rev` are this agent's.
    fn shard_line(&self, rev: &Revision) {
        let shard = self.config.shard;
        if shard.is_partial() {
            tracing::info!(
                shard = shard.index(),
                shards = shard.count(),
                units = rev.units.len(),
                fleet = rev.fleet_units.len(),
                "sharded revision"
            );
            crate::output::println(&controller::shard::line(
                shard,
                rev.units.len(),
                rev.fleet_units.len(),
            ));
        }
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
}

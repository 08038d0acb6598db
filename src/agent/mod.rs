//! The agent: source → render → plan → apply → reconcile → report, per unit, driven by git
//! revisions and by watches on live state.
//!
//! `run` prepares every unit of the current revision, passes over each until it has converged
//! or is stuck (a pass applies whatever is unblocked and never waits), is woken by watches in
//! between, and commits the reports back to git. With `once` it stops when every unit has
//! settled or the deadline passes; otherwise it keeps following the repository.
//!
//! By role:
//! - `commands`: the CLI glue of `run` and `drift` (what each builds from its flags);
//! - `controller`: the long-running loop (revisions, the work queue, the caches and wakes,
//!   cycles, leader election, shards, and what the run serves and reports);
//! - `pass` (with its helpers in `pass/`): one pass over one unit;
//! - `plan`: `aro-gitops plan`;
//! - `env`: where live state is (a cluster, or the embedded control plane);
//! - `fleet`: the fleet-wide ownership check `run`, `plan` and `drift` share.

mod commands;
pub(crate) mod controller;
mod env;
mod failpoint;
mod fleet;
mod pass;

pub use commands::drift::{DriftReport, drift};
pub use commands::plan::{PlanRequest, PlanRun, RenderedNames, RenderedUnits, plan};
pub use commands::rollout::{ResumeError, resume as resume_rollout, resumed_line};
pub use controller::cycle_line::{CycleLine, Trigger as CycleTrigger};
pub use controller::lifecycle::{Lifecycle, SHUTDOWN_TIMEOUT, Shutdown, ShutdownTrigger};
pub use controller::shard::{Shard, ShardError};
pub use controller::{incremental, leader, rollout_record, shard};
pub use env::target::LiveTarget;
pub use env::{Environment, mark_simulated, simulate_azure, simulate_azure_endpoints};
pub use failpoint::FAILPOINT_ENV;
pub use pass::identity_check::unresolved_offline as unresolved_identities;
pub use pass::prune::Safety;
pub use pass::{prepare, prune};

pub use commands::run::{run, run_with};

use crate::report::{self, UnitOutcome};
use crate::source::{GitRef, ReportTarget};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What `aro-gitops run` was asked to do.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub repo: String,
    /// `--fleet` and `--take-over-fleet` (see [`crate::plan::ownership::scope`]).
    pub fleet: crate::plan::ownership::scope::FleetNaming,
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
    /// Look for drift on this schedule, when set: a pass over every unit a change touched since its
    /// last pass, or whose resync came due (see `controller::judged`).
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
    /// Commit statuses to post (`--commit-status`), when asked.
    pub commit_status: Option<crate::notify::commit_status::Config>,
    /// The rollout's time source (maintenance windows, soaks): the system's unless a test set it.
    pub clock: crate::rollout::Clock,
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
    #[error("{0}")]
    CommitStatus(String),
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
    pub azure_requests: Option<crate::metrics::AzureRequestTotals>,
    /// The run ended because a shutdown was asked (a signal), not on its own.
    pub shut_down: bool,
    /// The faults injected into the agent's requests, with `--inject-faults`.
    pub faults: Option<crate::controlplane::faults::FaultCounts>,
}

impl RunSummary {
    /// A unit failed (an error or a failed object) or did not settle in time, or the revision
    /// asked for was not the one applied (refused, or the source could not be fetched).
    pub fn failed(&self) -> bool {
        !self.timed_out.is_empty()
            || self.report_error.is_some()
            || self.stale_source().is_some()
            || self
                .outcomes
                .iter()
                .any(|o| report::phase(o) == report::Phase::Failed)
    }
}

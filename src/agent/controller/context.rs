//! The controller's state, cut by who reads it. `Agent` only bundles the contexts; each part of
//! the run reads the one it needs (the pass gets a [`PassContext`] built from [`LiveContext`] and
//! [`PassPolicy`], nothing more).

use crate::agent::controller::cache::{Caches, KindKey};
use crate::agent::controller::leader::Elector;
use crate::agent::controller::lifecycle::Shutdown;
use crate::agent::controller::revision::Revision;
use crate::agent::controller::shard::Shard;
use crate::agent::controller::{k8s_events, progress, status_page, triggers};
use crate::agent::env::Environment;
use crate::agent::pass::{self, guest::GuestClients, prune::Safety};
use crate::agent::{RunConfig, RunSummary};
use crate::plan::ownership::Fleet;
use crate::source::{ReportTarget, Source};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

/// A running agent: its contexts.
pub(in crate::agent) struct Agent {
    pub live: LiveContext,
    pub git: SourceContext,
    pub signals: Signals,
    pub stopping: Stopping,
    pub schedule: Schedule,
    pub pass_policy: PassPolicy,
    /// The part of the fleet this agent reconciles.
    pub shard: Shard,
    /// Where the reports are committed.
    pub report_target: ReportTarget,
    pub memo: Memo,
    /// The servers that only read the agent's state, kept while it lives.
    pub _servers: Servers,
}

/// Where live state is, and what a pass reads and writes through.
pub(in crate::agent) struct LiveContext {
    pub env: Environment,
    /// Live state, for the agent's whole life (shared with the readiness probe).
    pub caches: Arc<Caches>,
    /// Where the etcd encryption keys stand (see [`crate::reconcile::aro::key_manager`]).
    pub keys: Arc<dyn crate::reconcile::aro::KeyManager>,
    /// Clients of the guest clusters (the aggregated-APIServices gate).
    pub guests: GuestClients,
    /// The other fleets whose inventories were reported already (each is, once).
    pub foreign_said: Mutex<BTreeSet<String>>,
    /// The inventories last decoded from the ConfigMaps' cache: at which of its generations, for
    /// which fleet (decoded again once either is another).
    pub inventories_read: Mutex<Option<InventoriesRead>>,
}

/// See [`LiveContext::inventories_read`].
pub(in crate::agent) type InventoriesRead =
    (u64, String, Arc<Vec<crate::apply::inventory::Decoded>>);

/// The repository followed, and what it last said.
pub(in crate::agent) struct SourceContext {
    pub source: Arc<Mutex<Source>>,
    /// Why the last fetch of the source failed, if it did (shown by `/readyz`).
    pub error: Arc<RwLock<Option<String>>>,
    /// The last refusal of `--verify-signatures` said on the terminal (said once, not each fetch).
    pub shown_refusal: Mutex<Option<String>>,
    /// Raised by a push webhook or a change in a local repository: fetch now.
    pub fetches: crate::trigger::FetchSignal,
    /// What the flags say of fleets, and the repository's URL (the default fleet name).
    pub fleet: (crate::plan::ownership::scope::FleetNaming, String),
    /// Commit statuses (a refused revision fails on its commit), with `--commit-status`.
    pub commit_status: Option<Arc<crate::notify::commit_status::CommitStatuses>>,
}

/// What the run tells the outside as it goes.
pub(in crate::agent) struct Signals {
    /// The process's metrics (see [`crate::metrics`]).
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Kubernetes Events on the clusters' ARO objects (see [`k8s_events`]).
    pub events: k8s_events::publish::Events,
    /// The status page's feed and server, with `--status-bind-address`.
    pub status_page: status_page::StatusPage,
    /// Bars or lines as units advance (taken by a converge while it runs).
    pub progress: Option<progress::Progress>,
    /// Commit statuses, with `--commit-status` (see [`crate::notify::commit_status`]).
    pub commit_status: Option<Arc<crate::notify::commit_status::CommitStatuses>>,
}

/// How the run stops, and whether it may write.
pub(in crate::agent) struct Stopping {
    /// The leader election, with `--leader-elect` (see [`crate::agent::controller::lifecycle`]).
    pub elector: Option<Elector>,
    pub shutdown: Shutdown,
    /// How long the passes in flight may take to end once a shutdown is asked.
    pub timeout: Duration,
}

/// When the run passes, and how many passes at once.
#[derive(Debug, Clone)]
pub(in crate::agent) struct Schedule {
    /// Stop once every unit settled (or `timeout` passed).
    pub once: bool,
    pub timeout: Duration,
    /// How often to fetch the source when following it.
    pub interval: Duration,
    /// Look for drift on this schedule, when set.
    pub drift_interval: Option<Duration>,
    /// How many units are reconciled at once (at least one).
    pub concurrency: usize,
    /// Progress bars (a terminal) instead of plain lines.
    pub progress_bars: bool,
    /// The rollout's time source.
    pub clock: crate::rollout::Clock,
}

/// What a pass may do beyond applying what git says.
#[derive(Debug, Clone, Copy)]
pub(in crate::agent) struct PassPolicy {
    /// Consent and guard for deletions.
    pub safety: Safety,
    /// Re-apply objects whose live state drifted from what was applied.
    pub self_heal: bool,
}

/// What one converge leaves for the next, for the cycle's line and for the publish.
#[derive(Default)]
pub(in crate::agent) struct Memo {
    /// The passes the last `converge` ran (its cycle line says how many).
    pub passes: u64,
    /// Each unit's keys in the wake index (made again only for what changed).
    pub wake_keys: super::WakeKeys,
    /// The live Azure identities last read from the caches, with the change counts of the kinds
    /// read (read again once one moved).
    pub live_identities: Option<LiveIdentities>,
    /// The same by namespace: once a kind moved, only the namespaces it moved in are read again.
    pub identities_read: crate::agent::fleet::IdentitiesRead,
    /// The units the last converge stopped before their pass (a shutdown, a lost Lease): nothing
    /// was done to them, so their last published reports stay as they are.
    pub unreconciled: BTreeSet<String>,
    /// What a rollout in progress keeps between converges (see [`super::rollout`]).
    pub rollout: super::rollout::Rollouts,
    /// Each unit's last judgement: when it began, and whether a change came since.
    pub judged: super::judged::Judged,
    /// The fleet the last converge's deletion guard asked: the revision's, with the live
    /// identities it was given (made again only when one of them is another).
    fleet_live: Option<(Arc<Fleet>, LiveIds, Arc<Fleet>)>,
}

impl Memo {
    /// `fleet` with the live Azure identities `live` no unit declares (see [`Fleet::with_live`]):
    /// the last one made when both are the same as then.
    pub fn fleet_with_live(&mut self, fleet: &Arc<Fleet>, live: &LiveIds) -> Arc<Fleet> {
        if let Some((f, l, with)) = &self.fleet_live
            && Arc::ptr_eq(f, fleet)
            && Arc::ptr_eq(l, live)
        {
            return with.clone();
        }
        let with = Arc::new(
            (**fleet)
                .clone()
                .with_live(live.iter().flat_map(|n| n.iter())),
        );
        self.fleet_live = Some((fleet.clone(), live.clone(), with.clone()));
        with
    }
}

/// The servers kept while the agent lives (each when its flag asks for it).
pub(in crate::agent) struct Servers {
    pub _metrics: Option<crate::metrics::Server>,
    pub _health: Option<crate::serving::Server>,
    /// The webhook server and the local watcher raising fetches.
    pub _triggers: triggers::Triggers,
}

/// The live Azure identities of the fleet's kinds.
/// The live Azure identities of the fleet's kinds, by namespace.
pub(in crate::agent) type LiveIds = Arc<Vec<crate::agent::fleet::NamespaceIds>>;

pub(in crate::agent) type LiveIdentities = (Vec<(KindKey, u64)>, LiveIds);

impl Schedule {
    pub(in crate::agent) fn of(config: &RunConfig) -> Schedule {
        Schedule {
            once: config.once,
            timeout: config.timeout,
            interval: config.interval,
            drift_interval: config.drift_interval,
            concurrency: config.concurrency,
            progress_bars: config.progress_bars,
            clock: config.clock,
        }
    }
}

impl PassPolicy {
    pub(in crate::agent) fn of(config: &RunConfig) -> PassPolicy {
        PassPolicy {
            safety: config.safety,
            self_heal: config.self_heal,
        }
    }
}

impl LiveContext {
    /// What every pass over `rev` shares.
    pub(in crate::agent) fn pass_context<'a>(
        &'a self,
        policy: PassPolicy,
        rev: &'a Revision,
        fleet: &'a crate::plan::ownership::Fleet,
    ) -> pass::PassContext<'a> {
        pass::PassContext {
            cluster: &self.env.cluster,
            azure_view: &self.env.azure_view,
            azure: self.env.azure,
            revision: &rev.commit,
            stale_source: rev.stale.clone(),
            safety: policy.safety,
            self_heal: policy.self_heal,
            keys: self.keys.as_ref(),
            guests: &self.guests,
            azure_sdk: self.env.azure_sdk.as_deref(),
            caches: Some(&*self.caches),
            fleet,
        }
    }
}

impl Agent {
    /// Runs the cycles, then lets the Lease go (with leader election).
    pub(in crate::agent) async fn run_and_release(
        mut self,
    ) -> Result<RunSummary, crate::agent::AgentError> {
        let result = self.run().await;
        self.signals.flush_statuses().await;
        if let Some(elector) = self.stopping.elector.take() {
            elector.release().await;
        }
        result
    }
}

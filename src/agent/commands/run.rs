//! `aro-gitops run`: builds the agent's contexts from a [`RunConfig`] (the environment, the
//! source, the servers its flags ask for, the leader election) and hands them to the controller.

use crate::agent::controller::context::{
    Agent, LiveContext, Memo, PassPolicy, Schedule, Servers, Signals, SourceContext, Stopping,
};
use crate::agent::controller::{self, lifecycle::Lifecycle};
use crate::agent::env::{Environment, target::LiveTarget};
use crate::agent::pass::guest::GuestClients;
use crate::agent::{AgentError, RunConfig, RunSummary};
use crate::source::{Source, SourceConfig};
use std::sync::{Arc, Mutex};

/// Runs the agent.
pub async fn run(config: RunConfig) -> Result<RunSummary, AgentError> {
    run_with(config, Lifecycle::default()).await
}

/// Runs the agent until it ends on its own or `lifecycle` stops it; with leader election, it
/// writes only while it leads and releases the Lease when it ends.
pub async fn run_with(config: RunConfig, lifecycle: Lifecycle) -> Result<RunSummary, AgentError> {
    crate::agent::env::prepare_state_dir(&config.state_dir)?;
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
    let _decryption = register_decryption(&config, &env).await;
    let mut source = Source::open(SourceConfig {
        url: config.repo.clone(),
        reference: config.reference.clone(),
        state_dir: config.state_dir.join("source"),
    })?;
    if let Some(verification) = &config.verify_signatures {
        source.verify_signatures(verification.clone());
    }
    let source = Arc::new(Mutex::new(source));
    let keys = crate::reconcile::aro::key_manager(&env.cluster, env.azure_sdk.clone());
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
    let commit_status = match config.commit_status.clone() {
        Some(c) => Some(Arc::new(
            crate::notify::commit_status::CommitStatuses::start(c)
                .map_err(|e| AgentError::CommitStatus(e.to_string()))?,
        )),
        None => None,
    };
    let agent = Agent {
        live: LiveContext {
            env,
            caches,
            keys,
            guests: GuestClients::default(),
            foreign_said: Mutex::default(),
            inventories_read: Mutex::default(),
        },
        git: SourceContext {
            source,
            error: source_error,
            shown_refusal: Mutex::new(None),
            fetches,
            fleet: (config.fleet.clone(), config.repo.clone()),
            commit_status: commit_status.clone(),
        },
        signals: Signals {
            metrics,
            events,
            status_page,
            progress: None,
            commit_status,
        },
        stopping: Stopping {
            elector,
            shutdown: lifecycle.shutdown,
            timeout: lifecycle.shutdown_timeout,
        },
        schedule: Schedule::of(&config),
        pass_policy: PassPolicy::of(&config),
        shard: config.shard,
        report_target: config.report_target.clone(),
        memo: Memo::default(),
        _servers: Servers {
            _metrics: metrics_server,
            _health: health_server,
            _triggers: triggers,
        },
    };
    agent.run_and_release().await
}

/// Registers the SOPS decryption for the run's checkouts, when keys are given (the registration
/// holds while the returned guard lives).
async fn register_decryption(
    config: &RunConfig,
    env: &Environment,
) -> Option<crate::decrypt::Registration> {
    let keys = config.decryption.as_ref()?;
    let secret = match keys.secret_key() {
        Some(key) => env.cluster.get(&key).await.map_err(|e| e.to_string()),
        None => Ok(None),
    };
    let loaded = secret.as_ref().ok().and_then(Option::clone);
    let mut registration = crate::decrypt::register(
        &config.state_dir,
        crate::decrypt::Decryption::load(keys, secret),
    );
    // A rotated key is used for the next revision, without a restart.
    registration.follow_secret(env.cluster.client().clone(), keys.clone(), loaded.as_ref());
    Some(registration)
}

impl RunSummary {
    /// Why the revision asked for is not the one applied, when it is not: the source could not be
    /// fetched, or `--verify-signatures` refused the revision (the last good one served instead).
    pub fn stale_source(&self) -> Option<&str> {
        self.outcomes.iter().find_map(|o| o.stale_source.as_deref())
    }

    /// Whether a unit was left without a pass or with its pass cut short (a stop came first).
    pub fn cut_short(&self) -> bool {
        self.outcomes.iter().any(|o| {
            matches!(
                crate::report::phase(o),
                crate::report::Phase::NotStarted | crate::report::Phase::Interrupted
            )
        })
    }

    /// The summary's line about a revision that was not applied (see [`RunSummary::stale_source`]),
    /// when one was not.
    pub fn stale_line(&self) -> Option<String> {
        let stale = self.stale_source()?;
        let why = if stale.contains(crate::source::signature::REFUSED) {
            "the revision was refused: nothing of it was applied, the last applied revision was \
             used again"
        } else {
            "the source could not be fetched: the last good revision was used again"
        };
        let revision = self
            .outcomes
            .first()
            .map(|o| format!(" ({})", o.revision))
            .unwrap_or_default();
        Some(format!("failed: {why}{revision}: {stale}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{AzureMode, Standing, UnitOutcome};

    fn summary(stale: Option<&str>) -> RunSummary {
        RunSummary {
            outcomes: vec![UnitOutcome {
                rendered_at: None,
                held: None,
                unit: "clusters/dev".into(),
                cluster: None,
                revision: "0123abcd".into(),
                stale_source: stale.map(str::to_string),
                azure: AzureMode::Simulated,
                objects: vec![],
                errors: vec![],
                standing: Standing::unknown(None),
            }],
            reads: 0,
            writes: 0,
            report_commit: None,
            timed_out: vec![],
            report_error: None,
            azure_requests: None,
            shut_down: false,
            faults: None,
        }
    }

    #[test]
    fn a_run_on_a_refused_or_unfetched_revision_failed_and_says_which() {
        assert!(!summary(None).failed());
        assert_eq!(summary(None).stale_line(), None);
        let refused = format!(
            "{} abc: the commit (author A <a@example.com>) is unsigned",
            crate::source::signature::REFUSED
        );
        let s = summary(Some(&refused));
        assert!(s.failed());
        let line = s.stale_line().expect("a line");
        assert!(
            line.starts_with("failed: the revision was refused: nothing of it was applied"),
            "{line}"
        );
        assert!(
            line.contains("(0123abcd)") && line.ends_with("is unsigned"),
            "{line}"
        );
        assert!(!summary(None).cut_short());
        let mut stopped = summary(None);
        stopped.outcomes[0].standing.pass =
            crate::report::PassState::Interrupted("interrupted: shut down".into());
        assert!(stopped.cut_short());
        stopped.outcomes[0].standing = Standing::not_started("not started: shut down".into());
        assert!(stopped.cut_short());
        let s = summary(Some("fetch failed: connection refused"));
        assert!(s.failed());
        let line = s.stale_line().expect("a line");
        assert!(
            line.starts_with("failed: the source could not be fetched"),
            "{line}"
        );
    }
}

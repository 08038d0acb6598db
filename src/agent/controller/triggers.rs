//! Starting what makes a long-running run fetch before `--interval` is up (see
//! [`crate::trigger`]): the webhook server on `--webhook-bind-address`, and a watcher of `--repo`
//! when it is a local directory.

use crate::agent::{AgentError, RunConfig};
use crate::metrics::Metrics;
use crate::source::ReportTarget;
use crate::trigger::{FetchSignal, watch, webhook};
use std::sync::Arc;

/// The triggers running; they stop when dropped.
#[derive(Debug, Default)]
pub(in crate::agent) struct Triggers {
    _webhook: Option<crate::serving::Server>,
    _watcher: Option<watch::LocalWatcher>,
}

/// Starts the triggers `config` asks for (none with `once`); each raises `fetches`.
pub(in crate::agent) async fn start(
    config: &RunConfig,
    fetches: &FetchSignal,
    metrics: &Arc<Metrics>,
) -> Result<Triggers, AgentError> {
    if config.once {
        return Ok(Triggers::default());
    }
    let webhook = match config.webhook_bind_address {
        Some(addr) => {
            let receiver = webhook::Receiver {
                secret: config.webhook_secret.clone(),
                repo: config.repo.clone(),
                reference: config.reference.clone(),
            };
            let server = webhook::serve(receiver, fetches.clone(), metrics.clone(), addr)
                .await
                .map_err(|source| AgentError::Webhook { addr, source })?;
            crate::output::println(&format!("webhook: serving on http://{}", server.addr));
            Some(server)
        }
        None => None,
    };
    let watcher = watch::watched(&config.repo).and_then(|what| {
        // The agent's own writes: its state directory, and the report branch it pushes.
        let mut ignored = vec![
            std::fs::canonicalize(&config.state_dir).unwrap_or_else(|_| config.state_dir.clone()),
        ];
        if let ReportTarget::StatusBranch { branch } = &config.report_target {
            ignored.extend(what.branch_ref(branch));
        }
        match watch::watch(what, ignored, fetches.clone()) {
            Ok(w) => {
                tracing::info!(repo = %config.repo, "watching the local repository for commits");
                Some(w)
            }
            Err(e) => {
                tracing::warn!(error = %e, "the local repository is not watched: changes wait for --interval");
                None
            }
        }
    });
    Ok(Triggers {
        _webhook: webhook,
        _watcher: watcher,
    })
}

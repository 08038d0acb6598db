//! The agent's own HTTP servers that only read its state: metrics (`--metrics-bind-address`) and
//! health probes (`--health-probe-bind-address`), each started when asked and announced on stdout
//! (`metrics: serving on http://ADDR/metrics`, `health: serving on http://ADDR`). The status
//! page is [`crate::agent::controller::status_page`]'s, the webhook [`crate::agent::controller::triggers`]'.

use crate::agent::controller::cache::Caches;
use crate::agent::controller::leader::Elector;
use crate::agent::{AgentError, RunConfig};
use std::sync::{Arc, RwLock};

/// Serves `metrics` while the agent lives, when `--metrics-bind-address` is given.
pub(in crate::agent) async fn metrics(
    config: &RunConfig,
    metrics: &Arc<crate::metrics::Metrics>,
) -> Result<Option<crate::metrics::Server>, AgentError> {
    let Some(addr) = config.metrics_bind_address else {
        return Ok(None);
    };
    let server = crate::metrics::serve(metrics.clone(), addr)
        .await
        .map_err(|source| AgentError::Metrics { addr, source })?;
    crate::output::println(&format!(
        "metrics: serving on http://{}/metrics",
        server.addr
    ));
    Ok(Some(server))
}

/// Serves `/healthz` and `/readyz` while the agent lives, when `--health-probe-bind-address` is
/// given: ready once the `caches` are synced and the source fetched (`source_error`), and, with
/// leader election, saying the instance's role.
pub(in crate::agent) async fn health(
    config: &RunConfig,
    caches: &Arc<Caches>,
    source_error: &Arc<RwLock<Option<String>>>,
    elector: Option<&Elector>,
) -> Result<Option<crate::serving::Server>, AgentError> {
    let Some(addr) = config.health_probe_bind_address else {
        return Ok(None);
    };
    let watched = caches.clone();
    let fetched = source_error.clone();
    let sync = Arc::new(move || crate::health::CacheSync {
        source_error: fetched.read().expect("source error lock").clone(),
        ..watched.sync_state()
    });
    let standing = elector.map(|e| e.watch());
    let role = Arc::new(move || standing.as_ref().map(|s| s.borrow().role()));
    let server = crate::health::serve_with_role(sync, role, addr)
        .await
        .map_err(|source| AgentError::Health { addr, source })?;
    crate::output::println(&format!("health: serving on http://{}", server.addr));
    Ok(Some(server))
}

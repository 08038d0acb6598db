//! Leader election with a coordination.k8s.io/v1 Lease (`run --leader-elect`): one instance
//! leads and writes; the others stand by with warm caches and take over once the leader's Lease
//! expires.
//!
//! The [`Elector`] runs in the background: every retry period it reads the Lease and acquires,
//! renews or waits ([`decide`]), writing with the Lease's resourceVersion (a concurrent writer
//! gets a conflict, never a silent overwrite). The agent reads where it stands through
//! [`Elector::leading_at`]: leading holds only until the renew deadline of the last successful
//! renewal, so a leader that cannot renew stops dispatching before its Lease expires for others
//! (fail-stop). It then goes back to standby (and may lead again later) rather than exiting.
//! On shutdown the leader releases the Lease (no holder, one second left) so a standby takes
//! over at once.
//!
//! A push that reaches a standby (two replicas behind one Service: about half the webhooks) is
//! passed to the leader through the Lease: the standby stamps the annotation
//! [`FETCH_REQUESTED`], and the leader, which reads the Lease every retry period, fetches when the
//! stamp changes. A forwarded push so waits at most about one retry period (2 s by default).

pub mod decide;

pub use decide::Timings;

use crate::metrics::Metrics;
use crate::trigger::FetchSignal;
use decide::{Decision, Observed, Record};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, PostParams};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// The Lease annotation a standby stamps when a push reached it: the leader fetches when it
/// changes.
pub const FETCH_REQUESTED: &str = "aro-gitops.dev/fetch-requested";

/// `run --leader-elect`: which Lease, who this instance is, and the timings.
#[derive(Debug, Clone)]
pub struct LeaderElection {
    pub namespace: String,
    /// The Lease's name (`--leader-election-id`).
    pub name: String,
    /// This instance's holder identity.
    pub identity: String,
    pub timings: Timings,
}

/// A holder identity unique to this process: the host name and a random suffix (as
/// controller-runtime does), so two processes on one host never share one.
pub fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "aro-gitops".to_string());
    format!("{host}_{}", uuid::Uuid::new_v4())
}

/// Where this instance stands in the election.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Standing {
    /// Leading until this instant (the renew deadline of the last successful renewal); `None`:
    /// standing by.
    pub leading_until: Option<Instant>,
    /// When the Lease expires for the other instances (the last renewal plus the lease
    /// duration), while leading.
    pub expires: Option<Instant>,
    /// The holder last seen, when another instance.
    pub holder: Option<String>,
    /// The last attempt could read the Lease (a healthy standby).
    pub healthy: bool,
}

impl Standing {
    /// Fail-stop: leading only before the renew deadline.
    pub fn leading_at(&self, now: Instant) -> bool {
        self.leading_until.is_some_and(|t| now < t)
    }

    /// What `/readyz` says of this instance now.
    pub fn role(&self) -> crate::health::Role {
        if self.leading_at(Instant::now()) {
            crate::health::Role::Leading
        } else {
            crate::health::Role::Standby {
                holder: self.holder.clone(),
                healthy: self.healthy,
            }
        }
    }
}

/// The election running in the background for this process.
pub struct Elector {
    standing: watch::Receiver<Standing>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    config: LeaderElection,
}

impl Elector {
    /// Starts electing on `client`'s cluster; the `aro_gitops_leader` gauge follows. `fetches`
    /// is the agent's push signal: taken here while standing by (and passed to the leader
    /// through the Lease), raised here while leading when a standby passed one on.
    pub fn spawn(
        client: kube::Client,
        config: LeaderElection,
        metrics: Arc<Metrics>,
        fetches: FetchSignal,
    ) -> Elector {
        metrics.set_leader(false);
        let (tx, standing) = watch::channel(Standing::default());
        let (stop, stop_rx) = watch::channel(false);
        let api: Api<Lease> = Api::namespaced(client, &config.namespace);
        tracing::info!(identity = %config.identity, namespace = %config.namespace,
            lease = %config.name, "leader election: standing by until this instance holds the Lease");
        crate::output::println(&format!(
            "leader election: identity {}, Lease {}/{}",
            config.identity, config.namespace, config.name
        ));
        let task = tokio::spawn(elect(api, config.clone(), tx, stop_rx, metrics, fetches));
        Elector {
            standing,
            stop,
            task,
            config,
        }
    }

    pub fn standing(&self) -> Standing {
        self.standing.borrow().clone()
    }

    pub fn leading_at(&self, now: Instant) -> bool {
        self.standing.borrow().leading_at(now)
    }

    /// A receiver of the standing, for those that wait on it (the agent, `/readyz`).
    pub fn watch(&self) -> watch::Receiver<Standing> {
        self.standing.clone()
    }

    pub fn config(&self) -> &LeaderElection {
        &self.config
    }

    /// Stops electing and, when leading, releases the Lease; waits at most a renew deadline.
    pub async fn release(self) {
        let _ = self.stop.send(true);
        let wait = self.config.timings.renew_deadline;
        if tokio::time::timeout(wait, self.task).await.is_err() {
            tracing::warn!(
                "leader election: the Lease was not released in time; it expires on its own"
            );
        }
    }
}

/// Resolves when `standing` no longer leads (at once when it does not).
pub async fn lost(standing: &mut watch::Receiver<Standing>) {
    loop {
        let until = standing.borrow_and_update().leading_until;
        match until {
            Some(t) if Instant::now() < t => {
                tokio::select! {
                    _ = tokio::time::sleep_until(t.into()) => {}
                    changed = standing.changed() => if changed.is_err() { return },
                }
            }
            _ => return,
        }
    }
}

/// Resolves when `standing` leads (never, once the election stopped).
pub async fn acquired(standing: &mut watch::Receiver<Standing>) {
    loop {
        if standing.borrow_and_update().leading_at(Instant::now()) {
            return;
        }
        if standing.changed().await.is_err() {
            return std::future::pending().await;
        }
    }
}

/// What one attempt found.
enum Attempt {
    /// This instance holds the Lease (acquired or renewed).
    Held,
    /// Another instance holds it.
    Standby(Option<String>),
    /// A concurrent write won (409): nothing changed here; tried again next period.
    Conflict,
}

async fn elect(
    api: Api<Lease>,
    config: LeaderElection,
    tx: watch::Sender<Standing>,
    mut stop: watch::Receiver<bool>,
    metrics: Arc<Metrics>,
    fetches: FetchSignal,
) {
    let timings = config.timings;
    // The last push stamp seen on the Lease (`None` until it was first read).
    let mut stamp: Option<Option<String>> = None;
    let mut observed: Option<Observed> = None;
    let mut last_renewal: Option<Instant> = None;
    let mut holder: Option<String> = None;
    loop {
        let started = Instant::now();
        // A stop does not wait for a slow attempt: the release follows at once.
        let result = tokio::select! {
            r = tokio::time::timeout(
                timings.renew_deadline,
                attempt(&api, &config, &mut observed, started, &mut stamp, &fetches),
            ) => r,
            _ = stop.wait_for(|s| *s) => break,
        };
        let healthy = match result {
            Ok(Ok(Attempt::Held)) => {
                last_renewal = Some(started);
                holder = None;
                true
            }
            Ok(Ok(Attempt::Standby(h))) => {
                last_renewal = None;
                holder = h;
                true
            }
            Ok(Ok(Attempt::Conflict)) => true,
            Ok(Err(e)) => {
                tracing::warn!(error = %crate::apply::api_message(&e), lease = %config.name,
                    "leader election: the Lease could not be read or written");
                false
            }
            Err(_) => {
                tracing::warn!(lease = %config.name, "leader election: the Lease request timed out");
                false
            }
        };
        let now = Instant::now();
        let was = tx.borrow().leading_until.is_some();
        let leading = decide::still_leading(last_renewal, &timings, now);
        if !leading {
            last_renewal = None;
        }
        metrics.set_leader(leading);
        match (was, leading) {
            (false, true) => {
                tracing::info!(identity = %config.identity, "leader election: leading");
                crate::output::println("leader election: leading");
            }
            (true, false) => {
                tracing::warn!(identity = %config.identity,
                    "leader election: lost the Lease (not renewed before the renew deadline, or taken over): standing by");
                crate::output::println("leader election: lost the Lease, standing by");
            }
            _ => {}
        }
        tx.send_replace(Standing {
            leading_until: decide::leading_until(last_renewal, &timings),
            expires: last_renewal.map(|t| t + timings.lease_duration),
            holder: holder.clone(),
            healthy,
        });
        let next = started + timings.retry_period;
        let pushed = tokio::select! {
            _ = tokio::time::sleep_until(next.into()) => false,
            _ = stop.wait_for(|s| *s) => break,
            () = fetches.wanted(), if !leading => true,
        };
        // A push reached this standby: pass it to the leader.
        if pushed {
            match forward_push(&api, &config).await {
                Ok(()) => tracing::info!(lease = %config.name,
                    "standing by: a push passed to the leader through the Lease"),
                Err(e) => tracing::warn!(error = %crate::apply::api_message(&e),
                    "standing by: a push could not be passed to the leader; it fetches on its interval"),
            }
        }
    }
    if tx.borrow().leading_at(Instant::now()) {
        match tokio::time::timeout(timings.renew_deadline, release(&api, &config)).await {
            Ok(Ok(())) => {
                tracing::info!(lease = %config.name, "leader election: Lease released");
                crate::output::println("leader election: Lease released");
            }
            Ok(Err(e)) => tracing::warn!(error = %crate::apply::api_message(&e),
                "leader election: the Lease could not be released; it expires on its own"),
            Err(_) => tracing::warn!(
                "leader election: releasing the Lease timed out; it expires on its own"
            ),
        }
    }
    metrics.set_leader(false);
    tx.send_replace(Standing::default());
}

fn record_of(lease: &Lease) -> Record {
    let spec = lease.spec.clone().unwrap_or_default();
    Record {
        holder: spec.holder_identity,
        duration: Duration::from_secs(spec.lease_duration_seconds.unwrap_or(0).max(0) as u64),
        renew_time: spec.renew_time.map(|t| t.0.to_string()),
        transitions: spec.lease_transitions.unwrap_or(0),
    }
}

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

/// Whether the leader should fetch: the push stamp on the Lease changed since it was last read
/// (the first read only notes it). Updates `seen`.
fn push_forwarded(seen: &mut Option<Option<String>>, now: Option<&str>) -> bool {
    let now = now.map(str::to_string);
    let changed = matches!(seen, Some(before) if *before != now);
    *seen = Some(now);
    changed
}

/// Stamps [`FETCH_REQUESTED`] on the Lease (a merge patch of the annotation alone).
async fn forward_push(api: &Api<Lease>, config: &LeaderElection) -> Result<(), kube::Error> {
    let value = format!(
        "{} {}",
        k8s_openapi::jiff::Timestamp::now(),
        uuid::Uuid::new_v4()
    );
    let patch = serde_json::json!({ "metadata": { "annotations": { FETCH_REQUESTED: value } } });
    api.patch(
        &config.name,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&patch),
    )
    .await
    .map(|_| ())
}

/// Reads the Lease, decides, and writes what the decision says. While holding it, a push stamp
/// that changed since `stamp` raises `fetches`.
async fn attempt(
    api: &Api<Lease>,
    config: &LeaderElection,
    observed: &mut Option<Observed>,
    now: Instant,
    stamp: &mut Option<Option<String>>,
    fetches: &FetchSignal,
) -> Result<Attempt, kube::Error> {
    let lease = api.get_opt(&config.name).await?;
    let pushed = lease
        .as_ref()
        .and_then(|l| l.metadata.annotations.as_ref())
        .and_then(|a| a.get(FETCH_REQUESTED))
        .map(String::as_str);
    let forwarded = push_forwarded(stamp, pushed);
    *observed = lease
        .as_ref()
        .map(|l| decide::observe(observed.take(), record_of(l), now));
    let decision = decide::decide(observed.as_ref(), &config.identity, now);
    let transitions = decide::transitions(observed.as_ref(), &decision);
    let stamp = MicroTime(k8s_openapi::jiff::Timestamp::now());
    let held = LeaseSpec {
        holder_identity: Some(config.identity.clone()),
        lease_duration_seconds: Some(config.timings.lease_seconds()),
        acquire_time: Some(stamp.clone()),
        renew_time: Some(stamp),
        lease_transitions: Some(transitions),
        ..LeaseSpec::default()
    };
    let written = match (decision, lease) {
        (Decision::Wait { holder }, _) => return Ok(Attempt::Standby(Some(holder))),
        (Decision::Create, _) => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(config.name.clone()),
                    namespace: Some(config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(held),
            };
            api.create(&PostParams::default(), &lease).await
        }
        (Decision::Renew, Some(mut lease)) => {
            let acquired = lease.spec.as_ref().and_then(|s| s.acquire_time.clone());
            lease.spec = Some(LeaseSpec {
                acquire_time: acquired.or(held.acquire_time.clone()),
                ..held
            });
            api.replace(&config.name, &PostParams::default(), &lease)
                .await
        }
        (Decision::TakeOver { from }, Some(mut lease)) => {
            tracing::info!(
                from = from.as_deref().unwrap_or("(released)"),
                transitions,
                "leader election: taking the Lease over"
            );
            lease.spec = Some(held);
            api.replace(&config.name, &PostParams::default(), &lease)
                .await
        }
        (Decision::Renew | Decision::TakeOver { .. }, None) => unreachable!("decided on a Lease"),
    };
    match written {
        Ok(_) => {
            if forwarded {
                tracing::info!(lease = %config.name, "a push reached a standby: fetching");
                fetches.request();
            }
            Ok(Attempt::Held)
        }
        Err(e) if is_conflict(&e) => Ok(Attempt::Conflict),
        Err(e) => Err(e),
    }
}

/// Gives the Lease up when this instance still holds it: no holder, one second left.
async fn release(api: &Api<Lease>, config: &LeaderElection) -> Result<(), kube::Error> {
    let Some(mut lease) = api.get_opt(&config.name).await? else {
        return Ok(());
    };
    let Some(spec) = lease.spec.as_mut() else {
        return Ok(());
    };
    if spec.holder_identity.as_deref() != Some(config.identity.as_str()) {
        return Ok(());
    }
    spec.holder_identity = None;
    spec.lease_duration_seconds = Some(1);
    spec.renew_time = Some(MicroTime(k8s_openapi::jiff::Timestamp::now()));
    api.replace(&config.name, &PostParams::default(), &lease)
        .await
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::push_forwarded;

    #[test]
    fn the_leader_fetches_when_the_push_stamp_changes_not_on_its_first_read() {
        let mut seen = None;
        assert!(!push_forwarded(&mut seen, None), "first read: noted");
        assert!(!push_forwarded(&mut seen, None));
        assert!(
            push_forwarded(&mut seen, Some("t1")),
            "a standby stamped it"
        );
        assert!(
            !push_forwarded(&mut seen, Some("t1")),
            "the same stamp again"
        );
        assert!(push_forwarded(&mut seen, Some("t2")));
        let mut seen = None;
        assert!(
            !push_forwarded(&mut seen, Some("old")),
            "a stamp from before this instance led is not a push"
        );
    }
}

//! How a run stops and when it may write: the shutdown a signal asks for (the process's edge,
//! `main.rs`, feeds a [`Shutdown`]) and the leader election ([`crate::agent::controller::leader`]).
//!
//! Either one stops the converge loop from dispatching new passes; the passes in flight get a
//! bounded time to end (`--shutdown-timeout`; after a lost Lease, until it expires for the
//! others), then are cut short and reported as interrupted. A standby loads each revision and
//! keeps the watch caches of its kinds warm, and runs no pass.

use crate::agent::AgentError;
use crate::agent::controller::context::{Agent, Stopping};
use crate::agent::controller::leader::{self, Elector, LeaderElection};
use crate::agent::controller::revision::Revision;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// What a run is given besides its [`crate::agent::RunConfig`]: how it is told to stop and whether it
/// elects a leader.
#[derive(Debug, Clone)]
pub struct Lifecycle {
    pub shutdown: Shutdown,
    /// How long the passes in flight may take to end once a shutdown is asked.
    pub shutdown_timeout: Duration,
    /// Lead through a Lease (`--leader-elect`), when set.
    pub leader_election: Option<LeaderElection>,
}

/// The default of `--shutdown-timeout`.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(25);

impl Default for Lifecycle {
    fn default() -> Self {
        Lifecycle {
            shutdown: Shutdown::never(),
            shutdown_timeout: SHUTDOWN_TIMEOUT,
            leader_election: None,
        }
    }
}

/// Whether a shutdown was asked (a watch channel's receiving end).
#[derive(Debug, Clone)]
pub struct Shutdown {
    asked: watch::Receiver<bool>,
    /// Keeps the channel open when nothing else can ask ([`Shutdown::never`]).
    _keep: Option<Arc<watch::Sender<bool>>>,
}

/// Asks for the shutdown (held by whatever watches the signals).
#[derive(Debug)]
pub struct ShutdownTrigger(watch::Sender<bool>);

impl ShutdownTrigger {
    pub fn ask(&self) {
        self.0.send_replace(true);
    }
}

impl Shutdown {
    pub fn channel() -> (ShutdownTrigger, Shutdown) {
        let (tx, asked) = watch::channel(false);
        (ShutdownTrigger(tx), Shutdown { asked, _keep: None })
    }

    /// A shutdown nobody can ask for (library callers that end with `once`).
    pub fn never() -> Shutdown {
        let (tx, asked) = watch::channel(false);
        Shutdown {
            asked,
            _keep: Some(Arc::new(tx)),
        }
    }

    pub fn asked(&self) -> bool {
        *self.asked.borrow()
    }

    /// Resolves once a shutdown is asked (never when the asking end is gone without asking).
    pub async fn wait(&self) {
        let mut rx = self.asked.clone();
        if rx.wait_for(|a| *a).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Why the converge loop stops dispatching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) enum Stop {
    Shutdown,
    /// The Lease was lost: the passes in flight may end until it expires for the others.
    LostLease {
        expires: Option<Instant>,
    },
}

impl Stop {
    /// Until when the passes in flight may run, from `now` when the stop is first seen.
    pub(in crate::agent) fn drain_deadline(
        &self,
        now: Instant,
        shutdown_timeout: Duration,
    ) -> Instant {
        match self {
            Stop::Shutdown => now + shutdown_timeout,
            Stop::LostLease { expires } => expires.map_or(now, |e| e.max(now)),
        }
    }

    /// What an interrupted unit's report says.
    pub(in crate::agent) fn interruption(&self) -> String {
        match self {
            Stop::Shutdown => "interrupted: the agent shut down before this unit's pass ended (--shutdown-timeout); it is reconciled again when an agent next runs".to_string(),
            Stop::LostLease { .. } => "interrupted: this agent lost its leader Lease before this unit's pass ended; the new leader reconciles it".to_string(),
        }
    }
}

impl Stopping {
    /// Whether this instance may write now (always, without election).
    pub(in crate::agent) fn leading(&self) -> bool {
        self.elector
            .as_ref()
            .is_none_or(|e| e.leading_at(Instant::now()))
    }

    pub(in crate::agent) fn shutting_down(&self) -> bool {
        self.shutdown.asked()
    }

    /// Whether the converge loop has to stop dispatching, and why.
    pub(in crate::agent) fn stop(&self) -> Option<Stop> {
        if self.shutting_down() {
            return Some(Stop::Shutdown);
        }
        let e = self.elector.as_ref()?;
        let standing = e.standing();
        (!standing.leading_at(Instant::now())).then_some(Stop::LostLease {
            expires: standing.expires,
        })
    }

    /// Resolves when a shutdown is asked or the Lease is lost.
    pub(in crate::agent) async fn stop_asked(&self) {
        let lost = async {
            match &self.elector {
                Some(e) => leader::lost(&mut e.watch()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = self.shutdown.wait() => {}
            _ = lost => {}
        }
    }
}

impl Agent {
    /// Stands by until this instance leads: loads each revision as it comes and keeps the
    /// watch caches of its kinds warm, writes nothing. `false`: a shutdown was asked first.
    pub(in crate::agent) async fn stand_by(
        &mut self,
        rev: &mut Revision,
    ) -> Result<bool, AgentError> {
        let Some(elector) = &self.stopping.elector else {
            return Ok(!self.stopping.shutting_down());
        };
        let mut standing = elector.watch();
        let mut warmed: Option<String> = None;
        let mut next_fetch = Instant::now() + self.schedule.interval;
        let mut next_leader_read = Instant::now();
        loop {
            if self.stopping.shutting_down() {
                return Ok(false);
            }
            if self.stopping.leading() {
                return Ok(true);
            }
            if warmed.as_deref() != Some(rev.commit.as_str()) {
                self.live.warm_caches(rev).await;
                tracing::info!(commit = %rev.commit, "standing by: revision loaded, caches warm");
                self.signals.feed_revision(rev);
                warmed = Some(rev.commit.clone());
            }
            // The page shows what the leader reports meanwhile (its status branch, fetched on the
            // schedule of the source).
            if Instant::now() >= next_leader_read {
                next_leader_read = Instant::now() + self.schedule.interval;
                let holder = standing.borrow().holder.clone();
                self.show_leader(holder).await;
            }
            // What the caches saw is read fresh by the first pass after taking over.
            self.live.caches.drain().await;
            tokio::select! {
                _ = leader::acquired(&mut standing) => {}
                _ = self.stopping.shutdown.wait() => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
            if Instant::now() >= next_fetch {
                next_fetch = Instant::now() + self.schedule.interval;
                match (self.git)
                    .load(
                        Some(rev),
                        self.shard,
                        &self.signals.metrics,
                        async |scope| self.live.owners(scope).await,
                    )
                    .await
                {
                    Ok((next, _)) => *rev = next,
                    Err(e) => {
                        tracing::warn!(error = %e, "standing by: loading the source failed; keeping the current revision")
                    }
                }
            }
        }
    }
}

/// Starts the election when asked to.
pub(in crate::agent) fn elect(
    config: Option<LeaderElection>,
    client: &kube::Client,
    metrics: &Arc<crate::metrics::Metrics>,
    fetches: &crate::trigger::FetchSignal,
) -> Option<Elector> {
    config.map(|c| Elector::spawn(client.clone(), c, metrics.clone(), fetches.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_in_flight_get_the_shutdown_timeout_or_until_the_lease_expires() {
        let now = Instant::now();
        let timeout = Duration::from_secs(25);
        assert_eq!(Stop::Shutdown.drain_deadline(now, timeout), now + timeout);
        let expires = now + Duration::from_secs(4);
        let lost = Stop::LostLease {
            expires: Some(expires),
        };
        assert_eq!(lost.drain_deadline(now, timeout), expires);
        // Already expired, or never held: no time at all.
        assert_eq!(
            lost.drain_deadline(expires + timeout, timeout),
            expires + timeout
        );
        let never = Stop::LostLease { expires: None };
        assert_eq!(never.drain_deadline(now, timeout), now);
        assert!(Stop::Shutdown.interruption().starts_with("interrupted: "));
        assert!(lost.interruption().starts_with("interrupted: "));
    }

    #[tokio::test]
    async fn a_shutdown_is_asked_once_and_seen_by_every_clone() {
        let (trigger, shutdown) = Shutdown::channel();
        let seen = shutdown.clone();
        assert!(!shutdown.asked());
        let waiting = tokio::spawn(async move { seen.wait().await });
        trigger.ask();
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("the wait ends")
            .expect("no panic");
        assert!(shutdown.asked());
        // Nobody can ask this one: it never ends, and its channel stays open.
        let never = Shutdown::never();
        let waited = tokio::time::timeout(Duration::from_millis(50), never.wait()).await;
        assert!(waited.is_err() && !never.asked());
    }
}

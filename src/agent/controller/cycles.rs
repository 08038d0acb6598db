//! The cycles of a long-running `run` (and the one of `--once`): the initial sync, then a fetch
//! on each `--interval` or push, a drift check on each `--drift-interval`, until a shutdown; with
//! leader election, standing by while another instance leads. Each cycle ends with its line (see
//! [`super::cycle_line`]) and the reports published.

use crate::agent::controller::context::Agent;
use crate::agent::controller::cycle_line::{Meter, Trigger};
use crate::agent::controller::progress;
use crate::agent::controller::publish::Published;
use crate::agent::controller::revision::Revision;
use crate::agent::{AgentError, RunSummary};
use crate::report::UnitOutcome;
use std::time::{Duration, Instant};

/// The least time between the start of a fetch and that of a fetch a push triggers after it: a
/// flood of pushes of different commits makes the fetch it first triggers and then at most one per
/// spacing (deliveries of one push are served by the fetch that brought its commit, see
/// [`crate::trigger::FetchSignal::served_by`]), while a single push waits for no one.
const TRIGGER_SPACING: Duration = Duration::from_millis(500);

impl Agent {
    /// Runs the cycles: until every unit settled with `--once`, else until a shutdown.
    pub(in crate::agent) async fn run(&mut self) -> Result<RunSummary, AgentError> {
        let (mut rev, _) = (self.git)
            .load(None, self.shard, &self.signals.metrics, async |scope| {
                self.live.owners(scope).await
            })
            .await?;
        tracing::info!(commit = %rev.commit, units = rev.units.len(), "revision loaded");
        rev.say_shard(self.shard);
        self.signals.progress = Some(progress::Progress::new(
            self.schedule.progress_bars,
            rev.units.iter().map(|(u, _)| u.name()),
        ));
        if !self.stand_by(&mut rev).await? {
            return Ok(self.live.stopped(vec![], None));
        }
        let deadline = Instant::now() + self.schedule.timeout;
        let meter = Meter::start(self.live.env.cluster.counter());
        let outcomes = self.roll(&rev, Some(deadline), None, None).await?;
        let mut published = Published::default();
        let (commit, report_error) = match self.publish(&outcomes, &mut published).await {
            Ok(c) => (c, None),
            Err(e) => {
                tracing::error!(error = %e, "reports were not published");
                (None, Some(e.to_string()))
            }
        };
        if self.schedule.once || self.stopping.shutting_down() {
            self.signals.events.flush(Duration::from_secs(10)).await;
            let mut summary = if self.stopping.shutting_down() {
                self.live.stopped(outcomes, commit)
            } else {
                self.live.summary(outcomes, commit)
            };
            summary.report_error = report_error;
            return Ok(summary);
        }
        let counter = self.live.env.cluster.counter().clone();
        let cycle = (outcomes.len(), self.memo.passes);
        meter.line(&counter, 0, Trigger::Initial, cycle).report();
        self.follow(rev, outcomes, published, commit).await
    }

    /// Follows the repository: fetches on an interval, converges again on a new revision.
    /// Nothing in here ends the agent (but a shutdown): a failure is logged and tried again next
    /// round. A converge over the same revision also looks for drift (passing over the units a
    /// change touched, or whose resync came due); --drift-interval makes that happen on its own
    /// schedule, between fetches. A push (a webhook, a commit in a local repository)
    /// fetches at once: requests coalesce into one (see `crate::trigger`), and a pushed fetch
    /// starts TRIGGER_SPACING after the previous fetch at the earliest.
    async fn follow(
        &mut self,
        mut rev: Revision,
        mut outcomes: Vec<UnitOutcome>,
        mut published: Published,
        mut last_commit: Option<String>,
    ) -> Result<RunSummary, AgentError> {
        let counter = self.live.env.cluster.counter().clone();
        let mut next_fetch = Instant::now() + self.schedule.interval;
        let mut last_fetch = Instant::now();
        // After standing by, the outcomes are not those of the revision before: every unit passes.
        let mut outcomes_current = true;
        for cycle in 1.. {
            let next_drift = self.schedule.drift_interval.map(|d| Instant::now() + d);
            let wake = next_drift.map_or(next_fetch, |d| d.min(next_fetch));
            // A soak ending or a window opening: the rollout is decided again then.
            let wake = match self.memo.rollout.next_check {
                Some(at) => wake.min(Instant::now() + self.schedule.clock.until(at)),
                None => wake,
            };
            let pushed = tokio::select! {
                () = tokio::time::sleep_until(wake.into()) => false,
                () = self.git.fetches.wanted() => true,
                _ = self.stopping.stop_asked() => false,
            };
            if self.stopping.shutting_down() {
                break;
            }
            if !self.stopping.leading() {
                tracing::warn!("not leading: standing by");
                if !self.stand_by(&mut rev).await? {
                    break;
                }
                // Leading again: the revision of now, at once.
                next_fetch = Instant::now();
                outcomes_current = false;
            }
            if pushed {
                tokio::time::sleep_until((last_fetch + TRIGGER_SPACING).into()).await;
            }
            let meter = Meter::start(&counter);
            let trigger = if !pushed && Instant::now() < next_fetch {
                Trigger::Drift
            } else {
                Trigger::Source
            };
            // A new revision passes over the units it rendered again (and those not converged);
            // the same revision, and a drift check, look at every unit (see `judged`).
            let mut scoped = false;
            if trigger == Trigger::Drift {
                tracing::info!("drift check");
            } else {
                // This fetch serves every request made until now.
                self.git.fetches.take();
                last_fetch = Instant::now();
                next_fetch = last_fetch + self.schedule.interval;
                scoped = self.fetch(&mut rev).await && outcomes_current;
            }
            if pushed && !scoped && outcomes_current {
                // A push that brought no new revision (a flood's late requests, another branch
                // moved): nothing to pass over; drift is looked for on its own schedule.
                tracing::info!(commit = %rev.commit, "the push brought no new revision");
                self.memo.passes = 0;
            } else {
                // The outcomes before: moved into the converge (those it keeps) and replaced.
                let before = (scoped || outcomes_current).then_some(outcomes.as_mut_slice());
                // A converge over the same revision corrects drift (windows permitting).
                let (earlier, drift) = match scoped {
                    true => (before, None),
                    false => (None, before),
                };
                outcomes = self.roll(&rev, None, earlier, drift).await?;
                outcomes_current = true;
                match self.publish(&outcomes, &mut published).await {
                    Ok(c) => last_commit = c.or(last_commit),
                    Err(e) => {
                        tracing::warn!(error = %e, "reports were not published; retrying next round")
                    }
                }
            }
            let cycle_units = (outcomes.len(), self.memo.passes);
            meter.line(&counter, cycle, trigger, cycle_units).report();
            if self.stopping.shutting_down() {
                break;
            }
        }
        // Only a shutdown ends the cycles: what the last converge did is published by now.
        self.signals.events.flush(Duration::from_secs(10)).await;
        Ok(self.live.stopped(outcomes, last_commit))
    }

    /// Fetches the source and takes the revision it gives into `rev`: `true` when it is a new
    /// revision to pass over (one that changed more than the reports).
    async fn fetch(&mut self, rev: &mut Revision) -> bool {
        let previous = rev.commit.clone();
        let loaded = (self.git)
            .load(
                Some(rev),
                self.shard,
                &self.signals.metrics,
                async |scope| self.live.owners(scope).await,
            )
            .await;
        match loaded {
            Ok((next, changed)) => {
                // Requests made during the fetch for the commit it brought are served
                // (a flood of deliveries of one push: one fetch).
                self.git.fetches.served_by(&next.commit);
                let changed = changed.unwrap_or_default();
                if next.commit != previous && !self.report_target.only_reports(&changed) {
                    tracing::info!(from = %previous, to = %next.commit, rendered = next.rendered.len(), "new revision");
                    self.memo.rollout.advance(rev, &next);
                    *rev = next;
                    rev.say_shard(self.shard);
                    return true;
                }
                if next.commit == previous
                    && next.stale != rev.stale
                    && [&next.stale, &rev.stale]
                        .into_iter()
                        .flatten()
                        .any(|s| s.contains(crate::source::signature::REFUSED))
                {
                    // A refused revision (or the end of a refusal) on the revision in
                    // force: the reports say so from this pass on.
                    rev.stale = next.stale;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, commit = %previous, "loading the source failed; keeping the current revision")
            }
        }
        false
    }

    /// Publishes the reports of `outcomes` when this instance leads, but those of the units the
    /// converge stopped before their pass (their last reports stand); tells the status page.
    async fn publish(
        &self,
        outcomes: &[UnitOutcome],
        published: &mut Published,
    ) -> Result<Option<String>, AgentError> {
        if !self.stopping.leading() {
            tracing::warn!("not leading: reports not published (the leader publishes its own)");
            return Ok(None);
        }
        let reported = (outcomes.iter())
            .filter(|o| !self.memo.unreconciled.contains(&o.unit))
            .collect();
        let target = &self.report_target;
        let commit = (self.git)
            .publish(target, self.shard, outcomes, reported, published)
            .await?;
        if let Some(c) = &commit {
            self.signals.feed_published(c);
        }
        Ok(commit)
    }
}

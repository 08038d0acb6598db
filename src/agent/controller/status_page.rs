//! Feeding the status page (`--status-bind-address`, see [`crate::statuspage`]) from where the
//! outcomes are produced: each revision's cluster annotations and what its failed units render,
//! each pass, each converge's end, each publish and each rollout decision (with the metrics and
//! the RolloutPaused Event, [`Signals::rollout`]); while standing by, the leader's reports on
//! the status branch. Nothing here reads the cluster or the remote (the status branch is read
//! from the local mirror the syncs fetch into).

use crate::agent::controller::context::{Agent, Signals};
use crate::agent::controller::revision::Revision;
use crate::agent::{AgentError, RunConfig};
use crate::report::UnitOutcome;
use crate::rollout::RolloutView;
use crate::statuspage::{Feed, History, RenderedObject, annotations_of};
use crate::unit::Unit;
use std::collections::BTreeMap;
use std::path::Path;

/// The status page's feed and server, when `--status-bind-address` is given.
pub(in crate::agent) type StatusPage = Option<(Feed, crate::serving::Server)>;

/// Starts the status page of `config`, when asked, reading the history of reports from the
/// source's local mirror.
pub(in crate::agent) async fn start(config: &RunConfig) -> Result<StatusPage, AgentError> {
    let Some(addr) = config.status_bind_address else {
        return Ok(None);
    };
    let mirror = crate::source::mirror_path(&config.state_dir.join("source"));
    let feed = Feed::new(Some(History::new(mirror, config.report_target.clone())));
    let server = crate::statuspage::serve(feed.clone(), addr)
        .await
        .map_err(|source| AgentError::StatusPage { addr, source })?;
    crate::output::println(&format!("status page: serving on http://{}/", server.addr));
    Ok(Some((feed, server)))
}

impl Agent {
    /// While standing by, with a status page: fetches the status branch into the local mirror
    /// (a sync fetches only the source's own revisions from a local repository) and shows the
    /// fleet as the leader `holder` reports it there.
    pub(in crate::agent) async fn show_leader(&self, holder: Option<String>) {
        if self.signals.feed().is_none() {
            return;
        }
        let target = self.report_target.clone();
        match self.git.blocking(move |s| s.published(&target, &[])).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "standing by: the status branch could not be fetched")
            }
            Err(e) => tracing::warn!(error = %e, "standing by: fetching the status branch failed"),
        }
        self.signals.feed_leader(holder).await;
    }
}

impl Signals {
    fn feed(&self) -> Option<&Feed> {
        self.status_page.as_ref().map(|(feed, _)| feed)
    }

    /// The annotations of each unit's CAPI Cluster in `rev`, as rendered.
    pub(in crate::agent) fn feed_revision(&self, rev: &Revision) {
        let Some(feed) = self.feed() else { return };
        let annotations: BTreeMap<String, BTreeMap<String, String>> = rev
            .units
            .iter()
            .filter_map(|(unit, prepared)| {
                let p = prepared.as_ref().ok()?;
                let key = p.cluster.as_ref()?;
                let cluster = p.objects.iter().find(|o| &o.key == key)?;
                Some((unit.name(), annotations_of(&cluster.object())))
            })
            .collect();
        feed.annotate(annotations);
        let failed = rendered_units(rev);
        if failed.is_empty() {
            return;
        }
        // Rendered again off the async workers (only the units that failed this revision).
        let feed = feed.clone();
        let root = rev.checkout.clone();
        tokio::task::spawn_blocking(move || feed.rendered(render_failed(&root, failed)));
    }

    /// While standing by: the fleet as the leader reports it, read from the status branch in the
    /// local mirror when its tip moved (or the leader changed).
    async fn feed_leader(&self, holder: Option<String>) {
        let Some(feed) = self.feed() else { return };
        if feed.history().is_none() {
            return;
        }
        let feed = feed.clone();
        let read = tokio::task::spawn_blocking(move || {
            let history = feed.history().expect("history present");
            let shown = feed.snapshot().leader.clone();
            let tip = history.tip()?;
            if shown.is_some_and(|l| l.commit == tip && l.holder == holder) {
                return Ok(());
            }
            let published = match tip {
                Some(_) => history.published()?,
                None => None,
            };
            feed.leader(published, holder);
            Ok::<_, crate::statuspage::HistoryError>(())
        })
        .await;
        match read {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "standing by: the leader's reports could not be read")
            }
            Err(e) => {
                tracing::warn!(error = %e, "standing by: reading the leader's reports failed")
            }
        }
    }

    /// A unit's pass ended (or its outcome stands as it was).
    pub(in crate::agent) fn feed_unit(&self, outcome: &UnitOutcome) {
        if let Some(feed) = self.feed() {
            feed.unit(outcome);
        }
    }

    /// A converge ended with `outcomes`: every unit the agent reports.
    pub(in crate::agent) fn feed_units(&self, outcomes: &[UnitOutcome]) {
        if let Some(feed) = self.feed() {
            feed.units(outcomes);
        }
    }

    /// Where the newest revision's rollout stands (`None`: no rollout), for everything that shows
    /// it: the metrics (`aro_gitops_rollout_wave`, `aro_gitops_rollout_paused`), the status page's
    /// rollout view, and the `RolloutPaused` Event, once per newly paused rollout. Call it after
    /// each rollout decision; the Lease record is written apart
    /// ([`crate::agent::rollout_record::record_paused`]).
    pub(in crate::agent) fn rollout(&self, view: Option<&RolloutView>) {
        self.metrics.rollout(view);
        if let Some(feed) = self.feed() {
            feed.rollout(view);
        }
        self.events.rollout(view);
    }

    /// The reports were committed as `commit`.
    pub(in crate::agent) fn feed_published(&self, commit: &str) {
        if let Some(feed) = self.feed() {
            feed.published(commit);
        }
    }
}

/// The units of `rev` rendered for it, each with whether its preparation failed: those that
/// failed are rendered again for their page; the others no longer have one.
fn rendered_units(rev: &Revision) -> Vec<(Unit, bool)> {
    rev.units
        .iter()
        .filter(|(u, _)| rev.rendered.contains(&u.name()))
        .map(|(u, p)| (u.clone(), p.is_err()))
        .collect()
}

/// What each unit of `units` that failed renders at `root` (none when the render itself fails),
/// and `None` for those that prepared.
fn render_failed(
    root: &Path,
    units: Vec<(Unit, bool)>,
) -> BTreeMap<String, Option<Vec<RenderedObject>>> {
    units
        .into_iter()
        .map(|(u, failed)| {
            let objects = failed
                .then(|| crate::render::render(root, &u.path).ok())
                .flatten()
                .map(|o| crate::statuspage::rendered_objects(&o));
            (u.name(), objects)
        })
        .collect()
}

//! Feeding the status page (`--status-bind-address`, see [`crate::statuspage`]) from where the
//! outcomes are produced: each revision's cluster annotations, each pass, each converge's end
//! and each publish. Nothing here reads the cluster or the remote.

use crate::agent::controller::context::Signals;
use crate::agent::controller::revision::Revision;
use crate::agent::{AgentError, RunConfig};
use crate::report::UnitOutcome;
use crate::statuspage::{Feed, History, annotations_of};
use std::collections::BTreeMap;

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
                Some((unit.name(), annotations_of(&cluster.object)))
            })
            .collect();
        feed.annotate(annotations);
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

    /// The reports were committed as `commit`.
    pub(in crate::agent) fn feed_published(&self, commit: &str) {
        if let Some(feed) = self.feed() {
            feed.published(commit);
        }
    }
}

//! What a cycle ends with: the reports committed back to git, and the run's summary.

use super::{Agent, AgentError, RunSummary};
use crate::report::{self, UnitOutcome};
use crate::source::Identity;
use std::collections::BTreeMap;
use std::path::PathBuf;

impl Agent {
    /// Commits the reports whose content changed since the last publish.
    pub(super) async fn publish(
        &self,
        outcomes: &[UnitOutcome],
        published: &mut BTreeMap<PathBuf, Vec<u8>>,
    ) -> Result<Option<String>, AgentError> {
        if !self.leading() {
            tracing::warn!("not leading: reports not published (the leader publishes its own)");
            return Ok(None);
        }
        let mut files = BTreeMap::new();
        for o in outcomes
            .iter()
            .filter(|o| !self.unreconciled.contains(&o.unit))
        {
            let r = report::build(o);
            let (md, yaml) = report::outcome_paths(o);
            files.insert(md, report::to_markdown(&r).into_bytes());
            files.insert(yaml, report::to_yaml(&r).into_bytes());
        }
        if files.iter().all(|(p, b)| published.get(p) == Some(b)) {
            return Ok(None);
        }
        let target = self.config.report_target.clone();
        let short: String = outcomes
            .first()
            .map(|o| o.revision.chars().take(12).collect())
            .unwrap_or_default();
        let shard = self.config.shard;
        let message = if shard.is_partial() {
            format!("aro-gitops: status of {short} ({shard})")
        } else {
            format!("aro-gitops: status of {short}")
        };
        let to_publish = files.clone();
        let commit = match self
            .blocking(move |s| s.publish(&target, &to_publish, &message, &Identity::default()))
            .await?
        {
            Ok(commit) => commit,
            // The remote is unreachable (that is why the revision is stale): the reports wait
            // for it to come back (`published` is left as it was, so they are tried again).
            Err(e) if outcomes.iter().any(|o| o.stale_source.is_some()) => {
                tracing::warn!(error = %e, "the source is unreachable: reports not published");
                return Ok(None);
            }
            Err(e) => return Err(AgentError::Publish(Box::new(e))),
        };
        *published = files;
        if let Some(c) = &commit {
            tracing::info!(commit = %c, "reports committed");
        }
        Ok(commit)
    }

    pub(super) fn summary(
        &self,
        outcomes: Vec<UnitOutcome>,
        report_commit: Option<String>,
    ) -> RunSummary {
        let counter = self.env.cluster.counter();
        let timed_out = outcomes
            .iter()
            .filter(|o| {
                !matches!(
                    report::phase(o),
                    report::Phase::Converged | report::Phase::Failed
                )
            })
            .map(|o| o.unit.clone())
            .collect();
        RunSummary {
            outcomes,
            reads: counter.reads(),
            writes: counter.writes(),
            report_commit,
            timed_out,
            report_error: None,
            azure_requests: self.env.azure_requests(),
            shut_down: false,
            faults: self
                .env
                .control_plane
                .as_ref()
                .and_then(|cp| cp.faults_injected()),
        }
    }

    /// The summary of a run a shutdown ended.
    pub(super) fn stopped(&self, outcomes: Vec<UnitOutcome>, commit: Option<String>) -> RunSummary {
        let mut summary = self.summary(outcomes, commit);
        summary.shut_down = true;
        // Units left unsettled by a shutdown are reported as such, not as timed out.
        summary.timed_out.clear();
        summary
    }
}

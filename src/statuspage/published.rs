//! The fleet as the leader reports it, for a standby's page: the reports the leader committed to
//! the status branch, read from this instance's own mirror (its syncs fetch every branch), and
//! turned back into the [`ClusterReport`]s the page shows. Reading is IO ([`History::published`]);
//! turning YAML into reports is pure ([`report_of`]).

use super::history::{History, HistoryError};
use crate::report::{
    Action, AzureMode, Chain, ChainStep, ClusterRef, ClusterReport, ObjectConditions, Phase,
    ReportCondition, ReportError, ReportObject, StepState,
};
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

/// The reports on the status branch at one commit.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    /// The status branch's tip.
    pub commit: String,
    /// Its commit time (Unix seconds).
    pub time: i64,
    /// Every report there that this version reads, by unit.
    pub reports: Vec<ClusterReport>,
}

impl History {
    /// The status branch's tip in the mirror (`None`: nothing published yet). Blocking.
    pub fn tip(&self) -> Result<Option<String>, HistoryError> {
        let repo = git2::Repository::open_bare(&self.mirror).map_err(|e| self.failed(e))?;
        match repo.refname_to_id(&self.remote_ref()) {
            Ok(oid) => Ok(Some(oid.to_string())),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
            Err(e) => Err(self.failed(e)),
        }
    }

    /// Every report on the status branch at its tip in the mirror (`None`: nothing published
    /// yet). Blocking: call from a blocking task.
    pub fn published(&self) -> Result<Option<Published>, HistoryError> {
        let failed = |e: git2::Error| self.failed(e);
        let repo = git2::Repository::open_bare(&self.mirror).map_err(failed)?;
        let tip = match repo.refname_to_id(&self.remote_ref()) {
            Ok(oid) => oid,
            Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
            Err(e) => return Err(failed(e)),
        };
        let commit = repo.find_commit(tip).map_err(failed)?;
        let dir = self.target.repo_path(Path::new(crate::report::REPORTS_DIR));
        let tree = commit.tree().map_err(failed)?;
        let mut reports = Vec::new();
        let Ok(entry) = tree.get_path(&dir) else {
            return Ok(Some(Published {
                commit: tip.to_string(),
                time: commit.time().seconds(),
                reports,
            }));
        };
        let reports_tree = repo.find_tree(entry.id()).map_err(failed)?;
        reports_tree
            .walk(git2::TreeWalkMode::PreOrder, |_, e| {
                let yaml = e.name().is_ok_and(|n| n.ends_with(".yaml"));
                if yaml
                    && e.kind() == Some(git2::ObjectType::Blob)
                    && let Ok(blob) = repo.find_blob(e.id())
                    && let Some(report) = std::str::from_utf8(blob.content())
                        .ok()
                        .and_then(|t| crate::yaml::from_str(t).ok())
                        .and_then(|v| report_of(&v))
                {
                    reports.push(report);
                }
                git2::TreeWalkResult::Ok
            })
            .map_err(failed)?;
        reports.sort_by(|a, b| a.unit.cmp(&b.unit));
        Ok(Some(Published {
            commit: tip.to_string(),
            time: commit.time().seconds(),
            reports,
        }))
    }
}

/// A report's `held` (see [`crate::report::Held`]).
#[derive(Deserialize)]
struct WireHeld {
    newest: String,
    why: String,
}

/// A report as the status branch holds it (`schemas/report.schema.json`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    api_version: String,
    kind: String,
    unit: String,
    cluster: Option<WireCluster>,
    revision: String,
    stale_source: Option<String>,
    #[serde(default)]
    held: Option<WireHeld>,
    azure: String,
    phase: String,
    pass: Option<String>,
    chain: WireChain,
    #[serde(default)]
    objects: Vec<WireObject>,
    #[serde(default)]
    conditions: Vec<WireConditions>,
    #[serde(default)]
    errors: Vec<WireError>,
}

#[derive(Deserialize)]
struct WireCluster {
    namespace: String,
    name: String,
}

#[derive(Deserialize)]
struct WireChain {
    step: u32,
    total: u32,
    stage: String,
    #[serde(default)]
    steps: Vec<WireStep>,
}

#[derive(Deserialize)]
struct WireStep {
    step: u32,
    done: bool,
    state: String,
    detail: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireObject {
    api_version: String,
    kind: String,
    namespace: Option<String>,
    name: String,
    action: String,
    #[serde(default)]
    blocked_on: Vec<String>,
    ready: bool,
    reason: Option<String>,
    message: Option<String>,
}

#[derive(Deserialize)]
struct WireConditions {
    object: String,
    conditions: Vec<WireCondition>,
}

#[derive(Deserialize)]
struct WireCondition {
    #[serde(rename = "type")]
    type_: String,
    status: String,
    reason: Option<String>,
    message: Option<String>,
}

#[derive(Deserialize)]
struct WireError {
    object: Option<String>,
    file: Option<String>,
    line: Option<usize>,
    column: Option<usize>,
    message: String,
}

const ACTIONS: [Action; 12] = [
    Action::Created,
    Action::Updated,
    Action::Unchanged,
    Action::Blocked,
    Action::Failed,
    Action::Deleted,
    Action::Adopted,
    Action::Skipped,
    Action::Drifted,
    Action::Deleting,
    Action::DeletionBlocked,
    Action::Kept,
];

const STATES: [(StepState, &str); 4] = [
    (StepState::Done, "done"),
    (StepState::Waiting, "waiting"),
    (StepState::Failed, "failed"),
    (StepState::NotApplicable, "notApplicable"),
];

/// The report `value` holds, when it is one this version reads (its apiVersion and kind, its
/// phase, each object's action and each step of the chain known); `None` otherwise.
pub fn report_of(value: &Value) -> Option<ClusterReport> {
    let w: Wire = serde_json::from_value(value.clone()).ok()?;
    if w.api_version != crate::report::model::REPORT_API_VERSION
        || w.kind != crate::report::model::REPORT_KIND
    {
        return None;
    }
    let phase = Phase::ALL.into_iter().find(|p| p.as_str() == w.phase)?;
    let azure = match w.azure.as_str() {
        "simulated" => AzureMode::Simulated,
        "real" => AzureMode::Real,
        _ => return None,
    };
    let steps = w
        .chain
        .steps
        .into_iter()
        .map(|s| {
            let name = crate::report::chain::STEP_NAMES.get(s.step.checked_sub(1)? as usize)?;
            let state = STATES.iter().find(|(_, n)| *n == s.state)?.0;
            Some(ChainStep {
                step: s.step,
                name,
                done: s.done,
                state,
                detail: s.detail,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    let objects = w
        .objects
        .into_iter()
        .map(|o| {
            let action = ACTIONS.into_iter().find(|a| a.as_str() == o.action)?;
            Some(ReportObject {
                api_version: o.api_version,
                kind: o.kind,
                namespace: o.namespace,
                name: o.name,
                action,
                blocked_on: o.blocked_on,
                ready: o.ready,
                reason: o.reason,
                message: o.message,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    let conditions = w
        .conditions
        .into_iter()
        .map(|c| ObjectConditions {
            object: c.object,
            conditions: c
                .conditions
                .into_iter()
                .map(|c| ReportCondition {
                    type_: c.type_,
                    status: c.status,
                    reason: c.reason,
                    message: c.message,
                })
                .collect(),
        })
        .collect();
    let errors = w
        .errors
        .into_iter()
        .map(|e| ReportError {
            object: e.object,
            file: e.file,
            line: e.line,
            column: e.column,
            message: e.message,
        })
        .collect();
    Some(ClusterReport {
        api_version: crate::report::model::REPORT_API_VERSION,
        kind: crate::report::model::REPORT_KIND,
        unit: w.unit,
        cluster: w.cluster.map(|c| ClusterRef {
            namespace: c.namespace,
            name: c.name,
        }),
        revision: w.revision,
        stale_source: w.stale_source,
        held: w.held.map(|h| crate::report::Held {
            newest: h.newest,
            why: h.why,
        }),
        azure,
        phase,
        pass: w.pass,
        chain: Chain {
            step: w.chain.step,
            total: w.chain.total,
            stage: w.chain.stage,
            steps,
        },
        objects,
        conditions,
        errors,
    })
}

#[cfg(test)]
#[path = "published_tests.rs"]
mod tests;

//! What a report is made from (the outcome of one unit's reconcile pass, filled by the agent) and what
//! it is made into (the [`ClusterReport`], serialised as `schemas/report.schema.json` describes).
//!
//! The report types hold no timestamps and nothing else that changes between two passes over the same
//! state, and never a Secret's data: only identities, actions, readiness and messages.

use super::chain::Chain;
use crate::object::ObjectKey;
use serde::Serialize;
use std::path::PathBuf;

/// Which Azure answered the embedded resources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AzureMode {
    /// The agent's built-in simulator: results must never be presented as real.
    Simulated,
    Real,
}

/// What the pass did to one object.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ObjectAction {
    Created,
    Updated,
    Unchanged,
    /// Not applied: waiting for these objects first.
    Blocked {
        on: Vec<ObjectKey>,
    },
    Failed,
    Deleted,
    /// Live and not created by the agent: taken over (its first apply).
    Adopted,
    /// Policy `skip`: read and reported, never written.
    Skipped,
    /// Live differs from what the agent last applied, and `--self-heal` is off: left as it is.
    Drifted,
    /// Left git; the delete was sent and the object is still going.
    Deleting,
    /// Left git, but its deletion needs consent (the outcome's reason says why).
    DeletionBlocked,
    /// Left git under policy `skip`: never deleted; the agent stops tracking it.
    Kept,
}

/// One object of the unit and what happened to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectOutcome {
    pub key: ObjectKey,
    pub action: ObjectAction,
    pub ready: bool,
    pub reason: Option<String>,
    pub message: Option<String>,
}

/// A problem of the unit, with the object and file it concerns where known.
///
/// `message` says what is wrong in the user's words, without the file or the object (they have
/// their own fields). Every sink shows an error through [`UnitError`]'s `Display` (`file:line:column:
/// Kind/namespace/name: message`, redacted), or [`failure_block`] for a whole unit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnitError {
    pub object: Option<ObjectKey>,
    /// Repository-relative.
    pub file: Option<PathBuf>,
    /// 1-based line in `file`, when known.
    pub line: Option<usize>,
    /// 1-based column in `file`, when known.
    pub column: Option<usize>,
    pub message: String,
}

impl UnitError {
    pub fn new(object: Option<ObjectKey>, file: Option<PathBuf>, message: String) -> UnitError {
        UnitError {
            object,
            file,
            line: None,
            column: None,
            message,
        }
    }

    /// The same error at `line` and `column` of its file.
    pub fn at(mut self, line: Option<usize>, column: Option<usize>) -> UnitError {
        self.line = line;
        self.column = column.filter(|_| line.is_some());
        self
    }

    /// `file`, `file:line` or `file:line:column` (`/` separators), when the file is known.
    pub fn location(&self) -> Option<String> {
        let file = self.file_name()?;
        Some(crate::object::file_position(&file, self.line, self.column))
    }

    /// The file, with `/` separators.
    pub fn file_name(&self) -> Option<String> {
        Some(self.file.as_ref()?.to_string_lossy().replace('\\', "/"))
    }

    /// What is wrong, redacted, without a leading repetition of the file or the object (some
    /// messages are built as `Kind/ns/name (file): ...`): each is said once, in its own place.
    pub fn text(&self) -> String {
        let mut text = self.message.trim();
        let file = self
            .file
            .as_ref()
            .map(|f| f.to_string_lossy().replace('\\', "/"));
        let object = self.object.as_ref().map(ToString::to_string);
        for _ in 0..2 {
            if let Some(o) = &object
                && let Some(rest) = text.strip_prefix(o.as_str())
            {
                let rest = match (&file, rest.strip_prefix(" (")) {
                    (Some(f), Some(r)) => r
                        .strip_prefix(f.as_str())
                        .and_then(|r| r.strip_prefix(')'))
                        .unwrap_or(rest),
                    _ => rest,
                };
                if let Some(rest) = rest.strip_prefix(": ") {
                    text = rest;
                }
            }
            if let Some(f) = &file
                && let Some(rest) = text.strip_prefix(f.as_str())
                && let Some(rest) = rest.strip_prefix(": ")
            {
                text = rest;
            }
        }
        crate::redact::scrub(text).into_owned()
    }
}

impl std::fmt::Display for UnitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(location) = self.location() {
            write!(f, "{location}: ")?;
        }
        if let Some(object) = &self.object {
            write!(f, "{object}: ")?;
        }
        f.write_str(&self.text())
    }
}

/// The block a failed unit prints on the terminal and in the log: the unit, then one line per
/// error (`file:line:column: Kind/namespace/name: message`).
pub fn failure_block(unit: &str, errors: &[UnitError]) -> String {
    let count = match errors.len() {
        1 => "1 error".to_string(),
        n => format!("{n} errors"),
    };
    let mut out = format!("error: {unit} failed ({count}):\n");
    for e in errors {
        out.push_str(&format!("  {}\n", e.to_string().replace('\n', "\n    ")));
    }
    out
}

/// Everything one reconcile pass of one unit produced, as the report needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitOutcome {
    /// Repository-relative unit path, e.g. `clusters/dev`.
    pub unit: String,
    /// The unit's CAPI Cluster; `None` if the unit failed before one was known.
    pub cluster: Option<ObjectKey>,
    /// The commit the unit is on: the newest, or the one a rollout holds it on (see `held`).
    pub revision: String,
    /// When a commit after the one whose rendering of the unit is applied left that rendering as
    /// it was (the unit kept its converged outcome): that earlier commit, which its report goes on
    /// naming. `None`: `revision`'s rendering is the one applied.
    pub rendered_at: Option<String>,
    /// `Some(reason)` when the source was unreachable and the last good revision was used.
    pub stale_source: Option<String>,
    pub azure: AzureMode,
    /// In apply order.
    pub objects: Vec<ObjectOutcome>,
    pub errors: Vec<UnitError>,
    /// Where the cluster stood on its dependency chain at the end of the pass, and its ARO
    /// objects' conditions.
    pub standing: super::standing::Standing,
    /// Why the unit is not on the newest revision: a rollout holds it where it is.
    pub held: Option<Held>,
}

impl UnitOutcome {
    /// The commit the unit's report names: the one whose rendering of the unit is applied.
    pub fn reported_revision(&self) -> &str {
        self.rendered_at.as_deref().unwrap_or(&self.revision)
    }
}

/// A unit a rollout holds on the revision it is on (see [`crate::rollout`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Held {
    /// The newest revision, which the unit does not take yet.
    pub newest: String,
    /// Why, in the user's words ("waiting for wave dev to converge").
    pub why: String,
}

/// Where a cluster stands overall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Phase {
    /// Every object ready, no error.
    Converged,
    /// Not everything ready yet, nothing blocked or failed.
    Progressing,
    /// Some object waits for another one.
    Blocked,
    /// An error, a failed object, or a failed step on the dependency chain: a person has to look.
    Failed,
    /// No pass reached the unit (the run's deadline passed, or the agent stopped first): nothing
    /// of the revision was applied to it, and nothing is known of it.
    NotStarted,
    /// The unit's pass was cut short: what it did is not known; the chain shows the step it had
    /// reached before.
    Interrupted,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Converged => "Converged",
            Phase::Progressing => "Progressing",
            Phase::Blocked => "Blocked",
            Phase::Failed => "Failed",
            Phase::NotStarted => "NotStarted",
            Phase::Interrupted => "Interrupted",
        }
    }

    /// Every phase, in the order people read them (what needs a look first).
    pub const ALL: [Phase; 6] = [
        Phase::Failed,
        Phase::Interrupted,
        Phase::NotStarted,
        Phase::Blocked,
        Phase::Progressing,
        Phase::Converged,
    ];
}

/// The machine-readable report of one cluster (or of a unit that failed before its cluster was known).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterReport {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub unit: String,
    /// `None` when the unit failed before its cluster was known.
    pub cluster: Option<ClusterRef>,
    pub revision: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale_source: Option<String>,
    /// Present when a rollout holds the cluster on `revision`: the newest revision and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<Held>,
    pub azure: AzureMode,
    pub phase: Phase,
    /// Why no pass reached the unit, or why its pass was cut short (phases `NotStarted` and
    /// `Interrupted`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass: Option<String>,
    pub chain: Chain,
    pub objects: Vec<ReportObject>,
    /// The ARO objects' conditions, in chain order; empty lists are left out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<super::standing::ObjectConditions>,
    pub errors: Vec<ReportError>,
}

/// The `apiVersion` of [`ClusterReport`].
pub const REPORT_API_VERSION: &str = "aro-gitops.dev/v1alpha1";
/// The `kind` of [`ClusterReport`].
pub const REPORT_KIND: &str = "ClusterReport";

/// The CAPI Cluster a report is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClusterRef {
    pub namespace: String,
    pub name: String,
}

/// The action of one object, as the report spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    Created,
    Updated,
    Unchanged,
    Blocked,
    Failed,
    Deleted,
    Adopted,
    Skipped,
    Drifted,
    Deleting,
    DeletionBlocked,
    Kept,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Created => "created",
            Action::Updated => "updated",
            Action::Unchanged => "unchanged",
            Action::Blocked => "blocked",
            Action::Failed => "failed",
            Action::Deleted => "deleted",
            Action::Adopted => "adopted",
            Action::Skipped => "skipped",
            Action::Drifted => "drifted",
            Action::Deleting => "deleting",
            Action::DeletionBlocked => "deletionBlocked",
            Action::Kept => "kept",
        }
    }
}

/// One object in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportObject {
    pub api_version: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    pub action: Action,
    /// `Kind/namespace/name` of what a blocked object waits for; sorted, without repeats.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocked_on: Vec<String>,
    pub ready: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One error in the report.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ReportError {
    /// `Kind/namespace/name`, or null when no object is concerned.
    pub object: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// 1-based line in `file`, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// 1-based column in `file`, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    pub message: String,
}

#[cfg(test)]
mod unit_error_tests {
    use super::*;

    #[test]
    fn file_and_object_are_said_once() {
        let object = ObjectKey {
            group: "example.com".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            namespace: Some("aro-dev".into()),
            name: "gadget".into(),
        };
        let e = UnitError::new(
            Some(object),
            Some(PathBuf::from("clusters/dev/widget.yaml")),
            "Widget/aro-dev/gadget (clusters/dev/widget.yaml): no kind Widget".into(),
        )
        .at(Some(3), Some(1));
        assert_eq!(
            e.to_string(),
            "clusters/dev/widget.yaml:3:1: Widget/aro-dev/gadget: no kind Widget"
        );
        let e = UnitError::new(None, Some(PathBuf::from("a.yaml")), "a.yaml: bad".into());
        assert_eq!(e.to_string(), "a.yaml: bad");
        assert_eq!(
            failure_block("clusters/dev", &[e.clone(), e]),
            "error: clusters/dev failed (2 errors):\n  a.yaml: bad\n  a.yaml: bad\n"
        );
    }
}

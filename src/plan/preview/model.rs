//! What a plan preview says, independent of how it is shown: the data `aro-gitops plan` computes
//! and the Markdown, JSON and terminal renderings read. `schemas/plan.schema.json` describes the
//! JSON form of [`Preview`]; a test keeps the two in step.
//!
//! Secret values never enter this model: diffs of Secrets carry markers instead of values.

use serde::{Deserialize, Serialize};

/// Version of the JSON form; bumped when a field changes meaning or goes away.
pub const FORMAT_VERSION: u32 = 1;

/// The whole preview of one plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Preview {
    pub format_version: u32,
    /// The repository as given on the command line.
    pub repo: String,
    /// The revision the change starts from (absent when planning one revision against live state).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<Revision>,
    pub head: Revision,
    /// What the head revision was compared with.
    pub against: Against,
    /// One line saying what was compared with what, e.g. "the cluster in ~/.kube/config".
    pub against_description: String,
    /// One entry per cluster (unit), in unit order.
    pub clusters: Vec<ClusterPreview>,
    /// Notes on the fleet: other fleets found on the cluster and left alone, a fleet taken over.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    /// Errors not tied to one cluster (e.g. the unit list could not be read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<Problem>,
    /// How the head revision would roll out over the fleet (head's `rollout:`), when it changes
    /// units through waves or a unit waits for its maintenance window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutPreview>,
}

/// The rollout of the head revision, as the plan foresees it from the base (every unit on base).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutPreview {
    /// The waves in order (the implicit last one `rest`), each with the changed units it holds.
    pub waves: Vec<WavePreview>,
    /// Units whose maintenance window is closed now, in unit order.
    #[serde(default)]
    pub waiting_for_window: Vec<WindowWait>,
}

/// One wave of a rollout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WavePreview {
    pub name: String,
    /// Its units the head revision changes (through what they share), in unit order.
    pub units: Vec<String>,
}

/// A unit waiting for its maintenance window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowWait {
    pub unit: String,
    /// When the window opens (RFC 3339, UTC); absent when it does not within a year.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opens_at: Option<String>,
}

impl WindowWait {
    /// `opens at 2026-11-30 00:00 UTC` (or `no opening within a year`), as people read it.
    pub fn opening(&self) -> String {
        let at = self
            .opens_at
            .as_deref()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&chrono::Utc));
        match (at, &self.opens_at) {
            (None, Some(raw)) => format!("opens at {raw}"),
            (at, _) => crate::rollout::decide::window_opening(at),
        }
    }
}

impl RolloutPreview {
    /// The units waiting for a window, grouped by when it opens (in order of first appearance).
    pub fn window_groups(&self) -> Vec<(String, Vec<&str>)> {
        let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
        for w in &self.waiting_for_window {
            let opening = w.opening();
            match groups.iter_mut().find(|(o, _)| *o == opening) {
                Some((_, units)) => units.push(&w.unit),
                None => groups.push((opening, vec![&w.unit])),
            }
        }
        groups
    }
}

/// A git revision: what the user named and the commit it resolved to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Revision {
    pub reference: String,
    pub commit: String,
}

/// The other side of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Against {
    /// Live state of a reachable cluster (deletions come from the agent's inventory).
    Live,
    /// The base revision's render (no cluster was reachable or none was given).
    Base,
}

/// The preview of one cluster (one unit of the repository).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterPreview {
    /// Repository-relative unit path, e.g. `clusters/dev`.
    pub unit: String,
    /// The unit's CAPI Cluster as `namespace/name`, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    pub counts: Counts,
    /// Creates, updates and deletes, in the order they would be applied; no-ops are not listed.
    pub changes: Vec<Change>,
    /// Deletions the plan will not do, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked_deletions: Vec<BlockedDeletion>,
    /// Objects that exist but were not created by aro-gitops and that it takes over.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adopted: Vec<Adoption>,
    /// What reconcile policies change about the plan.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy_effects: Vec<PolicyEffect>,
    /// Values the agent fills in itself that the plan cannot know yet (the etcd key's version
    /// before the key exists): the changes show the objects without them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_values: Vec<PendingValue>,
    /// Render and validation errors: a cluster with errors is not planned (and never pruned).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<Problem>,
}

impl ClusterPreview {
    /// True when applying would change something (blocked deletions change nothing).
    pub fn has_changes(&self) -> bool {
        self.counts.create + self.counts.update + self.counts.delete > 0
    }
}

/// How many objects each action touches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    pub create: usize,
    pub update: usize,
    pub delete: usize,
    pub unchanged: usize,
    pub blocked: usize,
    pub adopted: usize,
}

/// An object's identity as a reader wants it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl std::fmt::Display for ObjectRef {
    /// `Kind/namespace/name`, or `Kind/name` for cluster-scoped objects.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{}/{}/{}", self.kind, ns, self.name),
            None => write!(f, "{}/{}", self.kind, self.name),
        }
    }
}

impl From<&crate::object::ObjectKey> for ObjectRef {
    fn from(k: &crate::object::ObjectKey) -> Self {
        ObjectRef {
            api_version: k.api_version(),
            kind: k.kind.to_string(),
            namespace: k.namespace.as_deref().map(str::to_string),
            name: k.name.clone(),
        }
    }
}

/// What the plan does with one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ChangeAction {
    Create,
    Update,
    Delete,
}

/// One planned change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    pub object: ObjectRef,
    pub action: ChangeAction,
    /// Unified diff (`live/…` or `base/…` → `desired/…`), 3 lines of context; Secret values hidden.
    pub diff: String,
    /// A Secret: its diff shows markers ("changed"/"unchanged"), never values.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secret: bool,
    /// Set when the object is deleted from Kubernetes but its Azure resource is kept
    /// (reconcile policy `detach-on-delete`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub detach: bool,
}

/// A deletion the plan refuses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockedDeletion {
    pub object: ObjectRef,
    /// Why, and how to allow it, e.g. "deletes the Azure resource; allow with --allow-deletion or the
    /// annotation aro-gitops.dev/allow-deletion=true".
    pub reason: String,
}

/// An object taken over rather than created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Adoption {
    pub object: ObjectRef,
    /// Why it counts as adopted, e.g. "live and not created by aro-gitops" or "the Azure resource
    /// already exists; reconcile-policy-if-exists makes the policy skip".
    pub reason: String,
}

/// A value the agent fills in itself and the plan cannot know yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingValue {
    pub object: ObjectRef,
    /// The field, e.g. `spec.properties.etcd.dataEncryption.customerManaged.kms.activeKey.version`.
    pub field: String,
    /// Where the agent gets it, and when.
    pub reason: String,
}

/// A reconcile policy's effect on one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyEffect {
    pub object: ObjectRef,
    /// The effective policy: `manage`, `skip` or `detach-on-delete`.
    pub policy: String,
    /// What it does here, e.g. "not applied: reconcile-policy skip (read only)".
    pub effect: String,
}

/// An error, with the file and object it is about when known.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// 1-based line in `file`, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// 1-based column in `file`, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<ObjectRef>,
    pub message: String,
}

impl Problem {
    /// `file:line:column` (what is known of it), for people.
    pub fn location(&self) -> Option<String> {
        let file = self.file.as_deref()?;
        Some(crate::object::file_position(file, self.line, self.column))
    }
}

impl Preview {
    /// True when any cluster would change.
    pub fn has_changes(&self) -> bool {
        self.clusters.iter().any(ClusterPreview::has_changes)
    }

    /// True when anything failed: the plan is incomplete.
    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty() || self.clusters.iter().any(|c| !c.errors.is_empty())
    }

    /// `terraform plan -detailed-exitcode`: 1 on any error, else 2 when something changes, else 0.
    pub fn exit_code(&self) -> u8 {
        if self.has_errors() {
            1
        } else if self.has_changes() {
            2
        } else {
            0
        }
    }
}

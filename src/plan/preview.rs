//! Pull-request previews of a plan: the [`Preview`] model and its three renderings, a GitHub
//! comment ([`markdown`]), machine-readable JSON ([`json`], described by `schemas/plan.schema.json`)
//! and terminal text ([`text`]). Rendering is pure: a `Preview` in, a `String` out.

pub mod model;

mod json;
mod markdown;
mod text;

#[cfg(test)]
#[path = "preview_tests.rs"]
mod tests;

pub use json::json;
pub use markdown::{MARKDOWN_LIMIT, markdown};
pub use model::{
    Adoption, Against, BlockedDeletion, Change, ChangeAction, ClusterPreview, Counts,
    FORMAT_VERSION, ObjectRef, PendingValue, PolicyEffect, Preview, Problem, Revision,
    RolloutPreview, WavePreview, WindowWait,
};
pub use text::text;

/// Totals over all clusters, as both human renderings summarise them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Totals {
    counts: Counts,
    /// Clusters that would change.
    changing: usize,
    /// Clusters with errors (not planned).
    failing: usize,
    /// Clusters with neither changes nor errors.
    unchanged: usize,
}

impl Totals {
    fn of(p: &Preview) -> Self {
        let mut t = Totals::default();
        for c in &p.clusters {
            t.counts.create += c.counts.create;
            t.counts.update += c.counts.update;
            t.counts.delete += c.counts.delete;
            t.counts.unchanged += c.counts.unchanged;
            t.counts.blocked += c.counts.blocked;
            t.counts.adopted += c.counts.adopted;
            if !c.errors.is_empty() {
                t.failing += 1;
            } else if c.has_changes() {
                t.changing += 1;
            } else {
                t.unchanged += 1;
            }
        }
        t
    }
}

/// Whether a cluster has anything to show beyond "no changes": such clusters get a section of
/// their own, the others are only named together.
fn has_details(c: &ClusterPreview) -> bool {
    c.has_changes()
        || !c.changes.is_empty()
        || !c.errors.is_empty()
        || !c.blocked_deletions.is_empty()
        || !c.adopted.is_empty()
        || !c.policy_effects.is_empty()
        || !c.pending_values.is_empty()
        || c.counts.blocked + c.counts.adopted > 0
}

/// `1 deletion blocked`, `2 deletions blocked`: a count and a noun made plural when it is not 1.
fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `3 to create, 1 to update, 0 to delete` then, when not zero, `1 deletion blocked` and
/// `2 adopted`: the action counts both human renderings print.
fn action_counts(c: &Counts) -> Vec<String> {
    let mut parts = vec![
        format!("{} to create", c.create),
        format!("{} to update", c.update),
        format!("{} to delete", c.delete),
    ];
    if c.blocked > 0 {
        parts.push(plural(c.blocked, "deletion blocked", "deletions blocked"));
    }
    if c.adopted > 0 {
        parts.push(format!("{} adopted", c.adopted));
    }
    parts
}

/// The first 12 characters of a commit id: enough to name it, short enough to read.
fn short_commit(commit: &str) -> &str {
    commit
        .char_indices()
        .nth(12)
        .map_or(commit, |(i, _)| &commit[..i])
}

/// What the head revision was compared with, as a phrase: `live state` or `the base revision`.
fn against_phrase(a: Against) -> &'static str {
    match a {
        Against::Live => "live state",
        Against::Base => "the base revision",
    }
}

/// A change's verb: `create`, `update`, `delete`.
fn action_word(a: ChangeAction) -> &'static str {
    match a {
        ChangeAction::Create => "create",
        ChangeAction::Update => "update",
        ChangeAction::Delete => "delete",
    }
}

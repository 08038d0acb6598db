//! Fleet rollouts: a revision that changes many units through what they share reaches them in
//! waves, at most `maxUnavailable` of a wave at a time, paused on failure, inside maintenance
//! windows. Declared in the repository's `aro-gitops.yaml` (`rollout:`, see [`settings`]).
//!
//! The rollout is a decision over units ([`decide`]): a pure function from the newest revision,
//! the units' standing (which revision each is on, converged or failed there, and since when) and
//! the clock to which units may take the newest revision now. The controller carries it out: a
//! unit held back keeps being reconciled at the revision it is on.

pub mod decide;
pub mod select;
pub mod settings;
pub mod units;
pub mod windows;

pub use decide::{
    Decision, Hold, Paused, Resume, RolloutView, State, UnitChange, UnitInput, Verdict, WaveState,
    WaveView, decide,
};
pub use select::Select;
pub use settings::{Budget, Rollout, Scope, Wave, Window, WindowKind};

/// The annotation on a unit's objects in git (any of them; its Cluster, usually) whose value, a
/// revision, lets that revision through the unit's maintenance windows (as Gardener's "reconcile
/// immediately"). A prefix of the commit id is enough (at least 7 characters).
pub const APPLY_NOW_ANNOTATION: &str = "aro-gitops.dev/apply-now";

/// Whether `value` (an apply-now annotation) names `revision`: the full id or a prefix of at least
/// 7 hex characters.
pub fn names_revision(value: &str, revision: &str) -> bool {
    let v = value.trim();
    v.len() >= 7 && revision.starts_with(v)
}

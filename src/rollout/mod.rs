//! Fleet rollouts: a revision that changes many units through what they share reaches them in
//! waves, at most `maxUnavailable` of a wave at a time, paused on failure, inside maintenance
//! windows. Declared in the repository's `aro-gitops.yaml` (`rollout:`, see [`settings`]).
//!
//! The rollout is a decision over units ([`decide`]): a pure function from the newest revision,
//! the units' standing (which revision each is on, converged or failed there, and since when) and
//! the clock to which units may take the newest revision now. The controller carries it out: a
//! unit held back keeps being reconciled at the revision it is on.

pub mod clock;
pub mod decide;
pub mod select;
pub mod settings;
pub mod units;
pub mod view;
pub mod windows;

pub use clock::Clock;
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

/// A commit id as people read it: its first 7 characters.
pub fn short(revision: &str) -> &str {
    revision
        .char_indices()
        .nth(7)
        .map_or(revision, |(i, _)| &revision[..i])
}

/// Whether `value` (an apply-now annotation) names `revision`: the full id or a prefix of at least
/// 7 hex characters.
pub fn names_revision(value: &str, revision: &str) -> bool {
    let v = value.trim();
    v.len() >= 7 && revision.starts_with(v)
}

/// The `rollout:` section of the settings file of the repository checked out at `root`, checked
/// (see [`settings`]); `None` without one. Its errors name the file and the field
/// (`aro-gitops.yaml: rollout.windows[0].timeZone: ...`).
pub fn rollout_setting(root: &std::path::Path) -> Result<Option<Rollout>, crate::unit::UnitError> {
    let Some(doc) = crate::unit::settings(root)? else {
        return Ok(None);
    };
    Rollout::parse(doc.get("rollout")).map_err(|e| crate::unit::UnitError::Settings {
        file: std::path::PathBuf::from(crate::unit::SETTINGS_FILE),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unit::SETTINGS_FILE;

    #[test]
    fn the_rollout_setting_is_read_and_its_errors_name_file_and_field() {
        let d = tempfile::tempdir().unwrap();
        assert!(rollout_setting(d.path()).unwrap().is_none());
        std::fs::write(d.path().join(SETTINGS_FILE), "fleet: f\n").unwrap();
        assert!(rollout_setting(d.path()).unwrap().is_none());
        std::fs::write(
            d.path().join(SETTINGS_FILE),
            "rollout:\n  waves: [{name: dev, units: ['clusters/dev*']}]\n  soak: 10m\n",
        )
        .unwrap();
        let r = rollout_setting(d.path()).unwrap().unwrap();
        assert_eq!(r.waves[0].name, "dev");
        assert_eq!(r.soak, std::time::Duration::from_secs(600));
        std::fs::write(
            d.path().join(SETTINGS_FILE),
            "rollout:\n  windows: [{kind: deny, schedule: '0 0 * * *', duration: 1h, timeZone: Nowhere}]\n",
        )
        .unwrap();
        let e = rollout_setting(d.path()).unwrap_err().to_string();
        assert!(
            e.starts_with("aro-gitops.yaml: rollout.windows[0].timeZone: \"Nowhere\" is not an IANA time zone name"),
            "{e}"
        );
    }
}

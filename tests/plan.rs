//! `aro-gitops plan` end to end, through the binary, on copies of `examples-repo/`.
//!
//! Each test has its own tempdir holding a copy of the fleet (a git repository on `main`, or a plain
//! folder) and a state directory. `base` has the pull-request previews (head compared with the base
//! revision, no cluster) and `deletions` their deletion safety; `live` the plans against the
//! embedded control plane after a real `aro-gitops run --once`; `exit_codes` the exit codes
//! (0 no changes, 2 changes, 1 errors) in one table; `ci_checkout` the GitHub Actions example on
//! shallow and detached pull-request checkouts; `paths` the working directory and the state
//! directory; `predicts` that a plan shows what the run then does; `truth` that a plan refuses what
//! the run refuses (a cluster's identity, an unsigned head); `rollout` the waves and windows a
//! change would go through. This file holds the fixture and the helpers
//! that read a plan's output.

#[path = "plan/base.rs"]
mod base;
#[path = "plan/ci_checkout.rs"]
mod ci_checkout;
mod common;
#[path = "plan/deletions.rs"]
mod deletions;
#[path = "plan/exit_codes.rs"]
mod exit_codes;
#[path = "plan/live.rs"]
mod live;
#[path = "plan/paths.rs"]
mod paths;
#[path = "plan/predicts.rs"]
mod predicts;
#[path = "plan/rollout.rs"]
mod rollout;
#[path = "plan/truth.rs"]
mod truth;

pub use common::fleet::{Fleet, Output, assert_valid};
use serde_json::Value;

pub const DEV: &str = "clusters/dev";
pub const PROD: &str = "clusters/prod";

/// The preview of `unit` in a JSON plan.
pub fn cluster<'a>(plan: &'a Value, unit: &str) -> &'a Value {
    plan["clusters"]
        .as_array()
        .expect("clusters")
        .iter()
        .find(|c| c["unit"] == unit)
        .unwrap_or_else(|| panic!("no cluster {unit} in {plan:#}"))
}

/// A count of a cluster preview (`create`, `update`, ...).
pub fn count(c: &Value, what: &str) -> u64 {
    c["counts"][what]
        .as_u64()
        .unwrap_or_else(|| panic!("no count {what} in {c:#}"))
}

/// `Kind/name` of an object reference.
pub fn name(object: &Value) -> String {
    format!(
        "{}/{}",
        object["kind"].as_str().expect("kind"),
        object["name"].as_str().expect("name")
    )
}

/// The entries of list `field` of a cluster preview (absent: empty).
pub fn entries<'a>(c: &'a Value, field: &str) -> &'a [Value] {
    c.get(field)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// `(action, Kind/name)` of every change of a cluster preview, sorted.
pub fn changes(c: &Value) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = entries(c, "changes")
        .iter()
        .map(|ch| {
            (
                ch["action"].as_str().expect("action").to_string(),
                name(&ch["object"]),
            )
        })
        .collect();
    v.sort();
    v
}

/// The change of `kind_name` (`Kind/name`) in a cluster preview.
pub fn change<'a>(c: &'a Value, kind_name: &str) -> &'a Value {
    entries(c, "changes")
        .iter()
        .find(|ch| name(&ch["object"]) == kind_name)
        .unwrap_or_else(|| panic!("no change of {kind_name} in {c:#}"))
}

/// `Kind/name` of every entry of list `field` (`blockedDeletions`, `adopted`, ...), sorted.
pub fn names_in(c: &Value, field: &str) -> Vec<String> {
    let mut v: Vec<String> = entries(c, field)
        .iter()
        .map(|e| name(&e["object"]))
        .collect();
    v.sort();
    v
}

/// Owned pairs for comparing with [`changes`].
pub fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = items
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    v.sort();
    v
}

/// Replaces every 40-hex commit id, and every 12-hex short form of `commits`, with placeholders.
pub fn normalize(text: &str, commits: &[(&str, &str)]) -> String {
    let mut out = text.to_string();
    for (sha, label) in commits {
        out = out.replace(sha, &format!("<{label}>"));
        out = out.replace(&sha[..12], &format!("<{label}:short>"));
    }
    out
}

//! The rollout in the comment: one short paragraph, whatever the fleet's size (the waves with how
//! many changed clusters each, and how many wait for a maintenance window); the terminal and JSON
//! name the clusters.

use super::super::{RolloutPreview, plural};
use super::escape::{code, text};

/// `**Rollout:** 2 waves: 1. `dev` (2 clusters), 2. `prod` (1 cluster). Waiting for the
/// maintenance window (opens at …): 1 cluster.` and a blank line.
pub(super) fn paragraph(r: &RolloutPreview) -> String {
    let waves: Vec<String> = r
        .waves
        .iter()
        .enumerate()
        .map(|(i, w)| {
            format!(
                "{}. {} ({})",
                i + 1,
                code(&w.name),
                plural(w.units.len(), "cluster", "clusters")
            )
        })
        .collect();
    let mut out = format!(
        "**Rollout:** {}: {}.",
        plural(r.waves.len(), "wave", "waves"),
        waves.join(", ")
    );
    for (opening, units) in r.window_groups() {
        out.push_str(&format!(
            " Waiting for the maintenance window ({}): {}.",
            text(&opening),
            plural(units.len(), "cluster", "clusters")
        ));
    }
    out.push_str("\n\n");
    out
}

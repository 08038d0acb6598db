//! The terminal summary of a pass over several units: one line per unit, columns aligned.

use super::build::build;
use super::model::{Action, Phase, UnitOutcome};

const HEADERS: [&str; 9] = [
    "UNIT",
    "CLUSTER",
    "PHASE",
    "CREATED",
    "UPDATED",
    "UNCHANGED",
    "BLOCKED",
    "FAILED",
    "CHAIN",
];

/// A plain-text table, one row per unit, failed units first, then by unit path: `UNIT CLUSTER PHASE CREATED UPDATED
/// UNCHANGED BLOCKED FAILED CHAIN`; then a line per cluster a rollout holds (`held: UNIT stays on
/// REV (newest REV): why`); then, when `writes` is given, a line with the number of write
/// requests made. Lines carry no trailing spaces.
pub fn summary_table(outcomes: &[UnitOutcome], writes: Option<u64>) -> String {
    let mut rows: Vec<[String; 9]> = outcomes.iter().map(row).collect();
    // Failed units first: they are what the reader has to act on.
    rows.sort_by_cached_key(|r| (r[2] != Phase::Failed.as_str(), r.clone()));
    let mut widths = HEADERS.map(str::len);
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header = HEADERS.map(str::to_string);
    for r in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (i, (cell, w)) in r.iter().zip(widths).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            line.push_str(cell);
            if i + 1 < r.len() {
                line.extend(std::iter::repeat_n(' ', w - cell.chars().count()));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    // Clusters a rollout holds on an older revision: where they are and why.
    let mut held: Vec<&UnitOutcome> = outcomes.iter().filter(|o| o.held.is_some()).collect();
    held.sort_by(|a, b| a.unit.cmp(&b.unit));
    for o in held {
        let h = o.held.as_ref().expect("held");
        let short = crate::rollout::short;
        out.push_str(&format!(
            "held: {} stays on {} (newest {}): {}\n",
            o.unit,
            short(&o.revision),
            short(&h.newest),
            h.why
        ));
    }
    if let Some(n) = writes {
        let plural = if n == 1 { "" } else { "s" };
        out.push_str(&format!("{n} write request{plural}\n"));
    }
    out
}

fn row(outcome: &UnitOutcome) -> [String; 9] {
    let report = build(outcome);
    let count = |action: Action| {
        report
            .objects
            .iter()
            .filter(|o| o.action == action)
            .count()
            .to_string()
    };
    let cluster = report
        .cluster
        .as_ref()
        .map(|c| format!("{}/{}", c.namespace, c.name))
        .unwrap_or_else(|| "-".to_string());
    [
        report.unit.clone(),
        cluster,
        report.phase.as_str().to_string(),
        count(Action::Created),
        count(Action::Updated),
        count(Action::Unchanged),
        count(Action::Blocked),
        count(Action::Failed),
        // No pass: nothing is known of where the cluster stands.
        if report.phase == Phase::NotStarted {
            "-".to_string()
        } else {
            report.chain.short()
        },
    ]
}

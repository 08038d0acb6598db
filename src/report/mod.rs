//! Reports: what each cluster's reconcile pass did and where the cluster stands, for people and for
//! machines.
//!
//! For each cluster the agent commits `reports/<namespace>/<cluster>.md` (Markdown, readable in a pull
//! request) and `reports/<namespace>/<cluster>.yaml` (`schemas/report.schema.json`). They show the
//! revision applied, each object with its action and readiness, where the cluster stands on the
//! dependency chain ([`chain()`]) and the errors. A unit that failed before its Cluster was known is
//! reported under `reports/_units/`.
//!
//! Reports are committed only when their content changes, so they hold nothing volatile (no
//! timestamps, no durations) and are sorted: the same state gives the same bytes. They never hold a
//! Secret's data. Results from the Azure simulator say so (`azure: simulated`, and a note in the
//! Markdown).
//!
//! Everything here is pure: the caller gathers the [`UnitOutcome`] and writes the files.

mod build;
pub mod chain;
mod markdown;
pub mod model;
mod standing;
mod summary;

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod tests;

pub use build::{WITHHELD, build, phase};
pub use chain::{CHAIN_STEPS, Chain, ChainStep, StepState, chain};
pub use markdown::to_markdown;
pub use model::{
    Action, AzureMode, ClusterRef, ClusterReport, Held, ObjectAction, ObjectOutcome, Phase,
    ReportError, ReportObject, UnitError, UnitOutcome, failure_block,
};
pub use standing::{IdentityInUse, ObjectConditions, PassState, ReportCondition, Standing};
pub use summary::summary_table;

use crate::object::ObjectKey;
use std::path::PathBuf;

/// The directory of all reports, relative to the repository root.
pub const REPORTS_DIR: &str = "reports";

/// The directory, under [`REPORTS_DIR`], of the reports of units whose cluster is not known.
pub const UNITS_DIR: &str = "_units";

/// `reports/<namespace>/<name>.md` and `.yaml` for the CAPI Cluster `cluster` (namespace `default`
/// when the key has none).
pub fn report_paths(cluster: &ObjectKey) -> (PathBuf, PathBuf) {
    let namespace = cluster
        .namespace
        .as_deref()
        .unwrap_or(build::DEFAULT_NAMESPACE);
    let base = PathBuf::from(REPORTS_DIR)
        .join(path_component(namespace))
        .join(path_component(&cluster.name));
    with_extensions(base)
}

/// `reports/_units/<unit path, '/' replaced by '_'>.md` and `.yaml`, for a unit whose cluster is not
/// known.
pub fn unit_report_paths(unit: &str) -> (PathBuf, PathBuf) {
    let flat = unit.trim_matches('/').replace(['/', '\\'], "_");
    let base = PathBuf::from(REPORTS_DIR)
        .join(UNITS_DIR)
        .join(path_component(&flat));
    with_extensions(base)
}

/// The report paths of an outcome: by its cluster, else by its unit.
pub fn outcome_paths(outcome: &UnitOutcome) -> (PathBuf, PathBuf) {
    match &outcome.cluster {
        Some(cluster) => report_paths(cluster),
        None => unit_report_paths(&outcome.unit),
    }
}

/// One path component made of safe characters only (Kubernetes names already are).
fn path_component(s: &str) -> String {
    let safe: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match safe.as_str() {
        "" | "." | ".." => format!("_{safe}"),
        _ => safe,
    }
}

fn with_extensions(base: PathBuf) -> (PathBuf, PathBuf) {
    let mut md = base.clone().into_os_string();
    md.push(".md");
    let mut yaml = base.into_os_string();
    yaml.push(".yaml");
    (PathBuf::from(md), PathBuf::from(yaml))
}

/// The machine-readable report, as YAML (`schemas/report.schema.json`).
pub fn to_yaml(report: &ClusterReport) -> String {
    // Serialising plain data with string keys cannot fail.
    let value = serde_json::to_value(report).expect("a report always serialises");
    crate::yaml::to_string(&value)
}

//! Maintenance windows: whether a unit may take a change (or have its drift corrected) now.

use super::settings::Window;
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

/// Whether a unit's windows let a change through at an instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    Open,
    /// Closed; when it next opens, if that is known within a year.
    Closed {
        opens_at: Option<DateTime<Utc>>,
    },
}

/// What the windows selecting the unit at `path` (Cluster `labels`) say at `now`: a deny window in
/// force closes; else, when allow windows select the unit, one of them must be in force; else open.
/// Deny wins over allow. `drift`: for drift correction, where windows with `selfHeal: true` do not
/// close.
pub fn gate(
    windows: &[Window],
    path: &str,
    labels: &BTreeMap<String, String>,
    now: DateTime<Utc>,
    drift: bool,
) -> Gate {
    let _ = (windows, path, labels, now, drift);
    unimplemented!("helper A")
}

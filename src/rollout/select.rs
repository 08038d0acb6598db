//! Which units a wave or a window selects: path globs over the unit's repository path
//! (`clusters/dev*`), or a label selector over the labels of the unit's CAPI Cluster.

use std::collections::BTreeMap;

/// A selection of units.
#[derive(Debug, Clone, PartialEq)]
pub enum Select {
    /// Path globs (`*` any run of characters but `/`, `**` any run, `?` one character), matched
    /// against the unit's repository path (`clusters/dev-1`).
    Units(Vec<String>),
    /// `matchLabels` (all must equal) and `matchExpressions` (`In`, `NotIn`, `Exists`,
    /// `DoesNotExist`) over the labels of the unit's Cluster.
    Labels(crate::selector::LabelSelector),
    /// Every unit (a window without `units` or `selector`).
    All,
}

impl Select {
    /// Whether the unit at `path`, whose Cluster has `labels`, is selected.
    pub fn selects(&self, path: &str, labels: &BTreeMap<String, String>) -> bool {
        let _ = (path, labels);
        unimplemented!("helper A")
    }
}

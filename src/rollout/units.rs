//! TEMP shim (helper D writes the real one).
use super::UnitChange;
use crate::agent::prepare::PlannedObject;
use std::collections::BTreeMap;
use std::path::PathBuf;
pub fn cluster_labels(_o: &[PlannedObject]) -> BTreeMap<String, String> {
    BTreeMap::new()
}
pub fn apply_now(_o: &[PlannedObject]) -> Option<String> {
    None
}
pub fn change_of(_u: &str, _same: bool, _i: &crate::render::Inputs, _c: &[PathBuf]) -> UnitChange {
    UnitChange::Shared
}

//! The preview as JSON for programs (`aro-gitops plan --output json`): the [`Preview`] model as
//! serde writes it, pretty-printed. `schemas/plan.schema.json` describes it; the tests keep the two
//! in step.

use super::Preview;

/// Renders `p` as pretty-printed JSON ending with a newline.
pub fn json(p: &Preview) -> String {
    // The model has string keys and no maps or floats, so serializing cannot fail.
    let mut out = serde_json::to_string_pretty(p).expect("a Preview always serializes");
    out.push('\n');
    out
}

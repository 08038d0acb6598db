//! The PATCH engines kube-apiserver serves, as pure functions over `serde_json::Value`.
//!
//! One engine per PATCH content type the API server accepts:
//! - [`merge_patch`]: `application/merge-patch+json` (RFC 7386 JSON merge patch);
//! - [`json_patch`]: `application/json-patch+json` (RFC 6902 JSON patch, applied atomically);
//! - [`strategic_merge_patch`]: `application/strategic-merge-patch+json` (Kubernetes strategic merge
//!   patch), driven by a [`MergeKeys`] table that says which lists merge by key or as sets.
//!
//! Errors never quote values from the object or the patch (they may hold Secret data): they name the
//! operation, the field path and what was wrong.

mod json;
mod keys;
mod merge;
mod strategic;
#[cfg(test)]
mod strategic_tests;

pub use json::{MissingReplace, json_patch, json_patch_with};
pub use keys::MergeKeys;
pub use merge::merge_patch;
pub use strategic::strategic_merge_patch;

use serde_json::Value;

/// Why a patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The patch document itself is malformed (HTTP 400 BadRequest).
    #[error("malformed patch: {0}")]
    Malformed(String),
    /// One operation of a JSON patch is malformed (an unknown `op`, a missing `path`): found only
    /// when kube-apiserver applies it (HTTP 422 Invalid).
    #[error("malformed patch: {0}")]
    MalformedOp(String),
    /// The patch is well formed but cannot be applied to this object: a JSON-patch `test` failed or a
    /// path does not exist (HTTP 422 Invalid). The message says which operation and path.
    #[error("patch cannot be applied: {0}")]
    Unprocessable(String),
}

impl PatchError {
    /// The HTTP status the API server answers with: 400 for [`PatchError::Malformed`], 422 for
    /// the others.
    pub fn http_status(&self) -> u16 {
        match self {
            PatchError::Malformed(_) => 400,
            PatchError::MalformedOp(_) | PatchError::Unprocessable(_) => 422,
        }
    }
}

/// JSON equality as RFC 6902 defines it: numbers compare by numeric value (`1 == 1.0`), objects by
/// members regardless of order, arrays element-wise.
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                x == y
            } else if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                x == y
            } else {
                x.as_f64() == y.as_f64()
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn http_status_maps_400_and_422() {
        assert_eq!(PatchError::Malformed("x".into()).http_status(), 400);
        assert_eq!(PatchError::Unprocessable("x".into()).http_status(), 422);
        assert_eq!(PatchError::MalformedOp("x".into()).http_status(), 422);
    }

    #[test]
    fn json_eq_numbers_by_value_objects_unordered() {
        assert!(json_eq(&json!(1), &json!(1.0)));
        assert!(!json_eq(&json!(1), &json!(2)));
        assert!(!json_eq(&json!(-1), &json!(u64::MAX)));
        assert!(json_eq(
            &json!({"a": 1, "b": [1, "x"]}),
            &json!({"b": [1.0, "x"], "a": 1})
        ));
        assert!(!json_eq(&json!([1, 2]), &json!([2, 1])));
        assert!(!json_eq(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(!json_eq(&json!("1"), &json!(1)));
    }
}

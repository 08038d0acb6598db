//! Kubernetes API machinery as pure library code: what kube-apiserver does to a JSON object that
//! does not depend on a server.
//!
//! - [`gojson`]: Go's `encoding/json` wording and encoding (type names, syntax errors, quoting).
//! - [`field`]: field paths and field errors, worded as kube-apiserver words them.
//! - [`patch`]: the PATCH engines (JSON merge patch, JSON patch, strategic merge patch).
//! - [`ssa`]: server-side apply and `metadata.managedFields` (structured-merge-diff semantics).
//!
//! It sits at the bottom of the layers: it imports nothing of the crate but [`crate::object`], so
//! `render` and `plan` use it without reaching into the local control plane, and the control
//! plane and `validate` share it without importing each other.

pub mod field;
pub mod gojson;
pub mod patch;
pub mod ssa;

//! Server-side apply (SSA), with Kubernetes' field ownership.
//!
//! Kubernetes records in `metadata.managedFields` which field manager owns which fields, as
//! FieldsV1 sets (`{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{}}}}}`).
//! This module reproduces that faithfully (structured-merge-diff semantics) so `kubectl apply
//! --server-side`, `kubectl diff --server-side` and kube-rs `Patch::Apply` behave as against a
//! real API server, and so the agent can tell which manager changed a drifted field.
//!
//! - [`schema`]: the shape of an object as SSA needs it (granular or atomic maps and lists, set
//!   and associative lists, declared fields), from a CRD's OpenAPI v3 schema or built in.
//! - [`fieldset`] and [`path`]: field sets and paths, their set algebra and FieldsV1 encoding.
//! - [`apply`]: [`apply()`] for apply patches, [`record_update`] for every other write.
//! - [`conflicts`]: the 409 conflict error, worded like the API server.
//!
//! Everything here is a pure function over `serde_json::Value`.

pub mod apply;
pub(crate) mod builtin;
pub mod conflicts;
pub mod fieldset;
mod managed;
pub mod path;
pub mod schema;
mod walk;

#[cfg(test)]
mod apply_tests;
#[cfg(test)]
mod update_tests;

pub use apply::{ApplyRequest, BEFORE_FIRST_APPLY, apply, record_update};
pub use conflicts::{ApplyConflicts, ConflictOwner};
pub use fieldset::{FieldSet, FieldSetError};
pub use managed::{Operation, managed_sets};
pub use path::{FieldPath, PathElement};
pub use schema::{ListType, Schema};

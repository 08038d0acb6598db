//! ASO's reconcile policy and finalizer, as the simulator applies them (pure).
//!
//! Every object the simulator reconciles carries [`FINALIZER`], so deleting it takes a step of the
//! simulator, as it takes one of ASO: under policy `manage` the simulated Azure resource is deleted
//! first (after the configured delay) and the finalizer released after; under `detach-on-delete`
//! and `skip` the finalizer is released at once and the simulated Azure resource stays.

use super::{FINALIZER, RECONCILE_POLICY_ANNOTATION};
use serde_json::Value;

/// ASO's per-object reconcile policy ([`RECONCILE_POLICY_ANNOTATION`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReconcilePolicy {
    /// The default: create, update and delete the Azure resource.
    Manage,
    /// Create and update, but keep the Azure resource when the object is deleted.
    DetachOnDelete,
    /// Only read: never write Azure, keep the Azure resource on delete.
    Skip,
}

impl ReconcilePolicy {
    /// The policy `obj` asks for. A missing or unknown value means `manage`, as in ASO.
    pub fn of(obj: &Value) -> Self {
        match obj
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(RECONCILE_POLICY_ANNOTATION))
            .and_then(Value::as_str)
            .map(str::trim)
        {
            Some("skip") => ReconcilePolicy::Skip,
            Some("detach-on-delete") => ReconcilePolicy::DetachOnDelete,
            _ => ReconcilePolicy::Manage,
        }
    }

    /// Whether deleting the object deletes its Azure resource.
    pub fn deletes_in_azure(self) -> bool {
        self == ReconcilePolicy::Manage
    }
}

/// What the simulator does with an object that has a `deletionTimestamp`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeleteStep {
    /// Not the simulator's to finish: [`FINALIZER`] is not on it (another finalizer holds it).
    NotHeld,
    /// Release [`FINALIZER`] now; the simulated Azure resource stays (`detach-on-delete`, `skip`).
    ReleaseKeepingAzure,
    /// Report `Deleting`, delete the simulated Azure resource `arm_id` (if it ever got one) once the
    /// deletion delay has passed, then release [`FINALIZER`] (`manage`).
    DeleteInAzure { arm_id: Option<String> },
}

/// Whether `obj` has a `deletionTimestamp`.
pub fn is_deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// What deleting `obj` takes (see [`DeleteStep`]).
pub fn delete_step(obj: &Value) -> DeleteStep {
    if !has_finalizer(obj) {
        return DeleteStep::NotHeld;
    }
    if ReconcilePolicy::of(obj).deletes_in_azure() {
        DeleteStep::DeleteInAzure {
            arm_id: arm_id(obj),
        }
    } else {
        DeleteStep::ReleaseKeepingAzure
    }
}

/// The ARM id ASO deletes in Azure when `obj` is gone from the control plane without the
/// simulator's finalizer having run: its `status.id` under policy `manage`, `None` otherwise.
pub fn deleted_in_azure(obj: &Value) -> Option<String> {
    ReconcilePolicy::of(obj)
        .deletes_in_azure()
        .then(|| arm_id(obj))
        .flatten()
}

fn arm_id(obj: &Value) -> Option<String> {
    obj.pointer("/status/id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

pub use crate::object::finalizers;

/// Whether [`FINALIZER`] is on `obj`.
pub fn has_finalizer(obj: &Value) -> bool {
    finalizers(obj).iter().any(|f| f == FINALIZER)
}

/// The finalizer list with [`FINALIZER`] added at the end (unchanged when already there).
pub fn with_finalizer(obj: &Value) -> Vec<String> {
    let mut list = finalizers(obj);
    if !list.iter().any(|f| f == FINALIZER) {
        list.push(FINALIZER.to_string());
    }
    list
}

/// The finalizer list without [`FINALIZER`]; every other finalizer stays, in order.
pub fn without_finalizer(obj: &Value) -> Vec<String> {
    finalizers(obj)
        .into_iter()
        .filter(|f| f != FINALIZER)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ID: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg";

    fn obj(policy: Option<&str>, finalizers: Value) -> Value {
        let mut o = json!({
            "apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup",
            "metadata": {"name": "rg", "namespace": "ns", "finalizers": finalizers,
                         "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"id": ID},
        });
        if let Some(p) = policy {
            o["metadata"]["annotations"] = json!({RECONCILE_POLICY_ANNOTATION: p});
        }
        o
    }

    #[test]
    fn policy_values_and_default() {
        let cases = [
            (None, ReconcilePolicy::Manage),
            (Some("manage"), ReconcilePolicy::Manage),
            (Some("detach-on-delete"), ReconcilePolicy::DetachOnDelete),
            (Some(" skip "), ReconcilePolicy::Skip),
            (Some("nonsense"), ReconcilePolicy::Manage),
        ];
        for (value, want) in cases {
            assert_eq!(
                ReconcilePolicy::of(&obj(value, json!([]))),
                want,
                "{value:?}"
            );
        }
    }

    #[test]
    fn delete_steps_follow_the_policy_and_the_finalizer() {
        let ours = json!(["other.io/keep", FINALIZER]);
        assert_eq!(
            delete_step(&obj(None, ours.clone())),
            DeleteStep::DeleteInAzure {
                arm_id: Some(ID.into())
            }
        );
        assert_eq!(
            delete_step(&obj(Some("detach-on-delete"), ours.clone())),
            DeleteStep::ReleaseKeepingAzure
        );
        assert_eq!(
            delete_step(&obj(Some("skip"), ours)),
            DeleteStep::ReleaseKeepingAzure
        );
        assert_eq!(
            delete_step(&obj(None, json!(["other.io/keep"]))),
            DeleteStep::NotHeld
        );
        let mut never_provisioned = obj(None, json!([FINALIZER]));
        never_provisioned["status"] = json!({});
        assert_eq!(
            delete_step(&never_provisioned),
            DeleteStep::DeleteInAzure { arm_id: None }
        );
    }

    #[test]
    fn watch_deletes_remove_azure_only_under_manage() {
        assert_eq!(deleted_in_azure(&obj(None, json!([]))), Some(ID.into()));
        assert_eq!(deleted_in_azure(&obj(Some("skip"), json!([]))), None);
        assert_eq!(
            deleted_in_azure(&obj(Some("detach-on-delete"), json!([]))),
            None
        );
    }

    #[test]
    fn finalizer_edits_keep_the_others_in_order() {
        let o = obj(None, json!(["a.io/x", FINALIZER, "b.io/y"]));
        assert!(has_finalizer(&o));
        assert_eq!(without_finalizer(&o), vec!["a.io/x", "b.io/y"]);
        assert_eq!(with_finalizer(&o), vec!["a.io/x", FINALIZER, "b.io/y"]);
        let bare = obj(None, Value::Null);
        assert!(!has_finalizer(&bare));
        assert_eq!(with_finalizer(&bare), vec![FINALIZER]);
        assert!(without_finalizer(&bare).is_empty());
        assert!(is_deleting(&bare));
    }
}

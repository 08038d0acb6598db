//! DELETE of one object: its options (propagation, preconditions), what it does (through
//! [`gc`]), and what it answers, as upstream.

use super::error::{ApiError, Precondition};
use super::gc::{self, Propagation};
use super::objects::{Target, as_version};
use super::state::Txn;
use crate::machinery::field::{BadValue, FieldError};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// The parts of DeleteOptions this server honours.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// What the DELETE asks of dependents; `None`: it says nothing (the kind's default, or the
    /// collection finalizer the object already has).
    pub propagation: Option<Propagation>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
    /// `orphanDependents: false` given explicitly: the one case upstream answers 202 Accepted
    /// for an object its finalizers still hold.
    pub orphan_dependents_false: bool,
}

impl DeleteOptions {
    /// A DELETE's DeleteOptions: its body, with the query parameters upstream also reads them
    /// from where the body does not set them.
    pub fn merged_with_query(body: &Value, query: &HashMap<String, String>) -> Value {
        let mut body = body.clone();
        if !body.is_object() {
            body = json!({});
        }
        if body.get("propagationPolicy").is_none()
            && let Some(p) = query.get("propagationPolicy")
        {
            body["propagationPolicy"] = json!(p);
        }
        if body.get("orphanDependents").is_none()
            && let Some(o) = query.get("orphanDependents")
        {
            body["orphanDependents"] = json!(o == "true");
        }
        body
    }

    /// The options a DeleteOptions body sets (checked first by `params::delete_dry_run`; an
    /// unknown policy is refused here too, as it has no meaning).
    pub fn from_body(body: &Value) -> Result<Self, ApiError> {
        let policy = body.get("propagationPolicy").and_then(Value::as_str);
        let orphan = body.get("orphanDependents").and_then(Value::as_bool);
        let propagation = match policy {
            None => None,
            Some("Background") => Some(Propagation::Background),
            Some("Foreground") => Some(Propagation::Foreground),
            Some("Orphan") => Some(Propagation::Orphan),
            Some(other) => {
                return Err(ApiError::invalid_options(
                    "DeleteOptions",
                    &[FieldError::not_supported(
                        "propagationPolicy",
                        BadValue::Str(other.to_string()),
                        &["Foreground", "Background", "Orphan", "nil"],
                    )],
                ));
            }
        };
        // The deprecated orphanDependents, when given, decides alone.
        let propagation = match orphan {
            Some(true) => Some(Propagation::Orphan),
            Some(false) => Some(Propagation::Background),
            None => propagation,
        };
        let pre = |f: &str| {
            body.pointer(&format!("/preconditions/{f}"))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        Ok(DeleteOptions {
            propagation,
            precondition_uid: pre("uid"),
            precondition_rv: pre("resourceVersion"),
            orphan_dependents_false: body.get("orphanDependents").and_then(Value::as_bool)
                == Some(false),
        })
    }
}

/// The outcome of a DELETE of one object.
#[derive(Debug, Clone)]
pub struct Deleted {
    /// The object as it stands after the call: with a deletionTimestamp while finalizers hold
    /// it, or at its final resourceVersion once gone.
    pub object: Arc<Value>,
    /// Removed from storage by this call.
    pub gone: bool,
}

/// What a DELETE answers, as upstream: an object removed at once is named by a `Status`
/// Success (or answered itself, for the kinds that do); one still held by finalizers is
/// answered as it now stands, 200 unless `orphanDependents: false` was asked for (202).
pub fn delete_answer(target: &Target, deleted: &Deleted, opts: &DeleteOptions) -> (u16, Value) {
    if deleted.gone && !target.rt.returns_deleted_object() {
        let mut details = json!({
            "name": crate::object::str_at(&deleted.object, "/metadata/name").unwrap_or(""),
            "kind": target.rt.plural,
            "uid": crate::object::str_at(&deleted.object, "/metadata/uid").unwrap_or(""),
        });
        if !target.rt.group.is_empty() {
            details["group"] = json!(target.rt.group);
        }
        let status = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Success", "details": details,
        });
        return (200, status);
    }
    let code = if !deleted.gone && opts.orphan_dependents_false {
        202
    } else {
        200
    };
    (
        code,
        as_version(&deleted.object, &target.rt, &target.version),
    )
}

/// DELETE of one object.
pub fn delete(
    txn: &mut Txn,
    target: &Target,
    name: &str,
    opts: &DeleteOptions,
    now: &str,
) -> Result<Deleted, ApiError> {
    let key = target.key(name);
    let obj = txn.get(&key).ok_or_else(|| target.not_found(name))?;
    let meta_str = |f: &str| {
        obj.pointer(&format!("/metadata/{f}"))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    for (wanted, field, precondition) in [
        (&opts.precondition_uid, "uid", Precondition::Uid),
        (
            &opts.precondition_rv,
            "resourceVersion",
            Precondition::ResourceVersion,
        ),
    ] {
        if let Some(wanted) = wanted
            && Some(wanted) != meta_str(field).as_ref()
        {
            return Err(ApiError::precondition_failed(
                &target.rt.group,
                &target.rt.kind,
                name,
                precondition,
                wanted,
                &meta_str(field).unwrap_or_default(),
            ));
        }
    }
    let object = gc::delete(txn, &key, opts.propagation, now).unwrap_or(obj);
    let gone = txn.get(&key).is_none();
    Ok(Deleted {
        object: match gone {
            true => super::workloads::as_removed(target, object, now),
            false => object,
        },
        gone,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controlplane::registry::Registry;

    fn deleted(name: &str, gone: bool) -> Deleted {
        let finalizers = if gone { json!(null) } else { json!(["f"]) };
        Deleted {
            object: Arc::new(json!({
                "apiVersion": "v1", "kind": "X",
                "metadata": {"name": name, "uid": "u-1", "finalizers": finalizers},
            })),
            gone,
        }
    }

    #[test]
    fn an_object_removed_at_once_is_named_by_a_status() {
        let reg = Registry::new([]);
        let cms = Target::of(&reg, "", "configmaps", Some("ns"));
        let (code, body) = delete_answer(&cms, &deleted("a", true), &DeleteOptions::default());
        assert_eq!(code, 200);
        assert_eq!(
            body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                   "details": {"name": "a", "kind": "configmaps", "uid": "u-1"}})
        );
        let leases = Target::of(&reg, "coordination.k8s.io", "leases", Some("ns"));
        let (_, body) = delete_answer(&leases, &deleted("l", true), &DeleteOptions::default());
        assert_eq!(body["details"]["group"], "coordination.k8s.io");
    }

    #[test]
    fn some_kinds_answer_the_removed_object_itself() {
        let reg = Registry::new([]);
        let sas = Target::of(&reg, "", "serviceaccounts", Some("ns"));
        let (code, body) = delete_answer(&sas, &deleted("sa", true), &DeleteOptions::default());
        assert_eq!((code, body["metadata"]["name"].as_str()), (200, Some("sa")));
    }

    #[test]
    fn an_object_held_by_finalizers_is_answered_as_it_stands_202_only_when_asked() {
        let reg = Registry::new([]);
        let cms = Target::of(&reg, "", "configmaps", Some("ns"));
        let held = deleted("a", false);
        let (code, body) = delete_answer(&cms, &held, &DeleteOptions::default());
        assert_eq!(
            (code, body["metadata"]["finalizers"][0].as_str()),
            (200, Some("f"))
        );
        let opts = DeleteOptions::from_body(&json!({"orphanDependents": false})).unwrap();
        assert_eq!(delete_answer(&cms, &held, &opts).0, 202);
    }
}

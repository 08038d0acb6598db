//! The checks of a whole unit against the target cluster before a pass writes anything (its
//! inventory included): every kind is served (or defined by a CRD the unit itself ships), every
//! object of a namespaced kind has a namespace, and, on the first passes of a revision, a
//! server-side dry run (`dryRun=All`) of the objects about to be created or changed. Any problem
//! fails the unit with nothing of it applied.
//!
//! The dry run is sent only for objects it can judge now: not for those whose kind a CRD of the
//! unit still has to create, nor those whose namespace the unit still has to create; a NotFound or
//! a server error is left to the apply itself. The resources embedded in ARO objects are not sent
//! (their owner is, and their body is decided by the owner's gates later).

use crate::agent::pass::prepare::{PlannedObject, Prepared};
use crate::agent::pass::read_live::{ListKey, list_key};
use crate::apply::inventory::Inventory;
use crate::apply::{ApplyError, Cluster};
use crate::marks::FIELD_MANAGER;
use crate::object::ObjectKey;
use crate::plan::{Action, diff_object};
use crate::report::{ObjectAction, ObjectOutcome, UnitError};
use crate::validate::RECONCILE_POLICY;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};

/// Every reason the cluster would refuse part of the unit; empty when it may be applied.
pub async fn check(
    cluster: &Cluster,
    prepared: &Prepared,
    live: &HashMap<ObjectKey, Value>,
    unserved: &BTreeSet<ListKey>,
    inv: &Inventory,
    revision: &str,
) -> Vec<UnitError> {
    let bodies = prepared.thawed();
    let defined = crate::validate::builtin::defined_kinds(bodies.iter().map(|b| &**b));
    let defined_here = |key: &ObjectKey| {
        defined
            .iter()
            .any(|(g, k, _)| (g.as_str(), k.as_str()) == (&*key.group, &*key.kind))
    };
    let mut errors = Vec::new();
    let mut dry_run = Vec::new();
    for (o, body) in prepared.objects.iter().zip(&bodies) {
        let key = &o.key;
        if unserved.contains(&list_key(key)) {
            if !defined_here(key) {
                errors.push(refusal(
                    o,
                    format!(
                        "the cluster serves no kind {} in {} (is its CustomResourceDefinition installed?)",
                        key.kind,
                        key.api_version()
                    ),
                ));
            }
            continue;
        }
        match cluster.kind(&key.group, &key.version, &key.kind).await {
            Ok(Some(kind)) if kind.namespaced && key.namespace.is_none() => {
                errors.push(refusal(
                    o,
                    crate::validate::builtin::namespace_problem(&key.kind, None, Some(true))
                        .expect("a namespaced kind without a namespace"),
                ));
                continue;
            }
            Ok(Some(_)) => {}
            // Not served (a CRD of the unit still to come) or discovery failing: the pass says.
            Ok(None) | Err(_) => continue,
        }
        if wants_dry_run(prepared, o, body, live) {
            dry_run.push((o, body));
        }
    }
    if !errors.is_empty() || inv.revision.as_deref() == Some(revision) {
        return errors;
    }
    for (o, body) in dry_run {
        if let Err(e) = cluster.dry_run_apply(&o.key, body, FIELD_MANAGER).await {
            match refused_by_server(&e) {
                Some(what) => errors.push(refusal(o, what)),
                None => {
                    tracing::debug!(object = %o.key, error = %e, "dry run not conclusive; the apply decides")
                }
            }
        }
    }
    errors
}

/// Whether `o` is worth a dry run now: a top-level object the pass may write (not under policy
/// `skip`), absent or different live, whose namespace exists or is not the unit's to create.
fn wants_dry_run(
    prepared: &Prepared,
    o: &PlannedObject,
    body: &Value,
    live: &HashMap<ObjectKey, Value>,
) -> bool {
    if o.embedded_in.is_some()
        || body
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(RECONCILE_POLICY))
            .and_then(Value::as_str)
            == Some("skip")
    {
        return false;
    }
    let namespace_to_come = o.key.namespace.as_ref().is_some_and(|ns| {
        prepared.objects.iter().any(|n| {
            n.key.group.is_empty()
                && n.key.kind == "Namespace"
                && &n.key.name == ns
                && !live.contains_key(&n.key)
        })
    });
    if namespace_to_come {
        return false;
    }
    matches!(
        diff_object(Some(body), live.get(&o.key)).action,
        Action::Create | Action::Update
    )
}

/// What the server refused of a dry run, in its own field terms, or `None` when the answer says
/// nothing about the object (not found, conflict, server or connection errors).
fn refused_by_server(e: &ApplyError) -> Option<String> {
    let ApplyError::Api { source, .. } = e else {
        return None;
    };
    let kube::Error::Api(status) = source.as_ref() else {
        return None;
    };
    if !matches!(status.code, 400 | 403 | 413 | 422) {
        return None;
    }
    Some(status_message(status))
}

/// A kube Status as the user reads it: its causes (`field: message`), else its message without
/// the `Kind "name" is invalid: ` the object's identity already says.
pub fn status_message(status: &kube::core::Status) -> String {
    let causes: Vec<String> = status
        .details
        .iter()
        .flat_map(|d| &d.causes)
        .map(|c| match (c.field.is_empty(), c.message.is_empty()) {
            (false, false) => format!("{}: {}", c.field, c.message),
            (true, false) => c.message.clone(),
            _ => c.reason.clone(),
        })
        .filter(|m| !m.is_empty())
        .collect();
    if !causes.is_empty() {
        return causes.join("; ");
    }
    let message = status.message.as_str();
    let message = match message.split_once(" is invalid: ") {
        Some((_, what)) => what,
        None => message,
    };
    if message.is_empty() {
        format!("refused by the cluster ({} {})", status.code, status.reason)
    } else {
        message.to_string()
    }
}

fn refusal(o: &PlannedObject, what: String) -> UnitError {
    UnitError {
        object: Some(o.key.clone()),
        file: Some(o.origin.file.clone()),
        message: format!("{} ({}): {what}", o.key, o.origin),
        ..Default::default()
    }
}

/// The outcomes of a unit refused before its first write: the refused objects failed, the others
/// not applied because of them (`ready` says how each stands live).
pub fn outcomes(
    prepared: &Prepared,
    errors: &[UnitError],
    ready: impl Fn(&ObjectKey) -> bool,
) -> Vec<ObjectOutcome> {
    let refused: Vec<ObjectKey> = errors.iter().filter_map(|e| e.object.clone()).collect();
    prepared
        .order
        .iter()
        .map(|&i| {
            let key = &prepared.objects[i].key;
            if refused.contains(key) {
                ObjectOutcome {
                    key: key.clone(),
                    action: ObjectAction::Failed,
                    ready: false,
                    reason: Some("Invalid".into()),
                    message: None,
                }
            } else {
                ObjectOutcome {
                    key: key.clone(),
                    action: ObjectAction::Blocked {
                        on: refused.clone(),
                    },
                    ready: ready(key),
                    reason: Some("UnitInvalid".into()),
                    message: Some("not applied: the cluster would refuse part of the unit".into()),
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;
    use serde_json::json;

    #[test]
    fn a_status_reads_as_its_fields() {
        let status = |v: Value| -> Status { serde_json::from_value(v).expect("a Status") };
        let plain = status(json!({"code": 422, "reason": "Invalid",
            "message": "Secret \"x\" is invalid: data[password]: Invalid value: not valid base64"}));
        assert_eq!(
            status_message(&plain),
            "data[password]: Invalid value: not valid base64"
        );
        let detailed = status(
            json!({"code": 422, "reason": "Invalid", "message": "whatever",
            "details": {"causes": [
                {"reason": "FieldValueInvalid", "message": "Invalid value: not valid base64", "field": "data[password]"},
                {"reason": "FieldValueRequired", "message": "Required value", "field": "metadata.name"}]}}),
        );
        assert_eq!(
            status_message(&detailed),
            "data[password]: Invalid value: not valid base64; metadata.name: Required value"
        );
        let empty = status(json!({"code": 403, "reason": "Forbidden"}));
        assert_eq!(
            status_message(&empty),
            "refused by the cluster (403 Forbidden)"
        );
    }
}

//! Deletion and what follows it: finalizers holding an object, garbage collection of dependents by
//! ownerReferences (background, foreground, orphan), namespaces and CRDs emptied before they go.
//!
//! Upstream does this asynchronously in controllers; here it happens inside the deleting request's
//! transaction, so it is done by the time the client hears back (except what finalizers hold).

use super::state::{CRD_PREFIX, Txn, owner_uids};
use crate::object::finalizers;
use serde_json::{Value, json};
use std::sync::Arc;

/// `propagationPolicy` of a DELETE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Propagation {
    Orphan,
    #[default]
    Background,
    Foreground,
}

const FOREGROUND: &str = "foregroundDeletion";
const ORPHAN: &str = "orphan";

use crate::object::str_at;

/// The storage-key parts: (group, kind, namespace, name).
fn key_parts(key: &str) -> (&str, &str, &str, &str) {
    let mut it = key.splitn(4, '/');
    (
        it.next().unwrap_or(""),
        it.next().unwrap_or(""),
        it.next().unwrap_or(""),
        it.next().unwrap_or(""),
    )
}

/// Starts deleting the object at `key`. Returns the object as it now stands, or `None` if absent.
pub fn delete(txn: &mut Txn, key: &str, propagation: Propagation, now: &str) -> Option<Arc<Value>> {
    let obj = txn.get(key)?;
    if txn.is_protected(key) {
        // Requests were refused before getting here; what remains is the collector following an
        // ownerReference, which upstream is refused as well and leaves the namespace as it is.
        return Some(obj);
    }
    let (group, kind, _, name) = key_parts(key);
    let is_namespace = group.is_empty() && kind == "Namespace";
    let is_crd = key.starts_with(CRD_PREFIX);
    let already = obj.pointer("/metadata/deletionTimestamp").is_some();
    let uid = str_at(&obj, "/metadata/uid").unwrap_or("").to_string();

    if propagation == Propagation::Orphan {
        orphan_dependents(txn, &uid);
    }
    let mut obj_now = (*obj).clone();
    let mut held = !finalizers(&obj).is_empty();
    if !already {
        obj_now["metadata"]["deletionTimestamp"] = json!(now);
        if is_namespace {
            // Upstream's namespace storage marks the deletion without a grace period.
            obj_now["status"] = json!({"phase": "Terminating"});
        } else {
            obj_now["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        }
    }
    let has_dependents = !txn.dependents_of(&uid).is_empty();
    if propagation == Propagation::Foreground
        && has_dependents
        && !finalizers(&obj_now).iter().any(|f| f == FOREGROUND)
    {
        push_finalizer(&mut obj_now, FOREGROUND);
        held = true;
    }
    if is_namespace || is_crd {
        held = true; // until emptied, below
    }
    if held {
        // Marking a held object deleted changes its desired state: a kind that counts
        // generations counts this one too, as upstream.
        if !already
            && let Some(g) = obj_now
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
        {
            obj_now["metadata"]["generation"] = json!(g + 1);
        }
        let staged = if *obj != obj_now {
            txn.put(key, obj_now)
        } else {
            obj.clone()
        };
        if propagation == Propagation::Foreground {
            for dep in txn.dependents_of(&uid) {
                delete(txn, &dep, Propagation::Foreground, now);
            }
        }
        if is_namespace {
            // One completion check at the end, not one per object removed.
            txn.defer_namespace(name, true);
            for (k, _) in txn.scan_keys(|k| key_parts(k).2 == name && !k.starts_with("/Namespace/"))
            {
                delete(txn, &k, Propagation::Background, now);
            }
            txn.defer_namespace(name, false);
        }
        if is_crd && let Some(prefix) = crd_instances_prefix(&staged) {
            for (k, _) in txn.scan(&prefix) {
                delete(txn, &k, Propagation::Background, now);
            }
        }
        return Some(try_complete(txn, key).unwrap_or(staged));
    }
    let _ = obj_now;
    remove(txn, key)
}

/// Storage-key prefix of a CRD's instances.
fn crd_instances_prefix(crd: &Value) -> Option<String> {
    let group = str_at(crd, "/spec/group")?;
    let kind = str_at(crd, "/spec/names/kind")?;
    Some(format!("{group}/{kind}/"))
}

fn push_finalizer(obj: &mut Value, f: &str) {
    let list = obj["metadata"]["finalizers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut list = list;
    list.push(json!(f));
    obj["metadata"]["finalizers"] = Value::Array(list);
}

fn orphan_dependents(txn: &mut Txn, uid: &str) {
    for dep in txn.dependents_of(uid) {
        if let Some(d) = txn.get(&dep) {
            let mut d = (*d).clone();
            if let Some(refs) = d["metadata"]["ownerReferences"].as_array_mut() {
                refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid));
                if refs.is_empty() {
                    d["metadata"]
                        .as_object_mut()
                        .map(|m| m.remove("ownerReferences"));
                }
            }
            txn.put(&dep, d);
        }
    }
}

/// A deleting object whose holds are gone (namespace or CRD emptied, foreground dependents gone,
/// no finalizers left) is removed. Returns the final object if it was removed.
fn try_complete(txn: &mut Txn, key: &str) -> Option<Arc<Value>> {
    let obj = txn.get(key)?;
    obj.pointer("/metadata/deletionTimestamp")?;
    let (group, kind, _, name) = key_parts(key);
    if group.is_empty()
        && kind == "Namespace"
        && !txn
            .scan_keys(|k| key_parts(k).2 == name && !k.starts_with("/Namespace/"))
            .is_empty()
    {
        return None;
    }
    if key.starts_with(CRD_PREFIX)
        && crd_instances_prefix(&obj).is_some_and(|p| !txn.scan(&p).is_empty())
    {
        return None;
    }
    let mut fins = finalizers(&obj);
    if fins.iter().any(|f| f == FOREGROUND) {
        let uid = str_at(&obj, "/metadata/uid").unwrap_or("");
        if !txn.dependents_of(uid).is_empty() {
            return None;
        }
        fins.retain(|f| f != FOREGROUND && f != ORPHAN);
        let mut o = (*obj).clone();
        o["metadata"]["finalizers"] = json!(fins);
        if fins.is_empty() {
            o["metadata"]
                .as_object_mut()
                .map(|m| m.remove("finalizers"));
        }
        txn.put(key, o);
    }
    if !fins.is_empty() {
        return None;
    }
    remove(txn, key)
}

/// Removes the object at `key` for good and collects what depended on it.
pub fn remove(txn: &mut Txn, key: &str) -> Option<Arc<Value>> {
    let gone = txn.remove(key)?;
    let uid = str_at(&gone, "/metadata/uid").unwrap_or("").to_string();
    let now = str_at(&gone, "/metadata/deletionTimestamp")
        .unwrap_or("")
        .to_string();
    // Dependents: deleted when no other owner of theirs exists; otherwise the dangling reference goes.
    for dep in txn.dependents_of(&uid) {
        let Some(d) = txn.get(&dep) else { continue };
        let other_owner_alive = owner_uids(&d)
            .iter()
            .filter(|u| **u != uid)
            .any(|u| txn.key_of_uid(u).is_some());
        if other_owner_alive {
            let mut d = (*d).clone();
            if let Some(refs) = d["metadata"]["ownerReferences"].as_array_mut() {
                refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid.as_str()));
            }
            txn.put(&dep, d);
        } else {
            delete(txn, &dep, Propagation::Background, &now);
        }
    }
    // Whatever was waiting for this object to go may now be complete.
    let (_, _, namespace, _) = key_parts(key);
    if !namespace.is_empty() && !txn.namespace_deferred(namespace) {
        try_complete(txn, &format!("/Namespace//{namespace}"));
    }
    for owner_uid in owner_uids(&gone) {
        if let Some(k) = txn.key_of_uid(&owner_uid)
            && txn
                .get(&k)
                .is_some_and(|o| o.pointer("/metadata/deletionTimestamp").is_some())
        {
            try_complete(txn, &k);
        }
    }
    let (group, kind, _, _) = key_parts(key);
    for (k, crd) in txn.scan(CRD_PREFIX) {
        if crd.pointer("/metadata/deletionTimestamp").is_some()
            && str_at(&crd, "/spec/group") == Some(group)
            && str_at(&crd, "/spec/names/kind") == Some(kind)
        {
            try_complete(txn, &k);
        }
    }
    Some(gone)
}

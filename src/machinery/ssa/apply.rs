//! Server-side apply and field tracking for ordinary writes.
//!
//! [`apply`] merges a manager's applied configuration into the live object, removes what that
//! manager applied before and no longer applies (unless someone else owns it), refuses fields
//! another manager owns with a different value unless forced, and rewrites managedFields.
//! [`record_update`] does the bookkeeping of every other write (create, PUT, merge/JSON/strategic
//! patch, status writes): the writer takes what it changed. Both follow the API server's field
//! manager: structured-merge-diff's Apply/Update, the `before-first-apply` entry for objects
//! without managedFields, untracked updates of such objects, `managedFields: [{}]` as a reset,
//! server-owned metadata left out, and timestamps kept when nothing changed.

use super::builtin::zero_object;
use super::conflicts::{ApplyConflicts, ConflictOwner};
use super::fieldset::{FieldSet, strip_server_owned};
use super::managed::{Entry, Operation, decode_lenient, decode_strict, encode_sorted, is_reset};
use super::path::values_equal;
use super::schema::Schema;
use super::walk::{compare, ensure_named_fields_are_members, merge, raw_field_set, remove_items};
use crate::object::split_api_version;
use serde_json::{Map, Value};

/// The manager Kubernetes credits with the fields of an object that had no managedFields when it
/// was first applied to.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// One server-side apply.
#[derive(Debug, Clone, Copy)]
pub struct ApplyRequest<'a> {
    /// Current object (with metadata.managedFields); `None` when creating.
    pub live: Option<&'a Value>,
    /// The manager's applied configuration, already stripped by the caller of `.status` for the
    /// main resource, or of everything but `.status` for /status.
    pub applied: &'a Value,
    pub manager: &'a str,
    pub force: bool,
    pub schema: &'a Schema,
    /// `Some("status")` for /status.
    pub subresource: Option<&'a str>,
    /// Recorded in the managedFields entry.
    pub api_version: &'a str,
    /// RFC 3339 time for the entry.
    pub now: &'a str,
}

/// Returns the new object (live merged with applied, fields this manager applied before and no
/// longer applies removed unless another manager owns them, metadata.managedFields rewritten),
/// or the conflicts. When nothing changes, returns a copy of `live`, timestamps included.
pub fn apply(req: &ApplyRequest) -> Result<Value, ApplyConflicts> {
    let schema = req.schema;
    let applied = without_managed_fields(req.applied);
    let live_obj = req
        .live
        .map(without_managed_fields)
        .unwrap_or_else(|| Value::Object(Map::new()));
    let mut entries = req.live.map(decode_lenient).unwrap_or_default();
    if let Some(live) = req.live
        && entries.is_empty()
    {
        // Kubernetes first credits everything already there to `before-first-apply`.
        let zero = zero_object_for(live);
        let c = compare(&zero, &live_obj, schema);
        let set = strip_server_owned(&c.added.union(&c.modified));
        if !set.is_empty() {
            let mut e = Entry::new(
                BEFORE_FIRST_APPLY,
                Operation::Update,
                req.api_version,
                req.subresource,
                set,
            );
            e.time = Some(req.now.to_string());
            entries.push(e);
        }
    }

    let new_set = raw_field_set(&applied, schema);
    let mine = entries.iter().position(|e| {
        e.is(
            req.manager,
            Operation::Apply,
            req.api_version,
            req.subresource,
        )
    });
    let merged = merge(&live_obj, &applied, schema);
    let new_obj = match mine.map(|i| &entries[i].set) {
        Some(last) if !last.is_empty() => {
            let owned = entries
                .iter()
                .enumerate()
                .filter(|(i, _)| Some(*i) != mine)
                .fold(new_set.clone(), |acc, (_, e)| acc.union(&e.set));
            prune(&merged, schema, last, &owned)
        }
        _ => merged,
    };

    let cmp = compare(&live_obj, &new_obj, schema);
    let changed = cmp.modified.union(&cmp.added);
    let mut groups = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if Some(i) == mine {
            continue;
        }
        let taken = e.set.intersection(&changed);
        if !taken.is_empty() {
            groups.push((i, taken));
        }
    }
    if !req.force && !groups.is_empty() {
        return Err(ApplyConflicts::new(
            groups
                .into_iter()
                .map(|(i, taken)| (owner(&entries[i]), taken.paths()))
                .collect(),
        ));
    }
    for (i, taken) in &groups {
        entries[*i].set = entries[*i].set.difference(taken);
    }
    for (i, e) in entries.iter_mut().enumerate() {
        if Some(i) != mine {
            e.set = e.set.difference(&cmp.removed);
        }
    }
    let my_set = strip_server_owned(&new_set);
    let mine = match mine {
        Some(i) => {
            entries[i].set = my_set;
            entries[i].api_version = req.api_version.to_string();
            i
        }
        None => {
            entries.push(Entry::new(
                req.manager,
                Operation::Apply,
                req.api_version,
                req.subresource,
                my_set,
            ));
            entries.len() - 1
        }
    };

    let unchanged_object = req.live.is_some() && values_equal(&live_obj, &new_obj);
    let object = if unchanged_object { live_obj } else { new_obj };
    if let Some(live) = req.live
        && unchanged_object
    {
        let kept = encode_sorted(&entries, Some(live));
        if values_equal(&Value::Array(kept), &managed_fields_of(live)) {
            return Ok(live.clone());
        }
    }
    // Upstream stamps the applier's entry only when the apply changed the object: a manager
    // that joins an unchanged object (or changes only what it owns) keeps its time, or has none.
    if !unchanged_object {
        entries[mine].time = Some(req.now.to_string());
    }
    let encoded = encode_sorted(&entries, req.live);
    Ok(with_managed_fields(object, encoded))
}

/// For a non-apply write (create, update/PUT, merge/json/strategic patch, status write): gives
/// `manager` (operation Update) the fields that were added or changed from `old` to `new`, takes
/// them from every other manager, drops removed fields from all sets, and writes
/// metadata.managedFields into `new`.
///
/// As on the API server: managedFields sent in `new` (main resource only) replace the live ones
/// when they all decode; `managedFields: [{}]` clears them; an existing object without
/// managedFields stays untracked.
pub fn record_update(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    schema: &Schema,
    subresource: Option<&str>,
    api_version: &str,
    now: &str,
) {
    let from_old = || old.map(decode_lenient).unwrap_or_default();
    let mut entries = if subresource.is_some() {
        from_old()
    } else if is_reset(new) {
        Vec::new()
    } else {
        match decode_strict(new) {
            Some(e) if !e.is_empty() => e,
            _ => from_old(),
        }
    };
    // Upstream converts each entry's fields to the version written, and drops the entries of a
    // version it cannot convert to: another API group's (an Event written through core v1 loses
    // its events.k8s.io entries). The object stays tracked.
    let tracked = !entries.is_empty();
    let group_of = |v: &str| v.rsplit_once('/').map_or("", |(g, _)| g).to_string();
    entries.retain(|e| group_of(&e.api_version) == group_of(api_version));
    let new_obj = without_managed_fields(new);
    if !tracked && old.is_some() {
        *new = with_managed_fields(new_obj, Vec::new());
        return;
    }
    let base = match old {
        Some(o) => without_managed_fields(o),
        None => zero_object_for(&new_obj),
    };
    let cmp = compare(&base, &new_obj, schema);
    let changed = cmp.modified.union(&cmp.added);
    for e in &mut entries {
        e.set = e.set.difference(&changed).difference(&cmp.removed);
    }
    let mine = strip_server_owned(&changed);
    if !mine.is_empty() {
        let existing = entries
            .iter_mut()
            .find(|e| e.is(manager, Operation::Update, api_version, subresource));
        match existing {
            Some(e) => {
                e.set = e.set.union(&mine);
                e.time = Some(now.to_string());
            }
            None => {
                let mut e = Entry::new(manager, Operation::Update, api_version, subresource, mine);
                e.time = Some(now.to_string());
                entries.push(e);
            }
        }
    }
    let encoded = encode_sorted(&entries, old);
    *new = with_managed_fields(new_obj, encoded);
}

/// Removes from `merged` what the applier owned before (`last`) and no longer owns, unless
/// another manager (or the applier's new configuration, all in `owned`) owns it; removing a
/// declared field removes what nobody owns below it. structured-merge-diff's prune, step by step.
fn prune(merged: &Value, schema: &Schema, last: &FieldSet, owned: &FieldSet) -> Value {
    let named = |set: &FieldSet| ensure_named_fields_are_members(set, schema);
    let fields_of = |v: &Value| named(&raw_field_set(v, schema));
    let remove = |set: &FieldSet| {
        remove_items(merged, set, schema).unwrap_or_else(|| Value::Object(Map::new()))
    };
    let merged_set = fields_of(merged);
    let last = named(last);
    let pruned = remove(&last);
    // Put back what someone owns.
    let unowned = merged_set.difference(&fields_of(&pruned).union(&named(owned)));
    let pruned = remove(&unowned);
    // Only remove what the applier had before.
    let gone = merged_set
        .difference(&fields_of(&pruned))
        .intersection(&last);
    remove(&gone)
}

fn owner(e: &Entry) -> ConflictOwner {
    ConflictOwner {
        manager: e.manager.clone(),
        operation: e.operation,
        api_version: e.api_version.clone(),
        subresource: e.subresource.clone(),
    }
}

fn zero_object_for(obj: &Value) -> Value {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    zero_object(split_api_version(api_version).0, kind)
}

fn managed_fields_of(obj: &Value) -> Value {
    obj.get("metadata")
        .and_then(|m| m.get("managedFields"))
        .cloned()
        .unwrap_or_else(|| Value::Array(Vec::new()))
}

fn without_managed_fields(obj: &Value) -> Value {
    let mut out = obj.clone();
    if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.shift_remove("managedFields");
    }
    out
}

fn with_managed_fields(mut obj: Value, entries: Vec<Value>) -> Value {
    if let Some(root) = obj.as_object_mut() {
        if entries.is_empty() {
            if let Some(meta) = root.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.shift_remove("managedFields");
            }
        } else {
            let meta = root
                .entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert("managedFields".into(), Value::Array(entries));
            }
        }
    }
    obj
}

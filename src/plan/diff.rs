//! What applying one object would do (create, update, nothing, delete) and the unified diff a person
//! reads in a plan; plus the per-unit summary line.
//!
//! Both sides are compared in the form [`comparable`] gives them and rendered as YAML. Secret values
//! never appear: each `data`/`stringData` value is replaced by a marker saying whether it changed.

use super::normalize::{comparable, is_secret};
use crate::object::ObjectKey;
use serde_json::{Map, Value};
use std::fmt;

/// What the plan does with one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    Create,
    Update,
    Unchanged,
    Delete,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Unchanged => "unchanged",
            Action::Delete => "delete",
        })
    }
}

/// The planned action for one object and its unified diff (empty when unchanged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectDiff {
    pub key: ObjectKey,
    pub action: Action,
    /// Unified diff, `live/<key>` → `desired/<key>`, 3 lines of context; Secret values hidden.
    pub diff: String,
}

/// Markers shown in place of Secret values.
pub const HIDDEN_UNCHANGED: &str = "(value hidden, unchanged)";
pub const HIDDEN_CHANGED: &str = "(value hidden, changed)";
pub const HIDDEN_BEFORE: &str = "(value hidden, before change)";
pub const HIDDEN_ADDED: &str = "(value hidden, added)";
pub const HIDDEN_REMOVED: &str = "(value hidden, removed)";

/// Plans one object: `desired` from git (None: it left git), `live` from the cluster (None: not there).
///
/// The key is read from `desired`, else from `live`. Both absent gives `Unchanged` with an empty key
/// and diff; callers have no reason to ask.
pub fn diff_object(desired: Option<&Value>, live: Option<&Value>) -> ObjectDiff {
    let key = desired.or(live).map(key_of).unwrap_or_else(empty_key);
    let empty = Value::Object(Map::new());
    let (action, old, new) = match (desired, live) {
        (None, None) => {
            return ObjectDiff {
                key,
                action: Action::Unchanged,
                diff: String::new(),
            };
        }
        (Some(d), None) => (Action::Create, None, Some(comparable(d, &empty).0)),
        // Projecting the live object onto itself keeps all of it but the server-set fields.
        (None, Some(l)) => (Action::Delete, Some(comparable(l, l).0), None),
        (Some(d), Some(l)) => {
            let (d, l) = comparable(d, l);
            if d == l {
                return ObjectDiff {
                    key,
                    action: Action::Unchanged,
                    diff: String::new(),
                };
            }
            (Action::Update, Some(l), Some(d))
        }
    };
    finish(key, action, old, new, "live")
}

/// Plans one object between two revisions: `desired` in head, `base` in the base revision. Unlike
/// [`diff_object`] nothing is projected: both are whole rendered objects, so a field removed in head
/// shows as removed.
pub fn diff_revisions(desired: Option<&Value>, base: Option<&Value>) -> ObjectDiff {
    let key = desired.or(base).map(key_of).unwrap_or_else(empty_key);
    let whole = |v: &Value| comparable(v, v).0;
    let (action, old, new) = match (desired.map(whole), base.map(whole)) {
        (None, None) => (Action::Unchanged, None, None),
        (Some(d), None) => (Action::Create, None, Some(d)),
        (None, Some(b)) => (Action::Delete, Some(b), None),
        (Some(d), Some(b)) if d == b => (Action::Unchanged, None, None),
        (Some(d), Some(b)) => (Action::Update, Some(b), Some(d)),
    };
    if action == Action::Unchanged {
        return ObjectDiff {
            key,
            action,
            diff: String::new(),
        };
    }
    finish(key, action, old, new, "base")
}

/// Hides Secret values and renders the unified diff `<from>/<key>` → `desired/<key>`.
fn finish(
    key: ObjectKey,
    action: Action,
    old: Option<Value>,
    new: Option<Value>,
    from: &str,
) -> ObjectDiff {
    let (mut old, mut new) = (old, new);
    let encrypted = crate::decrypt::fields::pointers_of(old.as_ref(), new.as_ref());
    hide_encrypted_values(&mut old, &mut new, &encrypted);
    let (old, new) = hide_secret_values(old, new);
    let render = |v: &Option<Value>| v.as_ref().map(crate::yaml::to_string).unwrap_or_default();
    let diff = similar::TextDiff::from_lines(render(&old), render(&new))
        .unified_diff()
        .context_radius(3)
        .header(&format!("{from}/{key}"), &format!("desired/{key}"))
        .to_string();
    ObjectDiff { key, action, diff }
}

/// Replaces the values at `pointers` (the fields that came encrypted from a SOPS file, see
/// [`crate::decrypt`]) on both sides by the markers, compared before they are hidden so the
/// markers say only whether each changed. Every output of an encrypted field goes through here:
/// the plan, the preview and the reports are built from these diffs.
pub fn hide_encrypted_values(
    old: &mut Option<Value>,
    new: &mut Option<Value>,
    pointers: &[String],
) {
    for p in pointers {
        let o = old.as_ref().and_then(|v| v.pointer(p)).cloned();
        let n = new.as_ref().and_then(|v| v.pointer(p)).cloned();
        let (om, nm) = match (&o, &n) {
            (Some(a), Some(b)) if a == b => (HIDDEN_UNCHANGED, HIDDEN_UNCHANGED),
            (Some(_), Some(_)) => (HIDDEN_BEFORE, HIDDEN_CHANGED),
            (Some(_), None) => (HIDDEN_REMOVED, ""),
            (None, Some(_)) => ("", HIDDEN_ADDED),
            (None, None) => continue,
        };
        for (side, marker) in [(&mut *old, om), (&mut *new, nm)] {
            if let Some(slot) = side.as_mut().and_then(|v| v.pointer_mut(p))
                && !marker.is_empty()
            {
                *slot = Value::String(marker.to_string());
            }
        }
    }
}

/// Replaces the values of a Secret's `data` and `stringData` on both sides by markers. Values are
/// compared before they are hidden, so the markers say whether each key changed.
fn hide_secret_values(old: Option<Value>, new: Option<Value>) -> (Option<Value>, Option<Value>) {
    let secret = old.as_ref().is_some_and(is_secret) || new.as_ref().is_some_and(is_secret);
    if !secret {
        return (old, new);
    }
    let (mut old, mut new) = (old, new);
    for field in ["data", "stringData"] {
        let o = old.as_ref().and_then(|v| v.get(field)).cloned();
        let n = new.as_ref().and_then(|v| v.get(field)).cloned();
        let (ho, hn) = hide_pair(o.as_ref(), n.as_ref());
        if let (Some(v), Some(h)) = (old.as_mut(), ho) {
            v[field] = h;
        }
        if let (Some(v), Some(h)) = (new.as_mut(), hn) {
            v[field] = h;
        }
    }
    (old, new)
}

fn hide_pair(old: Option<&Value>, new: Option<&Value>) -> (Option<Value>, Option<Value>) {
    let marker = |s: &str| Value::String(s.to_string());
    // `Some(None)`: side absent; `Some(Some(map))`: a map; `None`: present but not a map (malformed).
    fn as_map(v: Option<&Value>) -> Option<Option<&Map<String, Value>>> {
        match v {
            None => Some(None),
            Some(Value::Object(m)) => Some(Some(m)),
            Some(_) => None,
        }
    }
    match (as_map(old), as_map(new)) {
        (Some(old_map), Some(new_map)) => {
            let empty = Map::new();
            let (om, nm) = (old_map.unwrap_or(&empty), new_map.unwrap_or(&empty));
            let hide = |own: &Map<String, Value>, other: &Map<String, Value>, side_is_new: bool| {
                let mut out = Map::new();
                for (k, v) in own {
                    let m = match other.get(k) {
                        Some(ov) if ov == v => HIDDEN_UNCHANGED,
                        Some(_) if side_is_new => HIDDEN_CHANGED,
                        Some(_) => HIDDEN_BEFORE,
                        None if side_is_new => HIDDEN_ADDED,
                        None => HIDDEN_REMOVED,
                    };
                    out.insert(k.clone(), marker(m));
                }
                Value::Object(out)
            };
            (
                old_map.map(|_| hide(om, nm, false)),
                new_map.map(|_| hide(nm, om, true)),
            )
        }
        _ => {
            let same = old == new;
            let side = |v: Option<&Value>, changed: &str| {
                v.map(|_| marker(if same { HIDDEN_UNCHANGED } else { changed }))
            };
            (side(old, HIDDEN_BEFORE), side(new, HIDDEN_CHANGED))
        }
    }
}

/// Reads an object's key, leniently: plans also show objects whose identity is incomplete.
fn key_of(obj: &Value) -> ObjectKey {
    ObjectKey::from_object(obj).unwrap_or_else(|_| {
        let s = |p: &str| {
            obj.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let api_version = s("/apiVersion");
        let (group, version) = crate::object::split_api_version(&api_version);
        let namespace = Some(s("/metadata/namespace")).filter(|n| !n.is_empty());
        ObjectKey {
            group: group.into(),
            version: version.into(),
            kind: s("/kind"),
            namespace,
            name: s("/metadata/name"),
        }
    })
}

fn empty_key() -> ObjectKey {
    ObjectKey {
        group: String::new(),
        version: String::new(),
        kind: String::new(),
        namespace: None,
        name: String::new(),
    }
}

/// Counts per action for one unit; displays as "2 to create, 1 to update, 5 unchanged, 0 to delete".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnitSummary {
    pub creates: usize,
    pub updates: usize,
    pub unchanged: usize,
    pub deletes: usize,
}

impl UnitSummary {
    pub fn from_diffs<'a>(diffs: impl IntoIterator<Item = &'a ObjectDiff>) -> Self {
        let mut s = UnitSummary::default();
        for d in diffs {
            s.add(d.action);
        }
        s
    }

    pub fn add(&mut self, action: Action) {
        match action {
            Action::Create => self.creates += 1,
            Action::Update => self.updates += 1,
            Action::Unchanged => self.unchanged += 1,
            Action::Delete => self.deletes += 1,
        }
    }

    /// True when applying the unit would change something.
    pub fn has_changes(&self) -> bool {
        self.creates + self.updates + self.deletes > 0
    }
}

impl<'a> FromIterator<&'a ObjectDiff> for UnitSummary {
    fn from_iter<I: IntoIterator<Item = &'a ObjectDiff>>(iter: I) -> Self {
        UnitSummary::from_diffs(iter)
    }
}

impl fmt::Display for UnitSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} to create, {} to update, {} unchanged, {} to delete",
            self.creates, self.updates, self.unchanged, self.deletes
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "ns"}, "data": data})
    }

    fn secret(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"}, "data": data})
    }

    #[test]
    fn encrypted_fields_say_only_whether_they_changed() {
        let p = vec!["/spec/clientSecret".to_string()];
        let obj = |v: &str| json!({"spec": {"clientSecret": v, "other": 1}});
        let (mut o, mut n) = (Some(obj("old-value")), Some(obj("new-value")));
        hide_encrypted_values(&mut o, &mut n, &p);
        assert_eq!(o.unwrap()["spec"]["clientSecret"], HIDDEN_BEFORE);
        assert_eq!(n.unwrap()["spec"]["clientSecret"], HIDDEN_CHANGED);
        let (mut o, mut n) = (Some(obj("same")), Some(obj("same")));
        hide_encrypted_values(&mut o, &mut n, &p);
        assert_eq!(n.unwrap()["spec"]["clientSecret"], HIDDEN_UNCHANGED);
        let (mut o, mut n) = (None, Some(obj("new-value")));
        hide_encrypted_values(&mut o, &mut n, &p);
        assert_eq!(n.unwrap()["spec"]["clientSecret"], HIDDEN_ADDED);
        // Through a whole diff: the annotation names the fields, the value never shows.
        let cr = |v: &str| {
            json!({"apiVersion": "example.com/v1", "kind": "Thing",
                "metadata": {"name": "t", "namespace": "ns", "annotations": {
                    crate::decrypt::fields::ENCRYPTED_FIELDS: "[\"/spec/clientSecret\"]"}},
                "spec": {"clientSecret": v, "other": 1}})
        };
        let d = diff_object(Some(&cr("new-plaintext")), Some(&cr("old-plaintext")));
        assert_eq!(d.action, Action::Update);
        assert!(!d.diff.contains("plaintext"), "{}", d.diff);
        assert!(d.diff.contains(HIDDEN_CHANGED), "{}", d.diff);
        let d = diff_revisions(Some(&cr("new-plaintext")), None);
        assert!(!d.diff.contains("plaintext"), "{}", d.diff);
    }

    #[test]
    fn create_update_unchanged_delete() {
        let desired = cm(json!({"a": "1"}));
        let mut live = cm(json!({"a": "1"}));
        live["metadata"]["uid"] = json!("123");

        let create = diff_object(Some(&desired), None);
        assert_eq!(
            (create.action, create.key.to_string().as_str()),
            (Action::Create, "ConfigMap/ns/cfg")
        );
        assert!(
            create
                .diff
                .starts_with("--- live/ConfigMap/ns/cfg\n+++ desired/ConfigMap/ns/cfg\n"),
            "{}",
            create.diff
        );
        assert!(
            create.diff.contains("+  a: '1'") || create.diff.contains("+  a: \"1\""),
            "{}",
            create.diff
        );

        let same = diff_object(Some(&desired), Some(&live));
        assert_eq!((same.action, same.diff.as_str()), (Action::Unchanged, ""));

        let update = diff_object(Some(&cm(json!({"a": "2"}))), Some(&live));
        assert_eq!(update.action, Action::Update);
        let changed: Vec<&str> = update
            .diff
            .lines()
            .filter(|l| l.starts_with(['+', '-']) && !l.starts_with("+++") && !l.starts_with("---"))
            .collect();
        assert_eq!(changed.len(), 2, "{}", update.diff);
        assert!(!update.diff.contains("uid"), "{}", update.diff);

        let delete = diff_object(None, Some(&live));
        assert_eq!(delete.action, Action::Delete);
        assert!(
            delete
                .diff
                .lines()
                .skip(2)
                .filter(|l| !l.starts_with('@'))
                .all(|l| l.starts_with('-')),
            "{}",
            delete.diff
        );
        assert!(!delete.diff.contains("uid"), "{}", delete.diff);
    }

    #[test]
    fn context_is_three_lines() {
        let many: Map<String, Value> = (0..20)
            .map(|i| (format!("k{i:02}"), json!(i.to_string())))
            .collect();
        let mut changed = many.clone();
        changed.insert("k10".into(), json!("changed"));
        let d = diff_object(
            Some(&cm(Value::Object(changed))),
            Some(&cm(Value::Object(many))),
        );
        let body: Vec<&str> = d.diff.lines().skip(3).collect();
        assert_eq!(body.len(), 3 + 2 + 3, "{}", d.diff);
    }

    #[test]
    fn secret_values_never_shown() {
        let live = secret(json!({"same": "c2FtZQ==", "changes": "b2xk", "goes": "Z29uZQ=="}));
        let mut desired = secret(json!({"same": "c2FtZQ==", "changes": "bmV3"}));
        desired["stringData"] = json!({"added": "plaintext-secret"});
        let d = diff_object(Some(&desired), Some(&live));
        assert_eq!(d.action, Action::Update);
        for value in [
            "c2FtZQ==",
            "b2xk",
            "bmV3",
            "Z29uZQ==",
            "plaintext-secret",
            "cGxhaW50ZXh0LXNlY3JldA==",
        ] {
            assert!(!d.diff.contains(value), "leaked {value}:\n{}", d.diff);
        }
        assert!(
            d.diff.contains(&format!("-  changes: {HIDDEN_BEFORE}")),
            "{}",
            d.diff
        );
        assert!(
            d.diff.contains(&format!("+  changes: {HIDDEN_CHANGED}")),
            "{}",
            d.diff
        );
        assert!(
            d.diff.contains(&format!("   same: {HIDDEN_UNCHANGED}")),
            "{}",
            d.diff
        );
        assert!(
            d.diff.contains(&format!("+  added: {HIDDEN_ADDED}")),
            "{}",
            d.diff
        );
        // A key only live that no managed field gives the agent is outside the projection.
        assert!(!d.diff.contains("goes"), "{}", d.diff);

        let create = diff_object(Some(&desired), None);
        let delete = diff_object(None, Some(&live));
        for d in [&create, &delete] {
            assert!(
                !d.diff.contains("c2FtZQ==") && !d.diff.contains("plaintext"),
                "{}",
                d.diff
            );
        }
        assert!(
            create.diff.contains(&format!("+  added: {HIDDEN_ADDED}")),
            "{}",
            create.diff
        );
        assert!(
            delete.diff.contains(&format!("-  goes: {HIDDEN_REMOVED}")),
            "{}",
            delete.diff
        );
        assert!(diff_object(Some(&live), Some(&live)).diff.is_empty());
    }

    #[test]
    fn key_falls_back_and_both_absent() {
        let d = diff_object(
            Some(&json!({"kind": "Thing", "metadata": {"name": "x"}})),
            None,
        );
        assert_eq!(d.key.to_string(), "Thing/x");
        assert_eq!(diff_object(None, None).action, Action::Unchanged);
    }

    #[test]
    fn summary() {
        let a = |action| ObjectDiff {
            key: empty_key(),
            action,
            diff: String::new(),
        };
        let diffs = [
            a(Action::Create),
            a(Action::Create),
            a(Action::Update),
            a(Action::Unchanged),
        ];
        let s = UnitSummary::from_diffs(&diffs);
        assert_eq!(
            s.to_string(),
            "2 to create, 1 to update, 1 unchanged, 0 to delete"
        );
        assert!(s.has_changes());
        let s: UnitSummary = diffs[3..].iter().collect();
        assert!(!s.has_changes());
    }

    /// A managedFields entry of `manager`.
    fn owned(manager: &str, operation: &str, fields: Value) -> Value {
        json!({"manager": manager, "operation": operation, "apiVersion": "v1",
               "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields})
    }

    /// `desired` as the API server returns it after the agent applied `applied`: server
    /// metadata, a label and data key another manager added, and the agent's Apply entry.
    fn served(desired: &Value, applied_fields: Value) -> Value {
        let mut live = desired.clone();
        let meta = live["metadata"].as_object_mut().unwrap();
        meta.insert("uid".into(), json!("6f1c"));
        meta.insert("resourceVersion".into(), json!("4711"));
        meta.insert("creationTimestamp".into(), json!("2026-01-01T00:00:00Z"));
        meta.insert("labels".into(), json!({"owner": "someone-else"}));
        meta.insert(
            "managedFields".into(),
            json!([
                owned(crate::apply::FIELD_MANAGER, "Apply", applied_fields),
                owned(
                    "other",
                    "Update",
                    json!({"f:metadata": {"f:labels": {"f:owner": {}}},
                                                "f:data": {"f:theirs": {}}})
                )
            ]),
        );
        live["data"]["theirs"] = json!("dGhlaXJz");
        live
    }

    #[test]
    fn a_no_op_shows_nothing() {
        let desired = cm(json!({"a": "1", "when": "2026-01-01T00:00:00Z"}));
        let mut live = served(&desired, json!({"f:data": {"f:a": {}, "f:when": {}}}));
        live["status"] = json!({"observed": true});
        let d = diff_object(Some(&desired), Some(&live));
        assert_eq!((d.action, d.diff.as_str()), (Action::Unchanged, ""));
    }

    #[test]
    fn a_key_removed_from_git_shows_as_removal() {
        let applied = cm(json!({"a": "1", "b": "2"}));
        let live = served(&applied, json!({"f:data": {"f:a": {}, "f:b": {}}}));
        let d = diff_object(Some(&cm(json!({"a": "1"}))), Some(&live));
        assert_eq!(d.action, Action::Update);
        let changed: Vec<&str> = d
            .diff
            .lines()
            .filter(|l| l.starts_with(['+', '-']) && !l.starts_with("+++") && !l.starts_with("---"))
            .collect();
        assert_eq!(changed.len(), 1, "{}", d.diff);
        assert!(changed[0].starts_with("-  b:"), "{}", d.diff);
        assert!(
            !d.diff.contains("theirs") && !d.diff.contains("owner"),
            "{}",
            d.diff
        );
    }

    #[test]
    fn diff_text_follows_the_desired_key_order() {
        let desired = json!({"apiVersion": "example.com/v1", "kind": "Pool",
                             "metadata": {"name": "p", "namespace": "ns"},
                             "spec": {"size": "Standard_D4s_v3", "memory": "1Gi", "count": 2}});
        let live = json!({"kind": "Pool", "apiVersion": "example.com/v1",
                          "spec": {"count": 3, "memory": "1024Mi", "size": "Standard_D4s_v3",
                                   "defaulted": true},
                          "metadata": {"namespace": "ns", "name": "p", "generation": 7}});
        let d = diff_object(Some(&desired), Some(&live));
        assert_eq!(d.action, Action::Update);
        let body: Vec<&str> = d.diff.lines().skip(3).collect();
        assert_eq!(
            body,
            vec![
                " spec:",
                "   size: Standard_D4s_v3",
                "   memory: 1Gi",
                "-  count: 3",
                "+  count: 2",
            ],
            "{}",
            d.diff
        );
    }

    #[test]
    fn secret_keys_removed_from_git_show_as_removed_without_values() {
        let applied = secret(json!({"user": "YWRtaW4=", "password": "aHVudGVyMg=="}));
        let live = served(
            &applied,
            json!({"f:data": {"f:user": {}, "f:password": {}}}),
        );
        let same = diff_object(Some(&applied), Some(&live));
        assert_eq!((same.action, same.diff.as_str()), (Action::Unchanged, ""));

        let d = diff_object(Some(&secret(json!({"user": "YWRtaW4="}))), Some(&live));
        assert_eq!(d.action, Action::Update);
        assert!(
            d.diff.contains(&format!("-  password: {HIDDEN_REMOVED}")),
            "{}",
            d.diff
        );
        assert!(
            d.diff.contains(&format!("   user: {HIDDEN_UNCHANGED}")),
            "{}",
            d.diff
        );
        for value in ["YWRtaW4=", "aHVudGVyMg==", "dGhlaXJz", "theirs"] {
            assert!(!d.diff.contains(value), "leaked {value}:\n{}", d.diff);
        }
    }
}

#[cfg(test)]
mod converge_tests {
    use super::*;
    use crate::controlplane::ssa::{ApplyRequest, Schema, apply};
    use serde_json::json;

    /// Applies `desired` over `live` as the agent does (its field manager, forced).
    fn agent_applies(live: Option<&Value>, desired: &Value, now: &str) -> Value {
        let kind = desired["kind"].as_str().unwrap();
        apply(&ApplyRequest {
            live,
            applied: desired,
            manager: crate::apply::FIELD_MANAGER,
            force: true,
            schema: &Schema::builtin("", kind),
            subresource: None,
            api_version: "v1",
            now,
        })
        .unwrap()
    }

    fn service(ports: Value, selector: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "web", "namespace": "ns"},
               "spec": {"selector": selector, "ports": ports}})
    }

    #[test]
    fn a_removal_is_planned_once_and_applying_it_converges() {
        let first = service(
            json!([{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 8443}]),
            json!({"app": "web", "tier": "front"}),
        );
        let live = agent_applies(None, &first, "2026-01-01T00:00:00Z");
        assert_eq!(
            diff_object(Some(&first), Some(&live)).action,
            Action::Unchanged
        );

        let second = service(
            json!([{"port": 443, "targetPort": 8443}]),
            json!({"app": "web"}),
        );
        let plan = diff_object(Some(&second), Some(&live));
        assert_eq!(plan.action, Action::Update);
        assert!(plan.diff.contains("-  - port: 80"), "{}", plan.diff);
        assert!(plan.diff.contains("-    tier: front"), "{}", plan.diff);

        let live = agent_applies(Some(&live), &second, "2026-01-01T00:01:00Z");
        let again = diff_object(Some(&second), Some(&live));
        assert_eq!((again.action, again.diff.as_str()), (Action::Unchanged, ""));
    }
}

//! What applying one object would do (create, update, nothing, delete) and the unified diff a person
//! reads in a plan; plus the per-unit summary line.
//!
//! Both sides are compared in the form [`comparable`] gives them and rendered as YAML. Secret values
//! never appear: each `data`/`stringData` value is replaced by a marker saying whether it changed.

use super::normalize::comparable;
use crate::kinds::is_secret;
use crate::object::{ObjectKey, Sym};
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
            kind: s("/kind").into(),
            namespace: namespace.map(Sym::from),
            name: s("/metadata/name"),
        }
    })
}

fn empty_key() -> ObjectKey {
    ObjectKey {
        group: Default::default(),
        version: Default::default(),
        kind: Default::default(),
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
#[path = "diff_tests.rs"]
mod tests;

//! Kubernetes strategic merge patch (`application/strategic-merge-patch+json`).
//!
//! Maps merge recursively and `null` deletes a key, as in a JSON merge patch. Lists whose path the
//! [`MergeKeys`] table knows merge element-wise by a key or as a set of primitives; other lists are
//! replaced. The patch directives are honoured and never appear in the result:
//! - `$patch: replace` in a map replaces the map; as a list element it replaces the list;
//! - `$patch: delete` in a map deletes it; in a keyed list element it deletes the elements with
//!   that key;
//! - `$patch: merge` asks for the default merge (accepted and ignored);
//! - `$retainKeys: [..]` clears the map's keys not listed (every key the patch sets must be listed);
//! - `$deleteFromPrimitiveList/<field>: [..]` removes those values from the primitive list `field`;
//! - `$setElementOrder/<field>: [..]` gives the order of `field`'s elements, as `kubectl apply`
//!   sends it.
//!
//! Element order follows the Kubernetes implementation: elements named in the patch (or in
//! `$setElementOrder`) keep the patch's order, elements only on the server keep theirs, and the two
//! are interleaved by the server's order where both know an element. A new element therefore lands
//! before the server-only elements that follow no patched element (as `kubectl patch` shows a new
//! container first).

use super::keys::{ListStrategy, MergeKeys};
use super::merge::kind_of;
use super::{PatchError, json_eq};
use serde_json::{Map, Value};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

/// Applies a Kubernetes strategic merge patch to `target`, with list strategies from `keys`.
///
/// The patch must be a JSON object. Applied atomically: on error `target` is unchanged. A malformed
/// patch (not an object, unknown `$patch` value, list element without its merge key, element order
/// contradicting `$setElementOrder`, key missing from `$retainKeys`...) is [`PatchError::Malformed`].
pub fn strategic_merge_patch(
    target: &mut Value,
    patch: &Value,
    keys: &MergeKeys,
) -> Result<(), PatchError> {
    let Value::Object(patch) = patch else {
        // Go's words, as kube-apiserver decodes a strategic merge patch.
        return Err(malformed(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            crate::machinery::gojson::type_name(patch)
        )));
    };
    let mut doc = target.clone();
    let engine = Engine { keys };
    if let Outcome::Delete = engine.patch_slot(&mut doc, patch, "")? {
        return Err(malformed(
            "\"$patch: delete\" cannot delete the whole object".to_string(),
        ));
    }
    *target = doc;
    Ok(())
}

/// What a map patch asks for the value it applies to.
enum Outcome {
    Keep,
    Delete,
}

/// A `$patch` directive value.
enum Directive {
    Replace,
    Delete,
    Merge,
}

struct Engine<'k> {
    keys: &'k MergeKeys,
}

impl Engine<'_> {
    /// Applies a map patch to `slot` (any value; a non-map is replaced by a map).
    fn patch_slot(
        &self,
        slot: &mut Value,
        patch: &Map<String, Value>,
        path: &str,
    ) -> Result<Outcome, PatchError> {
        match directive(patch, path)? {
            Some(Directive::Delete) => return Ok(Outcome::Delete),
            Some(Directive::Replace) => {
                let mut fresh = Map::new();
                self.merge_map(&mut fresh, patch, path)?;
                *slot = Value::Object(fresh);
                return Ok(Outcome::Keep);
            }
            Some(Directive::Merge) | None => {}
        }
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        if let Value::Object(map) = slot {
            self.merge_map(map, patch, path)?;
        }
        Ok(Outcome::Keep)
    }

    /// Merges the fields of a map patch (its `$patch` directive already handled) into `target`.
    fn merge_map(
        &self,
        target: &mut Map<String, Value>,
        patch: &Map<String, Value>,
        path: &str,
    ) -> Result<(), PatchError> {
        let directives = MapDirectives::parse(patch, path)?;
        if let Some(retain) = &directives.retain_keys {
            for (key, value) in patch {
                if !value.is_null() && !is_directive_key(key) && !retain.contains(&key.as_str()) {
                    return Err(malformed(format!(
                        "{} sets {key:?}, which its $retainKeys does not list",
                        show(path)
                    )));
                }
            }
            target.retain(|key, _| retain.contains(&key.as_str()));
        }
        for (field, values) in &directives.delete_from {
            if let Some(Value::Array(items)) = target.get_mut(*field) {
                items.retain(|item| !values.iter().any(|gone| json_eq(item, gone)));
            }
        }
        for (key, value) in patch {
            if is_directive_key(key) {
                continue;
            }
            let child = join(path, key);
            match value {
                Value::Null => {
                    target.shift_remove(key);
                }
                Value::Object(inner) => {
                    let slot = target.entry(key.clone()).or_insert(Value::Null);
                    if let Outcome::Delete = self.patch_slot(slot, inner, &child)? {
                        target.shift_remove(key);
                    }
                }
                Value::Array(items) => {
                    let order = directives.order_of(key);
                    let merged = self.merge_list(target.get(key), items, &child, order)?;
                    target.insert(key.clone(), Value::Array(merged));
                }
                scalar => {
                    target.insert(key.clone(), scalar.clone());
                }
            }
        }
        // `$setElementOrder` for a list the patch does not otherwise touch: reorder only.
        for (field, order) in &directives.set_order {
            if patch.contains_key(*field) {
                continue;
            }
            let child = join(path, field);
            let Some(strategy) = self.keys.strategy(&child) else {
                continue;
            };
            if let Some(Value::Array(items)) = target.get_mut(*field) {
                let identity = Identity::of(strategy);
                identity.check_order_list(order, &child)?;
                let current = std::mem::take(items);
                *items = identity.arrange(current.clone(), order, &current);
            }
        }
        Ok(())
    }

    /// Merges a patch list into the list currently at `path` (if any), returning the new list.
    fn merge_list(
        &self,
        existing: Option<&Value>,
        patch: &[Value],
        path: &str,
        order: Option<&[Value]>,
    ) -> Result<Vec<Value>, PatchError> {
        let strategy = self.keys.strategy(path);
        let mut replace = false;
        let mut deletes = Vec::new();
        let mut regular = Vec::new();
        for item in patch {
            let Some(directive) = item
                .as_object()
                .map(|m| directive(m, path))
                .transpose()?
                .flatten()
            else {
                regular.push(item);
                continue;
            };
            match (directive, strategy) {
                (Directive::Replace, _) => replace = true,
                (Directive::Merge, _) => {}
                (Directive::Delete, Some(ListStrategy::ByKey(key))) => {
                    deletes.push(item.get(key.as_str()).ok_or_else(|| {
                        malformed(format!(
                            "a \"$patch: delete\" element of {path} lacks the merge key {key:?}"
                        ))
                    })?);
                }
                (Directive::Delete, _) => {
                    return Err(malformed(format!(
                        "\"$patch: delete\" element in {path}, a list without a merge key"
                    )));
                }
            }
        }
        let Some(strategy) = strategy else {
            // No patch strategy: the list is replaced by the patch's elements.
            return regular
                .into_iter()
                .map(|item| self.materialize(item, path))
                .collect();
        };
        let server: Vec<Value> = match existing {
            Some(Value::Array(items)) if !replace => items.clone(),
            _ => Vec::new(),
        };
        let mut merged = server.clone();
        match strategy {
            ListStrategy::Set => {
                if let Some(item) = regular.iter().find(|v| v.is_object() || v.is_array()) {
                    return Err(malformed(format!(
                        "{path} is a set of primitives, but the patch has {} in it",
                        kind_of(item)
                    )));
                }
                merged.extend(regular.iter().map(|v| (*v).clone()));
                let mut unique: Vec<Value> = Vec::with_capacity(merged.len());
                for item in merged {
                    if !unique.iter().any(|seen| json_eq(seen, &item)) {
                        unique.push(item);
                    }
                }
                merged = unique;
            }
            ListStrategy::ByKey(key) => {
                merged.retain(|item| {
                    !item
                        .get(key.as_str())
                        .is_some_and(|id| deletes.iter().any(|gone| json_eq(id, gone)))
                });
                for item in &regular {
                    let Value::Object(fields) = item else {
                        return Err(malformed(format!(
                            "{path} merges objects by {key:?}, but the patch has {} in it",
                            kind_of(item)
                        )));
                    };
                    let Some(id) = fields.get(key.as_str()) else {
                        return Err(malformed(format!(
                            "an element of {path} lacks the merge key {key:?}"
                        )));
                    };
                    let found = merged
                        .iter()
                        .position(|e| e.get(key.as_str()).is_some_and(|v| json_eq(v, id)));
                    let at = found.unwrap_or_else(|| {
                        merged.push(Value::Object(Map::new()));
                        merged.len() - 1
                    });
                    self.patch_slot(&mut merged[at], fields, path)?;
                }
            }
        }
        let identity = Identity::of(strategy);
        let regular: Vec<Value> = regular.into_iter().cloned().collect();
        if let Some(order) = order {
            identity.check_order_list(order, path)?;
            identity.check_patch_follows(&regular, order, path)?;
        }
        Ok(identity.arrange(merged, order.unwrap_or(&regular), &server))
    }

    /// The value a patch value produces where there is nothing to merge into: nested nulls and
    /// directives are applied to emptiness and so never leak into the result.
    fn materialize(&self, value: &Value, path: &str) -> Result<Value, PatchError> {
        Ok(match value {
            Value::Object(fields) => {
                let mut fresh = Value::Object(Map::new());
                self.patch_slot(&mut fresh, fields, path)?;
                fresh
            }
            Value::Array(items) => Value::Array(self.merge_list(None, items, path, None)?),
            other => other.clone(),
        })
    }
}

/// The map-level directives of one patch map.
struct MapDirectives<'p> {
    retain_keys: Option<Vec<&'p str>>,
    delete_from: Vec<(&'p str, &'p [Value])>,
    set_order: Vec<(&'p str, &'p [Value])>,
}

impl<'p> MapDirectives<'p> {
    fn parse(patch: &'p Map<String, Value>, path: &str) -> Result<Self, PatchError> {
        let mut out = MapDirectives {
            retain_keys: None,
            delete_from: Vec::new(),
            set_order: Vec::new(),
        };
        let list = |key: &str, value: &'p Value| -> Result<&'p [Value], PatchError> {
            value.as_array().map(Vec::as_slice).ok_or_else(|| {
                malformed(format!(
                    "{key} in {} must be a list, got {}",
                    show(path),
                    kind_of(value)
                ))
            })
        };
        for (key, value) in patch {
            if key == RETAIN_KEYS {
                let names = list(key, value)?
                    .iter()
                    .map(|name| {
                        name.as_str().ok_or_else(|| {
                            malformed(format!(
                                "{RETAIN_KEYS} in {} must list field names",
                                show(path)
                            ))
                        })
                    })
                    .collect::<Result<_, _>>()?;
                out.retain_keys = Some(names);
            } else if let Some(rest) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
                out.delete_from
                    .push((field_of(key, rest, path)?, list(key, value)?));
            } else if let Some(rest) = key.strip_prefix(SET_ELEMENT_ORDER) {
                out.set_order
                    .push((field_of(key, rest, path)?, list(key, value)?));
            }
        }
        Ok(out)
    }

    fn order_of(&self, field: &str) -> Option<&'p [Value]> {
        self.set_order
            .iter()
            .find(|(name, _)| *name == field)
            .map(|(_, order)| *order)
    }
}

/// The field a `$directive/<field>` key names.
fn field_of<'p>(key: &str, rest: &'p str, path: &str) -> Result<&'p str, PatchError> {
    match rest.strip_prefix('/') {
        Some(field) if !field.is_empty() => Ok(field),
        _ => Err(malformed(format!(
            "{key:?} in {} must have the form \"$directive/<field>\"",
            show(path)
        ))),
    }
}

/// How list elements are told apart: by their merge key, or by value in sets.
enum Identity<'k> {
    Key(&'k str),
    Value,
}

impl<'k> Identity<'k> {
    fn of(strategy: &'k ListStrategy) -> Self {
        match strategy {
            ListStrategy::ByKey(key) => Identity::Key(key),
            ListStrategy::Set => Identity::Value,
        }
    }

    fn id<'v>(&self, item: &'v Value) -> Option<&'v Value> {
        match self {
            Identity::Key(key) => item.get(*key),
            Identity::Value => Some(item),
        }
    }

    fn index_in(&self, list: &[Value], item: &Value) -> Option<usize> {
        let id = self.id(item)?;
        list.iter()
            .position(|other| self.id(other).is_some_and(|o| json_eq(o, id)))
    }

    /// `$setElementOrder` entries must carry the merge key (keyed lists) or be primitives (sets).
    fn check_order_list(&self, order: &[Value], path: &str) -> Result<(), PatchError> {
        let bad = match self {
            Identity::Key(key) => order.iter().any(|item| item.get(*key).is_none()),
            Identity::Value => order.iter().any(|item| item.is_object() || item.is_array()),
        };
        if bad {
            let what = match self {
                Identity::Key(key) => format!("objects with the merge key {key:?}"),
                Identity::Value => "primitives".to_string(),
            };
            return Err(malformed(format!(
                "{SET_ELEMENT_ORDER}/ for {path} must list {what}"
            )));
        }
        Ok(())
    }

    /// The patch's elements must appear in `$setElementOrder`, in the same relative order.
    fn check_patch_follows(
        &self,
        patch: &[Value],
        order: &[Value],
        path: &str,
    ) -> Result<(), PatchError> {
        let mut next = 0;
        for item in patch {
            match self.index_in(&order[next..], item) {
                Some(at) => next += at + 1,
                None => {
                    return Err(malformed(format!(
                        "the elements of {path} in the patch do not follow its {SET_ELEMENT_ORDER}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Orders `merged`: elements named in `order` follow it, the others (server-only) keep their
    /// order in `server`, and the two runs interleave by `server` order where it knows both.
    fn arrange(&self, merged: Vec<Value>, order: &[Value], server: &[Value]) -> Vec<Value> {
        let (mut named, mut server_only): (Vec<Value>, Vec<Value>) = merged
            .into_iter()
            .partition(|item| self.index_in(order, item).is_some());
        named.sort_by_key(|item| self.index_in(order, item));
        server_only.sort_by_key(|item| self.index_in(server, item).unwrap_or(usize::MAX));
        let mut out = Vec::with_capacity(named.len() + server_only.len());
        let mut left = server_only.into_iter().peekable();
        let mut right = named.into_iter().peekable();
        loop {
            let take_left = match (left.peek(), right.peek()) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(l), Some(r)) => match (self.index_in(server, l), self.index_in(server, r)) {
                    (Some(li), Some(ri)) => li < ri,
                    _ => false,
                },
            };
            out.extend(if take_left { left.next() } else { right.next() });
        }
        out
    }
}

/// Reads the `$patch` directive of a map, if any.
fn directive(map: &Map<String, Value>, path: &str) -> Result<Option<Directive>, PatchError> {
    match map.get(DIRECTIVE) {
        None => Ok(None),
        Some(Value::String(value)) => match value.as_str() {
            "replace" => Ok(Some(Directive::Replace)),
            "delete" => Ok(Some(Directive::Delete)),
            "merge" => Ok(Some(Directive::Merge)),
            other => Err(malformed(format!(
                "unknown {DIRECTIVE} value {other:?} in {}",
                show(path)
            ))),
        },
        Some(other) => Err(malformed(format!(
            "{DIRECTIVE} in {} must be a string, got {}",
            show(path),
            kind_of(other)
        ))),
    }
}

/// Keys that are patch directives rather than fields.
fn is_directive_key(key: &str) -> bool {
    key == DIRECTIVE
        || key == RETAIN_KEYS
        || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
        || key.starts_with(SET_ELEMENT_ORDER)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn show(path: &str) -> &str {
    if path.is_empty() {
        "the object root"
    } else {
        path
    }
}

fn malformed(message: String) -> PatchError {
    PatchError::Malformed(message)
}

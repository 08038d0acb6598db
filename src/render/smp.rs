//! Strategic merge patches as kustomize applies them, on the project's one patch engine
//! ([`crate::machinery::patch::strategic_merge_patch`]).
//!
//! kustomize merges with kyaml and the Kubernetes OpenAPI schema, which differs from the API server's
//! merge in three ways handled here around the engine:
//! - lists merge only for built-in Kubernetes kinds, by the keys of [`MergeKeys::kubernetes`]; a custom
//!   resource has no schema, so all its lists (metadata's included) are replaced;
//! - lists keyed by several fields in the schema (container and service `ports` by port and protocol,
//!   TCP when unset; `topologySpreadConstraints` by topology key and `whenUnsatisfiable`) match on all of
//!   them: a synthetic key joining them is added for the engine and removed after;
//! - order: in a list keyed by one field (and in sets), the patch's elements come first, in the patch's
//!   order, then the others in their order; in a list keyed by several fields, elements keep their place
//!   and new ones come first.
//!
//! - the directives kyaml does not implement (`$retainKeys`, `$setElementOrder`, `$deleteFromPrimitiveList`)
//!   are plain fields, copied into the object as kustomize copies them, and a keyed list element with
//!   `$patch: replace` changes nothing.
//!
//! A patch whose top level says `$patch: delete` deletes the object.

use super::openapi::Schema;
use crate::machinery::patch::{MergeKeys, strategic_merge_patch};
use crate::object::split_api_version;
use serde_json::{Map, Value};

/// What a patch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Patched,
    Deleted,
}

/// The synthetic field holding a multi-field key while the engine merges.
const SYNTH: &str = "\u{0}kustomize-merge-key";

/// Applies `patch` to `target` (both objects) as kustomize does: with the merge keys of `schema` when the
/// build has a custom OpenAPI schema (see [`super::openapi`]), else with kustomize's built-in ones.
pub fn apply(
    target: &mut Value,
    patch: &Value,
    schema: Option<&Schema>,
) -> Result<Outcome, String> {
    let Some(patch_map) = patch.as_object() else {
        return Err("a strategic merge patch must be a mapping".into());
    };
    match patch_map.get("$patch").and_then(Value::as_str) {
        Some("delete") => return Ok(Outcome::Deleted),
        Some("replace") => {
            let mut fresh = Value::Object(Map::new());
            let mut without = patch_map.clone();
            without.shift_remove("$patch");
            merge(&mut fresh, &Value::Object(without), schema)?;
            *target = fresh;
            return Ok(Outcome::Patched);
        }
        _ => {}
    }
    merge(target, patch, schema)?;
    Ok(Outcome::Patched)
}

fn merge(target: &mut Value, patch: &Value, schema: Option<&Schema>) -> Result<(), String> {
    let api_version = target
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let kind = target
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let (group, _) = split_api_version(&api_version);
    let mut keys = match schema {
        Some(schema) => schema.merge_keys(&api_version, &kind, patch)?,
        None => MergeKeys::kubernetes(group, &kind).unwrap_or_default(),
    };

    // Lists keyed by several fields in the built-in schema: find them in the patch, key them by a
    // synthetic field.
    let mut multi: Vec<(String, Vec<&'static str>)> = Vec::new();
    visit_lists(patch, "", &mut |path, _| {
        if schema.is_some() {
            return;
        }
        if let Some(fields) = multi_key(&keys, &kind, path)
            && !multi.iter().any(|(p, _)| p == path)
        {
            multi.push((path.to_string(), fields));
        }
    });
    for (path, _) in &multi {
        keys = keys.with_key(path, SYNTH);
    }
    let mut patch = patch.clone();
    let mut original = target.clone();
    for (path, fields) in &multi {
        add_synthetic_keys(&mut patch, path, fields);
        add_synthetic_keys(&mut original, path, fields);
    }
    let mut literals = Vec::new();
    kyaml_directives(&mut patch, &keys, "", &mut literals);

    let mut result = original.clone();
    strategic_merge_patch(&mut result, &patch, &keys).map_err(|e| e.to_string())?;
    reorder(&mut result, Some(&original), &patch, &keys, "");
    restore(&mut result, &literals);
    *target = result;
    Ok(())
}

/// Prefix of the directives kustomize does not know, renamed so the engine merges them as plain fields.
const LITERAL: &str = "\u{0}kustomize-literal:";
/// Prefix of the placeholders standing for lists copied as they are.
const LITERAL_LIST: &str = "\u{0}kustomize-list:";

/// Makes the patch mean what it means to kustomize's merge: `$retainKeys`, `$setElementOrder/...` and
/// `$deleteFromPrimitiveList/...` are plain fields to it (they end up in the object); an element of a
/// keyed list with both its key and `$patch: replace` changes nothing; and a list that does not merge
/// replaces the object's as written (directives and nulls in it included), so it is set aside in
/// `literals` and a placeholder merged instead.
fn kyaml_directives(v: &mut Value, keys: &MergeKeys, path: &str, literals: &mut Vec<Value>) {
    match v {
        Value::Object(map) => {
            let renamed: Vec<String> = map
                .keys()
                .filter(|k| {
                    k.as_str() == "$retainKeys"
                        || k.starts_with("$setElementOrder/")
                        || k.starts_with("$deleteFromPrimitiveList/")
                })
                .cloned()
                .collect();
            for key in renamed {
                if let Some(value) = map.shift_remove(&key) {
                    map.insert(format!("{LITERAL}{key}"), value);
                }
            }
            for (k, child) in map.iter_mut() {
                if !k.starts_with('$') && !k.starts_with(LITERAL) {
                    let child_path = join(path, k);
                    if child.is_array()
                        && keys.merge_key(&child_path).is_none()
                        && !keys.is_set(&child_path)
                    {
                        let list = std::mem::take(child);
                        *child = Value::String(format!("{LITERAL_LIST}{}", literals.len()));
                        literals.push(list);
                    } else {
                        kyaml_directives(child, keys, &child_path, literals);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(key) = keys.merge_key(path) {
                items.retain(|i| !(directive(i) == Some("replace") && i.get(key).is_some()));
            }
            for item in items {
                kyaml_directives(item, keys, path, literals);
            }
        }
        _ => {}
    }
}

/// Removes the synthetic keys, gives renamed directives their names back, and puts the lists set aside
/// in place of their placeholders.
fn restore(v: &mut Value, literals: &[Value]) {
    if let Value::String(s) = v
        && let Some(n) = s.strip_prefix(LITERAL_LIST)
        && let Some(list) = n.parse::<usize>().ok().and_then(|n| literals.get(n))
    {
        *v = list.clone();
        return;
    }
    match v {
        Value::Object(map) => {
            map.shift_remove(SYNTH);
            let renamed: Vec<String> = map
                .keys()
                .filter(|k| k.starts_with(LITERAL))
                .cloned()
                .collect();
            for key in renamed {
                if let Some(value) = map.shift_remove(&key) {
                    map.insert(key[LITERAL.len()..].to_string(), value);
                }
            }
            map.values_mut().for_each(|c| restore(c, literals));
        }
        Value::Array(items) => items.iter_mut().for_each(|c| restore(c, literals)),
        _ => {}
    }
}

/// The fields a list at `path` is keyed by in the schema, when more than one.
fn multi_key(keys: &MergeKeys, kind: &str, path: &str) -> Option<Vec<&'static str>> {
    match keys.merge_key(path)? {
        "containerPort" => Some(vec!["containerPort", "protocol"]),
        "port" if kind == "Service" && path == "spec.ports" => Some(vec!["port", "protocol"]),
        "topologyKey" => Some(vec!["topologyKey", "whenUnsatisfiable"]),
        _ => None,
    }
}

/// Calls `f` with the dotted path (list indices left out) of every list in `v`.
fn visit_lists(v: &Value, path: &str, f: &mut dyn FnMut(&str, &[Value])) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                if k.starts_with('$') {
                    continue;
                }
                visit_lists(child, &join(path, k), f);
            }
        }
        Value::Array(items) => {
            f(path, items);
            for item in items {
                visit_lists(item, path, f);
            }
        }
        _ => {}
    }
}

/// Adds the synthetic key to every element of the lists at `path` in `v`.
fn add_synthetic_keys(v: &mut Value, path: &str, fields: &[&str]) {
    let parts: Vec<&str> = path.split('.').collect();
    add_at(v, &parts, fields);
}

fn add_at(v: &mut Value, parts: &[&str], fields: &[&str]) {
    match v {
        Value::Array(items) => {
            for item in items {
                add_at(item, parts, fields);
            }
        }
        Value::Object(map) => {
            let Some((first, rest)) = parts.split_first() else {
                return;
            };
            let Some(child) = map.get_mut(*first) else {
                return;
            };
            if !rest.is_empty() {
                add_at(child, rest, fields);
            } else if let Value::Array(items) = child {
                for item in items.iter_mut().filter_map(Value::as_object_mut) {
                    let key = synthetic_key(item, fields);
                    item.insert(SYNTH.into(), Value::String(key));
                }
            }
        }
        _ => {}
    }
}

fn synthetic_key(item: &Map<String, Value>, fields: &[&str]) -> String {
    fields
        .iter()
        .map(|f| match item.get(*f) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None if *f == "protocol" => "TCP".to_string(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\u{0}")
}

/// Puts merged lists in kustomize's order (see the module documentation), recursively where the patch
/// reaches.
fn reorder(
    result: &mut Value,
    original: Option<&Value>,
    patch: &Value,
    keys: &MergeKeys,
    path: &str,
) {
    let (Value::Object(r), Value::Object(p)) = (result, patch) else {
        return;
    };
    for (k, pv) in p {
        if k.starts_with('$') {
            continue;
        }
        let child = join(path, k);
        let Some(rv) = r.get_mut(k) else { continue };
        let ov = original.and_then(|o| o.get(k));
        match pv {
            Value::Object(_) => reorder(rv, ov, pv, keys, &child),
            Value::Array(items) => reorder_list(rv, ov, items, keys, &child),
            _ => {}
        }
    }
}

fn directive(v: &Value) -> Option<&str> {
    v.get("$patch").and_then(Value::as_str)
}

fn reorder_list(
    result: &mut Value,
    original: Option<&Value>,
    patch: &[Value],
    keys: &MergeKeys,
    path: &str,
) {
    let Value::Array(list) = result else { return };
    if patch.iter().any(|i| directive(i) == Some("replace")) {
        return;
    }
    let key = keys.merge_key(path);
    if key.is_none() && !keys.is_set(path) {
        return;
    }
    let id = |v: &Value| -> Option<Value> {
        match key {
            Some(k) => v.get(k).cloned(),
            None => Some(v.clone()),
        }
    };
    let patch_ids: Vec<Value> = patch
        .iter()
        .filter(|i| directive(i).is_none())
        .filter_map(id)
        .collect();
    let orig_ids: Vec<Value> = original
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(id).collect())
        .unwrap_or_default();
    let in_place = key == Some(SYNTH);
    let rank = |v: &Value| -> (usize, usize) {
        let Some(i) = id(v) else {
            return (2, usize::MAX);
        };
        let in_patch = patch_ids.iter().position(|p| *p == i);
        let in_orig = orig_ids.iter().position(|o| *o == i);
        match (in_place, in_patch, in_orig) {
            (true, Some(p), None) => (0, p),
            (true, _, Some(o)) => (1, o),
            (false, Some(p), _) => (0, p),
            (false, None, Some(o)) => (1, o),
            (_, _, None) => (2, usize::MAX),
        }
    };
    list.sort_by_key(|v| rank(v));

    let Some(key) = key else { return };
    for item in patch
        .iter()
        .filter(|i| i.is_object() && directive(i).is_none())
    {
        let Some(item_id) = item.get(key) else {
            continue;
        };
        let orig = original
            .and_then(Value::as_array)
            .and_then(|a| a.iter().find(|e| e.get(key) == Some(item_id)));
        if let Some(elem) = list.iter_mut().find(|e| e.get(key) == Some(item_id)) {
            reorder(elem, orig, item, keys, path);
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patched(target: Value, patch: Value) -> Value {
        let mut t = target;
        assert_eq!(apply(&mut t, &patch, None).unwrap(), Outcome::Patched);
        t
    }

    #[test]
    fn keyed_lists_put_the_patch_first() {
        let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "finalizers": ["x", "y"]},
            "spec": {"template": {"spec": {"containers": [
                {"name": "a", "image": "a", "env": [{"name": "E1", "value": "1"}, {"name": "E2", "value": "2"}]},
                {"name": "b", "image": "b"}, {"name": "c", "image": "c"}]}}}});
        let out = patched(
            deploy,
            json!({"metadata": {"finalizers": ["z", "x"]}, "spec": {"template": {"spec": {"containers": [
                {"name": "b", "image": "b2"}, {"name": "d", "image": "d"},
                {"name": "a", "env": [{"name": "E0", "value": "0"}, {"name": "E2", "value": "22"}]}]}}}}),
        );
        let names: Vec<&str> = out["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["b", "d", "a", "c"]);
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"][2]["env"],
            json!([{"name": "E0", "value": "0"}, {"name": "E2", "value": "22"}, {"name": "E1", "value": "1"}])
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["z", "x", "y"]));
    }

    #[test]
    fn ports_match_on_port_and_protocol_and_keep_their_place() {
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"ports": [{"port": 53, "protocol": "TCP"}, {"port": 53, "protocol": "UDP", "name": "u"}]}});
        let out = patched(
            svc,
            json!({"spec": {"ports": [{"port": 99}, {"port": 53, "protocol": "UDP", "name": "changed"}]}}),
        );
        assert_eq!(
            out["spec"]["ports"],
            json!([{"port": 99}, {"port": 53, "protocol": "TCP"}, {"port": 53, "protocol": "UDP", "name": "changed"}])
        );
        // No protocol means TCP.
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}]}});
        let out = patched(
            svc,
            json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}]}}),
        );
        assert_eq!(
            out["spec"]["ports"],
            json!([{"port": 80, "protocol": "TCP", "targetPort": 8080}])
        );
    }

    #[test]
    fn custom_resources_replace_lists_and_delete_works() {
        let cr = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "finalizers": ["a"]},
            "spec": {"items": [{"name": "a", "v": 1}, {"name": "b"}]}});
        let out = patched(
            cr.clone(),
            json!({"metadata": {"finalizers": ["b"]}, "spec": {"items": [{"name": "b", "v": 3}]}}),
        );
        assert_eq!(out["spec"]["items"], json!([{"name": "b", "v": 3}]));
        assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
        let mut t = cr;
        assert_eq!(
            apply(&mut t, &json!({"$patch": "delete"}), None).unwrap(),
            Outcome::Deleted
        );
    }

    #[test]
    fn unknown_directives_and_unmerged_lists_are_copied_as_kustomize_copies_them() {
        let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
                     "template": {"spec": {"containers": [{"name": "a", "image": "a", "args": ["x"]}]}}}});
        let out = patched(
            deploy,
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"},
                            "template": {"spec": {"containers": [
                                {"name": "a", "$patch": "replace", "image": "new"},
                                {"name": "b", "image": "b", "args": [{"k": null}]}]}}}}),
        );
        assert_eq!(
            out["spec"]["strategy"],
            json!({"type": "Recreate", "rollingUpdate": {"maxSurge": 1}, "$retainKeys": ["type"]})
        );
        let containers = &out["spec"]["template"]["spec"]["containers"];
        assert_eq!(
            containers[0],
            json!({"name": "b", "image": "b", "args": [{"k": null}]})
        );
        assert_eq!(containers[1]["image"], "a");
    }
}

//! A generated ConfigMap or Secret with `behavior: merge` or `replace`, applied to the object of the same
//! identity already accumulated, as kustomize applies it.
//!
//! The result is the generated object, with:
//! - labels and annotations: the existing ones, overridden by the generated ones (each map rewritten in key
//!   order at the end of `metadata`);
//! - the existing object's name and namespace (which may carry a prefix from a base);
//! - for `merge` only, `data` and `binaryData`: the existing keys, overridden by the generated ones (values
//!   as text; each map rewritten in key order at the end of the object, or removed when empty).
//!
//! Everything else comes from the generated object: a Secret's `type` (so `Opaque` unless the generator sets
//! one), `immutable`, and nothing of the existing `stringData`.

use super::Behavior;
use super::error::GeneratorError;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Merges (`Merge`) `generated` into `existing`, or replaces `existing` with it (`Replace`), in place.
/// `Create` is an error: an object of that identity already exists.
pub fn merge_into(
    existing: &mut Value,
    generated: &Value,
    behavior: Behavior,
) -> Result<(), GeneratorError> {
    let error = |reason: &str| GeneratorError::Merge {
        object: describe(generated),
        action: match behavior {
            Behavior::Create => "create",
            Behavior::Merge => "merge",
            Behavior::Replace => "replace",
        },
        reason: reason.to_string(),
    };
    if behavior == Behavior::Create {
        return Err(error(
            "an object of this kind, name and namespace already exists; set behavior merge or replace",
        ));
    }
    let (Some(old), Some(new)) = (existing.as_object(), generated.as_object()) else {
        return Err(error("not a mapping"));
    };
    let mut result = new.clone();

    let labels = merged_strings(metadata_map(old, "labels"), metadata_map(new, "labels"));
    set_metadata_map(&mut result, "labels", labels);
    let annotations = merged_strings(
        metadata_map(old, "annotations"),
        metadata_map(new, "annotations"),
    );
    set_metadata_map(&mut result, "annotations", annotations);
    let name = metadata_text(old, "name");
    let namespace = metadata_text(old, "namespace");
    let metadata = metadata_mut(&mut result);
    metadata.insert("name".into(), Value::String(name));
    if namespace.is_empty() {
        metadata.shift_remove("namespace");
    } else {
        metadata.insert("namespace".into(), Value::String(namespace));
    }

    if behavior == Behavior::Merge {
        for field in ["data", "binaryData"] {
            let merged = merged_strings(string_map(old.get(field)), string_map(new.get(field)));
            result.shift_remove(field);
            if !merged.is_empty() {
                result.insert(field.into(), to_object(merged));
            }
        }
    }
    *existing = Value::Object(result);
    Ok(())
}

/// Whether the object resulting from a merge or replace gets the content hash suffix: kustomize v5.5
/// appends it only when both the existing object and the generator asked for one (a plain resource never
/// does).
pub fn hash_after_merge(existing: bool, generated: bool) -> bool {
    existing && generated
}

fn merged_strings(
    mut base: BTreeMap<String, String>,
    over: BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    base.extend(over);
    base
}

fn metadata_map(object: &Map<String, Value>, field: &str) -> BTreeMap<String, String> {
    string_map(object.get("metadata").and_then(|m| m.get(field)))
}

fn metadata_text(object: &Map<String, Value>, field: &str) -> String {
    object
        .get("metadata")
        .and_then(|m| m.get(field))
        .map(scalar_text)
        .unwrap_or_default()
}

/// A mapping's entries as text, as kyaml reads a string map (anything else is empty).
fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|map| {
            map.iter()
                .map(|(k, v)| (k.clone(), scalar_text(v)))
                .collect()
        })
        .unwrap_or_default()
}

/// A scalar's text (`1` is "1", `true` is "true"); null and collections are "".
fn scalar_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null | Value::Array(_) | Value::Object(_) => String::new(),
    }
}

fn metadata_mut(object: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !metadata.is_object() {
        *metadata = Value::Object(Map::new());
    }
    metadata
        .as_object_mut()
        .expect("metadata was just made a mapping")
}

/// Rewrites `metadata.<field>` at the end of `metadata`, in key order, or removes it when empty.
fn set_metadata_map(object: &mut Map<String, Value>, field: &str, map: BTreeMap<String, String>) {
    let metadata = metadata_mut(object);
    metadata.shift_remove(field);
    if !map.is_empty() {
        metadata.insert(field.into(), to_object(map));
    }
}

fn to_object(map: BTreeMap<String, String>) -> Value {
    Value::Object(
        map.into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect(),
    )
}

fn describe(obj: &Value) -> String {
    crate::object::ObjectKey::from_object(obj)
        .map(|key| key.to_string())
        .unwrap_or_else(|_| "generated object".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ordered(value: &Value) -> String {
        serde_json::to_string(value).unwrap()
    }

    #[test]
    fn merge_combines_data_and_metadata() {
        let mut existing = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "p-cm", "labels": {"l1": "base", "l2": "base"}, "annotations": {"a": "x"}},
            "data": {"a": "1", "b": "2", "n": 1, "t": true, "f": 1.5},
            "binaryData": {"bin": "AAH/"}
        });
        let generated = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "labels": {"l2": "ov"}},
            "data": {"b": "3", "c": "4"},
            "binaryData": {"bin2": "/v4="}
        });
        merge_into(&mut existing, &generated, Behavior::Merge).unwrap();
        assert_eq!(
            ordered(&existing),
            ordered(&json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "p-cm", "labels": {"l1": "base", "l2": "ov"}, "annotations": {"a": "x"}},
                "data": {"a": "1", "b": "3", "c": "4", "f": "1.5", "n": "1", "t": "true"},
                "binaryData": {"bin": "AAH/", "bin2": "/v4="}
            }))
        );
    }

    #[test]
    fn replace_keeps_only_the_generated_data() {
        let mut existing = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "ns", "labels": {"p": "q"}},
            "type": "kubernetes.io/tls", "immutable": true,
            "data": {"tls.crt": "eA=="}, "stringData": {"x": "y"}
        });
        let generated = json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"},
            "type": "Opaque", "data": {"extra": "MQ=="}
        });
        merge_into(&mut existing, &generated, Behavior::Replace).unwrap();
        assert_eq!(
            existing,
            json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "s", "namespace": "ns", "labels": {"p": "q"}},
                "type": "Opaque", "data": {"extra": "MQ=="}
            })
        );
    }

    #[test]
    fn merging_empty_data_removes_the_field() {
        let mut existing =
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {}});
        let generated = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                               "type": "Opaque", "data": {}});
        merge_into(&mut existing, &generated, Behavior::Merge).unwrap();
        assert_eq!(
            existing,
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "type": "Opaque"})
        );
    }

    #[test]
    fn create_over_an_existing_object_is_an_error() {
        let generated =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}});
        let mut existing = generated.clone();
        let err = merge_into(&mut existing, &generated, Behavior::Create).unwrap_err();
        assert!(
            err.to_string().starts_with("ConfigMap/cm: cannot create"),
            "{err}"
        );
    }

    #[test]
    fn hash_only_when_both_ask() {
        assert!(hash_after_merge(true, true));
        assert!(!hash_after_merge(true, false));
        assert!(!hash_after_merge(false, true));
    }
}

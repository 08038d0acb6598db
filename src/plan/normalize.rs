//! The one diff normaliser: turns a desired object and its live counterpart into two values that are
//! equal exactly when applying the desired object would change nothing the agent cares about.
//!
//! - Fields the server sets (`uid`, `resourceVersion`, `generation`, timestamps, `managedFields`, ...),
//!   `status`, and the `kubectl.kubernetes.io/last-applied-configuration` annotation are dropped.
//! - `ownerReferences` added by controllers are dropped unless the desired object sets some.
//! - The live object is projected onto the keys the desired object sets (maps recursively; lists are
//!   compared whole), so defaults and fields written by other controllers do not show as changes.
//! - `null` in a desired map means "absent" and is dropped; numbers compare by value (`1 == 1.0`).
//! - A desired Secret's `stringData` is folded into `data` (base64), as the API server stores it.

use base64::Engine as _;
use serde_json::{Map, Value};

/// `metadata` fields set by the API server, never by the agent.
const SERVER_METADATA: &[&str] = &[
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// Annotation written by `kubectl apply`; it holds a copy of the object (for a Secret, its data).
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Returns `(desired, live)` in comparable form: compare them with `==`.
pub fn comparable(desired: &Value, live: &Value) -> (Value, Value) {
    let mut d = desired.clone();
    strip_nulls(&mut d);
    fold_secret_string_data(&mut d);
    strip_server_fields(&mut d, true);
    canonical_numbers(&mut d);

    let mut l = live.clone();
    let desired_owner_refs = d.pointer("/metadata/ownerReferences").is_some();
    strip_server_fields(&mut l, desired_owner_refs);
    canonical_numbers(&mut l);
    let l = project(&l, &d);
    (d, l)
}

/// True when `obj` is a core `v1` Secret.
pub fn is_secret(obj: &Value) -> bool {
    obj.get("kind").and_then(Value::as_str) == Some("Secret")
        && obj.get("apiVersion").and_then(Value::as_str) == Some("v1")
}

fn strip_server_fields(obj: &mut Value, keep_owner_refs: bool) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    map.remove("status");
    let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    for field in SERVER_METADATA {
        meta.remove(*field);
    }
    if !keep_owner_refs {
        meta.remove("ownerReferences");
    }
    if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
}

/// Keeps from `live` only what `desired` sets: map keys recursively, any other value whole.
fn project(live: &Value, desired: &Value) -> Value {
    match (live, desired) {
        (Value::Object(l), Value::Object(d)) => {
            let mut out = Map::new();
            for key in d.keys() {
                if let Some(lv) = l.get(key) {
                    out.insert(key.clone(), project(lv, &d[key]));
                }
            }
            Value::Object(out)
        }
        _ => live.clone(),
    }
}

/// Drops `null` values from maps, at any depth (also in maps inside lists).
fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// Integral floats become integers, so `1.0` and `1` compare (and print) the same.
fn canonical_numbers(v: &mut Value) {
    match v {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if f.fract() == 0.0 && f.is_finite() {
                if f >= 0.0 && f <= u64::MAX as f64 {
                    *v = Value::from(f as u64);
                } else if f < 0.0 && f >= i64::MIN as f64 {
                    *v = Value::from(f as i64);
                }
            }
        }
        Value::Object(map) => map.values_mut().for_each(canonical_numbers),
        Value::Array(items) => items.iter_mut().for_each(canonical_numbers),
        _ => {}
    }
}

/// The API server merges `stringData` into `data` (base64, `stringData` wins) and never returns it.
fn fold_secret_string_data(obj: &mut Value) {
    if !is_secret(obj) {
        return;
    }
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let Some(Value::Object(string_data)) = map.remove("stringData") else {
        return;
    };
    let data = map
        .entry("data")
        .or_insert_with(|| Value::Object(Map::new()));
    if !data.is_object() {
        *data = Value::Object(Map::new());
    }
    let data = data.as_object_mut().expect("just made an object");
    for (k, v) in string_data {
        let text = match v {
            Value::String(s) => s,
            other => other.to_string(),
        };
        data.insert(
            k,
            Value::String(base64::engine::general_purpose::STANDARD.encode(text)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn server_fields_status_and_foreign_keys_do_not_count() {
        let desired = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "ns", "labels": {"x": "1"}},
            "data": {"k": "v"}
        });
        let live = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": "a", "namespace": "ns", "uid": "u", "resourceVersion": "7", "generation": 3,
                "creationTimestamp": "2024-01-01T00:00:00Z", "managedFields": [{}], "selfLink": "/x",
                "labels": {"x": "1", "added-by-other": "y"},
                "annotations": {LAST_APPLIED_ANNOTATION: "{}"},
                "ownerReferences": [{"kind": "Foo", "name": "f"}]
            },
            "data": {"k": "v"},
            "status": {"phase": "whatever"},
            "extra": {"defaulted": true}
        });
        let (d, l) = comparable(&desired, &live);
        assert_eq!(d, l);
        assert_eq!(l["metadata"]["labels"], json!({"x": "1"}));
    }

    #[test]
    fn real_changes_show() {
        let desired = json!({"kind": "X", "spec": {"a": {"b": 2}, "list": [1, 2]}});
        let changed_leaf = json!({"kind": "X", "spec": {"a": {"b": 3, "c": 1}, "list": [1, 2]}});
        let changed_list = json!({"kind": "X", "spec": {"a": {"b": 2}, "list": [1, 2, 3]}});
        let missing = json!({"kind": "X", "spec": {"list": [1, 2]}});
        for live in [changed_leaf, changed_list, missing] {
            let (d, l) = comparable(&desired, &live);
            assert_ne!(d, l, "{live}");
        }
    }

    #[test]
    fn lists_compare_whole() {
        let desired = json!({"spec": {"items": [{"a": 1}]}});
        let live = json!({"spec": {"items": [{"a": 1, "defaulted": "x"}]}});
        let (d, l) = comparable(&desired, &live);
        assert_ne!(d, l);
    }

    #[test]
    fn owner_references_kept_when_desired_sets_them() {
        let desired =
            json!({"metadata": {"name": "a", "ownerReferences": [{"kind": "A", "name": "o"}]}});
        let live =
            json!({"metadata": {"name": "a", "ownerReferences": [{"kind": "B", "name": "o"}]}});
        let (d, l) = comparable(&desired, &live);
        assert_ne!(d, l);
        assert_eq!(l["metadata"]["ownerReferences"][0]["kind"], "B");
    }

    #[test]
    fn numbers_by_value_and_nulls_as_absent() {
        let desired = json!({"spec": {"replicas": 1.0, "ratio": 0.5, "neg": -2.0, "gone": null}});
        let live = json!({"spec": {"replicas": 1, "ratio": 0.5, "neg": -2}});
        let (d, l) = comparable(&desired, &live);
        assert_eq!(d, l);
        assert_eq!(d["spec"]["replicas"], json!(1));
    }

    #[test]
    fn secret_string_data_folds_into_data() {
        let desired = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                             "data": {"a": "eA==", "b": "old"}, "stringData": {"b": "y"}});
        let live = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                          "data": {"a": "eA==", "b": "eQ=="}, "type": "Opaque"});
        let (d, l) = comparable(&desired, &live);
        assert_eq!(d, l);
        assert!(d.get("stringData").is_none());
    }

    #[test]
    fn inputs_are_not_modified() {
        let desired = json!({"metadata": {"name": "a", "uid": "x"}, "status": {}});
        let before = desired.clone();
        let _ = comparable(&desired, &desired);
        assert_eq!(desired, before);
    }
}

//! What kube-apiserver's patch handler refuses in a patched object before any validation, in its
//! words:
//! - a value the built-in kind's Go type cannot hold (a JSON or merge patch giving a ConfigMap's
//!   `data` a string): 422, quoting the patched object as Go's JSON patch library wrote it: the
//!   top level, and every object the patch reached, re-encoded with sorted keys; the rest in the
//!   order the API server encoded the object (Go's field order, maps sorted). A Secret is not
//!   quoted: its values are secret;
//! - a name or a namespace other than the request's: 400. A namespace the patch removed is the
//!   request's again.

use super::error::ApiError;
use super::objects::{PatchType, Target};
use crate::machinery::field::{BadValue, ErrorType, FieldError};
use crate::machinery::gojson;
use crate::validate::builtin::decode;
use serde_json::{Map, Value};
use std::collections::HashSet;

/// Checks the object `patch` made of `old`; restores a namespace the patch removed.
pub(super) fn check(
    target: &Target,
    name: &str,
    old: &Value,
    new: &mut Value,
    patch_type: PatchType,
    patch: &Value,
) -> Result<(), ApiError> {
    if matches!(patch_type, PatchType::Json | PatchType::Merge) && !target.rt.custom {
        let marks = match patch_type {
            PatchType::Merge => merge_marks(old, patch),
            _ => json_patch_marks(patch),
        };
        let text = encoded(&go_ordered(new), &marks);
        // Go decodes the text in its order: the first value at fault is the one it names.
        let as_read: Value = serde_json::from_str(&text).unwrap_or_else(|_| new.clone());
        let (group, kind) = (&target.rt.group, &target.rt.kind);
        if let Some(problem) = decode::decode_problems(group, kind, &as_read, true).first() {
            let error = if (group.as_str(), kind.as_str()) == ("", "Secret") {
                FieldError {
                    kind: ErrorType::Invalid,
                    field: "patch".into(),
                    value: BadValue::None,
                    detail: problem.go_error(),
                }
            } else {
                FieldError::invalid("patch", &text, &problem.go_error())
            };
            return Err(ApiError::invalid_object("", "", "", &[error]));
        }
    }
    check_identity(target, name, new)
}

/// The namespace and name of a patched object against the request's, as kube-apiserver checks
/// them after patching.
fn check_identity(target: &Target, name: &str, new: &mut Value) -> Result<(), ApiError> {
    let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let requested = target.namespace.as_deref().unwrap_or("");
    let namespace = meta.get("namespace").and_then(Value::as_str).unwrap_or("");
    if namespace != requested {
        if !namespace.is_empty() && !requested.is_empty() {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        if requested.is_empty() {
            meta.remove("namespace");
        } else {
            meta.insert("namespace".into(), Value::String(requested.into()));
        }
    }
    let patched_name = meta.get("name").and_then(Value::as_str).unwrap_or("");
    if patched_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({patched_name}) does not match the name on the URL ({name})"
        )));
    }
    Ok(())
}

/// `ObjectMeta`'s fields in Go's order.
fn object_meta_fields() -> impl Iterator<Item = &'static str> {
    crate::machinery::ssa::builtin::OBJECT_META_SCALARS
        .into_iter()
        .chain([
            "labels",
            "annotations",
            "ownerReferences",
            "finalizers",
            "managedFields",
        ])
}

/// An object in the order kube-apiserver's encoder writes it: `kind`, `apiVersion`, metadata in
/// Go's field order with its maps sorted, the data maps sorted, the rest as stored.
fn go_ordered(obj: &Value) -> Value {
    let Some(map) = obj.as_object() else {
        return obj.clone();
    };
    let mut out = Map::new();
    let sorted = |v: &Value| match v.as_object() {
        Some(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), m[k].clone()))
                    .collect(),
            )
        }
        None => v.clone(),
    };
    for k in ["kind", "apiVersion"] {
        if let Some(v) = map.get(k) {
            out.insert(k.into(), v.clone());
        }
    }
    if let Some(meta) = map.get("metadata").and_then(Value::as_object) {
        let mut ordered = Map::new();
        let known = object_meta_fields().filter_map(|k| meta.get_key_value(k));
        let rest = meta
            .iter()
            .filter(|(k, _)| !object_meta_fields().any(|f| f == k.as_str()));
        for (k, v) in known.chain(rest) {
            let v = match k.as_str() {
                "labels" | "annotations" => sorted(v),
                _ => v.clone(),
            };
            ordered.insert(k.clone(), v);
        }
        out.insert("metadata".into(), Value::Object(ordered));
    }
    for (k, v) in map {
        if !out.contains_key(k) {
            let v = match k.as_str() {
                "data" | "binaryData" | "stringData" => sorted(v),
                _ => v.clone(),
            };
            out.insert(k.clone(), v);
        }
    }
    Value::Object(out)
}

/// The objects Go's JSON patch library re-encodes (keys sorted), by path: `shallow` the object
/// itself, `deep` every object at or below the path.
#[derive(Debug, Default, PartialEq)]
struct Marks {
    shallow: HashSet<Vec<String>>,
    deep: HashSet<Vec<String>>,
}

/// A merge patch re-encodes the top level and each object both sides have; a value it puts
/// where there was none (or no object) is re-encoded whole; one replacing an object by a
/// non-object stays as the patch wrote it.
fn merge_marks(old: &Value, patch: &Value) -> Marks {
    fn walk(old: &Value, patch: &Value, at: &mut Vec<String>, marks: &mut Marks) {
        marks.shallow.insert(at.clone());
        let Some(patch) = patch.as_object() else {
            return;
        };
        for (k, p) in patch {
            if p.is_null() {
                continue;
            }
            at.push(k.clone());
            match old.get(k) {
                Some(cur @ Value::Object(_)) if p.is_object() => walk(cur, p, at, marks),
                Some(Value::Object(_)) => {}
                _ => {
                    marks.deep.insert(at.clone());
                }
            }
            at.pop();
        }
    }
    let mut marks = Marks::default();
    walk(old, patch, &mut Vec::new(), &mut marks);
    marks
}

/// A JSON patch re-encodes the top level and every object on the way to each path it names.
fn json_patch_marks(patch: &Value) -> Marks {
    let mut marks = Marks::default();
    marks.shallow.insert(Vec::new());
    for op in patch.as_array().into_iter().flatten() {
        for key in ["path", "from"] {
            let Some(path) = op.get(key).and_then(Value::as_str) else {
                continue;
            };
            let segments: Vec<String> = path
                .split('/')
                .skip(1)
                .map(|s| s.replace("~1", "/").replace("~0", "~"))
                .collect();
            for n in 0..segments.len() {
                marks.shallow.insert(segments[..n].to_vec());
            }
        }
    }
    marks
}

/// `value` as Go's JSON patch library writes the patched document, compact.
fn encoded(value: &Value, marks: &Marks) -> String {
    fn write(out: &mut String, v: &Value, at: &mut Vec<String>, deep: bool, marks: &Marks) {
        let deep = deep || marks.deep.contains(at);
        match v {
            Value::Object(m) => {
                let mut entries: Vec<(&String, &Value)> = m.iter().collect();
                if deep || marks.shallow.contains(at) {
                    entries.sort_by(|a, b| a.0.cmp(b.0));
                }
                out.push('{');
                for (i, (k, x)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    gojson::write_string(out, k);
                    out.push(':');
                    at.push(k.clone());
                    write(out, x, at, deep, marks);
                    at.pop();
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    at.push(i.to_string());
                    write(out, x, at, deep, marks);
                    at.pop();
                }
                out.push(']');
            }
            Value::String(s) => gojson::write_string(out, s),
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(&mut out, value, &mut Vec::new(), false, marks);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controlplane::registry::Registry;
    use serde_json::json;

    fn target(plural: &str) -> Target {
        let reg = Registry::new([]);
        Target {
            rt: reg.by_resource("", "v1", plural).expect("served"),
            version: "v1".into(),
            namespace: Some("n".into()),
            name: Some("a".into()),
            subresource: None,
        }
    }

    #[test]
    fn a_patched_object_go_cannot_decode_is_quoted_as_go_wrote_it() {
        let old = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "n", "resourceVersion": "5", "name": "a", "labels": {"z": "1", "b": "<&>"}}, "data": {"k": "v"}});
        let patch = json!({"data": "x"});
        let mut new = old.clone();
        new["data"] = json!("x");
        let e = check(
            &target("configmaps"),
            "a",
            &old,
            &mut new,
            PatchType::Merge,
            &patch,
        )
        .unwrap_err();
        assert_eq!(e.code, 422);
        let quoted = r#"{"apiVersion":"v1","data":"x","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","resourceVersion":"5","labels":{"b":"\u003c\u0026\u003e","z":"1"}}}"#;
        assert_eq!(
            e.message,
            format!(
                " \"\" is invalid: patch: Invalid value: {}: json: cannot unmarshal string into Go struct field ConfigMap.data of type map[string]string",
                crate::machinery::field::go_quote(quoted)
            )
        );
        let status = e.to_status();
        assert_eq!(status["details"]["causes"][0]["field"], "patch");
        assert!(status["details"].get("kind").is_none());
        // A Secret's values are not quoted.
        let old = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a", "namespace": "n"}, "data": {"k": "dg=="}});
        let mut new = old.clone();
        new["data"] = json!("x");
        let e = check(
            &target("secrets"),
            "a",
            &old,
            &mut new,
            PatchType::Merge,
            &json!({"data": "x"}),
        )
        .unwrap_err();
        assert!(!e.message.contains("dg=="), "{}", e.message);
        assert!(
            e.message
                .contains("patch: Invalid value: json: cannot unmarshal"),
            "{}",
            e.message
        );
    }

    #[test]
    fn objects_the_patch_reached_are_sorted_the_rest_keep_their_order() {
        let old = json!({"metadata": {"name": "a", "annotations": {"y": "1"}}, "spec": {"b": 1, "a": {"d": 1, "c": 2}}});
        let patch = json!({"spec": {"b": 2}, "status": {"z": 1, "y": {"q": 1, "p": 2}}});
        let marks = merge_marks(&old, &patch);
        let new = json!({"metadata": {"name": "a", "annotations": {"y": "1"}}, "spec": {"b": 2, "a": {"d": 1, "c": 2}}, "status": {"z": 1, "y": {"q": 1, "p": 2}}});
        assert_eq!(
            encoded(&new, &marks),
            r#"{"metadata":{"name":"a","annotations":{"y":"1"}},"spec":{"a":{"d":1,"c":2},"b":2},"status":{"y":{"p":2,"q":1},"z":1}}"#
        );
        let ops = json!([{"op": "replace", "path": "/spec/a/d", "value": 3}]);
        let marks = json_patch_marks(&ops);
        assert!(
            marks
                .shallow
                .contains(&vec!["spec".to_string(), "a".to_string()])
        );
        assert!(!marks.shallow.contains(&vec!["metadata".to_string()]));
    }

    #[test]
    fn a_renamed_or_moved_object_is_refused_and_a_removed_namespace_restored() {
        let t = target("configmaps");
        let old = json!({"metadata": {"name": "a", "namespace": "n"}});
        let mut renamed = json!({"metadata": {"name": "b", "namespace": "n"}});
        let e = check(&t, "a", &old, &mut renamed, PatchType::Json, &json!([])).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                400,
                "the name of the object (b) does not match the name on the URL (a)"
            )
        );
        let mut moved = json!({"metadata": {"name": "a", "namespace": "m"}});
        assert_eq!(
            check(&t, "a", &old, &mut moved, PatchType::Merge, &json!({}))
                .unwrap_err()
                .code,
            400
        );
        let mut removed = json!({"metadata": {"name": "a"}});
        check(&t, "a", &old, &mut removed, PatchType::Merge, &json!({})).unwrap();
        assert_eq!(removed["metadata"]["namespace"], "n");
    }
}

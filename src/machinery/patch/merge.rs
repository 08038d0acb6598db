//! RFC 7386 JSON merge patch (`application/merge-patch+json`).
//!
//! Objects merge recursively, `null` deletes a member, anything else (arrays included) replaces the
//! target value. The patch for a Kubernetes object body must itself be an object.

use super::PatchError;
use serde_json::{Map, Value};

/// Applies an RFC 7386 JSON merge patch to `target`.
///
/// The patch must be a JSON object (a whole-document replacement is not a valid PATCH of a
/// Kubernetes object): anything else is [`PatchError::Malformed`] and leaves `target` unchanged.
pub fn merge_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let Value::Object(patch) = patch else {
        // Go's words, as kube-apiserver decodes a merge patch (its default field validation).
        return Err(PatchError::Malformed(format!(
            "error decoding patch: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            crate::machinery::gojson::type_name(patch)
        )));
    };
    merge_object(target, patch);
    Ok(())
}

/// The RFC 7386 `MergePatch(Target, Patch)` step for an object patch.
fn merge_object(target: &mut Value, patch: &Map<String, Value>) {
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(target) = target else {
        return;
    };
    for (key, value) in patch {
        match value {
            Value::Null => {
                target.shift_remove(key);
            }
            Value::Object(inner) => {
                let slot = target.entry(key.clone()).or_insert(Value::Null);
                merge_object(slot, inner);
            }
            other => {
                target.insert(key.clone(), other.clone());
            }
        }
    }
}

/// A short name of a JSON value's type, for error messages (never the value itself).
pub(super) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn applied(target: Value, patch: Value) -> Value {
        // RFC 7386 appendix A also has non-object patches; they replace the whole document.
        // `merge_patch` rejects those for object bodies, so the table below wraps each case in a
        // member "x" to exercise the same recursion through the public function.
        let mut doc = json!({ "x": target });
        merge_patch(&mut doc, &json!({ "x": patch })).unwrap();
        doc["x"].take()
    }

    #[test]
    fn rfc7386_appendix_a_examples() {
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
            ),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (
                json!({"a": "b", "b": "c"}),
                json!({"a": null}),
                json!({"b": "c"}),
            ),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
            ),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a": "b"}), json!(["c"]), json!(["c"])),
            (json!({"a": "foo"}), json!(null), json!(null)),
            (json!({"a": "foo"}), json!("bar"), json!("bar")),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
            ),
            (
                json!([1, 2]),
                json!({"a": "b", "c": null}),
                json!({"a": "b"}),
            ),
            (
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
            ),
        ];
        for (target, patch, expected) in cases {
            let got = applied(target.clone(), patch.clone());
            assert_eq!(got, expected, "target {target} patch {patch}");
        }
    }

    #[test]
    fn rfc7386_section3_example() {
        let mut target = json!({
            "title": "Goodbye!",
            "author": {"givenName": "John", "familyName": "Doe"},
            "tags": ["example", "sample"],
            "content": "This will be unchanged"
        });
        let patch = json!({
            "title": "Hello!",
            "phoneNumber": "+01-123-456-7890",
            "author": {"familyName": null},
            "tags": ["example"]
        });
        merge_patch(&mut target, &patch).unwrap();
        assert_eq!(
            target,
            json!({
                "title": "Hello!",
                "author": {"givenName": "John"},
                "tags": ["example"],
                "content": "This will be unchanged",
                "phoneNumber": "+01-123-456-7890"
            })
        );
    }

    #[test]
    fn deleting_keeps_the_order_of_the_remaining_members() {
        let mut target = json!({"a": 1, "b": 2, "c": 3});
        merge_patch(&mut target, &json!({"a": null})).unwrap();
        let keys: Vec<_> = target.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["b", "c"]);
    }

    #[test]
    fn kubernetes_object_labels_merge_and_delete() {
        let mut cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"a": "1", "b": "2"}},
            "data": {"k": "v"}
        });
        let patch = json!({"metadata": {"labels": {"a": null, "c": "3"}}, "data": {"k2": "v2"}});
        merge_patch(&mut cm, &patch).unwrap();
        assert_eq!(cm["metadata"]["labels"], json!({"b": "2", "c": "3"}));
        assert_eq!(cm["data"], json!({"k": "v", "k2": "v2"}));
    }

    #[test]
    fn non_object_patch_is_malformed_and_target_unchanged() {
        let mut target = json!({"a": 1});
        for patch in [json!(null), json!([1]), json!("x"), json!(3)] {
            let err = merge_patch(&mut target, &patch).unwrap_err();
            assert!(matches!(err, PatchError::Malformed(_)), "{err}");
            assert_eq!(err.http_status(), 400);
        }
        assert_eq!(target, json!({"a": 1}));
    }
}

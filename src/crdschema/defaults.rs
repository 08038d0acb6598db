//! Schema `default:`s, applied as kube-apiserver applies them to a custom resource: after pruning,
//! on every write and on every read from storage, so a default added to a CRD later shows up on
//! the next read.
//!
//! A property's default fills the property when it is absent, or `null` where the property is not
//! `nullable`; defaults are applied inside objects that are present only (a default under an
//! absent object does not create it, unless that object has a default itself), then inside list
//! items and map values, where a `null` of a non-nullable item or value takes the item's default.

use super::node::{Additional, Node};
use super::{SchemaError, check};
use serde_json::Value;

/// Refuses a schema with a default its own node does not accept, as kube-apiserver refuses such
/// a CRD (`...properties[n].default: Invalid value: ...`); `at` is where `node` sits.
pub(super) fn check_defaults(node: &Node, at: &str) -> Result<(), SchemaError> {
    if let Some(default) = &node.default
        && let Some(e) = check::validate_value(default, node).first()
    {
        return Err(SchemaError::Malformed {
            at: format!("{at}.default"),
            error_type: e.error_type,
            message: e.body(),
        });
    }
    for (k, p) in &node.properties {
        check_defaults(p, &format!("{at}.properties[{k}]"))?;
    }
    if let Additional::Schema(values) = &node.additional {
        check_defaults(values, &format!("{at}.additionalProperties"))?;
    }
    if let Some(item) = &node.items {
        check_defaults(item, &format!("{at}.items"))?;
    }
    Ok(())
}

/// Whether `v` is a `null` the schema does not allow (`nullable: false`).
fn non_nullable_null(v: &Value, node: &Node) -> bool {
    v.is_null() && !node.nullable
}

/// Fills the defaults of `node` into `v`, recursively.
pub(super) fn apply(v: &mut Value, node: &Node) {
    match v {
        Value::Object(map) => {
            for (k, prop) in &node.properties {
                let Some(default) = &prop.default else {
                    continue;
                };
                if map.get(k).is_none_or(|x| non_nullable_null(x, prop)) {
                    map.insert(k.clone(), default.clone());
                }
            }
            for (k, x) in map.iter_mut() {
                if let Some(prop) = node.properties.get(k) {
                    apply(x, prop);
                } else if let Additional::Schema(values) = &node.additional {
                    if non_nullable_null(x, values)
                        && let Some(default) = &values.default
                    {
                        *x = default.clone();
                    }
                    apply(x, values);
                }
            }
        }
        Value::Array(items) => {
            let Some(item) = &node.items else { return };
            for x in items {
                if non_nullable_null(x, item)
                    && let Some(default) = &item.default
                {
                    *x = default.clone();
                }
                apply(x, item);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::StructuralSchema;
    use serde_json::json;

    fn schema() -> StructuralSchema {
        StructuralSchema::from_openapi(&json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "replicas": {"type": "integer", "default": 1},
                "note": {"type": "string", "nullable": true, "default": "none"},
                "label": {"type": "string", "default": "plain"},
                "template": {"type": "object", "properties": {"color": {"type": "string", "default": "blue"}}},
                "options": {"type": "object", "default": {}, "properties": {"depth": {"type": "integer", "default": 3}}},
                "ports": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "port": {"type": "integer", "default": 80}}}},
                "steps": {"type": "array", "items": {"type": "string", "default": "noop"}},
                "counts": {"type": "object", "additionalProperties": {"type": "integer", "default": 7}}
            }}}
        }))
        .unwrap()
    }

    #[test]
    fn absent_and_non_nullable_null_fields_take_their_default() {
        let mut obj = json!({"spec": {"note": null, "label": null, "replicas": 4}});
        schema().apply_defaults(&mut obj);
        assert_eq!(
            obj["spec"],
            json!({"note": null, "label": "plain", "replicas": 4, "options": {"depth": 3}})
        );
    }

    #[test]
    fn defaults_reach_present_objects_items_and_map_values_only() {
        let mut obj = json!({"spec": {"template": {}, "ports": [{"name": "a"}],
            "steps": [null, "x"], "counts": {"a": null, "b": 2}}});
        schema().apply_defaults(&mut obj);
        let spec = &obj["spec"];
        assert_eq!(spec["template"], json!({"color": "blue"}));
        assert_eq!(spec["ports"], json!([{"name": "a", "port": 80}]));
        assert_eq!(spec["steps"], json!(["noop", "x"]));
        assert_eq!(spec["counts"], json!({"a": 7, "b": 2}));
        let mut empty = json!({"metadata": {"name": "x"}});
        schema().apply_defaults(&mut empty);
        assert_eq!(empty, json!({"metadata": {"name": "x"}}));
    }

    #[test]
    fn a_default_its_schema_refuses_refuses_the_schema() {
        let err = StructuralSchema::from_openapi(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"n": {"type": "integer", "default": "x"}}}}}))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "openAPIV3Schema.properties[spec].properties[n].default: Invalid value: \"string\":  in body must be of type integer: \"string\""
        );
    }

    #[test]
    fn a_null_with_a_default_survives_pruning_and_takes_the_default() {
        let out = schema().validate(
            &json!({"spec": {"label": null, "replicas": null}}),
            super::super::FieldValidation::Warn,
        );
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        assert_eq!(out.pruned["spec"]["label"], json!("plain"));
        assert_eq!(out.pruned["spec"]["replicas"], json!(1));
    }
}

//! The shape of an object, as server-side apply needs to know it.
//!
//! Field ownership depends on structure only: which maps are granular (each key owned on its own)
//! or atomic (owned as one), which lists are atomic, sets of scalars, or associative lists keyed
//! by some of their items' fields, and which map keys are declared fields (struct members) rather
//! than free-form keys. [`Schema`] records exactly that, built from a CRD's OpenAPI v3 schema or
//! from the fixed shapes of the built-in kinds the control plane serves.

use super::builtin::object_meta;
use serde_json::Value;
use std::collections::BTreeMap;

/// How the items of a list are owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// The whole list is one field; applying it replaces it.
    Atomic,
    /// A set of scalars; each value is owned on its own (`v:` path elements).
    Set,
    /// An associative list: items are identified by these key fields (`k:` path elements).
    Map(Vec<String>),
}

/// The structure of a value, as far as field ownership is concerned.
#[derive(Debug, Clone, PartialEq)]
pub enum Schema {
    /// An object. `fields` are declared members; other keys follow `additional` (unknown keys are
    /// treated as [`Schema::Any`] when it is `None`). An atomic map is owned as one field.
    Map {
        fields: BTreeMap<String, Schema>,
        additional: Option<Box<Schema>>,
        atomic: bool,
    },
    /// A list whose items follow `items`.
    List {
        items: Box<Schema>,
        list_type: ListType,
    },
    /// A string, number, boolean or null.
    Scalar,
    /// Unknown shape (`x-kubernetes-preserve-unknown-fields`): maps granular with every key
    /// free-form, lists atomic, everything else scalar.
    Any,
}

/// The schema of everything unknown.
pub(crate) static ANY: Schema = Schema::Any;

impl Schema {
    /// From a CRD version's `schema.openAPIV3Schema`. Honours `type`, `properties`,
    /// `additionalProperties`, `items`, `x-kubernetes-list-type`, `x-kubernetes-list-map-keys`,
    /// `x-kubernetes-map-type: atomic`, `x-kubernetes-preserve-unknown-fields` and
    /// `x-kubernetes-int-or-string`. `apiVersion`, `kind` and the standard `metadata` shape are
    /// always used at the top, whatever the schema says about them.
    pub fn from_openapi_v3(schema: &Value) -> Schema {
        let converted = convert_openapi(schema);
        let (fields, additional) = match converted {
            Schema::Map {
                fields, additional, ..
            } => (fields, additional),
            _ => (BTreeMap::new(), Some(Box::new(Schema::Any))),
        };
        top_level(fields, additional)
    }

    /// Standard `apiVersion`, `kind` and `metadata`, anything else of unknown shape.
    pub fn any_object() -> Schema {
        top_level(BTreeMap::new(), Some(Box::new(Schema::Any)))
    }

    /// The schema of the value under key `name` of a map with this schema, and whether `name` is
    /// a declared field (a struct member) rather than a free-form key.
    pub(crate) fn field(&self, name: &str) -> (&Schema, bool) {
        match self {
            Schema::Map {
                fields, additional, ..
            } => match fields.get(name) {
                Some(s) => (s, true),
                None => (additional.as_deref().unwrap_or(&ANY), false),
            },
            _ => (&ANY, false),
        }
    }

    /// The schema of the items of a list with this schema.
    pub(crate) fn items(&self) -> &Schema {
        match self {
            Schema::List { items, .. } => items,
            _ => &ANY,
        }
    }
}

pub(crate) fn top_level(
    mut fields: BTreeMap<String, Schema>,
    additional: Option<Box<Schema>>,
) -> Schema {
    fields.insert("apiVersion".into(), Schema::Scalar);
    fields.insert("kind".into(), Schema::Scalar);
    fields.insert("metadata".into(), object_meta());
    Schema::Map {
        fields,
        additional,
        atomic: false,
    }
}

fn convert_openapi(s: &Value) -> Schema {
    let Some(obj) = s.as_object() else {
        return Schema::Any;
    };
    let flag = |name: &str| obj.get(name).and_then(Value::as_bool).unwrap_or(false);
    if flag("x-kubernetes-int-or-string") {
        return Schema::Scalar;
    }
    let preserve = flag("x-kubernetes-preserve-unknown-fields");
    let ty = obj.get("type").and_then(Value::as_str);
    let has_props = obj.contains_key("properties") || obj.contains_key("additionalProperties");
    match ty {
        Some("array") => convert_list(obj),
        Some("string" | "integer" | "number" | "boolean") => Schema::Scalar,
        Some("object") => convert_map(obj, preserve),
        None if has_props => convert_map(obj, preserve),
        None if obj.contains_key("items") => convert_list(obj),
        _ => Schema::Any,
    }
}

fn convert_map(obj: &serde_json::Map<String, Value>, preserve: bool) -> Schema {
    let fields: BTreeMap<String, Schema> = obj
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(k, v)| (k.clone(), convert_openapi(v)))
                .collect()
        })
        .unwrap_or_default();
    let additional = match obj.get("additionalProperties") {
        Some(Value::Object(s)) => Some(Box::new(convert_openapi(&Value::Object(s.clone())))),
        Some(Value::Bool(true)) => Some(Box::new(Schema::Any)),
        _ if preserve => Some(Box::new(Schema::Any)),
        _ => None,
    };
    let atomic = obj.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
    Schema::Map {
        fields,
        additional,
        atomic,
    }
}

fn convert_list(obj: &serde_json::Map<String, Value>) -> Schema {
    let items = obj.get("items").map(convert_openapi).unwrap_or(Schema::Any);
    let keys: Vec<String> = obj
        .get("x-kubernetes-list-map-keys")
        .map(|v| crate::object::strings_at(v, ""))
        .unwrap_or_default();
    let list_type = match obj.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => ListType::Set,
        Some("map") if !keys.is_empty() => ListType::Map(keys),
        _ => ListType::Atomic,
    };
    Schema::List {
        items: Box::new(items),
        list_type,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn openapi_honours_list_and_map_markers() {
        let s = Schema::from_openapi_v3(&json!({
            "type": "object",
            "properties": {
                "metadata": {"type": "object"},
                "spec": {"type": "object", "properties": {
                    "replicas": {"type": "integer"},
                    "args": {"type": "array", "items": {"type": "string"}},
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                                 "additionalProperties": {"type": "string"}},
                    "port": {"x-kubernetes-int-or-string": true},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }},
                "status": {"type": "object", "properties": {
                    "conditions": {"type": "array", "x-kubernetes-list-type": "map",
                                   "x-kubernetes-list-map-keys": ["type"],
                                   "items": {"type": "object", "properties": {
                                       "type": {"type": "string"}, "status": {"type": "string"}}}}
                }}
            }
        }));
        let (spec, declared) = s.field("spec");
        assert!(declared);
        assert_eq!(spec.field("replicas").0, &Schema::Scalar);
        assert!(matches!(
            spec.field("args").0,
            Schema::List {
                list_type: ListType::Atomic,
                ..
            }
        ));
        assert!(matches!(
            spec.field("tags").0,
            Schema::List {
                list_type: ListType::Set,
                ..
            }
        ));
        assert!(matches!(
            spec.field("selector").0,
            Schema::Map { atomic: true, .. }
        ));
        assert_eq!(spec.field("port").0, &Schema::Scalar);
        let (extra, _) = spec.field("extra");
        assert_eq!(extra.field("anything"), (&Schema::Any, false));
        let conds = s.field("status").0.field("conditions").0;
        assert!(
            matches!(conds, Schema::List { list_type: ListType::Map(k), .. } if k == &vec!["type".to_string()])
        );
        // metadata is always the standard shape, whatever the CRD says
        assert_eq!(s.field("metadata").0, &object_meta());
    }

    #[test]
    fn builtin_service_ports_are_keyed_by_port_and_protocol() {
        let s = Schema::builtin("", "Service");
        let ports = s.field("spec").0.field("ports").0;
        assert!(matches!(
            ports,
            Schema::List { list_type: ListType::Map(k), .. } if k == &vec!["port".to_string(), "protocol".to_string()]
        ));
        assert!(matches!(
            s.field("spec").0.field("selector").0,
            Schema::Map { atomic: true, .. }
        ));
        assert_eq!(
            Schema::builtin("example.com", "Widget"),
            Schema::any_object()
        );
    }
}

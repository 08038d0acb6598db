//! A CRD version's `openAPIV3Schema` read into the parts kube-apiserver enforces: types, value
//! rules, and the extensions that steer pruning (`x-kubernetes-preserve-unknown-fields`,
//! `x-kubernetes-embedded-resource`, `x-kubernetes-int-or-string`).

use super::{ErrorType, SchemaError};
use regex::Regex;
use serde_json::Value;
use std::collections::BTreeMap;

/// The JSON type a schema node declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum JsonType {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
}

impl JsonType {
    fn parse(s: &str) -> Option<JsonType> {
        Some(match s {
            "object" => JsonType::Object,
            "array" => JsonType::Array,
            "string" => JsonType::String,
            "integer" => JsonType::Integer,
            "number" => JsonType::Number,
            "boolean" => JsonType::Boolean,
            _ => return None,
        })
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            JsonType::Object => "object",
            JsonType::Array => "array",
            JsonType::String => "string",
            JsonType::Integer => "integer",
            JsonType::Number => "number",
            JsonType::Boolean => "boolean",
        }
    }

    /// Whether `v` has this type (an integral float counts as an integer, as in kube-openapi).
    pub(super) fn matches(self, v: &Value) -> bool {
        match self {
            JsonType::Object => v.is_object(),
            JsonType::Array => v.is_array(),
            JsonType::String => v.is_string(),
            JsonType::Integer => is_integer(v),
            JsonType::Number => v.is_number(),
            JsonType::Boolean => v.is_boolean(),
        }
    }
}

pub(super) fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// What an object node does with keys it does not declare.
#[derive(Debug, Clone)]
pub(super) enum Additional {
    /// No `additionalProperties`: undeclared keys are pruned unless the node preserves them.
    Unspecified,
    /// `additionalProperties: true|false`.
    Allow(bool),
    /// `additionalProperties: {schema}`: a map whose values follow the schema.
    Schema(Box<Node>),
}

/// A numeric bound.
#[derive(Debug, Clone)]
pub(super) struct Bound {
    pub value: f64,
    pub exclusive: bool,
}

/// `x-kubernetes-list-type`.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum ListType {
    Atomic,
    Set,
    Map(Vec<String>),
}

/// One node of a structural schema.
#[derive(Debug, Clone)]
pub(super) struct Node {
    pub types: Option<JsonType>,
    pub nullable: bool,
    pub int_or_string: bool,
    pub preserve_unknown: bool,
    pub embedded: bool,
    pub properties: BTreeMap<String, Node>,
    pub additional: Additional,
    pub items: Option<Box<Node>>,
    pub required: Vec<String>,
    pub enumeration: Option<Vec<Value>>,
    pub pattern: Option<(String, Regex)>,
    pub minimum: Option<Bound>,
    pub maximum: Option<Bound>,
    pub multiple_of: Option<f64>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub min_properties: Option<u64>,
    pub max_properties: Option<u64>,
    pub format: Option<String>,
    pub list_type: ListType,
    pub all_of: Vec<Node>,
    pub any_of: Vec<Node>,
    pub one_of: Vec<Node>,
    pub not: Option<Box<Node>>,
    /// `default:`, applied by [`super::defaults`].
    pub default: Option<Value>,
    /// `x-kubernetes-validations`, compiled.
    pub rules: Vec<super::cel::Rule>,
}

impl Node {
    /// Reads one schema node; `at` is where it sits in the CRD, for errors.
    pub(super) fn parse(v: &Value, at: &str) -> Result<Node, SchemaError> {
        let Some(m) = v.as_object() else {
            return Err(SchemaError::Malformed {
                at: at.to_string(),
                error_type: ErrorType::Invalid,
                message: "Invalid value: a schema must be an object".into(),
            });
        };
        let flag = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
        let uint = |k: &str| m.get(k).and_then(Value::as_u64);
        let bound = |k: &str, exclusive: &str| {
            m.get(k).and_then(|n| {
                n.as_f64().map(|value| Bound {
                    value,
                    exclusive: flag(exclusive),
                })
            })
        };
        if flag("uniqueItems") {
            return Err(SchemaError::Malformed {
                at: format!("{at}.uniqueItems"),
                error_type: ErrorType::Forbidden,
                message: "Forbidden: uniqueItems cannot be set to true since the runtime \
                          complexity becomes quadratic"
                    .into(),
            });
        }
        Ok(Node {
            types: type_of(m, at)?,
            nullable: flag("nullable"),
            int_or_string: flag("x-kubernetes-int-or-string"),
            preserve_unknown: flag("x-kubernetes-preserve-unknown-fields"),
            embedded: flag("x-kubernetes-embedded-resource"),
            properties: properties_of(m, at)?,
            additional: additional_of(m, at)?,
            items: child_of(m, "items", at)?,
            required: strings(m, "required"),
            enumeration: m.get("enum").and_then(Value::as_array).cloned(),
            pattern: pattern_of(m, at)?,
            minimum: bound("minimum", "exclusiveMinimum"),
            maximum: bound("maximum", "exclusiveMaximum"),
            multiple_of: m.get("multipleOf").and_then(Value::as_f64),
            min_length: uint("minLength"),
            max_length: uint("maxLength"),
            min_items: uint("minItems"),
            max_items: uint("maxItems"),
            min_properties: uint("minProperties"),
            max_properties: uint("maxProperties"),
            format: m
                .get("format")
                .and_then(Value::as_str)
                .filter(|f| !f.is_empty())
                .map(str::to_string),
            list_type: list_type_of(m),
            all_of: children_of(m, "allOf", at)?,
            any_of: children_of(m, "anyOf", at)?,
            one_of: children_of(m, "oneOf", at)?,
            not: child_of(m, "not", at)?,
            default: m.get("default").cloned(),
            rules: super::cel::parse_rules(v, at)?,
        })
    }

    /// Whether this node or one below has CEL rules.
    pub(super) fn has_rules(&self) -> bool {
        let additional = match &self.additional {
            Additional::Schema(s) => s.has_rules(),
            _ => false,
        };
        !self.rules.is_empty()
            || additional
            || self.items.as_ref().is_some_and(|i| i.has_rules())
            || self.properties.values().any(Node::has_rules)
            || self.all_of.iter().any(Node::has_rules)
    }

    /// Whether this node or one below has a `default:`.
    pub(super) fn has_defaults(&self) -> bool {
        let additional = match &self.additional {
            Additional::Schema(s) => s.has_defaults(),
            _ => false,
        };
        self.default.is_some()
            || additional
            || self.items.as_ref().is_some_and(|i| i.has_defaults())
            || self.properties.values().any(Node::has_defaults)
    }

    /// Whether undeclared keys of an object at this node are kept.
    pub(super) fn keeps_unknown(&self) -> bool {
        self.preserve_unknown || matches!(self.additional, Additional::Allow(true))
    }

    /// The schema of key `k` of an object at this node, if declared (by name or as a map value).
    pub(super) fn child(&self, k: &str) -> Option<&Node> {
        self.properties.get(k).or(match &self.additional {
            Additional::Schema(s) => Some(s),
            _ => None,
        })
    }
}

/// A schema object's fields, as [`Node::parse`] reads them.
type Fields = serde_json::Map<String, Value>;

/// `type:`, when set and not empty.
fn type_of(m: &Fields, at: &str) -> Result<Option<JsonType>, SchemaError> {
    match m.get("type").and_then(Value::as_str) {
        None | Some("") => Ok(None),
        Some(t) => JsonType::parse(t)
            .map(Some)
            .ok_or_else(|| SchemaError::Malformed {
                at: format!("{at}.type"),
                error_type: ErrorType::NotSupported,
                message: format!(
                    "Unsupported value: {t:?}: supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""
                ),
            }),
    }
}

/// The schemas of `properties:`, by name.
fn properties_of(m: &Fields, at: &str) -> Result<BTreeMap<String, Node>, SchemaError> {
    let mut properties = BTreeMap::new();
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        for (k, child) in props {
            properties.insert(
                k.clone(),
                Node::parse(child, &format!("{at}.properties[{k}]"))?,
            );
        }
    }
    Ok(properties)
}

/// `additionalProperties:`, a flag or a schema.
fn additional_of(m: &Fields, at: &str) -> Result<Additional, SchemaError> {
    Ok(match m.get("additionalProperties") {
        None => Additional::Unspecified,
        Some(Value::Bool(b)) => Additional::Allow(*b),
        Some(s) => Additional::Schema(Box::new(Node::parse(
            s,
            &format!("{at}.additionalProperties"),
        )?)),
    })
}

/// The one schema under `key` (`items`, `not`), if any.
fn child_of(m: &Fields, key: &str, at: &str) -> Result<Option<Box<Node>>, SchemaError> {
    match m.get(key) {
        None => Ok(None),
        Some(s) => Ok(Some(Box::new(Node::parse(s, &format!("{at}.{key}"))?))),
    }
}

/// The schemas of the list under `key` (`allOf`, `anyOf`, `oneOf`); none when absent.
fn children_of(m: &Fields, key: &str, at: &str) -> Result<Vec<Node>, SchemaError> {
    m.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, s)| Node::parse(s, &format!("{at}.{key}[{i}]")))
        .collect()
}

/// `pattern:` with its compiled regular expression.
fn pattern_of(m: &Fields, at: &str) -> Result<Option<(String, Regex)>, SchemaError> {
    let Some(p) = m.get("pattern").and_then(Value::as_str) else {
        return Ok(None);
    };
    let re = Regex::new(p).map_err(|e| SchemaError::Malformed {
        at: format!("{at}.pattern"),
        error_type: ErrorType::Invalid,
        message: format!(
            "Invalid value: {p:?}: must be a valid regular expression, but isn't: {e}"
        ),
    })?;
    Ok(Some((p.to_string(), re)))
}

/// `x-kubernetes-list-type` (atomic when absent), with the keys of a map list.
fn list_type_of(m: &Fields) -> ListType {
    match m.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => ListType::Set,
        Some("map") => ListType::Map(strings(m, "x-kubernetes-list-map-keys")),
        _ => ListType::Atomic,
    }
}

/// The strings of the list under `key` (none when absent or not a list).
fn strings(m: &Fields, key: &str) -> Vec<String> {
    m.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

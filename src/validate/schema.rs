//! The JSON Schemas (draft 2020-12) of the kinds users write and of the cluster report, compiled
//! once, and their errors turned into messages that name the field.
//!
//! The schemas live in `schemas/` at the repository root, so that editors and other tools can use
//! them too; they are embedded here at build time. A subschema may carry an `errorMessage` (the
//! convention of ajv-errors: a string, or an object keyed by the failing keyword) that replaces the
//! validator's generic wording for that keyword.

use jsonschema::JsonType;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;
use std::fmt;
use std::sync::OnceLock;

/// Kinds with a schema, and the schema's source.
const KIND_SCHEMAS: [(&str, &str); 5] = [
    (
        "AROCluster",
        include_str!("../../schemas/arocluster.schema.json"),
    ),
    (
        "AROControlPlane",
        include_str!("../../schemas/arocontrolplane.schema.json"),
    ),
    (
        "AROMachinePool",
        include_str!("../../schemas/aromachinepool.schema.json"),
    ),
    (
        "AzureClusterIdentity",
        include_str!("../../schemas/azureclusteridentity.schema.json"),
    ),
    (
        "AutoNodePolicy",
        include_str!("../../schemas/autonodepolicy.schema.json"),
    ),
];

const REPORT_SCHEMA: &str = include_str!("../../schemas/report.schema.json");

/// One compiled schema, with its source kept for `errorMessage` look-ups.
pub(crate) struct Schema {
    source: Value,
    validator: jsonschema::Validator,
}

/// One schema violation: where (a JSON pointer into the checked document) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    /// JSON pointer of the offending field; for a missing field, the pointer it would have.
    pub pointer: String,
    pub message: String,
}

impl Violation {
    /// The pointers of the fields this violation faults: its own, and for unknown fields each
    /// unknown field's.
    pub(crate) fn faulted_pointers(&self) -> Vec<String> {
        let mut out = vec![self.pointer.clone()];
        if let Some(fields) = self.message.strip_prefix("unknown field ") {
            out.extend(
                fields
                    .split(", ")
                    .map(|f| f.trim_matches('`'))
                    .map(|f| format!("{}/{}", self.pointer, escape_pointer_token(f))),
            );
        }
        out
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pointer = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(f, "{pointer}: {}", self.message)
    }
}

impl Schema {
    fn compile(name: &str, text: &str) -> Schema {
        // The schemas are part of the build and tested; failing here is a bug in a schema file.
        let source: Value = serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("schema for {name} is not JSON: {e}"));
        let validator = jsonschema::draft202012::new(&source)
            .unwrap_or_else(|e| panic!("schema for {name} does not compile: {e}"));
        Schema { source, validator }
    }

    /// Every violation of this schema by `instance`, in the order their fields appear in the
    /// document (a missing field sorts after its parent's existing fields).
    pub(crate) fn check(&self, instance: &Value) -> Vec<Violation> {
        let mut found: Vec<Violation> = self
            .validator
            .iter_errors(instance)
            .map(|e| self.violation(&e))
            .collect();
        found.sort_by_cached_key(|v| document_position(instance, &v.pointer));
        found
    }

    fn violation(&self, err: &jsonschema::ValidationError<'_>) -> Violation {
        let mut pointer = err.instance_path().to_string();
        let custom = self.custom_message(err.schema_path().as_str());
        if let ValidationErrorKind::Required { property } = err.kind() {
            if let Some(name) = property.as_str() {
                pointer.push('/');
                pointer.push_str(&escape_pointer_token(name));
            }
            let message = custom.unwrap_or_else(|| "is required but missing".to_string());
            return Violation { pointer, message };
        }
        let got = type_phrase(err.instance().as_ref());
        let message = custom
            .map(|m| m.replace("{got}", got))
            .unwrap_or_else(|| describe(err));
        Violation { pointer, message }
    }

    /// The `errorMessage` the failing keyword's subschema gives, if any.
    fn custom_message(&self, keyword_location: &str) -> Option<String> {
        let (parent, keyword) = keyword_location.rsplit_once('/')?;
        let messages = self.source.pointer(parent)?.get("errorMessage")?;
        match messages {
            Value::String(s) => Some(s.clone()),
            Value::Object(m) => m.get(keyword).and_then(Value::as_str).map(str::to_string),
            _ => None,
        }
    }
}

/// What is wrong, in the user's words, naming what was expected and what kind of value was found,
/// never the value itself (it may be a secret written where a reference belongs).
fn describe(err: &jsonschema::ValidationError<'_>) -> String {
    let got = type_phrase(err.instance().as_ref());
    match err.kind() {
        ValidationErrorKind::Type { kind } => {
            let expected: Vec<&str> = match kind {
                TypeKind::Single(t) => vec![type_name(*t)],
                TypeKind::Multiple(set) => set.iter().map(type_name).collect(),
            };
            format!("expected {}, got {got}", or_list(&expected))
        }
        ValidationErrorKind::Enum { options } => {
            format!("must be one of {}", list_options(options))
        }
        ValidationErrorKind::Constant { expected_value } => format!("must be {expected_value}"),
        ValidationErrorKind::Pattern { pattern } => {
            format!("does not have the expected form (pattern `{pattern}`)")
        }
        ValidationErrorKind::Format { format } => format!("is not a valid {format}"),
        ValidationErrorKind::MinLength { limit } => {
            format!("must be at least {limit} characters long")
        }
        ValidationErrorKind::MaxLength { limit } => {
            format!("must be at most {limit} characters long")
        }
        ValidationErrorKind::Minimum { limit } => format!("must be at least {limit}"),
        ValidationErrorKind::Maximum { limit } => format!("must be at most {limit}"),
        ValidationErrorKind::ExclusiveMinimum { limit } => format!("must be more than {limit}"),
        ValidationErrorKind::ExclusiveMaximum { limit } => format!("must be less than {limit}"),
        ValidationErrorKind::MinItems { limit } => format!("must have at least {limit} items"),
        ValidationErrorKind::MaxItems { limit } => format!("must have at most {limit} items"),
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            let fields: Vec<String> = unexpected.iter().map(|f| format!("`{f}`")).collect();
            format!("unknown field {}", fields.join(", "))
        }
        ValidationErrorKind::UniqueItems => "has the same item twice".to_string(),
        ValidationErrorKind::AnyOf { .. } | ValidationErrorKind::OneOfNotValid { .. } => {
            format!("got {got}, which matches none of the allowed forms")
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            "matches more than one of the allowed forms; it must match exactly one".to_string()
        }
        ValidationErrorKind::Not { .. } | ValidationErrorKind::FalseSchema => {
            "is not allowed here".to_string()
        }
        ValidationErrorKind::MinProperties { limit } => {
            format!("must have at least {limit} fields")
        }
        ValidationErrorKind::MaxProperties { limit } => {
            format!("must have at most {limit} fields")
        }
        ValidationErrorKind::Contains => "has no item of the expected form".to_string(),
        _ => err.masked_with(got).to_string(),
    }
}

fn type_name(t: JsonType) -> &'static str {
    match t {
        JsonType::Array => "a list",
        JsonType::Boolean => "a boolean",
        JsonType::Integer => "an integer",
        JsonType::Null => "null",
        JsonType::Number => "a number",
        JsonType::Object => "an object",
        JsonType::String => "a string",
    }
}

/// "a string", "an object"... : the kind of a value, not the value.
fn type_phrase(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// `a, b or c`.
fn or_list(items: &[&str]) -> String {
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => last.to_string(),
        None => "nothing".to_string(),
    }
}

/// `"a", "b" or "c"`.
fn list_options(options: &Value) -> String {
    let items: Vec<String> = match options {
        Value::Array(items) => items.iter().map(Value::to_string).collect(),
        other => vec![other.to_string()],
    };
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => "nothing".to_string(),
    }
}

/// Where `pointer` lies in `instance`, as the positions of each step (key order is kept); a step that
/// does not exist sorts last among its siblings.
fn document_position(instance: &Value, pointer: &str) -> Vec<usize> {
    let mut position = Vec::new();
    let mut current = Some(instance);
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        let step = match current {
            Some(Value::Object(map)) => map
                .keys()
                .position(|k| *k == token)
                .map(|i| (i, map.get(&token))),
            Some(Value::Array(items)) => token
                .parse::<usize>()
                .ok()
                .filter(|i| *i < items.len())
                .map(|i| (i, items.get(i))),
            _ => None,
        };
        match step {
            Some((i, next)) => {
                position.push(i);
                current = next;
            }
            None => {
                position.push(usize::MAX);
                current = None;
            }
        }
    }
    position
}

fn escape_pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn kind_schemas() -> &'static [(&'static str, Schema)] {
    static SCHEMAS: OnceLock<Vec<(&'static str, Schema)>> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        KIND_SCHEMAS
            .iter()
            .map(|(kind, text)| (*kind, Schema::compile(kind, text)))
            .collect()
    })
}

/// The schema for objects of `kind`, if the agent has one. Kinds are matched by name alone, so an
/// object with a known kind but the wrong apiVersion is still checked (and its apiVersion reported).
pub(crate) fn for_kind(kind: &str) -> Option<&'static Schema> {
    kind_schemas()
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, s)| s)
}

/// The schema of the machine-readable cluster report.
pub(crate) fn report() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| Schema::compile("ClusterReport", REPORT_SCHEMA))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_schema_is_valid_draft_2020_12_and_compiles() {
        for (name, text) in KIND_SCHEMAS
            .iter()
            .chain([&("ClusterReport", REPORT_SCHEMA)])
        {
            let source: Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                source["$schema"], "https://json-schema.org/draft/2020-12/schema",
                "{name}"
            );
            if let Err(e) = jsonschema::meta::validate(&source) {
                panic!("{name}: {e}");
            }
        }
        assert!(for_kind("AROCluster").is_some());
        assert!(for_kind("ConfigMap").is_none());
        let _ = report();
    }

    #[test]
    fn missing_field_names_the_field_and_custom_messages_replace_generic_ones() {
        let schema = for_kind("AzureClusterIdentity").unwrap();
        let found = schema.check(&json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureClusterIdentity",
            "metadata": {"name": "id"},
            "spec": {"type": "WorkloadIdentity", "clientID": "nope", "tenantID": "00000000-0000-4000-8000-000000000000"}
        }));
        let rendered: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            rendered,
            vec!["/spec/clientID: must be the client (application) ID, a GUID"]
        );

        let found = schema.check(&json!({"apiVersion": "x/v1", "kind": "AzureClusterIdentity", "metadata": {"name": "id"}}));
        let rendered: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            rendered,
            vec![
                "/apiVersion: AzureClusterIdentity is served as infrastructure.cluster.x-k8s.io/v1beta1",
                "/spec: is required but missing",
            ]
        );
    }

    #[test]
    fn objects_and_long_values_are_described_not_printed() {
        let schema = for_kind("AROCluster").unwrap();
        let long = "x".repeat(200);
        let found = schema.check(&json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
            "kind": "AROCluster",
            "metadata": {"name": "c"},
            "spec": {"resources": {"a": long}, "controlPlaneEndpoint": {"host": 7}}
        }));
        let rendered: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            rendered,
            vec![
                "/spec/resources: expected a list, got an object",
                "/spec/controlPlaneEndpoint/host: expected a string, got an integer",
            ]
        );
        assert!(!rendered.concat().contains(&long));
    }

    #[test]
    fn a_secret_where_a_reference_belongs_is_never_quoted() {
        let schema = for_kind("AzureClusterIdentity").unwrap();
        let secret = "not-to-be-shown-0123";
        let found = schema.check(&json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureClusterIdentity",
            "metadata": {"name": "id"},
            "spec": {"type": "ServicePrincipal", "clientSecret": secret,
                "clientID": "00000000-0000-4000-8000-000000000000",
                "tenantID": "00000000-0000-4000-8000-000000000000"}
        }));
        let rendered: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            rendered,
            vec!["/spec/clientSecret: expected an object (a Secret reference), got a string"]
        );
        let found = schema.check(
            &json!({"apiVersion": secret, "kind": "AzureClusterIdentity",
            "metadata": {"name": secret}, "spec": {"type": secret, "clientID": secret}}),
        );
        for v in &found {
            assert!(!v.to_string().contains(secret), "{v}");
        }
        assert!(!found.is_empty());
    }

    #[test]
    fn positions_follow_the_document() {
        let doc = json!({"b": {"y": 1, "x": [0, {"a/b": 1}]}, "a": 2});
        assert_eq!(document_position(&doc, ""), Vec::<usize>::new());
        assert_eq!(document_position(&doc, "/a"), vec![1]);
        assert_eq!(document_position(&doc, "/b/x/1/a~1b"), vec![0, 1, 1, 0]);
        assert_eq!(document_position(&doc, "/b/missing"), vec![0, usize::MAX]);
        assert_eq!(
            document_position(&doc, "/b/missing/deeper"),
            vec![0, usize::MAX, usize::MAX]
        );
    }

    #[test]
    fn pointer_tokens_are_escaped() {
        assert_eq!(escape_pointer_token("a/b~c"), "a~1b~0c");
        let v = Violation {
            pointer: String::new(),
            message: "m".into(),
        };
        assert_eq!(v.to_string(), "/: m");
    }
}

//! Structural schemas of CustomResourceDefinitions, enforced as kube-apiserver enforces them.
//!
//! [`StructuralSchema`] reads one CRD version's `openAPIV3Schema`; [`StructuralSchema::validate`]
//! prunes what the schema does not declare (outside `x-kubernetes-preserve-unknown-fields`, the
//! root's `apiVersion`/`kind`/`metadata`, and the same three of `x-kubernetes-embedded-resource`
//! objects), drops `null`s of non-nullable fields, and checks what is left: types, `nullable`,
//! `required`, `enum`, `pattern`, numeric bounds, lengths, item and property counts, `format`,
//! `x-kubernetes-int-or-string`, list types, `allOf`/`anyOf`/`oneOf`/`not`. Errors are
//! [`FieldError`]s worded like kube-apiserver's (`spec.replicas: Invalid value: "string":
//! spec.replicas in body must be of type integer: "string"`). Pure: no IO, no server types, so the
//! control plane and the agent's validate step share it. [`SchemaSet`] holds the schemas of many
//! CRDs, looked up by apiVersion and kind.

mod builtin;
mod cel;
mod check;
mod defaults;
mod duplicates;
mod format;
mod node;
mod ratchet;

#[cfg(test)]
mod tests;

pub use builtin::unknown_builtin_fields;
pub use duplicates::{duplicate_fields, strict_json_errors, yaml_duplicate_keys, yaml_last_wins};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// `fieldValidation` of a write: what to do with fields the schema does not declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// Refuse the write, naming every unknown field.
    Strict,
    /// Prune unknown fields and warn about each (the API server's default).
    #[default]
    Warn,
    /// Prune unknown fields silently.
    Ignore,
}

impl FieldValidation {
    /// The query parameter's value (absent or empty: [`FieldValidation::Warn`]); the error is
    /// kube-apiserver's wording for anything else.
    pub fn parse(value: Option<&str>) -> Result<FieldValidation, String> {
        match value {
            None | Some("") => Ok(FieldValidation::Warn),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some("Warn") => Ok(FieldValidation::Warn),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some(other) => Err(format!(
                "fieldValidation: Unsupported value: {other:?}: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
            )),
        }
    }
}

/// The kind of a field error, as `k8s.io/apimachinery`'s `field.ErrorType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    Required,
    Invalid,
    TypeInvalid,
    NotSupported,
    TooLong,
    TooMany,
    Duplicate,
    Forbidden,
}

impl ErrorType {
    /// The `reason` of a Status cause (`FieldValueRequired`, ...).
    pub fn reason(self) -> &'static str {
        match self {
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Forbidden => "FieldValueForbidden",
        }
    }

    fn label(self) -> &'static str {
        match self {
            ErrorType::Required => "Required value",
            ErrorType::Invalid | ErrorType::TypeInvalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Forbidden => "Forbidden",
        }
    }
}

/// One violation of a schema, at one field.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// The field path as kube-apiserver writes it: `spec.items[0].name`.
    pub field: String,
    pub error_type: ErrorType,
    /// The offending value as the API server prints it (for a type error, the name of the type
    /// found); `None` where the API server prints none.
    pub bad_value: Option<Value>,
    /// What is wrong (`spec.x in body should match '^a$'`); may quote the value.
    pub detail: String,
    /// `detail` without the value, for messages that must not show values.
    redacted_detail: String,
    /// `bad_value` is the name of a type, not a value from the object.
    value_is_type_name: bool,
}

impl FieldError {
    fn new(
        field: &str,
        error_type: ErrorType,
        bad_value: Option<Value>,
        detail: impl Into<String>,
    ) -> FieldError {
        let detail = detail.into();
        FieldError {
            field: field.to_string(),
            error_type,
            bad_value,
            redacted_detail: detail.clone(),
            detail,
            value_is_type_name: false,
        }
    }

    fn type_named(mut self) -> FieldError {
        self.value_is_type_name = true;
        self
    }

    fn redacted(mut self, redacted_detail: impl Into<String>) -> FieldError {
        self.redacted_detail = redacted_detail.into();
        self
    }

    /// Whether kube-apiserver skips the CEL rules of an object with this error.
    fn blocks_rules(&self) -> bool {
        matches!(
            self.error_type,
            ErrorType::NotSupported
                | ErrorType::Required
                | ErrorType::TooLong
                | ErrorType::TooMany
                | ErrorType::TypeInvalid
        )
    }

    /// The `reason` of this error as a Status cause.
    pub fn reason(&self) -> &'static str {
        self.error_type.reason()
    }

    /// kube-apiserver's error body: `Invalid value: "x": <detail>` (the Status cause's message).
    pub fn body(&self) -> String {
        let mut s = self.error_type.label().to_string();
        if let Some(v) = &self.bad_value {
            s.push_str(": ");
            s.push_str(&render_value(v));
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }

    /// The error body without the offending value (type names and limits are kept): for the
    /// agent's messages, which never quote values that could be secrets.
    pub fn body_without_value(&self) -> String {
        let mut s = self.error_type.label().to_string();
        if self.value_is_type_name
            && let Some(v) = &self.bad_value
        {
            s.push_str(": ");
            s.push_str(&render_value(v));
        }
        if !self.redacted_detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.redacted_detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// A value as kube-apiserver prints it in a field error: strings quoted, numbers and booleans bare.
pub(crate) fn render_value(v: &Value) -> String {
    match v {
        Value::Null => "\"null\"".into(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if !n.is_i64() && !n.is_u64() => go_float(f),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// A float as Go's `%v` prints it: `1`, `1.5`.
pub(crate) fn go_float(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        f.to_string()
    }
}

/// The result of checking one object against a schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Schema violations of the pruned object.
    pub errors: Vec<FieldError>,
    /// Paths of the fields pruned as unknown (`spec.foo`, `spec.items[0].bar`), sorted as
    /// kube-apiserver sorts them; empty under [`FieldValidation::Ignore`].
    pub unknown_fields: Vec<String>,
    /// The object with unknown fields (and `null`s of non-nullable fields) removed: what the API
    /// server stores.
    pub pruned: Value,
    /// Failures of CEL rules not enforced because their value did not change (ratcheting): kube
    /// sends each as a `Warning`.
    pub rule_warnings: Vec<String>,
    /// The mode the check ran in.
    pub mode: FieldValidation,
}

impl Outcome {
    /// True when the API server would store the object: no violation, and no unknown field
    /// under [`FieldValidation::Strict`].
    pub fn accepted(&self) -> bool {
        self.errors.is_empty()
            && (self.mode != FieldValidation::Strict || self.unknown_fields.is_empty())
    }

    /// `unknown field "spec.foo"` for each unknown field: the text of a `Warning` header under
    /// [`FieldValidation::Warn`], of the refusal under [`FieldValidation::Strict`].
    pub fn unknown_field_messages(&self) -> Vec<String> {
        self.unknown_fields
            .iter()
            .map(|f| format!("unknown field \"{f}\""))
            .collect()
    }

    /// The `Warning` header texts the API server sends: unknown fields (only under
    /// [`FieldValidation::Warn`]), then ratcheted rule failures.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = if self.mode == FieldValidation::Warn {
            self.unknown_field_messages()
        } else {
            Vec::new()
        };
        out.extend(self.rule_warnings.iter().cloned());
        out
    }
}

/// A CRD (or schema) the validator cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    #[error("CustomResourceDefinition {crd} has no version {version:?}")]
    NoVersion { crd: String, version: String },
    /// A schema kube-apiserver refuses: `at` is the path below `openAPIV3Schema`
    /// (`.properties[spec].uniqueItems`), `message` the field error's body
    /// (`Forbidden: uniqueItems cannot be set ...`).
    #[error("openAPIV3Schema{at}: {message}")]
    Malformed {
        at: String,
        error_type: ErrorType,
        message: String,
    },
}

impl SchemaError {
    /// The error as a Status cause of a refused CRD, (reason, message, field), its field below
    /// `schema_path` (`spec.validation.openAPIV3Schema`, as kube-apiserver names a schema every
    /// version shares, or `spec.versions[0].schema.openAPIV3Schema`).
    pub fn cause(&self, schema_path: &str) -> (String, String, String) {
        match self {
            SchemaError::Malformed {
                at,
                error_type,
                message,
            } => (
                error_type.reason().to_string(),
                message.clone(),
                format!("{schema_path}{at}"),
            ),
            SchemaError::NoVersion { .. } => (
                ErrorType::Required.reason().to_string(),
                "Required value".to_string(),
                schema_path.to_string(),
            ),
        }
    }
}

/// The structural schema of one CRD version.
#[derive(Debug, Clone)]
pub struct StructuralSchema {
    root: node::Node,
    /// Whether any node has `x-kubernetes-validations`.
    has_rules: bool,
    /// Whether any node has a `default:`.
    has_defaults: bool,
}

impl StructuralSchema {
    /// The schema of `version` of a CustomResourceDefinition (`apiextensions.k8s.io/v1`, or a
    /// v1beta1 CRD's top-level `spec.validation`). A version without a schema keeps every field.
    pub fn from_crd(crd: &Value, version: &str) -> Result<StructuralSchema, SchemaError> {
        let versions = crd.pointer("/spec/versions").and_then(Value::as_array);
        let def = versions
            .into_iter()
            .flatten()
            .find(|v| v.get("name").and_then(Value::as_str) == Some(version));
        let Some(def) = def else {
            let crd_name = crd
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            return Err(SchemaError::NoVersion {
                crd: crd_name,
                version: version.to_string(),
            });
        };
        let schema = def
            .pointer("/schema/openAPIV3Schema")
            .or_else(|| crd.pointer("/spec/validation/openAPIV3Schema"));
        match schema {
            Some(s) => StructuralSchema::from_openapi(s),
            None => Ok(StructuralSchema::keep_everything()),
        }
    }

    /// From an `openAPIV3Schema` value.
    pub fn from_openapi(schema: &Value) -> Result<StructuralSchema, SchemaError> {
        let root = node::Node::parse(schema, "")?;
        defaults::check_defaults(&root, "")?;
        Ok(StructuralSchema {
            has_rules: root.has_rules(),
            has_defaults: root.has_defaults(),
            root,
        })
    }

    /// A schema that keeps and accepts every field.
    pub fn keep_everything() -> StructuralSchema {
        let mut root = node::Node::parse(&serde_json::json!({"type": "object"}), "")
            .expect("a literal schema parses");
        root.preserve_unknown = true;
        StructuralSchema {
            root,
            has_rules: false,
            has_defaults: false,
        }
    }

    /// Prunes, defaults and checks a whole custom resource (`apiVersion`, `kind`, `metadata`,
    /// ...), as the API server does on create. The root's `metadata` is never pruned; only its
    /// `name` and `generateName` are checked against the schema.
    pub fn validate(&self, obj: &Value, mode: FieldValidation) -> Outcome {
        self.validate_update(obj, None, mode)
    }

    /// [`StructuralSchema::validate`] for a write that replaces `old` (an update, a patch, an
    /// apply) when `old` is given: a violation at a field the write leaves unchanged is not
    /// counted (ratcheting), and transition rules (`oldSelf`) are evaluated. The CEL rules run only
    /// when the schema checks found nothing that blocks them, as kube-apiserver does.
    pub fn validate_update(
        &self,
        obj: &Value,
        old: Option<&Value>,
        mode: FieldValidation,
    ) -> Outcome {
        let mut pruned = obj.clone();
        let mut unknown = Vec::new();
        check::prune(&mut pruned, &self.root, "", true, &mut unknown);
        unknown.sort();
        defaults::apply(&mut pruned, &self.root);
        let old = old.map(|o| {
            let mut o = o.clone();
            defaults::apply(&mut o, &self.root);
            o
        });
        let mut errors = check::validate(&pruned, &self.root);
        if let Some(old) = &old {
            errors.retain(|e| !ratchet::unchanged(old, &pruned, &e.field));
        }
        let mut rule_warnings = Vec::new();
        let blocked = errors.iter().any(FieldError::blocks_rules);
        if self.has_rules && blocked {
            errors.push(FieldError::new(
                "<nil>",
                ErrorType::Invalid,
                None,
                "null: some validation rules were not checked because the object was invalid; \
                 correct the existing errors to complete validation",
            ));
        } else if self.has_rules {
            let mut found = cel::Findings::default();
            cel::evaluate(&pruned, old.as_ref(), &self.root, "", true, &mut found);
            errors.extend(found.errors);
            rule_warnings = found.warnings;
        }
        if mode == FieldValidation::Ignore {
            unknown.clear();
        }
        Outcome {
            errors,
            unknown_fields: unknown,
            rule_warnings,
            pruned,
            mode,
        }
    }

    /// Whether the schema has any `default:` (else reading needs no defaulting).
    pub fn has_defaults(&self) -> bool {
        self.has_defaults
    }

    /// Fills the schema's `default:`s into a stored custom resource, as kube-apiserver does when
    /// it reads one from storage (so a default added to the CRD later shows up on read).
    pub fn apply_defaults(&self, obj: &mut Value) {
        defaults::apply(obj, &self.root);
    }
}

impl StructuralSchema {
    /// Prunes without validating: for a partial object such as a server-side apply
    /// configuration, which need not hold every required field. Returns the pruned value and the
    /// paths of the fields removed as unknown.
    pub fn prune(&self, obj: &Value) -> (Value, Vec<String>) {
        let mut pruned = obj.clone();
        let mut unknown = Vec::new();
        check::prune(&mut pruned, &self.root, "", true, &mut unknown);
        unknown.sort();
        (pruned, unknown)
    }
}

/// The structural schemas of many CRDs, by group, kind and version.
#[derive(Debug, Clone, Default)]
pub struct SchemaSet {
    schemas: BTreeMap<(String, String, String), StructuralSchema>,
}

impl SchemaSet {
    /// Reads every version of every CRD in `crds`; a CRD version that cannot be read is reported
    /// (with the CRD's name) and left out.
    pub fn from_crds<'a>(
        crds: impl IntoIterator<Item = &'a Value>,
    ) -> (SchemaSet, Vec<(String, SchemaError)>) {
        let mut set = SchemaSet::default();
        let mut problems = Vec::new();
        for crd in crds {
            let s = |p: &str| crd.pointer(p).and_then(Value::as_str).unwrap_or("");
            let (group, kind, name) =
                (s("/spec/group"), s("/spec/names/kind"), s("/metadata/name"));
            let versions = crd.pointer("/spec/versions").and_then(Value::as_array);
            for v in versions.into_iter().flatten() {
                let version = v.get("name").and_then(Value::as_str).unwrap_or("");
                match StructuralSchema::from_crd(crd, version) {
                    Ok(schema) => {
                        set.schemas.insert(
                            (group.to_string(), kind.to_string(), version.to_string()),
                            schema,
                        );
                    }
                    Err(e) => problems.push((name.to_string(), e)),
                }
            }
        }
        (set, problems)
    }

    /// The schema of `kind` in `group`/`version`.
    pub fn get(&self, group: &str, version: &str, kind: &str) -> Option<&StructuralSchema> {
        self.schemas
            .get(&(group.to_string(), kind.to_string(), version.to_string()))
    }

    /// The versions served for `kind` in `group` (empty when no CRD defines it).
    pub fn versions(&self, group: &str, kind: &str) -> Vec<&str> {
        self.schemas
            .keys()
            .filter(|(g, k, _)| g == group && k == kind)
            .map(|(_, _, v)| v.as_str())
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.schemas.is_empty()
    }
}

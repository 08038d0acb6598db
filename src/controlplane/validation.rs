//! Custom resources held to their CRD's structural schema on every write (create, update, each
//! patch type, server-side apply, and the status subresource): unknown fields pruned (warned about,
//! or refused under `fieldValidation=Strict`), violations refused with 422 naming each field, as
//! kube-apiserver does. The checks themselves are [`crate::crdschema`]'s; this file words the
//! outcome as the API server answers it. An update is not refused for a violation the stored object
//! already had at the same field (validation ratcheting, on by default since Kubernetes 1.30).

use super::error::ApiError;
use super::objects::{PatchType, Target, WriteOptions};
use crate::crdschema::{FieldValidation, StructuralSchema, unknown_builtin_fields};
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// The warnings of one request, collected by the write and answered as `Warning` headers.
#[derive(Debug, Clone, Default)]
pub struct Warnings(Arc<Mutex<Vec<String>>>);

impl Warnings {
    pub fn push(&self, warning: String) {
        self.0.lock().expect("warnings lock").push(warning);
    }

    /// Every warning so far, in order.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().expect("warnings lock"))
    }
}

/// How the written object reached the server: the wording of a strict refusal depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Via {
    /// A POST or PUT body.
    Body,
    /// A JSON, merge or strategic merge patch.
    Patch,
}

/// Prunes and validates `obj`, the object about to be stored, against the schema of the
/// request's version. `old` is the stored object on an update (for ratcheting). A built-in kind
/// loses the fields its type does not declare ([`enforce_builtin`]).
pub(super) fn enforce(
    target: &Target,
    name: &str,
    obj: &mut Value,
    old: Option<&Value>,
    mode: FieldValidation,
    via: Via,
    warnings: &Warnings,
) -> Result<(), ApiError> {
    if !target.rt.custom {
        return enforce_builtin(target, name, obj, mode, via, warnings);
    }
    let Some(schema) = target.rt.validation.get(&target.version) else {
        return Ok(());
    };
    let outcome = schema.validate_update(obj, old, mode);
    // Unknown fields are found while decoding, before validation: a strict refusal comes first.
    if mode == FieldValidation::Strict && !outcome.unknown_fields.is_empty() {
        return Err(strict_refusal(
            target,
            via,
            &outcome.unknown_field_messages(),
        ));
    }
    // The warnings are answered with a refusal too.
    for w in outcome.warnings() {
        warnings.push(w);
    }
    let causes: Vec<(String, String, String)> = outcome
        .errors
        .iter()
        .map(|e| (e.reason().to_string(), e.body(), e.field.clone()))
        .collect();
    if !causes.is_empty() {
        return Err(ApiError::invalid_fields(
            &target.rt.kind,
            &target.rt.group,
            name,
            causes,
        ));
    }
    *obj = outcome.pruned;
    Ok(())
}

/// A built-in object as kube-apiserver's typed decoding sees it: the fields its type does not
/// declare are dropped (warned about under `Warn`, refused under `Strict`); a CRD's schemas must
/// be ones the server can enforce.
fn enforce_builtin(
    target: &Target,
    name: &str,
    obj: &mut Value,
    mode: FieldValidation,
    via: Via,
    warnings: &Warnings,
) -> Result<(), ApiError> {
    let (group, kind) = (target.rt.group.as_str(), target.rt.kind.as_str());
    let mut decoded = obj.clone();
    let unknown = unknown_builtin_fields(group, &target.version, kind, &mut decoded);
    if let Some(unknown) = unknown {
        let messages: Vec<String> = unknown
            .iter()
            .map(|f| format!("unknown field \"{f}\""))
            .collect();
        match mode {
            FieldValidation::Strict if !messages.is_empty() => {
                return Err(match via {
                    Via::Body => strict_refusal(target, via, &messages),
                    Via::Patch => patched_strict_refusal(&obj.to_string(), &messages),
                });
            }
            FieldValidation::Warn => messages.into_iter().for_each(|m| warnings.push(m)),
            _ => {}
        }
        *obj = decoded;
    }
    if (group, kind) == ("apiextensions.k8s.io", "CustomResourceDefinition") {
        let causes = crd_schema_causes(obj);
        if !causes.is_empty() {
            return Err(ApiError::invalid_fields(kind, group, name, causes));
        }
    }
    Ok(())
}

/// kube-apiserver's refusal of a patch whose result has unknown fields under `Strict`: 422,
/// the field `patch` invalid, the patched object as the value.
fn patched_strict_refusal(patched: &str, messages: &[String]) -> ApiError {
    ApiError::invalid_fields(
        "",
        "",
        "",
        vec![(
            "FieldValueInvalid".into(),
            format!(
                "Invalid value: {}: strict decoding error: {}",
                crate::machinery::field::go_quote(patched),
                messages.join(", ")
            ),
            "patch".into(),
        )],
    )
}

/// The schemas of a CRD kube-apiserver would refuse, as Status causes. kube-apiserver names a
/// schema every version shares `spec.validation.openAPIV3Schema` (its internal form keeps one
/// schema then), else each version's by index; only the first problem of a schema is found.
fn crd_schema_causes(crd: &Value) -> Vec<(String, String, String)> {
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let shared = versions
        .windows(2)
        .all(|w| w[0].get("schema") == w[1].get("schema"));
    let mut causes = Vec::new();
    for (i, version) in versions.iter().enumerate() {
        let Some(schema) = version.pointer("/schema/openAPIV3Schema") else {
            continue;
        };
        if let Err(e) = StructuralSchema::from_openapi(schema) {
            if shared {
                return vec![e.cause("spec.validation.openAPIV3Schema")];
            }
            causes.push(e.cause(&format!("spec.versions[{i}].schema.openAPIV3Schema")));
        }
    }
    causes
}

/// Prunes a server-side apply configuration before field ownership is computed, so no manager
/// owns a field that is not stored. Under `Strict` an unknown field refuses the apply.
pub(super) fn prune_applied(
    target: &Target,
    applied: &mut Value,
    mode: FieldValidation,
    warnings: &Warnings,
) -> Result<(), ApiError> {
    let Some(schema) = target.rt.validation.get(&target.version) else {
        return Ok(());
    };
    let (pruned, unknown) = schema.prune(applied);
    match mode {
        FieldValidation::Strict if !unknown.is_empty() => {
            let each: Vec<String> = unknown
                .iter()
                .map(|f| format!(".{f}: field not declared in schema"))
                .collect();
            let detail = match each.as_slice() {
                [one] => one.clone(),
                _ => format!("errors:\n  {}", each.join("\n  ")),
            };
            return Err(ApiError::bad_request(format!(
                "failed to create typed patch object ({}, Kind={}): {detail}",
                target.api_version(),
                target.rt.kind
            )));
        }
        FieldValidation::Warn => {
            for f in &unknown {
                warnings.push(format!("unknown field \"{f}\""));
            }
        }
        _ => {}
    }
    *applied = pruned;
    Ok(())
}

/// Fields a JSON or YAML body sets twice, as strict decoding reports them: refused under
/// `fieldValidation=Strict`, a warning under `Warn`, for built-in kinds and custom resources alike.
/// A JSON patch is a list of operations, not an object, and is not checked.
pub(super) fn strict_duplicates(
    target: &Target,
    body: &[u8],
    content_type: &str,
    patch_type: Option<PatchType>,
    opts: &WriteOptions,
) -> Result<(), ApiError> {
    if super::protobuf::is_protobuf(content_type)
        || patch_type == Some(PatchType::Json)
        || opts.field_validation == FieldValidation::Ignore
    {
        return Ok(());
    }
    let yaml = content_type.contains("yaml");
    let text = String::from_utf8_lossy(body);
    let found: Vec<String> = if yaml {
        crate::crdschema::yaml_duplicate_keys(&text)
    } else {
        crate::crdschema::duplicate_fields(body)
            .iter()
            .map(|f| format!("duplicate field \"{f}\""))
            .collect()
    };
    if found.is_empty() {
        return Ok(());
    }
    if opts.field_validation == FieldValidation::Warn {
        for d in found {
            opts.warnings.push(d);
        }
        return Ok(());
    }
    let unknown = match patch_type {
        None => unknown_fields(target, &text, yaml),
        Some(_) => Vec::new(),
    };
    // A built-in kind's typed decoding reports both kinds of errors as it meets them.
    let (found, unknown) = if !yaml && patch_type.is_none() && !target.rt.custom {
        (
            crate::crdschema::strict_json_errors(body, &unknown),
            Vec::new(),
        )
    } else {
        (found, unknown)
    };
    Err(ApiError::bad_request(strict_decoding_message(
        &target.rt.kind,
        &target.version,
        &found,
        yaml,
        &unknown,
        patch_type,
    )))
}

/// kube-apiserver's 400 message for a body strict decoding refuses: duplicates (`duplicate field
/// "a"`, or YAML's `line N: key "a" already set in map` lines), then unknown fields; worded by
/// how the body came (a create or update body, an apply, another patch).
fn strict_decoding_message(
    kind: &str,
    version: &str,
    duplicates: &[String],
    yaml: bool,
    unknown: &[String],
    patch_type: Option<PatchType>,
) -> String {
    let mut what = if yaml {
        format!("yaml: unmarshal errors:\n  {}", duplicates.join("\n  "))
    } else {
        duplicates.join(", ")
    };
    match patch_type {
        None => {
            for f in unknown {
                what.push_str(&format!(", unknown field \"{f}\""));
            }
            format!(
                "{kind} in version {version:?} cannot be handled as a {kind}: strict decoding error: {what}"
            )
        }
        Some(PatchType::Apply) => {
            format!("error strict decoding patch: error converting YAML to JSON: {what}")
        }
        Some(_) => format!("strict decoding error: {what}"),
    }
}

/// The fields of a body its kind does not declare (strict decoding reports them after the
/// duplicates): a custom resource's schema, or a built-in kind's type.
fn unknown_fields(target: &Target, text: &str, yaml: bool) -> Vec<String> {
    let decoded = if yaml {
        crate::crdschema::yaml_last_wins(text)
    } else {
        serde_json::from_str(text).ok()
    };
    let Some(mut decoded) = decoded else {
        return Vec::new();
    };
    if !target.rt.custom {
        let (group, kind) = (&target.rt.group, &target.rt.kind);
        return unknown_builtin_fields(group, &target.version, kind, &mut decoded)
            .unwrap_or_default();
    }
    match target.rt.validation.get(&target.version) {
        Some(schema) => schema.prune(&decoded).1,
        None => Vec::new(),
    }
}

/// kube-apiserver's refusal of unknown fields under `fieldValidation=Strict` (400 BadRequest);
/// `messages` are `unknown field "spec.foo"`.
fn strict_refusal(target: &Target, via: Via, messages: &[String]) -> ApiError {
    let fields = messages.join(", ");
    match via {
        Via::Body => ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: strict decoding error: {fields}",
            kind = target.rt.kind,
            version = target.version,
        )),
        Via::Patch => ApiError::bad_request(format!("strict decoding error: {fields}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_decoding_refusals_are_worded_by_body_kind() {
        let dup = vec!["duplicate field \"data.a\"".to_string()];
        assert_eq!(
            strict_decoding_message("ConfigMap", "v1", &dup, false, &["bogus".into()], None),
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: \
             duplicate field \"data.a\", unknown field \"bogus\""
        );
        let lines = vec![
            "line 5: key \"name\" already set in map".to_string(),
            "line 8: key \"a\" already set in map".to_string(),
        ];
        assert_eq!(
            strict_decoding_message("ConfigMap", "v1", &lines, true, &[], None),
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: \
             yaml: unmarshal errors:\n  line 5: key \"name\" already set in map\n  line 8: key \"a\" already set in map"
        );
        assert_eq!(
            strict_decoding_message(
                "Gizmo",
                "v1",
                &lines[1..],
                true,
                &[],
                Some(PatchType::Apply)
            ),
            "error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n  \
             line 8: key \"a\" already set in map"
        );
    }

    fn crd(versions: Value) -> Value {
        serde_json::json!({"spec": {"versions": versions}})
    }

    fn version(name: &str, spec: Value) -> Value {
        serde_json::json!({"name": name, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": spec}}}})
    }

    #[test]
    fn a_crd_schema_shared_by_every_version_is_named_spec_validation() {
        let unique =
            serde_json::json!({"type": "array", "uniqueItems": true, "items": {"type": "string"}});
        let causes = crd_schema_causes(&crd(serde_json::json!([
            version("v1", unique.clone()),
            version("v2", unique.clone())
        ])));
        assert_eq!(
            causes,
            vec![(
                "FieldValueForbidden".to_string(),
                "Forbidden: uniqueItems cannot be set to true since the runtime complexity \
                 becomes quadratic"
                    .to_string(),
                "spec.validation.openAPIV3Schema.properties[spec].uniqueItems".to_string()
            )]
        );
        let causes = crd_schema_causes(&crd(serde_json::json!([
            version("v1", serde_json::json!({"type": "string"})),
            version("v2", unique)
        ])));
        assert_eq!(causes.len(), 1);
        assert_eq!(
            causes[0].2,
            "spec.versions[1].schema.openAPIV3Schema.properties[spec].uniqueItems"
        );
    }

    #[test]
    fn crd_rule_and_default_refusals_carry_their_reason() {
        let rule = serde_json::json!({"type": "object",
            "x-kubernetes-validations": [{"rule": "self.a < ", "reason": "FieldValueForbidden"}]});
        let causes = crd_schema_causes(&crd(serde_json::json!([version("v1", rule)])));
        let (reason, message, field) = &causes[0];
        assert_eq!(reason, "FieldValueInvalid");
        assert_eq!(
            field,
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
        );
        assert!(
            message.starts_with(
                "Invalid value: {\"Rule\":\"self.a \\u003c \",\"Message\":\"\",\
                 \"MessageExpression\":\"\",\"Reason\":\"FieldValueForbidden\",\"FieldPath\":\"\",\
                 \"OptionalOldSelf\":null}: compilation failed: ERROR: <input>:1:"
            ),
            "{message}"
        );
        assert!(message.contains("\n | self.a < \n | "), "{message}");
        let default = serde_json::json!({"type": "integer", "default": "x"});
        let causes = crd_schema_causes(&crd(serde_json::json!([version("v1", default)])));
        assert_eq!(causes[0].0, "FieldValueTypeInvalid");
        assert_eq!(
            causes[0].2,
            "spec.validation.openAPIV3Schema.properties[spec].default"
        );
        let fine = serde_json::json!({"type": "string"});
        assert!(crd_schema_causes(&crd(serde_json::json!([version("v1", fine)]))).is_empty());
    }

    #[test]
    fn warnings_are_collected_in_order() {
        let w = Warnings::default();
        let shared = w.clone();
        shared.push("a".into());
        w.push("b".into());
        assert_eq!(w.take(), vec!["a", "b"]);
        assert!(shared.take().is_empty());
    }
}

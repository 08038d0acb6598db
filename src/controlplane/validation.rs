//! Custom resources held to their CRD's structural schema on every write (create, update, each
//! patch type, server-side apply, and the status subresource): unknown fields pruned (warned about,
//! or refused under `fieldValidation=Strict`), violations refused with 422 naming each field, as
//! kube-apiserver does. The checks themselves are [`crate::crdschema`]'s; this file words the
//! outcome as the API server answers it. An update is not refused for a violation the stored object
//! already had at the same field (validation ratcheting, on by default since Kubernetes 1.30).

use super::error::ApiError;
use super::objects::{PatchType, Target, WriteOptions};
use crate::crdschema::{FieldValidation, Outcome};
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
/// request's version. `old` is the stored object on an update (for ratcheting).
pub(super) fn enforce(
    target: &Target,
    name: &str,
    obj: &mut Value,
    old: Option<&Value>,
    mode: FieldValidation,
    via: Via,
    warnings: &Warnings,
) -> Result<(), ApiError> {
    let Some(schema) = target.rt.validation.get(&target.version) else {
        return Ok(());
    };
    let outcome = schema.validate_update(obj, old, mode);
    // Unknown fields are found while decoding, before validation: a strict refusal comes first.
    if mode == FieldValidation::Strict && !outcome.unknown_fields.is_empty() {
        return Err(strict_refusal(target, via, &outcome));
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
    for w in outcome.warnings() {
        warnings.push(w);
    }
    *obj = outcome.pruned;
    Ok(())
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

/// The fields of a custom resource body its schema does not declare (strict decoding reports
/// them after the duplicates).
fn unknown_fields(target: &Target, text: &str, yaml: bool) -> Vec<String> {
    let Some(schema) = target.rt.validation.get(&target.version) else {
        return Vec::new();
    };
    let decoded = if yaml {
        crate::crdschema::yaml_last_wins(text)
    } else {
        serde_json::from_str(text).ok()
    };
    decoded.map(|v| schema.prune(&v).1).unwrap_or_default()
}

/// kube-apiserver's refusal of unknown fields under `fieldValidation=Strict` (400 BadRequest).
fn strict_refusal(target: &Target, via: Via, outcome: &Outcome) -> ApiError {
    let fields = outcome.unknown_field_messages().join(", ");
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

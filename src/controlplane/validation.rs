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
    let outcome = schema.validate(obj, mode);
    // Unknown fields are found while decoding, before validation: a strict refusal comes first.
    if mode == FieldValidation::Strict && !outcome.unknown_fields.is_empty() {
        return Err(strict_refusal(target, via, &outcome));
    }
    let causes: Vec<(String, String, String)> = outcome
        .errors
        .iter()
        .filter(|e| old.is_none_or(|old| !unchanged(old, &outcome.pruned, &e.field)))
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

/// Fields a JSON body of a custom resource sets twice, as strict decoding reports them: refused
/// under `fieldValidation=Strict`, a warning under `Warn`.
pub(super) fn strict_duplicates(
    target: &Target,
    body: &[u8],
    content_type: &str,
    patch_type: Option<PatchType>,
    opts: &WriteOptions,
) -> Result<(), ApiError> {
    let json = !content_type.contains("yaml") && !super::protobuf::is_protobuf(content_type);
    if !target.rt.custom
        || !json
        || patch_type == Some(PatchType::Json)
        || opts.field_validation == FieldValidation::Ignore
    {
        return Ok(());
    }
    let duplicates: Vec<String> = crate::crdschema::duplicate_fields(body)
        .iter()
        .map(|f| format!("duplicate field \"{f}\""))
        .collect();
    if duplicates.is_empty() {
        return Ok(());
    }
    if opts.field_validation == FieldValidation::Strict {
        let what = duplicates.join(", ");
        return Err(ApiError::bad_request(match patch_type {
            None => format!(
                "{kind} in version {version:?} cannot be handled as a {kind}: strict decoding error: {what}",
                kind = target.rt.kind,
                version = target.version
            ),
            Some(_) => format!("strict decoding error: {what}"),
        }));
    }
    for d in duplicates {
        opts.warnings.push(d);
    }
    Ok(())
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

/// Whether the value at kube field path `field` (`spec.items[0].name`) is the same in both objects
/// (both absent counts as the same).
fn unchanged(old: &Value, new: &Value, field: &str) -> bool {
    lookup(old, field) == lookup(new, field)
}

fn lookup<'a>(v: &'a Value, field: &str) -> Option<&'a Value> {
    let mut current = v;
    for part in field.split('.') {
        let (key, indexes) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            current = current.get(key)?;
        }
        for index in indexes.split('[').filter(|s| !s.is_empty()) {
            let i: usize = index.trim_end_matches(']').parse().ok()?;
            current = current.get(i)?;
        }
    }
    Some(current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn field_paths_are_looked_up_and_compared() {
        let old = json!({"spec": {"items": [{"name": "a"}, {"name": "b"}], "n": 1}});
        let new = json!({"spec": {"items": [{"name": "a"}, {"name": "c"}], "n": 1}});
        assert_eq!(lookup(&old, "spec.items[1].name"), Some(&json!("b")));
        assert_eq!(lookup(&old, "spec.items[5].name"), None);
        assert!(unchanged(&old, &new, "spec.items[0].name"));
        assert!(!unchanged(&old, &new, "spec.items[1].name"));
        assert!(unchanged(&old, &new, "spec.missing"));
        assert!(unchanged(&old, &new, "spec.n"));
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

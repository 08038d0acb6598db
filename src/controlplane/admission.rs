//! Admission: what every write checks and normalises before it is stored — the object's identity
//! against the request (kind, version, namespace, name rules), an open namespace, and the per-kind
//! rules of the API server (Secrets' `stringData`, Namespaces' finalizers and phase, CRDs' status).

use super::error::ApiError;
use super::objects::Target;
use super::registry::crd_resource_type;
use super::state::Txn;
use crate::validate::builtin;
use base64::Engine;
use serde_json::{Map, Value, json};

/// Checks the body names this kind and version, and returns its name (possibly generated).
pub(super) fn check_identity(
    target: &Target,
    body: &Value,
    creating: bool,
) -> Result<String, ApiError> {
    let Some(map) = body.as_object() else {
        return Err(ApiError::bad_request(
            "the request body must be a JSON or YAML object",
        ));
    };
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = map.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        return Err(ApiError::bad_request(format!(
            "Object 'Kind' is missing in the request body for {}",
            target.rt.qualified_plural()
        )));
    }
    if api_version.is_empty() {
        return Err(ApiError::bad_request(format!(
            "Object 'apiVersion' is missing in the request body for {kind}"
        )));
    }
    let (group, version) = crate::object::split_api_version(api_version);
    if kind != target.rt.kind || group != target.rt.group || !target.rt.serves(version) {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) and kind ({kind}) do not match the expected {} {}",
            target.api_version(),
            target.rt.kind
        )));
    }
    let meta = map.get("metadata").and_then(Value::as_object);
    let body_ns = meta
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    if let (Some(b), Some(p)) = (body_ns, target.namespace.as_deref())
        && b != p
    {
        return Err(ApiError::bad_request(format!(
            "the namespace of the provided object ({b}) does not match the namespace sent on the request ({p})"
        )));
    }
    let mut name = meta
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if let Some(url_name) = target.name.as_deref() {
        if !name.is_empty() && name != url_name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({name}) does not match the name on the URL ({url_name})"
            )));
        }
        name = url_name.to_string();
    }
    if name.is_empty()
        && creating
        && let Some(prefix) = meta
            .and_then(|m| m.get("generateName"))
            .and_then(Value::as_str)
    {
        let suffix: String = uuid::Uuid::new_v4()
            .simple()
            .to_string()
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(5)
            .collect();
        name = format!("{prefix}{suffix}");
    }
    if name.is_empty() {
        return Err(target.invalid(
            "",
            "metadata.name: Required value: name or generateName is required",
        ));
    }
    if let Some(problem) = builtin::name_problem(&target.rt.group, &target.rt.kind, &name) {
        return Err(target.invalid(&name, &problem));
    }
    Ok(name)
}

/// Creating in a namespace needs the namespace to exist and not be terminating.
pub(super) fn check_namespace_open(txn: &Txn, target: &Target) -> Result<(), ApiError> {
    if !target.rt.namespaced {
        return Ok(());
    }
    let ns = target.namespace.as_deref().ok_or_else(|| {
        ApiError::bad_request(format!(
            "{} is namespaced: the request must name a namespace",
            target.rt.qualified_plural()
        ))
    })?;
    match txn.get(&format!("/Namespace//{ns}")) {
        None => Err(ApiError::not_found("", "namespaces", ns)),
        Some(n) if n.pointer("/metadata/deletionTimestamp").is_some() => {
            Err(ApiError::forbidden(format!(
                "{} \"{}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                target.rt.qualified_plural(),
                target.name.as_deref().unwrap_or("")
            )))
        }
        Some(_) => Ok(()),
    }
}

/// Per-kind normalisation the API server does on every write, after the checks of every kind
/// (labels and annotations).
pub(super) fn normalise_kind(target: &Target, name: &str, obj: &mut Value) -> Result<(), ApiError> {
    refuse(target, name, builtin::metadata_problems(obj, false))?;
    match (target.rt.group.as_str(), target.rt.kind.as_str()) {
        ("", "Secret") => {
            check_data(target, name, obj)?;
            if let Some(Value::Object(string_data)) =
                obj.as_object_mut().and_then(|m| m.remove("stringData"))
            {
                let mut data = obj["data"]
                    .as_object_mut()
                    .map(std::mem::take)
                    .unwrap_or_default();
                for (k, v) in string_data {
                    let s = v.as_str().unwrap_or_default();
                    data.insert(
                        k,
                        json!(base64::engine::general_purpose::STANDARD.encode(s)),
                    );
                }
                obj["data"] = Value::Object(data);
            }
            if obj.get("type").is_none() {
                obj["type"] = json!("Opaque");
            }
        }
        ("", "ConfigMap") => check_data(target, name, obj)?,
        ("", "Namespace") => {
            // Defaulted on every write, so owned by the writer; finalizers and phase are set
            // later, by `strategy::prepare_for_create`.
            obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = json!(name);
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            let rt = crd_resource_type(obj).map_err(|e| target.invalid(name, &e.0))?;
            let accepted = obj.pointer("/spec/names").cloned().unwrap_or(json!({}));
            let mut accepted = accepted;
            accepted["singular"] = json!(rt.singular);
            accepted["listKind"] = json!(rt.list_kind);
            let stored: Vec<Value> = obj["spec"]["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|v| v["storage"] == json!(true))
                .map(|v| v["name"].clone())
                .collect();
            obj["status"] = json!({
                "acceptedNames": accepted,
                "storedVersions": stored,
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": obj.pointer("/metadata/creationTimestamp").cloned().unwrap_or(json!(null))},
                    {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": obj.pointer("/metadata/creationTimestamp").cloned().unwrap_or(json!(null))},
                ],
            });
        }
        _ => {}
    }
    Ok(())
}

/// A ConfigMap's or Secret's data as kube-apiserver accepts it (string maps, base64, valid keys):
/// 422 Invalid with every field at fault, never a value.
fn check_data(target: &Target, name: &str, obj: &Value) -> Result<(), ApiError> {
    refuse(
        target,
        name,
        builtin::data_problems(&target.rt.group, &target.rt.kind, obj),
    )
}

/// 422 Invalid naming every problem, when there is one.
fn refuse(target: &Target, name: &str, problems: Vec<String>) -> Result<(), ApiError> {
    if problems.is_empty() {
        return Ok(());
    }
    let what = if problems.len() == 1 {
        problems[0].clone()
    } else {
        format!("[{}]", problems.join(", "))
    };
    Err(target.invalid(name, &what))
}

/// Everything but metadata and status: a change here bumps `generation`.
pub(super) fn spec_part(obj: &Value) -> Map<String, Value> {
    let mut m = obj.as_object().cloned().unwrap_or_default();
    for k in ["metadata", "status", "apiVersion", "kind"] {
        m.remove(k);
    }
    m
}

pub(super) const SERVER_METADATA: &[&str] = &[
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "resourceVersion",
    "selfLink",
];

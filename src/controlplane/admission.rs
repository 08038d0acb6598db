//! Admission: what every write checks and normalises before it is stored — the object's identity
//! against the request (kind, version, namespace, name rules), an open namespace, and the per-kind
//! rules of the API server (what it cannot decode, its validation of the built-in kinds, Secrets'
//! `stringData`, Namespaces' finalizers and phase, CRDs' status), each refused in kube-apiserver's
//! words.

use super::error::ApiError;
use super::objects::Target;
use super::registry::crd_resource_type;
use super::state::Txn;
use crate::machinery::field::FieldError;
use crate::validate::builtin::{self, decode, kinds};
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
    // A custom resource of its own version but another kind is decoded, then refused by
    // validation (422, naming the kind sent).
    let other_custom_kind = target.rt.custom && api_version == target.api_version();
    if (kind != target.rt.kind || group != target.rt.group || !target.rt.serves(version))
        && !other_custom_kind
    {
        return Err(ApiError::bad_request(kind_mismatch(
            target, group, version, kind,
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
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
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
    if kind != target.rt.kind {
        let must_be = format!("must be {}", target.rt.kind);
        return Err(ApiError::invalid_object(
            kind,
            group,
            &name,
            &[FieldError::invalid("kind", kind, &must_be)],
        ));
    }
    let (group, kind) = (&target.rt.group, &target.rt.kind);
    let generate_name = meta
        .and_then(|m| m.get("generateName"))
        .and_then(Value::as_str)
        .filter(|g| !g.is_empty() && creating);
    let mut errors: Vec<FieldError> = generate_name
        .map(|g| builtin::name_errors(group, kind, "metadata.generateName", g))
        .unwrap_or_default();
    if name.is_empty() {
        errors.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        errors.extend(builtin::name_errors(group, kind, "metadata.name", &name));
    }
    if !errors.is_empty() {
        return Err(ApiError::invalid_object(kind, group, &name, &errors));
    }
    Ok(name)
}

/// Why a body of another kind or version is refused, as kube-apiserver's decoder says it: for a
/// custom resource the versions differ; a built-in kind cannot be converted into another, or is
/// not registered at all.
fn kind_mismatch(target: &Target, group: &str, version: &str, kind: &str) -> String {
    let api_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    if target.rt.custom {
        return format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            target.api_version()
        );
    }
    let built_in_group = !group.contains('.') || group.ends_with(".k8s.io");
    let why = if built_in_group && builtin::namespaced(group, kind).is_some() {
        // The Go packages of the versioned and internal types (`v1.Secret`, `core.ConfigMap`).
        let internal = match target.rt.group.as_str() {
            "" => "core",
            g => g.split('.').next().unwrap_or(g),
        };
        format!(
            "converting ({version}.{kind}) to ({internal}.{}): unknown conversion",
            target.rt.kind
        )
    } else {
        format!(
            "no kind \"{kind}\" is registered for version \"{api_version}\" in scheme \"pkg/runtime/scheme.go:111\""
        )
    };
    format!(
        "{kind} in version \"{version}\" cannot be handled as a {}: {why}",
        target.rt.kind
    )
}

/// Creating `name` in a namespace needs the namespace to exist and not be terminating.
pub(super) fn check_namespace_open(txn: &Txn, target: &Target, name: &str) -> Result<(), ApiError> {
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
            let mut e = ApiError::forbidden_object(
                &target.rt.group,
                &target.rt.plural,
                name,
                &format!(
                    "unable to create new content in namespace {ns} because it is being terminated"
                ),
            );
            if let Some(d) = e.details.as_mut() {
                d.causes = vec![(
                    "NamespaceTerminating".into(),
                    format!("namespace {ns} is being terminated"),
                    "metadata.namespace".into(),
                )];
            }
            Err(e)
        }
        Some(_) => Ok(()),
    }
}

/// Per-kind normalisation and validation the API server does on a create: what it cannot decode
/// (400), Secrets' `stringData` and default type, then kube-apiserver's validation of the kind
/// (422 naming every field at fault), Namespaces' finalizers and phase, CRDs' status.
pub(super) fn normalise_kind(target: &Target, name: &str, obj: &mut Value) -> Result<(), ApiError> {
    normalise(target, name, obj, None)
}

/// [`normalise_kind`] for an update from `old`, which also checks what may not change.
pub(super) fn normalise_update(
    target: &Target,
    name: &str,
    old: &Value,
    obj: &mut Value,
) -> Result<(), ApiError> {
    normalise(target, name, obj, Some(old))
}

fn normalise(
    target: &Target,
    name: &str,
    obj: &mut Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    check_decodable(target, obj)?;
    let (group, kind) = (target.rt.group.as_str(), target.rt.kind.as_str());
    if (group, kind) == ("", "Secret") {
        builtin::fold_string_data(obj);
        if obj.get("type").is_none_or(|t| t.as_str() == Some("")) {
            obj["type"] = json!("Opaque");
        }
    }
    let errors = match old {
        None => kinds::create_errors(group, kind, obj),
        Some(old) => kinds::update_errors(group, kind, obj, old),
    };
    if !errors.is_empty() {
        // Named by the group of the stored kind (an events.k8s.io Event is a core Event).
        let stored_group = target.rt.storage_group();
        return Err(ApiError::invalid_object(kind, stored_group, name, &errors));
    }
    match (group, kind) {
        ("", "Namespace") => {
            // Defaulted on every write whose name is known when defaulting runs, so owned by the
            // writer; a generated name is only known later, when `strategy::prepare_for_create`
            // sets the label (and the finalizers and phase, which no writer owns).
            let generated = old.is_none() && obj.pointer("/metadata/generateName").is_some();
            if !generated {
                obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = json!(name);
            }
            if old.is_none() {
                // A new Namespace's status is the server's (a reset field): never the writer's.
                obj.as_object_mut().map(|m| m.remove("status"));
            }
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

/// What kube-apiserver's decoder refuses before any validation (400): string maps that hold
/// other values, binary data that is not base64, numbers that are not numbers. Checked on the
/// body as sent, in its order, so the first value at fault is the one Go's decoder names.
pub(super) fn check_decodable(target: &Target, body: &Value) -> Result<(), ApiError> {
    let kind = &target.rt.kind;
    match decode::decode_problems(&target.rt.group, kind, body, true).first() {
        None => Ok(()),
        Some(p) => Err(ApiError::bad_request(format!(
            "{kind} in version \"{}\" cannot be handled as a {kind}: {}",
            target.version,
            p.go_error()
        ))),
    }
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

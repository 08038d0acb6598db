//! kube-apiserver's validation of the built-in kinds the local control plane serves, as field
//! errors: what a create checks (metadata, then each kind's own rules: ConfigMap and Secret data,
//! Secret types, Lease durations, Namespace finalizers, Service ports and types) and what an
//! update adds (immutable ConfigMaps and Secrets, a Secret's type). Names are checked apart (see
//! [`super::name_errors`]). Secret values are never shown.

use super::events::{self, EventApi};
use super::{MAX_DATA_BYTES, label_key_messages, metadata_errors, regex_error};
use super::{apps, net, refs, workloads};
use crate::machinery::field::{self, BadValue, FieldError};
use crate::machinery::gojson;
use base64::Engine;
use serde_json::{Map, Value};

/// The errors kube-apiserver's validation finds in `obj` of `group`/`kind` on create (the name
/// aside). `obj` is as stored: a Secret's `stringData` already folded into `data`.
pub fn create_errors(group: &str, kind: &str, obj: &Value) -> Vec<FieldError> {
    if let Some((api, event)) = as_event(group, kind, obj) {
        // The kind's rules come first here, the metadata's after (kube's Event strategy does
        // not check metadata itself).
        let mut errors = events::create_errors(&event, api);
        errors.extend(meta_errors(group, obj));
        errors.extend(refs::owner_reference_errors(obj));
        return once_each(errors);
    }
    let mut errors = meta_errors(group, obj);
    errors.extend(refs::owner_reference_errors(obj));
    errors.extend(kind_errors(group, kind, obj));
    once_each(errors)
}

/// An Event of either API, in the core shape it is validated in, and the API it came through.
fn as_event(group: &str, kind: &str, obj: &Value) -> Option<(EventApi, Value)> {
    match (group, kind) {
        ("", "Event") => Some((EventApi::Core, obj.clone())),
        ("events.k8s.io", "Event") => Some((EventApi::Events, events::as_core(obj))),
        _ => None,
    }
}

/// kube-apiserver reports an error its checks find twice (metadata on update) once.
fn once_each(errors: Vec<FieldError>) -> Vec<FieldError> {
    let mut out: Vec<FieldError> = Vec::with_capacity(errors.len());
    for e in errors {
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

/// The errors of an update from `old` to `obj`: kube checks the metadata and what may not
/// change, then the new object: ConfigMaps, Secrets and ServiceAccounts whole as a create would
/// (their metadata again: an error found twice is reported once), Leases and Services their
/// spec, Namespaces nothing more.
pub fn update_errors(group: &str, kind: &str, obj: &Value, old: &Value) -> Vec<FieldError> {
    let mut errors = meta_errors(group, obj);
    errors.extend(refs::finalizer_update_errors(obj, old));
    errors.extend(immutable_errors(group, kind, obj, old));
    if group == "rbac.authorization.k8s.io" && kind.ends_with("RoleBinding") {
        errors.extend(refs::role_ref_update_errors(obj, old));
    }
    if let ("apps", "Deployment" | "ReplicaSet") = (group, kind) {
        errors.extend(apps::deployment_errors(obj, Some(old)));
        return errors;
    }
    if let (Some((api, event)), Some((_, old_event))) =
        (as_event(group, kind, obj), as_event(group, kind, old))
    {
        errors.extend(events::update_errors(&event, &old_event, api));
        return once_each(errors);
    }
    match (group, kind) {
        ("", "ConfigMap" | "Secret" | "ServiceAccount") => {
            errors.extend(create_errors(group, kind, obj));
        }
        ("", "Namespace") => {}
        ("", "Service") => {
            errors.extend(net::service_update_errors(obj, old));
            errors.extend(service_errors(obj));
            errors.extend(net::cluster_ips_errors(obj, Some(old)));
        }
        ("", "Endpoints") => errors.extend(net::endpoints_errors(obj, Some(old))),
        _ => errors.extend(kind_errors(group, kind, obj)),
    }
    once_each(errors)
}

/// Metadata: labels, annotations, finalizers; the core kinds also refuse an unqualified
/// finalizer that is not one of kube's own.
fn meta_errors(group: &str, obj: &Value) -> Vec<FieldError> {
    let mut errors = metadata_errors(obj);
    if group.is_empty() {
        let finalizers = obj
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array);
        for (i, f) in finalizers.into_iter().flatten().enumerate() {
            if let Some(f) = f.as_str()
                && let Some(e) = kube_finalizer_error(&format!("metadata.finalizers[{i}]"), f)
            {
                errors.push(e);
            }
        }
    }
    errors
}

fn kube_finalizer_error(field: &str, name: &str) -> Option<FieldError> {
    const STANDARD: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];
    (!name.contains('/') && !STANDARD.contains(&name)).then(|| {
        FieldError::invalid(
            field,
            name,
            "name is neither a standard finalizer name nor is it fully qualified",
        )
    })
}

fn kind_errors(group: &str, kind: &str, obj: &Value) -> Vec<FieldError> {
    match (group, kind) {
        ("", "ConfigMap") => config_map_errors(obj),
        ("", "Secret") => secret_errors(obj),
        ("", "Namespace") => namespace_errors(obj),
        ("", "Service") => service_errors(obj),
        ("", "Endpoints") => net::endpoints_errors(obj, None),
        ("coordination.k8s.io", "Lease") => lease_errors(obj),
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => refs::role_errors(obj),
        ("apps", "Deployment" | "ReplicaSet") => apps::deployment_errors(obj, None),
        ("", "Pod") => workloads::pod_errors(obj),
        ("", "PersistentVolumeClaim") => workloads::claim_errors(obj),
        ("batch", "Job") => workloads::job_errors(obj),
        _ => Vec::new(),
    }
}

fn string_map<'a>(obj: &'a Value, field: &str) -> Option<&'a Map<String, Value>> {
    obj.get(field).and_then(Value::as_object)
}

/// kube's `IsConfigMapKey`.
pub fn config_key_messages(key: &str) -> Vec<String> {
    let mut m = Vec::new();
    if key.len() > 253 {
        m.push("must be no more than 253 characters".to_string());
    }
    let chars_ok = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !chars_ok {
        m.push(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    if key == "." || key == ".." {
        m.push(format!("must not be '{key}'"));
    } else if key.starts_with("..") {
        m.push("must not start with '..'".to_string());
    }
    m
}

fn key_errors(field: &str, key: &str) -> impl Iterator<Item = FieldError> {
    let path = format!("{field}[{key}]");
    config_key_messages(key)
        .into_iter()
        .map(move |m| FieldError::invalid(&path, key, &m))
}

fn decoded_len(v: &Value) -> usize {
    v.as_str()
        .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        .map_or(0, |b| b.len())
}

fn config_map_errors(obj: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let data = string_map(obj, "data");
    let binary = string_map(obj, "binaryData");
    let mut total = 0;
    for (key, value) in data.into_iter().flatten() {
        errors.extend(key_errors("data", key));
        if binary.is_some_and(|b| b.contains_key(key)) {
            errors.push(FieldError::invalid(
                &format!("data[{key}]"),
                key,
                "duplicate of key present in binaryData",
            ));
        }
        total += value.as_str().map_or(0, str::len);
    }
    for (key, value) in binary.into_iter().flatten() {
        errors.extend(key_errors("binaryData", key));
        total += decoded_len(value);
    }
    if total > MAX_DATA_BYTES {
        // The whole object, a path without a name, which kube-apiserver writes `[]`.
        errors.push(FieldError::too_long("[]", MAX_DATA_BYTES));
    }
    errors
}

/// Secret types and the data keys each needs.
fn secret_errors(obj: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let data = string_map(obj, "data");
    let mut total = 0;
    for (key, value) in data.into_iter().flatten() {
        errors.extend(key_errors("data", key));
        total += decoded_len(value);
    }
    if total > MAX_DATA_BYTES {
        errors.push(FieldError::too_long("data", MAX_DATA_BYTES));
    }
    let has = |k: &str| data.is_some_and(|d| d.contains_key(k));
    let decoded = |k: &str| {
        data.and_then(|d| d.get(k))
            .and_then(Value::as_str)
            .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
            .unwrap_or_default()
    };
    let required = |k: &str| FieldError::required(&format!("data[{k}]"), "");
    match obj.get("type").and_then(Value::as_str).unwrap_or("") {
        "kubernetes.io/service-account-token" => {
            let named = obj
                .pointer("/metadata/annotations/kubernetes.io~1service-account.name")
                .and_then(Value::as_str)
                .is_some_and(|v| !v.is_empty());
            if !named {
                errors.push(FieldError::required(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                    "",
                ));
            }
        }
        t @ ("kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson") => {
            let key = if t.ends_with("json") {
                ".dockerconfigjson"
            } else {
                ".dockercfg"
            };
            if !has(key) {
                errors.push(required(key));
            } else if let Some(why) = json_object_error(&decoded(key)) {
                errors.push(FieldError::invalid(
                    &format!("data[{key}]"),
                    "<secret contents redacted>",
                    &why,
                ));
            }
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            errors.push(required("username"));
            errors.push(required("password"));
        }
        "kubernetes.io/ssh-auth" if decoded("ssh-privatekey").is_empty() => {
            errors.push(required("ssh-privatekey"));
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !has(key) {
                    errors.push(required(key));
                }
            }
        }
        _ => {}
    }
    errors
}

/// Why `bytes` do not decode as a JSON object (as Go's `json.Unmarshal` into a map says it); a
/// JSON `null` decodes.
fn json_object_error(bytes: &[u8]) -> Option<String> {
    if let Some(e) = gojson::syntax_error(bytes) {
        return Some(e);
    }
    let v: Value = serde_json::from_slice(bytes).ok()?;
    (!v.is_object() && !v.is_null()).then(|| {
        format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            gojson::type_name(&v)
        )
    })
}

fn namespace_errors(obj: &Value) -> Vec<FieldError> {
    let finalizers = obj.pointer("/spec/finalizers").and_then(Value::as_array);
    let mut errors = Vec::new();
    for f in finalizers.into_iter().flatten().filter_map(Value::as_str) {
        for m in label_key_messages(f) {
            errors.push(FieldError::invalid("spec.finalizers", f, &m));
        }
        errors.extend(kube_finalizer_error("spec.finalizers", f));
    }
    errors
}

fn lease_errors(obj: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let int = |f: &str| obj.pointer(&format!("/spec/{f}")).and_then(Value::as_i64);
    if let Some(d) = int("leaseDurationSeconds").filter(|d| *d <= 0) {
        errors.push(FieldError::invalid_raw(
            "spec.leaseDurationSeconds",
            d,
            "must be greater than 0",
        ));
    }
    if let Some(t) = int("leaseTransitions").filter(|t| *t < 0) {
        errors.push(FieldError::invalid_raw(
            "spec.leaseTransitions",
            t,
            "must be greater than or equal to 0",
        ));
    }
    errors
}

/// A Service's ports and type, as far as kube checks them before allocating addresses.
fn service_errors(obj: &Value) -> Vec<FieldError> {
    const TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
    const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
    let mut errors = Vec::new();
    let spec = obj.get("spec");
    let get = |f: &str| spec.and_then(|s| s.get(f));
    let kind = get("type").and_then(Value::as_str).unwrap_or("ClusterIP");
    let headless = get("clusterIP").and_then(Value::as_str) == Some("None");
    let ports = get("ports").and_then(Value::as_array);
    if ports.is_none_or(Vec::is_empty) && !headless && kind != "ExternalName" {
        errors.push(FieldError::required("spec.ports", ""));
    }
    let ports = ports.map(Vec::as_slice).unwrap_or_default();
    let range = "must be between 1 and 65535, inclusive";
    let mut names = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        let at = |f: &str| format!("spec.ports[{i}].{f}");
        let name = p.get("name").and_then(Value::as_str).unwrap_or("");
        if ports.len() > 1 && name.is_empty() {
            errors.push(FieldError::required(&at("name"), ""));
        } else if !name.is_empty() {
            for m in super::name_messages(super::NameRule::Label, name) {
                errors.push(FieldError::invalid(&at("name"), name, &m));
            }
            if names.contains(&name) {
                errors.push(FieldError {
                    kind: field::ErrorType::Duplicate,
                    field: at("name"),
                    value: BadValue::Str(name.into()),
                    detail: String::new(),
                });
            }
            names.push(name);
        }
        let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
        if !(1..=65535).contains(&port) {
            errors.push(FieldError::invalid_raw(&at("port"), port, range));
        }
        match p.get("protocol").and_then(Value::as_str) {
            Some(pr) if !PROTOCOLS.contains(&pr) => errors.push(FieldError::not_supported(
                &at("protocol"),
                BadValue::Str(pr.into()),
                PROTOCOLS,
            )),
            _ => {}
        }
        match p.get("targetPort") {
            Some(Value::String(t)) => {
                for m in port_name_messages(t) {
                    errors.push(FieldError::invalid(&at("targetPort"), t, &m));
                }
            }
            target => {
                let t = target.and_then(Value::as_i64).unwrap_or(port);
                if !(1..=65535).contains(&t) {
                    errors.push(FieldError::invalid_raw(&at("targetPort"), t, range));
                }
            }
        }
    }
    if !TYPES.contains(&kind) {
        errors.push(FieldError::not_supported(
            "spec.type",
            BadValue::Str(kind.into()),
            TYPES,
        ));
    }
    errors
}

/// kube's `IsValidPortName`.
fn port_name_messages(port: &str) -> Vec<String> {
    let mut m = Vec::new();
    if port.len() > 15 {
        m.push("must be no more than 15 characters".to_string());
    }
    if port.is_empty()
        || !port
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        m.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
        );
    }
    if !port.chars().any(|c| c.is_ascii_lowercase()) {
        m.push("must contain at least one letter (a-z)".to_string());
    }
    if port.contains("--") {
        m.push("must not contain consecutive hyphens".to_string());
    }
    if port.starts_with('-') || port.ends_with('-') {
        m.push("must not begin or end with a hyphen".to_string());
    }
    m
}

/// What an update may not change: an immutable ConfigMap's or Secret's data, a Secret's type.
fn immutable_errors(group: &str, kind: &str, obj: &Value, old: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let fields: &[&str] = match (group, kind) {
        ("", "ConfigMap") => &["data", "binaryData"],
        ("", "Secret") => {
            let type_of = |o: &Value| {
                o.get("type")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                    .unwrap_or("Opaque")
                    .to_string()
            };
            let new_type = type_of(obj);
            if new_type != type_of(old) {
                errors.push(FieldError::invalid("type", &new_type, "field is immutable"));
            }
            &["data"]
        }
        _ => return errors,
    };
    if old.get("immutable").and_then(Value::as_bool) == Some(true) {
        let forbidden =
            |f: &str| FieldError::forbidden(f, "field is immutable when `immutable` is set");
        if obj.get("immutable").and_then(Value::as_bool) != Some(true) {
            errors.push(forbidden("immutable"));
        }
        let present = |o: &Value, f: &str| o.get(f).filter(|v| !v.is_null()).cloned();
        for f in fields {
            if present(obj, f) != present(old, f) {
                errors.push(forbidden(f));
            }
        }
    }
    errors
}

#[cfg(test)]
#[path = "builtin_kinds_tests.rs"]
mod tests;

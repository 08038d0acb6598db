//! What kube-apiserver refuses of any object, checked without a cluster: names per kind, the size
//! of an object, the string maps and base64 of ConfigMaps and Secrets, and a namespace for the
//! kinds known to be namespaced. The agent runs these at prepare time (so nothing of a unit is
//! applied when one of its objects would be refused) and the local control plane runs the same
//! ones on every write.
//!
//! Each problem is a message in kube-apiserver's shape, starting with the field path
//! (`metadata.name: ...`, `data[password]: ...`); none quotes a value of a ConfigMap or Secret.

use base64::Engine;
use serde_json::Value;

/// The most the annotations of one object hold (keys and values together).
pub const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;
/// The largest object kube-apiserver stores (etcd's default request limit), serialized as JSON.
pub const MAX_OBJECT_BYTES: usize = 1536 * 1024;
/// The most data a ConfigMap or Secret holds (all values together).
pub const MAX_DATA_BYTES: usize = 1024 * 1024;

/// How kube-apiserver validates the name of a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// RFC 1123 subdomain: most kinds, custom resources included.
    Subdomain,
    /// RFC 1123 label: Namespaces.
    Label,
    /// RFC 1035 label (starts with a letter): Services.
    Rfc1035Label,
    /// A path segment (anything but `.`, `..`, `/` and `%`): the RBAC kinds.
    PathSegment,
}

/// The name rule of `group`/`kind`.
pub fn name_rule(group: &str, kind: &str) -> NameRule {
    match (group, kind) {
        ("", "Namespace") => NameRule::Label,
        ("", "Service") => NameRule::Rfc1035Label,
        (
            "rbac.authorization.k8s.io",
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding",
        ) => NameRule::PathSegment,
        _ => NameRule::Subdomain,
    }
}

/// `metadata.name: Invalid value: ...` when `name` breaks the rule of `group`/`kind`.
pub fn name_problem(group: &str, kind: &str, name: &str) -> Option<String> {
    let rule = name_rule(group, kind);
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let (ok, what) = match rule {
        NameRule::Subdomain => (
            name.len() <= 253
                && name.split('.').all(|part| {
                    !part.is_empty()
                        && part.chars().all(|c| alnum(c) || c == '-')
                        && part.starts_with(alnum)
                        && part.ends_with(alnum)
                }),
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (at most 253 characters)",
        ),
        NameRule::Label => (
            label_ok(name, alnum),
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (at most 63 characters)",
        ),
        NameRule::Rfc1035Label => (
            label_ok(name, |c: char| c.is_ascii_lowercase()) && name.ends_with(alnum),
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (at most 63 characters)",
        ),
        NameRule::PathSegment => (
            !name.is_empty()
                && name != "."
                && name != ".."
                && !name.contains('/')
                && !name.contains('%'),
            "may not be '.' or '..' and may not contain '/' or '%'",
        ),
    };
    (!ok).then(|| format!("metadata.name: Invalid value: {name:?}: {what}"))
}

fn label_ok(name: &str, first: impl Fn(char) -> bool) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    name.len() <= 63
        && name.starts_with(first)
        && name.ends_with(alnum)
        && name.chars().all(|c| alnum(c) || c == '-')
}

/// A label or annotation key: an optional DNS subdomain prefix and `/`, then a name of at most
/// 63 alphanumerics, `-`, `_` or `.`, starting and ending with an alphanumeric.
fn qualified_name_ok(key: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let prefix_ok =
        prefix.is_none_or(|p| !p.is_empty() && name_problem("", "ConfigMap", p).is_none());
    prefix_ok && label_value_ok(name) && !name.is_empty()
}

/// A label value: empty, or at most 63 alphanumerics, `-`, `_` or `.`, starting and ending with
/// an alphanumeric.
fn label_value_ok(value: &str) -> bool {
    value.is_empty()
        || (value.len() <= 63
            && value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric())
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
}

/// Problems of `metadata.labels` and `metadata.annotations`: string maps, valid keys, label values
/// as kube-apiserver accepts them, annotations within their total size. Annotation values are
/// never quoted (one may carry a whole object, a Secret's included). With `typed`, the kind's own
/// schema already says both are maps of strings, and only keys and label values are checked here.
pub fn metadata_problems(obj: &Value, typed: bool) -> Vec<String> {
    let mut problems = Vec::new();
    for field in ["labels", "annotations"] {
        let path = format!("metadata.{field}");
        let map = match obj.pointer(&format!("/metadata/{field}")) {
            None | Some(Value::Null) => continue,
            Some(Value::Object(m)) => m,
            Some(_) if typed => continue,
            Some(other) => {
                problems.push(format!(
                    "{path}: Invalid value: must be a map of strings, not {}",
                    value_kind(other)
                ));
                continue;
            }
        };
        let mut total = 0;
        for (key, value) in map {
            if !qualified_name_ok(key) {
                problems.push(format!(
                    "{path}: Invalid value: {key:?}: a key must be a name of at most 63 alphanumeric characters, '-', '_' or '.' \
                     (starting and ending with an alphanumeric), optionally prefixed by a DNS subdomain and '/'"
                ));
            }
            let Some(text) = value.as_str() else {
                if !typed {
                    problems.push(format!(
                        "{path}[{key}]: Invalid value: must be a string, not {} (quote it in YAML)",
                        value_kind(value)
                    ));
                }
                continue;
            };
            total += key.len() + text.len();
            if field == "labels" && !label_value_ok(text) {
                problems.push(format!(
                    "{path}[{key}]: Invalid value: {text:?}: a label value must be empty or at most 63 alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric"
                ));
            }
        }
        if field == "annotations" && total > MAX_ANNOTATIONS_BYTES {
            problems.push(format!(
                "{path}: Too long: the annotations hold {} bytes, over the {MAX_ANNOTATIONS_BYTES} an API server accepts",
                total
            ));
        }
    }
    problems
}

/// Whether `group`/`kind` is namespaced, when known without asking a cluster: the built-in kinds,
/// and the kinds of the CRDs this project works with (CAPI, the ARO kinds, node policies, ASO).
pub fn namespaced(group: &str, kind: &str) -> Option<bool> {
    const CLUSTER_SCOPED: &[(&str, &str)] = &[
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("", "ComponentStatus"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("apiregistration.k8s.io", "APIService"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSINode"),
        ("storage.k8s.io", "VolumeAttachment"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("networking.k8s.io", "IngressClass"),
        ("node.k8s.io", "RuntimeClass"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
        ),
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration",
        ),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        (
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicyBinding",
        ),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ];
    const NAMESPACED: &[(&str, &str)] = &[
        ("", "ConfigMap"),
        ("", "Secret"),
        ("", "Service"),
        ("", "ServiceAccount"),
        ("", "Pod"),
        ("", "PodTemplate"),
        ("", "PersistentVolumeClaim"),
        ("", "Endpoints"),
        ("", "Event"),
        ("", "LimitRange"),
        ("", "ResourceQuota"),
        ("", "ReplicationController"),
        ("apps", "Deployment"),
        ("apps", "StatefulSet"),
        ("apps", "DaemonSet"),
        ("apps", "ReplicaSet"),
        ("apps", "ControllerRevision"),
        ("batch", "Job"),
        ("batch", "CronJob"),
        ("rbac.authorization.k8s.io", "Role"),
        ("rbac.authorization.k8s.io", "RoleBinding"),
        ("networking.k8s.io", "Ingress"),
        ("networking.k8s.io", "NetworkPolicy"),
        ("policy", "PodDisruptionBudget"),
        ("autoscaling", "HorizontalPodAutoscaler"),
        ("coordination.k8s.io", "Lease"),
        ("discovery.k8s.io", "EndpointSlice"),
        ("events.k8s.io", "Event"),
    ];
    const NAMESPACED_GROUPS: &[&str] = &[
        "cluster.x-k8s.io",
        "infrastructure.cluster.x-k8s.io",
        "controlplane.cluster.x-k8s.io",
        "karpenter.hypershift.openshift.io",
    ];
    if CLUSTER_SCOPED.contains(&(group, kind)) {
        Some(false)
    } else if NAMESPACED.contains(&(group, kind))
        || NAMESPACED_GROUPS.contains(&group)
        || group.ends_with(".azure.com")
    {
        Some(true)
    } else {
        None
    }
}

/// The kinds a set of objects defines through CustomResourceDefinitions, with whether each is
/// namespaced: `(group, kind, namespaced)`.
pub fn defined_kinds<'a>(
    objects: impl IntoIterator<Item = &'a Value>,
) -> Vec<(String, String, bool)> {
    objects
        .into_iter()
        .filter(|o| {
            o.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
                && o.get("apiVersion")
                    .and_then(Value::as_str)
                    .is_some_and(|v| v.starts_with("apiextensions.k8s.io/"))
        })
        .filter_map(|o| {
            let group = o.pointer("/spec/group")?.as_str()?;
            let kind = o.pointer("/spec/names/kind")?.as_str()?;
            let namespaced = o.pointer("/spec/scope").and_then(Value::as_str) != Some("Cluster");
            Some((group.to_string(), kind.to_string(), namespaced))
        })
        .collect()
}

/// `metadata.namespace: Required value` when a namespaced kind has no namespace.
pub fn namespace_problem(
    kind: &str,
    namespace: Option<&str>,
    namespaced: Option<bool>,
) -> Option<String> {
    (namespaced == Some(true) && namespace.is_none_or(str::is_empty)).then(|| {
        format!(
            "metadata.namespace: Required value: {kind} is namespaced: give it a namespace (or set the kustomization's `namespace:`)"
        )
    })
}

/// The object's size over [`MAX_OBJECT_BYTES`], serialized as JSON.
pub fn size_problem(obj: &Value) -> Option<String> {
    let size = serde_json::to_vec(obj).map(|v| v.len()).unwrap_or(0);
    (size > MAX_OBJECT_BYTES).then(|| {
        format!(
            "Too long: the object is {} as JSON, over the {} an API server stores",
            mib(size),
            mib(MAX_OBJECT_BYTES)
        )
    })
}

fn mib(bytes: usize) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// A key of a ConfigMap's or Secret's data, as kube-apiserver accepts it.
fn key_problem(field: &str, key: &str) -> Option<String> {
    let chars_ok = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let why = if !chars_ok {
        "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
    } else if key.len() > 253 {
        "must be no more than 253 characters"
    } else if key == "." || key == ".." {
        "must not be '.' or '..'"
    } else if key.starts_with("..") {
        "must not start with '..'"
    } else {
        return None;
    };
    Some(format!("{field}[{key}]: Invalid value: the key: {why}"))
}

fn value_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

/// Problems of a ConfigMap's `data`/`binaryData` or a Secret's `data`/`stringData`; empty for
/// other kinds. Values are never quoted (a Secret's are secret), only what they are.
pub fn data_problems(group: &str, kind: &str, obj: &Value) -> Vec<String> {
    // (field, values are base64)
    let fields: &[(&str, bool)] = match (group, kind) {
        ("", "ConfigMap") => &[("data", false), ("binaryData", true)],
        ("", "Secret") => &[("data", true), ("stringData", false)],
        _ => return Vec::new(),
    };
    let mut problems = Vec::new();
    let mut total = 0usize;
    let mut seen = std::collections::BTreeSet::new();
    for &(field, base64) in fields {
        let map = match obj.get(field) {
            None | Some(Value::Null) => continue,
            Some(Value::Object(m)) => m,
            Some(other) => {
                problems.push(format!(
                    "{field}: Invalid value: must be a map of strings, not {}",
                    value_kind(other)
                ));
                continue;
            }
        };
        for (key, value) in map {
            problems.extend(key_problem(field, key));
            if kind == "ConfigMap" && !seen.insert(key.as_str()) {
                problems.push(format!(
                    "{field}[{key}]: Invalid value: duplicate of key present in data"
                ));
            }
            let Some(text) = value.as_str() else {
                problems.push(format!(
                    "{field}[{key}]: Invalid value: must be a string, not {}",
                    value_kind(value)
                ));
                continue;
            };
            if base64 {
                match base64::engine::general_purpose::STANDARD.decode(text) {
                    Ok(bytes) => total += bytes.len(),
                    Err(_) => problems.push(format!(
                        "{field}[{key}]: Invalid value: not valid base64 (the value is not shown)"
                    )),
                }
            } else {
                total += text.len();
            }
        }
    }
    if total > MAX_DATA_BYTES {
        problems.push(format!(
            "data: Too long: {kind} data is {}, over the {} an API server accepts",
            mib(total),
            mib(MAX_DATA_BYTES)
        ));
    }
    problems
}

/// Every problem of one object kube-apiserver would refuse, as far as it is known without a
/// cluster: its name, labels and annotations, size and data. `namespaced` says whether its kind
/// needs a namespace (from [`namespaced`] or the unit's own CRDs; `None` when not known here);
/// `typed_metadata` that the kind's schema already types its labels and annotations.
pub fn object_problems(obj: &Value, namespaced: Option<bool>, typed_metadata: bool) -> Vec<String> {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    let group = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .map(|v| crate::object::split_api_version(v).0)
        .unwrap_or_default();
    let meta = obj.get("metadata");
    let name = meta
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let namespace = meta
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str);
    let mut problems = Vec::new();
    if !name.is_empty() {
        problems.extend(name_problem(group, kind, name));
    }
    if let Some(ns) = namespace.filter(|ns| !ns.is_empty())
        && let Some(p) = name_problem("", "Namespace", ns)
    {
        problems.push(p.replacen("metadata.name", "metadata.namespace", 1));
    }
    problems.extend(namespace_problem(kind, namespace, namespaced));
    problems.extend(metadata_problems(obj, typed_metadata));
    problems.extend(size_problem(obj));
    problems.extend(data_problems(group, kind, obj));
    problems
}

#[cfg(test)]
#[path = "builtin_tests.rs"]
mod tests;

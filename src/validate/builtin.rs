//! What kube-apiserver refuses of any object, checked without a cluster: names per kind, the size
//! of an object, the string maps and base64 of ConfigMaps and Secrets, and a namespace for the
//! kinds known to be namespaced. The agent runs these at prepare time (so nothing of a unit is
//! applied when one of its objects would be refused) and the local control plane runs the same
//! ones on every write.
//!
//! Each problem is a message in kube-apiserver's shape, starting with the field path
//! (`metadata.name: ...`, `data[password]: ...`); none quotes a value of a ConfigMap or Secret.

use crate::machinery::field::{self, FieldError};
use base64::Engine;
use serde_json::Value;

#[path = "builtin_apps.rs"]
pub mod apps;
#[path = "builtin_decode.rs"]
pub mod decode;
#[path = "builtin_events.rs"]
pub mod events;
#[path = "builtin_kinds.rs"]
pub mod kinds;
#[path = "builtin_net.rs"]
pub mod net;
#[path = "builtin_refs.rs"]
pub mod refs;
#[path = "builtin_workloads.rs"]
pub mod workloads;

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
        // Service names are RFC 1123 labels since kube-apiserver v1.34 (relaxed from RFC 1035).
        ("", "Service") => NameRule::Label,
        (
            "rbac.authorization.k8s.io",
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding",
        ) => NameRule::PathSegment,
        _ => NameRule::Subdomain,
    }
}

/// kube-apiserver's messages for `name` under `rule` (none when it is valid; one per
/// characteristic at fault).
pub fn name_messages(rule: NameRule, name: &str) -> Vec<String> {
    match rule {
        NameRule::Subdomain => subdomain_messages(name),
        NameRule::Label => label_messages(name),
        NameRule::Rfc1035Label => {
            let mut m = max_len(name, 63);
            if !dns1035_ok(name) {
                m.push(regex_error(
                    DNS1035_MSG,
                    DNS1035_FMT,
                    &["my-name", "abc-123"],
                ));
            }
            m
        }
        NameRule::PathSegment => {
            if name == "." || name == ".." {
                return vec![format!("may not be '{name}'")];
            }
            ["/", "%"]
                .iter()
                .filter(|c| name.contains(*c))
                .map(|c| format!("may not contain '{c}'"))
                .collect()
        }
    }
}

/// The errors of `name` (at `field`: `metadata.name` or `metadata.generateName`) for
/// `group`/`kind`. A generateName prefix may end in `-`.
pub fn name_errors(group: &str, kind: &str, field: &str, name: &str) -> Vec<FieldError> {
    let checked = if field.ends_with("generateName") && name.len() > 1 && name.ends_with('-') {
        format!("{}a", &name[..name.len() - 1])
    } else {
        name.to_string()
    };
    name_messages(name_rule(group, kind), &checked)
        .iter()
        .map(|m| FieldError::invalid(field, name, m))
        .collect()
}

/// `metadata.name: Invalid value: ...` when `name` breaks the rule of `group`/`kind`.
pub fn name_problem(group: &str, kind: &str, name: &str) -> Option<String> {
    let errors = name_errors(group, kind, "metadata.name", name);
    (!errors.is_empty()).then(|| field::aggregate(&errors))
}

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const SUBDOMAIN_FMT: &str = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const DNS1035_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const KEY_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const KEY_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";

/// kube's wording of a pattern not matched: the rule, examples and the regular expression.
pub(crate) fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let each: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{fmt}')",
        each.join(" or ")
    )
}

fn max_len(value: &str, max: usize) -> Vec<String> {
    if value.len() > max {
        vec![format!("must be no more than {max} characters")]
    } else {
        Vec::new()
    }
}

/// Label keys and values are checked by kube's newer `content` rules, whose length limits are in
/// bytes.
fn in_bytes(message: &str) -> String {
    match message.strip_suffix(" characters") {
        Some(limit) if limit.starts_with("must be no more than ") => format!("{limit} bytes"),
        _ => message.to_string(),
    }
}

fn lower_alnum(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn label_ok(s: &str) -> bool {
    !s.is_empty()
        && s.starts_with(lower_alnum)
        && s.ends_with(lower_alnum)
        && s.chars().all(|c| lower_alnum(c) || c == '-')
}

fn subdomain_ok(s: &str) -> bool {
    s.split('.').all(label_ok)
}

fn dns1035_ok(s: &str) -> bool {
    label_ok(s) && s.starts_with(|c: char| c.is_ascii_lowercase())
}

/// kube's `IsDNS1123Subdomain`.
pub(crate) fn subdomain_messages(value: &str) -> Vec<String> {
    let mut m = max_len(value, 253);
    if !subdomain_ok(value) {
        m.push(regex_error(SUBDOMAIN_MSG, SUBDOMAIN_FMT, &["example.com"]));
    }
    m
}

/// kube's `IsDNS1123Label`.
fn label_messages(value: &str) -> Vec<String> {
    let mut m = max_len(value, 63);
    if !label_ok(value) {
        m.push(if subdomain_ok(value) {
            "must not contain dots".to_string()
        } else {
            regex_error(LABEL_MSG, LABEL_FMT, &["my-name", "123-abc"])
        });
    }
    m
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn key_name_ok(s: &str) -> bool {
    !s.is_empty()
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// kube's `IsQualifiedName`: a label, annotation or finalizer key (an optional DNS subdomain
/// prefix and `/`, then a name of at most 63 characters).
pub fn label_key_messages(key: &str) -> Vec<String> {
    let parts: Vec<&str> = key.split('/').collect();
    let mut m = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                m.push("prefix part must be non-empty".to_string());
            } else {
                m.extend(
                    subdomain_messages(prefix)
                        .into_iter()
                        .map(|x| format!("prefix part {}", in_bytes(&x))),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    KEY_NAME_MSG,
                    KEY_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        m.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        m.push("name part must be no more than 63 bytes".to_string());
    }
    if !key_name_ok(name) {
        m.push(format!(
            "name part {}",
            regex_error(
                KEY_NAME_MSG,
                KEY_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    m
}

/// kube's `IsValidLabelValue`.
pub fn label_value_messages(value: &str) -> Vec<String> {
    let mut m: Vec<String> = max_len(value, 63).iter().map(|x| in_bytes(x)).collect();
    if !value.is_empty() && !key_name_ok(value) {
        m.push(regex_error(
            LABEL_VALUE_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    m
}

/// The field errors kube-apiserver finds in `metadata.labels` and `metadata.annotations` (keys,
/// label values, the annotations' total size), `metadata.ownerReferences` (each owner named
/// whole) and `metadata.finalizers` (qualified names).
/// Values that are not strings are left to [`metadata_type_problems`]; annotation values are
/// never quoted.
pub fn metadata_errors(obj: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let string_map = |field: &str| {
        obj.pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
    };
    for (key, value) in string_map("labels") {
        for m in label_key_messages(key) {
            errors.push(FieldError::invalid("metadata.labels", key, &m));
        }
        for m in label_value_messages(value) {
            errors.push(FieldError::invalid("metadata.labels", value, &m));
        }
    }
    let mut total = 0;
    for (key, value) in string_map("annotations") {
        for m in label_key_messages(&key.to_lowercase()) {
            errors.push(FieldError::invalid("metadata.annotations", key, &m));
        }
        total += key.len() + value.len();
    }
    if total > MAX_ANNOTATIONS_BYTES {
        errors.push(FieldError::too_long(
            "metadata.annotations",
            MAX_ANNOTATIONS_BYTES,
        ));
    }
    errors.extend(owner_reference_errors(obj));
    let finalizers = obj
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array);
    for f in finalizers.into_iter().flatten().filter_map(Value::as_str) {
        for m in label_key_messages(f) {
            errors.push(FieldError::invalid("metadata.finalizers", f, &m));
        }
    }
    errors
}

/// Each of `metadata.ownerReferences` names its owner whole: an `apiVersion` of the form
/// `group/version` or `version`, a `kind`, a `name` and a `uid`.
fn owner_reference_errors(obj: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let refs = obj
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array);
    for (i, r) in refs.into_iter().flatten().enumerate() {
        let at = |f: &str| format!("metadata.ownerReferences[{i}].{f}");
        let text = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or("");
        let api_version = text("apiVersion");
        let version_ok = match api_version.split('/').collect::<Vec<_>>().as_slice() {
            [version] | [_, version] => !version.is_empty(),
            _ => false,
        };
        if api_version.is_empty() {
            errors.push(FieldError::required(&at("apiVersion"), "must not be empty"));
        } else if !version_ok {
            errors.push(FieldError::invalid(
                &at("apiVersion"),
                api_version,
                "must be <group>/<version> or <version>",
            ));
        }
        for f in ["kind", "name", "uid"] {
            if text(f).is_empty() {
                errors.push(FieldError::required(&at(f), "must not be empty"));
            }
        }
    }
    errors
}

/// `metadata.labels` and `metadata.annotations` that are not maps of strings (which
/// kube-apiserver cannot decode).
pub fn metadata_type_problems(obj: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    for field in ["labels", "annotations"] {
        let path = format!("metadata.{field}");
        match obj.pointer(&format!("/metadata/{field}")) {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                for (key, value) in m.iter().filter(|(_, v)| !v.is_string()) {
                    problems.push(format!(
                        "{path}[{key}]: Invalid value: must be a string, not {} (quote it in YAML)",
                        value_kind(value)
                    ));
                }
            }
            Some(other) => problems.push(format!(
                "{path}: Invalid value: must be a map of strings, not {}",
                value_kind(other)
            )),
        }
    }
    problems
}

/// Problems of `metadata.labels` and `metadata.annotations`: string maps, valid keys, label values
/// as kube-apiserver accepts them, annotations within their total size. Annotation values are
/// never quoted (one may carry a whole object, a Secret's included). With `typed`, the kind's own
/// schema already says both are maps of strings, and only keys and label values are checked here.
pub fn metadata_problems(obj: &Value, typed: bool) -> Vec<String> {
    let mut problems = if typed {
        Vec::new()
    } else {
        metadata_type_problems(obj)
    };
    problems.extend(
        metadata_errors(obj)
            .iter()
            .filter(|e| !e.field.starts_with("metadata.finalizers"))
            .filter(|e| !e.field.starts_with("metadata.ownerReferences"))
            .map(ToString::to_string),
    );
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

/// Problems of a ConfigMap's `data`/`binaryData` or a Secret's `data`/`stringData` (and type);
/// empty for other kinds: what kube-apiserver cannot decode, else what its validation refuses
/// (keys, duplicates, total size, the keys a Secret's type needs). Values are never quoted (a
/// Secret's are secret), only what they are.
pub fn data_problems(group: &str, kind: &str, obj: &Value) -> Vec<String> {
    if !matches!((group, kind), ("", "ConfigMap" | "Secret")) {
        return Vec::new();
    }
    let undecodable = decode::decode_problems(group, kind, obj, false);
    if !undecodable.is_empty() {
        return undecodable.iter().map(ToString::to_string).collect();
    }
    let mut stored = obj.clone();
    fold_string_data(&mut stored);
    kinds::create_errors(group, kind, &stored)
        .iter()
        .filter(|e| !e.field.starts_with("metadata."))
        // kube names a ConfigMap's whole object (`[]`, a path without a name); the agent says
        // `data`.
        .map(|e| match e.field.as_str() {
            "[]" => format!("data: {}", e.body()),
            _ => e.to_string(),
        })
        .collect()
}

/// A Secret's `stringData` folded into `data` (base64), as kube-apiserver stores it.
pub fn fold_string_data(obj: &mut Value) {
    let Some(Value::Object(string_data)) = obj.as_object_mut().and_then(|m| m.remove("stringData"))
    else {
        return;
    };
    let mut data = obj
        .get_mut("data")
        .and_then(Value::as_object_mut)
        .map(std::mem::take)
        .unwrap_or_default();
    for (k, v) in string_data {
        let s = v.as_str().unwrap_or_default();
        data.insert(
            k,
            Value::String(base64::engine::general_purpose::STANDARD.encode(s)),
        );
    }
    obj["data"] = Value::Object(data);
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
    if let Some(ns) = namespace.filter(|ns| !ns.is_empty()) {
        let errors = name_errors("", "Namespace", "metadata.namespace", ns);
        if !errors.is_empty() {
            problems.push(field::aggregate(&errors));
        }
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

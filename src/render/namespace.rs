//! The kustomization `namespace` field, as kustomize v5.5 applies it, and which types are cluster-scoped.
//!
//! kustomize sets `metadata.namespace` (overriding what is there) on every object it does not know to be
//! cluster-scoped; what it knows is the OpenAPI data it embeds (Kubernetes 1.21, GA and beta versions only),
//! so the table below is by group, version and kind: a newer cluster-scoped type (`ValidatingAdmissionPolicy`,
//! any custom resource) gets a namespace from kustomize, and so it does here. It also, like kustomize:
//! renames a `v1` `Namespace` to the namespace; sets `namespace` on `RoleBinding`/`ClusterRoleBinding`
//! subjects named `default`; sets `spec.service.namespace` on `apiregistration.k8s.io` `APIService`s
//! (creating it when absent); and replaces an existing CRD conversion webhook service namespace.

use crate::object::split_api_version;
use serde_json::{Map, Value};
use std::cell::RefCell;

/// Cluster-scoped types in kustomize v5.5's built-in OpenAPI data: (group, kind, versions).
const CLUSTER_SCOPED: &[(&str, &str, &[&str])] = &[
    ("", "ComponentStatus", &["v1"]),
    ("", "Namespace", &["v1"]),
    ("", "Node", &["v1"]),
    ("", "PersistentVolume", &["v1"]),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
        &["v1", "v1beta1"],
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
        &["v1", "v1beta1"],
    ),
    (
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        &["v1", "v1beta1"],
    ),
    ("apiregistration.k8s.io", "APIService", &["v1", "v1beta1"]),
    (
        "certificates.k8s.io",
        "CertificateSigningRequest",
        &["v1", "v1beta1"],
    ),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema", &["v1beta1"]),
    (
        "flowcontrol.apiserver.k8s.io",
        "PriorityLevelConfiguration",
        &["v1beta1"],
    ),
    ("networking.k8s.io", "IngressClass", &["v1", "v1beta1"]),
    ("node.k8s.io", "RuntimeClass", &["v1", "v1beta1"]),
    ("policy", "PodSecurityPolicy", &["v1beta1"]),
    (
        "rbac.authorization.k8s.io",
        "ClusterRole",
        &["v1", "v1beta1"],
    ),
    (
        "rbac.authorization.k8s.io",
        "ClusterRoleBinding",
        &["v1", "v1beta1"],
    ),
    ("scheduling.k8s.io", "PriorityClass", &["v1", "v1beta1"]),
    ("storage.k8s.io", "CSIDriver", &["v1", "v1beta1"]),
    ("storage.k8s.io", "CSINode", &["v1", "v1beta1"]),
    ("storage.k8s.io", "StorageClass", &["v1", "v1beta1"]),
    ("storage.k8s.io", "VolumeAttachment", &["v1", "v1beta1"]),
];

thread_local! {
    /// The types the build's custom OpenAPI schema says are cluster-scoped (kustomize holds its schema for
    /// the whole build too); set by [`ScopeGuard`].
    static SCHEMA_CLUSTER_SCOPED: RefCell<Vec<(String, String)>> = const { RefCell::new(Vec::new()) };
}

/// Whether kustomize knows `apiVersion`/`kind` to be cluster-scoped (unknown types count as namespaced).
/// Its table of built-in types comes first; a type of another group is cluster-scoped when the build's
/// custom OpenAPI schema says so (see [`super::openapi`]).
pub fn is_cluster_scoped(api_version: &str, kind: &str) -> bool {
    let (group, version) = split_api_version(api_version);
    scoped(group, version, kind, |a| a == api_version)
}

/// [`is_cluster_scoped`] of the `apiVersion` joined from `group` and `version` (a version without `/`, as
/// [`split_api_version`] gives it), without building that string.
pub fn is_cluster_scoped_gvk(group: &str, version: &str, kind: &str) -> bool {
    scoped(group, version, kind, |a| {
        if group.is_empty() {
            a == version
        } else {
            a.len() == group.len() + 1 + version.len()
                && a.starts_with(group)
                && a.ends_with(version)
                && a.as_bytes()[group.len()] == b'/'
        }
    })
}

/// `is_api_version` tells whether an `apiVersion` of the custom schema is the one asked about.
fn scoped(group: &str, version: &str, kind: &str, is_api_version: impl Fn(&str) -> bool) -> bool {
    if CLUSTER_SCOPED
        .iter()
        .any(|(g, k, versions)| *g == group && *k == kind && versions.contains(&version))
    {
        return true;
    }
    let builtin_group = group.is_empty()
        || group.ends_with(".k8s.io")
        || ["apps", "batch", "autoscaling", "policy", "extensions"].contains(&group);
    !builtin_group
        && SCHEMA_CLUSTER_SCOPED.with(|types| {
            types
                .borrow()
                .iter()
                .any(|(a, k)| k == kind && is_api_version(a))
        })
}

/// Holds the cluster-scoped types of a custom OpenAPI schema for one build (on this thread), and forgets
/// them when dropped.
pub struct ScopeGuard(());

impl ScopeGuard {
    /// A build with no custom schema yet.
    pub fn new() -> Self {
        SCHEMA_CLUSTER_SCOPED.with(|types| types.borrow_mut().clear());
        ScopeGuard(())
    }

    /// The build's custom schema says these (apiVersion, kind) are cluster-scoped.
    pub fn set(types: Vec<(String, String)>) {
        SCHEMA_CLUSTER_SCOPED.with(|t| *t.borrow_mut() = types);
    }
}

impl Drop for ScopeGuard {
    fn drop(&mut self) {
        SCHEMA_CLUSTER_SCOPED.with(|types| types.borrow_mut().clear());
    }
}

/// Which `RoleBinding`/`ClusterRoleBinding` subjects get the namespace (`NamespaceTransformer`'s
/// `setRoleBindingSubjects`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Subjects {
    /// Subjects named `default` (`defaultOnly`, and what the `namespace` field does).
    #[default]
    NamedDefault,
    /// Subjects of kind `ServiceAccount` (`allServiceAccounts`).
    ServiceAccounts,
    /// None (`none`).
    None,
}

impl Subjects {
    /// From the option's value as written (empty: the default).
    pub fn parse(mode: &str) -> Result<Self, String> {
        match mode {
            "" | "defaultOnly" => Ok(Subjects::NamedDefault),
            "allServiceAccounts" => Ok(Subjects::ServiceAccounts),
            "none" => Ok(Subjects::None),
            other => Err(format!(
                "setRoleBindingSubjects is {other:?}: it must be defaultOnly, allServiceAccounts or none"
            )),
        }
    }
}

/// How a namespace is set: `NamespaceTransformer`'s options (the `namespace` field uses the defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Only where no namespace is set yet (`unsetOnly`).
    pub unset_only: bool,
    pub subjects: Subjects,
    /// Whether the field specs include kustomize's built-in ones for, in order, a `Namespace`'s name, an
    /// `APIService`'s service and a CRD's conversion webhook service (a `NamespaceTransformer`
    /// configuration may leave them out).
    pub builtin_specs: [bool; 3],
}

impl Default for Options {
    fn default() -> Self {
        Options {
            unset_only: false,
            subjects: Subjects::default(),
            builtin_specs: [true; 3],
        }
    }
}

impl Options {
    /// Writes the namespace into `slot`, unless `unset_only` and it already holds one.
    pub fn set(&self, slot: &mut Value, namespace: &str) {
        let empty = slot.is_null() || slot.as_str() == Some("");
        if !self.unset_only || empty {
            *slot = Value::String(namespace.to_string());
        }
    }

    fn set_in(&self, map: &mut Map<String, Value>, key: &str, namespace: &str) {
        self.set(map.entry(key).or_insert(Value::Null), namespace);
    }
}

/// Applies a kustomization's `namespace` to one object (already checked to have apiVersion, kind, metadata).
#[cfg(test)]
pub fn set_namespace(obj: &mut Value, namespace: &str) {
    set_namespace_with(obj, namespace, &Options::default());
}

/// Applies a `namespace` to one object (already checked to have apiVersion, kind, metadata), with
/// `NamespaceTransformer`'s options (the `namespace` field uses the defaults).
pub fn set_namespace_with(obj: &mut Value, namespace: &str, options: &Options) {
    let api_version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let (group, _) = split_api_version(&api_version);
    let o = options;

    if !is_cluster_scoped(&api_version, &kind)
        && let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut)
    {
        o.set_in(meta, "namespace", namespace);
    }
    let [namespace_name, api_service, crd_webhook] = o.builtin_specs;
    match (group, kind.as_str()) {
        ("", "Namespace") if api_version == "v1" && namespace_name => {
            if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                o.set_in(meta, "name", namespace);
            }
        }
        (_, "RoleBinding" | "ClusterRoleBinding") => {
            if let Some(subjects) = obj.get_mut("subjects").and_then(Value::as_array_mut) {
                for subject in subjects.iter_mut().filter_map(Value::as_object_mut) {
                    let chosen = match o.subjects {
                        Subjects::NamedDefault => "name",
                        Subjects::ServiceAccounts => "kind",
                        Subjects::None => continue,
                    };
                    let wanted = match o.subjects {
                        Subjects::ServiceAccounts => "ServiceAccount",
                        _ => "default",
                    };
                    if subject.get(chosen).and_then(Value::as_str) == Some(wanted) {
                        o.set_in(subject, "namespace", namespace);
                    }
                }
            }
        }
        ("apiregistration.k8s.io", "APIService") if api_service => {
            let spec = child_mapping(obj.as_object_mut().expect("objects are mappings"), "spec");
            o.set_in(child_mapping(spec, "service"), "namespace", namespace);
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") if crd_webhook => {
            let service = obj
                .pointer_mut("/spec/conversion/webhook/clientConfig/service")
                .and_then(Value::as_object_mut);
            if let Some(service) = service.filter(|s| s.contains_key("namespace")) {
                o.set_in(service, "namespace", namespace);
            }
        }
        _ => {}
    }
}

/// `map[key]` as a mapping, created (or replacing a non-mapping) when needed.
fn child_mapping<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let slot = map.entry(key).or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut().expect("just made a mapping")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with_ns(mut obj: Value) -> Value {
        set_namespace(&mut obj, "team");
        obj
    }

    #[test]
    fn the_cluster_scoped_kinds_named_in_the_guide_are_left_alone() {
        for (api_version, kind) in [
            ("v1", "Namespace"),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"),
            ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
            ("apiregistration.k8s.io/v1", "APIService"),
            ("v1", "PersistentVolume"),
            ("storage.k8s.io/v1", "StorageClass"),
            ("scheduling.k8s.io/v1", "PriorityClass"),
            (
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration",
            ),
            (
                "admissionregistration.k8s.io/v1",
                "MutatingWebhookConfiguration",
            ),
        ] {
            assert!(is_cluster_scoped(api_version, kind), "{api_version} {kind}");
        }
        // As in kustomize: by group and version, and types it does not know are namespaced.
        assert!(!is_cluster_scoped("example.com/v1", "ClusterRole"));
        assert!(!is_cluster_scoped(
            "rbac.authorization.k8s.io/v1alpha1",
            "ClusterRoleBinding"
        ));
        assert!(!is_cluster_scoped(
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicy"
        ));
        assert!(!is_cluster_scoped("cert-manager.io/v1", "ClusterIssuer"));
    }

    #[test]
    fn namespaced_objects_get_the_namespace_overriding_theirs() {
        let out = with_ns(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "x"}}),
        );
        assert_eq!(out["metadata"], json!({"name": "a", "namespace": "team"}));
        let out = with_ns(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}),
        );
        assert_eq!(out["metadata"]["namespace"], "team");
        let cr = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "c", "namespace": "foo"}});
        assert_eq!(with_ns(cr.clone()), cr);
    }

    #[test]
    fn namespace_objects_are_renamed() {
        let out = with_ns(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "old", "labels": {"a": "b"}}}),
        );
        assert_eq!(
            out["metadata"],
            json!({"name": "team", "labels": {"a": "b"}})
        );
    }

    #[test]
    fn role_binding_subjects_named_default_get_the_namespace() {
        let out = with_ns(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "b"},
            "subjects": [
                {"kind": "ServiceAccount", "name": "default", "namespace": "x"},
                {"kind": "ServiceAccount", "name": "sa", "namespace": "old"},
                {"kind": "Group", "name": "default"}
            ]
        }));
        assert_eq!(out["subjects"][0]["namespace"], "team");
        assert_eq!(out["subjects"][1]["namespace"], "old");
        assert_eq!(out["subjects"][2]["namespace"], "team");
        assert!(out["metadata"].get("namespace").is_none());
    }

    #[test]
    fn namespace_transformer_options() {
        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "b", "namespace": "mine"},
            "subjects": [
                {"kind": "ServiceAccount", "name": "default", "namespace": "x"},
                {"kind": "ServiceAccount", "name": "sa"},
                {"kind": "User", "name": "default"}
            ]
        });
        let with = |options: Options| {
            let mut obj = binding.clone();
            set_namespace_with(&mut obj, "team", &options);
            obj
        };
        let namespaces = |obj: &Value| -> Vec<Value> {
            let mut out = vec![obj["metadata"]["namespace"].clone()];
            out.extend((0..3).map(|i| obj["subjects"][i]["namespace"].clone()));
            out
        };
        let unset_only = Options {
            unset_only: true,
            subjects: Subjects::ServiceAccounts,
            ..Options::default()
        };
        assert_eq!(
            namespaces(&with(unset_only)),
            [json!("mine"), json!("x"), json!("team"), Value::Null]
        );
        let none = Options {
            subjects: Subjects::parse("none").unwrap(),
            ..Options::default()
        };
        assert_eq!(
            namespaces(&with(none)),
            [json!("team"), json!("x"), Value::Null, Value::Null]
        );
        assert_eq!(
            namespaces(&with(Options::default())),
            [json!("team"), json!("team"), Value::Null, json!("team")]
        );
        assert!(
            Subjects::parse("everyone")
                .unwrap_err()
                .contains("everyone")
        );
    }

    #[test]
    fn api_service_and_crd_conversion_services() {
        let out = with_ns(
            json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1.x"}}),
        );
        assert_eq!(out["spec"], json!({"service": {"namespace": "team"}}));
        let out = with_ns(
            json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1.x"},
            "spec": {"group": "x", "service": {"name": "s", "namespace": "old"}}}),
        );
        assert_eq!(
            out["spec"]["service"],
            json!({"name": "s", "namespace": "team"})
        );
        let crd = |service: Value| {
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "a.x.io"},
                "spec": {"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"service": service}}}}})
        };
        let out = with_ns(crd(json!({"name": "s", "namespace": "old"})));
        assert_eq!(
            out.pointer("/spec/conversion/webhook/clientConfig/service/namespace"),
            Some(&json!("team"))
        );
        let unset = crd(json!({"name": "s"}));
        assert_eq!(with_ns(unset.clone()), unset);
    }
}

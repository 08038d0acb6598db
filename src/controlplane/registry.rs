//! The kinds the control plane serves: the built-in ones, and every kind a CustomResourceDefinition
//! defines. Rebuilt whenever a CRD is written or deleted, so discovery follows the CRDs exactly.

use crate::crdschema::StructuralSchema;
use crate::machinery::ssa::Schema;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// One additional printer column of a CRD version (`kubectl get` columns).
#[derive(Debug, Clone, PartialEq)]
pub struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub json_path: String,
    pub priority: i64,
}

/// A kind served by the control plane.
#[derive(Debug)]
pub struct ResourceType {
    pub group: String,
    /// Served versions, most preferred first.
    pub versions: Vec<String>,
    pub storage_version: String,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub namespaced: bool,
    pub status_subresource: bool,
    /// Defined by a CustomResourceDefinition (strategic merge patch is refused for these, as upstream).
    pub custom: bool,
    pub schema: Arc<Schema>,
    /// The structural schema of each served version of a custom kind, which writes are pruned
    /// and validated against; empty for built-in kinds.
    pub validation: Arc<BTreeMap<String, StructuralSchema>>,
    pub printer_columns: Vec<PrinterColumn>,
    /// The CustomResourceDefinition of a custom kind (each version's schema and subresources,
    /// for discovery and OpenAPI); `None` for built-in kinds.
    pub crd: Option<Arc<Value>>,
}

impl ResourceType {
    /// `secrets` or `aroclusters.infrastructure.cluster.x-k8s.io`.
    pub fn qualified_plural(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The prefix of storage keys for objects of this kind.
    pub fn key_prefix(&self) -> String {
        format!("{}/{}/", self.storage_group(), self.kind)
    }

    /// The storage key of one object.
    pub fn storage_key(&self, namespace: &str, name: &str) -> String {
        format!(
            "{}/{}/{}/{}",
            self.storage_group(),
            self.kind,
            namespace,
            name
        )
    }

    /// Whether these objects are stored in another API's shape and converted on every read and
    /// write: events.k8s.io Events, which are core Events (see [`super::events`]).
    pub fn converted(&self) -> bool {
        !self.custom && self.group == "events.k8s.io" && self.kind == "Event"
    }

    /// The group whose storage holds these objects.
    pub fn storage_group(&self) -> &str {
        if self.converted() { "" } else { &self.group }
    }

    /// Whether a read of `version` can answer the stored text as it is: the storage version of
    /// a kind stored in its own shape, with no schema defaults to fill in on read.
    pub fn serves_stored_text(&self, version: &str) -> bool {
        version == self.storage_version
            && !self.converted()
            && self
                .validation
                .get(version)
                .is_none_or(|s| !s.has_defaults())
    }

    pub fn api_version(&self, version: &str) -> String {
        crate::object::join_api_version(&self.group, version)
    }

    pub fn serves(&self, version: &str) -> bool {
        self.versions.iter().any(|v| v == version)
    }

    /// Whether objects of this kind carry `metadata.generation`: custom resources, and the
    /// built-ins whose strategy sets it (kinds with a desired state in `spec`).
    pub fn has_generation(&self) -> bool {
        self.custom
            || matches!(
                (self.group.as_str(), self.kind.as_str()),
                ("apps", "Deployment" | "ReplicaSet")
                    | ("batch", "Job")
                    | ("", "Pod")
                    | ("apiextensions.k8s.io", "CustomResourceDefinition")
            )
    }

    /// Whether a DELETE that removes the object at once answers the object itself; the other
    /// kinds answer a `Status` Success naming it (upstream's `ReturnDeletedObject`).
    pub fn returns_deleted_object(&self) -> bool {
        !self.custom
            && self.group.is_empty()
            && matches!(
                self.kind.as_str(),
                "Namespace" | "Service" | "ServiceAccount" | "Pod" | "PersistentVolumeClaim"
            )
    }
}

struct Builtin {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    short: &'static [&'static str],
    namespaced: bool,
    status: bool,
    /// The categories kube-apiserver lists the resource in (`all`: `kubectl get all`).
    categories: &'static [&'static str],
}

const BUILTINS: &[Builtin] = &[
    Builtin {
        group: "",
        version: "v1",
        kind: "Namespace",
        plural: "namespaces",
        short: &["ns"],
        namespaced: false,
        categories: &[],
        status: true,
    },
    Builtin {
        group: "",
        version: "v1",
        kind: "Secret",
        plural: "secrets",
        short: &[],
        namespaced: true,
        categories: &[],
        status: false,
    },
    Builtin {
        group: "",
        version: "v1",
        kind: "ConfigMap",
        plural: "configmaps",
        short: &["cm"],
        namespaced: true,
        categories: &[],
        status: false,
    },
    Builtin {
        group: "",
        version: "v1",
        kind: "Service",
        plural: "services",
        short: &["svc"],
        namespaced: true,
        categories: &["all"],
        status: true,
    },
    // What the agent's own deployment (deploy/base) is made of.
    Builtin {
        group: "",
        version: "v1",
        kind: "ServiceAccount",
        plural: "serviceaccounts",
        short: &["sa"],
        namespaced: true,
        categories: &[],
        status: false,
    },
    Builtin {
        group: "apps",
        version: "v1",
        kind: "Deployment",
        plural: "deployments",
        short: &["deploy"],
        namespaced: true,
        categories: &["all"],
        status: true,
    },
    Builtin {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        kind: "ClusterRole",
        plural: "clusterroles",
        short: &[],
        namespaced: false,
        categories: &[],
        status: false,
    },
    Builtin {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        kind: "ClusterRoleBinding",
        plural: "clusterrolebindings",
        short: &[],
        namespaced: false,
        categories: &[],
        status: false,
    },
    Builtin {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        kind: "Role",
        plural: "roles",
        short: &[],
        namespaced: true,
        categories: &[],
        status: false,
    },
    Builtin {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        kind: "RoleBinding",
        plural: "rolebindings",
        short: &[],
        namespaced: true,
        categories: &[],
        status: false,
    },
    Builtin {
        group: "",
        version: "v1",
        kind: "Endpoints",
        plural: "endpoints",
        short: &["ep"],
        namespaced: true,
        categories: &[],
        status: false,
    },
    Builtin {
        group: "",
        version: "v1",
        kind: "Event",
        plural: "events",
        short: &["ev"],
        namespaced: true,
        categories: &[],
        status: false,
    },
    // The same objects as the core v1 Events, converted (see `events.rs`).
    Builtin {
        group: "events.k8s.io",
        version: "v1",
        kind: "Event",
        plural: "events",
        short: &["ev"],
        namespaced: true,
        categories: &[],
        status: false,
    },
    Builtin {
        group: "coordination.k8s.io",
        version: "v1",
        kind: "Lease",
        plural: "leases",
        short: &[],
        namespaced: true,
        categories: &[],
        status: false,
    },
    Builtin {
        group: "apiextensions.k8s.io",
        version: "v1",
        kind: "CustomResourceDefinition",
        plural: "customresourcedefinitions",
        short: &["crd", "crds"],
        namespaced: false,
        categories: &[],
        status: true,
    },
    Builtin {
        group: "apiregistration.k8s.io",
        version: "v1",
        kind: "APIService",
        plural: "apiservices",
        short: &[],
        namespaced: false,
        categories: &[],
        status: true,
    },
    // Kinds of a whole cluster the agent's units may hold: stored and defaulted as
    // kube-apiserver does, with no controller acting on them (see `workloads.rs`).
    Builtin {
        group: "",
        version: "v1",
        kind: "Pod",
        plural: "pods",
        short: &["po"],
        namespaced: true,
        categories: &["all"],
        status: true,
    },
    Builtin {
        group: "",
        version: "v1",
        kind: "Node",
        plural: "nodes",
        short: &["no"],
        namespaced: false,
        categories: &[],
        status: true,
    },
    Builtin {
        group: "",
        version: "v1",
        kind: "PersistentVolumeClaim",
        plural: "persistentvolumeclaims",
        short: &["pvc"],
        namespaced: true,
        categories: &[],
        status: true,
    },
    Builtin {
        group: "apps",
        version: "v1",
        kind: "ReplicaSet",
        plural: "replicasets",
        short: &["rs"],
        namespaced: true,
        categories: &["all"],
        status: true,
    },
    Builtin {
        group: "batch",
        version: "v1",
        kind: "Job",
        plural: "jobs",
        short: &[],
        namespaced: true,
        categories: &["all"],
        status: true,
    },
];

/// A CustomResourceDefinition the control plane cannot serve.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct CrdError(pub String);

/// Reads a CRD into the kind it defines, checking what the API server checks.
pub fn crd_resource_type(crd: &Value) -> Result<ResourceType, CrdError> {
    let spec = crd
        .get("spec")
        .ok_or_else(|| CrdError("spec: Required value".into()))?;
    let s = |v: &Value, field: &str| {
        v.get(field)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let group = s(spec, "group");
    let names = spec.get("names").cloned().unwrap_or(Value::Null);
    let plural = s(&names, "plural");
    let kind = s(&names, "kind");
    if group.is_empty() || !group.contains('.') {
        return Err(CrdError(format!(
            "spec.group: Invalid value: {group:?}: should be a domain with at least one dot"
        )));
    }
    if plural.is_empty() || kind.is_empty() {
        return Err(CrdError("spec.names: plural and kind are required".into()));
    }
    let expected = format!("{plural}.{group}");
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if name != expected {
        return Err(CrdError(format!(
            "metadata.name: Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group ({expected:?})"
        )));
    }
    let namespaced = match spec.get("scope").and_then(Value::as_str) {
        Some("Namespaced") => true,
        Some("Cluster") => false,
        other => {
            return Err(CrdError(format!(
                "spec.scope: Unsupported value: {other:?}: supported values: \"Cluster\", \"Namespaced\""
            )));
        }
    };
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .filter(|v| !v.is_empty());
    let versions = versions.ok_or_else(|| {
        CrdError("spec.versions: Invalid value: must have at least one version".into())
    })?;
    let storage: Vec<&Value> = versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .collect();
    if storage.len() != 1 {
        return Err(CrdError(
            "spec.versions: Invalid value: must have exactly one version marked as storage version"
                .into(),
        ));
    }
    let storage_version = s(storage[0], "name");
    let mut served: Vec<String> = versions
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool).unwrap_or(false))
        .map(|v| s(v, "name"))
        .collect();
    served.sort_by(|a, b| version_priority(b).cmp(&version_priority(a)).then(a.cmp(b)));
    let mut validation = BTreeMap::new();
    for v in &served {
        let schema = StructuralSchema::from_crd(crd, v).map_err(|e| {
            CrdError(format!(
                "spec.versions[{v}].schema.openAPIV3Schema: Invalid value: {e}"
            ))
        })?;
        validation.insert(v.clone(), schema);
    }
    let storage_def = storage[0];
    let status_subresource = storage_def.pointer("/subresources/status").is_some();
    let schema = storage_def
        .pointer("/schema/openAPIV3Schema")
        .map(Schema::from_openapi_v3)
        .unwrap_or_else(Schema::any_object);
    let printer_columns = storage_def
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .map(|cols| {
            cols.iter()
                .map(|c| PrinterColumn {
                    name: s(c, "name"),
                    type_: s(c, "type"),
                    json_path: s(c, "jsonPath"),
                    priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                })
                .collect()
        })
        .unwrap_or_default();
    let strings = |field: &str| crate::object::strings_at(&names, &format!("/{field}"));
    let list_kind = Some(s(&names, "listKind"))
        .filter(|l| !l.is_empty())
        .unwrap_or_else(|| format!("{kind}List"));
    let singular = Some(s(&names, "singular"))
        .filter(|l| !l.is_empty())
        .unwrap_or_else(|| kind.to_lowercase());
    Ok(ResourceType {
        group,
        versions: served,
        storage_version,
        list_kind,
        plural,
        singular,
        short_names: strings("shortNames"),
        categories: strings("categories"),
        namespaced,
        status_subresource,
        custom: true,
        schema: Arc::new(schema),
        validation: Arc::new(validation),
        printer_columns,
        kind,
        crd: Some(Arc::new(crd.clone())),
    })
}

/// Kubernetes' version ordering: GA > beta > alpha, higher numbers first; others last, alphabetically.
pub fn version_priority(v: &str) -> (u8, u64, u64) {
    let Some(rest) = v.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let Ok(major) = digits.parse::<u64>() else {
        return (0, 0, 0);
    };
    let tail = &rest[digits.len()..];
    if tail.is_empty() {
        return (3, major, 0);
    }
    for (prefix, rank) in [("beta", 2u8), ("alpha", 1u8)] {
        if let Some(n) = tail.strip_prefix(prefix)
            && let Ok(minor) = n.parse::<u64>()
        {
            return (rank, major, minor);
        }
    }
    (0, 0, 0)
}

/// Every kind served, with lookups by resource (plural) and by kind.
#[derive(Default)]
pub struct Registry {
    types: Vec<Arc<ResourceType>>,
    by_resource: HashMap<(String, String), usize>,
    by_kind: HashMap<(String, String), usize>,
}

impl Registry {
    /// The built-in kinds plus the kinds of these CRDs; a CRD that cannot be served is skipped
    /// (it was rejected when written, so this only happens to stored state from another version).
    pub fn new<'a>(crds: impl IntoIterator<Item = &'a Value>) -> Registry {
        let mut reg = Registry::default();
        for b in BUILTINS {
            reg.insert(ResourceType {
                group: b.group.into(),
                versions: vec![b.version.into()],
                storage_version: b.version.into(),
                kind: b.kind.into(),
                list_kind: format!("{}List", b.kind),
                plural: b.plural.into(),
                singular: b.kind.to_lowercase(),
                short_names: b.short.iter().map(|s| s.to_string()).collect(),
                categories: b.categories.iter().map(|s| s.to_string()).collect(),
                namespaced: b.namespaced,
                status_subresource: b.status,
                custom: false,
                schema: Arc::new(Schema::builtin(b.group, b.kind)),
                validation: Arc::default(),
                printer_columns: vec![],
                crd: None,
            });
        }
        for crd in crds {
            match crd_resource_type(crd) {
                Ok(t) => reg.insert(t),
                Err(e) => {
                    tracing::warn!(error = %e, "stored CustomResourceDefinition cannot be served")
                }
            }
        }
        reg
    }

    fn insert(&mut self, t: ResourceType) {
        let i = self.types.len();
        self.by_resource
            .insert((t.group.clone(), t.plural.clone()), i);
        self.by_kind.insert((t.group.clone(), t.kind.clone()), i);
        self.types.push(Arc::new(t));
    }

    /// The kind served at `/{group}/{version}/{plural}`.
    pub fn by_resource(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<Arc<ResourceType>> {
        let t = &self.types[*self
            .by_resource
            .get(&(group.to_string(), plural.to_string()))?];
        t.serves(version).then(|| t.clone())
    }

    pub fn by_kind(&self, group: &str, kind: &str) -> Option<Arc<ResourceType>> {
        self.by_kind
            .get(&(group.to_string(), kind.to_string()))
            .map(|i| self.types[*i].clone())
    }

    pub fn types(&self) -> &[Arc<ResourceType>] {
        &self.types
    }

    /// Whether `group/version` is served at all.
    pub fn serves_group_version(&self, group: &str, version: &str) -> bool {
        self.types
            .iter()
            .any(|t| t.group == group && t.serves(version))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [
                    {"name": "v1alpha1", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                     "schema": {"openAPIV3Schema": {"type": "object"}}}]}
        })
    }

    #[test]
    fn generation_and_deleted_object_answers_follow_upstream_kinds() {
        let reg = Registry::new([&crd()]);
        let kind = |g: &str, k: &str| reg.by_kind(g, k).unwrap();
        assert!(kind("example.com", "Widget").has_generation());
        assert!(kind("apps", "Deployment").has_generation());
        assert!(!kind("", "ConfigMap").has_generation());
        assert!(!kind("coordination.k8s.io", "Lease").has_generation());
        assert!(kind("", "ServiceAccount").returns_deleted_object());
        assert!(!kind("", "Secret").returns_deleted_object());
        assert!(!kind("example.com", "Widget").returns_deleted_object());
    }

    #[test]
    fn crd_defines_a_kind() {
        let t = crd_resource_type(&crd()).unwrap();
        assert_eq!(
            (t.kind.as_str(), t.list_kind.as_str(), t.singular.as_str()),
            ("Widget", "WidgetList", "widget")
        );
        assert_eq!(t.versions, vec!["v1", "v1alpha1"]);
        assert!(t.status_subresource && t.namespaced && t.custom);
        let reg = Registry::new([&crd()]);
        assert!(
            reg.by_resource("example.com", "v1alpha1", "widgets")
                .is_some()
        );
        assert!(reg.by_resource("example.com", "v2", "widgets").is_none());
        assert!(reg.by_resource("", "v1", "secrets").is_some());
        let events = reg.by_resource("events.k8s.io", "v1", "events").unwrap();
        assert!(events.namespaced && !events.custom);
        assert_eq!(events.kind, "Event");
        assert_eq!(reg.by_kind("", "Event").unwrap().group, "");
    }

    #[test]
    fn crd_errors_say_what_is_wrong() {
        let mut bad = crd();
        bad["metadata"]["name"] = json!("widget.example.com");
        assert!(
            crd_resource_type(&bad)
                .unwrap_err()
                .0
                .contains("must be spec.names.plural")
        );
        let mut bad = crd();
        bad["spec"]["versions"][0]["storage"] = json!(true);
        assert!(
            crd_resource_type(&bad)
                .unwrap_err()
                .0
                .contains("exactly one")
        );
    }

    #[test]
    fn versions_order_like_kubernetes() {
        let mut v = vec![
            "v1beta1",
            "v1",
            "v1alpha2",
            "v2beta1",
            "v1api20240610preview",
            "v1beta2",
        ];
        v.sort_by(|a, b| version_priority(b).cmp(&version_priority(a)).then(a.cmp(b)));
        assert_eq!(
            v,
            vec![
                "v1",
                "v2beta1",
                "v1beta2",
                "v1beta1",
                "v1alpha2",
                "v1api20240610preview"
            ]
        );
    }
}

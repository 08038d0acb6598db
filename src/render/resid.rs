//! Object identities as kustomize computes them: group/version/kind, name and "effective" namespace.
//!
//! kustomize tells objects apart by group, version, kind, name and effective namespace: none for a
//! cluster-scoped type (see [`super::namespace::is_cluster_scoped`]), `default` for a namespaced object
//! without one. A [`GvkSelector`] (the `group`/`version`/`kind` of a field spec or patch target) matches a
//! type when each of its non-empty parts is equal.

use super::namespace::is_cluster_scoped_gvk;
use crate::object::{join_api_version, split_api_version};
use serde_json::Value;
use std::fmt;

/// The namespace kustomize records for cluster-scoped objects.
pub const NOT_NAMESPACEABLE: &str = "_non_namespaceable_";
/// The namespace of a namespaced object that names none.
pub const DEFAULT_NAMESPACE: &str = "default";

/// A group, version and kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl Gvk {
    /// The type of `obj`, from its `apiVersion` and `kind`.
    pub fn of(obj: &Value) -> Gvk {
        let (group, version) = split_api_version(field_str(obj, "apiVersion"));
        Gvk {
            group: group.to_string(),
            version: version.to_string(),
            kind: field_str(obj, "kind").to_string(),
        }
    }

    pub fn api_version(&self) -> String {
        join_api_version(&self.group, &self.version)
    }

    /// Whether kustomize takes this type to be cluster-scoped.
    pub fn cluster_scoped(&self) -> bool {
        is_cluster_scoped_gvk(&self.group, &self.version, &self.kind)
    }

    /// Whether `selector` selects this type (empty parts of the selector match anything).
    pub fn selected_by(&self, selector: &GvkSelector) -> bool {
        (selector.group.is_empty() || selector.group == self.group)
            && (selector.version.is_empty() || selector.version == self.version)
            && (selector.kind.is_empty() || selector.kind == self.kind)
    }
}

/// The `group`, `version` and `kind` a field spec or target applies to; empty parts match anything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct GvkSelector {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl GvkSelector {
    pub fn kind(kind: &str) -> Self {
        GvkSelector {
            kind: kind.to_string(),
            ..Default::default()
        }
    }

    pub fn new(group: &str, version: &str, kind: &str) -> Self {
        GvkSelector {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
        }
    }

    /// Reads `group`, `version` and `kind` from a mapping (missing ones are empty).
    pub fn from_map(map: &serde_json::Map<String, Value>) -> Self {
        let get = |k: &str| map.get(k).and_then(Value::as_str).unwrap_or_default();
        GvkSelector::new(get("group"), get("version"), get("kind"))
    }
}

/// One identity of an object: its type, name and namespace (as written; see [`ResId::effective_namespace`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResId {
    pub gvk: Gvk,
    pub name: String,
    pub namespace: String,
}

impl ResId {
    /// The current identity of `obj`.
    pub fn of(obj: &Value) -> ResId {
        ResId {
            gvk: Gvk::of(obj),
            name: metadata_str(obj, "name").to_string(),
            namespace: metadata_str(obj, "namespace").to_string(),
        }
    }

    /// `_non_namespaceable_` for cluster-scoped types, `default` for no namespace, else the namespace.
    pub fn effective_namespace(&self) -> &str {
        if self.gvk.cluster_scoped() {
            NOT_NAMESPACEABLE
        } else if self.namespace.is_empty() {
            DEFAULT_NAMESPACE
        } else {
            &self.namespace
        }
    }

    pub fn cluster_scoped(&self) -> bool {
        self.gvk.cluster_scoped()
    }

    /// kustomize's equality: same type (group, version, kind), name and effective namespace.
    pub fn same_as(&self, other: &ResId) -> bool {
        self.gvk == other.gvk && self.name == other.name && self.same_namespace(other)
    }

    pub fn same_namespace(&self, other: &ResId) -> bool {
        self.effective_namespace() == other.effective_namespace()
    }

    /// A key equal for identities [`ResId::same_as`] finds the same.
    pub fn key(&self) -> IdKey {
        (
            self.gvk.clone(),
            self.effective_namespace().to_string(),
            self.name.clone(),
        )
    }
}

/// See [`ResId::key`].
pub type IdKey = (Gvk, String, String);

/// `Kind/namespace/name` (or `Kind/name` when cluster-scoped or without namespace), as the agent names objects.
impl fmt::Display for ResId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() || self.cluster_scoped() {
            write!(f, "{}/{}", self.gvk.kind, self.name)
        } else {
            write!(f, "{}/{}/{}", self.gvk.kind, self.namespace, self.name)
        }
    }
}

/// The string in the top-level field `key` of `obj`, or `""`.
pub fn field_str<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The string in `metadata.<key>` of `obj`, or `""`.
pub fn metadata_str<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn effective_namespace_and_equality() {
        let cm =
            ResId::of(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}));
        let cm_default = ResId::of(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}}),
        );
        assert_eq!(cm.effective_namespace(), "default");
        assert!(cm.same_as(&cm_default));
        let cr = ResId::of(
            &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "a", "namespace": "x"}}),
        );
        assert_eq!(cr.effective_namespace(), NOT_NAMESPACEABLE);
        assert_eq!(cr.to_string(), "ClusterRole/a");
        assert_eq!(cm_default.to_string(), "ConfigMap/default/a");
        let v2 = ResId {
            gvk: Gvk {
                version: "v2".into(),
                ..cm.gvk.clone()
            },
            ..cm.clone()
        };
        assert!(!cm.same_as(&v2));
    }

    #[test]
    fn selectors_match_their_non_empty_parts() {
        let gvk = Gvk::of(&json!({"apiVersion": "apps/v1", "kind": "Deployment"}));
        assert!(gvk.selected_by(&GvkSelector::default()));
        assert!(gvk.selected_by(&GvkSelector::kind("Deployment")));
        assert!(gvk.selected_by(&GvkSelector::new("apps", "", "Deployment")));
        assert!(!gvk.selected_by(&GvkSelector::new("", "v1beta1", "")));
        assert!(!gvk.selected_by(&GvkSelector::new("batch", "", "")));
    }
}

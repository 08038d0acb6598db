//! The objects a render accumulates, each identity at most once, and the order they come out in.
//!
//! Identity is (API group, kind, namespace, name), the namespace being kustomize's "effective" one: none
//! for a cluster-scoped type, `default` for a namespaced object without one. Unlike kustomize, the version is
//! not part of it: `apps/v1` and `apps/v1beta1` Deployments of one name are the same object on a cluster.
//!
//! Output order is what `kubectl kustomize` (kustomize v5.5) prints by default, its "legacy" order: kinds
//! in a fixed priority list first (Namespace, ResourceQuota, StorageClass, CRDs, ...) and webhook
//! configurations last, everything else in between by `group_version_kind`, then by namespace and name.

use super::error::RenderError;
use super::namespace::is_cluster_scoped;
use crate::object::{ObjectKey, SourcedObject, split_api_version};
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::HashMap;

/// An object being rendered, with what kustomize remembers of its history (for [`super::references`]).
#[derive(Debug, Clone)]
pub struct Resource {
    pub sourced: SourcedObject,
    /// Effective namespace as loaded from its file; `None` when cluster-scoped.
    pub original_namespace: Option<String>,
    /// Whether a kustomization's `namespace` has been applied to it (kustomize then records its previous id).
    pub moved: bool,
}

impl Resource {
    pub fn loaded(sourced: SourcedObject) -> Self {
        let original_namespace = effective_namespace(&sourced.object);
        Resource {
            sourced,
            original_namespace,
            moved: false,
        }
    }

    pub fn object(&self) -> &Value {
        &self.sourced.object
    }
}

/// Objects in the order added, with no identity twice.
#[derive(Debug, Default)]
pub struct ResourceSet {
    objects: Vec<Resource>,
    index: HashMap<Identity, usize>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Identity {
    group: String,
    kind: String,
    namespace: Option<String>,
    name: String,
}

impl ResourceSet {
    /// Adds `obj`, or says where its identity was first defined.
    pub fn add(&mut self, res: Resource) -> Result<(), RenderError> {
        let id = identity(res.object());
        if let Some(&i) = self.index.get(&id) {
            return Err(RenderError::Duplicate {
                id: display_key(res.object()),
                first: self.objects[i].sourced.origin.clone(),
                second: res.sourced.origin,
            });
        }
        self.index.insert(id, self.objects.len());
        self.objects.push(res);
        Ok(())
    }

    pub fn into_vec(self) -> Vec<Resource> {
        self.objects
    }
}

pub fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Whether kustomize takes `obj` to be cluster-scoped.
pub fn cluster_scoped(obj: &Value) -> bool {
    is_cluster_scoped(str_at(obj, "/apiVersion"), str_at(obj, "/kind"))
}

/// kustomize's "effective" namespace: `None` when cluster-scoped, `default` when namespaced without one.
pub fn effective_namespace(obj: &Value) -> Option<String> {
    if cluster_scoped(obj) {
        return None;
    }
    Some(match str_at(obj, "/metadata/namespace") {
        "" => "default".to_string(),
        ns => ns.to_string(),
    })
}

fn identity(obj: &Value) -> Identity {
    Identity {
        group: split_api_version(str_at(obj, "/apiVersion")).0.to_string(),
        kind: str_at(obj, "/kind").to_string(),
        namespace: effective_namespace(obj),
        name: str_at(obj, "/metadata/name").to_string(),
    }
}

/// `Kind/namespace/name` (or `Kind/name`), as the agent names objects everywhere.
pub fn display_key(obj: &Value) -> String {
    ObjectKey::from_object(obj)
        .map(|k| k.to_string())
        .unwrap_or_else(|_| str_at(obj, "/metadata/name").to_string())
}

/// kustomize's default (legacy) order; the kind lists are kustomize's, fixed ("DO NOT CHANGE" upstream).
const ORDER_FIRST: &[&str] = &[
    "Namespace",
    "ResourceQuota",
    "StorageClass",
    "CustomResourceDefinition",
    "ServiceAccount",
    "PodSecurityPolicy",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "ConfigMap",
    "Secret",
    "Endpoints",
    "Service",
    "LimitRange",
    "PriorityClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Deployment",
    "StatefulSet",
    "CronJob",
    "PodDisruptionBudget",
];
const ORDER_LAST: &[&str] = &[
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// Sorts objects into the order `kubectl kustomize` prints them.
pub fn sort_like_kustomize(objects: &mut [Resource]) {
    objects.sort_by(|a, b| compare(a.object(), b.object()));
}

fn kind_rank(kind: &str) -> i64 {
    if let Some(i) = ORDER_FIRST.iter().position(|k| *k == kind) {
        return i as i64 - ORDER_FIRST.len() as i64;
    }
    ORDER_LAST
        .iter()
        .position(|k| *k == kind)
        .map_or(0, |i| i as i64 + 1)
}

fn or<'a>(s: &'a str, placeholder: &'a str) -> &'a str {
    if s.is_empty() { placeholder } else { s }
}

fn compare(a: &Value, b: &Value) -> Ordering {
    let gvk = |o: &Value| {
        let (group, version) = split_api_version(str_at(o, "/apiVersion"));
        (
            group.to_string(),
            version.to_string(),
            str_at(o, "/kind").to_string(),
        )
    };
    let (ga, gb) = (gvk(a), gvk(b));
    if ga != gb {
        let by_rank = kind_rank(&ga.2).cmp(&kind_rank(&gb.2));
        if by_rank != Ordering::Equal {
            return by_rank;
        }
        let key = |(g, v, k): &(String, String, String)| {
            format!("{}_{}_{}", or(g, "~G"), or(v, "~V"), or(k, "~K"))
        };
        let by_gvk = key(&ga).cmp(&key(&gb));
        // kustomize's quirk: Namespaces of the core group come before those of other groups.
        if ga.2 == "Namespace" && gb.2 == "Namespace" && (ga.0.is_empty() || gb.0.is_empty()) {
            return by_gvk.reverse();
        }
        return by_gvk;
    }
    // Same type: by `namespace|name` as one string, as kustomize compares them.
    let key = |o: &Value| {
        format!(
            "{}|{}",
            or(str_at(o, "/metadata/namespace"), "~X"),
            or(str_at(o, "/metadata/name"), "~N")
        )
    };
    key(a).cmp(&key(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::Origin;
    use serde_json::json;
    use std::path::PathBuf;

    fn obj(api_version: &str, kind: &str, ns: Option<&str>, name: &str) -> Resource {
        let mut meta = json!({"name": name});
        if let Some(ns) = ns {
            meta["namespace"] = json!(ns);
        }
        Resource::loaded(SourcedObject {
            object: json!({"apiVersion": api_version, "kind": kind, "metadata": meta}),
            origin: Origin {
                file: PathBuf::from(format!("{name}.yaml")),
                document: 0,
            },
        })
    }

    fn names(objects: &[Resource]) -> Vec<String> {
        objects
            .iter()
            .map(|o| o.object()["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn sorts_in_kustomize_legacy_order() {
        let mut objects = vec![
            obj(
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration",
                None,
                "vw",
            ),
            obj("apps/v1", "Deployment", Some("team"), "zdep"),
            obj("batch/v1", "Job", Some("team"), "job"),
            obj("apps/v1", "DaemonSet", Some("team"), "ds"),
            obj("v1", "Pod", Some("team"), "pod"),
            obj("example.com/v1", "Namespace", None, "xns"),
            obj("v1", "Namespace", None, "ns"),
            obj("v1", "ConfigMap", Some("a-b"), "cm2"),
            obj("v1", "ConfigMap", Some("a"), "cm1"),
            obj("v1", "ConfigMap", None, "cm0"),
            obj(
                "admissionregistration.k8s.io/v1",
                "MutatingWebhookConfiguration",
                None,
                "mw",
            ),
            obj("rbac.authorization.k8s.io/v1", "ClusterRole", None, "cr"),
        ];
        sort_like_kustomize(&mut objects);
        // "a-b|cm2" < "a|cm1" bytewise, as in kustomize; "~X" (no namespace) sorts last; the core group "~G"
        // after named groups.
        assert_eq!(
            names(&objects),
            [
                "ns", "xns", "cr", "cm2", "cm1", "cm0", "zdep", "ds", "job", "pod", "mw", "vw"
            ]
        );
    }

    #[test]
    fn refuses_a_second_object_with_the_same_identity() {
        let mut set = ResourceSet::default();
        set.add(obj("apps/v1", "Deployment", None, "d")).unwrap();
        set.add(obj("apps/v1", "Deployment", Some("other"), "d"))
            .unwrap();
        set.add(obj("v1", "Service", None, "d")).unwrap();
        let mut second = obj("apps/v1beta1", "Deployment", Some("default"), "d");
        second.sourced.origin = Origin {
            file: "b.yaml".into(),
            document: 1,
        };
        let err = set.add(second).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Deployment/default/d: may not add resource with an already registered id: defined in d.yaml and again in b.yaml (document 2)"
        );
        // Cluster-scoped: the namespace field does not make a different object.
        set.add(obj(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            None,
            "c",
        ))
        .unwrap();
        assert!(
            set.add(obj(
                "rbac.authorization.k8s.io/v1",
                "ClusterRole",
                Some("x"),
                "c"
            ))
            .is_err()
        );
        assert_eq!(set.into_vec().len(), 4);
    }
}

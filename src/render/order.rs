//! The order objects come out in: kustomize's default ("legacy") order, or the order they were loaded
//! (`sortOptions: {order: fifo}`).
//!
//! The legacy order is what `kubectl kustomize` (kustomize v5.5) prints by default: kinds in a fixed
//! priority list first (Namespace, ResourceQuota, StorageClass, CRDs, ...) and webhook configurations last,
//! everything else in between by `group_version_kind`, then by namespace and name. `sortOptions` may replace
//! the two kind lists.

use super::resid::{field_str, metadata_str};
use super::resources::Resource;
use crate::object::split_api_version;
use serde_json::Value;
use std::cmp::Ordering;

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

/// The kinds sorted first and last, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyOrder {
    pub first: Vec<String>,
    pub last: Vec<String>,
}

impl Default for LegacyOrder {
    fn default() -> Self {
        LegacyOrder {
            first: ORDER_FIRST.iter().map(|s| s.to_string()).collect(),
            last: ORDER_LAST.iter().map(|s| s.to_string()).collect(),
        }
    }
}

impl LegacyOrder {
    /// kustomize's default order, built once.
    pub fn kustomize() -> &'static LegacyOrder {
        static ORDER: std::sync::LazyLock<LegacyOrder> =
            std::sync::LazyLock::new(LegacyOrder::default);
        &ORDER
    }
}

/// Sorts objects into the order `kubectl kustomize` prints them by default.
pub fn sort_like_kustomize(objects: &mut [Resource]) {
    sort_legacy(objects, LegacyOrder::kustomize());
}

/// Sorts objects by kustomize's legacy order with the given first and last kinds.
pub fn sort_legacy(objects: &mut [Resource], order: &LegacyOrder) {
    objects.sort_by(|a, b| compare(a.object(), b.object(), order));
}

fn kind_rank(kind: &str, order: &LegacyOrder) -> i64 {
    if let Some(i) = order.first.iter().position(|k| k == kind) {
        return i as i64 - order.first.len() as i64;
    }
    order
        .last
        .iter()
        .position(|k| k == kind)
        .map_or(0, |i| i as i64 + 1)
}

fn or<'a>(s: &'a str, placeholder: &'a str) -> &'a str {
    if s.is_empty() { placeholder } else { s }
}

/// Compares the concatenations of two lists of strings, bytewise, without building them.
fn cmp_joined(a: &[&str], b: &[&str]) -> Ordering {
    a.iter()
        .flat_map(|p| p.bytes())
        .cmp(b.iter().flat_map(|p| p.bytes()))
}

fn gvk_of(o: &Value) -> (&str, &str, &str) {
    let (group, version) = split_api_version(field_str(o, "apiVersion"));
    (group, version, field_str(o, "kind"))
}

/// `group_version_kind` in pieces, empty parts spelled as kustomize spells them.
fn gvk_key<'a>((g, v, k): (&'a str, &'a str, &'a str)) -> [&'a str; 5] {
    [or(g, "~G"), "_", or(v, "~V"), "_", or(k, "~K")]
}

/// `namespace|name` in pieces.
fn name_key(o: &Value) -> [&str; 3] {
    [
        or(metadata_str(o, "namespace"), "~X"),
        "|",
        or(metadata_str(o, "name"), "~N"),
    ]
}

fn compare(a: &Value, b: &Value, order: &LegacyOrder) -> Ordering {
    let (ga, gb) = (gvk_of(a), gvk_of(b));
    if ga != gb {
        let by_rank = kind_rank(ga.2, order).cmp(&kind_rank(gb.2, order));
        if by_rank != Ordering::Equal {
            return by_rank;
        }
        // By `group_version_kind` as one string.
        let by_gvk = cmp_joined(&gvk_key(ga), &gvk_key(gb));
        // kustomize's quirk: Namespaces of the core group come before those of other groups.
        if ga.2 == "Namespace" && gb.2 == "Namespace" && (ga.0.is_empty() || gb.0.is_empty()) {
            return by_gvk.reverse();
        }
        return by_gvk;
    }
    // Same type: by `namespace|name` as one string, as kustomize compares them.
    cmp_joined(&name_key(a), &name_key(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::{Origin, SourcedObject};
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
}

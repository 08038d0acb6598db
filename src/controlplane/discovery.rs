//! Discovery documents (`/version`, `/api`, `/api/v1`, `/apis`, `/apis/{g}`, `/apis/{g}/{v}`),
//! derived from the registry so they follow CRDs as they come and go.

use super::registry::{Registry, ResourceType, version_priority};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": concat!("v1.32.0-aro-gitops-local-", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "none (aro-gitops local control plane, Rust)",
        "compiler": "rustc",
        "platform": "linux/amd64",
    })
}

pub fn core_versions() -> Value {
    json!({"kind": "APIVersions", "apiVersion": "v1", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]})
}

/// Served versions of every non-core group, most preferred first.
pub(super) fn groups(reg: &Registry) -> BTreeMap<String, Vec<String>> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for t in reg.types().iter().filter(|t| !t.group.is_empty()) {
        let versions = groups.entry(t.group.clone()).or_default();
        for v in &t.versions {
            if !versions.contains(v) {
                versions.push(v.clone());
            }
        }
    }
    for versions in groups.values_mut() {
        versions.sort_by(|a, b| version_priority(b).cmp(&version_priority(a)).then(a.cmp(b)));
    }
    groups
}

fn group_doc(name: &str, versions: &[String]) -> Value {
    let gv = |v: &String| json!({"groupVersion": format!("{name}/{v}"), "version": v});
    json!({
        "name": name,
        "versions": versions.iter().map(gv).collect::<Vec<_>>(),
        "preferredVersion": gv(&versions[0]),
    })
}

pub fn group_list(reg: &Registry) -> Value {
    let groups: Vec<Value> = groups(reg).iter().map(|(g, v)| group_doc(g, v)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub fn group(reg: &Registry, name: &str) -> Option<Value> {
    let groups = groups(reg);
    let versions = groups.get(name)?;
    let mut doc = group_doc(name, versions);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

/// A subresource discovery lists for a kind.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Subresource {
    pub name: &'static str,
    /// The kind it answers when not the parent's: (group, version, kind).
    pub other_kind: Option<(&'static str, &'static str, &'static str)>,
    pub verbs: &'static [&'static str],
}

const GET_PATCH_UPDATE: &[&str] = &["get", "patch", "update"];

/// Whether `version` of the kind has the status subresource: a custom kind declares it per
/// version in its CRD.
pub(super) fn has_status(t: &ResourceType, version: &str) -> bool {
    match &t.crd {
        Some(crd) => crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|v| v.get("name").and_then(Value::as_str) == Some(version))
            .is_some_and(|v| v.pointer("/subresources/status").is_some()),
        None => t.status_subresource,
    }
}

/// The subresources of a kind at `version`, by name.
pub(super) fn subresources(t: &ResourceType, version: &str) -> Vec<Subresource> {
    let mut out = Vec::new();
    if !t.custom && t.group.is_empty() && t.kind == "Namespace" {
        out.push(Subresource {
            name: "finalize",
            other_kind: None,
            verbs: &["update"],
        });
    }
    if super::scale::serves_scale(&t.group, &t.kind, t.custom) {
        out.push(Subresource {
            name: "scale",
            other_kind: Some(("autoscaling", "v1", "Scale")),
            verbs: GET_PATCH_UPDATE,
        });
    }
    if has_status(t, version) {
        out.push(Subresource {
            name: "status",
            other_kind: None,
            verbs: GET_PATCH_UPDATE,
        });
    }
    out
}

/// The verbs of a kind's collection and objects, in kube-apiserver's order: sorted for built-in
/// kinds, the custom resource handler's own order for custom kinds.
pub(super) fn verbs(t: &ResourceType) -> Vec<&'static str> {
    let order: &[&str] = if t.custom {
        &[
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "create",
            "update",
            "watch",
        ]
    } else {
        VERBS
    };
    order
        .iter()
        .copied()
        .filter(|v| *v != "deletecollection" || super::limits::offers_delete_collection(t))
        .collect()
}

/// The categories a kind belongs to (`kubectl get all`): a CRD's own, and for built-in kinds
/// those kube-apiserver gives them.
pub(super) fn categories(t: &ResourceType) -> Vec<String> {
    if t.custom || !t.categories.is_empty() {
        return t.categories.clone();
    }
    let all = match (t.group.as_str(), t.kind.as_str()) {
        ("", "Pod" | "Service" | "ReplicationController") => "all",
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet") => "all",
        ("batch", "Job" | "CronJob") => "all",
        ("autoscaling", "HorizontalPodAutoscaler") => "all",
        ("apiextensions.k8s.io", "CustomResourceDefinition")
        | ("apiregistration.k8s.io", "APIService") => "api-extensions",
        _ => return vec![],
    };
    vec![all.to_string()]
}

/// The group and version kube-apiserver stores a kind in: the storage version, but core v1 for
/// events.k8s.io Events (one resource with core Events) and v1beta1 for CustomResourceDefinitions
/// (apiextensions-apiserver still stores that version).
fn storage_group_version(t: &ResourceType) -> (&str, &str) {
    if !t.custom && t.group == "apiextensions.k8s.io" && t.kind == "CustomResourceDefinition" {
        return ("apiextensions.k8s.io", "v1beta1");
    }
    (t.storage_group(), &t.storage_version)
}

/// kube-apiserver's `storageVersionHash`: the first 8 bytes of the SHA-256 of
/// `group/version/kind` of the stored form, base64.
pub(super) fn storage_version_hash(t: &ResourceType) -> String {
    use base64::Engine;
    let (group, version) = storage_group_version(t);
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{group}/{version}/{}", t.kind).as_bytes(),
    );
    base64::engine::general_purpose::STANDARD.encode(&digest.as_ref()[..8])
}

fn resource_entries(t: &ResourceType, version: &str) -> Vec<Value> {
    let mut main = json!({
        "name": t.plural,
        "singularName": t.singular,
        "namespaced": t.namespaced,
        "kind": t.kind,
        "verbs": verbs(t),
    });
    if !t.short_names.is_empty() {
        main["shortNames"] = json!(t.short_names);
    }
    let categories = categories(t);
    if !categories.is_empty() {
        main["categories"] = json!(categories);
    }
    main["storageVersionHash"] = json!(storage_version_hash(t));
    let mut out = vec![main];
    for sub in subresources(t, version) {
        let mut entry = json!({"name": format!("{}/{}", t.plural, sub.name), "singularName": "", "namespaced": t.namespaced});
        if let Some((g, v, _)) = sub.other_kind {
            entry["group"] = json!(g);
            entry["version"] = json!(v);
        }
        entry["kind"] = json!(sub.other_kind.map_or(t.kind.as_str(), |(_, _, k)| k));
        entry["verbs"] = json!(sub.verbs);
        out.push(entry);
    }
    out
}

/// Every served (group, version), sorted.
pub(super) fn group_versions(reg: &Registry) -> Vec<(String, String)> {
    let mut gvs: Vec<(String, String)> = reg
        .types()
        .iter()
        .flat_map(|t| t.versions.iter().map(|v| (t.group.clone(), v.clone())))
        .collect();
    gvs.sort();
    gvs.dedup();
    gvs
}

/// The kinds served at `group/version`.
pub(super) fn kinds_at<'a>(
    reg: &'a Registry,
    group: &'a str,
    version: &'a str,
) -> impl Iterator<Item = &'a Arc<ResourceType>> + 'a {
    reg.types()
        .iter()
        .filter(move |t| t.group == group && t.serves(version))
}

/// `APIResourceList` of one group/version, or `None` if nothing is served there.
pub fn resource_list(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    if !reg.serves_group_version(group, version) {
        return None;
    }
    let mut resources: Vec<Value> = kinds_at(reg, group, version)
        .flat_map(|t| resource_entries(t, version))
        .collect();
    resources.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": crate::object::join_api_version(group, version),
        "resources": resources,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_are_discoverable() {
        let reg = Registry::new([]);
        let core = resource_list(&reg, "", "v1").unwrap();
        let names: Vec<&str> = core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"secrets") && names.contains(&"namespaces/status"));
        let groups = group_list(&reg);
        let gnames: Vec<&str> = groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap())
            .collect();
        for group in [
            "apiextensions.k8s.io",
            "apiregistration.k8s.io",
            "apps",
            "coordination.k8s.io",
            "events.k8s.io",
            "rbac.authorization.k8s.io",
        ] {
            assert!(gnames.contains(&group), "{group} in {gnames:?}");
        }
        assert!(!gnames.contains(&""), "the core group is not a named group");
        assert!(resource_list(&reg, "example.com", "v1").is_none());
    }

    fn widget_crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "categories": ["things"]},
                "versions": [
                    {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}},
                    {"name": "v1alpha1", "served": true, "storage": false}]}
        })
    }

    #[test]
    fn storage_version_hashes_name_the_stored_form() {
        let crd = widget_crd();
        let reg = Registry::new([&crd]);
        let hash = |g: &str, k: &str| storage_version_hash(&reg.by_kind(g, k).unwrap());
        assert_eq!(hash("", "ConfigMap"), "qFsyl6wFWjQ=");
        assert_eq!(hash("apps", "Deployment"), "8aSe+NMegvE=");
        assert_eq!(hash("example.com", "Widget"), "gIwvi5rymmg=");
        // One resource with core Events; CRDs stored as v1beta1.
        assert_eq!(hash("events.k8s.io", "Event"), hash("", "Event"));
        assert_eq!(
            hash("apiextensions.k8s.io", "CustomResourceDefinition"),
            "jfWCUB31mvA="
        );
    }

    #[test]
    fn custom_kinds_list_verbs_and_subresources_per_version() {
        let crd = widget_crd();
        let reg = Registry::new([&crd]);
        let w = reg.by_kind("example.com", "Widget").unwrap();
        assert_eq!(
            verbs(&w),
            [
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "create",
                "update",
                "watch"
            ]
        );
        assert_eq!(categories(&w), ["things"]);
        assert_eq!(subresources(&w, "v1").len(), 1);
        assert!(subresources(&w, "v1alpha1").is_empty());
        let deploy = reg.by_kind("apps", "Deployment").unwrap();
        assert_eq!(categories(&deploy), ["all"]);
        assert!(categories(&reg.by_kind("", "ConfigMap").unwrap()).is_empty());
        let v1alpha1 = resource_list(&reg, "example.com", "v1alpha1").unwrap();
        assert_eq!(v1alpha1["resources"].as_array().unwrap().len(), 1);
    }
}

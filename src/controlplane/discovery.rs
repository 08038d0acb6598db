//! Discovery documents (`/version`, `/api`, `/api/v1`, `/apis`, `/apis/{g}`, `/apis/{g}/{v}`),
//! derived from the registry so they follow CRDs as they come and go.

use super::registry::{Registry, ResourceType, version_priority};
use serde_json::{Value, json};
use std::collections::BTreeMap;

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
fn groups(reg: &Registry) -> BTreeMap<String, Vec<String>> {
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

fn resource_entries(t: &ResourceType) -> Vec<Value> {
    let mut main = json!({
        "name": t.plural,
        "singularName": t.singular,
        "namespaced": t.namespaced,
        "kind": t.kind,
        "verbs": VERBS
            .iter()
            .filter(|v| **v != "deletecollection" || super::limits::offers_delete_collection(t))
            .collect::<Vec<_>>(),
    });
    if !t.short_names.is_empty() {
        main["shortNames"] = json!(t.short_names);
    }
    if !t.categories.is_empty() {
        main["categories"] = json!(t.categories);
    }
    let mut out = vec![main];
    if super::scale::serves_scale(&t.group, &t.kind, t.custom) {
        out.push(json!({"name": format!("{}/scale", t.plural), "singularName": "", "namespaced": t.namespaced, "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}));
    }
    if t.status_subresource {
        out.push(json!({"name": format!("{}/status", t.plural), "singularName": "", "namespaced": t.namespaced, "kind": t.kind, "verbs": ["get", "patch", "update"]}));
    }
    out
}

/// `APIResourceList` of one group/version, or `None` if nothing is served there.
pub fn resource_list(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    if !reg.serves_group_version(group, version) {
        return None;
    }
    let resources: Vec<Value> = reg
        .types()
        .iter()
        .filter(|t| t.group == group && t.serves(version))
        .flat_map(|t| resource_entries(t))
        .collect();
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": crate::object::join_api_version(group, version),
        "resources": resources,
    }))
}

/// `/openapi/v3`: where each group/version's document is. kubectl reads it to learn that PATCH
/// accepts `fieldValidation` (server-side validation) before it applies.
pub fn openapi_v3_root(reg: &Registry) -> Value {
    let mut paths = serde_json::Map::new();
    let mut gvs: Vec<(String, String)> = reg
        .types()
        .iter()
        .flat_map(|t| t.versions.iter().map(|v| (t.group.clone(), v.clone())))
        .collect();
    gvs.sort();
    gvs.dedup();
    for (g, v) in gvs {
        let p = if g.is_empty() {
            format!("api/{v}")
        } else {
            format!("apis/{g}/{v}")
        };
        paths.insert(
            p.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{p}")}),
        );
    }
    json!({"paths": paths})
}

/// `/openapi/v3/api/v1` or `/openapi/v3/apis/{g}/{v}`: the operations of each kind there.
pub fn openapi_v3_group_version(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    if !reg.serves_group_version(group, version) {
        return None;
    }
    let base = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    let param = |name: &str| json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}});
    let mut paths = serde_json::Map::new();
    for t in reg
        .types()
        .iter()
        .filter(|t| t.group == group && t.serves(version))
    {
        let gvk = json!({"group": group, "version": version, "kind": t.kind});
        let item = if t.namespaced {
            format!("{base}/namespaces/{{namespace}}/{}/{{name}}", t.plural)
        } else {
            format!("{base}/{}/{{name}}", t.plural)
        };
        let op = |action: &str| {
            json!({
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": gvk,
                "parameters": [param("dryRun"), param("fieldManager"), param("fieldValidation"), param("force")],
                "responses": {"200": {"description": "OK"}},
            })
        };
        paths.insert(item, json!({"get": op("get"), "put": op("put"), "patch": op("patch"), "delete": op("delete")}));
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "aro-gitops local control plane", "version": env!("CARGO_PKG_VERSION")},
        "paths": paths,
        "components": {"schemas": {}},
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
}

//! Aggregated discovery (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`): every kind of every
//! version of every group in one answer to `/api` or `/apis`, as kubectl and client-go ask for it
//! first (`Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`).

use super::discovery::{Subresource, categories, groups, kinds_at, subresources, verbs};
use super::registry::{Registry, ResourceType};
use serde_json::{Value, json};

/// The media type of the JSON form, as `Content-Type`.
pub const CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether an `Accept` asks for the aggregated form: a JSON (or any) media type naming
/// `apidiscovery.k8s.io` `v2` `APIGroupDiscoveryList` in any of its clauses, whatever their
/// order and weights (kube-apiserver serves the aggregated form whenever one clause names it).
pub fn wanted(accept: &str) -> bool {
    accept.split(',').any(|clause| {
        let mut parts = clause.split(';').map(str::trim);
        let media = parts.next().unwrap_or("");
        let (mut g, mut v, mut kind) = (false, false, false);
        for p in parts {
            match p.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
                Some(("g", "apidiscovery.k8s.io")) => g = true,
                Some(("v", "v2")) => v = true,
                Some(("as", "APIGroupDiscoveryList")) => kind = true,
                _ => {}
            }
        }
        g && v && kind && matches!(media, "application/json" | "application/*" | "*/*")
    })
}

/// `/api` in the aggregated form: the core group, unnamed.
pub fn core(reg: &Registry) -> Value {
    let item = json!({"metadata": {}, "versions": [version_doc(reg, "", "v1")]});
    list(vec![item])
}

/// `/apis` in the aggregated form: every named group, its versions most preferred first.
pub fn named_groups(reg: &Registry) -> Value {
    let items = groups(reg)
        .iter()
        .map(|(g, versions)| {
            let versions: Vec<Value> = versions.iter().map(|v| version_doc(reg, g, v)).collect();
            json!({"metadata": {"name": g}, "versions": versions})
        })
        .collect();
    list(items)
}

fn list(items: Vec<Value>) -> Value {
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

fn version_doc(reg: &Registry, group: &str, version: &str) -> Value {
    let mut resources: Vec<Value> = kinds_at(reg, group, version)
        .map(|t| resource(t, version))
        .collect();
    resources.sort_by(|a, b| a["resource"].as_str().cmp(&b["resource"].as_str()));
    json!({"version": version, "resources": resources, "freshness": "Current"})
}

/// A kind's `responseKind`: built-in handlers leave the group and version empty when they are
/// the resource's own; the custom resource handler names them.
fn response_kind(t: &ResourceType, version: &str, kind: &str) -> Value {
    if t.custom {
        json!({"group": t.group, "version": version, "kind": kind})
    } else {
        json!({"group": "", "version": "", "kind": kind})
    }
}

fn resource(t: &ResourceType, version: &str) -> Value {
    let mut out = json!({
        "resource": t.plural,
        "responseKind": response_kind(t, version, &t.kind),
        "scope": if t.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": t.singular,
        "verbs": verbs(t),
    });
    if !t.short_names.is_empty() {
        out["shortNames"] = json!(t.short_names);
    }
    let categories = categories(t);
    if !categories.is_empty() {
        out["categories"] = json!(categories);
    }
    let subs: Vec<Value> = subresources(t, version)
        .iter()
        .map(|s| subresource(t, version, s))
        .collect();
    if !subs.is_empty() {
        out["subresources"] = json!(subs);
    }
    out
}

fn subresource(t: &ResourceType, version: &str, s: &Subresource) -> Value {
    let kind = match s.other_kind {
        Some((g, v, k)) => json!({"group": g, "version": v, "kind": k}),
        None => response_kind(t, version, &t.kind),
    };
    json!({"subresource": s.name, "responseKind": kind, "verbs": s.verbs})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_aggregated_form_is_wanted_when_a_clause_names_it() {
        assert!(wanted(CONTENT_TYPE));
        assert!(wanted(&format!("{CONTENT_TYPE},application/json")));
        assert!(wanted(&format!(
            "application/json;q=0.9,{CONTENT_TYPE};q=0.5"
        )));
        assert!(!wanted("application/json"));
        assert!(!wanted(
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
        ));
        assert!(!wanted(
            "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        ));
    }

    #[test]
    fn every_kind_is_described_with_its_subresources() {
        let reg = Registry::new([]);
        let core = core(&reg);
        let resources = core["items"][0]["versions"][0]["resources"]
            .as_array()
            .unwrap();
        let ns = resources
            .iter()
            .find(|r| r["resource"] == "namespaces")
            .unwrap();
        assert_eq!(ns["scope"], "Cluster");
        assert_eq!(ns["subresources"][0]["subresource"], "finalize");
        assert_eq!(
            ns["responseKind"],
            json!({"group": "", "version": "", "kind": "Namespace"})
        );
        let groups = named_groups(&reg);
        let apps = groups["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["metadata"]["name"] == "apps")
            .unwrap();
        let deploy = &apps["versions"][0]["resources"][0];
        assert_eq!(deploy["categories"], json!(["all"]));
        assert_eq!(
            deploy["subresources"][0]["responseKind"]["group"],
            "autoscaling"
        );
    }
}

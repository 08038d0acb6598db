//! What an ARO decision sees: lookups in the live objects of the owner's namespace (the owner
//! itself, its CAPI Cluster and MachinePools, sibling ARO objects, embedded resources, Secrets
//! without their data). Matching is by kind and name within the namespace, whatever the version.

use super::embedded::cluster_name;
use super::str_at;
use crate::kinds::{HCP_CLUSTER, NODE_POOL};
use crate::reconcile::readiness::aso_readiness;
use serde_json::Value;

fn same_ns<'a>(a: &Value, b: &'a Value) -> Option<&'a Value> {
    (str_at(a, "/metadata/namespace") == str_at(b, "/metadata/namespace")).then_some(b)
}

/// The object of `kind` named `name` in `near`'s namespace.
pub fn find<'a>(live: &'a [Value], near: &Value, kind: &str, name: &str) -> Option<&'a Value> {
    // The kind and the name first: they rule out nearly every object at one lookup each.
    live.iter()
        .filter(|o| str_at(o, "/kind") == Some(kind) && str_at(o, "/metadata/name") == Some(name))
        .find_map(|o| same_ns(near, o))
}

/// The entries of `owner`'s `spec.resources`, each with its live counterpart if any.
pub fn embedded_live<'a>(
    owner: &'a Value,
    live: &'a [Value],
) -> Vec<(&'a Value, Option<&'a Value>)> {
    owner
        .pointer("/spec/resources")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|e| {
                    let found = find(
                        live,
                        owner,
                        str_at(e, "/kind").unwrap_or(""),
                        str_at(e, "/metadata/name").unwrap_or(""),
                    );
                    (e, found)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn is_capi(o: &Value, kind: &str) -> bool {
    str_at(o, "/kind") == Some(kind)
        && str_at(o, "/apiVersion").is_some_and(|a| a.starts_with("cluster.x-k8s.io/"))
}

/// The CAPI Cluster of an ARO object: named by its cluster-name label, else pointing at it.
pub fn capi_cluster<'a>(obj: &Value, live: &'a [Value]) -> Option<&'a Value> {
    let name = cluster_name(obj);
    live.iter()
        .filter_map(|o| same_ns(obj, o))
        .filter(|o| is_capi(o, "Cluster"))
        .find(|c| {
            str_at(c, "/metadata/name") == Some(name)
                || [
                    str_at(c, "/spec/infrastructureRef/name"),
                    str_at(c, "/spec/controlPlaneRef/name"),
                ]
                .contains(&str_at(obj, "/metadata/name"))
        })
}

/// The CAPI MachinePool whose infrastructure is the AROMachinePool `amp`.
pub fn capi_machine_pool<'a>(amp: &Value, live: &'a [Value]) -> Option<&'a Value> {
    live.iter()
        .filter_map(|o| same_ns(amp, o))
        .filter(|o| is_capi(o, "MachinePool"))
        .find(|mp| {
            let r = mp.pointer("/spec/template/spec/infrastructureRef");
            r.and_then(|r| str_at(r, "/kind")) == Some("AROMachinePool")
                && r.and_then(|r| str_at(r, "/name")) == str_at(amp, "/metadata/name")
        })
}

/// The AROControlPlane of the cluster `obj` belongs to: the one its CAPI Cluster points at, else
/// the one labelled with the same cluster name.
pub fn control_plane<'a>(obj: &Value, live: &'a [Value]) -> Option<&'a Value> {
    if let Some(name) =
        capi_cluster(obj, live).and_then(|c| str_at(c, "/spec/controlPlaneRef/name"))
    {
        return find(live, obj, "AROControlPlane", name);
    }
    of_cluster(obj, live, "AROControlPlane").into_iter().next()
}

/// The AROCluster of the cluster `obj` belongs to.
pub fn aro_cluster<'a>(obj: &Value, live: &'a [Value]) -> Option<&'a Value> {
    if let Some(name) =
        capi_cluster(obj, live).and_then(|c| str_at(c, "/spec/infrastructureRef/name"))
    {
        return find(live, obj, "AROCluster", name);
    }
    of_cluster(obj, live, "AROCluster").into_iter().next()
}

/// Objects of `kind` in `obj`'s namespace that belong to the same cluster (by cluster name).
pub fn of_cluster<'a>(obj: &Value, live: &'a [Value], kind: &str) -> Vec<&'a Value> {
    let cluster = cluster_name(obj);
    live.iter()
        .filter(|o| str_at(o, "/metadata/namespace") == str_at(obj, "/metadata/namespace"))
        .filter(|o| str_at(o, "/kind") == Some(kind) && cluster_name(o) == cluster)
        .collect()
}

/// The name of the HcpOpenShiftCluster an AROControlPlane embeds.
pub fn hcp_name(acp: &Value) -> Option<&str> {
    acp.pointer("/spec/resources")?
        .as_array()?
        .iter()
        .find(|r| str_at(r, "/kind") == Some(HCP_CLUSTER))
        .and_then(|r| str_at(r, "/metadata/name"))
}

/// The live node pools owned by the HcpOpenShiftCluster `hcp` in `near`'s namespace.
pub fn node_pools_of<'a>(near: &'a Value, live: &'a [Value], hcp: &'a str) -> Vec<&'a Value> {
    live.iter()
        .filter_map(|o| same_ns(near, o))
        .filter(|o| {
            str_at(o, "/kind") == Some(NODE_POOL) && str_at(o, "/spec/owner/name") == Some(hcp)
        })
        .collect()
}

/// Whether a node pool of this control plane's cluster (owned by its HcpOpenShiftCluster) is Ready.
pub fn node_pool_ready(acp: &Value, live: &[Value]) -> bool {
    hcp_name(acp).is_some_and(|hcp| {
        node_pools_of(acp, live, hcp)
            .into_iter()
            .any(|np| aso_readiness(np).is_ready())
    })
}

/// The condition `type_` of `obj`'s status, if set.
pub fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

/// Whether the condition `type_` of `obj` is True.
pub fn condition_true(obj: &Value, type_: &str) -> bool {
    condition(obj, type_)
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some("True")
}

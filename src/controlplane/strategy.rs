//! What upstream's per-kind strategies set on a new or updated object after field management
//! recorded the request (`PrepareForCreate`, `PrepareForUpdate`): what they set belongs to no
//! manager, and what they drop stays in the writer's `managedFields`, as upstream. Defaulting,
//! which happens before and so is owned by the writer, is
//! [`super::admission::normalise_kind`]'s.

use super::objects::Target;
use super::registry::ResourceType;
use crate::validate::builtin::net::endpoints_warnings;
use serde_json::{Value, json};

/// The finalizer every new Namespace carries until the namespace controller empties it.
const KUBERNETES_FINALIZER: &str = "kubernetes";

/// The Lease fields of the `CoordinatedLeaderElection` feature gate, off by default in
/// kube-apiserver v1.37: dropped from what a write sets.
const LEASE_GATED: &[&str] = &["strategy", "preferredHolder"];

fn is_builtin(target: &Target, group: &str, kind: &str) -> bool {
    !target.rt.custom && target.rt.group == group && target.rt.kind == kind
}

/// Sets what a new object of this kind gets from the server.
pub(super) fn prepare_for_create(target: &Target, obj: &mut Value) {
    if is_builtin(target, "coordination.k8s.io", "Lease") {
        drop_gated_lease_fields(None, obj);
        return;
    }
    if !is_builtin(target, "", "Namespace") {
        return;
    }
    // A new Namespace is Active, and held by the `kubernetes` finalizer besides any of its own;
    // its name label is set here when the name was generated.
    obj["status"] = json!({"phase": "Active"});
    let name = obj.pointer("/metadata/name").cloned().unwrap_or(json!(""));
    obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
    let spec = &mut obj["spec"];
    if !spec.is_object() {
        *spec = json!({});
    }
    let finalizers = &mut spec["finalizers"];
    match finalizers.as_array_mut() {
        Some(list) if list.iter().any(|f| f == KUBERNETES_FINALIZER) => {}
        Some(list) => list.push(json!(KUBERNETES_FINALIZER)),
        None => *finalizers = json!([KUBERNETES_FINALIZER]),
    }
}

/// The warnings a valid write of this object earns (upstream's `WarningsOnCreate` and
/// `WarningsOnUpdate`): Endpoints' addresses in a non-canonical form.
pub(super) fn write_warnings(target: &Target, obj: &Value) -> Vec<String> {
    if is_builtin(target, "", "Endpoints") {
        return endpoints_warnings(obj);
    }
    Vec::new()
}

/// The warning every request for a deprecated built-in API gets, whatever its answer.
pub(super) fn deprecation_warning(rt: &ResourceType, version: &str) -> Option<String> {
    let endpoints = !rt.custom && rt.group.is_empty() && rt.kind == "Endpoints" && version == "v1";
    endpoints.then(|| {
        "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice".to_string()
    })
}

/// Drops from an updated object what the server does not let this write set.
pub(super) fn prepare_for_update(target: &Target, old: &Value, obj: &mut Value) {
    if is_builtin(target, "coordination.k8s.io", "Lease") {
        drop_gated_lease_fields(Some(old), obj);
    }
}

/// A disabled gate's Lease fields are dropped, unless the stored Lease already has them (a field
/// in use is kept, as upstream's strategy keeps it across a gate turned off).
fn drop_gated_lease_fields(old: Option<&Value>, obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for field in LEASE_GATED {
        let in_use = old
            .and_then(|o| o.pointer(&format!("/spec/{field}")))
            .is_some_and(|v| !v.is_null());
        if !in_use {
            spec.remove(*field);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controlplane::registry::Registry;

    #[test]
    fn a_new_namespace_is_active_and_held_by_the_kubernetes_finalizer() {
        let reg = Registry::new([]);
        let ns = Target::of(&reg, "", "namespaces", None);
        let mut obj = json!({"metadata": {"name": "a"}, "status": {"phase": "Terminating"}});
        prepare_for_create(&ns, &mut obj);
        assert_eq!(obj["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(
            obj["metadata"]["labels"]["kubernetes.io/metadata.name"],
            "a"
        );
        assert_eq!(obj["status"], json!({"phase": "Active"}));
        let mut own = json!({"metadata": {"name": "a"}, "spec": {"finalizers": ["mine"]}});
        prepare_for_create(&ns, &mut own);
        assert_eq!(own["spec"]["finalizers"], json!(["mine", "kubernetes"]));
    }

    #[test]
    fn a_lease_loses_the_fields_of_a_disabled_gate_unless_already_in_use() {
        let reg = Registry::new([]);
        let leases = Target::of(&reg, "coordination.k8s.io", "leases", Some("x"));
        let mut new =
            json!({"spec": {"holderIdentity": "a", "strategy": "S", "preferredHolder": "b"}});
        prepare_for_create(&leases, &mut new);
        assert_eq!(new["spec"], json!({"holderIdentity": "a"}));
        let old = json!({"spec": {"strategy": "S"}});
        let mut updated = json!({"spec": {"strategy": "T", "preferredHolder": "b"}});
        prepare_for_update(&leases, &old, &mut updated);
        assert_eq!(updated["spec"], json!({"strategy": "T"}));
    }

    #[test]
    fn other_kinds_are_left_as_they_are() {
        let reg = Registry::new([]);
        let cms = Target::of(&reg, "", "configmaps", Some("x"));
        let mut obj = json!({"metadata": {"name": "a"}});
        prepare_for_create(&cms, &mut obj);
        assert_eq!(obj, json!({"metadata": {"name": "a"}}));
    }
}

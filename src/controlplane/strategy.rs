//! What upstream's per-kind strategies set on a new object after field management recorded the
//! request (`PrepareForCreate`): these fields belong to no manager, so they never show in
//! `managedFields`. Defaulting, which happens before and so is owned by the writer, is
//! [`super::admission::normalise_kind`]'s.

use super::objects::Target;
use serde_json::{Value, json};

/// The finalizer every new Namespace carries until the namespace controller empties it.
const KUBERNETES_FINALIZER: &str = "kubernetes";

/// Sets what a new object of this kind gets from the server.
pub(super) fn prepare_for_create(target: &Target, obj: &mut Value) {
    if target.rt.custom || !target.rt.group.is_empty() || target.rt.kind != "Namespace" {
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
    fn other_kinds_are_left_as_they_are() {
        let reg = Registry::new([]);
        let cms = Target::of(&reg, "", "configmaps", Some("x"));
        let mut obj = json!({"metadata": {"name": "a"}});
        prepare_for_create(&cms, &mut obj);
        assert_eq!(obj, json!({"metadata": {"name": "a"}}));
    }
}

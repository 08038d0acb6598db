//! The simulated Azure inventory: which resources "exist in Azure" in the simulator's world, kept as
//! `SimulatedAzureResource` objects (`azuresim.aro-gitops.dev/v1alpha1`) in [`NAMESPACE`] of the
//! local control plane, one per ARM id.
//!
//! The simulator records a resource once ASO would have created it (Ready), and removes it when an
//! object under policy `manage` is deleted; `detach-on-delete` and `skip` leave it. Tests and demos
//! create records by hand (`kubectl apply`, or [`record_object`]) to set up "already exists in
//! Azure" for `reconcile-policy-if-exists` and adoption. None of it is real Azure state.

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

/// Namespace of the records.
pub const NAMESPACE: &str = "aro-gitops-azure-simulator";
pub const GROUP: &str = "azuresim.aro-gitops.dev";
pub const VERSION: &str = "v1alpha1";
pub const KIND: &str = "SimulatedAzureResource";

fn resource() -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: VERSION.into(),
        api_version: format!("{GROUP}/{VERSION}"),
        kind: KIND.into(),
        plural: "simulatedazureresources".into(),
    }
}

/// The Role (and RoleBinding) that lets agents read the records: with `--use-azure-simulator`, an
/// agent asks them whether a resource "exists in Azure" (`reconcile-policy-if-exists`). The
/// standalone simulator writes both; deploy/base grants nothing about the simulator.
pub const READER_ROLE: &str = "aro-gitops-azure-simulator-inventory-reader";

/// [`READER_ROLE`] and its binding to every ServiceAccount of `agent_namespace`.
pub fn reader_rbac(agent_namespace: &str) -> (Value, Value) {
    let metadata = json!({"name": READER_ROLE, "namespace": NAMESPACE});
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": metadata,
        "rules": [{"apiGroups": [GROUP], "resources": ["simulatedazureresources"], "verbs": ["get", "list", "watch"]}],
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": metadata,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": READER_ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                      "name": format!("system:serviceaccounts:{agent_namespace}")}],
    });
    (role, binding)
}

/// The record's object name for an ARM id (ARM ids are case-insensitive).
pub fn record_name(arm_id: &str) -> String {
    let d = ring::digest::digest(
        &ring::digest::SHA256,
        arm_id.to_ascii_lowercase().as_bytes(),
    );
    let hex: String = d.as_ref()[..10]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let last = arm_id
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(40)
        .collect::<String>();
    format!("{}-{hex}", last.trim_matches('-'))
        .trim_start_matches('-')
        .to_string()
}

/// The record of one simulated Azure resource, for server-side apply.
pub fn record_object(arm_id: &str, arm_type: &str) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": KIND,
        "metadata": {"name": record_name(arm_id), "namespace": NAMESPACE},
        "spec": {"armId": arm_id, "type": arm_type},
    })
}

/// Whether the simulated Azure holds `arm_id`. A control plane without the record kind holds none.
pub async fn exists(client: &kube::Client, arm_id: &str) -> Result<bool, kube::Error> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &resource());
    match api.get_opt(&record_name(arm_id)).await {
        Ok(found) => Ok(found.is_some()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
        Err(e) => Err(e),
    }
}

/// Records `arm_id` as existing (idempotent).
pub async fn ensure(
    client: &kube::Client,
    arm_id: &str,
    arm_type: &str,
    manager: &str,
) -> Result<(), kube::Error> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &resource());
    let body = record_object(arm_id, arm_type);
    let pp = PatchParams::apply(manager).force();
    match api
        .patch(&record_name(arm_id), &pp, &Patch::Apply(&body))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => {
            // The namespace is missing: create it, then retry once.
            let ns: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
            let ns_body =
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}});
            ns.patch(NAMESPACE, &pp, &Patch::Apply(&ns_body)).await?;
            api.patch(&record_name(arm_id), &pp, &Patch::Apply(&body))
                .await
                .map(|_| ())
        }
        Err(e) => Err(e),
    }
}

/// Removes the record of `arm_id` (the simulated Azure resource is deleted).
pub async fn remove(client: &kube::Client, arm_id: &str) -> Result<(), kube::Error> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &resource());
    match api.delete(&record_name(arm_id), &Default::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_names_are_dns_labels_and_case_insensitive() {
        let id = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/My_RG";
        let n = record_name(id);
        assert!(n.starts_with("my-rg-"), "{n}");
        assert_eq!(n, record_name(&id.to_uppercase()));
        assert!(n.len() <= 63);
        assert!(
            n.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        );
    }
}

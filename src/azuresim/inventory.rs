//! The simulated Azure inventory: which resources "exist in Azure" in the simulator's world, kept as
//! `SimulatedAzureResource` objects (`azuresim.aro-gitops.dev/v1alpha1`) in [`NAMESPACE`] of the
//! local control plane, one per ARM id.
//!
//! The simulator records a resource once ASO would have created it (Ready), and removes it when an
//! object under policy `manage` is deleted; `detach-on-delete` and `skip` leave it. Tests and demos
//! create records by hand (`kubectl apply`, or [`record_object`]) to set up "already exists in
//! Azure" for `reconcile-policy-if-exists` and adoption. None of it is real Azure state.

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

// What agents read of the records (their kind, namespace and names) is defined where the agent
// reads them, so production code does not depend on the simulator.
use crate::apply::azure_view::resource;
pub use crate::apply::azure_view::{GROUP, KIND, NAMESPACE, VERSION, exists, record_name};

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

/// The record of one simulated Azure resource, for server-side apply.
pub fn record_object(arm_id: &str, arm_type: &str) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": KIND,
        "metadata": {"name": record_name(arm_id), "namespace": NAMESPACE},
        "spec": {"armId": arm_id, "type": arm_type},
    })
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

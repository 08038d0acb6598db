//! What the agent can learn about Azure itself: whether a resource already exists, which
//! `reconcile-policy-if-exists` needs before a create.
//!
//! With the embedded control plane (or a served one marked as simulated), the Azure simulator's
//! inventory answers (and the answer is simulated, like everything the simulator says). Against a
//! real cluster Azure Resource Manager answers ([`AzureView::Arm`]: a GET of the resource's ARM id
//! with the identity of the cluster the object belongs to); with `--use-azure-simulator` that GET
//! goes to the simulator's ARM endpoint, and the answer is simulated. When the agent has no way to
//! Azure at all, the question has no answer and such creates are held with that reason.
//!
//! The simulator's inventory records (`SimulatedAzureResource` objects, one per ARM id, in
//! [`NAMESPACE`]) are defined here, where the agent reads them; the simulator writes them
//! (`azuresim::inventory`).

use crate::object::text_at;
use futures::future::BoxFuture;
use kube::api::{Api, ApiResource, DynamicObject};
use serde_json::Value;
use std::sync::Arc;

/// Reads of Azure Resource Manager for the objects of a cluster (implemented by the agent, which
/// knows the clusters' identities and the way to Azure).
pub trait ArmReads: Send + Sync {
    /// Whether `arm_id` exists, read at `api_version` with the identity of `control_plane` (the
    /// AROControlPlane of the object's cluster). `Err` says why it cannot be known.
    fn exists<'a>(
        &'a self,
        control_plane: &'a Value,
        arm_id: &'a str,
        api_version: &'a str,
    ) -> BoxFuture<'a, Result<bool, String>>;
}

/// Where "does this Azure resource exist?" is answered.
#[derive(Clone)]
pub enum AzureView {
    /// The simulator's inventory in the cluster this client reaches.
    Simulated(kube::Client),
    /// Azure Resource Manager (real, or the simulator's endpoint with `--use-azure-simulator`).
    Arm(Arc<dyn ArmReads>),
    /// No view of Azure; the reason is given to the user.
    Unavailable(String),
}

impl AzureView {
    /// The view for a cluster reached through a kubeconfig when the agent has no way to Azure.
    pub fn unavailable() -> AzureView {
        AzureView::Unavailable(
            "the agent has no way to Azure Resource Manager (the platform's trusted roots could not be loaded)"
                .into(),
        )
    }

    /// Whether the Azure resource of `obj` exists; `unit` holds the objects of its unit, to resolve
    /// its owner chain into an ARM id. `Err` says why it cannot be known.
    pub async fn exists(&self, obj: &Value, unit: &[&Value]) -> Result<bool, String> {
        match self {
            AzureView::Unavailable(why) => Err(why.clone()),
            AzureView::Simulated(client) => {
                let arm_id = arm_id_of(obj, unit)?;
                exists(client, &arm_id)
                    .await
                    .map_err(|e| format!("reading the simulated Azure inventory failed: {e}"))
            }
            AzureView::Arm(reads) => {
                let arm_id = arm_id_of(obj, unit)?;
                let control_plane = control_plane_of(obj, unit)?;
                let api_version = text_at(obj, "/apiVersion").unwrap_or_default();
                let version = crate::arm::arm_api_version(api_version).ok_or_else(|| {
                    format!("its apiVersion {api_version:?} names no ARM api-version")
                })?;
                let subscription = text_at(control_plane, "/spec/subscriptionID")
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| {
                        format!(
                            "AROControlPlane {} has no spec.subscriptionID to read the resource in",
                            text_at(control_plane, "/metadata/name").unwrap_or_default()
                        )
                    })?;
                let arm_id = crate::arm::in_subscription(&arm_id, subscription);
                reads.exists(control_plane, &arm_id, &version).await
            }
        }
    }
}

fn arm_id_of(obj: &Value, unit: &[&Value]) -> Result<String, String> {
    crate::arm::arm_id_in(obj, unit).ok_or_else(|| {
        "its ARM id cannot be worked out: spec.owner does not lead to a resource group of the same unit".to_string()
    })
}

const CLUSTER_NAME_LABEL: &str = "/metadata/labels/cluster.x-k8s.io~1cluster-name";

/// The AROControlPlane whose identity reads `obj` from Azure: among `unit`'s, in `obj`'s
/// namespace, the one of the cluster `obj`'s `cluster.x-k8s.io/cluster-name` label names, else
/// the only one.
pub fn control_plane_of<'a>(obj: &Value, unit: &[&'a Value]) -> Result<&'a Value, String> {
    let namespace = obj.pointer("/metadata/namespace");
    let planes: Vec<&'a Value> = unit
        .iter()
        .copied()
        .filter(|o| {
            text_at(o, "/kind") == Some("AROControlPlane")
                && o.pointer("/metadata/namespace") == namespace
        })
        .collect();
    let cluster = text_at(obj, CLUSTER_NAME_LABEL);
    let labelled = |p: &&&Value| cluster.is_some() && text_at(p, CLUSTER_NAME_LABEL) == cluster;
    match (planes.iter().find(labelled), planes.as_slice()) {
        (Some(p), _) => Ok(p),
        (None, [only]) => Ok(only),
        (None, []) => Err(
            "no AROControlPlane in its namespace in the unit: its identityRef is the identity Azure is read with"
                .into(),
        ),
        (None, _) => Err(
            "several AROControlPlanes in its namespace: label it cluster.x-k8s.io/cluster-name to say whose identity reads Azure"
                .into(),
        ),
    }
}

/// Namespace of the simulator's inventory records.
pub const NAMESPACE: &str = "aro-gitops-azure-simulator";
pub const GROUP: &str = "azuresim.aro-gitops.dev";
pub const VERSION: &str = "v1alpha1";
pub const KIND: &str = "SimulatedAzureResource";

/// The API resource of the records.
pub fn resource() -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: VERSION.into(),
        api_version: format!("{GROUP}/{VERSION}"),
        kind: KIND.into(),
        plural: "simulatedazureresources".into(),
    }
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

/// Whether the simulated Azure holds `arm_id`. A control plane without the record kind holds none.
pub async fn exists(client: &kube::Client, arm_id: &str) -> Result<bool, kube::Error> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &resource());
    match api.get_opt(&record_name(arm_id)).await {
        Ok(found) => Ok(found.is_some()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plane(name: &str, ns: &str, cluster: &str) -> Value {
        json!({"kind": "AROControlPlane", "metadata": {"name": name, "namespace": ns,
            "labels": {"cluster.x-k8s.io/cluster-name": cluster}}})
    }

    #[test]
    fn the_control_plane_of_the_objects_namespace_and_cluster_reads_it() {
        let a = plane("a", "ns", "a");
        let b = plane("b", "ns", "b");
        let other = plane("c", "other", "c");
        let rg = json!({"kind": "ResourceGroup", "metadata": {"name": "rg", "namespace": "ns"}});
        assert_eq!(control_plane_of(&rg, &[&a, &other]), Ok(&a));
        let err = control_plane_of(&rg, &[&a, &b]).unwrap_err();
        assert!(err.contains("several"), "{err}");
        let mut labelled = rg.clone();
        labelled["metadata"]["labels"] = json!({"cluster.x-k8s.io/cluster-name": "b"});
        assert_eq!(control_plane_of(&labelled, &[&a, &b]), Ok(&b));
        let err = control_plane_of(&rg, &[&other]).unwrap_err();
        assert!(err.contains("no AROControlPlane"), "{err}");
    }

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

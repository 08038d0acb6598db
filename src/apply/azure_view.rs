//! What the agent can learn about Azure itself: whether a resource already exists, which
//! `reconcile-policy-if-exists` needs before a create.
//!
//! With the embedded control plane, or on a cluster with `--use-azure-simulator`, the Azure
//! simulator's inventory answers (and the answer is simulated, like everything the simulator
//! says). Against a real cluster the agent has no ARM client, so the question has no answer and
//! such creates are held with that reason.
//!
//! The simulator's inventory records (`SimulatedAzureResource` objects, one per ARM id, in
//! [`NAMESPACE`]) are defined here, where the agent reads them; the simulator writes them
//! (`azuresim::inventory`).

use kube::api::{Api, ApiResource, DynamicObject};
use serde_json::Value;

/// Where "does this Azure resource exist?" is answered.
#[derive(Clone)]
pub enum AzureView {
    /// The simulator's inventory in the cluster this client reaches.
    Simulated(kube::Client),
    /// No view of Azure; the reason is given to the user.
    Unavailable(String),
}

impl AzureView {
    /// The view for a cluster reached through a kubeconfig.
    pub fn unavailable() -> AzureView {
        AzureView::Unavailable(
            "the agent reads Azure only through ASO objects in the cluster (ARM reads are not implemented); \
             with the embedded control plane the Azure simulator answers"
                .into(),
        )
    }

    /// Whether the Azure resource of `obj` exists; `unit` holds the objects of its unit, to resolve
    /// its owner chain into an ARM id. `Err` says why it cannot be known.
    pub async fn exists(&self, obj: &Value, unit: &[&Value]) -> Result<bool, String> {
        match self {
            AzureView::Unavailable(why) => Err(why.clone()),
            AzureView::Simulated(client) => {
                let arm_id = crate::arm::arm_id_in(obj, unit).ok_or_else(|| {
                    "its ARM id cannot be worked out: spec.owner does not lead to a resource group of the same unit".to_string()
                })?;
                exists(client, &arm_id)
                    .await
                    .map_err(|e| format!("reading the simulated Azure inventory failed: {e}"))
            }
        }
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

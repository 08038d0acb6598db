//! What the agent can learn about Azure itself: whether a resource already exists, which
//! `reconcile-policy-if-exists` needs before a create.
//!
//! With the embedded control plane, or on a cluster with `--use-azure-simulator`, the Azure
//! simulator's inventory answers (and the answer is simulated, like everything the simulator
//! says). Against a real cluster the agent has no ARM client, so the question has no answer and
//! such creates are held with that reason.

use crate::azuresim::inventory;
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
                inventory::exists(client, &arm_id)
                    .await
                    .map_err(|e| format!("reading the simulated Azure inventory failed: {e}"))
            }
        }
    }
}

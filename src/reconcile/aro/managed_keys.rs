//! The agent-managed mode of the etcd encryption key as a [`KeyManager`]: the pure steps of
//! [`super::keyvault`] around the Key Vault edge ([`KeyVaultKeys`], IO), so the edge knows nothing
//! of the reconcilers' states.
//!
//! For an AROControlPlane with an `identityRef` whose HcpOpenShiftCluster configures
//! customer-managed KMS: name the vault and key, check the Vault gate, then ask the edge for the
//! key's version (the live HcpOpenShiftCluster's version first) and turn its
//! [`KeyLookup`] into a [`KeyState`]. Every other AROControlPlane is in manual mode.

use super::keys::{KeyManager, KeyState, ManualKeys, manual_key_state};
use super::keyvault as steps;
use crate::apply::Cluster;
use crate::azure::access::AzureAccess;
use crate::keyvault::{KeyLookup, KeyVaultKeys, access::ClusterAccess};
use crate::object::str_at;
use futures::future::BoxFuture;
use serde_json::Value;
use std::sync::Arc;

/// The agent's key manager: the agent-managed keys when Azure is reachable through the SDK
/// (`azure`: real, or the simulator's endpoints), each AROControlPlane without an `identityRef`
/// still in manual mode; only the manual mode otherwise.
pub fn key_manager(cluster: &Cluster, azure: Option<Arc<AzureAccess>>) -> Arc<dyn KeyManager> {
    match azure {
        Some(azure) => {
            let cluster = Cluster::new(cluster.client().clone(), cluster.counter().clone());
            Arc::new(KeyVaultKeys::new(Arc::new(ClusterAccess::new(
                cluster, azure,
            ))))
        }
        None => Arc::new(ManualKeys),
    }
}

impl KeyManager for KeyVaultKeys {
    fn key_state<'a>(
        &'a self,
        acp: &'a Value,
        hcp: &'a Value,
        live: &'a [Value],
    ) -> BoxFuture<'a, KeyState> {
        Box::pin(async move {
            if !steps::agent_managed(acp, hcp) {
                return manual_key_state(hcp);
            }
            managed_state(self, acp, hcp, live).await
        })
    }
}

/// The agent-managed state of `hcp` (`acp` has an `identityRef`, `hcp` configures KMS).
async fn managed_state(keys: &KeyVaultKeys, acp: &Value, hcp: &Value, live: &[Value]) -> KeyState {
    let target = match steps::kms_target(hcp) {
        Ok(t) => t,
        Err(state) => return state,
    };
    if let Err(state) = steps::vault_gate(acp, &target, live) {
        return state;
    }
    let hcp_name = str_at(hcp, "/metadata/name").unwrap_or("");
    let known = steps::live_version(acp, hcp_name, &target, live);
    match keys.version(acp, &target, known).await {
        KeyLookup::Version(v) => steps::key_ready(&target, &v),
        KeyLookup::Denied { identity, detail } => steps::access_denied(&target, &identity, &detail),
        KeyLookup::Transient(detail) => steps::creating_key(&target, &detail),
        KeyLookup::Error(detail) => steps::key_error(&target, &detail),
    }
}

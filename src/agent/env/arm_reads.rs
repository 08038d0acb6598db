//! The agent's [`ArmReads`]: a cluster's AROControlPlane names the identity (its `identityRef`,
//! resolved as for Key Vault: the AzureClusterIdentity, its namespace rule, its Secret, the
//! process's credential cache) and the cloud whose Resource Manager answers
//! ([`crate::azure::resource_manager`]).

use crate::apply::Cluster;
use crate::apply::azure_view::{ArmReads, AzureView};
use crate::azure::AzureAccess;
use crate::azure::resource_manager::ResourceManager;
use crate::keyvault::AccessSource;
use crate::keyvault::access::ClusterAccess;
use futures::future::BoxFuture;
use serde_json::Value;
use std::sync::Arc;

/// Resource Manager reads with the identities of the cluster `cluster` reaches.
pub struct ClusterArmReads {
    access: ClusterAccess,
}

impl ArmReads for ClusterArmReads {
    fn exists<'a>(
        &'a self,
        control_plane: &'a Value,
        arm_id: &'a str,
        api_version: &'a str,
    ) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move {
            let access = self.access.access(control_plane).await?;
            ResourceManager::new(
                &access.endpoints,
                access.credential,
                access.options,
                access.identity,
            )
            .exists(arm_id, api_version)
            .await
            .map_err(|e| e.to_string())
        })
    }
}

/// The view of Azure through Resource Manager, reached with `azure` (real, or the simulator's
/// endpoints), the identities read from `cluster`.
pub fn arm_view(cluster: &Cluster, azure: Arc<AzureAccess>) -> AzureView {
    let cluster = Cluster::new(cluster.client().clone(), cluster.counter().clone());
    AzureView::Arm(Arc::new(ClusterArmReads {
        access: ClusterAccess::new(cluster, azure),
    }))
}

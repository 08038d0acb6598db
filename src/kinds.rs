//! What the agent knows about the kinds it handles, by group and kind: the Cluster API Provider
//! Azure ARO kinds, the Azure Service Operator groups they embed, and Secrets (whose values never
//! leave the process). Every stage asks here, so the facts live below all of them.

use serde_json::Value;

/// Cluster API's infrastructure group (`AROCluster`, `AROMachinePool`).
pub const INFRA_GROUP: &str = "infrastructure.cluster.x-k8s.io";
/// Cluster API's control plane group (`AROControlPlane`).
pub const CONTROL_PLANE_GROUP: &str = "controlplane.cluster.x-k8s.io";
/// Azure Service Operator's group of the ARO HCP resources.
pub const HCP_GROUP: &str = "redhatopenshift.azure.com";
/// The ASO kind of an ARO HCP cluster.
pub const HCP_CLUSTER: &str = "HcpOpenShiftCluster";
/// The ASO kind of an ARO HCP node pool.
pub const NODE_POOL: &str = "HcpOpenShiftClustersNodePool";
/// The ASO kind of an ARO HCP external authentication.
pub const EXTERNAL_AUTH: &str = "HcpOpenShiftClustersExternalAuth";

/// The three ARO kinds that embed ASO resources.
pub fn is_aro_kind(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        (INFRA_GROUP, "AROCluster")
            | (INFRA_GROUP, "AROMachinePool")
            | (CONTROL_PLANE_GROUP, "AROControlPlane")
    )
}

/// Whether an object's group is an Azure Service Operator group (`*.azure.com`).
pub fn is_aso_group(group: &str) -> bool {
    group.ends_with(".azure.com")
}

/// True when `obj` is a core `v1` Secret.
pub fn is_secret(obj: &Value) -> bool {
    obj.get("kind").and_then(Value::as_str) == Some("Secret")
        && obj.get("apiVersion").and_then(Value::as_str) == Some("v1")
}

//! The embedded ARO reconcilers: CAPZ's AROCluster, AROControlPlane and AROMachinePool logic, as
//! pure functions. They take live objects and return what to apply and what status to write;
//! the agent does the IO. Condition types, reasons and messages follow `aro-reconcilers.md`.

mod conditions;
pub mod deletion;
mod embedded;
mod status;

pub use conditions::{Condition, mirror_aso_ready, set_condition};
pub use embedded::{
    EmbeddedError, OWNED_KINDS_ANNOTATION, PAUSED_ANNOTATION, controller_ref, embedded_resources,
    is_paused, owned_kinds_entry, set_controller,
};
pub use status::{
    aro_cluster_status, aro_control_plane_status, aro_machine_pool_status, parse_endpoint,
};

use serde_json::Value;

pub const INFRA_GROUP: &str = "infrastructure.cluster.x-k8s.io";
pub const CONTROL_PLANE_GROUP: &str = "controlplane.cluster.x-k8s.io";
pub const HCP_GROUP: &str = "redhatopenshift.azure.com";
pub const HCP_CLUSTER: &str = "HcpOpenShiftCluster";
pub const NODE_POOL: &str = "HcpOpenShiftClustersNodePool";
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

fn str_at<'a>(obj: &'a Value, pointer: &str) -> Option<&'a str> {
    obj.pointer(pointer).and_then(Value::as_str)
}

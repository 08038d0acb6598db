//! The embedded ARO reconcilers: CAPZ's AROCluster, AROControlPlane and AROMachinePool logic, as
//! pure decision functions (`aro-reconcilers.md`). Each takes the ARO object as rendered from git
//! and the live objects of its namespace (the world it sees), and returns a [`Decision`]: the
//! owned kinds to record, the embedded resources to apply, those a gate holds and why, the owned
//! objects to delete, the status to write, other patches, or a terminal error. The agent does the
//! IO (`agent::pass`, `agent::status`).
//!
//! - `applier`: the shared applier and the [`Decision`] type;
//! - `cluster`, `control_plane`, `machine_pool`: one decision per ARO kind, with its gates and
//!   conditions;
//! - `embedded`: validation of `spec.resources` and the mutators; `keys`: the encryption-key seam;
//! - `conditions`: CAPI-style conditions; `world`: lookups in the live objects.

mod applier;
mod cluster;
mod conditions;
mod control_plane;
mod embedded;
mod keys;
mod machine_pool;
mod world;

pub use applier::{
    Decision, Held, OWNED_KINDS_ANNOTATION, controlled_by, controller_ref, owned_kinds_entry,
    parse_owned_kind, recorded_kinds, set_controller,
};
pub use cluster::{decide_cluster, parse_endpoint};
pub use conditions::{Condition, mirror_aso_ready, set_condition};
pub use control_plane::decide_control_plane;
pub use embedded::{AroError, PAUSED_ANNOTATION, embedded_resources, is_paused};
pub use keys::{KeyManager, KeyState, ManualKeys, manual_key_state};
pub use machine_pool::{REPLICAS_MANAGED_BY, decide_machine_pool};

use crate::object::ObjectKey;
use serde_json::Value;
use std::collections::HashMap;

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

/// The order decisions are taken in (see [`decide_all`]).
fn rank(kind: &str) -> u8 {
    match kind {
        "AROControlPlane" => 0,
        "AROMachinePool" => 1,
        _ => 2,
    }
}

/// The decision for one ARO object, by kind (`key` matters to AROControlPlanes only).
pub fn decide(desired: &Value, live: &[Value], key: &KeyState, now: &str) -> Decision {
    match str_at(desired, "/kind") {
        Some("AROControlPlane") => decide_control_plane(desired, live, key, now),
        Some("AROMachinePool") => decide_machine_pool(desired, live, now),
        _ => decide_cluster(desired, live, now),
    }
}

/// The decisions for the ARO objects `desired` (as in git) of one unit against `live`: control
/// planes first, then machine pools (whose gate is their control plane's `HcpClusterReady`), then
/// clusters (which mirror their control plane's readiness and endpoint). Each status decided is
/// put into the world the next decision sees, so a gate reads the state as computed now rather
/// than as last written. `keys`: the key state of each AROControlPlane; one not given is read in
/// manual mode ([`manual_key_state`]).
pub fn decide_all(
    desired: &[&Value],
    live: &[Value],
    keys: &HashMap<ObjectKey, KeyState>,
    now: &str,
) -> Vec<Decision> {
    let mut ordered: Vec<&Value> = desired.to_vec();
    ordered.sort_by_key(|o| rank(str_at(o, "/kind").unwrap_or("")));
    let mut world: Vec<Value> = live.to_vec();
    let mut out = Vec::with_capacity(ordered.len());
    for d in ordered {
        let manual;
        let key = match ObjectKey::from_object(d).ok().and_then(|k| keys.get(&k)) {
            Some(k) => k,
            None => {
                manual = control_plane::hcp_entry(d)
                    .map(manual_key_state)
                    .unwrap_or(KeyState::NotConfigured);
                &manual
            }
        };
        let decision = decide(d, &world, key, now);
        if let Some(i) = world.iter().position(|o| {
            ObjectKey::from_object(o).is_ok_and(|k| {
                (&k.group, &k.kind, &k.namespace, &k.name)
                    == (
                        &decision.owner.group,
                        &decision.owner.kind,
                        &decision.owner.namespace,
                        &decision.owner.name,
                    )
            })
        }) {
            world[i]["status"] = decision.status.clone();
        }
        out.push(decision);
    }
    out
}

/// The identity of an ARO object from git (validated, so it has one).
fn owner_key(desired: &Value) -> ObjectKey {
    ObjectKey::from_object(desired).unwrap_or_else(|_| ObjectKey {
        group: String::new(),
        version: String::new(),
        kind: str_at(desired, "/kind").unwrap_or("?").into(),
        namespace: None,
        name: "?".into(),
    })
}

#[cfg(test)]
mod fixtures;

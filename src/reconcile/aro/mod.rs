//! The embedded ARO reconcilers: CAPZ's AROCluster, AROControlPlane and AROMachinePool logic, as
//! pure decision functions (`aro-reconcilers.md`). Each takes the ARO object as rendered from git
//! and the live objects of its namespace (the world it sees), and returns a [`Decision`]: the
//! owned kinds to record, the embedded resources to apply, those a gate holds and why, the owned
//! objects to delete, the status to write, other patches, or a terminal error. The agent does the
//! IO (`agent::pass`, `agent::pass::reconcilers`).
//!
//! - `applier`: the shared applier and the [`Decision`] type;
//! - `cluster`, `control_plane`, `machine_pool`: one decision per ARO kind, with its gates and
//!   conditions;
//! - `embedded`: validation of `spec.resources` and the mutators; `keys`: the encryption-key seam;
//!   `keyvault`: the agent-managed key's vault gate and states; `managed_keys`: the agent-managed
//!   key manager, those steps around the Key Vault edge;
//! - `node_policy`: the AutoNodePolicy merged into node pools, and the policies' status;
//! - `conditions`: CAPI-style conditions; `world`: lookups in the live objects;
//! - `apiservices`: the aggregated-APIServices gate and the control plane's `Available`.

pub mod apiservices;
mod applier;
mod cluster;
mod conditions;
mod control_plane;
pub mod deletion;
mod embedded;
mod keys;
pub mod keyvault;
mod machine_pool;
mod managed_keys;
pub mod node_policy;
mod world;

pub use applier::{
    Decision, Held, OWNED_KINDS_ANNOTATION, controlled_by, controller_ref, controller_uid,
    owned_kinds, owned_kinds_entry, parse_owned_kind, recorded_kinds, set_controller,
};
pub use cluster::{decide_cluster, parse_endpoint};
pub use conditions::{Condition, mirror_aso_ready, set_condition};
pub use control_plane::decide_control_plane;
pub use embedded::{AroError, PAUSED_ANNOTATION, embedded_resources, is_paused};
pub use keys::{
    ENCRYPTION_KEY_READY, KMS_POINTER, KeyManager, KeyState, ManualKeys, manual_key_state,
};
pub use machine_pool::{REPLICAS_MANAGED_BY, decide_machine_pool};
pub use managed_keys::key_manager;

use crate::object::ObjectKey;
use serde_json::Value;
use std::collections::HashMap;

use crate::object::str_at;

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
/// than as last written (`world` is the live state, taken to be changed so). `keys`: the key
/// state of each AROControlPlane; one not given is read in manual mode ([`manual_key_state`]).
pub fn decide_all(
    desired: &[&Value],
    mut world: Vec<Value>,
    keys: &HashMap<ObjectKey, KeyState>,
    now: &str,
) -> Vec<Decision> {
    let mut ordered: Vec<&Value> = desired.to_vec();
    ordered.sort_by_key(|o| rank(str_at(o, "/kind").unwrap_or("")));
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
        group: Default::default(),
        version: Default::default(),
        kind: str_at(desired, "/kind").unwrap_or("?").into(),
        namespace: None,
        name: "?".into(),
    })
}

#[cfg(test)]
mod fixtures;

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;
    use crate::kinds::{HCP_CLUSTER, NODE_POOL};
    use serde_json::json;

    /// A cluster whose HcpOpenShiftCluster just became ready, its kubeconfig written, while the
    /// statuses on the live ARO objects are from before.
    fn world(acp: &Value, amp: &Value, ac: &Value) -> Vec<Value> {
        let mut hcp = aso(HCP_CLUSTER, "hcp", Ready::Yes);
        hcp["status"]["properties"] = json!({"api": {"url": "https://api.dev"}});
        let live = with_owner(acp, vec![hcp, secret("dev-kubeconfig")]);
        with_owner(ac, with_owner(amp, live))
    }

    #[test]
    fn gates_read_the_statuses_decided_in_the_same_round() {
        let acp = control_plane_obj(&[(HCP_CLUSTER, "hcp")]);
        let amp = machine_pool_obj("dev-workers", &[(NODE_POOL, "np")]);
        let ac = aro_cluster_obj(&[]);
        let live = world(&acp, &amp, &ac);
        // Whatever order they come in.
        let decisions = decide_all(&[&ac, &amp, &acp], live.clone(), &HashMap::new(), "t");
        let kinds: Vec<&str> = decisions.iter().map(|d| d.owner.kind.as_str()).collect();
        assert_eq!(kinds, ["AROControlPlane", "AROMachinePool", "AROCluster"]);
        assert_eq!(decisions[0].status["ready"], true);
        // The machine pool's gate saw HcpClusterReady True, decided just before.
        assert!(decisions[1].held.is_empty(), "{:?}", decisions[1].held);
        assert_eq!(decisions[1].applies.len(), 1);
        // The cluster mirrored the endpoint and readiness decided just before.
        assert_eq!(decisions[2].status["ready"], true);
        assert_eq!(
            decisions[2].patches[0]["spec"]["controlPlaneEndpoint"],
            json!({"host": "api.dev", "port": 443})
        );
        // Each alone, against the stale statuses: held, not ready.
        assert!(!decide_machine_pool(&amp, &live, "t").held.is_empty());
        assert_eq!(decide_cluster(&ac, &live, "t").status["ready"], false);
    }

    #[test]
    fn a_control_plane_without_a_key_state_is_read_in_manual_mode() {
        let mut acp = control_plane_obj(&[(HCP_CLUSTER, "hcp")]);
        acp["spec"]["resources"][0]["spec"]["properties"] = json!({"etcd": {"dataEncryption": {"customerManaged": {"kms": {"activeKey": {"name": "k"}}}}}});
        let live = with_owner(&acp, vec![aro_cluster_obj(&[])]);
        let d = &decide_all(&[&acp], live.clone(), &HashMap::new(), "t")[0];
        assert_eq!(d.held[0].reason, "KeyVersionMissing");
        let given = HashMap::from([(
            ObjectKey::from_object(&acp).unwrap(),
            KeyState::NotConfigured,
        )]);
        let d = &decide_all(&[&acp], live.clone(), &given, "t")[0];
        assert!(d.held.is_empty());
    }
}

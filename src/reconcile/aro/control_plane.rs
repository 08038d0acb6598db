//! The AROControlPlane decision (`aro-reconcilers.md`, "AROControlPlane"): exactly one
//! HcpOpenShiftCluster; nothing applied before the infrastructure gate (the AROCluster's
//! `ResourcesReady`); the key gate and the key version; the ExternalAuth deferral (a Ready node
//! pool of this cluster; an existing ExternalAuth is kept); `HcpClusterReady`, the per-kind
//! conditions, `EncryptionKeyReady`, `ExternalAuthReady`, the mirrored URLs and version, and
//! `status.ready` (with the kubeconfig Secret).

use super::apiservices::kubeconfig_secret;
use super::applier::{self, Decision, Held, hold_all, live_owner};
use super::cluster::resources_ready;
use super::conditions::{Condition, finish_status, mirror_aso_ready, set_condition};
use super::embedded::{AroError, cluster_name, embedded_resources, is_paused, set_key_version};
use super::keys::KeyState;
use super::world::{
    aro_cluster, capi_cluster, embedded_live, find, hcp_name, node_pool_ready, node_pools_of,
    of_cluster,
};
use super::{owner_key, str_at};
use crate::kinds::{EXTERNAL_AUTH, HCP_CLUSTER};
use crate::object::ObjectKey;
use crate::reconcile::readiness::aso_readiness;
use serde_json::{Value, json};

/// The HcpOpenShiftCluster entry of an AROControlPlane's `spec.resources`.
pub fn hcp_entry(acp: &Value) -> Option<&Value> {
    acp.pointer("/spec/resources")?
        .as_array()?
        .iter()
        .find(|r| str_at(r, "/kind") == Some(HCP_CLUSTER))
}

/// Per embedded kind, the condition type the AROControlPlane reports for it.
fn kind_condition(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "ResourceGroup" => "ResourceGroupReady",
        "VirtualNetwork" => "VNetReady",
        "NetworkSecurityGroup" => "SecurityGroupsReady",
        "VirtualNetworksSubnet" => "SubnetsReady",
        "Vault" => "VaultReady",
        "UserAssignedIdentity" => "UserAssignedIdentitiesReady",
        "RoleAssignment" => "RoleAssignmentReady",
        _ => return None,
    })
}

const DEFERRED: &str = "ExternalAuth creation deferred until at least one node pool is ready";

fn key_of(o: &Value) -> Option<ObjectKey> {
    ObjectKey::from_object(o).ok()
}

/// The embedded resources checked and mutated, or the terminal error.
fn resources(
    desired: &Value,
    key: &ObjectKey,
    paused: bool,
    state: &KeyState,
) -> Result<Vec<Value>, AroError> {
    let list = desired
        .pointer("/spec/resources")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if list.is_empty() {
        return Err(AroError::NoResources {
            owner: Box::new(key.clone()),
        });
    }
    let hcps: Vec<usize> = (0..list.len())
        .filter(|&i| str_at(&list[i], "/kind") == Some(HCP_CLUSTER))
        .collect();
    if hcps.len() != 1 {
        return Err(AroError::NotExactlyOne {
            owner: Box::new(key.clone()),
            kind: HCP_CLUSTER,
            count: hcps.len(),
        });
    }
    let mut out = embedded_resources(desired, None, paused)?;
    if let KeyState::Known {
        version,
        inject: true,
        ..
    } = state
    {
        set_key_version(&mut out[hcps[0]], version, key, hcps[0])?;
    }
    Ok(out)
}

/// What the gates hold back now (`owner` live).
fn gates(
    desired: &Value,
    key: &ObjectKey,
    resources: &[Value],
    state: &KeyState,
    live: &[Value],
) -> Vec<Held> {
    // Infrastructure gate: nothing before the AROCluster's ResourcesReady.
    let Some(infra) = aro_cluster(desired, live) else {
        return hold_all(
            resources,
            key,
            "WaitingForInfrastructure",
            &format!(
                "Waiting for the AROCluster of cluster {}",
                cluster_name(desired)
            ),
        );
    };
    let rr = resources_ready(infra, live);
    if !rr.is_true() {
        let on = key_of(infra).unwrap_or_else(|| key.clone());
        return hold_all(resources, &on, "WaitingForInfrastructure", &rr.message);
    }
    let mut held = Vec::new();
    for r in resources {
        let Some(rk) = key_of(r) else { continue };
        match rk.kind.as_str() {
            HCP_CLUSTER => {
                if let Some(condition) = state.holds() {
                    held.push(Held {
                        key: rk,
                        on: vec![key.clone()],
                        reason: condition.reason.clone(),
                        message: condition.message.clone(),
                    });
                }
            }
            EXTERNAL_AUTH if find(live, desired, EXTERNAL_AUTH, &rk.name).is_none() => {
                if node_pool_ready(desired, live) {
                    continue;
                }
                let hcp = hcp_name(desired).unwrap_or("");
                let mut on: Vec<ObjectKey> = node_pools_of(desired, live, hcp)
                    .into_iter()
                    .filter_map(key_of)
                    .collect();
                if on.is_empty() {
                    on = of_cluster(desired, live, "AROMachinePool")
                        .into_iter()
                        .filter_map(key_of)
                        .collect();
                }
                if on.is_empty() {
                    on.push(key.clone());
                }
                held.push(Held {
                    key: rk,
                    on,
                    reason: "WaitingForNodePool".into(),
                    message: DEFERRED.into(),
                });
            }
            _ => {}
        }
    }
    held
}

/// What the live HcpOpenShiftCluster `hcp` says: the status fields it mirrors (id, URLs, version)
/// and `HcpClusterReady`.
fn hcp_report(hcp: Option<&Value>) -> (serde_json::Map<String, Value>, Condition) {
    let mut fields = serde_json::Map::new();
    let Some(hcp) = hcp else {
        let c = Condition::new(
            "HcpClusterReady",
            "False",
            "HcpOpenShiftClusterNotFound",
            "HcpOpenShiftCluster not found",
        );
        return (fields, c);
    };
    for (field, pointer) in [
        ("id", "/status/id"),
        ("apiURL", "/status/properties/api/url"),
        ("consoleURL", "/status/properties/console/url"),
        ("version", "/status/properties/version/id"),
    ] {
        if let Some(v) = str_at(hcp, pointer) {
            fields.insert(field.into(), json!(v));
        }
    }
    let c = mirror_aso_ready(
        "HcpClusterReady",
        hcp,
        "Provisioning",
        "HcpOpenShiftCluster is not yet ready",
    );
    (fields, c)
}

/// One condition per embedded kind that has one (`kind_condition`), in kind order: True when
/// every resource of that kind is live and ready, else False naming those that are not.
fn kind_conditions(entries: &[(&Value, Option<&Value>)]) -> Vec<Condition> {
    let mut kinds: Vec<&str> = entries
        .iter()
        .filter_map(|(e, _)| str_at(e, "/kind"))
        .filter(|k| kind_condition(k).is_some())
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
        .into_iter()
        .map(|kind| {
            let waiting: Vec<&str> = entries
                .iter()
                .filter(|(e, f)| {
                    str_at(e, "/kind") == Some(kind)
                        && !f.is_some_and(|o| aso_readiness(o).is_ready())
                })
                .filter_map(|(e, _)| str_at(e, "/metadata/name"))
                .collect();
            let t = kind_condition(kind).expect("filtered above");
            if waiting.is_empty() {
                Condition::new(t, "True", "Succeeded", "")
            } else {
                Condition::new(
                    t,
                    "False",
                    "Creating",
                    format!("Waiting for {kind} to be ready: [{}]", waiting.join(", ")),
                )
            }
        })
        .collect()
}

/// `ExternalAuthReady` when the AROControlPlane `desired` embeds an ExternalAuth: its mirrored
/// readiness once live, else why it is not created yet.
fn external_auth_condition(
    desired: &Value,
    entries: &[(&Value, Option<&Value>)],
    live: &[Value],
) -> Option<Condition> {
    let (_, auth) = entries
        .iter()
        .find(|(e, _)| str_at(e, "/kind") == Some(EXTERNAL_AUTH))?;
    Some(match auth {
        Some(a) => mirror_aso_ready(
            "ExternalAuthReady",
            a,
            "Provisioning",
            "ExternalAuth is not yet ready",
        ),
        None if !node_pool_ready(desired, live) => {
            Condition::new("ExternalAuthReady", "False", "WaitingForNodePool", DEFERRED)
        }
        None => Condition::new(
            "ExternalAuthReady",
            "False",
            "Provisioning",
            "ExternalAuth is not yet created",
        ),
    })
}

/// The AROControlPlane `desired` (as in git) against the world `live`, with the key `state` of
/// its HcpOpenShiftCluster.
pub fn decide_control_plane(
    desired: &Value,
    live: &[Value],
    state: &KeyState,
    now: &str,
) -> Decision {
    let key = owner_key(desired);
    let owner = live_owner(desired, live);
    let paused = is_paused(owner.unwrap_or(desired), capi_cluster(desired, live));
    let (resources, error) = match resources(desired, &key, paused, state) {
        Ok(r) => (r, None),
        Err(e) => (vec![], Some(e)),
    };
    let held = match owner {
        None => hold_all(
            &resources,
            &key,
            "WaitingForOwner",
            &format!("{key} is not created yet"),
        ),
        Some(_) => gates(desired, &key, &resources, state, live),
    };
    let secret = kubeconfig_secret(desired).0;
    let applied = applier::apply(desired, owner.unwrap_or(desired), resources, &held, live);

    let entries = embedded_live(desired, live);
    let hcp_live = entries
        .iter()
        .find(|(e, _)| str_at(e, "/kind") == Some(HCP_CLUSTER))
        .and_then(|(_, f)| *f);
    let (mut status, hcp) = hcp_report(hcp_live);
    let hcp_ready = hcp.is_true();
    let mut report = vec![hcp];
    report.extend(state.condition().cloned());
    report.extend(kind_conditions(&entries));
    report.extend(external_auth_condition(desired, &entries, live));
    let previous = owner.and_then(|o| o.get("status"));
    let mut conditions = Vec::new();
    for c in &report {
        set_condition(&mut conditions, previous, c, now);
    }
    let kubeconfig = find(live, desired, "Secret", &secret).is_some();
    let ready = hcp_ready && kubeconfig && error.is_none();
    status.insert("ready".into(), json!(ready));
    status.insert(
        "initialization".into(),
        json!({"controlPlaneInitialized": ready}),
    );
    status.insert("resources".into(), json!(applied.resources));
    Decision::assemble(
        key,
        applied,
        held,
        finish_status(status, conditions),
        vec![],
        error,
    )
}

#[cfg(test)]
#[allow(clippy::type_complexity)] // tables of tuples
#[path = "control_plane_condition_tests.rs"]
mod condition_tests;
#[cfg(test)]
#[allow(clippy::type_complexity)] // tables of tuples
#[path = "control_plane_tests.rs"]
mod tests;

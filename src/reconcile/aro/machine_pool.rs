//! The AROMachinePool decision (`aro-reconcilers.md`, "AROMachinePool"): exactly one node pool,
//! owned by the cluster's HcpOpenShiftCluster; nothing applied before the control-plane gate (the
//! AROControlPlane's `HcpClusterReady`); `cluster.x-k8s.io/replicas-managed-by: aro-hcp` on the
//! CAPI MachinePool when the pool autoscales; `NodePoolReady`, `AROMachinePoolReady`,
//! `AgentPoolsReady`, replicas and `status.ready`.
//!
//! Before the apply, the namespace's AutoNodePolicy is merged into the node pool (`node_policy`,
//! `policies.md` §3); the one in `live` counts (the agent puts the unit's rendered policy there,
//! so git counts before it is live). A node pool the policy refuses is held whatever the gates
//! say, and `NodePoolReady`/`AROMachinePoolReady` are False with the policy's reason and message.

use super::applier::{self, Decision, Held, hold_all, live_owner};
use super::conditions::{Condition, finish_status, mirror_aso_ready, set_condition};
use super::embedded::{AroError, embedded_resources, is_paused};
use super::node_policy::{self, NodePolicyError};
use super::world::{
    capi_cluster, capi_machine_pool, condition, condition_true, control_plane, embedded_live,
    hcp_name,
};
use super::{owner_key, str_at};
use crate::kinds::NODE_POOL;
use crate::object::ObjectKey;
use crate::reconcile::readiness::{Readiness, aso_readiness};
use serde_json::{Value, json};

/// Annotation on the CAPI MachinePool saying who manages its replicas.
pub const REPLICAS_MANAGED_BY: &str = "cluster.x-k8s.io/replicas-managed-by";

/// The patch that marks the CAPI MachinePool of `desired` as scaled by ARO HCP, when its node
/// pool has a non-empty `spec.properties.autoScaling` and the annotation is not there yet.
fn replicas_managed_by(desired: &Value, live: &[Value]) -> Option<Value> {
    let pool = desired
        .pointer("/spec/resources")?
        .as_array()?
        .iter()
        .find(|r| str_at(r, "/kind") == Some(NODE_POOL))?;
    let scaling = pool.pointer("/spec/properties/autoScaling")?;
    if scaling.as_object().is_none_or(|m| m.is_empty()) {
        return None;
    }
    let mp = capi_machine_pool(desired, live)?;
    let current = mp
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(REPLICAS_MANAGED_BY))
        .and_then(Value::as_str);
    (current != Some("aro-hcp")).then(|| {
        json!({"apiVersion": mp["apiVersion"], "kind": mp["kind"],
            "metadata": {"name": mp["metadata"]["name"], "namespace": mp["metadata"]["namespace"],
                "annotations": {REPLICAS_MANAGED_BY: "aro-hcp"}}})
    })
}

/// `resources` (the AROMachinePool `owner`'s, mutated) with the AutoNodePolicy of its namespace
/// merged into the node pool, or the hold of a node pool the policy refuses, and why.
fn merge_node_policy(
    owner: &ObjectKey,
    resources: Vec<Value>,
    live: &[Value],
) -> (Vec<Value>, Option<(Held, NodePolicyError)>) {
    let ns = owner.namespace.as_deref().unwrap_or("default");
    let policy = node_policy::effective_policy(ns, &[], live);
    let mut refused = None;
    let merged = resources
        .into_iter()
        .map(|r| {
            if str_at(&r, "/kind") != Some(NODE_POOL) {
                return r;
            }
            match node_policy::merge(&r, policy) {
                Ok(m) => m,
                Err(e) => {
                    let on = policy.and_then(|p| ObjectKey::from_object(p).ok());
                    if let Ok(key) = ObjectKey::from_object(&r) {
                        let held = Held {
                            key,
                            on: on.into_iter().collect(),
                            reason: e.reason().into(),
                            message: e.to_string(),
                        };
                        refused = Some((held, e));
                    }
                    r
                }
            }
        })
        .collect();
    (merged, refused)
}

/// The node pool of `desired` checked (exactly one) and mutated (its owner the HcpOpenShiftCluster
/// of `acp`), or the terminal error.
fn resources(
    desired: &Value,
    key: &ObjectKey,
    acp: Option<&Value>,
    paused: bool,
) -> Result<Vec<Value>, AroError> {
    let count = desired
        .pointer("/spec/resources")
        .and_then(Value::as_array)
        .map_or(0, |l| {
            l.iter()
                .filter(|r| str_at(r, "/kind") == Some(NODE_POOL))
                .count()
        });
    if count != 1 {
        return Err(AroError::NotExactlyOne {
            owner: Box::new(key.clone()),
            kind: NODE_POOL,
            count,
        });
    }
    embedded_resources(desired, acp.and_then(hcp_name), paused)
}

/// What the gates hold back: everything until the AROMachinePool `owner` is live, then until the
/// control plane `acp` exists and its `HcpClusterReady` is True with the cluster named.
fn gates(
    key: &ObjectKey,
    owner: Option<&Value>,
    acp: Option<&Value>,
    resources: &[Value],
) -> Vec<Held> {
    match (owner, acp) {
        (None, _) => hold_all(
            resources,
            key,
            "WaitingForOwner",
            &format!("{key} is not created yet"),
        ),
        (Some(_), None) => hold_all(
            resources,
            key,
            "WaitingForControlPlane",
            "Waiting for the AROControlPlane of the cluster",
        ),
        (Some(_), Some(cp)) if !condition_true(cp, "HcpClusterReady") || hcp_name(cp).is_none() => {
            let cp_key = ObjectKey::from_object(cp).unwrap_or_else(|_| key.clone());
            let why = condition(cp, "HcpClusterReady")
                .and_then(|c| c.get("message"))
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
                .map(|m| format!(": {m}"))
                .unwrap_or_default();
            hold_all(
                resources,
                &cp_key,
                "WaitingForControlPlane",
                &format!("Waiting for HcpClusterReady on {cp_key}{why}"),
            )
        }
        _ => vec![],
    }
}

/// What the live node pool `np` says: the status fields it mirrors (provisioning state, replicas,
/// id), `NodePoolReady`, `AROMachinePoolReady` and `AgentPoolsReady`, and whether it is ready.
fn pool_report(np: Option<&Value>) -> (serde_json::Map<String, Value>, Vec<Condition>, bool) {
    let mut fields = serde_json::Map::new();
    let Some(np) = np else {
        let mut conditions: Vec<Condition> = ["NodePoolReady", "AROMachinePoolReady"]
            .into_iter()
            .map(|t| {
                Condition::new(
                    t,
                    "False",
                    "NodePoolNotFound",
                    "HcpOpenShiftClustersNodePool not found",
                )
            })
            .collect();
        conditions.push(Condition::new(
            "AgentPoolsReady",
            "False",
            "Failed",
            "node pool not found",
        ));
        return (fields, conditions, false);
    };
    let state = str_at(np, "/status/properties/provisioningState").unwrap_or("");
    if !state.is_empty() {
        fields.insert("provisioningState".into(), json!(state));
    }
    if let Some(r) = np
        .pointer("/status/properties/replicas")
        .and_then(Value::as_i64)
    {
        fields.insert("replicas".into(), json!(r));
    }
    if let Some(id) = str_at(np, "/status/id") {
        fields.insert("id".into(), json!(id));
    }
    let mut conditions: Vec<Condition> = ["NodePoolReady", "AROMachinePoolReady"]
        .into_iter()
        .map(|t| {
            mirror_aso_ready(
                t,
                np,
                "Provisioning",
                "HcpOpenShiftClustersNodePool is not yet ready",
            )
        })
        .collect();
    let readiness = aso_readiness(np);
    conditions.push(match &readiness {
        Readiness::Failed { message, .. } => {
            Condition::new("AgentPoolsReady", "False", "Failed", message.clone())
        }
        _ if readiness.is_ready() => Condition::new("AgentPoolsReady", "True", "Succeeded", ""),
        _ => Condition::new(
            "AgentPoolsReady",
            "False",
            "Provisioning",
            "node pool is not yet ready",
        ),
    });
    let ready = readiness.is_ready() && matches!(state, "Succeeded" | "Updating");
    (fields, conditions, ready)
}

/// The AROMachinePool `desired` (as in git) against the world `live`.
pub fn decide_machine_pool(desired: &Value, live: &[Value], now: &str) -> Decision {
    let key = owner_key(desired);
    let owner = live_owner(desired, live);
    let paused = is_paused(owner.unwrap_or(desired), capi_cluster(desired, live));
    let acp = control_plane(desired, live);
    let (resources, error) = match resources(desired, &key, acp, paused) {
        Ok(r) => (r, None),
        Err(e) => (vec![], Some(e)),
    };
    let (resources, refused) = merge_node_policy(&key, resources, live);
    let held = match &refused {
        Some((h, _)) => vec![h.clone()],
        None => gates(&key, owner, acp, &resources),
    };
    let applied = applier::apply(desired, owner.unwrap_or(desired), resources, &held, live);

    let pool = embedded_live(desired, live)
        .into_iter()
        .find(|(e, _)| str_at(e, "/kind") == Some(NODE_POOL))
        .and_then(|(_, f)| f);
    let (mut status, mut report, ready) = pool_report(pool);
    if let Some((_, e)) = &refused {
        for t in ["NodePoolReady", "AROMachinePoolReady"] {
            report.push(Condition::new(t, "False", e.reason(), e.to_string()));
        }
    }
    let previous = owner.and_then(|o| o.get("status"));
    let mut conditions = Vec::new();
    for c in &report {
        set_condition(&mut conditions, previous, c, now);
    }
    let ready = ready && error.is_none() && refused.is_none();
    status.insert("ready".into(), json!(ready));
    status.insert("initialization".into(), json!({"provisioned": ready}));
    status.insert("resources".into(), json!(applied.resources));
    let patches = if error.is_some() {
        vec![]
    } else {
        replicas_managed_by(desired, live).into_iter().collect()
    };
    Decision::assemble(
        key,
        applied,
        held,
        finish_status(status, conditions),
        patches,
        error,
    )
}

#[cfg(test)]
#[allow(clippy::type_complexity)] // tables of tuples
mod tests {
    use super::super::fixtures::*;
    use super::*;

    fn amp() -> Value {
        machine_pool_obj("dev-workers", &[(NODE_POOL, "np")])
    }

    fn acp_with(hcp_ready: Option<(&str, &str, &str)>) -> Value {
        let mut cp = control_plane_obj(&[("HcpOpenShiftCluster", "hcp")]);
        cp["metadata"]["uid"] = json!("uid-cp");
        if let Some((s, r, m)) = hcp_ready {
            cp["status"] = json!({"conditions": [{"type": "HcpClusterReady", "status": s, "reason": r, "message": m}]});
        }
        cp
    }

    fn pool(ready: Ready, state: &str) -> Value {
        let mut np = owned_by(aso(NODE_POOL, "np", ready), "hcp");
        np["status"]["properties"] = json!({"provisioningState": state, "replicas": 3});
        np
    }

    #[test]
    fn the_control_plane_gate_table() {
        // (case, control plane, held reason/message or None when applied)
        let rows: Vec<(&str, Option<Value>, Option<(&str, &str)>)> = vec![
            (
                "no control plane",
                None,
                Some((
                    "WaitingForControlPlane",
                    "Waiting for the AROControlPlane of the cluster",
                )),
            ),
            (
                "HcpClusterReady not set",
                Some(acp_with(None)),
                Some((
                    "WaitingForControlPlane",
                    "Waiting for HcpClusterReady on AROControlPlane/aro-dev/dev",
                )),
            ),
            (
                "HcpClusterReady False",
                Some(acp_with(Some((
                    "False",
                    "Provisioning",
                    "HcpOpenShiftCluster is not yet ready",
                )))),
                Some((
                    "WaitingForControlPlane",
                    "Waiting for HcpClusterReady on AROControlPlane/aro-dev/dev: HcpOpenShiftCluster is not yet ready",
                )),
            ),
            (
                "HcpClusterReady True",
                Some(acp_with(Some(("True", "Succeeded", "")))),
                None,
            ),
        ];
        for (name, cp, want) in rows {
            let live = with_owner(&amp(), cp.into_iter().collect());
            let d = decide_machine_pool(&amp(), &live, "t");
            match want {
                Some((reason, message)) => {
                    assert!(d.applies.is_empty(), "case {name}");
                    assert_eq!(
                        (d.held[0].reason.as_str(), d.held[0].message.as_str()),
                        (reason, message),
                        "case {name}"
                    );
                    assert!(
                        d.record_owned_kinds.is_none(),
                        "case {name}: nothing recorded while held"
                    );
                }
                None => {
                    assert!(d.held.is_empty(), "case {name}");
                    assert_eq!(
                        d.applies[0]["spec"]["owner"]["name"], "hcp",
                        "case {name}: owner mutator"
                    );
                    assert_eq!(
                        d.record_owned_kinds.as_deref(),
                        Some(
                            "HcpOpenShiftClustersNodePool.v1api20240610preview.redhatopenshift.azure.com"
                        )
                    );
                }
            }
        }
    }

    #[test]
    fn conditions_and_readiness_table() {
        // (case, node pool live, NodePoolReady/AROMachinePoolReady, AgentPoolsReady, ready)
        type Row<'a> = (
            &'a str,
            Option<Value>,
            (&'a str, &'a str, &'a str),
            (&'a str, &'a str, &'a str),
            bool,
        );
        let rows: Vec<Row> = vec![
            (
                "not found",
                None,
                (
                    "False",
                    "NodePoolNotFound",
                    "HcpOpenShiftClustersNodePool not found",
                ),
                ("False", "Failed", "node pool not found"),
                false,
            ),
            (
                "succeeded",
                Some(pool(Ready::Yes, "Succeeded")),
                ("True", "Succeeded", ""),
                ("True", "Succeeded", ""),
                true,
            ),
            (
                "updating counts as ready",
                Some(pool(Ready::Yes, "Updating")),
                ("True", "Succeeded", ""),
                ("True", "Succeeded", ""),
                true,
            ),
            (
                "ASO ready but still provisioning",
                Some(pool(Ready::Yes, "Provisioning")),
                ("True", "Succeeded", ""),
                ("True", "Succeeded", ""),
                false,
            ),
            (
                "reconciling, defaults",
                Some(pool(Ready::No, "Provisioning")),
                (
                    "False",
                    "Reconciling",
                    "HcpOpenShiftClustersNodePool is not yet ready",
                ),
                ("False", "Provisioning", "node pool is not yet ready"),
                false,
            ),
            (
                "no Ready condition",
                Some(pool(Ready::Absent, "Accepted")),
                (
                    "False",
                    "Provisioning",
                    "HcpOpenShiftClustersNodePool is not yet ready",
                ),
                ("False", "Provisioning", "node pool is not yet ready"),
                false,
            ),
            (
                "failed",
                Some(pool(
                    Ready::With("Error", "QuotaExceeded", "no cores"),
                    "Failed",
                )),
                ("False", "QuotaExceeded", "[Error] no cores"),
                ("False", "Failed", "no cores"),
                false,
            ),
            (
                "warning",
                Some(pool(
                    Ready::With("Warning", "WaitingForOwner", "owner hcp missing"),
                    "",
                )),
                ("False", "WaitingForOwner", "[Warning] owner hcp missing"),
                ("False", "Provisioning", "node pool is not yet ready"),
                false,
            ),
        ];
        for (name, np, mirrored, agent, ready) in rows {
            let mut live = vec![acp_with(Some(("True", "Succeeded", "")))];
            live.extend(np.clone());
            let d = decide_machine_pool(&amp(), &with_owner(&amp(), live), "t");
            for t in ["NodePoolReady", "AROMachinePoolReady"] {
                assert_cond(&d.status, t, mirrored.0, mirrored.1, mirrored.2);
            }
            assert_cond(&d.status, "AgentPoolsReady", agent.0, agent.1, agent.2);
            assert_eq!(d.status["ready"], ready, "case {name}");
            assert_eq!(
                d.status["initialization"]["provisioned"], ready,
                "case {name}"
            );
            if np.is_some() {
                assert_eq!(d.status["replicas"], 3, "case {name}");
            }
        }
    }

    #[test]
    fn replicas_managed_by_follows_autoscaling() {
        let mut scaled = amp();
        scaled["spec"]["resources"][0]["spec"]["properties"] =
            json!({"autoScaling": {"min": 1, "max": 3}});
        let mut empty = amp();
        empty["spec"]["resources"][0]["spec"]["properties"] = json!({"autoScaling": {}});
        let mut marked = capi_machine_pool_obj("dev-workers", "dev-workers");
        marked["metadata"]["annotations"] = json!({REPLICAS_MANAGED_BY: "aro-hcp"});
        let plain = amp();
        let rows: Vec<(&str, &Value, Value, bool)> = vec![
            (
                "autoscaling: annotate",
                &scaled,
                capi_machine_pool_obj("dev-workers", "dev-workers"),
                true,
            ),
            ("already annotated", &scaled, marked, false),
            (
                "empty autoscaling",
                &empty,
                capi_machine_pool_obj("dev-workers", "dev-workers"),
                false,
            ),
            (
                "no autoscaling",
                &plain,
                capi_machine_pool_obj("dev-workers", "dev-workers"),
                false,
            ),
            (
                "another pool's MachinePool",
                &scaled,
                capi_machine_pool_obj("other", "other"),
                false,
            ),
        ];
        for (name, desired, mp, patched) in rows {
            let live = with_owner(desired, vec![mp]);
            let d = decide_machine_pool(desired, &live, "t");
            assert_eq!(d.patches.len(), usize::from(patched), "case {name}");
            if patched {
                assert_eq!(d.patches[0]["kind"], "MachinePool");
                assert_eq!(
                    d.patches[0]["metadata"]["annotations"][REPLICAS_MANAGED_BY],
                    "aro-hcp"
                );
            }
        }
    }

    #[test]
    fn terminal_errors() {
        let two = machine_pool_obj("dev-workers", &[(NODE_POOL, "a"), (NODE_POOL, "b")]);
        let none = machine_pool_obj("dev-workers", &[("ResourceGroup", "rg")]);
        let mut other_owner = amp();
        other_owner["spec"]["resources"][0]["spec"]["owner"] = json!({"name": "someone-else"});
        let cp = acp_with(Some(("True", "Succeeded", "")));
        let rows: Vec<(&str, Value, &str)> = vec![
            (
                "two pools",
                two,
                "AROMachinePool/aro-dev/dev-workers: spec.resources must hold exactly one HcpOpenShiftClustersNodePool; it holds 2",
            ),
            (
                "no pool",
                none,
                "AROMachinePool/aro-dev/dev-workers: spec.resources must hold exactly one HcpOpenShiftClustersNodePool; it holds 0",
            ),
            (
                "owner conflict",
                other_owner,
                "AROMachinePool/aro-dev/dev-workers: incompatible value: value at spec.resources[0].spec.owner.name set by user to \"someone-else\" but must be \"hcp\"",
            ),
        ];
        for (name, desired, message) in rows {
            let live = with_owner(&desired, vec![cp.clone()]);
            let d = decide_machine_pool(&desired, &live, "t");
            assert_eq!(
                d.error.map(|e| e.to_string()).as_deref(),
                Some(message),
                "case {name}"
            );
            assert!(
                d.applies.is_empty() && d.deletions.is_empty() && d.record_owned_kinds.is_none(),
                "case {name}"
            );
        }
    }
}

//! The status the agent writes on AutoNodePolicies (`policies.md` §3, "Policy status"): one
//! condition `Ready`, judged on every node pool of the policy's namespace, whichever unit renders
//! it (so units sharing a namespace agree):
//! - True [`POLICY_APPLIED`]: no AROMachinePool of the namespace is refused by the policy and
//!   every live node pool carries it (inside the allowed set, its OS disk the policy's). The
//!   message counts the node pools and lists what the policy says that ARO cannot carry.
//! - False [`NODE_POLICY_VIOLATION`] / [`NODE_POLICY_INVALID`]: AROMachinePools whose
//!   `NodePoolReady` has that reason, with their messages.
//! - False [`NODE_POOLS_NOT_UPDATED`]: live node pools that do not carry it yet (another unit's
//!   pool not reconciled since the policy changed, or a pool held for another reason).
//! - False [`NOT_DEFAULT`]: a policy not named `default`, which is ignored.
//!
//! Node pools under `reconcile-policy: skip` (never written by the agent) and node pools being
//! deleted are not judged.

use super::{
    DEFAULT_POLICY_NAME, NODE_POLICY_INVALID, NODE_POLICY_VIOLATION, POLICY_KIND, is_policy, parse,
};
use crate::kinds::NODE_POOL;
use crate::plan::policy::{Policy, declared};
use crate::reconcile::aro::conditions::{Condition, set_condition};
use crate::reconcile::aro::str_at;
use crate::reconcile::aro::world::condition;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// `Ready` True: merged into every node pool of the namespace.
pub const POLICY_APPLIED: &str = "Applied";
/// `Ready` False: live node pools do not carry the policy yet.
pub const NODE_POOLS_NOT_UPDATED: &str = "NodePoolsNotUpdated";
/// `Ready` False: not named `default`, so ignored.
pub const NOT_DEFAULT: &str = "NotDefault";

fn in_ns<'a>(
    world: &'a [&'a Value],
    ns: &'a str,
    kind: &'a str,
) -> impl Iterator<Item = &'a Value> {
    world.iter().copied().filter(move |o| {
        str_at(o, "/kind") == Some(kind) && str_at(o, "/metadata/namespace") == Some(ns)
    })
}

/// Why `obj` is ignored, when it is an AutoNodePolicy not named `default`.
pub fn ignored(obj: &Value) -> Option<String> {
    (is_policy(obj) && str_at(obj, "/metadata/name") != Some(DEFAULT_POLICY_NAME)).then(|| {
        format!(
            "ignored: only the AutoNodePolicy named {DEFAULT_POLICY_NAME} counts in namespace {}",
            str_at(obj, "/metadata/namespace").unwrap_or("default")
        )
    })
}

/// The `Ready` condition of `policy` (live) in a world of live objects.
fn ready_of(policy: &Value, world: &[&Value]) -> Condition {
    let ns = str_at(policy, "/metadata/namespace").unwrap_or("default");
    if let Some(why) = ignored(policy) {
        return Condition::new("Ready", "False", NOT_DEFAULT, why);
    }
    let parsed = match parse(policy) {
        Ok(p) => p,
        Err(e) => return Condition::new("Ready", "False", e.reason(), e.to_string()),
    };
    let refused: Vec<(String, String, String)> = in_ns(world, ns, "AROMachinePool")
        .filter_map(|amp| {
            let c = condition(amp, "NodePoolReady")?;
            let reason = c.get("reason").and_then(Value::as_str)?;
            [NODE_POLICY_VIOLATION, NODE_POLICY_INVALID]
                .contains(&reason)
                .then(|| {
                    (
                        reason.to_string(),
                        str_at(amp, "/metadata/name").unwrap_or("").to_string(),
                        c.get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                    )
                })
        })
        .collect();
    if let Some((reason, _, _)) = refused.first() {
        let listed: Vec<String> = refused
            .iter()
            .map(|(_, name, message)| format!("AROMachinePool {ns}/{name}: {message}"))
            .collect();
        return Condition::new(
            "Ready",
            "False",
            reason,
            format!("not applied to every node pool: {}", listed.join("; ")),
        );
    }
    let pools: Vec<&Value> = in_ns(world, ns, NODE_POOL)
        .filter(|np| np.pointer("/metadata/deletionTimestamp").is_none())
        .filter(|np| declared(np) != Policy::Skip)
        .collect();
    let mut behind: Vec<&str> = pools
        .iter()
        .filter(|np| !parsed.carried_by(np))
        .filter_map(|np| str_at(np, "/metadata/name"))
        .collect();
    behind.sort_unstable();
    if !behind.is_empty() {
        return Condition::new(
            "Ready",
            "False",
            NODE_POOLS_NOT_UPDATED,
            format!("not merged into node pools yet: {}", behind.join(", ")),
        );
    }
    let mut message = format!(
        "merged into every node pool of namespace {ns} ({})",
        pools.len()
    );
    if !parsed.notes.is_empty() {
        message.push_str(&format!("; {}", parsed.notes.join("; ")));
    }
    Condition::new("Ready", "True", POLICY_APPLIED, message)
}

/// The status patches (partial objects for the status subresource) of the AutoNodePolicies of
/// `namespaces` in `world` (live objects, holding the statuses this pass decided for its
/// AROMachinePools), for those whose `Ready` condition changes.
pub fn policy_status_patches(
    namespaces: &BTreeSet<String>,
    world: &[&Value],
    now: &str,
) -> Vec<Value> {
    let mut out = Vec::new();
    for policy in world.iter().copied().filter(|o| {
        is_policy(o) && str_at(o, "/metadata/namespace").is_some_and(|ns| namespaces.contains(ns))
    }) {
        let ready = ready_of(policy, world);
        let previous = policy.get("status");
        let mut conditions = Vec::new();
        set_condition(&mut conditions, previous, &ready, now);
        if let Some(g) = policy.pointer("/metadata/generation") {
            conditions[0]["observedGeneration"] = g.clone();
        }
        let current = previous
            .and_then(|s| s.get("conditions"))
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c.get("type") == Some(&json!("Ready"))));
        if current == conditions.first() {
            continue;
        }
        tracing::info!(policy = %format!("{POLICY_KIND}/{}/{}", str_at(policy, "/metadata/namespace").unwrap_or(""), str_at(policy, "/metadata/name").unwrap_or("")),
            status = ready.status, reason = %ready.reason, "AutoNodePolicy status");
        out.push(json!({
            "apiVersion": policy["apiVersion"],
            "kind": POLICY_KIND,
            "metadata": {"name": policy["metadata"]["name"], "namespace": policy["metadata"]["namespace"]},
            "status": {"conditions": conditions},
        }));
    }
    out
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;

//! A node pool's VM size, zone and architecture against the AutoNodePolicy that counts for it,
//! before apply: the reconciler's own decision ([`node_policy`]) taken on the rendered policy, so
//! a node pool the policy refuses fails validation instead of failing after its unit applied.
//! Only the policy the unit renders is known here; one that lives only on the cluster is applied
//! by the reconciler as before.

use super::{Declared, Problem};
use crate::kinds::{HCP_GROUP, NODE_POOL};
use crate::validate::node_policy::{self, NodePolicyError};
use serde_json::Value;

pub(super) fn problems(declared: &Declared, objects: &[&Value]) -> Vec<Problem> {
    let policies: Vec<&Value> = objects
        .iter()
        .copied()
        .filter(|o| node_policy::is_policy(o))
        .collect();
    if policies.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for pool in declared.of_kind(HCP_GROUP, NODE_POOL) {
        let Some(policy) = node_policy::effective_policy(pool.namespace, &policies, &[]) else {
            continue;
        };
        let e = match node_policy::merge(pool.value, Some(policy)) {
            Err(e @ NodePolicyError::NotAllowed { .. })
            | Err(e @ NodePolicyError::Unset { .. })
            | Err(e @ NodePolicyError::MinValues { .. }) => e,
            // A policy that cannot be read is the policy's own error (its schema, its status).
            _ => continue,
        };
        let field = match &e {
            NodePolicyError::NotAllowed { field, .. }
            | NodePolicyError::Unset { field, .. }
            | NodePolicyError::MinValues { field, .. } => *field,
            _ => "vmSize",
        };
        let at = match field {
            "availabilityZone" => "/spec/properties/platform/availabilityZone",
            _ => "/spec/properties/platform/vmSize",
        };
        out.push(pool.problem(
            at,
            format!("{e}: a node pool takes what its namespace's AutoNodePolicy allows"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::validate::aro::testutil::{messages, set, unit};

    #[test]
    fn a_vm_size_the_policy_does_not_allow_fails_before_apply() {
        let mut objects = unit();
        set(
            &mut objects,
            "AROMachinePool",
            "/spec/resources/0/spec/properties/platform/vmSize",
            "Standard_Z1_v9",
        );
        let m = messages(objects);
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(
            m[0].starts_with("AROMachinePool: /spec/resources/0/spec/properties/platform/vmSize: AutoNodePolicy aro-dev/default does not allow vmSize Standard_Z1_v9"),
            "{}",
            m[0]
        );
        // Without a rendered policy, the node pool is not judged here.
        let mut objects = unit();
        set(
            &mut objects,
            "AROMachinePool",
            "/spec/resources/0/spec/properties/platform/vmSize",
            "Standard_Z1_v9",
        );
        objects.retain(|o| o["kind"] != "AutoNodePolicy");
        assert!(messages(objects).is_empty());
    }
}

//! Reconcile policies and adoption (`policies.md` §1), as pure decisions.
//!
//! - `serviceoperator.azure.com/reconcile-policy`: `manage` (default) creates, updates and deletes;
//!   `skip` never writes (read and report only); `detach-on-delete` writes, and when the object leaves
//!   git deletes the Kubernetes object but keeps the Azure resource.
//! - `serviceoperator.azure.com/reconcile-policy-if-exists`: when the agent is about to create an
//!   object whose Azure resource already exists, the effective policy becomes this value. The decision
//!   is recorded (in the unit's inventory, and on the object as [`ADOPTION_ANNOTATION`]) before the
//!   create is sent, and a recorded decision is never re-derived: a crash between the check and the
//!   create cannot turn a resource the agent created into an adopted one.
//! - An object already live but not created by the agent is adopted (ADR option 1).
//!
//! Validation (`validate::rules::policy_problems`) has already rejected unknown values and both
//! annotations on one object.

use crate::validate::{RECONCILE_POLICY, RECONCILE_POLICY_IF_EXISTS};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// Annotation the agent writes on an object created under `reconcile-policy-if-exists`:
/// `created` or `adopted`, the decision taken before the create.
pub const ADOPTION_ANNOTATION: &str = "aro-gitops.dev/adoption";

/// An ASO reconcile policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    #[default]
    Manage,
    Skip,
    DetachOnDelete,
}

impl Policy {
    pub fn parse(s: &str) -> Option<Policy> {
        match s {
            "manage" => Some(Policy::Manage),
            "skip" => Some(Policy::Skip),
            "detach-on-delete" => Some(Policy::DetachOnDelete),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Manage => "manage",
            Policy::Skip => "skip",
            Policy::DetachOnDelete => "detach-on-delete",
        }
    }

    /// Whether the agent may write the object (apply).
    pub fn writes(self) -> bool {
        self != Policy::Skip
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How an object came under the agent's management.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provenance {
    /// The agent created it.
    Created,
    /// It existed (in the cluster, or in Azure) before the agent applied it.
    Adopted,
}

impl Provenance {
    pub fn as_str(self) -> &'static str {
        match self {
            Provenance::Created => "created",
            Provenance::Adopted => "adopted",
        }
    }

    pub fn parse(s: &str) -> Option<Provenance> {
        match s {
            "created" => Some(Provenance::Created),
            "adopted" => Some(Provenance::Adopted),
            _ => None,
        }
    }
}

/// The decision taken for one object: how it came to be managed and the policy in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Decision {
    pub provenance: Provenance,
    pub policy: Policy,
    /// True when `reconcile-policy-if-exists` chose the policy (the Azure resource existed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub if_exists: bool,
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

/// The policy an object declares with `reconcile-policy` (default `manage`). A value validation did
/// not catch reads as `skip`: what the agent cannot interpret, it does not write.
pub fn declared(obj: &Value) -> Policy {
    match annotation(obj, RECONCILE_POLICY) {
        None => Policy::Manage,
        Some(v) => Policy::parse(v).unwrap_or(Policy::Skip),
    }
}

/// The policy `reconcile-policy-if-exists` asks for when the Azure resource already exists.
pub fn if_exists(obj: &Value) -> Option<Policy> {
    annotation(obj, RECONCILE_POLICY_IF_EXISTS).map(|v| Policy::parse(v).unwrap_or(Policy::Skip))
}

/// The decision written on a live object by an earlier create ([`ADOPTION_ANNOTATION`] and the
/// policy the agent wrote beside it).
pub fn recorded_on(live: &Value) -> Option<Decision> {
    let provenance = Provenance::parse(annotation(live, ADOPTION_ANNOTATION)?)?;
    Some(Decision {
        provenance,
        policy: declared(live),
        if_exists: provenance == Provenance::Adopted,
    })
}

/// Why a create under `reconcile-policy-if-exists` cannot be decided.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{RECONCILE_POLICY_IF_EXISTS} needs to know whether the Azure resource already exists, and this agent has no view of Azure: {why}"
)]
pub struct Undecidable {
    pub why: String,
}

/// Decides how an object that is not live will be created.
///
/// - A decision recorded earlier (inventory) wins: it is never re-derived.
/// - Without `reconcile-policy-if-exists`: created, with the declared policy.
/// - With it: adopted with that policy when the Azure resource exists; created and managed when it
///   does not; undecidable when `azure_exists` is unknown (`Err` with the reason).
pub fn decide_create(
    desired: &Value,
    recorded: Option<Decision>,
    azure_exists: Result<bool, String>,
) -> Result<Decision, Undecidable> {
    if let Some(d) = recorded {
        return Ok(d);
    }
    let Some(policy) = if_exists(desired) else {
        return Ok(Decision {
            provenance: Provenance::Created,
            policy: declared(desired),
            if_exists: false,
        });
    };
    match azure_exists {
        Ok(true) => Ok(Decision {
            provenance: Provenance::Adopted,
            policy,
            if_exists: true,
        }),
        Ok(false) => Ok(Decision {
            provenance: Provenance::Created,
            policy: Policy::Manage,
            if_exists: false,
        }),
        Err(why) => Err(Undecidable { why }),
    }
}

/// Decides for an object that is already live: a recorded decision holds (on the object, else in the
/// inventory); an object the agent never recorded is adopted (ADR option 1) with its declared policy.
pub fn decide_live(desired: &Value, live: &Value, recorded: Option<Decision>) -> Decision {
    if let Some(d) = recorded_on(live).or(recorded) {
        // A policy changed in git applies from now on, unless if-exists chose it.
        return if d.if_exists {
            d
        } else {
            Decision {
                policy: declared(desired),
                ..d
            }
        };
    }
    Decision {
        provenance: Provenance::Adopted,
        policy: declared(desired),
        if_exists: false,
    }
}

/// Under `skip` the agent writes nothing, with two exceptions that exist so ASO sees the policy:
/// the create that records a `reconcile-policy-if-exists` decision on a new object, and the one
/// write that puts `skip` on a live object that does not carry it yet (a policy changed in git, or
/// a paused cluster).
pub fn skip_needs_write(live: Option<&Value>, decision: &Decision) -> bool {
    match live {
        None => decision.if_exists,
        Some(l) => declared(l) != Policy::Skip,
    }
}

/// The object to apply for a decision: when `reconcile-policy-if-exists` is in play, the decision is
/// written on the object ([`ADOPTION_ANNOTATION`]) and the effective policy into
/// `reconcile-policy`, so ASO honours it; `reconcile-policy-if-exists` itself is left off (both on
/// one object is what validation forbids). Other objects are returned unchanged.
pub fn with_decision(mut desired: Value, decision: &Decision) -> Value {
    if if_exists(&desired).is_none() {
        return desired;
    }
    let Some(meta) = desired.get_mut("metadata").and_then(Value::as_object_mut) else {
        return desired;
    };
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(a) = annotations.as_object_mut() {
        a.remove(RECONCILE_POLICY_IF_EXISTS);
        a.insert(
            ADOPTION_ANNOTATION.to_string(),
            Value::String(decision.provenance.as_str().to_string()),
        );
        if decision.policy != Policy::Manage {
            a.insert(
                RECONCILE_POLICY.to_string(),
                Value::String(decision.policy.as_str().to_string()),
            );
        }
    }
    desired
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(annotations: Value) -> Value {
        json!({"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup",
               "metadata": {"name": "rg", "namespace": "ns", "annotations": annotations}})
    }

    #[test]
    fn declared_policy_defaults_to_manage_and_unknown_reads_as_skip() {
        assert_eq!(declared(&obj(json!({}))), Policy::Manage);
        assert_eq!(
            declared(&obj(json!({RECONCILE_POLICY: "detach-on-delete"}))),
            Policy::DetachOnDelete
        );
        assert_eq!(
            declared(&obj(json!({RECONCILE_POLICY: "bogus"}))),
            Policy::Skip
        );
    }

    #[test]
    fn plain_creates_are_created_with_the_declared_policy() {
        let d = decide_create(
            &obj(json!({RECONCILE_POLICY: "skip"})),
            None,
            Err("n/a".into()),
        )
        .unwrap();
        assert_eq!(d.provenance, Provenance::Created);
        assert_eq!(d.policy, Policy::Skip);
    }

    #[test]
    fn if_exists_adopts_an_existing_azure_resource_with_its_policy() {
        let o = obj(json!({RECONCILE_POLICY_IF_EXISTS: "skip"}));
        let d = decide_create(&o, None, Ok(true)).unwrap();
        assert_eq!(
            d,
            Decision {
                provenance: Provenance::Adopted,
                policy: Policy::Skip,
                if_exists: true
            }
        );
        let d = decide_create(&o, None, Ok(false)).unwrap();
        assert_eq!(d.provenance, Provenance::Created);
        assert_eq!(d.policy, Policy::Manage);
    }

    #[test]
    fn if_exists_without_a_view_of_azure_is_undecidable() {
        let o = obj(json!({RECONCILE_POLICY_IF_EXISTS: "skip"}));
        let e = decide_create(&o, None, Err("no simulator".into())).unwrap_err();
        assert!(e.to_string().contains("no simulator"), "{e}");
    }

    #[test]
    fn a_recorded_decision_is_never_rederived() {
        // The crash case: "created" was recorded, then the Azure resource appeared (made by the
        // create that was in flight). The object must stay "created", not become adopted.
        let o = obj(json!({RECONCILE_POLICY_IF_EXISTS: "skip"}));
        let recorded = Decision {
            provenance: Provenance::Created,
            policy: Policy::Manage,
            if_exists: false,
        };
        assert_eq!(
            decide_create(&o, Some(recorded), Ok(true)).unwrap(),
            recorded
        );
    }

    #[test]
    fn skip_writes_only_to_put_the_policy_on_the_object() {
        let skip = Decision {
            provenance: Provenance::Created,
            policy: Policy::Skip,
            if_exists: false,
        };
        let adopted = Decision {
            provenance: Provenance::Adopted,
            policy: Policy::Skip,
            if_exists: true,
        };
        assert!(
            !skip_needs_write(None, &skip),
            "declared skip: never created"
        );
        assert!(
            skip_needs_write(None, &adopted),
            "if-exists: the recording create"
        );
        assert!(
            skip_needs_write(Some(&obj(json!({}))), &skip),
            "live lacks skip"
        );
        assert!(!skip_needs_write(
            Some(&obj(json!({RECONCILE_POLICY: "skip"}))),
            &skip
        ));
    }

    #[test]
    fn live_objects_not_recorded_are_adopted() {
        let d = decide_live(&obj(json!({})), &obj(json!({})), None);
        assert_eq!(d.provenance, Provenance::Adopted);
        let created = Decision {
            provenance: Provenance::Created,
            policy: Policy::Manage,
            if_exists: false,
        };
        let d = decide_live(
            &obj(json!({RECONCILE_POLICY: "detach-on-delete"})),
            &obj(json!({})),
            Some(created),
        );
        assert_eq!(d.provenance, Provenance::Created);
        assert_eq!(d.policy, Policy::DetachOnDelete);
    }

    #[test]
    fn the_decision_is_written_on_the_object_and_read_back() {
        let o = obj(json!({RECONCILE_POLICY_IF_EXISTS: "skip"}));
        let d = decide_create(&o, None, Ok(true)).unwrap();
        let applied = with_decision(o, &d);
        let a = &applied["metadata"]["annotations"];
        assert_eq!(a[ADOPTION_ANNOTATION], "adopted");
        assert_eq!(a[RECONCILE_POLICY], "skip");
        assert!(a.get(RECONCILE_POLICY_IF_EXISTS).is_none());
        assert_eq!(recorded_on(&applied), Some(d));
        // Later passes keep the recorded decision even though git still says if-exists.
        let later = decide_live(
            &obj(json!({RECONCILE_POLICY_IF_EXISTS: "skip"})),
            &applied,
            None,
        );
        assert_eq!(later, d);
        // Objects without if-exists pass through untouched.
        let plain = obj(json!({"x": "y"}));
        assert_eq!(with_decision(plain.clone(), &d), plain);
    }
}

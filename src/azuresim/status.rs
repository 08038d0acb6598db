//! What status the simulator writes for an ASO object in a given state (pure).
//!
//! [`phase`] decides where an object stands (waiting for its owner, accepted, provisioning, failed,
//! succeeded, deleting) and [`desired_status`] renders the whole `status` ASO would write for it: the
//! `Ready` condition, `provisioningState` and, once provisioned, the ARM id and the kind's observed
//! properties. Fields written before are kept (a cluster being updated still reports its id and
//! URLs), so the rendered status never drops a field and comparing it with the live one tells
//! whether a write is needed.
//!
//! `provisioningState` moves `Accepted` (the first write on a new object) → `Provisioning` (while
//! the delay runs) → `Succeeded`; a spec change of a provisioned object goes through `Updating`; a
//! requested failure ends in `Failed`; a deletion shows `Deleting`. It is written where ASO's status
//! of the kind has it ([`state_pointer`]): `status.properties.provisioningState` for resource groups,
//! vaults and the ARO HCP kinds (cluster, node pool, external auth), `status.provisioningState` for
//! the network kinds (and kinds the simulator does not know); identities and role assignments have
//! none, and their `Ready` condition tells instead.
//!
//! Generations lag as in ASO: the `Ready` condition's `observedGeneration` is the generation the
//! simulator last wrote status for. Right after a spec change, before the simulator has reacted, it
//! is lower than `metadata.generation`, so the readiness rule reads "not ready"; the simulator's
//! first reaction is `Reconciling` with the new generation, and `Ready=True` comes after the delay.

use super::azure;
use super::policy;
use super::{FAIL_ANNOTATION, WARN_ANNOTATION};
use crate::arm::OwnerRef;
use crate::reconcile::readiness::ready_condition;
use serde_json::{Map, Value, json};

/// The message of every `Ready=True` condition the simulator writes.
pub const SUCCEEDED_MESSAGE: &str =
    "Provisioned by the aro-gitops Azure simulator (no real Azure resource)";

/// Where a simulated ASO object stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// `metadata.deletionTimestamp` is set (some other finalizer holds the object).
    Deleting,
    /// `spec.owner` is required but empty: a person has to fix the spec.
    OwnerNotSet { implied_kind: String },
    /// The named owner object does not exist.
    WaitingForOwner { kind: String, name: String },
    /// The owner exists but has no Azure resource yet (no `status.id`).
    WaitingForOwnerProvisioning { kind: String, name: String },
    /// A new object: the simulated ARM request is accepted, provisioning has not started.
    Accepted,
    /// Simulated provisioning (or update) of the current generation is under way.
    Provisioning,
    /// The simulated ARM call failed for good with `code` (from [`FAIL_ANNOTATION`]): severity Error.
    Failed { code: String },
    /// The simulated ARM call failed with `code` (from [`WARN_ANNOTATION`]) and is retried: severity
    /// Warning. Removing the annotation lets the next attempt succeed.
    TransientFailure { code: String },
    /// Provisioned for the current generation.
    Succeeded,
}

impl Phase {
    /// The `Ready` condition's reason for this phase.
    pub fn reason(&self) -> &str {
        match self {
            Phase::Deleting => "Deleting",
            Phase::OwnerNotSet { .. } => "OwnerNotSet",
            Phase::WaitingForOwner { .. } => "WaitingForOwner",
            Phase::WaitingForOwnerProvisioning { .. } | Phase::Accepted | Phase::Provisioning => {
                "Reconciling"
            }
            Phase::Failed { code } | Phase::TransientFailure { code } if is_arm_code(code) => code,
            Phase::Failed { .. } => "ReconciliationFailedPermanently",
            Phase::TransientFailure { .. } => "ReconciliationFailed",
            Phase::Succeeded => "Succeeded",
        }
    }
}

/// Decides the phase of `obj`. `owner` is the object `spec.owner` names, when it exists (ignored for
/// kinds without an owner or with an ARM-id owner); `provisioned` says the simulated provisioning
/// delay for the current generation has elapsed (or the object already settled, see [`is_settled`]).
/// Not provisioned yet, an object that never had a `provisioningState` is [`Phase::Accepted`].
pub fn phase(obj: &Value, owner: Option<&Value>, provisioned: bool) -> Phase {
    if policy::is_deleting(obj) {
        return Phase::Deleting;
    }
    match crate::arm::owner_of(obj) {
        OwnerRef::NotNeeded | OwnerRef::ArmId(_) => {}
        OwnerRef::NotSet { implied_kind } => {
            return Phase::OwnerNotSet {
                implied_kind: implied_kind.into(),
            };
        }
        OwnerRef::Named { kind, name, .. } => match owner {
            None => return Phase::WaitingForOwner { kind, name },
            Some(o) if owner_arm_id(o).is_none() => {
                return Phase::WaitingForOwnerProvisioning { kind, name };
            }
            Some(_) => {}
        },
    }
    if !provisioned {
        return match previous_state(obj) {
            None => Phase::Accepted,
            Some(_) => Phase::Provisioning,
        };
    }
    if let Some(code) = fail_code(obj) {
        return Phase::Failed {
            code: code.to_string(),
        };
    }
    match warn_code(obj) {
        Some(code) => Phase::TransientFailure {
            code: code.to_string(),
        },
        None => Phase::Succeeded,
    }
}

/// Where ASO's status of `kind` carries `provisioningState` (a JSON pointer into the object):
/// `status.properties` for resource groups, vaults and the ARO HCP kinds, nowhere for identities and
/// role assignments, `status` itself for the network kinds and any other kind.
pub fn state_pointer(kind: &str) -> Option<&'static str> {
    match kind {
        "ResourceGroup"
        | "Vault"
        | crate::kinds::HCP_CLUSTER
        | crate::kinds::NODE_POOL
        | crate::kinds::EXTERNAL_AUTH => Some("/status/properties/provisioningState"),
        "UserAssignedIdentity" | "RoleAssignment" => None,
        _ => Some("/status/provisioningState"),
    }
}

/// The `provisioningState` last written (see [`state_pointer`]); for a kind without one, what its
/// `Ready` condition says: `Succeeded` when True, else `Provisioning` once any was written.
pub fn previous_state(obj: &Value) -> Option<&str> {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    match state_pointer(kind) {
        Some(at) => obj
            .pointer(at)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty()),
        None => ready_condition(obj).map(|c| {
            if c.get("status").and_then(Value::as_str) == Some("True") {
                "Succeeded"
            } else {
                "Provisioning"
            }
        }),
    }
}

/// The status the simulator writes for `obj` (see [`phase`] for `owner` and `provisioned`). `now` is
/// the RFC 3339 time used when the `Ready` condition changes status.
pub fn desired_status(obj: &Value, owner: Option<&Value>, provisioned: bool, now: &str) -> Value {
    let phase = phase(obj, owner, provisioned);
    render(obj, owner, &phase, now)
}

/// True when the `Ready` condition describes the current generation and is final: `True`, or failed
/// with severity `Error` for the failure [`FAIL_ANNOTATION`] still asks for. Such an object needs no
/// new provisioning delay. Removing (or changing) the annotation unsettles a failed object, as any
/// change makes ASO reconcile again.
pub fn is_settled(obj: &Value) -> bool {
    let Some(cond) = ready_condition(obj) else {
        return false;
    };
    let generation = obj
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let observed = cond
        .get("observedGeneration")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let still_failing = fail_code(obj).is_some_and(|code| {
        Some(
            Phase::Failed {
                code: code.to_string(),
            }
            .reason(),
        ) == cond.get("reason").and_then(Value::as_str)
    });
    let final_state = cond.get("status").and_then(Value::as_str) == Some("True")
        || (cond.get("severity").and_then(Value::as_str) == Some("Error") && still_failing);
    observed >= generation && final_state
}

/// The ARM error code requested by [`FAIL_ANNOTATION`], when set.
pub fn fail_code(obj: &Value) -> Option<&str> {
    annotation(obj, FAIL_ANNOTATION)
}

/// The ARM error code requested by [`WARN_ANNOTATION`], when set.
pub fn warn_code(obj: &Value) -> Option<&str> {
    annotation(obj, WARN_ANNOTATION)
}

fn annotation<'a>(obj: &'a Value, name: &str) -> Option<&'a str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(name))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// Renders the status for `phase`, starting from the object's current status.
pub fn render(obj: &Value, owner: Option<&Value>, phase: &Phase, now: &str) -> Value {
    let mut status: Map<String, Value> = obj
        .get("status")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    let state = match phase {
        Phase::Succeeded => {
            observed_fields(obj, owner, &mut status);
            Some("Succeeded")
        }
        Phase::Accepted => Some("Accepted"),
        // Retrying a transient failure is still provisioning (or updating) as far as ARM tells.
        Phase::Provisioning | Phase::TransientFailure { .. } => match previous_state(obj) {
            Some("Succeeded" | "Updating") => Some("Updating"),
            _ => Some("Provisioning"),
        },
        Phase::Failed { .. } => Some("Failed"),
        Phase::Deleting => Some("Deleting"),
        Phase::OwnerNotSet { .. }
        | Phase::WaitingForOwner { .. }
        | Phase::WaitingForOwnerProvisioning { .. } => None,
    };
    match (state, state_pointer(kind)) {
        (Some(state), Some("/status/provisioningState")) => {
            status.insert("provisioningState".into(), json!(state));
        }
        (Some(state), Some(_)) => {
            let properties = status.entry("properties").or_insert_with(|| json!({}));
            if !properties.is_object() {
                *properties = json!({});
            }
            properties["provisioningState"] = json!(state);
        }
        _ => {}
    }

    let ready = ready_condition_for(obj, phase, now);
    let mut conditions: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    match conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
    {
        Some(c) => *c = ready,
        None => conditions.push(ready),
    }
    status.insert("conditions".into(), Value::Array(conditions));
    Value::Object(status)
}

/// What Azure would report about a provisioned resource: id, name, type, location and, for the
/// ARO kinds, their properties.
fn observed_fields(obj: &Value, owner: Option<&Value>, status: &mut Map<String, Value>) {
    let (group, _) = crate::object::split_api_version(
        obj.get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default(),
    );
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    let parent_id = match crate::arm::owner_of(obj) {
        OwnerRef::ArmId(id) => Some(id),
        OwnerRef::Named { .. } => owner.and_then(owner_arm_id).map(str::to_string),
        OwnerRef::NotNeeded | OwnerRef::NotSet { .. } => None,
    };
    status.insert(
        "id".into(),
        json!(crate::arm::arm_id(obj, parent_id.as_deref())),
    );
    status.insert("name".into(), json!(crate::arm::azure_name(obj)));
    status.insert("type".into(), json!(crate::arm::arm_type(group, kind)));
    if let Some(location) = obj.pointer("/spec/location").and_then(Value::as_str) {
        status.insert("location".into(), json!(location));
    }
    let spec_props = obj.pointer("/spec/properties");
    let spec_at = |p: &str| spec_props.and_then(|v| v.pointer(p)).cloned();
    let observed = match kind {
        crate::kinds::HCP_CLUSTER => json!({
            "api": {"url": azure::api_url(obj), "visibility": spec_at("/api/visibility").unwrap_or(json!("Public"))},
            "console": {"url": azure::console_url(obj)},
            "dns": {"baseDomain": azure::base_domain(obj)},
            "version": {"id": azure::openshift_version(obj), "channelGroup": spec_at("/version/channelGroup").unwrap_or(json!("stable"))},
        }),
        crate::kinds::NODE_POOL => json!({"replicas": azure::node_pool_replicas(obj)}),
        _ => return,
    };
    let properties = status.entry("properties").or_insert_with(|| json!({}));
    match (properties.as_object_mut(), observed) {
        (Some(props), Value::Object(fields)) => props.extend(fields),
        (None, observed) => *properties = observed,
        _ => {}
    }
}

/// The `Ready` condition for `phase`; `lastTransitionTime` only moves when `status` changes.
fn ready_condition_for(obj: &Value, phase: &Phase, now: &str) -> Value {
    let (status, severity) = match phase {
        Phase::Succeeded => ("True", None),
        Phase::Deleting
        | Phase::Accepted
        | Phase::Provisioning
        | Phase::WaitingForOwnerProvisioning { .. } => ("False", Some("Info")),
        Phase::WaitingForOwner { .. } | Phase::TransientFailure { .. } => {
            ("False", Some("Warning"))
        }
        Phase::OwnerNotSet { .. } | Phase::Failed { .. } => ("False", Some("Error")),
    };
    let previous = ready_condition(obj);
    let transition = previous
        .filter(|c| c.get("status").and_then(Value::as_str) == Some(status))
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    let mut cond = json!({"type": "Ready", "status": status});
    if let Some(severity) = severity {
        cond["severity"] = json!(severity);
    }
    cond["reason"] = json!(phase.reason());
    cond["message"] = json!(message(phase));
    if let Some(generation) = obj.pointer("/metadata/generation").and_then(Value::as_i64) {
        cond["observedGeneration"] = json!(generation);
    }
    cond["lastTransitionTime"] = transition;
    cond
}

fn message(phase: &Phase) -> String {
    const NOTE: &str = "aro-gitops Azure simulator; no real Azure resource";
    match phase {
        Phase::Succeeded => SUCCEEDED_MESSAGE.to_string(),
        Phase::Deleting => format!("Deleting the simulated resource ({NOTE})"),
        Phase::OwnerNotSet { implied_kind } => {
            format!(
                "spec.owner must name the owning {implied_kind} (spec.owner.name) or an ARM id (spec.owner.armId) ({NOTE})"
            )
        }
        Phase::WaitingForOwner { kind, name } => {
            format!(
                "Owner {kind} \"{name}\" cannot be found; progress is blocked until it is created ({NOTE})"
            )
        }
        Phase::WaitingForOwnerProvisioning { kind, name } => {
            format!("Waiting for owner {kind} \"{name}\" to be provisioned ({NOTE})")
        }
        Phase::Accepted => {
            format!("Simulated ARM request accepted; provisioning starts next ({NOTE})")
        }
        Phase::Provisioning => format!("Simulated provisioning in progress ({NOTE})"),
        Phase::TransientFailure { code } => {
            let shown: String = code.chars().take(64).collect();
            format!(
                "Simulated transient ARM error {shown:?}, requested by annotation {WARN_ANNOTATION}; the simulator retries on every change to the object, and removing the annotation lets the next attempt succeed (aro-gitops Azure simulator; no real Azure call was made)"
            )
        }
        Phase::Failed { code } if is_arm_code(code) => {
            format!(
                "Simulated ARM error {code}, requested by annotation {FAIL_ANNOTATION} (aro-gitops Azure simulator; no real Azure call was made)"
            )
        }
        Phase::Failed { code } => {
            let shown: String = code.chars().take(64).collect();
            format!(
                "Simulated failure requested by annotation {FAIL_ANNOTATION}, whose value {shown:?} is not an ARM error code such as QuotaExceeded ({NOTE})"
            )
        }
    }
}

/// ARM error codes are one CamelCase word.
fn is_arm_code(code: &str) -> bool {
    code.len() <= 64
        && code.starts_with(|c: char| c.is_ascii_alphabetic())
        && code.chars().all(|c| c.is_ascii_alphanumeric())
}

fn owner_arm_id(owner: &Value) -> Option<&str> {
    owner
        .pointer("/status/id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
#[path = "status_lifecycle_tests.rs"]
mod lifecycle_tests;
#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;

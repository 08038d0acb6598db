//! The aggregated-APIServices gate of an AROControlPlane (`policies.md` §4), pure: which
//! APIServices a hosted cluster must serve, the condition `AggregatedAPIServicesAvailable` from
//! what the guest cluster's APIServices say (or why they could not be read), and the control
//! plane's `Available` condition, which waits for it and, once True, keeps True through a
//! transient False (the latch). The agent reads the guest cluster (`agent::pass::guest`) and hands the
//! result in as a [`GuestRead`].

use super::conditions::{Condition, finish_status, set_condition};
use super::embedded::cluster_name;
use super::str_at;
use crate::kinds::{EXTERNAL_AUTH, HCP_CLUSTER};
use serde_json::Value;

pub const APISERVICES_CONDITION: &str = "AggregatedAPIServicesAvailable";
pub const AVAILABLE_CONDITION: &str = "Available";
pub const NOT_AVAILABLE_REASON: &str = "AggregatedAPIServicesNotAvailable";
pub const RECONCILE_ERROR_REASON: &str = "ReconcileError";
pub const AS_EXPECTED_REASON: &str = "AsExpected";
/// `Available` False while the hosted control plane itself is not ready.
pub const WAITING_FOR_CONTROL_PLANE_REASON: &str = "WaitingForControlPlane";
/// `Available` False while `AggregatedAPIServicesAvailable` has not been reported yet.
pub const WAITING_FOR_APISERVICES_REASON: &str = "WaitingForAggregatedAPIServices";

/// The groups the OpenShift API server serves through the aggregator.
const OPENSHIFT_GROUPS: [&str; 9] = [
    "apps",
    "authorization",
    "build",
    "image",
    "quota",
    "route",
    "security",
    "template",
    "project",
];
/// The groups the OAuth API server serves, only when the built-in OAuth server runs.
const OAUTH_GROUPS: [&str; 2] = ["oauth", "user"];
/// OLM's PackageServer.
const PACKAGE_SERVER: &str = "v1.packages.operators.coreos.com";

/// What the agent found in the guest cluster of one AROControlPlane.
#[derive(Debug, Clone, PartialEq)]
pub enum GuestRead {
    /// The hosted cluster is not up (HcpOpenShiftCluster not Ready, or no kubeconfig Secret):
    /// nothing read, no condition.
    NotUp,
    /// Not read this time (the latch holds and the last read is recent): the condition stays as
    /// it was.
    Kept,
    /// The APIService objects the guest cluster listed.
    Listed(Vec<Value>),
    /// The guest cluster does not serve APIServices at all (404): every expected one is missing.
    NotFound,
    /// Reading failed for another reason (connection, 401/403, 5xx, a bad kubeconfig): the text
    /// says why and never holds a credential.
    Failed(String),
}

/// Whether the hosted cluster runs the built-in OAuth server. It does not when the cluster signs
/// in through an external OIDC provider: the AROControlPlane embeds an
/// HcpOpenShiftClustersExternalAuth, or the HcpOpenShiftCluster says
/// `spec.properties.externalAuth.enabled: true` (API versions that carry it).
pub fn oauth_enabled(acp: &Value) -> bool {
    let resources = acp
        .pointer("/spec/resources")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let external_auth = resources
        .iter()
        .any(|r| str_at(r, "/kind") == Some(EXTERNAL_AUTH));
    let enabled_on_cluster = resources
        .iter()
        .filter(|r| str_at(r, "/kind") == Some(HCP_CLUSTER))
        .any(|r| {
            r.pointer("/spec/properties/externalAuth/enabled")
                .and_then(Value::as_bool)
                == Some(true)
        });
    !(external_auth || enabled_on_cluster)
}

/// The APIServices the guest cluster must serve, sorted.
pub fn expected_apiservices(oauth: bool) -> Vec<String> {
    let oauth_groups: &[&str] = if oauth { &OAUTH_GROUPS } else { &[] };
    let mut names: Vec<String> = OPENSHIFT_GROUPS
        .iter()
        .chain(oauth_groups)
        .map(|g| format!("v1.{g}.openshift.io"))
        .chain([PACKAGE_SERVER.to_string()])
        .collect();
    names.sort();
    names
}

/// Whether an APIService object says `Available=True`.
fn is_available(apiservice: &Value) -> bool {
    apiservice
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                str_at(c, "/type") == Some("Available") && str_at(c, "/status") == Some("True")
            })
        })
}

/// `AggregatedAPIServicesAvailable` from `read` against `expected`; `None` when nothing was read
/// (the hosted cluster is not up, or the last condition is kept).
pub fn apiservices_condition(expected: &[String], read: &GuestRead) -> Option<Condition> {
    let listed: &[Value] = match read {
        GuestRead::NotUp | GuestRead::Kept => return None,
        GuestRead::Failed(why) => {
            return Some(Condition::new(
                APISERVICES_CONDITION,
                "False",
                RECONCILE_ERROR_REASON,
                format!("reading the guest cluster's APIServices failed: {why}"),
            ));
        }
        GuestRead::NotFound => &[],
        GuestRead::Listed(items) => items,
    };
    let mut missing: Vec<&str> = expected
        .iter()
        .filter(|name| {
            !listed
                .iter()
                .any(|a| str_at(a, "/metadata/name") == Some(name.as_str()) && is_available(a))
        })
        .map(String::as_str)
        .collect();
    missing.sort_unstable();
    Some(if missing.is_empty() {
        Condition::new(
            APISERVICES_CONDITION,
            "True",
            AS_EXPECTED_REASON,
            format!(
                "All {} aggregated APIServices are available",
                expected.len()
            ),
        )
    } else {
        Condition::new(
            APISERVICES_CONDITION,
            "False",
            NOT_AVAILABLE_REASON,
            format!("APIServices not available: {}", missing.join(", ")),
        )
    })
}

/// The condition of type `type_` in a status, when there is one.
fn condition_in<'a>(status: Option<&'a Value>, type_: &str) -> Option<&'a Value> {
    status?
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| str_at(c, "/type") == Some(type_))
}

fn condition_from(v: &Value) -> Condition {
    let status = match str_at(v, "/status") {
        Some("True") => "True",
        Some("False") => "False",
        _ => "Unknown",
    };
    Condition::new(
        str_at(v, "/type").unwrap_or_default(),
        status,
        str_at(v, "/reason").unwrap_or_default(),
        str_at(v, "/message").unwrap_or_default(),
    )
}

/// Whether a status (the live AROControlPlane's) has `Available` True: the latch holds.
pub fn was_available(status: Option<&Value>) -> bool {
    condition_in(status, AVAILABLE_CONDITION).is_some_and(|c| str_at(c, "/status") == Some("True"))
}

/// `Available`: False while the control plane is not ready (`not_ready` says why); then False
/// until `apis` exists and is True, carrying its message, unless the control plane was Available
/// before (`latched`); True otherwise.
pub fn available_condition(
    not_ready: Option<&str>,
    apis: Option<&Condition>,
    latched: bool,
) -> Condition {
    if let Some(why) = not_ready {
        return Condition::new(
            AVAILABLE_CONDITION,
            "False",
            WAITING_FOR_CONTROL_PLANE_REASON,
            why,
        );
    }
    match apis {
        _ if latched => Condition::new(AVAILABLE_CONDITION, "True", AS_EXPECTED_REASON, ""),
        Some(c) if c.is_true() => {
            Condition::new(AVAILABLE_CONDITION, "True", AS_EXPECTED_REASON, "")
        }
        Some(c) => Condition::new(AVAILABLE_CONDITION, "False", &c.reason, c.message.clone()),
        None => Condition::new(
            AVAILABLE_CONDITION,
            "False",
            WAITING_FOR_APISERVICES_REASON,
            format!("Waiting for the {APISERVICES_CONDITION} condition of the guest cluster"),
        ),
    }
}

/// Why the control plane whose decided status is `status` is not ready, or `None` when it is.
fn not_ready_message(status: &Value, secret: &str) -> Option<String> {
    if status.get("ready").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    let hcp = condition_in(Some(status), "HcpClusterReady");
    Some(match hcp {
        Some(c) if str_at(c, "/status") != Some("True") => {
            let message = str_at(c, "/message").unwrap_or_default();
            format!("The hosted control plane is not ready: {message}")
        }
        _ => format!("Waiting for the kubeconfig Secret {secret}"),
    })
}

/// Adds the gate's conditions to the status `decided` for the AROControlPlane `acp` (as in git):
/// `AggregatedAPIServicesAvailable` from `read`, and `Available`. `previous` is the live
/// object's status (transition times, the latch, the condition kept by [`GuestRead::Kept`]).
pub fn gate_status(
    acp: &Value,
    decided: &Value,
    previous: Option<&Value>,
    read: &GuestRead,
    now: &str,
) -> Value {
    let Some(fields) = decided.as_object() else {
        return decided.clone();
    };
    let mut fields = fields.clone();
    let mut conditions = match fields.remove("conditions") {
        Some(Value::Array(cs)) => cs,
        _ => vec![],
    };
    let expected = expected_apiservices(oauth_enabled(acp));
    let apis = match read {
        GuestRead::Kept => condition_in(previous, APISERVICES_CONDITION).map(condition_from),
        _ => apiservices_condition(&expected, read),
    };
    if let Some(c) = &apis {
        set_condition(&mut conditions, previous, c, now);
    }
    let secret = kubeconfig_secret(acp).0;
    let not_ready = not_ready_message(decided, &secret);
    let available =
        available_condition(not_ready.as_deref(), apis.as_ref(), was_available(previous));
    set_condition(&mut conditions, previous, &available, now);
    finish_status(fields, conditions)
}

/// The name of the HcpOpenShiftCluster an AROControlPlane embeds.
pub fn hosted_cluster_name(acp: &Value) -> Option<&str> {
    super::world::hcp_name(acp)
}

/// The kubeconfig Secret of an AROControlPlane's hosted cluster: (name, key). ASO writes it where
/// the HcpOpenShiftCluster's `spec.operatorSpec.secrets.adminCredentials` says (its only
/// destination); unset, the mutator's default `<cluster>-kubeconfig` / `value`
/// (`aro-reconcilers.md`, mutators).
pub fn kubeconfig_secret(acp: &Value) -> (String, String) {
    let dest = acp
        .pointer("/spec/resources")
        .and_then(Value::as_array)
        .and_then(|l| l.iter().find(|r| str_at(r, "/kind") == Some(HCP_CLUSTER)))
        .and_then(|h| h.pointer("/spec/operatorSpec/secrets/adminCredentials"));
    match dest.and_then(|d| str_at(d, "/name").filter(|n| !n.is_empty())) {
        Some(name) => {
            let key = dest
                .and_then(|d| str_at(d, "/key"))
                .filter(|k| !k.is_empty())
                .unwrap_or("value");
            (name.to_string(), key.to_string())
        }
        None => (format!("{}-kubeconfig", cluster_name(acp)), "value".into()),
    }
}

#[cfg(test)]
#[allow(clippy::type_complexity)] // tables of tuples
#[path = "apiservices_tests.rs"]
mod tests;

//! The one readiness rule for Azure Service Operator (ASO) resources.
//!
//! Every embedded resource (ResourceGroup, VirtualNetwork, HcpOpenShiftCluster, node pools, ...) is judged
//! by its `Ready` condition, as `aro-reconcilers.md` ("ASO readiness") pins it:
//! - `Ready` is `"True"` and its `observedGeneration` is not lower than `metadata.generation`: ready;
//! - the condition speaks of an older generation: still progressing (ASO has not seen the new spec);
//! - severity `Error`: failed, a person has to act;
//! - otherwise (`Reconciling`, `WaitingForOwner`, `Deleting`, ...): still progressing;
//! - no `Ready` condition yet: unknown, which counts as not ready.

use super::aro::apiservices::AVAILABLE_CONDITION;
use crate::object::ObjectKey;
use serde_json::Value;
use std::fmt;

/// How far an ASO resource has come, read from its `Ready` condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// `Ready=True` for the current generation.
    Ready,
    /// Not ready yet, still being worked on (or ASO has not observed the current generation).
    Progressing { reason: String, message: String },
    /// ASO gave up: severity `Error`. Needs a person; report as failed, not as "provisioning".
    Failed { reason: String, message: String },
    /// No `Ready` condition yet. Not ready.
    Unknown,
}

impl Readiness {
    pub fn is_ready(&self) -> bool {
        matches!(self, Readiness::Ready)
    }

    pub fn is_failed(&self) -> bool {
        matches!(self, Readiness::Failed { .. })
    }

    /// The condition's reason, when not ready and one is known.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Readiness::Progressing { reason, .. } | Readiness::Failed { reason, .. } => {
                Some(reason)
            }
            Readiness::Ready | Readiness::Unknown => None,
        }
    }

    /// The condition's message, when not ready and one is known.
    pub fn message(&self) -> Option<&str> {
        match self {
            Readiness::Progressing { message, .. } | Readiness::Failed { message, .. } => {
                Some(message)
            }
            Readiness::Ready | Readiness::Unknown => None,
        }
    }
}

impl fmt::Display for Readiness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Readiness::Ready => f.write_str("ready"),
            Readiness::Unknown => f.write_str("not ready (no Ready condition yet)"),
            Readiness::Progressing { reason, message } => {
                write!(f, "progressing ({reason}): {message}")
            }
            Readiness::Failed { reason, message } => write!(f, "failed ({reason}): {message}"),
        }
    }
}

/// Reason reported when the `Ready` condition describes an older generation than `metadata.generation`.
pub const REASON_STALE_GENERATION: &str = "Reconciling";

/// Judges an ASO resource by its `Ready` condition (see the module header for the rule).
///
/// A missing `observedGeneration` counts as 0, so a resource whose `metadata.generation` is set is never
/// taken for ready on a condition that does not say which generation it describes. When
/// `metadata.generation` is absent, no generation check is made.
pub fn aso_readiness(obj: &Value) -> Readiness {
    let Some(cond) = ready_condition(obj) else {
        return Readiness::Unknown;
    };
    let text = |field: &str| {
        cond.get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };

    if let Some(generation) = obj.pointer("/metadata/generation").and_then(as_generation) {
        let observed = cond
            .get("observedGeneration")
            .and_then(as_generation)
            .unwrap_or(0);
        if observed < generation {
            return Readiness::Progressing {
                reason: REASON_STALE_GENERATION.to_string(),
                message: format!(
                    "waiting for generation {generation} to be observed (Ready condition is for generation {observed})"
                ),
            };
        }
    }

    if text("status") == "True" {
        return Readiness::Ready;
    }
    let (reason, message) = (text("reason"), text("message"));
    if text("severity") == "Error" {
        Readiness::Failed { reason, message }
    } else {
        Readiness::Progressing { reason, message }
    }
}

/// The severity (`Info`, `Warning`, `Error`) of the `Ready` condition, for callers that mirror it
/// (`[Error] ` / `[Warning] ` message prefixes). `None` without a `Ready` condition or severity.
pub fn aso_severity(obj: &Value) -> Option<&str> {
    ready_condition(obj)?
        .get("severity")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// The `Ready` condition of an ASO resource, if it has one.
pub fn ready_condition(obj: &Value) -> Option<&Value> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
}

/// Generations are integers; tolerate a float (`2.0`) or a numeric string from loosely typed sources.
fn as_generation(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// How far one object of a unit has come, as a pass judges it.
#[derive(Debug, Clone, PartialEq)]
pub enum ObjectState {
    Ready,
    Waiting { reason: String, message: String },
    Failed { reason: String, message: String },
    Missing,
}

/// Readiness of a live object: the ASO rule for ASO kinds, `status.ready` for the ARO kinds,
/// existence for everything else.
pub fn object_state(key: &ObjectKey, live: Option<&Value>) -> ObjectState {
    let Some(obj) = live else {
        return ObjectState::Missing;
    };
    if crate::kinds::is_aso_group(&key.group) {
        return match aso_readiness(obj) {
            Readiness::Ready => ObjectState::Ready,
            Readiness::Failed { reason, message } => ObjectState::Failed { reason, message },
            Readiness::Progressing { reason, message } => ObjectState::Waiting { reason, message },
            Readiness::Unknown => ObjectState::Waiting {
                reason: "Pending".into(),
                message: "no Ready condition yet".into(),
            },
        };
    }
    if crate::kinds::is_aro_kind(&key.group, &key.kind) {
        let conditions = obj.pointer("/status/conditions").and_then(Value::as_array);
        // A control plane is ready once `Available` too (the aggregated-APIServices gate).
        let available = conditions
            .and_then(|cs| cs.iter().find(|c| c["type"] == AVAILABLE_CONDITION))
            .filter(|c| c["status"] != "True");
        if obj.pointer("/status/ready").and_then(Value::as_bool) == Some(true) {
            return match available {
                Some(c) if key.kind == "AROControlPlane" => ObjectState::Waiting {
                    reason: format!(
                        "{AVAILABLE_CONDITION}: {}",
                        c["reason"].as_str().unwrap_or("")
                    ),
                    message: c["message"].as_str().unwrap_or("").to_string(),
                },
                _ => ObjectState::Ready,
            };
        }
        // `Available` sums the others up: the first other condition not True says more.
        let first_false = conditions.and_then(|cs| {
            cs.iter().find(|c| {
                c.get("status").and_then(Value::as_str) != Some("True")
                    && c["type"] != AVAILABLE_CONDITION
            })
        });
        return match first_false {
            Some(c) => ObjectState::Waiting {
                reason: format!(
                    "{}: {}",
                    c["type"].as_str().unwrap_or(""),
                    c["reason"].as_str().unwrap_or("")
                ),
                message: c["message"].as_str().unwrap_or("").to_string(),
            },
            None => ObjectState::Waiting {
                reason: "NotReady".into(),
                message: "status.ready is not true yet".into(),
            },
        };
    }
    ObjectState::Ready
}

/// Whether a dependency lets its dependents go: ASO resources must be Ready (the spec's rule);
/// anything else must exist.
pub fn unblocks(key: &ObjectKey, live: Option<&Value>) -> bool {
    match live {
        None => false,
        Some(_) if crate::kinds::is_aso_group(&key.group) => {
            object_state(key, live) == ObjectState::Ready
        }
        Some(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(generation: Option<u64>, conditions: Value) -> Value {
        let mut o = json!({
            "apiVersion": "resources.azure.com/v1api20200601",
            "kind": "ResourceGroup",
            "metadata": {"name": "rg", "namespace": "default"},
            "status": {"conditions": conditions}
        });
        if let Some(g) = generation {
            o["metadata"]["generation"] = json!(g);
        }
        o
    }

    fn ready(status: &str, severity: &str, reason: &str, observed: Option<u64>) -> Value {
        let mut c = json!({"type": "Ready", "status": status, "severity": severity, "reason": reason,
                           "message": format!("msg {reason}")});
        if let Some(o) = observed {
            c["observedGeneration"] = json!(o);
        }
        json!([c])
    }

    fn progressing(reason: &str) -> Readiness {
        Readiness::Progressing {
            reason: reason.into(),
            message: format!("msg {reason}"),
        }
    }

    #[test]
    fn table() {
        let stale = |g: u64, o: u64| Readiness::Progressing {
            reason: REASON_STALE_GENERATION.into(),
            message: format!(
                "waiting for generation {g} to be observed (Ready condition is for generation {o})"
            ),
        };
        let cases: Vec<(&str, Value, Readiness)> = vec![
            (
                "ready, same generation",
                obj(Some(2), ready("True", "", "Succeeded", Some(2))),
                Readiness::Ready,
            ),
            (
                "ready, newer observed",
                obj(Some(2), ready("True", "", "Succeeded", Some(3))),
                Readiness::Ready,
            ),
            (
                "ready, no generation on object",
                obj(None, ready("True", "", "Succeeded", None)),
                Readiness::Ready,
            ),
            (
                "ready but stale",
                obj(Some(3), ready("True", "", "Succeeded", Some(2))),
                stale(3, 2),
            ),
            (
                "ready without observedGeneration",
                obj(Some(1), ready("True", "", "Succeeded", None)),
                stale(1, 0),
            ),
            (
                "stale error is not failed",
                obj(Some(4), ready("False", "Error", "Boom", Some(3))),
                stale(4, 3),
            ),
            (
                "reconciling",
                obj(Some(1), ready("False", "Info", "Reconciling", Some(1))),
                progressing("Reconciling"),
            ),
            (
                "waiting for owner",
                obj(
                    Some(1),
                    ready("False", "Warning", "WaitingForOwner", Some(1)),
                ),
                progressing("WaitingForOwner"),
            ),
            (
                "deleting",
                obj(Some(1), ready("False", "Info", "Deleting", Some(1))),
                progressing("Deleting"),
            ),
            (
                "status unknown",
                obj(Some(1), ready("Unknown", "", "Pending", Some(1))),
                progressing("Pending"),
            ),
            (
                "error severity",
                obj(
                    Some(1),
                    ready("False", "Error", "ReconciliationFailedPermanently", Some(1)),
                ),
                Readiness::Failed {
                    reason: "ReconciliationFailedPermanently".into(),
                    message: "msg ReconciliationFailedPermanently".into(),
                },
            ),
            ("no conditions", obj(Some(1), json!([])), Readiness::Unknown),
            (
                "only other conditions",
                obj(
                    Some(1),
                    json!([{"type": "Other", "status": "True", "observedGeneration": 1}]),
                ),
                Readiness::Unknown,
            ),
            (
                "no status at all",
                json!({"metadata": {"generation": 1}}),
                Readiness::Unknown,
            ),
        ];
        for (name, input, want) in cases {
            assert_eq!(aso_readiness(&input), want, "case: {name}");
        }
    }

    #[test]
    fn generation_as_float_or_string() {
        let mut o = obj(Some(2), ready("True", "", "Succeeded", None));
        o["metadata"]["generation"] = json!(2.0);
        o["status"]["conditions"][0]["observedGeneration"] = json!("2");
        assert_eq!(aso_readiness(&o), Readiness::Ready);
    }

    #[test]
    fn predicates_and_accessors() {
        assert!(Readiness::Ready.is_ready() && !Readiness::Ready.is_failed());
        assert!(!Readiness::Unknown.is_ready() && !Readiness::Unknown.is_failed());
        let failed = Readiness::Failed {
            reason: "R".into(),
            message: "M".into(),
        };
        assert!(failed.is_failed() && !failed.is_ready());
        assert_eq!((failed.reason(), failed.message()), (Some("R"), Some("M")));
        assert!(!progressing("Reconciling").is_ready() && !progressing("Reconciling").is_failed());
        assert_eq!(failed.to_string(), "failed (R): M");
    }

    #[test]
    fn severity_of_ready_condition() {
        assert_eq!(
            aso_severity(&obj(Some(1), ready("False", "Warning", "X", Some(1)))),
            Some("Warning")
        );
        assert_eq!(
            aso_severity(&obj(Some(1), ready("True", "", "X", Some(1)))),
            None
        );
        assert_eq!(aso_severity(&obj(Some(1), json!([]))), None);
    }
}

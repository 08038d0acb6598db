//! CAPI-style conditions on the ARO objects, and the mirror of an ASO resource's `Ready`.

use crate::reconcile::readiness::{Readiness, aso_readiness, aso_severity};
use serde_json::{Value, json};

/// One condition the reconcilers set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub type_: String,
    /// "True", "False" or "Unknown".
    pub status: &'static str,
    pub reason: String,
    pub message: String,
}

impl Condition {
    pub fn new(
        type_: &str,
        status: &'static str,
        reason: &str,
        message: impl Into<String>,
    ) -> Self {
        Condition {
            type_: type_.into(),
            status,
            reason: reason.into(),
            message: message.into(),
        }
    }

    pub fn is_true(&self) -> bool {
        self.status == "True"
    }
}

/// Puts `cond` into `conditions` (a status's list), keeping `lastTransitionTime` from the previous
/// condition of that type when its status did not change, so identical state writes identical bytes.
pub fn set_condition(
    conditions: &mut Vec<Value>,
    previous: Option<&Value>,
    cond: &Condition,
    now: &str,
) {
    let old = previous
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .and_then(|cs| {
            cs.iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some(&cond.type_))
        });
    let since = old
        .filter(|c| c.get("status").and_then(Value::as_str) == Some(cond.status))
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    let mut v = json!({"type": cond.type_, "status": cond.status, "reason": cond.reason, "lastTransitionTime": since});
    if !cond.message.is_empty() {
        v["message"] = json!(cond.message);
    }
    conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some(&cond.type_));
    conditions.push(v);
}

/// A status object from its fields and conditions (sorted by type, so equal state gives equal bytes).
pub fn finish_status(
    mut status: serde_json::Map<String, Value>,
    mut conditions: Vec<Value>,
) -> Value {
    conditions.sort_by(|a, b| a["type"].as_str().cmp(&b["type"].as_str()));
    status.insert("conditions".into(), Value::Array(conditions));
    Value::Object(status)
}

/// A condition that mirrors an ASO resource's readiness: True `Succeeded`; otherwise False with
/// ASO's reason (default `default_reason`) and message (default `default_message`), prefixed by
/// `[Error] ` or `[Warning] ` according to ASO's severity.
pub fn mirror_aso_ready(
    type_: &str,
    obj: &Value,
    default_reason: &str,
    default_message: &str,
) -> Condition {
    match aso_readiness(obj) {
        Readiness::Ready => Condition::new(type_, "True", "Succeeded", ""),
        r => {
            let reason = r
                .reason()
                .filter(|s| !s.is_empty())
                .unwrap_or(default_reason);
            let message = r
                .message()
                .filter(|s| !s.is_empty())
                .unwrap_or(default_message);
            let prefix = match aso_severity(obj) {
                Some("Error") => "[Error] ",
                Some("Warning") => "[Warning] ",
                _ => "",
            };
            Condition::new(type_, "False", reason, format!("{prefix}{message}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aso(status: &str, severity: Option<&str>, reason: &str, message: &str) -> Value {
        let mut c = json!({"type": "Ready", "status": status, "reason": reason, "message": message, "observedGeneration": 1});
        if let Some(s) = severity {
            c["severity"] = json!(s);
        }
        json!({"metadata": {"generation": 1}, "status": {"conditions": [c]}})
    }

    #[test]
    fn mirrors_aso_readiness_with_severity_prefixes() {
        let d = ("Provisioning", "HcpOpenShiftCluster is not yet ready");
        let ready = mirror_aso_ready(
            "HcpClusterReady",
            &aso("True", None, "Succeeded", ""),
            d.0,
            d.1,
        );
        assert_eq!(
            ready,
            Condition::new("HcpClusterReady", "True", "Succeeded", "")
        );
        let failed = mirror_aso_ready(
            "HcpClusterReady",
            &aso("False", Some("Error"), "QuotaExceeded", "no quota"),
            d.0,
            d.1,
        );
        assert_eq!(
            failed,
            Condition::new(
                "HcpClusterReady",
                "False",
                "QuotaExceeded",
                "[Error] no quota"
            )
        );
        let warn = mirror_aso_ready(
            "X",
            &aso("False", Some("Warning"), "WaitingForOwner", "owner missing"),
            d.0,
            d.1,
        );
        assert_eq!(warn.message, "[Warning] owner missing");
        let none = mirror_aso_ready("X", &json!({"metadata": {}}), d.0, d.1);
        assert_eq!(
            none,
            Condition::new(
                "X",
                "False",
                "Provisioning",
                "HcpOpenShiftCluster is not yet ready"
            )
        );
    }

    #[test]
    fn transition_time_moves_only_with_status() {
        let prev = json!({"conditions": [{"type": "A", "status": "False", "reason": "r", "lastTransitionTime": "t0"}]});
        let mut out = vec![];
        set_condition(
            &mut out,
            Some(&prev),
            &Condition::new("A", "False", "r2", "m"),
            "t1",
        );
        assert_eq!(out[0]["lastTransitionTime"], "t0");
        let mut out = vec![];
        set_condition(
            &mut out,
            Some(&prev),
            &Condition::new("A", "True", "ok", ""),
            "t1",
        );
        assert_eq!(out[0]["lastTransitionTime"], "t1");
        assert!(out[0].get("message").is_none());
    }
}

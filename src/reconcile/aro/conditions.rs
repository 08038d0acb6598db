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
/// The entry has the shape of CAPZ's v1beta2 conditions (`metav1.Condition`): `type`, `status`,
/// `reason`, `message` (empty allowed) and `lastTransitionTime`, all present; no `severity`.
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
    let v = json!({"type": cond.type_, "status": cond.status, "reason": api_reason(&cond.reason),
        "message": api_message(&cond.message), "lastTransitionTime": since});
    conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some(&cond.type_));
    conditions.push(v);
}

/// The most `message` may hold in a condition (CAPZ's v1beta2 schema).
const MAX_MESSAGE: usize = 32768;
/// The most `reason` may hold in a condition (CAPZ's v1beta2 schema).
const MAX_REASON: usize = 1024;

/// `reason` as a v1beta2 condition takes it (a letter, then letters, digits, `_`, `,` or `:`, not
/// ending in `,` or `:`; at most 1,024 bytes): other characters dropped; `Unknown` when nothing
/// is left (a reason mirrored from elsewhere may hold spaces or dashes).
pub fn api_reason(reason: &str) -> String {
    let kept: String = reason
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ',' | ':'))
        .skip_while(|c| !c.is_ascii_alphabetic())
        .take(MAX_REASON)
        .collect();
    let kept = kept.trim_end_matches([',', ':']);
    if kept.is_empty() {
        "Unknown".to_string()
    } else {
        kept.to_string()
    }
}

/// `message` cut to what a v1beta2 condition holds (32,768 bytes, on a character boundary).
pub fn api_message(message: &str) -> &str {
    if message.len() <= MAX_MESSAGE {
        return message;
    }
    let mut end = MAX_MESSAGE;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    &message[..end]
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
        // Every field of a v1beta2 condition is there, an empty message too.
        assert_eq!(out[0]["message"], "");
        let mut keys: Vec<&String> = out[0].as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            ["lastTransitionTime", "message", "reason", "status", "type"]
        );
    }

    #[test]
    fn reasons_and_messages_fit_the_v1beta2_schema() {
        assert_eq!(api_reason("QuotaExceeded"), "QuotaExceeded");
        assert_eq!(api_reason("Bad Request-x"), "BadRequestx");
        assert_eq!(api_reason("409_conflict:"), "conflict");
        assert_eq!(api_reason(""), "Unknown");
        assert_eq!(api_reason("-:"), "Unknown");
        assert_eq!(api_reason(&"R".repeat(2000)).len(), 1024);
        let long = "é".repeat(20000);
        let cut = api_message(&long);
        assert!(cut.len() <= 32768 && cut.len() > 32760);
        assert_eq!(api_message("short"), "short");
        let mut out = vec![];
        set_condition(
            &mut out,
            None,
            &Condition::new("A", "False", "no good", "m"),
            "t",
        );
        assert_eq!(out[0]["reason"], "nogood");
    }
}

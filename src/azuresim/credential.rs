//! ASO's per-resource credential, simulated (pure): a resource annotated
//! `serviceoperator.azure.com/credential-from: <name>` is managed with the Secret of that name in
//! its own namespace (a name with a `/` is refused: ASO takes no other namespace). A Secret that
//! is missing, or lacks one of the keys ASO requires (`AZURE_SUBSCRIPTION_ID`, `AZURE_TENANT_ID`,
//! `AZURE_CLIENT_ID`), stops the resource as ASO stops it: `Ready` False, reason `SecretNotFound`,
//! severity Warning (ASO retries), and nothing provisioned. A resource without the annotation is
//! managed as before (ASO's namespace or global credential).

use crate::reconcile::credentials::REQUIRED_KEYS;
pub use crate::reconcile::credentials::credential_from;
use serde_json::{Value, json};

/// ASO's reason for a credential Secret it cannot use.
pub const REASON: &str = "SecretNotFound";

/// Why a resource's credential cannot be used. Names the Secret, never its values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialProblem {
    #[error(
        "serviceoperator.azure.com/credential-from cannot contain '/' ({name:?}): the Secret must be in the resource's namespace"
    )]
    OtherNamespace { name: String },
    #[error("credential Secret \"{namespace}/{name}\" not found")]
    Missing { namespace: String, name: String },
    #[error("credential Secret \"{namespace}/{name}\" does not contain key {key:?}")]
    Incomplete {
        namespace: String,
        name: String,
        key: &'static str,
    },
}

/// The name of the Secret `obj`'s annotation names in its namespace, when it can be read: `None`
/// without the annotation or with a name in another namespace (see [`check`]).
pub fn secret_to_read(obj: &Value) -> Option<&str> {
    credential_from(obj).filter(|n| !n.contains('/'))
}

/// Whether `obj` may be managed with its credential; `secret` is the Secret
/// [`secret_to_read`] names, as read (`None`: missing).
pub fn check(obj: &Value, secret: Option<&Value>) -> Result<(), CredentialProblem> {
    let Some(name) = credential_from(obj) else {
        return Ok(());
    };
    if name.contains('/') {
        return Err(CredentialProblem::OtherNamespace { name: name.into() });
    }
    let namespace = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default")
        .to_string();
    let Some(secret) = secret else {
        return Err(CredentialProblem::Missing {
            namespace,
            name: name.into(),
        });
    };
    for key in REQUIRED_KEYS {
        let has = ["data", "stringData"]
            .iter()
            .any(|f| secret.get(*f).and_then(|d| d.get(key)).is_some());
        if !has {
            return Err(CredentialProblem::Incomplete {
                namespace,
                name: name.into(),
                key,
            });
        }
    }
    Ok(())
}

/// `obj`'s status with `Ready` False for `problem` (the rest of the status as it was);
/// `lastTransitionTime` kept while the condition says the same.
pub fn refused_status(obj: &Value, problem: &CredentialProblem, now: &str) -> Value {
    let status = obj
        .get("status")
        .filter(|s| s.is_object())
        .cloned()
        .unwrap_or_else(|| json!({}));
    let message = format!("{problem} (aro-gitops Azure simulator; no real Azure call was made)");
    with_ready_false(obj, status, REASON, "Warning", &message, now)
}

/// `status` (of `obj`) with its `Ready` condition False for `reason`; `lastTransitionTime` kept
/// while the condition says the same.
pub(crate) fn with_ready_false(
    obj: &Value,
    mut status: Value,
    reason: &str,
    severity: &str,
    message: &str,
    now: &str,
) -> Value {
    let mut conditions: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let since = conditions
        .iter()
        .find(|c| c["type"] == "Ready" && c["status"] == "False" && c["reason"] == reason)
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    let mut ready = json!({"type": "Ready", "status": "False", "severity": severity,
        "reason": reason, "message": message, "lastTransitionTime": since});
    if let Some(g) = obj.pointer("/metadata/generation").and_then(Value::as_i64) {
        ready["observedGeneration"] = json!(g);
    }
    conditions.retain(|c| c["type"] != "Ready");
    conditions.push(ready);
    status["conditions"] = Value::Array(conditions);
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rg(annotation: Option<&str>) -> Value {
        let mut o = json!({"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup",
            "metadata": {"name": "rg", "namespace": "a", "generation": 2}});
        if let Some(a) = annotation {
            o["metadata"]["annotations"] = json!({"serviceoperator.azure.com/credential-from": a});
        }
        o
    }

    #[test]
    fn the_credential_secret_must_exist_in_the_namespace_and_be_complete() {
        let full = json!({"data": {"AZURE_SUBSCRIPTION_ID": "cw==", "AZURE_TENANT_ID": "dA==",
            "AZURE_CLIENT_ID": "Yw==", "AZURE_CLIENT_SECRET": "eA=="}});
        assert_eq!(check(&rg(None), None), Ok(()));
        assert_eq!(check(&rg(Some("c-aso-secret")), Some(&full)), Ok(()));
        assert_eq!(
            check(&rg(Some("c-aso-secret")), None)
                .unwrap_err()
                .to_string(),
            "credential Secret \"a/c-aso-secret\" not found"
        );
        assert!(matches!(
            check(&rg(Some("other/c-aso-secret")), Some(&full)),
            Err(CredentialProblem::OtherNamespace { .. })
        ));
        assert_eq!(secret_to_read(&rg(Some("other/x"))), None);
        let mut partial = full.clone();
        partial["data"]
            .as_object_mut()
            .unwrap()
            .remove("AZURE_TENANT_ID");
        let e = check(&rg(Some("c-aso-secret")), Some(&partial)).unwrap_err();
        assert!(e.to_string().contains("AZURE_TENANT_ID"), "{e}");
        assert!(!e.to_string().contains("eA=="));
    }

    #[test]
    fn a_refused_resource_says_so_like_aso() {
        let problem = CredentialProblem::Missing {
            namespace: "a".into(),
            name: "s".into(),
        };
        let s = refused_status(&rg(Some("s")), &problem, "t1");
        let ready = &s["conditions"][0];
        assert_eq!(
            (&ready["status"], &ready["reason"], &ready["severity"]),
            (&json!("False"), &json!("SecretNotFound"), &json!("Warning"))
        );
        assert_eq!(ready["observedGeneration"], 2);
        assert!(s.get("id").is_none());
        let mut again = rg(Some("s"));
        again["status"] = s.clone();
        assert_eq!(refused_status(&again, &problem, "t2"), s);
    }
}

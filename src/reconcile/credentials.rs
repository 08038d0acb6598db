//! How a cluster's identity reaches Azure Service Operator, the way CAPZ hands it over: a
//! credential Secret per cluster in the cluster's namespace (`<cluster>-aso-secret`), named by the
//! annotation [`CREDENTIAL_FROM_ANNOTATION`] on every ASO resource of that cluster; and what an
//! identity's verdict does to the decisions of the cluster's ARO objects (pure).

use crate::identity::{
    AzureIdentity, CLIENT_SECRET_KEY, IdentityType, NOT_ALLOWED_MESSAGE, NOT_ALLOWED_REASON,
};
use crate::object::{ObjectKey, str_at, text_at};
use crate::reconcile::aro::{Decision, Held};
use base64::Engine as _;
use serde_json::{Map, Value, json};

/// ASO's per-resource credential annotation: the name of a Secret in the resource's namespace.
pub const CREDENTIAL_FROM_ANNOTATION: &str = "serviceoperator.azure.com/credential-from";
/// Label on the credential Secrets the agent makes; its value is the cluster's name.
pub const CREDENTIAL_LABEL: &str = "aro-gitops.dev/aso-credential-for";
/// The keys of an ASO credential Secret.
pub const SUBSCRIPTION_KEY: &str = "AZURE_SUBSCRIPTION_ID";
pub const TENANT_KEY: &str = "AZURE_TENANT_ID";
pub const CLIENT_ID_KEY: &str = "AZURE_CLIENT_ID";
pub const CLIENT_SECRET_ASO_KEY: &str = "AZURE_CLIENT_SECRET";
pub const CLIENT_CERTIFICATE_KEY: &str = "AZURE_CLIENT_CERTIFICATE";
pub const CLIENT_CERTIFICATE_PASSWORD_KEY: &str = "AZURE_CLIENT_CERTIFICATE_PASSWORD";
pub const AUTH_MODE_KEY: &str = "AUTH_MODE";
/// The keys ASO requires of every credential Secret.
pub const REQUIRED_KEYS: [&str; 3] = [SUBSCRIPTION_KEY, TENANT_KEY, CLIENT_ID_KEY];

/// The name of a cluster's ASO credential Secret (CAPZ's).
pub fn secret_name(cluster: &str) -> String {
    format!("{cluster}-aso-secret")
}

/// A cluster whose AROControlPlane (else AROCluster) names an identity, as git says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterIdentityRef {
    pub namespace: String,
    pub cluster: String,
    /// The identity: (namespace, name).
    pub identity: (String, String),
    /// `spec.subscriptionID` of the object that names the identity.
    pub subscription_id: String,
    /// The object that names it.
    pub referrer: ObjectKey,
}

impl ClusterIdentityRef {
    pub fn secret_name(&self) -> String {
        secret_name(&self.cluster)
    }

    /// The key of the cluster's credential Secret.
    pub fn secret_key(&self) -> ObjectKey {
        ObjectKey {
            group: Default::default(),
            version: "v1".into(),
            kind: "Secret".into(),
            namespace: Some(crate::object::Sym::new(&self.namespace)),
            name: self.secret_name(),
        }
    }

    /// The credential Secret as git knows it (no values: they come from the identity at pass time).
    pub fn placeholder(&self) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": self.secret_name(),
                "namespace": self.namespace,
                "labels": {CREDENTIAL_LABEL: self.cluster},
            },
            "type": "Opaque",
        })
    }
}

/// The clusters of `objects` (a unit's rendered objects) that name an identity: each
/// AROControlPlane's `identityRef` (CAPZ's AROCluster and AROMachinePool have none: the cluster's
/// identity and subscription are its control plane's). `cluster_of` names the cluster an ARO
/// object belongs to.
pub fn cluster_refs<'a>(
    objects: impl IntoIterator<Item = &'a Value>,
    cluster_of: impl Fn(&Value) -> &str,
) -> Vec<ClusterIdentityRef> {
    objects
        .into_iter()
        .filter(|o| str_at(o, "/kind") == Some("AROControlPlane"))
        .filter_map(|o| {
            let identity = crate::identity::identity_ref_of(o)?;
            let referrer = ObjectKey::from_object(o).ok()?;
            Some(ClusterIdentityRef {
                namespace: referrer
                    .namespace
                    .as_deref()
                    .unwrap_or_default()
                    .to_string(),
                cluster: cluster_of(o).to_string(),
                identity,
                subscription_id: text_at(o, "/spec/subscriptionID")
                    .unwrap_or_default()
                    .to_string(),
                referrer,
            })
        })
        .collect()
}

/// Whether `obj` is a credential Secret the agent makes (see [`ClusterIdentityRef::placeholder`]).
pub fn is_credential_secret(obj: &Value) -> bool {
    str_at(obj, "/kind") == Some("Secret")
        && str_at(obj, "/apiVersion") == Some("v1")
        && obj
            .pointer("/metadata/labels")
            .and_then(|l| l.get(CREDENTIAL_LABEL))
            .is_some()
}

/// A credential Secret as a plan or a drift report compares it: its values come from the
/// identity at pass time, never from git, so the live ones stand (and are never shown); any other
/// object as it is.
pub fn as_planned(mut desired: Value, live: Option<&Value>) -> Value {
    if is_credential_secret(&desired)
        && desired.get("data").is_none()
        && let Some(data) = live.and_then(|l| l.get("data"))
    {
        desired["data"] = data.clone();
    }
    desired
}

/// Sets [`CREDENTIAL_FROM_ANNOTATION`] on an ASO resource.
pub fn annotate(resource: &mut Value, secret: &str) {
    if !resource["metadata"]["annotations"].is_object() {
        resource["metadata"]["annotations"] = json!({});
    }
    resource["metadata"]["annotations"][CREDENTIAL_FROM_ANNOTATION] = json!(secret);
}

/// The annotation's value on `obj`, if any.
pub fn credential_from(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(CREDENTIAL_FROM_ANNOTATION))
        .and_then(Value::as_str)
}

/// The cluster's credential Secret, complete: IDs from the identity and the AROControlPlane,
/// `AZURE_CLIENT_SECRET` (or the certificate) copied as encoded from the identity's Secret
/// (`identity_secret`, read and checked), or the `AUTH_MODE` of the identity's type.
pub fn credential_secret(
    r: &ClusterIdentityRef,
    identity: &AzureIdentity,
    identity_secret: Option<&Value>,
) -> Value {
    let b64 = |s: &str| Value::String(base64::engine::general_purpose::STANDARD.encode(s));
    let mut data = Map::new();
    data.insert(SUBSCRIPTION_KEY.into(), b64(&r.subscription_id));
    data.insert(TENANT_KEY.into(), b64(&identity.tenant_id));
    data.insert(CLIENT_ID_KEY.into(), b64(&identity.client_id));
    let encoded = |key: &str| {
        identity_secret.and_then(|s| {
            let data = s.pointer("/data").and_then(|d| d.get(key)).cloned();
            data.or_else(|| {
                s.pointer("/stringData")
                    .and_then(|d| d.get(key))
                    .and_then(Value::as_str)
                    .map(b64)
            })
        })
    };
    match identity.kind {
        IdentityType::ServicePrincipal => {
            if let Some(v) = encoded(CLIENT_SECRET_KEY) {
                data.insert(CLIENT_SECRET_ASO_KEY.into(), v);
            }
        }
        IdentityType::ServicePrincipalCertificate => {
            if let Some(v) = encoded(CLIENT_SECRET_KEY) {
                data.insert(CLIENT_CERTIFICATE_KEY.into(), v);
            }
            if let Some(v) = encoded("password") {
                data.insert(CLIENT_CERTIFICATE_PASSWORD_KEY.into(), v);
            }
        }
        IdentityType::UserAssignedMSI => {
            data.insert(AUTH_MODE_KEY.into(), b64("podidentity"));
        }
        IdentityType::WorkloadIdentity | IdentityType::UserAssignedIdentityCredential => {
            data.insert(AUTH_MODE_KEY.into(), b64("workloadidentity"));
        }
    }
    let mut secret = r.placeholder();
    secret["data"] = Value::Object(data);
    secret
}

/// What a cluster's identity says, for its ARO objects.
#[derive(Clone, PartialEq)]
pub enum Verdict {
    /// The namespace may use the identity; the credential Secret to apply (holds secret values).
    Allowed { secret: Box<Value> },
    /// The identity does not allow the cluster's namespace.
    NotAllowed { identity: String },
    /// The identity (or its Secret) is missing or invalid: the message says which.
    Failed { message: String },
    /// The identity is not live yet but another unit declares it: the cluster waits for it.
    Waiting { on: ObjectKey, message: String },
}

impl std::fmt::Debug for Verdict {
    /// Never shows the Secret's values.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Allowed { .. } => f.write_str("Allowed"),
            Verdict::NotAllowed { identity } => write!(f, "NotAllowed({identity})"),
            Verdict::Failed { message } => write!(f, "Failed({message})"),
            Verdict::Waiting { on, .. } => write!(f, "Waiting({on})"),
        }
    }
}

impl Verdict {
    /// The condition reason and message of a verdict that stops the cluster.
    pub fn stop(&self) -> Option<(&'static str, String)> {
        match self {
            Verdict::Allowed { .. } => None,
            Verdict::NotAllowed { .. } => Some((NOT_ALLOWED_REASON, NOT_ALLOWED_MESSAGE.into())),
            Verdict::Failed { message } => Some((IDENTITY_ERROR_REASON, message.clone())),
            Verdict::Waiting { message, .. } => Some((WAITING_REASON, message.clone())),
        }
    }

    /// What the cluster's held resources wait for.
    pub fn waits_on(&self) -> Vec<ObjectKey> {
        match self {
            Verdict::Waiting { on, .. } => vec![on.clone()],
            _ => vec![],
        }
    }
}

/// The condition reason of a cluster waiting for its identity, declared by another unit.
pub const WAITING_REASON: &str = "WaitingForIdentity";

/// The condition reason of a cluster whose identity is missing or unusable.
pub const IDENTITY_ERROR_REASON: &str = "IdentityNotUsable";

/// A decision of one of the cluster's ARO objects under a verdict that stops the cluster: nothing
/// applied, recorded or deleted; every embedded resource held with the verdict's reason; the
/// status `ready: false` with a `Ready` condition False with the verdict's reason and message
/// (`lastTransitionTime` kept from `previous`, the live status, when it says the same; no
/// `severity`, which CAPZ's v1beta2 conditions do not have).
pub fn restrict(decision: &mut Decision, verdict: &Verdict, previous: Option<&Value>, now: &str) {
    let Some((reason, message)) = verdict.stop() else {
        return;
    };
    let mut held: Vec<Held> = Vec::new();
    let keys = decision
        .applies
        .iter()
        .filter_map(|a| ObjectKey::from_object(a).ok())
        .chain(decision.held.iter().map(|h| h.key.clone()));
    for key in keys {
        if !held.iter().any(|h| h.key == key) {
            held.push(Held {
                key,
                on: verdict.waits_on(),
                reason: reason.into(),
                message: message.clone(),
            });
        }
    }
    decision.held = held;
    decision.applies.clear();
    decision.deletions.clear();
    decision.record_owned_kinds = None;
    decision.patches.clear();
    if !decision.status.is_object() {
        decision.status = json!({});
    }
    let old = previous
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"));
    let since = old
        .filter(|c| c["status"] == "False" && c["reason"] == reason)
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    let cond = json!({"type": "Ready", "status": "False", "reason": reason,
        "message": message, "lastTransitionTime": since});
    let status = decision.status.as_object_mut().expect("an object");
    status.insert("ready".into(), json!(false));
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let list = conditions.as_array_mut().expect("an array");
    list.retain(|c| c["type"] != "Ready");
    list.push(cond);
    list.sort_by(|a, b| a["type"].as_str().cmp(&b["type"].as_str()));
}

/// The keys of a credential Secret that carry the identity's secret material.
const MATERIAL_KEYS: [&str; 3] = [
    CLIENT_SECRET_ASO_KEY,
    CLIENT_CERTIFICATE_KEY,
    CLIENT_CERTIFICATE_PASSWORD_KEY,
];

/// Whether `desired` (a cluster's credential Secret built this pass) carries other secret
/// material than the `live` one: its identity's Secret was rotated since the credential Secret was
/// written. A credential Secret not written yet is not a rotation.
pub fn material_rotated(desired: &Value, live: Option<&Value>) -> bool {
    let Some(live) = live else {
        return false;
    };
    let at = |s: &Value, k: &str| s.pointer("/data").and_then(|d| d.get(k)).cloned();
    MATERIAL_KEYS.iter().any(|k| at(desired, k) != at(live, k))
}

#[cfg(test)]
#[path = "credentials_tests.rs"]
mod tests;

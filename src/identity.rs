//! AzureClusterIdentity (`infrastructure.cluster.x-k8s.io/v1beta1`): the identity a cluster's Azure
//! resources are managed with, and which namespaces may use it (`identity-and-keys.md`). Pure: the
//! agent reads the identity, its Secret and the namespace's labels, and asks [`AzureIdentity::allows`].
//!
//! A cluster names its identity through its AROControlPlane's `spec.identityRef` (CAPZ's AROCluster
//! and AROMachinePool carry none; see [`identity_ref_of`]); the verdict covers all its ARO objects.

use crate::object::{ObjectKey, str_at, text_at};
use crate::selector::{LabelSelector, SelectorError};
use serde_json::Value;
use std::collections::BTreeMap;

/// The API group and kind of an identity.
pub const IDENTITY_GROUP: &str = "infrastructure.cluster.x-k8s.io";
pub const IDENTITY_KIND: &str = "AzureClusterIdentity";
pub const IDENTITY_VERSION: &str = "v1beta1";
/// The key of the identity's Secret that holds the client secret (or the certificate's PEM).
pub const CLIENT_SECRET_KEY: &str = "clientSecret";
/// The condition reason of a cluster whose namespace its identity does not allow.
pub const NOT_ALLOWED_REASON: &str = "NamespaceNotAllowedByIdentity";
/// The condition message of a cluster whose namespace its identity does not allow (CAPZ's words).
pub const NOT_ALLOWED_MESSAGE: &str =
    "AzureClusterIdentity list of allowed namespaces doesn't include current cluster namespace";

/// `spec.type` of an identity. `ManualServicePrincipal` (deprecated) reads as `ServicePrincipal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdentityType {
    ServicePrincipal,
    ServicePrincipalCertificate,
    UserAssignedMSI,
    UserAssignedIdentityCredential,
    WorkloadIdentity,
}

impl IdentityType {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "ServicePrincipal" | "ManualServicePrincipal" => Self::ServicePrincipal,
            "ServicePrincipalCertificate" => Self::ServicePrincipalCertificate,
            "UserAssignedMSI" => Self::UserAssignedMSI,
            "UserAssignedIdentityCredential" => Self::UserAssignedIdentityCredential,
            "WorkloadIdentity" => Self::WorkloadIdentity,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::ServicePrincipal => "ServicePrincipal",
            Self::ServicePrincipalCertificate => "ServicePrincipalCertificate",
            Self::UserAssignedMSI => "UserAssignedMSI",
            Self::UserAssignedIdentityCredential => "UserAssignedIdentityCredential",
            Self::WorkloadIdentity => "WorkloadIdentity",
        }
    }
}

impl std::fmt::Display for IdentityType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `spec.allowedNamespaces`, as the spec reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum AllowedNamespaces {
    /// Field absent (or null): no namespace may use the identity.
    None,
    /// Exactly `{}`: every namespace may.
    All,
    /// A namespace in `list` may; otherwise one whose labels a non-empty `selector` matches.
    /// `list: []` with no selector allows none.
    Rules {
        list: Vec<String>,
        selector: Option<LabelSelector>,
    },
}

impl AllowedNamespaces {
    fn parse(v: Option<&Value>) -> Result<Self, SelectorError> {
        let Some(map) = v.and_then(Value::as_object) else {
            return Ok(Self::None);
        };
        let list = map.get("list").filter(|l| !l.is_null());
        let selector = map.get("selector").filter(|s| !s.is_null());
        if list.is_none() && selector.is_none() {
            return Ok(Self::All);
        }
        let list = list
            .map(|l| crate::object::strings_at(l, ""))
            .unwrap_or_default();
        let selector = match selector {
            Some(s) => Some(LabelSelector::from_json(s)?).filter(|s| !s.is_empty()),
            None => None,
        };
        Ok(Self::Rules { list, selector })
    }

    /// Whether a namespace with `labels` may use the identity.
    pub fn allows(&self, namespace: &str, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Self::None => false,
            Self::All => true,
            Self::Rules { list, selector } => {
                list.iter().any(|n| n == namespace)
                    || selector
                        .as_ref()
                        .is_some_and(|s| s.matches_with(|k| labels.get(k).map(String::as_str)))
            }
        }
    }
}

/// A reference to a Secret.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SecretRef {
    pub namespace: String,
    pub name: String,
}

impl SecretRef {
    pub fn key(&self) -> ObjectKey {
        ObjectKey {
            group: Default::default(),
            version: "v1".into(),
            kind: "Secret".into(),
            namespace: Some(crate::object::Sym::new(&self.namespace)),
            name: self.name.clone(),
        }
    }
}

/// An AzureClusterIdentity, read.
#[derive(Debug, Clone, PartialEq)]
pub struct AzureIdentity {
    pub namespace: String,
    pub name: String,
    pub kind: IdentityType,
    pub tenant_id: String,
    pub client_id: String,
    pub resource_id: Option<String>,
    /// `spec.clientSecret`; its namespace defaults to the identity's.
    pub secret_ref: Option<SecretRef>,
    /// `spec.certPath`: a certificate identity with one reads no Secret.
    pub cert_path: Option<String>,
    pub allowed: AllowedNamespaces,
}

/// An identity that cannot be read or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    #[error("AzureClusterIdentity/{namespace}/{name}: {what}")]
    Invalid {
        namespace: String,
        name: String,
        what: String,
    },
    #[error("{referrer}: its AzureClusterIdentity {namespace}/{name} does not exist")]
    Missing {
        referrer: String,
        namespace: String,
        name: String,
    },
    #[error(
        "AzureClusterIdentity/{namespace}/{name} (type {kind}): its Secret {secret_namespace}/{secret_name} does not exist"
    )]
    SecretMissing {
        namespace: String,
        name: String,
        kind: IdentityType,
        secret_namespace: String,
        secret_name: String,
    },
    #[error(
        "AzureClusterIdentity/{namespace}/{name} (type {kind}): its Secret {secret_namespace}/{secret_name} has no key {key:?}"
    )]
    SecretIncomplete {
        namespace: String,
        name: String,
        kind: IdentityType,
        secret_namespace: String,
        secret_name: String,
        key: &'static str,
    },
    #[error("AzureClusterIdentity/{namespace}/{name} (type {kind}) needs spec.clientSecret")]
    SecretRefMissing {
        namespace: String,
        name: String,
        kind: IdentityType,
    },
}

impl AzureIdentity {
    /// Reads an AzureClusterIdentity object (as served: `spec.type`, `clientID` and `tenantID` are
    /// required).
    pub fn parse(object: &Value) -> Result<Self, IdentityError> {
        let namespace = str_at(object, "/metadata/namespace")
            .unwrap_or_default()
            .to_string();
        let name = str_at(object, "/metadata/name")
            .unwrap_or_default()
            .to_string();
        let invalid = |what: String| IdentityError::Invalid {
            namespace: namespace.clone(),
            name: name.clone(),
            what,
        };
        let kind = match text_at(object, "/spec/type") {
            None => return Err(invalid("spec.type is required".into())),
            Some(t) => IdentityType::parse(t).ok_or_else(|| {
                invalid(format!(
                    "spec.type {t:?} is not one of ServicePrincipal, ServicePrincipalCertificate, \
                     UserAssignedMSI, UserAssignedIdentityCredential, WorkloadIdentity, ManualServicePrincipal"
                ))
            })?,
        };
        let required = |field: &str| {
            text_at(object, &format!("/spec/{field}"))
                .map(str::to_string)
                .ok_or_else(|| invalid(format!("spec.{field} is required")))
        };
        let client_id = required("clientID")?;
        let tenant_id = required("tenantID")?;
        let secret_ref = text_at(object, "/spec/clientSecret/name").map(|n| SecretRef {
            namespace: text_at(object, "/spec/clientSecret/namespace")
                .unwrap_or(&namespace)
                .to_string(),
            name: n.to_string(),
        });
        let allowed = AllowedNamespaces::parse(object.pointer("/spec/allowedNamespaces"))
            .map_err(|e| invalid(format!("spec.allowedNamespaces.selector: {e}")))?;
        Ok(AzureIdentity {
            kind,
            tenant_id,
            client_id,
            resource_id: text_at(object, "/spec/resourceID").map(str::to_string),
            secret_ref,
            cert_path: text_at(object, "/spec/certPath").map(str::to_string),
            allowed,
            namespace,
            name,
        })
    }

    /// Whether a cluster in `namespace`, whose labels are `labels`, may use this identity.
    pub fn allows(&self, namespace: &str, labels: &BTreeMap<String, String>) -> bool {
        self.allowed.allows(namespace, labels)
    }

    /// The identity's object key.
    pub fn key(&self) -> ObjectKey {
        identity_key(&self.namespace, &self.name)
    }

    /// Whether the type reads its credential from the Secret (`clientSecret`): a service
    /// principal, or a certificate without `certPath`.
    pub fn needs_secret(&self) -> bool {
        match self.kind {
            IdentityType::ServicePrincipal => true,
            IdentityType::ServicePrincipalCertificate => self.cert_path.is_none(),
            _ => false,
        }
    }

    /// The Secret to read, when the type needs one: an error when `spec.clientSecret` is absent.
    pub fn required_secret(&self) -> Result<Option<&SecretRef>, IdentityError> {
        if !self.needs_secret() {
            return Ok(None);
        }
        self.secret_ref
            .as_ref()
            .map(Some)
            .ok_or_else(|| IdentityError::SecretRefMissing {
                namespace: self.namespace.clone(),
                name: self.name.clone(),
                kind: self.kind,
            })
    }

    /// Checks the identity's Secret as read (`None`: it does not exist): it must hold
    /// [`CLIENT_SECRET_KEY`] when the type needs one. Never looks at nor names the value.
    pub fn check_secret(&self, secret: Option<&Value>) -> Result<(), IdentityError> {
        let Some(r) = self.required_secret()? else {
            return Ok(());
        };
        let Some(secret) = secret else {
            return Err(IdentityError::SecretMissing {
                namespace: self.namespace.clone(),
                name: self.name.clone(),
                kind: self.kind,
                secret_namespace: r.namespace.clone(),
                secret_name: r.name.clone(),
            });
        };
        let has = |field: &str| {
            secret
                .get(field)
                .and_then(|d| d.get(CLIENT_SECRET_KEY))
                .and_then(Value::as_str)
                .is_some_and(|v| !v.is_empty())
        };
        if has("data") || has("stringData") {
            Ok(())
        } else {
            Err(IdentityError::SecretIncomplete {
                namespace: self.namespace.clone(),
                name: self.name.clone(),
                kind: self.kind,
                secret_namespace: r.namespace.clone(),
                secret_name: r.name.clone(),
                key: CLIENT_SECRET_KEY,
            })
        }
    }
}

/// The identity an AROControlPlane names in `spec.identityRef`, as
/// `(namespace, name)`: the namespace defaults to the referring object's.
pub fn identity_ref_of(referrer: &Value) -> Option<(String, String)> {
    let name = text_at(referrer, "/spec/identityRef/name")?;
    let namespace = text_at(referrer, "/spec/identityRef/namespace")
        .or_else(|| text_at(referrer, "/metadata/namespace"))
        .unwrap_or_default();
    Some((namespace.to_string(), name.to_string()))
}

/// The key of the identity `(namespace, name)`.
pub fn identity_key(namespace: &str, name: &str) -> ObjectKey {
    ObjectKey {
        group: IDENTITY_GROUP.into(),
        version: IDENTITY_VERSION.into(),
        kind: IDENTITY_KIND.into(),
        namespace: Some(namespace.into()),
        name: name.to_string(),
    }
}

/// A namespace object's `metadata.labels`.
pub fn namespace_labels(namespace: &Value) -> BTreeMap<String, String> {
    namespace
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
#[path = "identity_tests.rs"]
mod tests;

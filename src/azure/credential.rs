//! Credentials from an AzureClusterIdentity, built with `azure_identity`, and the one cache of
//! them the process keeps.
//!
//! | identity `spec.type`            | credential                                                   |
//! |---------------------------------|--------------------------------------------------------------|
//! | ServicePrincipal (and Manual…)  | `ClientSecretCredential` (the Secret's `clientSecret`)       |
//! | ServicePrincipalCertificate     | `ClientAssertionCredential` with a ring-signed assertion ([`super::assertion`]) from the PEM in the Secret or `certPath` |
//! | UserAssignedMSI                 | `ManagedIdentityCredential`, by client ID (or resource ID)   |
//! | WorkloadIdentity                | `WorkloadIdentityCredential`, federated token file (`AZURE_FEDERATED_TOKEN_FILE` unless given) |
//! | UserAssignedIdentityCredential  | not supported in this build: a per-cluster error             |
//!
//! The cache is keyed by `{authority host, type, tenant, client, resource ID}` and remembers the
//! SHA-256 of the secret material it was built from: a rotated secret replaces the entry (the old
//! credential, and its tokens, are dropped). Construction errors are never cached; token errors
//! neither (the crate's token cache keeps only tokens). Every caller of one identity shares one
//! credential, whose token cache lets one request through at a time and serves the others the
//! token it got: token requests grow with identities, not clusters.

use super::assertion::{CertificateAssertion, CertificateError, CertificateKey};
use super::endpoints::Endpoints;
use super::secret::SecretMaterial;
use super::transport::HyperTransport;
use crate::identity::{AzureIdentity, IdentityType};
use azure_core::cloud::{CloudConfiguration, CustomConfiguration};
use azure_core::credentials::{AccessToken, Secret, TokenCredential};
use azure_core::http::ClientOptions;
use azure_identity::{
    ClientAssertionCredential, ClientAssertionCredentialOptions, ClientSecretCredential,
    ClientSecretCredentialOptions, ManagedIdentityCredential, ManagedIdentityCredentialOptions,
    UserAssignedId, WorkloadIdentityCredential, WorkloadIdentityCredentialOptions,
};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What a credential is built from: the identity's fields, its secret material and where its
/// cloud's authority is.
#[derive(Debug, Clone)]
pub struct CredentialRequest {
    /// `namespace/name` of the AzureClusterIdentity, for errors.
    pub identity: String,
    pub kind: IdentityType,
    pub tenant_id: String,
    pub client_id: String,
    pub resource_id: Option<String>,
    /// The Secret's `clientSecret` (a client secret, or a certificate's PEM with its key).
    pub secret: Option<SecretMaterial>,
    /// A certificate identity's `certPath`, when it reads no Secret.
    pub cert_path: Option<PathBuf>,
    /// The federated token file of a workload identity; `None`: `AZURE_FEDERATED_TOKEN_FILE`.
    pub federated_token_file: Option<PathBuf>,
    pub endpoints: Endpoints,
}

impl CredentialRequest {
    /// From a parsed identity, the value of its Secret (when it has one) and its cloud's endpoints.
    pub fn from_identity(
        identity: &AzureIdentity,
        secret: Option<SecretMaterial>,
        endpoints: Endpoints,
    ) -> CredentialRequest {
        CredentialRequest {
            identity: format!("{}/{}", identity.namespace, identity.name),
            kind: identity.kind,
            tenant_id: identity.tenant_id.clone(),
            client_id: identity.client_id.clone(),
            resource_id: identity.resource_id.clone(),
            secret,
            cert_path: identity.cert_path.as_ref().map(PathBuf::from),
            federated_token_file: None,
            endpoints,
        }
    }
}

/// Why a credential could not be built or could not get a token. Never carries secret material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    #[error(
        "AzureClusterIdentity/{identity} (type {kind}): no client secret material in its Secret"
    )]
    NoSecret {
        identity: String,
        kind: IdentityType,
    },
    #[error("AzureClusterIdentity/{identity} (type {kind}): {source}")]
    Certificate {
        identity: String,
        kind: IdentityType,
        source: CertificateError,
    },
    #[error("AzureClusterIdentity/{identity}: type {kind} is not supported in this build ({why})")]
    Unsupported {
        identity: String,
        kind: IdentityType,
        why: &'static str,
    },
    #[error(
        "AzureClusterIdentity/{identity} (type {kind}): the credential cannot be built: {message}"
    )]
    Build {
        identity: String,
        kind: IdentityType,
        message: String,
    },
    #[error(
        "AzureClusterIdentity/{identity} (type {kind}, tenant {tenant_id}, client {client_id}): getting a token failed: {message}"
    )]
    Token {
        identity: String,
        kind: IdentityType,
        tenant_id: String,
        client_id: String,
        message: String,
    },
}

/// The part of the key that says which credential; the secret's hash says which version of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Slot {
    authority_host: String,
    kind: IdentityType,
    tenant_id: String,
    client_id: String,
    resource_id: Option<String>,
}

struct Entry {
    secret_sha256: [u8; 32],
    credential: Arc<dyn TokenCredential>,
}

/// The process's credentials, one per identity (see the module's doc).
pub struct CredentialCache {
    transport: HyperTransport,
    entries: Mutex<HashMap<Slot, Entry>>,
}

impl std::fmt::Debug for CredentialCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialCache")
            .field("entries", &self.len())
            .finish_non_exhaustive()
    }
}

/// Removes the secret's text from a library's message, should it ever echo it.
fn scrub_message(message: String, secret: Option<&SecretMaterial>) -> String {
    let text = match secret.and_then(SecretMaterial::expose_str) {
        Some(s) if s.len() >= 4 => message.replace(s, crate::redact::REDACTED),
        _ => message,
    };
    crate::redact::scrub(&text).into_owned()
}

impl CredentialCache {
    pub fn new(transport: HyperTransport) -> CredentialCache {
        CredentialCache {
            transport,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// How many credentials are cached.
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The client options every SDK client of this process uses: our transport, the cloud's
    /// authority host.
    pub fn client_options(&self, endpoints: &Endpoints) -> ClientOptions {
        let mut cloud = CustomConfiguration::default();
        cloud.authority_host = endpoints.authority_host.clone();
        ClientOptions {
            transport: Some(self.transport.sdk_transport()),
            cloud: Some(Arc::new(CloudConfiguration::Custom(cloud))),
            ..Default::default()
        }
    }

    /// The credential of `request`: the cached one when its key and secret match, else a new one
    /// that replaces any older version.
    pub fn credential(
        &self,
        request: &CredentialRequest,
    ) -> Result<Arc<dyn TokenCredential>, CredentialError> {
        let slot = Slot {
            authority_host: request.endpoints.authority_host.clone(),
            kind: request.kind,
            tenant_id: request.tenant_id.clone(),
            client_id: request.client_id.clone(),
            resource_id: request.resource_id.clone(),
        };
        let secret_sha256 = request
            .secret
            .as_ref()
            .map(SecretMaterial::sha256)
            .unwrap_or_default();
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = entries.get(&slot)
            && e.secret_sha256 == secret_sha256
        {
            return Ok(e.credential.clone());
        }
        if let Some(s) = &request.secret {
            s.learn_for_redaction();
        }
        // Built under the lock (no IO): two callers never build the same credential twice.
        let credential = self.build(request)?;
        if entries
            .insert(
                slot,
                Entry {
                    secret_sha256,
                    credential: credential.clone(),
                },
            )
            .is_some()
        {
            tracing::info!(identity = %request.identity, kind = %request.kind, "the identity's secret changed: its credential is rebuilt");
        }
        Ok(credential)
    }

    /// A token for `scope` (e.g. `https://vault.azure.net/.default`) with `request`'s credential.
    pub async fn token(
        &self,
        request: &CredentialRequest,
        scope: &str,
    ) -> Result<AccessToken, CredentialError> {
        let credential = self.credential(request)?;
        credential
            .get_token(&[scope], None)
            .await
            .map_err(|e| CredentialError::Token {
                identity: request.identity.clone(),
                kind: request.kind,
                tenant_id: request.tenant_id.clone(),
                client_id: request.client_id.clone(),
                message: scrub_message(error_chain(&e), request.secret.as_ref()),
            })
    }

    fn build(&self, r: &CredentialRequest) -> Result<Arc<dyn TokenCredential>, CredentialError> {
        let build_error = |e: azure_core::Error| CredentialError::Build {
            identity: r.identity.clone(),
            kind: r.kind,
            message: scrub_message(e.to_string(), r.secret.as_ref()),
        };
        let client_options = self.client_options(&r.endpoints);
        match r.kind {
            IdentityType::ServicePrincipal => {
                let secret = r
                    .secret
                    .as_ref()
                    .and_then(SecretMaterial::expose_str)
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| CredentialError::NoSecret {
                        identity: r.identity.clone(),
                        kind: r.kind,
                    })?;
                let c = ClientSecretCredential::new(
                    &r.tenant_id,
                    r.client_id.clone(),
                    Secret::new(secret.to_string()),
                    Some(ClientSecretCredentialOptions { client_options }),
                )
                .map_err(build_error)?;
                Ok(c)
            }
            IdentityType::ServicePrincipalCertificate => {
                let material = match (&r.secret, &r.cert_path) {
                    (Some(s), _) => s.clone(),
                    (None, Some(path)) => {
                        SecretMaterial::new(std::fs::read(path).map_err(|e| {
                            CredentialError::Build {
                                identity: r.identity.clone(),
                                kind: r.kind,
                                message: format!("reading certPath {}: {e}", path.display()),
                            }
                        })?)
                    }
                    (None, None) => {
                        return Err(CredentialError::NoSecret {
                            identity: r.identity.clone(),
                            kind: r.kind,
                        });
                    }
                };
                let key = CertificateKey::from_pem(&material).map_err(|source| {
                    CredentialError::Certificate {
                        identity: r.identity.clone(),
                        kind: r.kind,
                        source,
                    }
                })?;
                let assertion = CertificateAssertion {
                    key: Arc::new(key),
                    client_id: r.client_id.clone(),
                    token_endpoint: format!(
                        "{}/{}/oauth2/v2.0/token",
                        r.endpoints.authority_host.trim_end_matches('/'),
                        r.tenant_id
                    ),
                };
                let c = ClientAssertionCredential::new(
                    r.tenant_id.clone(),
                    r.client_id.clone(),
                    assertion,
                    Some(ClientAssertionCredentialOptions { client_options }),
                )
                .map_err(build_error)?;
                Ok(c)
            }
            IdentityType::UserAssignedMSI => {
                let id = if !r.client_id.is_empty() {
                    UserAssignedId::ClientId(r.client_id.clone())
                } else if let Some(res) = &r.resource_id {
                    UserAssignedId::ResourceId(res.clone())
                } else {
                    return Err(CredentialError::Build {
                        identity: r.identity.clone(),
                        kind: r.kind,
                        message: "a user-assigned identity needs spec.clientID or spec.resourceID"
                            .into(),
                    });
                };
                let c = ManagedIdentityCredential::new(Some(ManagedIdentityCredentialOptions {
                    user_assigned_id: Some(id),
                    client_options,
                }))
                .map_err(build_error)?;
                Ok(c)
            }
            IdentityType::WorkloadIdentity => {
                let c = WorkloadIdentityCredential::new(Some(WorkloadIdentityCredentialOptions {
                    credential_options: ClientAssertionCredentialOptions { client_options },
                    client_id: Some(r.client_id.clone()),
                    tenant_id: Some(r.tenant_id.clone()),
                    token_file_path: r.federated_token_file.clone(),
                }))
                .map_err(build_error)?;
                Ok(c)
            }
            IdentityType::UserAssignedIdentityCredential => Err(CredentialError::Unsupported {
                identity: r.identity.clone(),
                kind: r.kind,
                why: "it reads an MSI data-plane credentials file, which azure_identity 1.x cannot load",
            }),
        }
    }
}

/// The SDK's error and its causes, each cut to its first line (the SDK appends a troubleshooting
/// link on a line of its own), joined with `: `, repeats left out.
pub(crate) fn error_chain(e: &azure_core::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = current {
        let line = err
            .to_string()
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        if !line.is_empty() && !parts.iter().any(|p| p.contains(&line)) {
            parts.push(line);
        }
        current = err.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::azure::AzureEnvironment;

    #[test]
    fn a_request_never_shows_its_secret() {
        let r = CredentialRequest {
            identity: "ns/id".into(),
            kind: IdentityType::ServicePrincipal,
            tenant_id: "t".into(),
            client_id: "c".into(),
            resource_id: None,
            secret: Some(SecretMaterial::new("debug-planted-secret")),
            cert_path: None,
            federated_token_file: None,
            endpoints: Endpoints::real(AzureEnvironment::AzurePublicCloud),
        };
        assert!(!format!("{r:?}").contains("debug-planted-secret"));
    }

    #[test]
    fn a_message_that_echoes_the_secret_is_scrubbed() {
        let s = SecretMaterial::new("echoed-planted-secret");
        let out = scrub_message("bad value echoed-planted-secret".into(), Some(&s));
        assert_eq!(out, "bad value [redacted]");
    }
}

//! The agent-managed etcd encryption key on the real Key Vault SDK (`identity-and-keys.md`, "Key
//! Vault key for etcd encryption"): [`KeyVaultKeys`] finds the version of a [`KeyTarget`] (a vault
//! and a key) for an AROControlPlane with an `identityRef`. The reconcilers' key manager
//! (`reconcile::aro`, the agent-managed mode) names the vault and key and checks the Vault gate
//! (pure), then asks [`KeyVaultKeys::version`], which
//! 1. takes the version the live HcpOpenShiftCluster already carries, or the one this process
//!    found before (no request at all on a no-op rerun);
//! 2. otherwise gets the key with `azure_security_keyvault_keys`' `KeyClient` (vault URL
//!    `https://<vault>.<dns suffix>/`, the identity's credential, the agent's transport), creates
//!    an RSA 2048 key when it is absent (404 `KeyNotFound`), and takes the version from the key
//!    id: get and create, 2 requests at most per cluster (plus the SDK's bearer challenge, once
//!    per vault client).
//!
//! 429 (its `Retry-After`), 5xx and timeouts are retried inside the key step by the SDK pipeline
//! with [`crate::retry::KEY_VAULT`]: the cluster waits, the other units' passes go on in their workers.
//! A 403 is the unit's error naming the vault and the identity (never a secret). What was found is
//! a [`KeyLookup`]; the reconcilers turn it into the key's state.
//!
//! The identity's credential and the cloud's endpoints come from an [`AccessSource`] (the agent's
//! identities and credential cache; tests give their own).

pub mod access;

use crate::azure::{AzureEnvironment, Endpoints};
use crate::object::str_at;
use crate::retry::RetryPlan;
use azure_core::credentials::TokenCredential;
use azure_core::http::{ClientOptions, RetryOptions, StatusCode};
use azure_security_keyvault_keys::models::{CreateKeyParameters, Key, KeyType};
use azure_security_keyvault_keys::{KeyClient, KeyClientOptions};
use futures::future::BoxFuture;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// How an AROControlPlane reaches Key Vault: its identity's credential and its cloud's endpoints.
#[derive(Clone)]
pub struct VaultAccess {
    pub credential: Arc<dyn TokenCredential>,
    pub endpoints: Endpoints,
    /// The SDK client options of the process (its transport); the retry policy is the key
    /// step's own.
    pub options: ClientOptions,
    /// The identity as messages name it (kind, namespace/name, client ID): never its secret.
    pub identity: String,
}

/// Resolves the access of an AROControlPlane (its `identityRef`, its `spec.azureEnvironment`).
/// An error is a message naming the object and what is wrong, without any secret.
pub trait AccessSource: Send + Sync {
    fn access<'a>(&'a self, acp: &'a Value) -> BoxFuture<'a, Result<VaultAccess, String>>;
}

/// The vault and key of one HcpOpenShiftCluster's customer-managed KMS.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyTarget {
    /// The vault's Azure name (its host is `<vault>.<dns suffix>`).
    pub vault: String,
    /// The key's name in the vault.
    pub key: String,
}

/// What [`KeyVaultKeys::version`] found out about a key, for the reconcilers to turn into its
/// state. Every text is scrubbed of anything that looks like a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyLookup {
    /// The key's version.
    Version(String),
    /// Key Vault refused `identity` (403); `detail` is the service's message.
    Denied { identity: String, detail: String },
    /// Throttled, failing or timing out after the retries.
    Transient(String),
    /// Any other failure (no access, no client, an answer that cannot be read).
    Error(String),
}

/// What a key step found out, before it becomes a state.
#[derive(Debug)]
enum Outcome {
    Version(String),
    Denied(String),
    /// Throttled, failing or timing out after the retries.
    Transient(String),
    Error(String),
}

impl Outcome {
    fn scrubbed(self) -> Outcome {
        match self {
            Outcome::Version(v) => Outcome::Version(v),
            Outcome::Denied(d) => Outcome::Denied(scrub(&d)),
            Outcome::Transient(d) => Outcome::Transient(scrub(&d)),
            Outcome::Error(d) => Outcome::Error(scrub(&d)),
        }
    }
}

fn scrub(text: &str) -> String {
    crate::redact::scrub(text).into_owned()
}

/// A vault client per (vault URL, credential): the challenge and the token are per client.
type ClientKey = (String, usize);

/// (cloud, vault name, key name).
type KeyId = (String, String, String);

/// One lock per key (see [`KeyVaultKeys::flight`]).
type Flights = HashMap<KeyId, Arc<tokio::sync::Mutex<()>>>;

/// The agent-managed keys (see the module header).
pub struct KeyVaultKeys {
    access: Arc<dyn AccessSource>,
    retry: RetryPlan,
    /// Versions found in this process, by (cloud, vault, key).
    known: Mutex<HashMap<KeyId, String>>,
    clients: Mutex<HashMap<ClientKey, Arc<KeyClient>>>,
    /// One key step at a time per key: two clusters sharing a key create it once.
    flights: Mutex<Flights>,
}

impl KeyVaultKeys {
    pub fn new(access: Arc<dyn AccessSource>) -> KeyVaultKeys {
        KeyVaultKeys {
            access,
            retry: crate::retry::KEY_VAULT,
            known: Mutex::default(),
            clients: Mutex::default(),
            flights: Mutex::default(),
        }
    }

    /// Retries with `plan` instead of the default.
    pub fn with_retry(mut self, plan: RetryPlan) -> KeyVaultKeys {
        self.retry = plan;
        self
    }

    fn remember(&self, id: &KeyId, version: &str) {
        self.known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.clone(), version.to_string());
    }

    fn recall(&self, id: &KeyId) -> Option<String> {
        self.known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
    }

    fn client(&self, url: &str, access: &VaultAccess) -> Result<Arc<KeyClient>, String> {
        let id = (
            url.to_string(),
            Arc::as_ptr(&access.credential) as *const () as usize,
        );
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = clients.get(&id) {
            return Ok(c.clone());
        }
        let options = KeyClientOptions {
            client_options: ClientOptions {
                retry: RetryOptions::custom(Arc::new(crate::azure::retry_policy::PlanPolicy::new(
                    self.retry,
                ))),
                ..access.options.clone()
            },
            ..Default::default()
        };
        let client = KeyClient::new(url, access.credential.clone(), Some(options))
            .map(Arc::new)
            .map_err(|e| format!("the Key Vault client for {url} could not be built: {e}"))?;
        clients.insert(id, client.clone());
        Ok(client)
    }

    fn flight(&self, id: &KeyId) -> Arc<tokio::sync::Mutex<()>> {
        self.flights
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(id.clone())
            .or_default()
            .clone()
    }

    /// The version of `target` for the AROControlPlane `acp`: `live`, the version the live
    /// HcpOpenShiftCluster already carries (remembered, no request), else the one this process
    /// found before, else what Key Vault says (the key is created when absent).
    pub async fn version(&self, acp: &Value, target: &KeyTarget, live: Option<&str>) -> KeyLookup {
        // Known already: on the live HcpOpenShiftCluster (an earlier run), or in this process.
        let cloud = str_at(acp, "/spec/azureEnvironment")
            .and_then(|e| AzureEnvironment::parse(Some(e)).ok())
            .unwrap_or_default();
        let id = (
            cloud.name().to_string(),
            target.vault.clone(),
            target.key.clone(),
        );
        if let Some(v) = live {
            self.remember(&id, v);
            return KeyLookup::Version(v.to_string());
        }
        if let Some(v) = self.recall(&id) {
            return KeyLookup::Version(v);
        }
        let flight = self.flight(&id);
        let _one = flight.lock().await;
        if let Some(v) = self.recall(&id) {
            return KeyLookup::Version(v);
        }
        let access = match self.access.access(acp).await {
            Ok(a) => a,
            Err(e) => return KeyLookup::Error(scrub(&e)),
        };
        let url = access.endpoints.vault_url(&target.vault);
        let client = match self.client(&url, &access) {
            Ok(c) => c,
            Err(e) => return KeyLookup::Error(e),
        };
        // A library's or a service's words, scrubbed of anything that looks like a secret.
        match get_or_create(&client, target).await.scrubbed() {
            Outcome::Version(v) => {
                tracing::info!(vault = %target.vault, key = %target.key, version = %v, "encryption key ready");
                self.remember(&id, &v);
                KeyLookup::Version(v)
            }
            Outcome::Denied(detail) => {
                tracing::warn!(vault = %target.vault, key = %target.key, identity = %access.identity, "Key Vault refused the identity (403)");
                KeyLookup::Denied {
                    identity: access.identity,
                    detail,
                }
            }
            Outcome::Transient(detail) => {
                tracing::warn!(vault = %target.vault, key = %target.key, %detail, "Key Vault still failing after retries");
                KeyLookup::Transient(detail)
            }
            Outcome::Error(detail) => KeyLookup::Error(detail),
        }
    }
}

/// What an SDK error says, in the user's words: status and Key Vault error code (the body is not
/// repeated: it carries nothing the code does not).
fn describe(e: &azure_core::Error) -> String {
    match e.kind() {
        azure_core::error::ErrorKind::HttpResponse {
            status, error_code, ..
        } => format!(
            "HTTP {} {}",
            u16::from(*status),
            error_code.as_deref().unwrap_or("")
        )
        .trim_end()
        .to_string(),
        azure_core::error::ErrorKind::Io | azure_core::error::ErrorKind::Connection => {
            format!("the request failed or timed out ({e})")
        }
        azure_core::error::ErrorKind::Credential => {
            format!("no token for the identity ({e})")
        }
        _ => e.to_string(),
    }
}

/// The `error.message` of a Key Vault error body (it names the caller and the permission, never
/// a secret).
fn service_message(e: &azure_core::Error) -> Option<String> {
    let azure_core::error::ErrorKind::HttpResponse {
        raw_response: Some(raw),
        ..
    } = e.kind()
    else {
        return None;
    };
    let body: Value = serde_json::from_slice(raw.body().as_ref()).ok()?;
    body.pointer("/error/message")
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn classify(e: &azure_core::Error) -> Outcome {
    let detail = describe(e);
    match e.http_status() {
        Some(StatusCode::Forbidden) => Outcome::Denied(service_message(e).unwrap_or_default()),
        Some(s) if s == StatusCode::TooManyRequests || s == StatusCode::RequestTimeout => {
            Outcome::Transient(detail)
        }
        Some(s) if u16::from(s) >= 500 => Outcome::Transient(detail),
        None if matches!(
            e.kind(),
            azure_core::error::ErrorKind::Io | azure_core::error::ErrorKind::Connection
        ) =>
        {
            Outcome::Transient(detail)
        }
        _ => Outcome::Error(detail),
    }
}

fn is_key_not_found(e: &azure_core::Error) -> bool {
    matches!(e.kind(), azure_core::error::ErrorKind::HttpResponse { status, error_code, .. }
        if *status == StatusCode::NotFound && error_code.as_deref().is_none_or(|c| c == "KeyNotFound"))
}

fn version_of(key: &Key, target: &KeyTarget) -> Outcome {
    let kid = key
        .key
        .as_ref()
        .and_then(|k| k.kid.as_deref())
        .unwrap_or("");
    match key_version(kid) {
        Some(v) => Outcome::Version(v.to_string()),
        None => Outcome::Error(format!(
            "Key Vault answered for key '{}' without a versioned key id ({kid:?})",
            target.key
        )),
    }
}

/// The version of a key id `https://<vault host>/keys/<name>/<version>`: its last path segment.
pub fn key_version(key_id: &str) -> Option<&str> {
    let rest = key_id.split_once("://").map_or(key_id, |(_, r)| r);
    let path = rest.split(['?', '#']).next().unwrap_or("");
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        [_host, "keys", _name, version] => Some(version),
        _ => None,
    }
}

/// Get the key; if it is absent, create an RSA 2048 key. The version of its key id.
async fn get_or_create(client: &KeyClient, target: &KeyTarget) -> Outcome {
    let found = match client.get_key(&target.key, None).await {
        Ok(r) => r.into_model(),
        Err(e) if is_key_not_found(&e) => {
            tracing::info!(vault = %target.vault, key = %target.key, "encryption key absent: creating an RSA 2048 key");
            let params = CreateKeyParameters {
                kty: Some(KeyType::Rsa),
                key_size: Some(2048),
                ..Default::default()
            };
            let body = match params.try_into() {
                Ok(b) => b,
                Err(e) => return Outcome::Error(describe(&e)),
            };
            match client.create_key(&target.key, body, None).await {
                Ok(r) => r.into_model(),
                Err(e) => return classify(&e),
            }
        }
        Err(e) => return classify(&e),
    };
    match found {
        Ok(key) => version_of(&key, target),
        Err(e) => Outcome::Error(format!(
            "Key Vault's answer could not be read: {}",
            describe(&e)
        )),
    }
}

#[cfg(test)]
mod tests;

//! The simulator's Key Vault keys API: what the `azure_security_keyvault_keys` client sends to
//! `https://<vault>.<dns suffix>/`, answered the way Key Vault answers it, so the agent runs the
//! real SDK code against the loopback HTTPS endpoint (`handler`: the wire protocol).
//!
//! - Every vault host is served; the vault is the first label of the host name. Keys live in
//!   memory per vault for the simulator's life.
//! - A request without a bearer token gets the 401 challenge (`WWW-Authenticate: Bearer
//!   authorization="<authority>/<tenant>", resource="https://<dns suffix>"`). The resource is the
//!   request's host minus the vault label, so the SDK's challenge check (the vault host must end
//!   with `.<resource host>`) passes for any suffix the simulator is given, without turning the
//!   check off.
//! - Who calls is what the simulated token endpoint says of the bearer token (it issued it, for
//!   the vaults' resource, and it has not expired); anything else gets the challenge again.
//! - Faults on request, per vault ([`VaultPlan`]), consumed one per authenticated request:
//!   429 with `Retry-After`, any 5xx. Tests set them with [`KeyVaults::plan`]; the demo with the
//!   Vault's annotation [`FAULTS_ANNOTATION`] (see [`KeyVaults::configure_vault`]).
//! - 403 when the vault does not allow the caller: a client ID the plan denies (tests, or the
//!   annotation [`DENY_ANNOTATION`]), or, for a Vault that uses access policies
//!   (`enableRbacAuthorization` not true and `accessPolicies` given), a caller no policy names
//!   (by `applicationId` or `objectId`) with the key permission the operation needs.
//! - Every request the keys API answers counts as a Key Vault request (the simulator's
//!   `AzureRequestCounts`); the 401 challenges count apart ([`KeyVaults::challenges`]): the SDK
//!   sends one per vault client before its first real request, so they say how many vault
//!   clients were made, not how much work the vaults did.

mod handler;
#[cfg(test)]
mod tests;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The ASO group of `Vault`.
pub const KEY_VAULT_GROUP: &str = "keyvault.azure.com";

/// Annotation on a Vault ASO resource: faults its simulated data plane answers, in order, one per
/// request, e.g. `429:2,503,500` (a 429 with `Retry-After: 2`, then a 503, then a 500).
pub const FAULTS_ANNOTATION: &str = "aro-gitops.dev/simulate-keyvault-faults";

/// Annotation on a Vault ASO resource: client IDs (comma-separated) its simulated data plane
/// refuses with 403.
pub const DENY_ANNOTATION: &str = "aro-gitops.dev/simulate-keyvault-deny";

/// The caller a bearer token stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub tenant: String,
    pub client_id: String,
}

/// What the token endpoint says of a bearer token: its caller, or `None` (not a token it
/// issued for the vaults, or expired).
pub type TokenCheck<'a> = &'a (dyn Fn(&str) -> Option<Caller> + Send + Sync);

/// A fault a vault answers with instead of serving the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// 429 with `Retry-After: <seconds>`.
    Throttle { retry_after_secs: u64 },
    /// This 5xx status.
    Status(u16),
}

/// Who may use a vault's keys (access-policy mode): client or object IDs, each with the key
/// permissions it has (lowercase, e.g. `get`, `create`).
pub type AccessPolicies = BTreeMap<String, BTreeSet<String>>;

/// What one vault does besides serving: its faults and whom it refuses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VaultPlan {
    pub faults: VecDeque<Fault>,
    /// Client IDs refused with 403.
    pub denied: BTreeSet<String>,
    /// `Some`: only the callers named here, with these permissions (access-policy mode).
    pub policies: Option<AccessPolicies>,
}

impl VaultPlan {
    /// Parses [`FAULTS_ANNOTATION`]'s value; `None` when a part is not a fault.
    pub fn parse_faults(text: &str) -> Option<VecDeque<Fault>> {
        text.split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| match p.split_once(':') {
                Some(("429", secs)) => secs.trim().parse().ok().map(|s| Fault::Throttle {
                    retry_after_secs: s,
                }),
                Some(_) => None,
                None if p == "429" => Some(Fault::Throttle {
                    retry_after_secs: 1,
                }),
                None => p
                    .parse::<u16>()
                    .ok()
                    .filter(|s| (500..600).contains(s))
                    .map(Fault::Status),
            })
            .collect()
    }

    /// The plan a Vault ASO resource asks for: its annotations and its access policies.
    pub fn of_vault(vault: &Value) -> VaultPlan {
        let annotation = |name: &str| {
            vault
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(name))
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        let faults = VaultPlan::parse_faults(annotation(FAULTS_ANNOTATION)).unwrap_or_default();
        let denied = annotation(DENY_ANNOTATION)
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        let props = vault.pointer("/spec/properties");
        let rbac = props
            .and_then(|p| p.get("enableRbacAuthorization"))
            .and_then(Value::as_bool)
            == Some(true);
        let policies = props
            .and_then(|p| p.get("accessPolicies"))
            .and_then(Value::as_array)
            .filter(|l| !rbac && !l.is_empty())
            .map(|list| {
                let mut out = AccessPolicies::new();
                for p in list {
                    let perms: BTreeSet<String> = p
                        .pointer("/permissions/keys")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(str::to_ascii_lowercase)
                        .collect();
                    for id in ["applicationId", "objectId"] {
                        if let Some(id) = p.get(id).and_then(Value::as_str) {
                            out.entry(id.to_string())
                                .or_default()
                                .extend(perms.iter().cloned());
                        }
                    }
                }
                out
            });
        VaultPlan {
            faults,
            denied,
            policies,
        }
    }

    /// Whether `client_id` may use `permission` on the vault.
    fn allows(&self, client_id: &str, permission: &str) -> bool {
        if self.denied.contains(client_id) {
            return false;
        }
        match &self.policies {
            None => true,
            Some(p) => p
                .get(client_id)
                .is_some_and(|perms| perms.contains(permission) || perms.contains("all")),
        }
    }
}

/// One version of a key.
#[derive(Debug, Clone)]
struct KeyVersion {
    version: String,
    kty: String,
    /// The RSA modulus (fake but well-formed: 256 bytes for 2048 bits, top bit set, odd).
    n: Vec<u8>,
    ops: Vec<String>,
    created: i64,
}

#[derive(Debug, Default)]
struct Vault {
    /// Versions of each key, oldest first.
    keys: BTreeMap<String, Vec<KeyVersion>>,
    plan: VaultPlan,
    /// The fault annotation last taken (faults are taken again only when it changes).
    faults_seen: Option<String>,
}

#[derive(Default)]
struct State {
    vaults: HashMap<String, Vault>,
}

/// The simulated Key Vaults (shared: cloning gives another handle on the same vaults).
#[derive(Clone, Default)]
pub struct KeyVaults {
    state: Arc<Mutex<State>>,
    challenges: Arc<AtomicU64>,
}

impl KeyVaults {
    /// Requests answered with the 401 bearer challenge (the SDK's first request to each vault
    /// client): not counted as Key Vault requests, see [`KeyVaults::answer`].
    pub fn challenges(&self) -> u64 {
        self.challenges.load(Ordering::Relaxed)
    }

    /// Changes the plan of `vault` (created if new).
    pub fn plan(&self, vault: &str, change: impl FnOnce(&mut VaultPlan)) {
        let mut state = self.state.lock().expect("key vault state");
        change(&mut state.vaults.entry(vault.to_string()).or_default().plan);
    }

    /// Takes a Vault ASO resource's plan (its annotations and access policies) for the vault it
    /// stands for (`spec.azureName`, else its name). Faults are replaced only when the
    /// annotation changed, so a fault plan is consumed once per value.
    pub fn configure_vault(&self, vault: &Value) {
        let name = vault
            .pointer("/spec/azureName")
            .or_else(|| vault.pointer("/metadata/name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if name.is_empty() {
            return;
        }
        let wanted = VaultPlan::of_vault(vault);
        let mut state = self.state.lock().expect("key vault state");
        let v = state.vaults.entry(name.to_string()).or_default();
        let faults_text = vault
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(FAULTS_ANNOTATION))
            .and_then(Value::as_str)
            .map(str::to_string);
        if v.faults_seen != faults_text {
            v.plan.faults = wanted.faults;
            v.faults_seen = faults_text;
        }
        v.plan.denied = wanted.denied;
        v.plan.policies = wanted.policies;
    }

    /// The versions of `key` in `vault`, oldest first (for tests and the demo).
    pub fn versions(&self, vault: &str, key: &str) -> Vec<String> {
        let state = self.state.lock().expect("key vault state");
        state
            .vaults
            .get(vault)
            .and_then(|v| v.keys.get(key))
            .map(|l| l.iter().map(|k| k.version.clone()).collect())
            .unwrap_or_default()
    }
}

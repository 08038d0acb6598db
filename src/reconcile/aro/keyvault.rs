//! The agent-managed etcd encryption key (`identity-and-keys.md`, "Key Vault key for etcd
//! encryption"): the pure half. Which vault and key an HcpOpenShiftCluster names, whether the
//! agent manages them, the Vault gate (declared in the AROCluster's `spec.resources` and Ready),
//! and the `EncryptionKeyReady` states of each step. The Key Vault calls themselves live in
//! `crate::keyvault` (IO at the edge), which answers a [`crate::keyvault::KeyLookup`];
//! `managed_keys` turns it into one of the states built here.

use super::conditions::Condition;
use super::keys::{ENCRYPTION_KEY_READY, KMS_POINTER, KeyState};
use super::world::{aro_cluster, find};
use crate::keyvault::KeyTarget;
use crate::object::str_at;
use crate::reconcile::readiness::aso_readiness;
use serde_json::Value;

/// The key name CAPZ uses when `kms.activeKey.name` is not given.
pub const DEFAULT_KEY_NAME: &str = "etcd-data-kms-encryption-key";

/// The API version whose KMS settings carry the vault name at `kms.vaultName`.
const VAULT_NAME_AT_KMS: &str = "v1api20251223preview";

/// Whether the agent manages the key of `hcp`: it configures customer-managed KMS and the
/// AROControlPlane `acp` names an identity to reach the vault with.
pub fn agent_managed(acp: &Value, hcp: &Value) -> bool {
    crate::validate::filled::agent_manages_key(acp, hcp)
}

/// The version part of `apiVersion` (`group/version` → `version`).
fn api_version(obj: &Value) -> &str {
    let api = str_at(obj, "/apiVersion").unwrap_or("");
    api.rsplit('/').next().unwrap_or(api)
}

fn non_empty<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    str_at(v, pointer).filter(|s| !s.is_empty())
}

/// The vault and key `hcp` names: the vault at `kms.activeKey.vaultName` (`v1api20240610preview`)
/// or `kms.vaultName` (`v1api20251223preview`, as ASO's CRD has it; an unknown version is read at
/// either), the key at `kms.activeKey.name` (default
/// [`DEFAULT_KEY_NAME`]). Without a vault name, the error to report.
pub fn kms_target(hcp: &Value) -> Result<KeyTarget, KeyState> {
    let kms = hcp.pointer(KMS_POINTER).unwrap_or(&Value::Null);
    let at_kms = non_empty(kms, "/vaultName");
    let at_key = non_empty(kms, "/activeKey/vaultName");
    let (vault, field) = match api_version(hcp) {
        VAULT_NAME_AT_KMS => (at_kms, "kms.vaultName"),
        "v1api20240610preview" => (at_key, "kms.activeKey.vaultName"),
        _ => (at_key.or(at_kms), "kms.activeKey.vaultName"),
    };
    let Some(vault) = vault else {
        return Err(failed(
            "VaultNameMissing",
            format!(
                "spec.properties.etcd.dataEncryption.customerManaged.{field} is not set: \
                 name the Key Vault that holds the etcd encryption key"
            ),
        ));
    };
    Ok(KeyTarget {
        vault: vault.to_string(),
        key: non_empty(kms, "/activeKey/name")
            .unwrap_or(DEFAULT_KEY_NAME)
            .to_string(),
    })
}

/// The Vault entry of the AROCluster's `spec.resources` that is the vault `vault` (its
/// `spec.azureName`, else its `metadata.name`).
pub fn declared_vault<'a>(arocluster: &'a Value, vault: &str) -> Option<&'a Value> {
    arocluster
        .pointer("/spec/resources")?
        .as_array()?
        .iter()
        .filter(|r| str_at(r, "/kind") == Some("Vault"))
        .find(|r| {
            non_empty(r, "/spec/azureName").or_else(|| non_empty(r, "/metadata/name"))
                == Some(vault)
        })
}

/// The gate before the key step: the AROCluster of `acp`'s cluster (as in git when the unit
/// renders it) declares the vault and the live Vault is Ready. Otherwise the state to report:
/// `WaitingForVault`, or the error `VaultNotDeclared` naming what to declare.
pub fn vault_gate(acp: &Value, target: &KeyTarget, live: &[Value]) -> Result<(), KeyState> {
    let vault = &target.vault;
    let Some(cluster) = aro_cluster(acp, live) else {
        return Err(pending(
            "WaitingForVault",
            format!("Waiting for the AROCluster that declares Key Vault '{vault}'"),
        ));
    };
    let cluster_name = str_at(cluster, "/metadata/name").unwrap_or("");
    let Some(entry) = declared_vault(cluster, vault) else {
        return Err(failed(
            "VaultNotDeclared",
            format!(
                "Key Vault '{vault}' must be declared in AROCluster.spec.resources[] \
                 (AROCluster {cluster_name}: a Vault with spec.azureName '{vault}')"
            ),
        ));
    };
    let name = str_at(entry, "/metadata/name").unwrap_or(vault);
    let ready = find(live, acp, "Vault", name).is_some_and(|v| aso_readiness(v).is_ready());
    if !ready {
        return Err(pending(
            "WaitingForVault",
            format!("Waiting for Key Vault '{vault}' (Vault {name}) to be ready"),
        ));
    }
    Ok(())
}

/// The version the live HcpOpenShiftCluster `hcp_name` (in `acp`'s namespace) carries for
/// `target`, if any: what an earlier run found (its vault and key unchanged).
pub fn live_version<'a>(
    acp: &Value,
    hcp_name: &str,
    target: &KeyTarget,
    live: &'a [Value],
) -> Option<&'a str> {
    let hcp = find(live, acp, crate::kinds::HCP_CLUSTER, hcp_name)?;
    let found = kms_target(hcp).ok()?;
    if &found != target {
        return None;
    }
    let kms = hcp.pointer(KMS_POINTER)?;
    non_empty(kms, "/activeKey/version")
}

/// An HcpOpenShiftCluster as a plan or a drift report compares it: when git gives its KMS key no
/// version and the live one carries a version for the same vault and key, that version is the one
/// the agent found or made (and injects on every pass), so it stands; anything else as it is.
pub fn as_planned(mut desired: Value, live: Option<&Value>) -> Value {
    if str_at(&desired, "/kind") != Some(crate::kinds::HCP_CLUSTER) {
        return desired;
    }
    let Some(live) = live else { return desired };
    let Some(kms) = desired.pointer(KMS_POINTER) else {
        return desired;
    };
    if non_empty(kms, "/activeKey/version").is_some() || kms_target(&desired) != kms_target(live) {
        return desired;
    }
    let Some(version) = live
        .pointer(KMS_POINTER)
        .and_then(|k| non_empty(k, "/activeKey/version"))
        .map(str::to_string)
    else {
        return desired;
    };
    if let Some(key) = desired
        .pointer_mut(KMS_POINTER)
        .and_then(|k| k.get_mut("activeKey"))
        .and_then(Value::as_object_mut)
    {
        key.insert("version".into(), Value::String(version));
    }
    desired
}

/// `hcp` (an HcpOpenShiftCluster as in git) with `version` in place as its KMS key's version:
/// what the agent applies once it knows the version.
pub fn with_key_version(hcp: &Value, version: &str) -> Value {
    let mut filled = hcp.clone();
    if let Some(kms) = filled
        .pointer_mut(KMS_POINTER)
        .and_then(Value::as_object_mut)
    {
        let key = kms
            .entry("activeKey")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(key) = key.as_object_mut() {
            key.insert("version".into(), Value::String(version.to_string()));
        }
    }
    filled
}

/// The key state once the HcpOpenShiftCluster `hcp` (as in git) is checked against the cluster's
/// schema with the version the agent fills in already in place: `check` returns the schema's
/// problems of an object (messages that quote no value). A known version the agent injects whose
/// object the schema refuses is `KeyVersionRefused` (the HcpOpenShiftCluster is held, the unit
/// reports why); every other state is returned as it is (a version not known yet holds the object
/// anyway, and a user's own version was checked with the render).
pub fn checked_with_version(
    hcp: &Value,
    state: KeyState,
    check: impl FnOnce(&Value) -> Vec<String>,
) -> KeyState {
    let KeyState::Known {
        version,
        inject: true,
        ..
    } = &state
    else {
        return state;
    };
    let problems = check(&with_key_version(hcp, version));
    if problems.is_empty() {
        return state;
    }
    failed(
        "KeyVersionRefused",
        format!(
            "HcpOpenShiftCluster {} with its key version '{version}' filled in is refused by the \
             cluster's schema: {}",
            str_at(hcp, "/metadata/name").unwrap_or(""),
            problems.join("; ")
        ),
    )
}

/// When the HcpOpenShiftCluster `hcp` (as a plan compares it: after [`as_planned`]) leaves its key
/// version to the agent and does not carry it yet, the field and where the agent gets it: what a
/// plan says instead of showing a version it cannot know (no vault, or no key yet).
pub fn unknown_version(acp: &Value, hcp: &Value) -> Option<(String, String)> {
    if crate::validate::filled::filled_by_agent(acp, hcp).is_empty() {
        return None;
    }
    let reason = match kms_target(hcp) {
        Ok(t) => format!(
            "the agent gets it from key '{}' in Key Vault '{}' (creating the key when absent) once \
             the Vault is ready, and fills it in before it applies the HcpOpenShiftCluster",
            t.key, t.vault
        ),
        Err(state) => state
            .condition()
            .map(|c| c.message.clone())
            .unwrap_or_default(),
    };
    Some((
        crate::validate::filled::KEY_VERSION_FIELD.to_string(),
        reason,
    ))
}

fn pending(reason: &str, message: String) -> KeyState {
    KeyState::Pending {
        condition: Condition::new(ENCRYPTION_KEY_READY, "False", reason, message),
    }
}

fn failed(reason: &str, message: String) -> KeyState {
    KeyState::Failed {
        condition: Condition::new(ENCRYPTION_KEY_READY, "False", reason, message),
    }
}

/// The key is known: inject `version`, report `KeyReady`.
pub fn key_ready(target: &KeyTarget, version: &str) -> KeyState {
    KeyState::Known {
        version: version.to_string(),
        inject: true,
        condition: Condition::new(
            ENCRYPTION_KEY_READY,
            "True",
            "KeyReady",
            format!(
                "Encryption key '{}' version '{version}' ready in vault '{}'",
                target.key, target.vault
            ),
        ),
    }
}

/// The key step did not finish (still throttled, the service failing or timing out after the
/// retries): `CreatingKey` with what happened, reported as the unit's error so the unit is
/// tried again after its backoff.
pub fn creating_key(target: &KeyTarget, detail: &str) -> KeyState {
    failed(
        "CreatingKey",
        format!(
            "Getting or creating encryption key '{}' in vault '{}': {detail}; retrying",
            target.key, target.vault
        ),
    )
}

/// The identity may not use the vault (403): an error naming the vault and the identity (never
/// its secret).
pub fn access_denied(target: &KeyTarget, identity: &str, detail: &str) -> KeyState {
    failed(
        "KeyVaultAccessDenied",
        format!(
            "identity {identity} is not allowed to get or create key '{}' in Key Vault '{}' \
             (403 Forbidden{}): grant it the keys get and create permissions on the vault",
            target.key,
            target.vault,
            if detail.is_empty() {
                String::new()
            } else {
                format!(": {detail}")
            }
        ),
    )
}

/// Any other failure of the key step (the identity, its credential, the vault's answer).
pub fn key_error(target: &KeyTarget, message: &str) -> KeyState {
    failed(
        "KeyVaultError",
        format!(
            "encryption key '{}' in vault '{}': {message}",
            target.key, target.vault
        ),
    )
}

#[cfg(test)]
#[path = "keyvault_tests.rs"]
mod tests;

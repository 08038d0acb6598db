//! The etcd encryption key of an HcpOpenShiftCluster: the seam between whoever knows the key
//! version and the pure AROControlPlane decision.
//!
//! A [`KeyManager`] looks at the HcpOpenShiftCluster an AROControlPlane embeds (as in git) and
//! says where its key stands, as a [`KeyState`]. The agent asks it once per pass, before any
//! decision (IO at the edge), and hands the state to the decision, which
//! - reports the state's `EncryptionKeyReady` condition,
//! - injects the version at `spec.properties.etcd.dataEncryption.customerManaged.kms.activeKey.version`
//!   when the state says so (a different version the user wrote is an incompatible value),
//! - holds the HcpOpenShiftCluster while the version is not known ([`KeyState::Pending`]).
//!
//! Two implementations: [`ManualKeys`], the user gives the version in git (no `identityRef`
//! on the AROControlPlane; `aro-reconcilers.md`, "Encryption key"), and the agent-managed mode
//! (`identity-and-keys.md`: get or create the key in the Vault through the AROControlPlane's
//! `identityRef`), `crate::keyvault::KeyVaultKeys` (`managed_keys`): its
//! [`KeyManager::key_state`] future has the Key Vault edge do the calls (with their retries and
//! its cache) and returns `Pending`
//! (`WaitingForVault`), `Failed` (`VaultNameMissing`, `VaultNotDeclared`, `CreatingKey` after
//! the retries, `KeyVaultAccessDenied`, `KeyVaultError`) or `Known { inject: true }`
//! (`KeyReady`); the pure steps are in
//! [`super::keyvault`]. The decision consumes states, never calls out.

use super::conditions::Condition;
use futures::future::BoxFuture;
use serde_json::Value;

/// Where the HcpOpenShiftCluster's KMS key path is, in its spec.
pub use crate::validate::filled::KMS_POINTER;

/// Condition type the AROControlPlane reports the key under.
pub const ENCRYPTION_KEY_READY: &str = "EncryptionKeyReady";

/// Where the key of one HcpOpenShiftCluster stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyState {
    /// No KMS configured: no condition, no injection, no gate.
    NotConfigured,
    /// The version is known. `inject`: the agent found it and writes it into the
    /// HcpOpenShiftCluster; otherwise the user's own value stands.
    Known {
        version: String,
        inject: bool,
        condition: Condition,
    },
    /// The version is not known yet: the HcpOpenShiftCluster is not applied.
    Pending { condition: Condition },
    /// The key step failed in a way a person must look at (a vault not declared, the vault
    /// refused the identity, the service kept failing): held like `Pending`, and the unit reports
    /// the condition's message as its error (so it is retried with the unit's backoff).
    Failed { condition: Condition },
}

impl KeyState {
    /// The `EncryptionKeyReady` condition to report, when KMS is configured.
    pub fn condition(&self) -> Option<&Condition> {
        match self {
            KeyState::NotConfigured => None,
            KeyState::Known { condition, .. }
            | KeyState::Pending { condition }
            | KeyState::Failed { condition } => Some(condition),
        }
    }

    /// Whether the HcpOpenShiftCluster waits for the key (its version is not known).
    pub fn holds(&self) -> Option<&Condition> {
        match self {
            KeyState::Pending { condition } | KeyState::Failed { condition } => Some(condition),
            _ => None,
        }
    }
}

/// Knows the etcd encryption key of the clusters (see the module header).
pub trait KeyManager: Send + Sync {
    /// The key state of `hcp` (the HcpOpenShiftCluster entry of `acp`'s `spec.resources`, as in
    /// git) for the AROControlPlane `acp`; `live`: the live objects of the unit (its Vault, the
    /// HcpOpenShiftCluster as last applied), its AROClusters as in git (what they declare).
    fn key_state<'a>(
        &'a self,
        acp: &'a Value,
        hcp: &'a Value,
        live: &'a [Value],
    ) -> BoxFuture<'a, KeyState>;
}

/// Manual key management: the user writes the key version in git; the agent validates it.
#[derive(Debug, Clone, Copy, Default)]
pub struct ManualKeys;

impl KeyManager for ManualKeys {
    fn key_state<'a>(
        &'a self,
        _acp: &'a Value,
        hcp: &'a Value,
        _live: &'a [Value],
    ) -> BoxFuture<'a, KeyState> {
        Box::pin(std::future::ready(manual_key_state(hcp)))
    }
}

/// The manual-mode state of `hcp`: `activeKey` missing → `ActiveKeyMissing`, its version empty →
/// `KeyVersionMissing` (both Pending: the version is not known), else Unknown
/// `ManualKeyManagement` (the user's version stands).
pub fn manual_key_state(hcp: &Value) -> KeyState {
    let Some(kms) = hcp.pointer(KMS_POINTER) else {
        return KeyState::NotConfigured;
    };
    let t = ENCRYPTION_KEY_READY;
    let Some(key) = kms.get("activeKey") else {
        return KeyState::Pending {
            condition: Condition::new(
                t,
                "False",
                "ActiveKeyMissing",
                "spec.properties.etcd.dataEncryption.customerManaged.kms.activeKey is not set",
            ),
        };
    };
    let text = |f: &str| key.get(f).and_then(Value::as_str).unwrap_or("");
    if text("version").is_empty() {
        return KeyState::Pending {
            condition: Condition::new(
                t,
                "False",
                "KeyVersionMissing",
                "the KMS active key has no version; give the key version to use",
            ),
        };
    }
    KeyState::Known {
        version: text("version").to_string(),
        inject: false,
        condition: Condition::new(
            t,
            "Unknown",
            "ManualKeyManagement",
            format!(
                "Encryption key '{}' version '{}' is managed by the user",
                text("name"),
                text("version")
            ),
        ),
    }
}

#[cfg(test)]
#[allow(clippy::type_complexity)] // tables of tuples
mod tests {
    use super::*;
    use serde_json::json;

    fn hcp(kms: Option<Value>) -> Value {
        let mut h = json!({"kind": "HcpOpenShiftCluster", "metadata": {"name": "h"}, "spec": {"properties": {}}});
        if let Some(k) = kms {
            h["spec"]["properties"]["etcd"] =
                json!({"dataEncryption": {"customerManaged": {"kms": k}}});
        }
        h
    }

    #[test]
    fn manual_mode_table() {
        let cases: Vec<(&str, Value, Option<(&str, &str)>, bool)> = vec![
            ("no kms", hcp(None), None, false),
            (
                "no active key",
                hcp(Some(json!({}))),
                Some(("False", "ActiveKeyMissing")),
                true,
            ),
            (
                "no version",
                hcp(Some(json!({"activeKey": {"name": "k", "vaultName": "v"}}))),
                Some(("False", "KeyVersionMissing")),
                true,
            ),
            (
                "empty version",
                hcp(Some(json!({"activeKey": {"name": "k", "version": ""}}))),
                Some(("False", "KeyVersionMissing")),
                true,
            ),
            (
                "version given",
                hcp(Some(json!({"activeKey": {"name": "k", "version": "abc"}}))),
                Some(("Unknown", "ManualKeyManagement")),
                false,
            ),
        ];
        for (name, input, want, pending) in cases {
            let state = manual_key_state(&input);
            let got = state.condition().map(|c| (c.status, c.reason.as_str()));
            assert_eq!(got, want, "case {name}");
            assert_eq!(
                matches!(state, KeyState::Pending { .. }),
                pending,
                "case {name}"
            );
            if let Some(c) = state.condition() {
                assert_eq!(c.type_, ENCRYPTION_KEY_READY, "case {name}");
            }
        }
        let KeyState::Known {
            version,
            inject,
            condition,
        } = manual_key_state(&hcp(Some(
            json!({"activeKey": {"name": "k", "version": "abc"}}),
        )))
        else {
            panic!("known")
        };
        assert_eq!((version.as_str(), inject), ("abc", false));
        assert_eq!(
            condition.message,
            "Encryption key 'k' version 'abc' is managed by the user"
        );
    }

    #[tokio::test]
    async fn the_manual_manager_is_the_pure_state() {
        let h = hcp(Some(json!({"activeKey": {"name": "k"}})));
        let keys: &dyn KeyManager = &ManualKeys;
        assert_eq!(
            keys.key_state(&json!({}), &h, &[]).await,
            manual_key_state(&h)
        );
    }
}

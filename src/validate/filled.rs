//! Fields the agent fills in itself, which git leaves out: the version of the etcd encryption key
//! when the agent manages the key (an AROControlPlane with an `identityRef` whose
//! HcpOpenShiftCluster configures customer-managed KMS). The agent finds or creates the key in Key
//! Vault during a pass and writes the version into the HcpOpenShiftCluster before it checks that
//! object against the cluster's schema and applies it (`crate::agent::pass::reconcilers`); until then, a
//! schema that requires the field (ASO's does) must not fail the render for leaving it out.

use serde_json::Value;

/// Where the HcpOpenShiftCluster's KMS settings are, in its spec.
pub const KMS_POINTER: &str = "/spec/properties/etcd/dataEncryption/customerManaged/kms";

/// Where the key version is, under [`KMS_POINTER`].
pub const KEY_VERSION_AT_KMS: &str = "/activeKey/version";

/// The key version's field as messages name it.
pub const KEY_VERSION_FIELD: &str =
    "spec.properties.etcd.dataEncryption.customerManaged.kms.activeKey.version";

/// Whether the agent manages the key of `hcp` (an HcpOpenShiftCluster): it configures
/// customer-managed KMS and the AROControlPlane `acp` names an identity to reach the vault with.
pub fn agent_manages_key(acp: &Value, hcp: &Value) -> bool {
    hcp.pointer(KMS_POINTER).is_some_and(|k| !k.is_null())
        && acp
            .pointer("/spec/identityRef")
            .is_some_and(|r| !r.is_null())
}

/// The JSON pointers (within the entry `entry` of `owner`'s `spec.resources`) of the fields the
/// agent fills in and git leaves out: a schema's `Required` at one of them is not an error of the
/// render.
pub fn filled_by_agent(owner: &Value, entry: &Value) -> Vec<String> {
    let is = |v: &Value, kind: &str| v.get("kind").and_then(Value::as_str) == Some(kind);
    if !is(owner, "AROControlPlane")
        || !is(entry, "HcpOpenShiftCluster")
        || !agent_manages_key(owner, entry)
    {
        return Vec::new();
    }
    let version = format!("{KMS_POINTER}{KEY_VERSION_AT_KMS}");
    let given = entry
        .pointer(&version)
        .and_then(Value::as_str)
        .is_some_and(|v| !v.is_empty());
    if given { Vec::new() } else { vec![version] }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hcp(kms: Value) -> Value {
        json!({"kind": "HcpOpenShiftCluster", "metadata": {"name": "h"},
            "spec": {"properties": {"etcd": {"dataEncryption": {"customerManaged": {"kms": kms}}}}}})
    }

    #[test]
    fn only_an_agent_managed_key_without_a_version_is_filled_in() {
        let acp = json!({"kind": "AROControlPlane", "spec": {"identityRef": {"name": "id"}}});
        let manual = json!({"kind": "AROControlPlane", "spec": {}});
        let no_version = hcp(json!({"activeKey": {"name": "k", "vaultName": "v"}}));
        let version = format!("{KMS_POINTER}{KEY_VERSION_AT_KMS}");
        assert_eq!(filled_by_agent(&acp, &no_version), vec![version.clone()]);
        let empty = hcp(json!({"activeKey": {"name": "k", "vaultName": "v", "version": ""}}));
        assert_eq!(filled_by_agent(&acp, &empty), vec![version]);
        assert!(
            filled_by_agent(&manual, &no_version).is_empty(),
            "manual mode"
        );
        let given = hcp(json!({"activeKey": {"name": "k", "vaultName": "v", "version": "abc"}}));
        assert!(filled_by_agent(&acp, &given).is_empty());
        let no_kms = json!({"kind": "HcpOpenShiftCluster", "spec": {"properties": {}}});
        assert!(filled_by_agent(&acp, &no_kms).is_empty());
        let mut pool = no_version.clone();
        pool["kind"] = json!("HcpOpenShiftClustersNodePool");
        assert!(filled_by_agent(&acp, &pool).is_empty());
    }
}

use super::super::fixtures::*;
use super::super::keys::manual_key_state;
use super::*;
use serde_json::{Value, json};

fn hcp(api: &str, kms: Value) -> Value {
    json!({"apiVersion": format!("redhatopenshift.azure.com/{api}"), "kind": "HcpOpenShiftCluster",
        "metadata": {"name": "dev", "namespace": NS},
        "spec": {"properties": {"etcd": {"dataEncryption": {"customerManaged": {"kms": kms}}}}}})
}

fn reason(state: &KeyState) -> &str {
    state.condition().map(|c| c.reason.as_str()).unwrap_or("")
}

fn target(vault: &str, key: &str) -> KeyTarget {
    KeyTarget {
        vault: vault.into(),
        key: key.into(),
    }
}

#[test]
fn vault_and_key_names_follow_the_api_version() {
    let both = json!({"vaultName": "at-kms", "activeKey": {"vaultName": "at-key", "name": "k"}});
    let cases = [
        ("v1api20240610preview", "at-key"),
        ("v1api20251223preview", "at-kms"),
        ("v1api20990101", "at-key"),
    ];
    for (api, want) in cases {
        assert_eq!(
            kms_target(&hcp(api, both.clone())),
            Ok(target(want, "k")),
            "{api}"
        );
    }
    // The key name defaults to CAPZ's.
    let plain = hcp("v1api20251223preview", json!({"vaultName": "v"}));
    assert_eq!(kms_target(&plain), Ok(target("v", DEFAULT_KEY_NAME)));
    // An unknown version is read at either place.
    let at_kms = hcp("v1api20990101", json!({"vaultName": "v"}));
    assert_eq!(kms_target(&at_kms).unwrap().vault, "v");
}

#[test]
fn a_missing_vault_name_names_the_field_of_the_version() {
    let old = kms_target(&hcp("v1api20240610preview", json!({"vaultName": "v"}))).unwrap_err();
    assert_eq!(reason(&old), "VaultNameMissing");
    assert!(
        old.condition()
            .unwrap()
            .message
            .contains("customerManaged.kms.activeKey.vaultName is not set")
    );
    let new = kms_target(&hcp(
        "v1api20251223preview",
        json!({"activeKey": {"vaultName": "v"}}),
    ))
    .unwrap_err();
    assert!(new.condition().unwrap().message.contains("kms.vaultName"));
}

#[test]
fn only_kms_with_an_identity_is_agent_managed() {
    let with_kms = hcp("v1api20240610preview", json!({}));
    let mut acp = control_plane_obj(&[]);
    assert!(!agent_managed(&acp, &with_kms), "no identityRef");
    acp["spec"]["identityRef"] = json!({"kind": "AzureClusterIdentity", "name": "id"});
    assert!(agent_managed(&acp, &with_kms));
    let no_kms = json!({"spec": {"properties": {}}});
    assert!(!agent_managed(&acp, &no_kms));
}

#[test]
fn the_vault_is_matched_by_azure_name_else_metadata_name() {
    let mut ac = aro_cluster_obj(&[("Vault", "dev-kv"), ("Vault", "other")]);
    ac["spec"]["resources"][1]["spec"]["azureName"] = json!("real-name");
    assert!(declared_vault(&ac, "dev-kv").is_some());
    assert_eq!(
        declared_vault(&ac, "real-name").unwrap()["metadata"]["name"],
        "other"
    );
    assert!(declared_vault(&ac, "other").is_none(), "azureName wins");
    assert!(declared_vault(&ac, "nope").is_none());
}

#[test]
fn the_vault_gate() {
    let mut acp = control_plane_obj(&[("HcpOpenShiftCluster", "dev")]);
    acp["spec"]["identityRef"] = json!({"name": "id"});
    let t = target("dev-kv", "k");
    let ac = aro_cluster_obj(&[("ResourceGroup", "rg"), ("Vault", "dev-kv")]);
    let undeclared = aro_cluster_obj(&[("ResourceGroup", "rg")]);
    let cases: Vec<(&str, Vec<Value>, &str)> = vec![
        ("no AROCluster", vec![], "WaitingForVault"),
        (
            "not declared",
            vec![undeclared.clone(), aso("Vault", "dev-kv", Ready::Yes)],
            "VaultNotDeclared",
        ),
        ("not live", vec![ac.clone()], "WaitingForVault"),
        (
            "not ready",
            vec![ac.clone(), aso("Vault", "dev-kv", Ready::No)],
            "WaitingForVault",
        ),
        (
            "ready",
            vec![ac.clone(), aso("Vault", "dev-kv", Ready::Yes)],
            "",
        ),
    ];
    for (name, live, want) in cases {
        let got = vault_gate(&acp, &t, &live).err();
        assert_eq!(got.as_ref().map(reason).unwrap_or(""), want, "{name}");
    }
    let err = vault_gate(&acp, &t, &[undeclared]).unwrap_err();
    let message = &err.condition().unwrap().message;
    assert!(
        message.contains("Key Vault 'dev-kv' must be declared in AROCluster.spec.resources[]"),
        "{message}"
    );
    assert!(matches!(err, KeyState::Failed { .. }), "a user error");
}

#[test]
fn the_live_version_counts_only_for_the_same_vault_and_key() {
    let acp = control_plane_obj(&[]);
    let mut live = hcp(
        "v1api20240610preview",
        json!({"activeKey": {"vaultName": "v", "name": "k", "version": "abc"}}),
    );
    let t = target("v", "k");
    assert_eq!(
        live_version(&acp, "dev", &t, std::slice::from_ref(&live)),
        Some("abc")
    );
    assert_eq!(
        live_version(&acp, "dev", &target("w", "k"), std::slice::from_ref(&live)),
        None
    );
    assert_eq!(
        live_version(&acp, "other", &t, std::slice::from_ref(&live)),
        None
    );
    live["spec"]["properties"]["etcd"]["dataEncryption"]["customerManaged"]["kms"]["activeKey"]["version"] =
        json!("");
    assert_eq!(live_version(&acp, "dev", &t, &[live]), None);
}

#[test]
fn the_states_of_the_key_step() {
    let t = target("dev-kv", "etcd-key");
    let KeyState::Known {
        version,
        inject,
        condition,
    } = key_ready(&t, "abc123")
    else {
        panic!("known")
    };
    assert_eq!((version.as_str(), inject), ("abc123", true));
    assert_eq!(
        (condition.status, condition.reason.as_str()),
        ("True", "KeyReady")
    );
    assert_eq!(
        condition.message,
        "Encryption key 'etcd-key' version 'abc123' ready in vault 'dev-kv'"
    );
    assert_eq!(reason(&creating_key(&t, "throttled")), "CreatingKey");
    let denied = access_denied(&t, "AzureClusterIdentity aro-dev/id (client ID c1)", "");
    assert_eq!(reason(&denied), "KeyVaultAccessDenied");
    assert!(matches!(denied, KeyState::Failed { .. }));
    let m = &denied.condition().unwrap().message;
    assert!(
        m.contains("'dev-kv'") && m.contains("aro-dev/id") && m.contains("403"),
        "{m}"
    );
}

#[test]
fn a_plan_takes_the_live_version_of_an_unversioned_key_only() {
    let key = |v: Option<&str>, vault: &str| {
        let mut k = json!({"name": "k", "vaultName": vault});
        if let Some(v) = v {
            k["version"] = json!(v);
        }
        hcp("v1api20240610preview", json!({"activeKey": k}))
    };
    let live = key(Some("0123abcd"), "kv");
    let planned = as_planned(key(None, "kv"), Some(&live));
    assert_eq!(planned, live, "git has no version: the live one stands");
    let given = key(Some("ffff"), "kv");
    assert_eq!(
        as_planned(given.clone(), Some(&live)),
        given,
        "git's version wins"
    );
    let moved = key(None, "other-kv");
    assert_eq!(
        as_planned(moved.clone(), Some(&live)),
        moved,
        "another vault: no version"
    );
    assert_eq!(as_planned(key(None, "kv"), None), key(None, "kv"));
}

/// The version the agent fills in is in place before the HcpOpenShiftCluster is checked against
/// the cluster's schema: a schema requiring it (as ASO's does) accepts the injected object, and a
/// schema refusing the object with the version in place holds it with `KeyVersionRefused`.
#[test]
fn the_schema_check_sees_the_injected_version() {
    let git = hcp(
        "v1api20240610preview",
        json!({"activeKey": {"name": "k", "vaultName": "v"}}),
    );
    let known = key_ready(&target("v", "k"), "0123abcd");
    let seen = std::cell::RefCell::new(Value::Null);
    let requires_version = |o: &Value| {
        *seen.borrow_mut() = o.clone();
        match o.pointer(&format!("{KMS_POINTER}/activeKey/version")) {
            Some(Value::String(_)) => vec![],
            _ => vec!["/spec/.../activeKey/version: Required value".to_string()],
        }
    };
    let state = checked_with_version(&git, known.clone(), requires_version);
    assert_eq!(state, known, "accepted with the version in place");
    assert_eq!(
        seen.borrow().pointer(&format!("{KMS_POINTER}/activeKey")),
        Some(&json!({"name": "k", "vaultName": "v", "version": "0123abcd"}))
    );
    // Without the injection, the same schema would refuse it.
    assert!(!requires_version(&git).is_empty());

    let refused = checked_with_version(&git, known.clone(), |_| vec!["/spec/x: Too long".into()]);
    assert_eq!(reason(&refused), "KeyVersionRefused");
    assert!(refused.holds().is_some(), "the HcpOpenShiftCluster is held");
    assert!(
        refused
            .condition()
            .unwrap()
            .message
            .contains("/spec/x: Too long"),
        "{refused:?}"
    );

    // Nothing to inject: nothing checked here (the render was).
    let pending = checked_with_version(
        &git,
        KeyState::Pending {
            condition: Condition::new(ENCRYPTION_KEY_READY, "False", "WaitingForVault", "w"),
        },
        |_| panic!("not checked"),
    );
    assert_eq!(reason(&pending), "WaitingForVault");
    let manual = manual_key_state(&with_key_version(&git, "u"));
    assert_eq!(
        checked_with_version(&git, manual.clone(), |_| panic!("not checked")),
        manual
    );
}

/// A plan says where the version will come from instead of showing one it cannot know.
#[test]
fn a_version_not_known_yet_is_said_so() {
    let acp = json!({"kind": "AROControlPlane", "spec": {"identityRef": {"name": "id"}}});
    let mut git = hcp(
        "v1api20240610preview",
        json!({"activeKey": {"name": "k", "vaultName": "v"}}),
    );
    let (field, reason) = unknown_version(&acp, &git).expect("not known");
    assert_eq!(
        field,
        "spec.properties.etcd.dataEncryption.customerManaged.kms.activeKey.version"
    );
    assert!(reason.contains("key 'k' in Key Vault 'v'"), "{reason}");
    let live = with_key_version(&git, "abc");
    assert_eq!(
        unknown_version(&acp, &as_planned(git.clone(), Some(&live))),
        None
    );
    let manual = json!({"kind": "AROControlPlane", "spec": {}});
    assert_eq!(unknown_version(&manual, &git), None);
    git["spec"]["properties"]["etcd"]["dataEncryption"]["customerManaged"]["kms"]["activeKey"]
        .as_object_mut()
        .unwrap()
        .remove("vaultName");
    let (_, reason) = unknown_version(&acp, &git).expect("not known");
    assert!(
        reason.contains("activeKey.vaultName is not set"),
        "{reason}"
    );
}

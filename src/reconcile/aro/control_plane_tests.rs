//! Tables for the AROControlPlane decision: its gates (infrastructure, key, ExternalAuth),
//! `EncryptionKeyReady` and `ExternalAuthReady`, terminal errors and pause; the other conditions
//! and the mutators are in `control_plane_condition_tests.rs`.

use super::super::fixtures::*;
use super::super::keys::manual_key_state;
use super::*;

pub const HCP: &str = "HcpOpenShiftCluster";
pub const EA: &str = "HcpOpenShiftClustersExternalAuth";

pub fn acp() -> Value {
    control_plane_obj(&[(HCP, "hcp"), (EA, "auth")])
}

/// The world of a cluster whose infrastructure (one ResourceGroup) is ready.
pub fn ready_infra(mut live: Vec<Value>) -> Vec<Value> {
    live.push(aro_cluster_obj(&[("ResourceGroup", "rg")]));
    live.push(aso("ResourceGroup", "rg", Ready::Yes));
    live
}

pub fn decide(desired: &Value, live: Vec<Value>) -> Decision {
    decide_control_plane(
        desired,
        &with_owner(desired, live),
        &KeyState::NotConfigured,
        "t",
    )
}

fn applied_names(d: &Decision) -> Vec<&str> {
    d.applies
        .iter()
        .map(|a| a["metadata"]["name"].as_str().unwrap())
        .collect()
}

pub fn hcp_live(ready: Ready) -> Value {
    let mut h = aso(HCP, "hcp", ready);
    h["status"]["id"] = json!("/subscriptions/0/hcp");
    h["status"]["properties"] = json!({"api": {"url": "https://api.dev:443"}, "console": {"url": "https://console.dev"}, "version": {"id": "4.20.0"}});
    h
}

#[test]
fn the_infrastructure_gate_table() {
    let not_ready = vec![
        aro_cluster_obj(&[("ResourceGroup", "rg"), ("VirtualNetwork", "vnet")]),
        aso("ResourceGroup", "rg", Ready::Yes),
        aso("VirtualNetwork", "vnet", Ready::No),
    ];
    // (case, world, held reason/message or None)
    let rows: Vec<(&str, Vec<Value>, Option<(&str, &str)>)> = vec![
        (
            "no AROCluster",
            vec![],
            Some((
                "WaitingForInfrastructure",
                "Waiting for the AROCluster of cluster dev",
            )),
        ),
        (
            "infrastructure not ready",
            not_ready,
            Some((
                "WaitingForInfrastructure",
                "Waiting for infrastructure resources: 1/2 ready",
            )),
        ),
        ("infrastructure ready", ready_infra(vec![]), None),
        (
            "an AROCluster with no resources counts as ready",
            vec![aro_cluster_obj(&[])],
            None,
        ),
    ];
    for (name, live, want) in rows {
        let d = decide(&acp(), live);
        match want {
            Some((reason, message)) => {
                assert!(
                    d.applies.is_empty(),
                    "case {name}: nothing applied before the gate"
                );
                assert_eq!(d.held.len(), 2, "case {name}");
                for h in &d.held {
                    assert_eq!(
                        (h.reason.as_str(), h.message.as_str()),
                        (reason, message),
                        "case {name}"
                    );
                }
                assert!(d.record_owned_kinds.is_none(), "case {name}");
            }
            None => assert_eq!(
                applied_names(&d),
                ["hcp"],
                "case {name}: the ExternalAuth waits"
            ),
        }
    }
    // Held on the AROCluster when there is one.
    let d = decide(&acp(), vec![aro_cluster_obj(&[("ResourceGroup", "rg")])]);
    assert_eq!(d.held[0].on[0].to_string(), "AROCluster/aro-dev/dev");
}

#[test]
fn the_external_auth_deferral_table() {
    let mine_ready = owned_by(aso(NODE_POOL_KIND, "np", Ready::Yes), "hcp");
    let mine_not_ready = owned_by(aso(NODE_POOL_KIND, "np", Ready::No), "hcp");
    let theirs_ready = owned_by(aso(NODE_POOL_KIND, "other-np", Ready::Yes), "other-hcp");
    let auth_live = owned_by(aso(EA, "auth", Ready::No), "hcp");
    // (case, world, ExternalAuth applied, ExternalAuthReady)
    let rows: Vec<(&str, Vec<Value>, bool, (&str, &str, &str))> = vec![
        (
            "no node pool",
            vec![],
            false,
            (
                "False",
                "WaitingForNodePool",
                "ExternalAuth creation deferred until at least one node pool is ready",
            ),
        ),
        (
            "a node pool of this cluster, not ready",
            vec![mine_not_ready.clone()],
            false,
            (
                "False",
                "WaitingForNodePool",
                "ExternalAuth creation deferred until at least one node pool is ready",
            ),
        ),
        (
            "a Ready node pool of another cluster does not release it",
            vec![theirs_ready],
            false,
            (
                "False",
                "WaitingForNodePool",
                "ExternalAuth creation deferred until at least one node pool is ready",
            ),
        ),
        (
            "a Ready node pool of this cluster",
            vec![mine_ready],
            true,
            ("False", "Provisioning", "ExternalAuth is not yet created"),
        ),
        (
            "an existing ExternalAuth is kept",
            vec![mine_not_ready.clone(), auth_live],
            true,
            ("False", "Reconciling", "ExternalAuth is not yet ready"),
        ),
        (
            "mirrors the ExternalAuth once it exists",
            vec![mine_not_ready, owned_by(aso(EA, "auth", Ready::Yes), "hcp")],
            true,
            ("True", "Succeeded", ""),
        ),
    ];
    for (name, live, applied, cond) in rows {
        let d = decide(&acp(), ready_infra(live));
        assert_eq!(applied_names(&d).contains(&"auth"), applied, "case {name}");
        if !applied {
            let h = d.held.iter().find(|h| h.key.name == "auth").expect("held");
            assert_eq!(h.reason, "WaitingForNodePool", "case {name}");
        } else {
            let a = d
                .applies
                .iter()
                .find(|a| a["metadata"]["name"] == "auth")
                .unwrap();
            assert_eq!(
                a["spec"]["owner"]["name"], "hcp",
                "case {name}: owner mutator"
            );
        }
        assert_cond(&d.status, "ExternalAuthReady", cond.0, cond.1, cond.2);
    }
    // Held on this cluster's node pools when they exist.
    let d = decide(
        &acp(),
        ready_infra(vec![owned_by(aso(NODE_POOL_KIND, "np", Ready::No), "hcp")]),
    );
    let h = d.held.iter().find(|h| h.key.name == "auth").unwrap();
    assert_eq!(
        h.on.iter().map(|k| k.name.as_str()).collect::<Vec<_>>(),
        ["np"]
    );
    // No ExternalAuth embedded: no condition.
    let d = decide(&control_plane_obj(&[(HCP, "hcp")]), ready_infra(vec![]));
    assert!(cond(&d.status, "ExternalAuthReady").is_none());
}

const NODE_POOL_KIND: &str = "HcpOpenShiftClustersNodePool";

fn with_kms(kms: Value) -> Value {
    let mut d = control_plane_obj(&[(HCP, "hcp")]);
    d["spec"]["resources"][0]["spec"]["properties"] =
        json!({"etcd": {"dataEncryption": {"customerManaged": {"kms": kms}}}});
    d
}

#[test]
fn the_key_gate_and_encryption_key_ready_table() {
    let injected = KeyState::Known {
        version: "v2".into(),
        inject: true,
        condition: Condition::new(
            "EncryptionKeyReady",
            "True",
            "KeyReady",
            "Encryption key 'k' version 'v2' ready in vault 'kv'",
        ),
    };
    let waiting = KeyState::Pending {
        condition: Condition::new(
            "EncryptionKeyReady",
            "False",
            "WaitingForVault",
            "vault kv is not ready",
        ),
    };
    let no_key = with_kms(json!({}));
    let no_version = with_kms(json!({"activeKey": {"name": "k"}}));
    let manual = with_kms(json!({"activeKey": {"name": "k", "version": "v1"}}));
    let managed = with_kms(json!({"activeKey": {"name": "k", "vaultName": "kv"}}));
    let conflicting = manual.clone();
    let plain = control_plane_obj(&[(HCP, "hcp")]);
    // (case, desired, state, HCP applied, EncryptionKeyReady, injected version)
    type Row<'a> = (
        &'a str,
        &'a Value,
        KeyState,
        bool,
        Option<(&'a str, &'a str)>,
        Option<&'a str>,
    );
    let rows: Vec<Row> = vec![
        ("no KMS", &plain, KeyState::NotConfigured, true, None, None),
        (
            "manual, no active key",
            &no_key,
            manual_key_state(&no_key["spec"]["resources"][0]),
            false,
            Some(("False", "ActiveKeyMissing")),
            None,
        ),
        (
            "manual, no version",
            &no_version,
            manual_key_state(&no_version["spec"]["resources"][0]),
            false,
            Some(("False", "KeyVersionMissing")),
            None,
        ),
        (
            "manual, version given",
            &manual,
            manual_key_state(&manual["spec"]["resources"][0]),
            true,
            Some(("Unknown", "ManualKeyManagement")),
            Some("v1"),
        ),
        (
            "managed, waiting",
            &managed,
            waiting,
            false,
            Some(("False", "WaitingForVault")),
            None,
        ),
        (
            "managed, the vault refused: held like waiting",
            &managed,
            KeyState::Failed {
                condition: Condition::new(
                    "EncryptionKeyReady",
                    "False",
                    "KeyVaultAccessDenied",
                    "identity x is not allowed in Key Vault 'kv'",
                ),
            },
            false,
            Some(("False", "KeyVaultAccessDenied")),
            None,
        ),
        (
            "managed, known: injected",
            &managed,
            injected.clone(),
            true,
            Some(("True", "KeyReady")),
            Some("v2"),
        ),
    ];
    for (name, desired, state, applied, key_cond, version) in rows {
        let d = decide_control_plane(
            desired,
            &with_owner(desired, ready_infra(vec![])),
            &state,
            "t",
        );
        assert!(d.error.is_none(), "case {name}: {:?}", d.error);
        assert_eq!(applied_names(&d) == ["hcp"], applied, "case {name}");
        match key_cond {
            Some((s, r)) => {
                let c = cond(&d.status, "EncryptionKeyReady").expect("EncryptionKeyReady");
                assert_eq!(
                    (c["status"].as_str(), c["reason"].as_str()),
                    (Some(s), Some(r)),
                    "case {name}"
                );
            }
            None => assert!(
                cond(&d.status, "EncryptionKeyReady").is_none(),
                "case {name}"
            ),
        }
        if !applied {
            assert_eq!(d.held[0].key.name, "hcp", "case {name}");
            assert_eq!(d.held[0].reason, key_cond.unwrap().1, "case {name}");
        }
        if let Some(v) = version {
            let hcp = &d.applies[0];
            assert_eq!(
                hcp.pointer(
                    "/spec/properties/etcd/dataEncryption/customerManaged/kms/activeKey/version"
                )
                .and_then(Value::as_str),
                Some(v),
                "case {name}"
            );
        }
    }
    // The user wrote another version than the one the agent found.
    let d = decide_control_plane(
        &conflicting,
        &with_owner(&conflicting, ready_infra(vec![])),
        &injected,
        "t",
    );
    assert_eq!(
        d.error.unwrap().to_string(),
        "AROControlPlane/aro-dev/dev: incompatible value: value at spec.resources[0].spec.properties.etcd.dataEncryption.customerManaged.kms.activeKey.version set by user to \"v1\" but must be \"v2\""
    );
}

#[test]
fn terminal_errors_table() {
    let mut owner_conflict = acp();
    owner_conflict["spec"]["resources"][1]["spec"]["owner"] = json!({"name": "another"});
    let mut no_name = control_plane_obj(&[(HCP, "hcp")]);
    no_name["spec"]["resources"][0]["metadata"] = json!({});
    let rows: Vec<(&str, Value, &str)> = vec![
        (
            "empty resources",
            control_plane_obj(&[]),
            "AROControlPlane/aro-dev/dev: spec.resources must not be empty",
        ),
        (
            "no HcpOpenShiftCluster",
            control_plane_obj(&[("ResourceGroup", "rg")]),
            "AROControlPlane/aro-dev/dev: spec.resources must hold exactly one HcpOpenShiftCluster; it holds 0",
        ),
        (
            "two HcpOpenShiftClusters",
            control_plane_obj(&[(HCP, "a"), (HCP, "b")]),
            "AROControlPlane/aro-dev/dev: spec.resources must hold exactly one HcpOpenShiftCluster; it holds 2",
        ),
        (
            "a name with microsoft",
            control_plane_obj(&[(HCP, "hcp"), ("Vault", "Microsoft-kv")]),
            "AROControlPlane/aro-dev/dev: spec.resources[1]: metadata.name \"Microsoft-kv\" must not contain \"microsoft\" or \"windows\"",
        ),
        (
            "a name with windows",
            control_plane_obj(&[(HCP, "my-windows-hcp")]),
            "AROControlPlane/aro-dev/dev: spec.resources[0]: metadata.name \"my-windows-hcp\" must not contain \"microsoft\" or \"windows\"",
        ),
        (
            "no name",
            no_name,
            "AROControlPlane/aro-dev/dev: spec.resources[0]: metadata.name is required",
        ),
        (
            "ExternalAuth owner conflict",
            owner_conflict,
            "AROControlPlane/aro-dev/dev: incompatible value: value at spec.resources[1].spec.owner.name set by user to \"another\" but must be \"hcp\"",
        ),
    ];
    for (name, desired, message) in rows {
        let d = decide(
            &desired,
            ready_infra(vec![hcp_live(Ready::Yes), secret("dev-kubeconfig")]),
        );
        assert_eq!(
            d.error.as_ref().map(|e| e.to_string()).as_deref(),
            Some(message),
            "case {name}"
        );
        assert!(
            d.applies.is_empty() && d.deletions.is_empty() && d.record_owned_kinds.is_none(),
            "case {name}"
        );
        assert_eq!(d.status["ready"], false, "case {name}");
    }
}

#[test]
fn a_paused_cluster_applies_with_skip_and_a_conflicting_policy_is_an_error() {
    let mut paused = capi("dev", Some("AROControlPlane"));
    paused["spec"]["paused"] = json!(true);
    let d = decide(
        &control_plane_obj(&[(HCP, "hcp")]),
        ready_infra(vec![paused.clone()]),
    );
    assert_eq!(
        d.applies[0]["metadata"]["annotations"]["serviceoperator.azure.com/reconcile-policy"],
        "skip"
    );
    let mut manage = control_plane_obj(&[(HCP, "hcp")]);
    manage["spec"]["resources"][0]["metadata"]["annotations"] =
        json!({"serviceoperator.azure.com/reconcile-policy": "manage"});
    let d = decide(&manage, ready_infra(vec![paused]));
    assert_eq!(
        d.error.unwrap().to_string(),
        "AROControlPlane/aro-dev/dev: incompatible value: value at spec.resources[0].metadata.annotations.serviceoperator.azure.com/reconcile-policy set by user to \"manage\" but must be \"skip\""
    );
    // Not paused: the user's policy stands.
    let d = decide(&manage, ready_infra(vec![]));
    assert!(d.error.is_none());
}

#[test]
fn not_live_yet_everything_waits_for_the_owner() {
    let d = decide_control_plane(&acp(), &ready_infra(vec![]), &KeyState::NotConfigured, "t");
    assert!(d.applies.is_empty());
    assert_eq!(d.held.len(), 2);
    assert!(d.held.iter().all(|h| h.reason == "WaitingForOwner"));
}

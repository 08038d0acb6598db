//! Tables for the AROControlPlane's conditions (`HcpClusterReady`, the per-kind ones), the
//! mirrored URLs and version, `status.ready` with the kubeconfig Secret, and the mutators.

use super::super::fixtures::*;
use super::tests::{HCP, decide, hcp_live, ready_infra};
use serde_json::{Value, json};

#[test]
fn hcp_cluster_ready_table() {
    let rows: Vec<(&str, Option<Value>, (&str, &str, &str))> = vec![
        (
            "not found",
            None,
            (
                "False",
                "HcpOpenShiftClusterNotFound",
                "HcpOpenShiftCluster not found",
            ),
        ),
        (
            "ready",
            Some(hcp_live(Ready::Yes)),
            ("True", "Succeeded", ""),
        ),
        (
            "ASO's reason, default message",
            Some(hcp_live(Ready::No)),
            (
                "False",
                "Reconciling",
                "HcpOpenShiftCluster is not yet ready",
            ),
        ),
        (
            "no Ready condition: Provisioning",
            Some(hcp_live(Ready::Absent)),
            (
                "False",
                "Provisioning",
                "HcpOpenShiftCluster is not yet ready",
            ),
        ),
        (
            "stale generation",
            Some(hcp_live(Ready::Stale)),
            (
                "False",
                "Reconciling",
                "waiting for generation 2 to be observed (Ready condition is for generation 1)",
            ),
        ),
        (
            "error severity",
            Some(hcp_live(Ready::With(
                "Error",
                "InvalidTemplateDeployment",
                "bad template",
            ))),
            ("False", "InvalidTemplateDeployment", "[Error] bad template"),
        ),
        (
            "warning severity",
            Some(hcp_live(Ready::With(
                "Warning",
                "WaitingForOwner",
                "rg missing",
            ))),
            ("False", "WaitingForOwner", "[Warning] rg missing"),
        ),
        (
            "info severity: no prefix",
            Some(hcp_live(Ready::With("Info", "Reconciling", "working"))),
            ("False", "Reconciling", "working"),
        ),
    ];
    for (name, hcp, want) in rows {
        let found = hcp.is_some();
        let d = decide(
            &control_plane_obj(&[(HCP, "hcp")]),
            ready_infra(hcp.into_iter().collect()),
        );
        assert_cond(&d.status, "HcpClusterReady", want.0, want.1, want.2);
        let mirrored = (
            d.status["id"].as_str(),
            d.status["apiURL"].as_str(),
            d.status["consoleURL"].as_str(),
            d.status["version"].as_str(),
        );
        let want_mirror = if found {
            (
                Some("/subscriptions/0/hcp"),
                Some("https://api.dev:443"),
                Some("https://console.dev"),
                Some("4.20.0"),
            )
        } else {
            (None, None, None, None)
        };
        assert_eq!(mirrored, want_mirror, "case {name}");
    }
}

#[test]
fn per_kind_conditions_table() {
    let kinds = [
        ("ResourceGroup", "ResourceGroupReady"),
        ("VirtualNetwork", "VNetReady"),
        ("NetworkSecurityGroup", "SecurityGroupsReady"),
        ("VirtualNetworksSubnet", "SubnetsReady"),
        ("Vault", "VaultReady"),
        ("UserAssignedIdentity", "UserAssignedIdentitiesReady"),
        ("RoleAssignment", "RoleAssignmentReady"),
    ];
    for (kind, type_) in kinds {
        let desired = control_plane_obj(&[(HCP, "hcp"), (kind, "a"), (kind, "b")]);
        let waiting = decide(
            &desired,
            ready_infra(vec![aso(kind, "a", Ready::Yes), aso(kind, "b", Ready::No)]),
        );
        assert_cond(
            &waiting.status,
            type_,
            "False",
            "Creating",
            &format!("Waiting for {kind} to be ready: [b]"),
        );
        let none = decide(&desired, ready_infra(vec![]));
        assert_cond(
            &none.status,
            type_,
            "False",
            "Creating",
            &format!("Waiting for {kind} to be ready: [a, b]"),
        );
        let ready = decide(
            &desired,
            ready_infra(vec![aso(kind, "a", Ready::Yes), aso(kind, "b", Ready::Yes)]),
        );
        assert_cond(&ready.status, type_, "True", "Succeeded", "");
    }
    // Only the kinds present get a condition; kinds without one get none.
    let d = decide(&control_plane_obj(&[(HCP, "hcp")]), ready_infra(vec![]));
    for (_, type_) in kinds {
        assert!(cond(&d.status, type_).is_none(), "{type_}");
    }
}

#[test]
fn ready_needs_the_hcp_cluster_and_the_kubeconfig_secret() {
    let mut user_creds = control_plane_obj(&[(HCP, "hcp")]);
    user_creds["spec"]["resources"][0]["spec"]["operatorSpec"] =
        json!({"secrets": {"adminCredentials": {"name": "custom-kubeconfig", "key": "value"}}});
    // (case, desired, world, ready)
    let rows: Vec<(&str, Value, Vec<Value>, bool)> = vec![
        ("nothing", control_plane_obj(&[(HCP, "hcp")]), vec![], false),
        (
            "no kubeconfig",
            control_plane_obj(&[(HCP, "hcp")]),
            vec![hcp_live(Ready::Yes)],
            false,
        ),
        (
            "kubeconfig, HCP not ready",
            control_plane_obj(&[(HCP, "hcp")]),
            vec![hcp_live(Ready::No), secret("dev-kubeconfig")],
            false,
        ),
        (
            "both",
            control_plane_obj(&[(HCP, "hcp")]),
            vec![hcp_live(Ready::Yes), secret("dev-kubeconfig")],
            true,
        ),
        (
            "the user's admin credentials Secret",
            user_creds.clone(),
            vec![hcp_live(Ready::Yes), secret("custom-kubeconfig")],
            true,
        ),
        (
            "the default name is not the user's",
            user_creds,
            vec![hcp_live(Ready::Yes), secret("dev-kubeconfig")],
            false,
        ),
    ];
    for (name, desired, live, ready) in rows {
        let d = decide(&desired, ready_infra(live));
        assert_eq!(d.status["ready"], ready, "case {name}");
        assert_eq!(
            d.status["initialization"]["controlPlaneInitialized"], ready,
            "case {name}"
        );
    }
}

#[test]
fn mutators_table() {
    let mut user = control_plane_obj(&[(HCP, "hcp")]);
    user["spec"]["resources"][0]["spec"]["operatorSpec"] =
        json!({"secrets": {"userCredentials": {"name": "u", "key": "k"}}});
    let mut elsewhere = control_plane_obj(&[(HCP, "hcp")]);
    elsewhere["spec"]["resources"][0]["metadata"]["namespace"] = json!("other-ns");
    // (case, desired, pointer into the applied HCP, value)
    let rows: Vec<(&str, Value, &str, Value)> = vec![
        (
            "admin credentials default",
            control_plane_obj(&[(HCP, "hcp")]),
            "/spec/operatorSpec/secrets/adminCredentials",
            json!({"name": "dev-kubeconfig", "key": "value"}),
        ),
        (
            "user credentials left alone",
            user,
            "/spec/operatorSpec/secrets/adminCredentials",
            Value::Null,
        ),
        (
            "namespace forced to the owner's",
            elsewhere,
            "/metadata/namespace",
            json!(NS),
        ),
    ];
    for (name, desired, pointer, want) in rows {
        let d = decide(&desired, ready_infra(vec![]));
        assert_eq!(
            d.applies[0]
                .pointer(pointer)
                .cloned()
                .unwrap_or(Value::Null),
            want,
            "case {name}"
        );
    }
}

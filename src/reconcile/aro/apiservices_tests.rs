//! Tables for the aggregated-APIServices gate: the expected APIServices with and without OAuth,
//! `AggregatedAPIServicesAvailable` on every kind of read, `Available` with the latch, and the
//! status the gate adds to a decided one.

use super::*;
use crate::reconcile::aro::fixtures::*;
use serde_json::json;

fn apiservice(name: &str, available: Option<&str>) -> Value {
    let mut a = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": name}});
    if let Some(s) = available {
        a["status"] = json!({"conditions": [{"type": "Available", "status": s, "reason": "r"}]});
    }
    a
}

/// Every expected APIService Available, except those named in `not`.
fn listed(oauth: bool, not: &[&str]) -> GuestRead {
    GuestRead::Listed(
        expected_apiservices(oauth)
            .iter()
            .filter(|n| !not.contains(&n.as_str()))
            .map(|n| apiservice(n, Some("True")))
            .collect(),
    )
}

#[test]
fn expected_apiservices_with_and_without_oauth() {
    let with = expected_apiservices(true);
    assert_eq!(with.len(), 12);
    assert!(with.contains(&"v1.oauth.openshift.io".to_string()));
    assert!(with.contains(&"v1.user.openshift.io".to_string()));
    assert!(with.contains(&"v1.packages.operators.coreos.com".to_string()));
    let without = expected_apiservices(false);
    assert_eq!(without.len(), 10);
    assert!(
        !without
            .iter()
            .any(|n| n.contains("oauth") || n.contains("user"))
    );
    for g in OPENSHIFT_GROUPS {
        assert!(without.contains(&format!("v1.{g}.openshift.io")), "{g}");
    }
    let mut sorted = with.clone();
    sorted.sort();
    assert_eq!(with, sorted);
}

#[test]
fn oauth_enabled_table() {
    let plain = control_plane_obj(&[(HCP_CLUSTER, "hcp")]);
    let external = control_plane_obj(&[(HCP_CLUSTER, "hcp"), (EXTERNAL_AUTH, "entra")]);
    let flagged = |v: bool| {
        let mut acp = control_plane_obj(&[(HCP_CLUSTER, "hcp")]);
        acp["spec"]["resources"][0]["spec"]["properties"] = json!({"externalAuth": {"enabled": v}});
        acp
    };
    let rows = [
        ("no external auth", plain, true),
        ("an ExternalAuth embedded", external, false),
        ("externalAuth.enabled true", flagged(true), false),
        ("externalAuth.enabled false", flagged(false), true),
    ];
    for (name, acp, want) in rows {
        assert_eq!(oauth_enabled(&acp), want, "case {name}");
    }
}

#[test]
fn apiservices_condition_table() {
    let rows: Vec<(&str, bool, GuestRead, Option<(&str, &str, &str)>)> = vec![
        ("not up", true, GuestRead::NotUp, None),
        ("kept", true, GuestRead::Kept, None),
        (
            "all available",
            true,
            listed(true, &[]),
            Some((
                "True",
                "AsExpected",
                "All 12 aggregated APIServices are available",
            )),
        ),
        (
            "all available without OAuth",
            false,
            listed(false, &[]),
            Some((
                "True",
                "AsExpected",
                "All 10 aggregated APIServices are available",
            )),
        ),
        (
            "OAuth disabled: oauth and user are not looked for",
            false,
            listed(false, &["v1.oauth.openshift.io", "v1.user.openshift.io"]),
            Some((
                "True",
                "AsExpected",
                "All 10 aggregated APIServices are available",
            )),
        ),
        (
            "OAuth enabled: a missing user API counts",
            true,
            listed(true, &["v1.user.openshift.io"]),
            Some((
                "False",
                NOT_AVAILABLE_REASON,
                "APIServices not available: v1.user.openshift.io",
            )),
        ),
        (
            "missing ones listed sorted",
            true,
            listed(
                true,
                &[
                    "v1.route.openshift.io",
                    "v1.packages.operators.coreos.com",
                    "v1.apps.openshift.io",
                ],
            ),
            Some((
                "False",
                NOT_AVAILABLE_REASON,
                "APIServices not available: v1.apps.openshift.io, v1.packages.operators.coreos.com, v1.route.openshift.io",
            )),
        ),
        (
            "Available False, Unknown or no status count as unavailable",
            false,
            {
                let GuestRead::Listed(mut items) = listed(
                    false,
                    &[
                        "v1.route.openshift.io",
                        "v1.build.openshift.io",
                        "v1.image.openshift.io",
                    ],
                ) else {
                    unreachable!()
                };
                items.push(apiservice("v1.route.openshift.io", Some("False")));
                items.push(apiservice("v1.build.openshift.io", Some("Unknown")));
                items.push(apiservice("v1.image.openshift.io", None));
                items.push(apiservice("v1.extra.example.com", Some("False")));
                GuestRead::Listed(items)
            },
            Some((
                "False",
                NOT_AVAILABLE_REASON,
                "APIServices not available: v1.build.openshift.io, v1.image.openshift.io, v1.route.openshift.io",
            )),
        ),
        (
            "not served at all: every one missing",
            false,
            GuestRead::NotFound,
            Some((
                "False",
                NOT_AVAILABLE_REASON,
                "APIServices not available: v1.apps.openshift.io, v1.authorization.openshift.io, v1.build.openshift.io, v1.image.openshift.io, v1.packages.operators.coreos.com, v1.project.openshift.io, v1.quota.openshift.io, v1.route.openshift.io, v1.security.openshift.io, v1.template.openshift.io",
            )),
        ),
        (
            "read failed",
            true,
            GuestRead::Failed("503 Service Unavailable".into()),
            Some((
                "False",
                RECONCILE_ERROR_REASON,
                "reading the guest cluster's APIServices failed: 503 Service Unavailable",
            )),
        ),
    ];
    for (name, oauth, read, want) in rows {
        let got = apiservices_condition(&expected_apiservices(oauth), &read);
        let got = got.map(|c| {
            assert_eq!(c.type_, APISERVICES_CONDITION);
            (c.status, c.reason, c.message)
        });
        let want = want.map(|(s, r, m)| (s, r.to_string(), m.to_string()));
        assert_eq!(got, want, "case {name}");
    }
}

#[test]
fn available_condition_table() {
    let t = Condition::new(APISERVICES_CONDITION, "True", AS_EXPECTED_REASON, "all");
    let f = Condition::new(
        APISERVICES_CONDITION,
        "False",
        NOT_AVAILABLE_REASON,
        "APIServices not available: v1.route.openshift.io",
    );
    let e = Condition::new(
        APISERVICES_CONDITION,
        "False",
        RECONCILE_ERROR_REASON,
        "reading failed",
    );
    let rows: Vec<(
        &str,
        Option<&str>,
        Option<&Condition>,
        bool,
        (&str, &str, &str),
    )> = vec![
        (
            "not ready",
            Some("hcp not ready"),
            Some(&t),
            false,
            ("False", WAITING_FOR_CONTROL_PLANE_REASON, "hcp not ready"),
        ),
        (
            "not ready wins over the latch",
            Some("hcp not ready"),
            Some(&t),
            true,
            ("False", WAITING_FOR_CONTROL_PLANE_REASON, "hcp not ready"),
        ),
        (
            "no condition yet blocks",
            None,
            None,
            false,
            (
                "False",
                WAITING_FOR_APISERVICES_REASON,
                "Waiting for the AggregatedAPIServicesAvailable condition of the guest cluster",
            ),
        ),
        (
            "False blocks, its message carried",
            None,
            Some(&f),
            false,
            (
                "False",
                NOT_AVAILABLE_REASON,
                "APIServices not available: v1.route.openshift.io",
            ),
        ),
        (
            "a read error blocks",
            None,
            Some(&e),
            false,
            ("False", RECONCILE_ERROR_REASON, "reading failed"),
        ),
        (
            "True",
            None,
            Some(&t),
            false,
            ("True", AS_EXPECTED_REASON, ""),
        ),
        (
            "latch: a transient False keeps Available",
            None,
            Some(&f),
            true,
            ("True", AS_EXPECTED_REASON, ""),
        ),
        (
            "latch: a read error keeps Available",
            None,
            Some(&e),
            true,
            ("True", AS_EXPECTED_REASON, ""),
        ),
        (
            "latch: no condition keeps Available",
            None,
            None,
            true,
            ("True", AS_EXPECTED_REASON, ""),
        ),
    ];
    for (name, not_ready, apis, latched, want) in rows {
        let c = available_condition(not_ready, apis, latched);
        assert_eq!(c.type_, AVAILABLE_CONDITION);
        assert_eq!(
            (c.status, c.reason.as_str(), c.message.as_str()),
            want,
            "case {name}"
        );
    }
}

fn cond<'a>(status: &'a Value, type_: &str) -> Option<&'a Value> {
    status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == type_)
}

fn decided(ready: bool) -> Value {
    let hcp = if ready {
        json!({"type": "HcpClusterReady", "status": "True", "reason": "Succeeded"})
    } else {
        json!({"type": "HcpClusterReady", "status": "False", "reason": "Reconciling", "message": "provisioning"})
    };
    json!({"ready": ready, "conditions": [hcp]})
}

#[test]
fn gate_status_adds_both_conditions_sorted() {
    let acp = control_plane_obj(&[(HCP_CLUSTER, "hcp"), (EXTERNAL_AUTH, "entra")]);
    let s = gate_status(&acp, &decided(true), None, &listed(false, &[]), "t1");
    let types: Vec<&str> = s["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            APISERVICES_CONDITION,
            AVAILABLE_CONDITION,
            "HcpClusterReady"
        ]
    );
    assert_eq!(s["ready"], true);
    assert_eq!(cond(&s, AVAILABLE_CONDITION).unwrap()["status"], "True");

    // Not up: no APIServices condition, Available False with the control plane's message.
    let s = gate_status(&acp, &decided(false), None, &GuestRead::NotUp, "t1");
    assert!(cond(&s, APISERVICES_CONDITION).is_none());
    let a = cond(&s, AVAILABLE_CONDITION).unwrap();
    assert_eq!(
        (a["status"].as_str(), a["reason"].as_str()),
        (Some("False"), Some(WAITING_FOR_CONTROL_PLANE_REASON))
    );
    assert_eq!(
        a["message"],
        "The hosted control plane is not ready: provisioning"
    );
    // Ready but the kubeconfig is missing.
    let mut no_secret = decided(false);
    no_secret["conditions"][0] =
        json!({"type": "HcpClusterReady", "status": "True", "reason": "Succeeded"});
    let s = gate_status(&acp, &no_secret, None, &GuestRead::NotUp, "t1");
    assert_eq!(
        cond(&s, AVAILABLE_CONDITION).unwrap()["message"],
        "Waiting for the kubeconfig Secret dev-kubeconfig"
    );
}

#[test]
fn gate_status_blocks_then_latches() {
    let acp = control_plane_obj(&[(HCP_CLUSTER, "hcp")]);
    let route = ["v1.route.openshift.io"];
    // Blocked: Available False, the message carried over.
    let blocked = gate_status(&acp, &decided(true), None, &listed(true, &route), "t1");
    let a = cond(&blocked, AVAILABLE_CONDITION).unwrap();
    assert_eq!(a["status"], "False");
    assert_eq!(a["reason"], NOT_AVAILABLE_REASON);
    assert_eq!(
        a["message"],
        "APIServices not available: v1.route.openshift.io"
    );
    // Then all available: True.
    let up = gate_status(
        &acp,
        &decided(true),
        Some(&blocked),
        &listed(true, &[]),
        "t2",
    );
    assert_eq!(cond(&up, AVAILABLE_CONDITION).unwrap()["status"], "True");
    assert_eq!(
        cond(&up, AVAILABLE_CONDITION).unwrap()["lastTransitionTime"],
        "t2"
    );
    // A transient False after that: the condition says so, Available stays (same transition time).
    let later = gate_status(&acp, &decided(true), Some(&up), &listed(true, &route), "t3");
    let apis = cond(&later, APISERVICES_CONDITION).unwrap();
    assert_eq!(
        (apis["status"].as_str(), apis["lastTransitionTime"].as_str()),
        (Some("False"), Some("t3"))
    );
    let a = cond(&later, AVAILABLE_CONDITION).unwrap();
    assert_eq!(
        (a["status"].as_str(), a["lastTransitionTime"].as_str()),
        (Some("True"), Some("t2"))
    );
    // A read error too.
    let failed = gate_status(
        &acp,
        &decided(true),
        Some(&up),
        &GuestRead::Failed("x".into()),
        "t3",
    );
    assert_eq!(
        cond(&failed, APISERVICES_CONDITION).unwrap()["reason"],
        RECONCILE_ERROR_REASON
    );
    assert_eq!(
        cond(&failed, AVAILABLE_CONDITION).unwrap()["status"],
        "True"
    );
    // Not read (kept): the previous condition stays as it was.
    let kept = gate_status(&acp, &decided(true), Some(&later), &GuestRead::Kept, "t4");
    assert_eq!(
        cond(&kept, APISERVICES_CONDITION),
        cond(&later, APISERVICES_CONDITION)
    );
    assert_eq!(
        cond(&kept, AVAILABLE_CONDITION),
        cond(&later, AVAILABLE_CONDITION)
    );
    // The control plane itself going down is not latched.
    let down = gate_status(&acp, &decided(false), Some(&up), &GuestRead::NotUp, "t5");
    assert_eq!(cond(&down, AVAILABLE_CONDITION).unwrap()["status"], "False");
    assert!(!was_available(Some(&down)));
    assert!(was_available(Some(&up)));
    assert!(!was_available(None));
}

#[test]
fn kubeconfig_secret_table() {
    let with = |secrets: Value| {
        let mut acp = control_plane_obj(&[(HCP_CLUSTER, "hcp")]);
        acp["spec"]["resources"][0]["spec"]["operatorSpec"] = json!({"secrets": secrets});
        acp
    };
    let rows = [
        (
            "default",
            control_plane_obj(&[(HCP_CLUSTER, "hcp")]),
            ("dev-kubeconfig", "value"),
        ),
        (
            "admin",
            with(json!({"adminCredentials": {"name": "a", "key": "k"}})),
            ("a", "k"),
        ),
        (
            "admin without key",
            with(json!({"adminCredentials": {"name": "a"}})),
            ("a", "value"),
        ),
        (
            "userCredentials is not ASO's: the default",
            with(json!({"userCredentials": {"name": "u", "key": "kc"}})),
            ("dev-kubeconfig", "value"),
        ),
    ];
    for (name, acp, (n, k)) in rows {
        assert_eq!(
            kubeconfig_secret(&acp),
            (n.to_string(), k.to_string()),
            "case {name}"
        );
    }
}

use super::*;
use crate::identity::AzureIdentity;
use serde_json::json;

fn acp(ns: &str, cluster: &str, identity: Option<Value>) -> Value {
    let mut o = json!({"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "AROControlPlane",
        "metadata": {"name": cluster, "namespace": ns, "labels": {"cluster.x-k8s.io/cluster-name": cluster}},
        "spec": {"subscriptionID": "sub-1"}});
    if let Some(i) = identity {
        o["spec"]["identityRef"] = i;
    }
    o
}

fn name_of(o: &Value) -> &str {
    str_at(o, "/metadata/name").unwrap_or("")
}

fn identity(kind: &str) -> AzureIdentity {
    AzureIdentity::parse(&json!({"metadata": {"name": "id", "namespace": "fleet"},
        "spec": {"type": kind, "clientID": "client-1", "tenantID": "tenant-1",
            "clientSecret": {"name": "id-secret"}}}))
    .unwrap()
}

fn decoded(secret: &Value, key: &str) -> Option<String> {
    let v = secret["data"][key].as_str()?;
    String::from_utf8(base64::engine::general_purpose::STANDARD.decode(v).unwrap()).ok()
}

#[test]
fn clusters_name_their_identity_through_the_control_plane_only() {
    let with = acp("a", "c1", Some(json!({"name": "id", "namespace": "fleet"})));
    let without = acp("a", "c2", None);
    // An AROCluster's `identityRef` is no field of CAPZ's AROCluster (a real API server prunes
    // it): it names nothing.
    let ac = json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AROCluster",
        "metadata": {"name": "c2", "namespace": "a"}, "spec": {"subscriptionID": "sub-2",
        "identityRef": {"name": "other"}}});
    let refs = cluster_refs([&with, &without, &ac], name_of);
    assert_eq!(refs.len(), 1);
    assert_eq!(refs[0].identity, ("fleet".into(), "id".into()));
    assert_eq!(
        (refs[0].cluster.as_str(), refs[0].subscription_id.as_str()),
        ("c1", "sub-1")
    );
    assert_eq!(refs[0].referrer.kind, "AROControlPlane");
    assert_eq!(refs[0].secret_name(), "c1-aso-secret");
    assert!(is_credential_secret(&refs[0].placeholder()));
}

#[test]
fn the_credential_secret_carries_what_aso_needs_per_type() {
    let r = &cluster_refs([&acp("a", "c1", Some(json!({"name": "id"})))], name_of)[0];
    let stored = json!({"data": {"clientSecret": "ZmFrZS1zZWNyZXQ="}});
    let sp = credential_secret(r, &identity("ServicePrincipal"), Some(&stored));
    assert_eq!(decoded(&sp, SUBSCRIPTION_KEY).as_deref(), Some("sub-1"));
    assert_eq!(decoded(&sp, TENANT_KEY).as_deref(), Some("tenant-1"));
    assert_eq!(decoded(&sp, CLIENT_ID_KEY).as_deref(), Some("client-1"));
    assert_eq!(sp["data"][CLIENT_SECRET_ASO_KEY], "ZmFrZS1zZWNyZXQ=");
    assert!(sp["data"].get(AUTH_MODE_KEY).is_none());
    let wi = credential_secret(r, &identity("WorkloadIdentity"), None);
    assert_eq!(
        decoded(&wi, AUTH_MODE_KEY).as_deref(),
        Some("workloadidentity")
    );
    assert!(wi["data"].get(CLIENT_SECRET_ASO_KEY).is_none());
    let msi = credential_secret(r, &identity("UserAssignedMSI"), None);
    assert_eq!(decoded(&msi, AUTH_MODE_KEY).as_deref(), Some("podidentity"));
    let cert = credential_secret(r, &identity("ServicePrincipalCertificate"), Some(&stored));
    assert_eq!(cert["data"][CLIENT_CERTIFICATE_KEY], "ZmFrZS1zZWNyZXQ=");
    // Nothing of the value shows in a verdict's Debug.
    let v = Verdict::Allowed {
        secret: Box::new(sp),
    };
    assert_eq!(format!("{v:?}"), "Allowed");
}

#[test]
fn a_stopping_verdict_holds_everything_and_says_why() {
    let owner = ObjectKey::from_object(&acp("a", "c1", None)).unwrap();
    let rg = json!({"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup",
        "metadata": {"name": "rg", "namespace": "a"}});
    let mut d = Decision {
        owner,
        record_owned_kinds: Some("ResourceGroup.v1api20200601.resources.azure.com".into()),
        applies: vec![rg],
        held: vec![],
        deletions: vec![ObjectKey::from_object(&acp("a", "x", None)).unwrap()],
        status: json!({"ready": true, "conditions": [{"type": "Ready", "status": "True"}]}),
        patches: vec![json!({})],
        error: None,
    };
    let not_allowed = Verdict::NotAllowed {
        identity: "fleet/id".into(),
    };
    restrict(&mut d, &not_allowed, None, "t1");
    assert!(d.applies.is_empty() && d.deletions.is_empty() && d.patches.is_empty());
    assert_eq!(d.record_owned_kinds, None);
    assert_eq!(d.held.len(), 1);
    assert_eq!(d.held[0].reason, "NamespaceNotAllowedByIdentity");
    assert_eq!(d.status["ready"], false);
    let ready = &d.status["conditions"][0];
    // CAPZ's v1beta2 conditions have no severity.
    assert!(ready.get("severity").is_none());
    assert_eq!(ready["reason"], "NamespaceNotAllowedByIdentity");
    assert_eq!(
        ready["message"],
        "AzureClusterIdentity list of allowed namespaces doesn't include current cluster namespace"
    );
    // The transition time stays while nothing changes.
    let previous = d.status.clone();
    restrict(&mut d, &not_allowed, Some(&previous), "t2");
    assert_eq!(d.status["conditions"][0]["lastTransitionTime"], "t1");
    // Allowed changes nothing.
    let before = d.clone();
    restrict(
        &mut d,
        &Verdict::Allowed {
            secret: Box::new(json!({})),
        },
        None,
        "t3",
    );
    assert_eq!(d, before);
}

#[test]
fn a_cluster_waiting_for_its_identity_is_held_on_it_without_an_error() {
    let owner = ObjectKey::from_object(&acp("a", "c1", None)).unwrap();
    let rg = json!({"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup",
        "metadata": {"name": "rg", "namespace": "a"}});
    let mut d = Decision {
        owner,
        record_owned_kinds: None,
        applies: vec![rg],
        held: vec![],
        deletions: vec![],
        status: json!({}),
        patches: vec![],
        error: None,
    };
    let on = crate::identity::identity_key("fleet", "id");
    let waiting = Verdict::Waiting {
        on: on.clone(),
        message: "waiting for AzureClusterIdentity fleet/id".into(),
    };
    restrict(&mut d, &waiting, None, "t");
    assert_eq!(d.held[0].on, vec![on]);
    assert_eq!(d.held[0].reason, WAITING_REASON);
    assert!(!d.held[0].needs_person());
    assert_eq!(d.status["conditions"][0]["reason"], WAITING_REASON);
}

#[test]
fn a_plan_compares_a_credential_secret_with_its_live_values() {
    let r = &cluster_refs([&acp("a", "c1", Some(json!({"name": "id"})))], name_of)[0];
    let live = json!({"data": {"AZURE_CLIENT_SECRET": "eA=="}});
    assert_eq!(
        as_planned(r.placeholder(), Some(&live))["data"],
        live["data"]
    );
    assert!(as_planned(r.placeholder(), None).get("data").is_none());
    let other = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}});
    assert_eq!(as_planned(other.clone(), Some(&live)), other);
}

#[test]
fn only_changed_secret_material_on_a_written_credential_secret_is_a_rotation() {
    let secret = |data: Value| json!({"apiVersion": "v1", "kind": "Secret", "data": data});
    let old = secret(json!({"AZURE_CLIENT_ID": "aWQ=", "AZURE_CLIENT_SECRET": "b2xk"}));
    let new = secret(json!({"AZURE_CLIENT_ID": "aWQ=", "AZURE_CLIENT_SECRET": "bmV3"}));
    let moved = secret(json!({"AZURE_CLIENT_ID": "b3RoZXI=", "AZURE_CLIENT_SECRET": "b2xk"}));
    let cert = secret(json!({"AZURE_CLIENT_CERTIFICATE": "cGVt"}));
    // (case, desired, live, rotated)
    let cases = [
        ("not written yet", &new, None, false),
        ("unchanged", &old, Some(&old), false),
        ("client secret changed", &new, Some(&old), true),
        ("another key changed only", &moved, Some(&old), false),
        ("certificate instead of secret", &cert, Some(&old), true),
    ];
    for (case, desired, live, want) in cases {
        assert_eq!(material_rotated(desired, live), want, "{case}");
    }
}

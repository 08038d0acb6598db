use super::*;
use serde_json::json;

fn identity(spec: Value) -> Value {
    json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureClusterIdentity",
        "metadata": {"name": "id", "namespace": "fleet"},
        "spec": spec,
    })
}

fn sp(allowed: Option<Value>) -> AzureIdentity {
    let mut spec = json!({"type": "ServicePrincipal", "clientID": "c", "tenantID": "t",
        "clientSecret": {"name": "id-secret"}});
    if let Some(a) = allowed {
        spec["allowedNamespaces"] = a;
    }
    AzureIdentity::parse(&identity(spec)).unwrap()
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn every_allowed_namespaces_form_reads_as_the_spec_says() {
    let none = labels(&[]);
    let team_a = labels(&[("team", "a")]);
    type Case<'a> = (Option<Value>, &'a str, &'a BTreeMap<String, String>, bool);
    let cases: Vec<Case> = vec![
        // Absent, or null: nobody.
        (None, "ns1", &none, false),
        (Some(Value::Null), "ns1", &none, false),
        // Exactly {}: everybody.
        (Some(json!({})), "ns1", &none, true),
        (
            Some(json!({"list": null, "selector": null})),
            "anything",
            &team_a,
            true,
        ),
        // list: [] is not {}: nobody.
        (Some(json!({"list": []})), "ns1", &team_a, false),
        // A list: its members.
        (Some(json!({"list": ["ns1", "ns2"]})), "ns2", &none, true),
        (Some(json!({"list": ["ns1", "ns2"]})), "ns3", &team_a, false),
        // A selector: namespaces whose labels match.
        (
            Some(json!({"selector": {"matchLabels": {"team": "a"}}})),
            "ns9",
            &team_a,
            true,
        ),
        (
            Some(json!({"selector": {"matchLabels": {"team": "a"}}})),
            "ns9",
            &none,
            false,
        ),
        (
            Some(
                json!({"selector": {"matchExpressions": [{"key": "team", "operator": "In", "values": ["b"]}]}}),
            ),
            "ns9",
            &team_a,
            false,
        ),
        // An empty selector allows nobody.
        (Some(json!({"selector": {}})), "ns1", &team_a, false),
        (
            Some(json!({"list": [], "selector": {}})),
            "ns1",
            &team_a,
            false,
        ),
        // List and selector: either.
        (
            Some(json!({"list": ["ns1"], "selector": {"matchLabels": {"team": "a"}}})),
            "ns1",
            &none,
            true,
        ),
        (
            Some(json!({"list": ["ns1"], "selector": {"matchLabels": {"team": "a"}}})),
            "ns2",
            &team_a,
            true,
        ),
        (
            Some(json!({"list": ["ns1"], "selector": {"matchLabels": {"team": "a"}}})),
            "ns2",
            &none,
            false,
        ),
    ];
    for (allowed, ns, l, want) in cases {
        let id = sp(allowed.clone());
        assert_eq!(id.allows(ns, l), want, "{allowed:?} {ns} {l:?}");
    }
    assert_eq!(sp(None).allowed, AllowedNamespaces::None);
    assert_eq!(sp(Some(json!({}))).allowed, AllowedNamespaces::All);
    assert_eq!(
        sp(Some(json!({"list": []}))).allowed,
        AllowedNamespaces::Rules {
            list: vec![],
            selector: None
        }
    );
}

#[test]
fn every_type_parses_and_manual_is_a_service_principal() {
    for (t, want, needs_secret) in [
        ("ServicePrincipal", IdentityType::ServicePrincipal, true),
        (
            "ManualServicePrincipal",
            IdentityType::ServicePrincipal,
            true,
        ),
        (
            "ServicePrincipalCertificate",
            IdentityType::ServicePrincipalCertificate,
            true,
        ),
        ("UserAssignedMSI", IdentityType::UserAssignedMSI, false),
        (
            "UserAssignedIdentityCredential",
            IdentityType::UserAssignedIdentityCredential,
            false,
        ),
        ("WorkloadIdentity", IdentityType::WorkloadIdentity, false),
    ] {
        let id = AzureIdentity::parse(&identity(json!({"type": t, "clientID": "c", "tenantID": "t",
            "resourceID": "/subscriptions/x/id", "clientSecret": {"name": "s", "namespace": "vault"}})))
        .unwrap();
        assert_eq!(id.kind, want, "{t}");
        assert_eq!(id.needs_secret(), needs_secret, "{t}");
        assert_eq!((id.namespace.as_str(), id.name.as_str()), ("fleet", "id"));
        assert_eq!((id.client_id.as_str(), id.tenant_id.as_str()), ("c", "t"));
        assert_eq!(id.resource_id.as_deref(), Some("/subscriptions/x/id"));
        assert_eq!(
            id.secret_ref,
            Some(SecretRef {
                namespace: "vault".into(),
                name: "s".into()
            })
        );
    }
    let with_path = AzureIdentity::parse(&identity(json!({"type": "ServicePrincipalCertificate",
        "clientID": "c", "tenantID": "t", "certPath": "/etc/cert.pem"})))
    .unwrap();
    assert!(!with_path.needs_secret());
    // The Secret's namespace defaults to the identity's.
    assert_eq!(sp(None).secret_ref.unwrap().namespace, "fleet");
}

#[test]
fn a_bad_identity_is_an_error_naming_it() {
    for (spec, what) in [
        (
            json!({"clientID": "c", "tenantID": "t"}),
            "spec.type is required",
        ),
        (
            json!({"type": "Password", "clientID": "c", "tenantID": "t"}),
            "\"Password\"",
        ),
        (
            json!({"type": "WorkloadIdentity", "tenantID": "t"}),
            "spec.clientID is required",
        ),
        (
            json!({"type": "WorkloadIdentity", "clientID": "c"}),
            "spec.tenantID is required",
        ),
        (
            json!({"type": "WorkloadIdentity", "clientID": "c", "tenantID": "t",
                "allowedNamespaces": {"selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}}),
            "spec.allowedNamespaces.selector",
        ),
    ] {
        let e = AzureIdentity::parse(&identity(spec))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("AzureClusterIdentity/fleet/id: "), "{e}");
        assert!(e.contains(what), "{e}");
    }
}

#[test]
fn the_secret_is_checked_without_its_value_showing() {
    let id = sp(None);
    let e = id.check_secret(None).unwrap_err().to_string();
    assert_eq!(
        e,
        "AzureClusterIdentity/fleet/id (type ServicePrincipal): its Secret fleet/id-secret does not exist"
    );
    let wrong_key = json!({"data": {"password": "c2VjcmV0LXZhbHVl"}});
    let e = id.check_secret(Some(&wrong_key)).unwrap_err().to_string();
    assert!(e.contains("has no key \"clientSecret\""), "{e}");
    assert!(!e.contains("c2VjcmV0LXZhbHVl"), "{e}");
    assert!(
        id.check_secret(Some(&json!({"data": {"clientSecret": "eA=="}})))
            .is_ok()
    );
    assert!(
        id.check_secret(Some(&json!({"stringData": {"clientSecret": "x"}})))
            .is_ok()
    );
    // Types without a Secret need none; a service principal without clientSecret is an error.
    let wi = AzureIdentity::parse(&identity(
        json!({"type": "WorkloadIdentity", "clientID": "c", "tenantID": "t"}),
    ))
    .unwrap();
    assert!(wi.check_secret(None).is_ok());
    let bare = AzureIdentity::parse(&identity(
        json!({"type": "ServicePrincipal", "clientID": "c", "tenantID": "t"}),
    ))
    .unwrap();
    assert!(matches!(
        bare.check_secret(None),
        Err(IdentityError::SecretRefMissing { .. })
    ));
}

#[test]
fn the_identity_ref_namespace_defaults_to_the_referrer() {
    let acp = json!({"metadata": {"name": "c", "namespace": "aro-dev"},
        "spec": {"identityRef": {"kind": "AzureClusterIdentity", "name": "id"}}});
    assert_eq!(identity_ref_of(&acp), Some(("aro-dev".into(), "id".into())));
    let other = json!({"metadata": {"name": "c", "namespace": "aro-dev"},
        "spec": {"identityRef": {"name": "id", "namespace": "fleet"}}});
    assert_eq!(identity_ref_of(&other), Some(("fleet".into(), "id".into())));
    assert_eq!(identity_ref_of(&json!({"spec": {}})), None);
    assert_eq!(
        namespace_labels(&json!({"metadata": {"labels": {"team": "a"}}})),
        labels(&[("team", "a")])
    );
}

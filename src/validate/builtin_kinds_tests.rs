use super::*;
use serde_json::json;

fn messages(errors: &[FieldError]) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

#[test]
fn config_map_keys_duplicates_and_size() {
    let cm =
        json!({"data": {"bad key!": "x", "k": "v"}, "binaryData": {"k": "eA==", "..b": "eA=="}});
    assert_eq!(
        messages(&create_errors("", "ConfigMap", &cm)),
        [
            "data[bad key!]: Invalid value: \"bad key!\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
            "data[k]: Invalid value: \"k\": duplicate of key present in binaryData",
            "binaryData[..b]: Invalid value: \"..b\": must not start with '..'",
        ]
    );
    let big = json!({"data": {"a": "x".repeat(MAX_DATA_BYTES + 1)}});
    assert_eq!(
        messages(&create_errors("", "ConfigMap", &big)),
        ["[]: Too long: may not be more than 1048576 bytes"]
    );
}

#[test]
fn secret_types_need_their_keys_and_never_show_values() {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    // (type, data, expected messages)
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        ("Opaque", json!({}), vec![]),
        (
            "kubernetes.io/tls",
            json!({"tls.crt": b64("c")}),
            vec!["data[tls.key]: Required value"],
        ),
        (
            "kubernetes.io/tls",
            json!({}),
            vec![
                "data[tls.crt]: Required value",
                "data[tls.key]: Required value",
            ],
        ),
        (
            "kubernetes.io/dockerconfigjson",
            json!({}),
            vec!["data[.dockerconfigjson]: Required value"],
        ),
        (
            "kubernetes.io/dockerconfigjson",
            json!({".dockerconfigjson": b64("{hunter2")}),
            vec![
                "data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": invalid character 'h' looking for beginning of object key string",
            ],
        ),
        (
            "kubernetes.io/dockercfg",
            json!({".dockercfg": b64("[1]")}),
            vec![
                "data[.dockercfg]: Invalid value: \"<secret contents redacted>\": json: cannot unmarshal array into Go value of type map[string]interface {}",
            ],
        ),
        (
            "kubernetes.io/dockerconfigjson",
            json!({".dockerconfigjson": b64("{\"auths\": {}}")}),
            vec![],
        ),
        (
            "kubernetes.io/basic-auth",
            json!({}),
            vec![
                "data[username]: Required value",
                "data[password]: Required value",
            ],
        ),
        ("kubernetes.io/basic-auth", json!({"password": ""}), vec![]),
        (
            "kubernetes.io/ssh-auth",
            json!({"ssh-privatekey": ""}),
            vec!["data[ssh-privatekey]: Required value"],
        ),
        (
            "kubernetes.io/service-account-token",
            json!({}),
            vec!["metadata.annotations[kubernetes.io/service-account.name]: Required value"],
        ),
        ("example.com/anything", json!({}), vec![]),
    ];
    for (kind, data, expected) in cases {
        let secret = json!({"type": kind, "data": data});
        let got = messages(&create_errors("", "Secret", &secret));
        assert_eq!(got, expected, "{kind}");
        assert!(got.iter().all(|m| !m.contains("hunter2")), "{got:?}");
    }
    let named = json!({"type": "kubernetes.io/service-account-token",
        "metadata": {"annotations": {"kubernetes.io/service-account.name": "default"}}});
    assert!(create_errors("", "Secret", &named).is_empty());
}

#[test]
fn leases_need_positive_durations() {
    let lease =
        json!({"spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1, "holderIdentity": "a"}});
    assert_eq!(
        messages(&create_errors("coordination.k8s.io", "Lease", &lease)),
        [
            "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
            "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
        ]
    );
    let ok = json!({"spec": {"leaseDurationSeconds": 15, "leaseTransitions": 0}});
    assert!(create_errors("coordination.k8s.io", "Lease", &ok).is_empty());
}

#[test]
fn finalizers_are_qualified_or_kubes_own() {
    let ns = json!({"spec": {"finalizers": ["kubernetes", "bad", "example.com/x"]}});
    assert_eq!(
        messages(&create_errors("", "Namespace", &ns)),
        [
            "spec.finalizers: Invalid value: \"bad\": name is neither a standard finalizer name nor is it fully qualified"
        ]
    );
    let cm = json!({"metadata": {"finalizers": ["orphan", "bad"]}});
    assert_eq!(
        messages(&create_errors("", "ConfigMap", &cm)),
        [
            "metadata.finalizers[1]: Invalid value: \"bad\": name is neither a standard finalizer name nor is it fully qualified"
        ]
    );
    // Only the core kinds check kube's own finalizer names.
    assert!(create_errors("coordination.k8s.io", "Lease", &cm).is_empty());
}

#[test]
fn services_need_ports_of_a_known_type() {
    assert_eq!(
        messages(&create_errors("", "Service", &json!({"spec": {}}))),
        ["spec.ports: Required value"]
    );
    let bad = json!({"spec": {"ports": [{"port": 0}], "type": "Foo"}});
    assert_eq!(
        messages(&create_errors("", "Service", &bad)),
        [
            "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
            "spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive",
            "spec.type: Unsupported value: \"Foo\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
        ]
    );
    let two = json!({"spec": {"ports": [{"port": 80, "protocol": "HTTP"}, {"name": "b", "port": 81, "targetPort": "Web"}]}});
    assert_eq!(
        messages(&create_errors("", "Service", &two)),
        [
            "spec.ports[0].name: Required value",
            "spec.ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "spec.ports[1].targetPort: Invalid value: \"Web\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
        ]
    );
    for ok in [
        json!({"spec": {"ports": [{"port": 80}]}}),
        json!({"spec": {"clusterIP": "None"}}),
        json!({"spec": {"type": "ExternalName", "externalName": "example.com"}}),
    ] {
        assert!(create_errors("", "Service", &ok).is_empty(), "{ok}");
    }
}

#[test]
fn immutable_config_maps_and_secrets_keep_their_data() {
    let old = json!({"immutable": true, "data": {"k": "v"}});
    let changed = json!({"immutable": true, "data": {"k": "w"}});
    assert_eq!(
        messages(&update_errors("", "ConfigMap", &changed, &old)),
        ["data: Forbidden: field is immutable when `immutable` is set"]
    );
    let unset = json!({"data": {"k": "v"}, "binaryData": {"b": "eA=="}});
    assert_eq!(
        messages(&update_errors("", "ConfigMap", &unset, &old)),
        [
            "immutable: Forbidden: field is immutable when `immutable` is set",
            "binaryData: Forbidden: field is immutable when `immutable` is set",
        ]
    );
    assert!(update_errors("", "ConfigMap", &old, &old).is_empty());
    // Mutable: anything may change.
    let mutable = json!({"data": {"k": "v"}});
    assert!(update_errors("", "ConfigMap", &changed, &mutable).is_empty());
    // A Secret's type never changes; an absent type is Opaque.
    let secret = json!({"type": "Opaque"});
    assert_eq!(
        messages(&update_errors(
            "",
            "Secret",
            &json!({"type": "example.com/other"}),
            &secret
        )),
        ["type: Invalid value: \"example.com/other\": field is immutable"]
    );
    assert!(update_errors("", "Secret", &json!({}), &secret).is_empty());
    let frozen = json!({"immutable": true, "data": {"k": "eA=="}});
    assert_eq!(
        messages(&update_errors(
            "",
            "Secret",
            &json!({"immutable": true}),
            &frozen
        )),
        ["data: Forbidden: field is immutable when `immutable` is set"]
    );
}

#[test]
fn an_error_found_twice_is_reported_once() {
    let old = json!({"metadata": {"labels": {}}});
    let new = json!({"metadata": {"labels": {"-a": "b"}}});
    // MetaUpdate, then the ConfigMap whole, both find the label key.
    assert_eq!(update_errors("", "ConfigMap", &new, &old).len(), 1);
    assert_eq!(
        update_errors("coordination.k8s.io", "Lease", &new, &old).len(),
        1
    );
}

#[test]
fn label_lengths_are_in_bytes_names_in_characters() {
    let long = "a".repeat(64);
    let labels = json!({"metadata": {"labels": {long.clone(): long.clone()}}});
    let messages = messages(&create_errors("", "ConfigMap", &labels));
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(
        messages[0].ends_with("name part must be no more than 63 bytes"),
        "{messages:?}"
    );
    assert!(
        messages[1].ends_with("must be no more than 63 bytes"),
        "{messages:?}"
    );
    let name = super::super::name_errors("", "Namespace", "metadata.name", &long);
    assert!(
        name[0]
            .to_string()
            .ends_with("must be no more than 63 characters")
    );
}

#[test]
fn owner_references_name_their_owner_whole() {
    let refs = json!({"metadata": {"ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u"},
        {"kind": "ConfigMap"},
        {"apiVersion": "a/b/c", "kind": "K", "name": "n", "uid": "u"},
        {"apiVersion": "example.com/", "kind": "K", "name": "n", "uid": "u"},
    ]}});
    assert_eq!(
        messages(&create_errors("", "ConfigMap", &refs)),
        [
            "metadata.ownerReferences[1].apiVersion: Required value: must not be empty",
            "metadata.ownerReferences[1].name: Required value: must not be empty",
            "metadata.ownerReferences[1].uid: Required value: must not be empty",
            "metadata.ownerReferences[2].apiVersion: Invalid value: \"a/b/c\": must be <group>/<version> or <version>",
            "metadata.ownerReferences[3].apiVersion: Invalid value: \"example.com/\": must be <group>/<version> or <version>",
        ]
    );
}

use super::*;
use serde_json::json;

#[test]
fn names_follow_the_rule_of_their_kind() {
    // (group, kind, name, accepted)
    let cases = [
        ("", "ConfigMap", "a.b-c", true),
        ("", "ConfigMap", "Upper", false),
        ("", "ConfigMap", "a..b", false),
        ("", "ConfigMap", "-a", false),
        ("", "ConfigMap", "a_b", false),
        ("", "ConfigMap", &"a".repeat(253), true),
        ("", "ConfigMap", &"a".repeat(254), false),
        ("", "Namespace", "aro-dev", true),
        ("", "Namespace", "aro.dev", false),
        ("", "Namespace", &"a".repeat(64), false),
        ("", "Service", "web-1", true),
        ("", "Service", "1web", true),
        ("", "Service", "web.x", false),
        (
            "rbac.authorization.k8s.io",
            "ClusterRole",
            "system:viewer",
            true,
        ),
        ("rbac.authorization.k8s.io", "ClusterRole", "a/b", false),
        ("rbac.authorization.k8s.io", "Role", "..", false),
        ("infrastructure.cluster.x-k8s.io", "AROCluster", "dev", true),
        (
            "infrastructure.cluster.x-k8s.io",
            "AROCluster",
            "Dev_Cluster",
            false,
        ),
    ];
    for (group, kind, name, accepted) in cases {
        let problem = name_problem(group, kind, name);
        assert_eq!(problem.is_none(), accepted, "{kind} {name:?}: {problem:?}");
        if let Some(p) = problem {
            assert!(p.starts_with("metadata.name: Invalid value: "), "{p}");
        }
    }
}

#[test]
fn namespaced_kinds_need_a_namespace() {
    let cases = [
        ("", "ConfigMap", None, Some(true), true),
        ("", "ConfigMap", Some("aro-dev"), Some(true), false),
        ("", "Namespace", None, Some(false), false),
        ("cluster.x-k8s.io", "Cluster", None, Some(true), true),
        (
            "resources.azure.com",
            "ResourceGroup",
            None,
            Some(true),
            true,
        ),
        ("example.com", "Widget", None, None, false),
    ];
    for (group, kind, ns, scope, refused) in cases {
        assert_eq!(namespaced(group, kind), scope, "{group}/{kind}");
        let problem = namespace_problem(kind, ns, scope);
        assert_eq!(problem.is_some(), refused, "{kind} {ns:?}: {problem:?}");
    }
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "spec": {"group": "example.com", "names": {"kind": "Widget"}, "scope": "Cluster"}});
    assert_eq!(
        defined_kinds([&crd]),
        vec![("example.com".into(), "Widget".into(), false)]
    );
}

#[test]
fn config_maps_and_secrets_hold_string_maps_and_base64() {
    // (object, expected problems: each a prefix)
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (
            json!({"kind": "ConfigMap", "apiVersion": "v1", "data": {"a": "x"}, "binaryData": {"b": "eA=="}}),
            vec![],
        ),
        (
            json!({"kind": "ConfigMap", "apiVersion": "v1", "data": {"a": {"nested": "x"}}}),
            vec!["data[a]: Invalid value: must be a string, not a map"],
        ),
        (
            json!({"kind": "ConfigMap", "apiVersion": "v1", "data": {"a": 1}, "binaryData": {"b": "**"}}),
            vec![
                "data[a]: Invalid value: must be a string, not a number",
                "binaryData[b]: Invalid value: not valid base64",
            ],
        ),
        (
            json!({"kind": "ConfigMap", "apiVersion": "v1", "data": {"a": "x"}, "binaryData": {"a": "eA=="}}),
            vec!["data[a]: Invalid value: \"a\": duplicate of key present in binaryData"],
        ),
        (
            json!({"kind": "ConfigMap", "apiVersion": "v1", "data": ["x"]}),
            vec!["data: Invalid value: must be a map of strings, not a list"],
        ),
        (
            json!({"kind": "ConfigMap", "apiVersion": "v1", "data": {"a b": "x", "..c": "y"}}),
            vec![
                "data[a b]: Invalid value: \"a b\": a valid config key",
                "data[..c]: Invalid value: \"..c\": must not start with '..'",
            ],
        ),
        (
            json!({"kind": "Secret", "apiVersion": "v1", "data": {"password": "aHVudGVyMg=="}, "stringData": {"user": "me"}}),
            vec![],
        ),
        (
            json!({"kind": "Secret", "apiVersion": "v1", "stringData": {"password": {"nested": "hunter2"}}}),
            vec!["stringData[password]: Invalid value: must be a string, not a map"],
        ),
        (
            json!({"kind": "Secret", "apiVersion": "v1", "data": {"password": "hunter2!"}}),
            vec!["data[password]: Invalid value: not valid base64"],
        ),
        (
            json!({"kind": "Deployment", "apiVersion": "apps/v1", "data": {"a": {}}}),
            vec![],
        ),
    ];
    for (obj, expected) in cases {
        let group = crate::object::split_api_version(obj["apiVersion"].as_str().unwrap()).0;
        let problems = data_problems(group, obj["kind"].as_str().unwrap(), &obj);
        assert_eq!(problems.len(), expected.len(), "{obj}: {problems:?}");
        for (p, e) in problems.iter().zip(&expected) {
            assert!(p.starts_with(e), "{p:?} should start with {e:?}");
            assert!(!p.contains("hunter2"), "a secret value is quoted: {p}");
        }
    }
}

#[test]
fn data_over_a_mebibyte_and_objects_over_one_and_a_half_are_refused() {
    let big = "x".repeat(MAX_DATA_BYTES + 1);
    let cm = json!({"kind": "ConfigMap", "apiVersion": "v1", "data": {"a": big}});
    assert!(data_problems("", "ConfigMap", &cm)[0].starts_with("data: Too long"));
    assert!(size_problem(&cm).is_none());
    let huge = json!({"kind": "Widget", "spec": {"x": "y".repeat(MAX_OBJECT_BYTES)}});
    assert!(
        size_problem(&huge)
            .unwrap()
            .starts_with("Too long: the object is 1.50 MiB")
    );
}

#[test]
fn object_problems_gather_every_check() {
    let obj = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "Bad_Name", "namespace": "Bad.NS"},
        "stringData": {"password": {"nested": "x"}}});
    let problems = object_problems(&obj, namespaced("", "Secret"), false);
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems[0].starts_with("metadata.name: "));
    assert!(problems[1].starts_with("metadata.namespace: "));
    assert!(problems[2].starts_with("stringData[password]: "));
    let no_ns = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
    let problems = object_problems(&no_ns, namespaced("", "ConfigMap"), false);
    assert_eq!(problems.len(), 1);
    assert!(problems[0].starts_with("metadata.namespace: Required value: ConfigMap is namespaced"));
}

#[test]
fn labels_and_annotations_are_string_maps_with_valid_keys() {
    // (metadata, expected problems: each a prefix)
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (
            json!({"labels": {"app.kubernetes.io/name": "web", "tier": "", "v": "1.2_x"},
                   "annotations": {"example.com/note": "any text: at all"}}),
            vec![],
        ),
        (
            json!({"labels": {"version": 1}}),
            vec!["metadata.labels[version]: Invalid value: must be a string, not a number"],
        ),
        (
            json!({"labels": {"a": "has spaces", "Bad_Prefix/x": "y", "-a": "b"}}),
            vec![
                "metadata.labels: Invalid value: \"has spaces\": a valid label must",
                "metadata.labels: Invalid value: \"Bad_Prefix/x\": prefix part a lowercase RFC 1123 subdomain",
                "metadata.labels: Invalid value: \"-a\": name part must consist",
            ],
        ),
        (
            json!({"annotations": ["x"]}),
            vec!["metadata.annotations: Invalid value: must be a map of strings, not a list"],
        ),
        (
            json!({"annotations": {"big": "x".repeat(MAX_ANNOTATIONS_BYTES)}}),
            vec!["metadata.annotations: Too long: may not be more than 262144 bytes"],
        ),
        (
            json!({"annotations": {"note": {"password": "hunter2"}}}),
            vec!["metadata.annotations[note]: Invalid value: must be a string, not a map"],
        ),
    ];
    for (metadata, expected) in cases {
        let obj = json!({"metadata": metadata});
        let problems = metadata_problems(&obj, false);
        assert_eq!(problems.len(), expected.len(), "{metadata}: {problems:?}");
        for (p, e) in problems.iter().zip(&expected) {
            assert!(p.starts_with(e), "{p:?} should start with {e:?}");
            assert!(!p.contains("hunter2"), "a value is quoted: {p}");
        }
    }
    // A kind whose schema types them: keys and label values only.
    let typed = json!({"metadata": {"labels": {"v": 1, "-a": "b"}, "annotations": ["x"]}});
    let problems = metadata_problems(&typed, true);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("metadata.labels: Invalid value: \"-a\""));
}

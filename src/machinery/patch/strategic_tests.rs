//! Unit tests of the strategic merge patch engine (kept apart from `strategic.rs` for its size).

use super::{MergeKeys, PatchError, strategic_merge_patch};
use serde_json::{Value, json};

fn smp(target: Value, patch: Value, keys: &MergeKeys) -> Value {
    let mut doc = target;
    strategic_merge_patch(&mut doc, &patch, keys).unwrap();
    doc
}

fn smp_err(target: Value, patch: Value, keys: &MergeKeys) -> PatchError {
    let mut doc = target.clone();
    let err = strategic_merge_patch(&mut doc, &patch, keys).unwrap_err();
    assert_eq!(
        doc, target,
        "a failed patch must leave the target unchanged"
    );
    err
}

fn service() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "apps", "labels": {"app": "web", "tier": "front"}},
        "spec": {
            "selector": {"app": "web", "version": "v1"},
            "clusterIPs": ["10.0.0.1"],
            "ports": [
                {"name": "http", "port": 80, "targetPort": 8080},
                {"name": "https", "port": 443, "targetPort": 8443}
            ]
        }
    })
}

fn svc_keys() -> MergeKeys {
    MergeKeys::builtin("", "Service")
}

fn ports(doc: &Value) -> Vec<i64> {
    doc["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["port"].as_f64().unwrap() as i64)
        .collect()
}

#[test]
fn service_ports_merge_by_port() {
    let got = smp(
        service(),
        json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}]}}),
        &svc_keys(),
    );
    assert_eq!(
        got["spec"]["ports"],
        json!([
            {"name": "http", "port": 80, "targetPort": 9090},
            {"name": "https", "port": 443, "targetPort": 8443}
        ])
    );
    assert_eq!(got["metadata"], service()["metadata"]);
}

#[test]
fn new_keyed_elements_are_placed_like_kubernetes_does() {
    // Only a new element: it goes before the server-only ones (kubectl patch shows it first).
    let got = smp(
        service(),
        json!({"spec": {"ports": [{"port": 9000, "name": "metrics"}]}}),
        &svc_keys(),
    );
    assert_eq!(ports(&got), [9000, 80, 443]);
    // After a patched element it stays after it, before the later server-only element.
    let got = smp(
        service(),
        json!({"spec": {"ports": [{"port": 80}, {"port": 9000}]}}),
        &svc_keys(),
    );
    assert_eq!(ports(&got), [80, 9000, 443]);
    let got = smp(
        service(),
        json!({"spec": {"ports": [{"port": 443}, {"port": 9000}, {"port": 9001}]}}),
        &svc_keys(),
    );
    assert_eq!(ports(&got), [80, 443, 9000, 9001]);
}

#[test]
fn merge_key_numbers_compare_by_value() {
    let got = smp(
        service(),
        json!({"spec": {"ports": [{"port": 80.0, "name": "plain"}]}}),
        &svc_keys(),
    );
    assert_eq!(ports(&got), [80, 443]);
    assert_eq!(got["spec"]["ports"][0]["name"], "plain");
}

#[test]
fn delete_directive_in_keyed_list_removes_the_element() {
    let got = smp(
        service(),
        json!({"spec": {"ports": [{"$patch": "delete", "port": 443}]}}),
        &svc_keys(),
    );
    assert_eq!(
        got["spec"]["ports"],
        json!([{"name": "http", "port": 80, "targetPort": 8080}])
    );
    let err = smp_err(
        service(),
        json!({"spec": {"ports": [{"$patch": "delete", "name": "https"}]}}),
        &svc_keys(),
    );
    assert!(matches!(err, PatchError::Malformed(_)), "{err}");
}

#[test]
fn delete_directive_in_a_map_deletes_the_map() {
    let got = smp(
        service(),
        json!({"metadata": {"labels": {"$patch": "delete"}}}),
        &svc_keys(),
    );
    assert_eq!(got["metadata"], json!({"name": "web", "namespace": "apps"}));
    // Deleting an absent map is a no-op and leaves no trace.
    let got = smp(
        service(),
        json!({"spec": {"extra": {"$patch": "delete"}}}),
        &svc_keys(),
    );
    assert!(got["spec"].get("extra").is_none());
}

#[test]
fn replace_directive_in_a_map_replaces_it() {
    let got = smp(
        service(),
        json!({"spec": {"selector": {"$patch": "replace", "app": "api"}}}),
        &svc_keys(),
    );
    assert_eq!(got["spec"]["selector"], json!({"app": "api"}));
    assert_eq!(ports(&got), [80, 443]);
}

#[test]
fn replace_directive_as_list_element_replaces_the_list() {
    let got = smp(
        service(),
        json!({"spec": {"ports": [{"port": 9000, "name": "only"}, {"$patch": "replace"}]}}),
        &svc_keys(),
    );
    assert_eq!(
        got["spec"]["ports"],
        json!([{"port": 9000, "name": "only"}])
    );
}

#[test]
fn replace_directive_at_the_root_replaces_the_object() {
    let got = smp(
        service(),
        json!({"$patch": "replace", "kind": "Service", "spec": {"ports": [{"port": 1, "x": null}]}}),
        &svc_keys(),
    );
    assert_eq!(
        got,
        json!({"kind": "Service", "spec": {"ports": [{"port": 1}]}})
    );
}

#[test]
fn merge_directive_is_the_default() {
    let got = smp(
        service(),
        json!({"metadata": {"labels": {"$patch": "merge", "tier": "back"}},
               "spec": {"ports": [{"$patch": "merge"}, {"port": 80, "name": "h"}]}}),
        &svc_keys(),
    );
    assert_eq!(
        got["metadata"]["labels"],
        json!({"app": "web", "tier": "back"})
    );
    assert_eq!(ports(&got), [80, 443]);
    assert_eq!(got["spec"]["ports"][0]["name"], "h");
}

#[test]
fn unknown_or_non_string_patch_directive_is_malformed() {
    for patch in [
        json!({"metadata": {"labels": {"$patch": "explode"}}}),
        json!({"$patch": "nope"}),
        json!({"spec": {"ports": [{"$patch": "upsert", "port": 80}]}}),
        json!({"metadata": {"labels": {"$patch": true}}}),
    ] {
        let err = smp_err(service(), patch.clone(), &svc_keys());
        assert!(matches!(err, PatchError::Malformed(_)), "{patch}: {err}");
        assert_eq!(err.http_status(), 400);
    }
}

#[test]
fn delete_directive_at_the_root_is_malformed() {
    let err = smp_err(service(), json!({"$patch": "delete"}), &svc_keys());
    assert!(matches!(err, PatchError::Malformed(_)), "{err}");
}

#[test]
fn retain_keys_clears_unlisted_fields() {
    let keys = MergeKeys::new();
    let deployment = json!({"spec": {"strategy": {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 1}
    }}});
    let got = smp(
        deployment.clone(),
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        &keys,
    );
    assert_eq!(got, json!({"spec": {"strategy": {"type": "Recreate"}}}));
    // Listed fields the patch does not set are kept and merged.
    let got = smp(
        deployment.clone(),
        json!({"spec": {"strategy": {"$retainKeys": ["type", "rollingUpdate"],
                                      "rollingUpdate": {"maxUnavailable": 0}}}}),
        &keys,
    );
    assert_eq!(
        got["spec"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}})
    );
    // A field the patch sets must be listed.
    let err = smp_err(
        deployment.clone(),
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}}),
        &keys,
    );
    assert!(matches!(err, PatchError::Malformed(_)), "{err}");
    let err = smp_err(
        deployment,
        json!({"spec": {"strategy": {"$retainKeys": "type"}}}),
        &keys,
    );
    assert!(matches!(err, PatchError::Malformed(_)), "{err}");
}

#[test]
fn set_element_order_reorders_a_keyed_list() {
    let got = smp(
        service(),
        json!({"spec": {"$setElementOrder/ports": [{"port": 443}, {"port": 80}]}}),
        &svc_keys(),
    );
    assert_eq!(ports(&got), [443, 80]);
    assert!(
        got["spec"]
            .as_object()
            .unwrap()
            .keys()
            .all(|k| !k.starts_with('$'))
    );
}

#[test]
fn set_element_order_as_kubectl_apply_sends_it() {
    // Live ports 80, 443; the new manifest has 80 then 8443 (443 removed, 8443 added).
    let got = smp(
        service(),
        json!({"spec": {
            "$setElementOrder/ports": [{"port": 8443}, {"port": 80}],
            "ports": [{"port": 8443, "name": "alt", "targetPort": 8443},
                      {"$patch": "delete", "port": 443}]
        }}),
        &svc_keys(),
    );
    assert_eq!(ports(&got), [8443, 80]);
    assert_eq!(
        got["spec"]["ports"][1],
        json!({"name": "http", "port": 80, "targetPort": 8080})
    );
}

#[test]
fn set_element_order_contradicting_the_patch_is_malformed() {
    let err = smp_err(
        service(),
        json!({"spec": {
            "$setElementOrder/ports": [{"port": 80}, {"port": 443}],
            "ports": [{"port": 443, "name": "a"}, {"port": 80, "name": "b"}]
        }}),
        &svc_keys(),
    );
    assert!(matches!(err, PatchError::Malformed(_)), "{err}");
    let err = smp_err(
        service(),
        json!({"spec": {"$setElementOrder/ports": [{"name": "http"}]}}),
        &svc_keys(),
    );
    assert!(matches!(err, PatchError::Malformed(_)), "{err}");
}

fn with_finalizers(finalizers: Value) -> Value {
    json!({"kind": "ConfigMap", "metadata": {"name": "c", "finalizers": finalizers}})
}

#[test]
fn finalizers_merge_as_a_set() {
    let keys = MergeKeys::builtin("", "ConfigMap");
    let got = smp(
        with_finalizers(json!(["a", "b"])),
        json!({"metadata": {"finalizers": ["b", "c"]}}),
        &keys,
    );
    assert_eq!(got["metadata"]["finalizers"], json!(["a", "b", "c"]));
    let got = smp(
        with_finalizers(json!(["a", "b"])),
        json!({"metadata": {"finalizers": ["c"]}}),
        &keys,
    );
    assert_eq!(got["metadata"]["finalizers"], json!(["c", "a", "b"]));
    let got = smp(
        json!({"metadata": {"name": "c"}}),
        json!({"metadata": {"finalizers": ["x", "x"]}}),
        &keys,
    );
    assert_eq!(got["metadata"]["finalizers"], json!(["x"]));
    // `null` still removes the whole list.
    let got = smp(
        with_finalizers(json!(["a"])),
        json!({"metadata": {"finalizers": null}}),
        &keys,
    );
    assert_eq!(got["metadata"], json!({"name": "c"}));
    let err = smp_err(
        with_finalizers(json!(["a"])),
        json!({"metadata": {"finalizers": [{"name": "a"}]}}),
        &keys,
    );
    assert!(matches!(err, PatchError::Malformed(_)), "{err}");
}

#[test]
fn delete_from_primitive_list_removes_values() {
    let keys = MergeKeys::builtin("", "ConfigMap");
    let got = smp(
        with_finalizers(json!(["a", "b", "c", "b"])),
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "c"]}}),
        &keys,
    );
    assert_eq!(got["metadata"], json!({"name": "c", "finalizers": ["a"]}));
    // Combined with additions and an order, as kubectl apply sends it.
    let got = smp(
        with_finalizers(json!(["a", "b"])),
        json!({"metadata": {
            "$setElementOrder/finalizers": ["c", "a"],
            "$deleteFromPrimitiveList/finalizers": ["b"],
            "finalizers": ["c"]
        }}),
        &keys,
    );
    assert_eq!(got["metadata"]["finalizers"], json!(["c", "a"]));
    // Nothing to delete from: no list appears.
    let got = smp(
        json!({"metadata": {"name": "c"}}),
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}}),
        &keys,
    );
    assert_eq!(got, json!({"metadata": {"name": "c"}}));
    for bad in [
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": "b"}}),
        json!({"metadata": {"$deleteFromPrimitiveList": ["b"]}}),
        json!({"metadata": {"$setElementOrder/": ["b"]}}),
    ] {
        let err = smp_err(with_finalizers(json!(["b"])), bad.clone(), &keys);
        assert!(matches!(err, PatchError::Malformed(_)), "{bad}: {err}");
    }
}

#[test]
fn set_element_order_reorders_a_set() {
    let keys = MergeKeys::builtin("", "Secret");
    let got = smp(
        with_finalizers(json!(["a", "b", "c"])),
        json!({"metadata": {"$setElementOrder/finalizers": ["b", "c", "a"]}}),
        &keys,
    );
    assert_eq!(got["metadata"]["finalizers"], json!(["b", "c", "a"]));
}

#[test]
fn lists_without_a_strategy_are_replaced() {
    let got = smp(
        service(),
        json!({"spec": {"clusterIPs": ["10.0.0.2"]}}),
        &svc_keys(),
    );
    assert_eq!(got["spec"]["clusterIPs"], json!(["10.0.0.2"]));
    // With an empty table even the ports are replaced.
    let got = smp(
        service(),
        json!({"spec": {"ports": [{"port": 1}]}}),
        &MergeKeys::new(),
    );
    assert_eq!(got["spec"]["ports"], json!([{"port": 1}]));
    // Endpoints subsets are atomic.
    let eps = json!({"kind": "Endpoints", "subsets": [{"addresses": [{"ip": "10.1.0.1"}]}]});
    let got = smp(
        eps,
        json!({"subsets": [{"addresses": [{"ip": "10.1.0.2"}]}]}),
        &MergeKeys::builtin("", "Endpoints"),
    );
    assert_eq!(got["subsets"], json!([{"addresses": [{"ip": "10.1.0.2"}]}]));
    let err = smp_err(
        service(),
        json!({"spec": {"clusterIPs": [{"$patch": "delete", "ip": "10.0.0.1"}]}}),
        &svc_keys(),
    );
    assert!(matches!(err, PatchError::Malformed(_)), "{err}");
}

#[test]
fn maps_merge_null_deletes_scalars_replace() {
    let got = smp(
        service(),
        json!({"metadata": {"labels": {"tier": null, "team": "a"}, "annotations": {"x": "1"}},
               "spec": {"selector": {"version": "v2"}, "type": "NodePort"}}),
        &svc_keys(),
    );
    assert_eq!(
        got["metadata"]["labels"],
        json!({"app": "web", "team": "a"})
    );
    assert_eq!(got["metadata"]["annotations"], json!({"x": "1"}));
    assert_eq!(
        got["spec"]["selector"],
        json!({"app": "web", "version": "v2"})
    );
    assert_eq!(got["spec"]["type"], "NodePort");
    // A type change replaces the value.
    let got = smp(
        service(),
        json!({"spec": {"selector": "none"}}),
        &svc_keys(),
    );
    assert_eq!(got["spec"]["selector"], "none");
    let got = smp(json!({"a": [1]}), json!({"a": {"b": 1}}), &MergeKeys::new());
    assert_eq!(got, json!({"a": {"b": 1}}));
}

#[test]
fn directives_and_nulls_never_leak_into_new_content() {
    let got = smp(
        json!({"metadata": {"name": "web"}}),
        json!({
            "metadata": {"labels": {"a": "1", "b": null, "sub": {"$patch": "delete"}}},
            "spec": {
                "ports": [{"port": 80, "x": null}, {"$patch": "delete", "port": 81}],
                "$setElementOrder/ports": [{"port": 80}],
                "selector": {"$patch": "replace", "app": "web", "gone": null},
                "clusterIPs": [{"$patch": "replace"}, "10.0.0.9"],
                "strategy": {"$retainKeys": ["type"], "type": "X"}
            }
        }),
        &svc_keys(),
    );
    assert_eq!(
        got,
        json!({
            "metadata": {"name": "web", "labels": {"a": "1"}},
            "spec": {
                "ports": [{"port": 80}],
                "selector": {"app": "web"},
                "clusterIPs": ["10.0.0.9"],
                "strategy": {"type": "X"}
            }
        })
    );
}

#[test]
fn owner_references_merge_by_uid() {
    let keys = MergeKeys::builtin("", "ConfigMap");
    let target = json!({"metadata": {"ownerReferences": [
        {"uid": "u1", "kind": "A", "name": "a"},
        {"uid": "u2", "kind": "B", "name": "b"}
    ]}});
    let got = smp(
        target,
        json!({"metadata": {"ownerReferences": [
            {"uid": "u2", "controller": true},
            {"uid": "u1", "$patch": "delete"}
        ]}}),
        &keys,
    );
    assert_eq!(
        got["metadata"]["ownerReferences"],
        json!([{"uid": "u2", "kind": "B", "name": "b", "controller": true}])
    );
}

#[test]
fn status_conditions_merge_by_type() {
    let ns = json!({"kind": "Namespace", "status": {"phase": "Active", "conditions": [
        {"type": "A", "status": "True"}, {"type": "B", "status": "False"}
    ]}});
    let got = smp(
        ns.clone(),
        json!({"status": {"conditions": [{"type": "B", "status": "True"}]}}),
        &MergeKeys::builtin("", "Namespace"),
    );
    assert_eq!(
        got["status"]["conditions"],
        json!([{"type": "A", "status": "True"}, {"type": "B", "status": "True"}])
    );
    // CustomResourceDefinition conditions carry no patch tags: replaced.
    let got = smp(
        ns,
        json!({"status": {"conditions": [{"type": "B", "status": "True"}]}}),
        &MergeKeys::builtin("apiextensions.k8s.io", "CustomResourceDefinition"),
    );
    assert_eq!(
        got["status"]["conditions"],
        json!([{"type": "B", "status": "True"}])
    );
}

#[test]
fn nested_keyed_lists_use_dotted_paths_without_indices() {
    let keys = MergeKeys::new()
        .with_key("spec.containers", "name")
        .with_key("spec.containers.ports", "containerPort");
    let pod = json!({"spec": {"containers": [
        {"name": "app", "image": "a:1", "ports": [{"containerPort": 80}, {"containerPort": 81}]}
    ]}});
    let got = smp(
        pod,
        json!({"spec": {"containers": [
            {"name": "app", "ports": [{"containerPort": 81, "protocol": "UDP"}]}
        ]}}),
        &keys,
    );
    assert_eq!(
        got["spec"]["containers"][0],
        json!({"name": "app", "image": "a:1",
               "ports": [{"containerPort": 80}, {"containerPort": 81, "protocol": "UDP"}]})
    );
}

#[test]
fn keyed_list_errors_are_malformed_without_values() {
    let secret = json!({"kind": "Secret", "data": {"password": "c2VjcmV0"}, "spec": {"ports": []}});
    for patch in [
        json!({"spec": {"ports": [{"name": "no-port"}]}, "data": {"password": "bmV3c2VjcmV0"}}),
        json!({"spec": {"ports": ["bmV3c2VjcmV0"]}}),
    ] {
        let err = smp_err(secret.clone(), patch.clone(), &svc_keys());
        assert!(matches!(err, PatchError::Malformed(_)), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("spec.ports"), "{msg}");
        assert!(!msg.contains("c2VjcmV0") && !msg.contains("bmV3"), "{msg}");
    }
}

#[test]
fn non_object_patch_is_malformed() {
    for patch in [json!([]), json!(null), json!("x")] {
        let err = smp_err(service(), patch, &svc_keys());
        assert!(matches!(err, PatchError::Malformed(_)), "{err}");
    }
}

#[test]
fn empty_patch_and_dollar_named_fields() {
    assert_eq!(smp(service(), json!({}), &svc_keys()), service());
    // JSON-schema fields such as `$ref` are fields, not directives.
    let got = smp(
        json!({"spec": {"schema": {"type": "object"}}}),
        json!({"spec": {"schema": {"$ref": "#/defs/x"}}}),
        &MergeKeys::new(),
    );
    assert_eq!(
        got,
        json!({"spec": {"schema": {"type": "object", "$ref": "#/defs/x"}}})
    );
}

//! Scenario tests of [`apply`] on realistic objects (helpers shared with `update_tests`).

use super::*;
use serde_json::{Value, json};

pub(super) const T1: &str = "2024-05-01T10:00:00Z";
pub(super) const T2: &str = "2024-05-01T10:05:00Z";
pub(super) const T3: &str = "2024-05-01T10:10:00Z";

pub(super) fn ssa(
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    schema: &Schema,
    now: &str,
) -> Result<Value, ApplyConflicts> {
    ssa_sub(live, applied, manager, force, schema, None, now)
}

pub(super) fn ssa_sub(
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    schema: &Schema,
    subresource: Option<&str>,
    now: &str,
) -> Result<Value, ApplyConflicts> {
    let api_version = applied["apiVersion"].as_str().unwrap_or("v1");
    apply(&ApplyRequest {
        live,
        applied,
        manager,
        force,
        schema,
        subresource,
        api_version,
        now,
    })
}

pub(super) fn entry<'v>(obj: &'v Value, manager: &str) -> &'v Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == manager)
        .unwrap_or_else(|| panic!("no entry for {manager} in {obj:#}"))
}

pub(super) fn managers(obj: &Value) -> Vec<String> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    format!(
                        "{}/{}",
                        e["manager"].as_str().unwrap(),
                        e["operation"].as_str().unwrap()
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "settings", "namespace": "apps"}, "data": data})
}

#[test]
fn configmap_applied_by_two_managers() {
    let schema = Schema::builtin("", "ConfigMap");
    let first = ssa(
        None,
        &cm(json!({"a": "1", "b": "2"})),
        "alpha",
        false,
        &schema,
        T1,
    )
    .unwrap();
    assert_eq!(first["data"], json!({"a": "1", "b": "2"}));
    assert_eq!(
        first["metadata"]["managedFields"],
        json!([{"manager": "alpha", "operation": "Apply", "apiVersion": "v1", "time": T1,
                "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}, "f:b": {}}}}])
    );

    // Same value for b: shared ownership, no conflict; alpha's entry keeps its time.
    let second = ssa(
        Some(&first),
        &cm(json!({"b": "2", "c": "3"})),
        "beta",
        false,
        &schema,
        T2,
    )
    .unwrap();
    assert_eq!(second["data"], json!({"a": "1", "b": "2", "c": "3"}));
    assert_eq!(managers(&second), vec!["alpha/Apply", "beta/Apply"]);
    assert_eq!(entry(&second, "alpha")["time"], T1);
    assert_eq!(
        entry(&second, "alpha")["fieldsV1"],
        json!({"f:data": {"f:a": {}, "f:b": {}}})
    );
    assert_eq!(
        entry(&second, "beta")["fieldsV1"],
        json!({"f:data": {"f:b": {}, "f:c": {}}})
    );

    // A different value for b conflicts with alpha.
    let err = ssa(
        Some(&second),
        &cm(json!({"b": "X"})),
        "beta",
        false,
        &schema,
        T3,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "alpha": .data.b"#
    );
    assert_eq!(err.conflicts[0].0, "alpha");

    // Forced: alpha loses b; c, which only beta applied, goes away.
    let forced = ssa(
        Some(&second),
        &cm(json!({"b": "X"})),
        "beta",
        true,
        &schema,
        T3,
    )
    .unwrap();
    assert_eq!(forced["data"], json!({"a": "1", "b": "X"}));
    assert_eq!(
        entry(&forced, "alpha")["fieldsV1"],
        json!({"f:data": {"f:a": {}}})
    );
    assert_eq!(
        entry(&forced, "beta")["fieldsV1"],
        json!({"f:data": {"f:b": {}}})
    );
    assert_eq!(entry(&forced, "beta")["time"], T3);
}

#[test]
fn applying_the_same_configuration_again_is_a_no_op() {
    let schema = Schema::builtin("", "ConfigMap");
    let config = cm(json!({"a": "1"}));
    let mut live = ssa(None, &config, "alpha", false, &schema, T1).unwrap();
    // What the server adds must survive untouched.
    live["metadata"]["uid"] = json!("0d5c");
    live["metadata"]["resourceVersion"] = json!("7");
    live["metadata"]["creationTimestamp"] = json!(T1);
    let again = ssa(Some(&live), &config, "alpha", false, &schema, T3).unwrap();
    assert_eq!(again, live);
    assert_eq!(
        serde_json::to_string(&again).unwrap(),
        serde_json::to_string(&live).unwrap()
    );
    // An update that changes nothing leaves it equal too.
    let mut same = live.clone();
    record_update(
        Some(&live),
        &mut same,
        "kubectl-edit",
        &schema,
        None,
        "v1",
        T3,
    );
    assert_eq!(same, live);
    // A second manager applying the identical value changes only managedFields: as upstream,
    // its entry has no time (the object did not change), so it sorts first.
    let shared = ssa(Some(&live), &config, "beta", false, &schema, T2).unwrap();
    assert_eq!(shared["data"], live["data"]);
    assert_eq!(entry(&shared, "alpha")["time"], T1);
    assert_eq!(entry(&shared, "beta").get("time"), None);
    assert_eq!(shared["metadata"]["managedFields"][0]["manager"], "beta");
}

#[test]
fn fields_no_longer_applied_are_removed_unless_owned_by_someone_else() {
    let schema = Schema::builtin("", "ConfigMap");
    let with_labels = |labels: Value, data: Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "s", "labels": labels, "finalizers": ["example.com/keep"]},
               "data": data})
    };
    let live = ssa(
        None,
        &with_labels(json!({"a": "1", "b": "2"}), json!({"k": "v"})),
        "alpha",
        false,
        &schema,
        T1,
    )
    .unwrap();
    assert_eq!(
        entry(&live, "alpha")["fieldsV1"],
        json!({"f:data": {"f:k": {}},
               "f:metadata": {"f:finalizers": {"v:\"example.com/keep\"": {}},
                              "f:labels": {"f:a": {}, "f:b": {}}}})
    );
    // Someone else adds a label with a plain update.
    let mut edited = live.clone();
    edited["metadata"]["labels"]["c"] = json!("3");
    record_update(
        Some(&live),
        &mut edited,
        "kubectl-label",
        &schema,
        None,
        "v1",
        T2,
    );
    assert_eq!(
        entry(&edited, "kubectl-label")["fieldsV1"],
        json!({"f:metadata": {"f:labels": {"f:c": {}}}})
    );
    // alpha drops label b, the finalizer and all data.
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "s", "labels": {"a": "1"}}});
    let out = ssa(Some(&edited), &config, "alpha", false, &schema, T3).unwrap();
    assert_eq!(out["metadata"]["labels"], json!({"a": "1", "c": "3"}));
    assert!(out["metadata"].get("finalizers").is_none(), "{out:#}");
    assert!(out.get("data").is_none(), "{out:#}");
    assert_eq!(
        entry(&out, "alpha")["fieldsV1"],
        json!({"f:metadata": {"f:labels": {"f:a": {}}}})
    );
}

fn service(ports: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": "web", "namespace": "apps", "labels": {"app": "web"}},
           "spec": {"type": "ClusterIP", "selector": {"app": "web"}, "ports": ports}})
}

#[test]
fn service_created_by_update_then_applied_with_ports() {
    let schema = Schema::builtin("", "Service");
    let mut created =
        service(json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]));
    record_update(
        None,
        &mut created,
        "kubectl-create",
        &schema,
        None,
        "v1",
        T1,
    );
    assert_eq!(
        serde_json::to_string(&entry(&created, "kubectl-create")["fieldsV1"]).unwrap(),
        concat!(
            r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:ports":{".":{},"#,
            r#""k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{},"f:targetPort":{}}},"#,
            r#""f:selector":{},"f:type":{}}}"#
        )
    );

    // Apply without protocol: the key defaults to TCP, so this is the same port.
    let config = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "apps"},
                        "spec": {"ports": [{"port": 80, "targetPort": 9090}, {"port": 443, "targetPort": 8443}]}});
    let err = ssa(Some(&created), &config, "gitops", false, &schema, T2).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-create" using v1: .spec.ports[port=80,protocol="TCP"].targetPort"#
    );
    let out = ssa(Some(&created), &config, "gitops", true, &schema, T2).unwrap();
    assert_eq!(
        out["spec"]["ports"],
        json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 9090},
               {"port": 443, "targetPort": 8443}])
    );
    assert_eq!(
        serde_json::to_string(&entry(&out, "gitops")["fieldsV1"]).unwrap(),
        concat!(
            r#"{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{},"f:targetPort":{}},"#,
            r#""k:{\"port\":443,\"protocol\":\"TCP\"}":{".":{},"f:port":{},"f:targetPort":{}}}}}"#
        )
    );
    // kubectl-create keeps the rest of the port, not targetPort.
    let kc = FieldSet::from_fields_v1(&entry(&out, "kubectl-create")["fieldsV1"]).unwrap();
    let leaves: Vec<String> = kc.leaves().iter().map(|p| p.to_string()).collect();
    assert!(leaves.contains(&r#".spec.ports[port=80,protocol="TCP"].name"#.to_string()));
    assert!(!leaves.contains(&r#".spec.ports[port=80,protocol="TCP"].targetPort"#.to_string()));
    assert_eq!(
        managers(&out),
        vec!["gitops/Apply", "kubectl-create/Update"]
    );

    // Dropping port 443 from the configuration removes that port only.
    let config = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "apps"},
                        "spec": {"ports": [{"port": 80, "targetPort": 9090}]}});
    let out = ssa(Some(&out), &config, "gitops", false, &schema, T3).unwrap();
    assert_eq!(
        out["spec"]["ports"],
        json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 9090}])
    );
}

pub(super) fn widget_schema() -> Schema {
    Schema::from_openapi_v3(&json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "args": {"type": "array", "items": {"type": "string"}}
            }},
            "status": {"type": "object", "properties": {
                "conditions": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["type"],
                    "items": {"type": "object", "properties": {
                        "type": {"type": "string"}, "status": {"type": "string"},
                        "reason": {"type": "string"}}}}
            }}
        }
    }))
}

pub(super) fn widget(body: Value) -> Value {
    let mut w = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "w1", "namespace": "apps"}});
    for (k, v) in body.as_object().unwrap() {
        w[k] = v.clone();
    }
    w
}

#[test]
fn custom_resource_with_atomic_list_and_condition_map_list() {
    let schema = widget_schema();
    let live = ssa(
        None,
        &widget(json!({"spec": {"replicas": 1, "args": ["a", "b"]}})),
        "gitops",
        false,
        &schema,
        T1,
    )
    .unwrap();
    assert_eq!(
        entry(&live, "gitops")["fieldsV1"],
        json!({"f:spec": {"f:args": {}, "f:replicas": {}}})
    );

    // Two controllers own one condition each through /status.
    let cond = |t: &str, s: &str| json!({"type": t, "status": s});
    let live = ssa_sub(
        Some(&live),
        &widget(json!({"status": {"conditions": [cond("Ready", "True")]}})),
        "ready-ctl",
        false,
        &schema,
        Some("status"),
        T2,
    )
    .unwrap();
    let live = ssa_sub(
        Some(&live),
        &widget(json!({"status": {"conditions": [cond("Synced", "True")]}})),
        "sync-ctl",
        false,
        &schema,
        Some("status"),
        T2,
    )
    .unwrap();
    assert_eq!(
        live["status"]["conditions"],
        json!([cond("Ready", "True"), cond("Synced", "True")])
    );
    let sync = entry(&live, "sync-ctl");
    assert_eq!(sync["subresource"], "status");
    assert_eq!(
        sync["fieldsV1"],
        json!({"f:status": {"f:conditions": {"k:{\"type\":\"Synced\"}": {".": {}, "f:status": {}, "f:type": {}}}}})
    );
    // A condition owned by another controller conflicts.
    let err = ssa_sub(
        Some(&live),
        &widget(json!({"status": {"conditions": [cond("Ready", "False")]}})),
        "sync-ctl",
        false,
        &schema,
        Some("status"),
        T3,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "ready-ctl" with subresource "status": .status.conditions[type="Ready"].status"#
    );
    // Applying an empty list of conditions removes only sync-ctl's condition, and its entry.
    let out = ssa_sub(
        Some(&live),
        &widget(json!({"status": {"conditions": []}})),
        "sync-ctl",
        false,
        &schema,
        Some("status"),
        T3,
    )
    .unwrap();
    assert_eq!(out["status"]["conditions"], json!([cond("Ready", "True")]));
    assert_eq!(managers(&out), vec!["gitops/Apply", "ready-ctl/Apply"]);

    // The atomic list is one field: any other value conflicts, and force replaces it whole.
    let config = widget(json!({"spec": {"args": ["c"]}}));
    let err = ssa(Some(&out), &config, "tuner", false, &schema, T3).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "gitops": .spec.args"#
    );
    let forced = ssa(Some(&out), &config, "tuner", true, &schema, T3).unwrap();
    assert_eq!(forced["spec"], json!({"replicas": 1, "args": ["c"]}));
    assert_eq!(
        entry(&forced, "gitops")["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}}})
    );
}

#[test]
fn several_conflicts_are_listed_per_manager() {
    let schema = widget_schema();
    let live = ssa(
        None,
        &widget(json!({"spec": {"replicas": 1, "args": ["a"]}})),
        "gitops",
        false,
        &schema,
        T1,
    )
    .unwrap();
    let err = ssa(
        Some(&live),
        &widget(json!({"spec": {"replicas": 2, "args": ["b"]}})),
        "other",
        false,
        &schema,
        T2,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 2 conflicts: conflicts with \"gitops\":\n- .spec.args\n- .spec.replicas"
    );
}

#[test]
fn undecodable_entries_are_dropped() {
    let schema = Schema::builtin("", "ConfigMap");
    let mut live = ssa(None, &cm(json!({"a": "1"})), "gitops", false, &schema, T1).unwrap();
    live["metadata"]["managedFields"]
        .as_array_mut()
        .unwrap()
        .extend([
            json!("junk"),
            json!({"manager": "x", "operation": "Update", "apiVersion": "v1",
                                        "fieldsType": "FieldsV1", "fieldsV1": {"nonsense": 1}}),
        ]);
    let out = ssa(
        Some(&live),
        &cm(json!({"a": "2"})),
        "gitops",
        false,
        &schema,
        T2,
    )
    .unwrap();
    assert_eq!(out["data"]["a"], "2");
    assert_eq!(managers(&out), vec!["gitops/Apply"]);
}

#[test]
fn finalizers_are_a_set_merged_in_order() {
    let schema = Schema::builtin("", "ConfigMap");
    let with_finalizers = |f: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s", "finalizers": f}});
    let live = ssa(
        None,
        &with_finalizers(json!(["a.io/x"])),
        "gitops",
        false,
        &schema,
        T1,
    )
    .unwrap();
    let live = ssa(
        Some(&live),
        &with_finalizers(json!(["b.io/y", "a.io/x"])),
        "ctl",
        false,
        &schema,
        T2,
    )
    .unwrap();
    assert_eq!(live["metadata"]["finalizers"], json!(["b.io/y", "a.io/x"]));
    // gitops stops applying its finalizer, but ctl applies it too: it stays.
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}});
    let out = ssa(Some(&live), &config, "gitops", false, &schema, T3).unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["b.io/y", "a.io/x"]));
    assert_eq!(managers(&out), vec!["ctl/Apply"]);
    let out = ssa(
        Some(&out),
        &with_finalizers(json!(["b.io/y"])),
        "ctl",
        false,
        &schema,
        T3,
    )
    .unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["b.io/y"]));
    assert_eq!(
        entry(&out, "ctl")["fieldsV1"],
        json!({"f:metadata": {"f:finalizers": {"v:\"b.io/y\"": {}}}})
    );
}

#[test]
fn unknown_shapes_own_every_free_form_key() {
    let schema = Schema::any_object();
    let obj = json!({"apiVersion": "example.com/v1", "kind": "Thing",
                     "metadata": {"name": "t", "namespace": "n", "uid": "u", "resourceVersion": "3",
                                  "annotations": {"note": "x"}},
                     "spec": {"size": 2, "list": [1, 2], "nested": {"deep": true}}});
    assert_eq!(
        FieldSet::from_object(&obj, &schema).to_fields_v1(),
        json!({"f:metadata": {"f:annotations": {"f:note": {}}},
               "f:spec": {".": {}, "f:list": {}, "f:nested": {".": {}, "f:deep": {}}, "f:size": {}}})
    );
}

#[test]
fn garbage_managed_fields_never_panic() {
    let schema = Schema::builtin("", "ConfigMap");
    for garbage in [
        json!("nope"),
        json!({"a": 1}),
        json!([null, 3, [], {"operation": 1}]),
    ] {
        let mut live = cm(json!({"a": "1"}));
        live["metadata"]["managedFields"] = garbage;
        let out = ssa(
            Some(&live),
            &cm(json!({"a": "1"})),
            "gitops",
            false,
            &schema,
            T1,
        )
        .unwrap();
        assert_eq!(
            managers(&out),
            vec!["gitops/Apply", "before-first-apply/Update"]
        );
        let mut upd = live.clone();
        record_update(Some(&live), &mut upd, "x", &schema, None, "v1", T1);
    }
}

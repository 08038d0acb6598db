//! Scenario tests of [`record_update`]: edits taking fields from appliers, untracked objects,
//! status writes and per-version Update entries.

use super::apply_tests::{T1, T2, T3, cm, entry, managers, ssa, widget, widget_schema};
use super::*;
use serde_json::json;

#[test]
fn kubectl_edit_takes_a_field_from_the_applier() {
    let schema = Schema::builtin("", "ConfigMap");
    let live = ssa(
        None,
        &cm(json!({"a": "1", "b": "2"})),
        "gitops",
        false,
        &schema,
        T1,
    )
    .unwrap();
    let mut edited = live.clone();
    edited["data"]["a"] = json!("changed");
    record_update(
        Some(&live),
        &mut edited,
        "kubectl-edit",
        &schema,
        None,
        "v1",
        T2,
    );
    assert_eq!(
        entry(&edited, "gitops")["fieldsV1"],
        json!({"f:data": {"f:b": {}}})
    );
    assert_eq!(
        entry(&edited, "kubectl-edit"),
        &json!({"manager": "kubectl-edit", "operation": "Update", "apiVersion": "v1", "time": T2,
                "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}})
    );
    assert_eq!(
        managers(&edited),
        vec!["gitops/Apply", "kubectl-edit/Update"]
    );
    // The agent re-applying its value now conflicts with the edit.
    let err = ssa(
        Some(&edited),
        &cm(json!({"a": "1", "b": "2"})),
        "gitops",
        false,
        &schema,
        T3,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.a"#
    );
    let restored = ssa(
        Some(&edited),
        &cm(json!({"a": "1", "b": "2"})),
        "gitops",
        true,
        &schema,
        T3,
    )
    .unwrap();
    assert_eq!(restored["data"], json!({"a": "1", "b": "2"}));
    assert_eq!(managers(&restored), vec!["gitops/Apply"]);
    // Removing a field by update drops it from every set.
    let mut trimmed = restored.clone();
    trimmed["data"].as_object_mut().unwrap().shift_remove("b");
    record_update(
        Some(&restored),
        &mut trimmed,
        "kubectl-edit",
        &schema,
        None,
        "v1",
        T3,
    );
    assert_eq!(
        entry(&trimmed, "gitops")["fieldsV1"],
        json!({"f:data": {"f:a": {}}})
    );
    assert_eq!(managers(&trimmed), vec!["gitops/Apply"]);
}

#[test]
fn objects_without_managed_fields() {
    let schema = Schema::builtin("", "ConfigMap");
    let untracked = cm(json!({"a": "1"}));
    // An update of an existing untracked object stays untracked.
    let mut updated = cm(json!({"a": "2"}));
    record_update(
        Some(&untracked),
        &mut updated,
        "kubectl",
        &schema,
        None,
        "v1",
        T1,
    );
    assert!(updated["metadata"].get("managedFields").is_none());
    // The first apply credits what was there to before-first-apply.
    let err = ssa(
        Some(&untracked),
        &cm(json!({"a": "9"})),
        "gitops",
        false,
        &schema,
        T2,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.a"#
    );
    let out = ssa(
        Some(&untracked),
        &cm(json!({"a": "1", "b": "2"})),
        "gitops",
        false,
        &schema,
        T2,
    )
    .unwrap();
    assert_eq!(
        managers(&out),
        vec!["gitops/Apply", "before-first-apply/Update"]
    );
    // managedFields: [{}] resets them.
    let mut reset = out.clone();
    reset["metadata"]["managedFields"] = json!([{}]);
    record_update(Some(&out), &mut reset, "kubectl", &schema, None, "v1", T3);
    assert!(reset["metadata"].get("managedFields").is_none());
}

#[test]
fn status_update_is_recorded_with_its_subresource() {
    let schema = widget_schema();
    let live = ssa(
        None,
        &widget(json!({"spec": {"replicas": 1}})),
        "gitops",
        false,
        &schema,
        T1,
    )
    .unwrap();
    let mut new = live.clone();
    new["status"] = json!({"conditions": [{"type": "Ready", "status": "True"}]});
    record_update(
        Some(&live),
        &mut new,
        "widget-controller",
        &schema,
        Some("status"),
        "example.com/v1",
        T2,
    );
    let e = entry(&new, "widget-controller");
    assert_eq!(e["subresource"], "status");
    assert_eq!(
        e["fieldsV1"],
        json!({"f:status": {".": {}, "f:conditions": {".": {},
               "k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}, "f:type": {}}}}})
    );
    // A status write cannot replace managedFields.
    let mut sneaky = new.clone();
    sneaky["metadata"]["managedFields"] = json!([]);
    record_update(
        Some(&new),
        &mut sneaky,
        "widget-controller",
        &schema,
        Some("status"),
        "example.com/v1",
        T3,
    );
    assert_eq!(sneaky, new);
}

#[test]
fn update_entries_are_per_api_version() {
    let schema = Schema::builtin("", "ConfigMap");
    let mut v1 = cm(json!({"a": "1"}));
    record_update(None, &mut v1, "ctl", &schema, None, "v1", T1);
    let mut v2 = v1.clone();
    v2["data"]["b"] = json!("2");
    record_update(Some(&v1), &mut v2, "ctl", &schema, None, "v2", T2);
    let versions: Vec<&str> = v2["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["apiVersion"].as_str().unwrap())
        .collect();
    assert_eq!(versions, vec!["v1", "v2"]);
}

#[test]
fn an_object_reference_is_owned_as_one_field() {
    let schema = Schema::builtin("", "Event");
    let mut event = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
        "involvedObject": {"kind": "Pod", "name": "p"}, "message": "m"});
    record_update(None, &mut event, "kubectl", &schema, None, "v1", T1);
    assert_eq!(
        entry(&event, "kubectl")["fieldsV1"],
        json!({"f:involvedObject": {}, "f:message": {}})
    );
}

#[test]
fn an_update_through_another_api_group_drops_that_groups_entries() {
    let schema = Schema::builtin("", "Event");
    let mut event = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
        "involvedObject": {"kind": "Pod", "name": "p"}, "message": "m"});
    record_update(None, &mut event, "a", &schema, None, "events.k8s.io/v1", T1);
    let mut changed = event.clone();
    changed["count"] = json!(2);
    record_update(Some(&event), &mut changed, "b", &schema, None, "v1", T2);
    assert_eq!(managers(&changed), vec!["b/Update"]);
}

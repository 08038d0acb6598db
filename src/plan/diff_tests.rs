//! Tests of [`super`]: diffs, hidden values, and a diff after an apply converging.

use super::*;
use serde_json::json;

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "ns"}, "data": data})
}

fn secret(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"}, "data": data})
}

#[test]
fn encrypted_fields_say_only_whether_they_changed() {
    let p = vec!["/spec/clientSecret".to_string()];
    let obj = |v: &str| json!({"spec": {"clientSecret": v, "other": 1}});
    let (mut o, mut n) = (Some(obj("old-value")), Some(obj("new-value")));
    hide_encrypted_values(&mut o, &mut n, &p);
    assert_eq!(o.unwrap()["spec"]["clientSecret"], HIDDEN_BEFORE);
    assert_eq!(n.unwrap()["spec"]["clientSecret"], HIDDEN_CHANGED);
    let (mut o, mut n) = (Some(obj("same")), Some(obj("same")));
    hide_encrypted_values(&mut o, &mut n, &p);
    assert_eq!(n.unwrap()["spec"]["clientSecret"], HIDDEN_UNCHANGED);
    let (mut o, mut n) = (None, Some(obj("new-value")));
    hide_encrypted_values(&mut o, &mut n, &p);
    assert_eq!(n.unwrap()["spec"]["clientSecret"], HIDDEN_ADDED);
    // Through a whole diff: the annotation names the fields, the value never shows.
    let cr = |v: &str| {
        json!({"apiVersion": "example.com/v1", "kind": "Thing",
            "metadata": {"name": "t", "namespace": "ns", "annotations": {
                crate::decrypt::fields::ENCRYPTED_FIELDS: "[\"/spec/clientSecret\"]"}},
            "spec": {"clientSecret": v, "other": 1}})
    };
    let d = diff_object(Some(&cr("new-plaintext")), Some(&cr("old-plaintext")));
    assert_eq!(d.action, Action::Update);
    assert!(!d.diff.contains("plaintext"), "{}", d.diff);
    assert!(d.diff.contains(HIDDEN_CHANGED), "{}", d.diff);
    let d = diff_revisions(Some(&cr("new-plaintext")), None);
    assert!(!d.diff.contains("plaintext"), "{}", d.diff);
}

#[test]
fn create_update_unchanged_delete() {
    let desired = cm(json!({"a": "1"}));
    let mut live = cm(json!({"a": "1"}));
    live["metadata"]["uid"] = json!("123");

    let create = diff_object(Some(&desired), None);
    assert_eq!(
        (create.action, create.key.to_string().as_str()),
        (Action::Create, "ConfigMap/ns/cfg")
    );
    assert!(
        create
            .diff
            .starts_with("--- live/ConfigMap/ns/cfg\n+++ desired/ConfigMap/ns/cfg\n"),
        "{}",
        create.diff
    );
    assert!(
        create.diff.contains("+  a: '1'") || create.diff.contains("+  a: \"1\""),
        "{}",
        create.diff
    );

    let same = diff_object(Some(&desired), Some(&live));
    assert_eq!((same.action, same.diff.as_str()), (Action::Unchanged, ""));

    let update = diff_object(Some(&cm(json!({"a": "2"}))), Some(&live));
    assert_eq!(update.action, Action::Update);
    let changed: Vec<&str> = update
        .diff
        .lines()
        .filter(|l| l.starts_with(['+', '-']) && !l.starts_with("+++") && !l.starts_with("---"))
        .collect();
    assert_eq!(changed.len(), 2, "{}", update.diff);
    assert!(!update.diff.contains("uid"), "{}", update.diff);

    let delete = diff_object(None, Some(&live));
    assert_eq!(delete.action, Action::Delete);
    assert!(
        delete
            .diff
            .lines()
            .skip(2)
            .filter(|l| !l.starts_with('@'))
            .all(|l| l.starts_with('-')),
        "{}",
        delete.diff
    );
    assert!(!delete.diff.contains("uid"), "{}", delete.diff);
}

#[test]
fn context_is_three_lines() {
    let many: Map<String, Value> = (0..20)
        .map(|i| (format!("k{i:02}"), json!(i.to_string())))
        .collect();
    let mut changed = many.clone();
    changed.insert("k10".into(), json!("changed"));
    let d = diff_object(
        Some(&cm(Value::Object(changed))),
        Some(&cm(Value::Object(many))),
    );
    let body: Vec<&str> = d.diff.lines().skip(3).collect();
    assert_eq!(body.len(), 3 + 2 + 3, "{}", d.diff);
}

#[test]
fn secret_values_never_shown() {
    let live = secret(json!({"same": "c2FtZQ==", "changes": "b2xk", "goes": "Z29uZQ=="}));
    let mut desired = secret(json!({"same": "c2FtZQ==", "changes": "bmV3"}));
    desired["stringData"] = json!({"added": "plaintext-secret"});
    let d = diff_object(Some(&desired), Some(&live));
    assert_eq!(d.action, Action::Update);
    for value in [
        "c2FtZQ==",
        "b2xk",
        "bmV3",
        "Z29uZQ==",
        "plaintext-secret",
        "cGxhaW50ZXh0LXNlY3JldA==",
    ] {
        assert!(!d.diff.contains(value), "leaked {value}:\n{}", d.diff);
    }
    assert!(
        d.diff.contains(&format!("-  changes: {HIDDEN_BEFORE}")),
        "{}",
        d.diff
    );
    assert!(
        d.diff.contains(&format!("+  changes: {HIDDEN_CHANGED}")),
        "{}",
        d.diff
    );
    assert!(
        d.diff.contains(&format!("   same: {HIDDEN_UNCHANGED}")),
        "{}",
        d.diff
    );
    assert!(
        d.diff.contains(&format!("+  added: {HIDDEN_ADDED}")),
        "{}",
        d.diff
    );
    // A key only live that no managed field gives the agent is outside the projection.
    assert!(!d.diff.contains("goes"), "{}", d.diff);

    let create = diff_object(Some(&desired), None);
    let delete = diff_object(None, Some(&live));
    for d in [&create, &delete] {
        assert!(
            !d.diff.contains("c2FtZQ==") && !d.diff.contains("plaintext"),
            "{}",
            d.diff
        );
    }
    assert!(
        create.diff.contains(&format!("+  added: {HIDDEN_ADDED}")),
        "{}",
        create.diff
    );
    assert!(
        delete.diff.contains(&format!("-  goes: {HIDDEN_REMOVED}")),
        "{}",
        delete.diff
    );
    assert!(diff_object(Some(&live), Some(&live)).diff.is_empty());
}

#[test]
fn key_falls_back_and_both_absent() {
    let d = diff_object(
        Some(&json!({"kind": "Thing", "metadata": {"name": "x"}})),
        None,
    );
    assert_eq!(d.key.to_string(), "Thing/x");
    assert_eq!(diff_object(None, None).action, Action::Unchanged);
}

#[test]
fn summary() {
    let a = |action| ObjectDiff {
        key: empty_key(),
        action,
        diff: String::new(),
    };
    let diffs = [
        a(Action::Create),
        a(Action::Create),
        a(Action::Update),
        a(Action::Unchanged),
    ];
    let s = UnitSummary::from_diffs(&diffs);
    assert_eq!(
        s.to_string(),
        "2 to create, 1 to update, 1 unchanged, 0 to delete"
    );
    assert!(s.has_changes());
    let s: UnitSummary = diffs[3..].iter().collect();
    assert!(!s.has_changes());
}

/// A managedFields entry of `manager`.
fn owned(manager: &str, operation: &str, fields: Value) -> Value {
    json!({"manager": manager, "operation": operation, "apiVersion": "v1",
           "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields})
}

/// `desired` as the API server returns it after the agent applied `applied`: server
/// metadata, a label and data key another manager added, and the agent's Apply entry.
fn served(desired: &Value, applied_fields: Value) -> Value {
    let mut live = desired.clone();
    let meta = live["metadata"].as_object_mut().unwrap();
    meta.insert("uid".into(), json!("6f1c"));
    meta.insert("resourceVersion".into(), json!("4711"));
    meta.insert("creationTimestamp".into(), json!("2026-01-01T00:00:00Z"));
    meta.insert("labels".into(), json!({"owner": "someone-else"}));
    meta.insert(
        "managedFields".into(),
        json!([
            owned(crate::marks::FIELD_MANAGER, "Apply", applied_fields),
            owned(
                "other",
                "Update",
                json!({"f:metadata": {"f:labels": {"f:owner": {}}},
                                            "f:data": {"f:theirs": {}}})
            )
        ]),
    );
    live["data"]["theirs"] = json!("dGhlaXJz");
    live
}

#[test]
fn a_no_op_shows_nothing() {
    let desired = cm(json!({"a": "1", "when": "2026-01-01T00:00:00Z"}));
    let mut live = served(&desired, json!({"f:data": {"f:a": {}, "f:when": {}}}));
    live["status"] = json!({"observed": true});
    let d = diff_object(Some(&desired), Some(&live));
    assert_eq!((d.action, d.diff.as_str()), (Action::Unchanged, ""));
}

#[test]
fn a_key_removed_from_git_shows_as_removal() {
    let applied = cm(json!({"a": "1", "b": "2"}));
    let live = served(&applied, json!({"f:data": {"f:a": {}, "f:b": {}}}));
    let d = diff_object(Some(&cm(json!({"a": "1"}))), Some(&live));
    assert_eq!(d.action, Action::Update);
    let changed: Vec<&str> = d
        .diff
        .lines()
        .filter(|l| l.starts_with(['+', '-']) && !l.starts_with("+++") && !l.starts_with("---"))
        .collect();
    assert_eq!(changed.len(), 1, "{}", d.diff);
    assert!(changed[0].starts_with("-  b:"), "{}", d.diff);
    assert!(
        !d.diff.contains("theirs") && !d.diff.contains("owner"),
        "{}",
        d.diff
    );
}

#[test]
fn diff_text_follows_the_desired_key_order() {
    let desired = json!({"apiVersion": "example.com/v1", "kind": "Pool",
                         "metadata": {"name": "p", "namespace": "ns"},
                         "spec": {"size": "Standard_D4s_v3", "memory": "1Gi", "count": 2}});
    let live = json!({"kind": "Pool", "apiVersion": "example.com/v1",
                      "spec": {"count": 3, "memory": "1024Mi", "size": "Standard_D4s_v3",
                               "defaulted": true},
                      "metadata": {"namespace": "ns", "name": "p", "generation": 7}});
    let d = diff_object(Some(&desired), Some(&live));
    assert_eq!(d.action, Action::Update);
    let body: Vec<&str> = d.diff.lines().skip(3).collect();
    assert_eq!(
        body,
        vec![
            " spec:",
            "   size: Standard_D4s_v3",
            "   memory: 1Gi",
            "-  count: 3",
            "+  count: 2",
        ],
        "{}",
        d.diff
    );
}

#[test]
fn secret_keys_removed_from_git_show_as_removed_without_values() {
    let applied = secret(json!({"user": "YWRtaW4=", "password": "aHVudGVyMg=="}));
    let live = served(
        &applied,
        json!({"f:data": {"f:user": {}, "f:password": {}}}),
    );
    let same = diff_object(Some(&applied), Some(&live));
    assert_eq!((same.action, same.diff.as_str()), (Action::Unchanged, ""));

    let d = diff_object(Some(&secret(json!({"user": "YWRtaW4="}))), Some(&live));
    assert_eq!(d.action, Action::Update);
    assert!(
        d.diff.contains(&format!("-  password: {HIDDEN_REMOVED}")),
        "{}",
        d.diff
    );
    assert!(
        d.diff.contains(&format!("   user: {HIDDEN_UNCHANGED}")),
        "{}",
        d.diff
    );
    for value in ["YWRtaW4=", "aHVudGVyMg==", "dGhlaXJz", "theirs"] {
        assert!(!d.diff.contains(value), "leaked {value}:\n{}", d.diff);
    }
}

mod converge {
    use super::super::*;
    use crate::machinery::ssa::{ApplyRequest, Schema, apply};
    use serde_json::json;

    /// Applies `desired` over `live` as the agent does (its field manager, forced).
    fn agent_applies(live: Option<&Value>, desired: &Value, now: &str) -> Value {
        let kind = desired["kind"].as_str().unwrap();
        apply(&ApplyRequest {
            live,
            applied: desired,
            manager: crate::marks::FIELD_MANAGER,
            force: true,
            schema: &Schema::builtin("", kind),
            subresource: None,
            api_version: "v1",
            now,
        })
        .unwrap()
    }

    fn service(ports: Value, selector: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "web", "namespace": "ns"},
               "spec": {"selector": selector, "ports": ports}})
    }

    #[test]
    fn a_removal_is_planned_once_and_applying_it_converges() {
        let first = service(
            json!([{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 8443}]),
            json!({"app": "web", "tier": "front"}),
        );
        let live = agent_applies(None, &first, "2026-01-01T00:00:00Z");
        assert_eq!(
            diff_object(Some(&first), Some(&live)).action,
            Action::Unchanged
        );

        let second = service(
            json!([{"port": 443, "targetPort": 8443}]),
            json!({"app": "web"}),
        );
        let plan = diff_object(Some(&second), Some(&live));
        assert_eq!(plan.action, Action::Update);
        assert!(plan.diff.contains("-  - port: 80"), "{}", plan.diff);
        assert!(plan.diff.contains("-    tier: front"), "{}", plan.diff);

        let live = agent_applies(Some(&live), &second, "2026-01-01T00:01:00Z");
        let again = diff_object(Some(&second), Some(&live));
        assert_eq!((again.action, again.diff.as_str()), (Action::Unchanged, ""));
    }
}

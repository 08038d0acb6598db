//! Drift: the fields git sets whose live value differs, and which other field managers own them
//! live (who changed them: `kubectl-edit`, a controller, ...).
//!
//! Both sides are normalised as for the plan diff ([`comparable`](super::normalize::comparable)):
//! server defaults, other managers' extra fields and spelling differences are not drift, and a
//! field the agent still manages but git no longer sets is not drift either (the plan shows it as
//! a removal). For a Secret, or an object with fields decrypted from a SOPS file, only paths are
//! reported, never values.

use super::diff::{Action, ObjectDiff, diff_object};
use super::normalize::{Ctx, Owned, Prepared, is_empty_container, match_items, project};
use crate::kinds::is_secret;
use crate::machinery::ssa::{FieldSet, PathElement, managed_sets};
use crate::marks::FIELD_MANAGER;
use serde_json::Value;

/// One leaf field git sets whose live value differs.
#[derive(Debug, Clone, PartialEq)]
pub struct DriftedField {
    /// Dotted path, list items by key or position: `spec.containers[name=app].image`,
    /// `spec.args[0]`.
    pub path: String,
    /// What git says; None for a Secret.
    pub desired: Option<Value>,
    /// What is live (None: absent, or a Secret).
    pub live: Option<Value>,
    /// Field managers other than the agent's that own this path live (e.g. `kubectl-edit`), in
    /// managedFields order; empty when none is recorded.
    pub managers: Vec<String>,
}

/// The leaf fields where `live` differs from `desired`, in desired order.
pub fn drifted_fields(desired: &Value, live: &Value) -> Vec<DriftedField> {
    let p = Prepared::new(desired, live);
    let cx = Ctx::root(&p.desired, false);
    let mut found = Vec::new();
    walk(
        &p.desired,
        Some(&p.live),
        p.owned(),
        cx,
        &mut Vec::new(),
        &mut found,
    );
    let others: Vec<(String, FieldSet)> = managed_sets(live)
        .into_iter()
        .filter(|(m, _, _)| m != FIELD_MANAGER)
        .map(|(m, _, set)| (m, set))
        .collect();
    // A Secret, or an object with fields that came encrypted (SOPS): paths only, never values.
    let hide = is_secret(&p.desired)
        || is_secret(live)
        || !crate::decrypt::fields::pointers_of(Some(desired), Some(live)).is_empty();
    found
        .into_iter()
        .map(|(path, d, l)| {
            let mut managers: Vec<String> = Vec::new();
            for (m, set) in &others {
                if owns_path(set, &path) && !managers.contains(m) {
                    managers.push(m.clone());
                }
            }
            DriftedField {
                path: path_string(&path),
                desired: (!hide).then_some(d),
                live: if hide { None } else { l },
                managers,
            }
        })
        .collect()
}

/// What a pass does with one object: the planned diff, and the fields that drifted. Drift is only
/// of an object git did not change since the agent applied it (`unchanged_in_git`), and is judged
/// by [`drifted_fields`], as `aro-gitops drift` judges it: when no field drifted, the object is
/// unchanged (nothing is written, even with self-heal).
pub fn judge(
    desired: &Value,
    live: Option<&Value>,
    unchanged_in_git: bool,
) -> (ObjectDiff, Vec<DriftedField>) {
    let mut diff = diff_object(Some(desired), live);
    let fields = match live {
        Some(l) if unchanged_in_git && diff.action == Action::Update => drifted_fields(desired, l),
        _ => return (diff, vec![]),
    };
    if fields.is_empty() {
        diff.action = Action::Unchanged;
        diff.diff.clear();
    }
    (diff, fields)
}

type Found = Vec<(Vec<PathElement>, Value, Option<Value>)>;

/// Walks `desired` to its leaves (scalars, empty containers, lists of scalars) beside `live`,
/// recording each leaf whose live projection differs.
fn walk(
    d: &Value,
    l: Option<&Value>,
    o: Owned,
    cx: Ctx,
    path: &mut Vec<PathElement>,
    out: &mut Found,
) {
    match (d, l) {
        // An atomic map or list the agent owns whole is one leaf.
        (Value::Object(dm), None | Some(Value::Object(_))) if !dm.is_empty() && !o.is_atomic() => {
            for (k, dv) in dm {
                let pe = PathElement::Field(k.clone());
                let lv = l.and_then(|l| l.get(k));
                path.push(pe.clone());
                walk(dv, lv, o.below(&pe), cx.field(k), path, out);
                path.pop();
            }
        }
        (Value::Array(da), None | Some(Value::Array(_)))
            if da.iter().any(Value::is_object) && !o.is_atomic() =>
        {
            let la = l.and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            for pair in match_items(la, da, o, false) {
                let Some(i) = pair.desired else { continue };
                path.push(pair.element.clone());
                let below = o.below(&pair.element);
                walk(
                    &da[i],
                    pair.live.map(|j| &la[j]),
                    below,
                    cx.item(),
                    path,
                    out,
                );
                path.pop();
            }
        }
        _ => {
            let lv = l.map(|l| project(l, Some(d), o, cx));
            let same = match &lv {
                Some(lv) => lv == d,
                None => is_empty_container(d),
            };
            if !same {
                out.push((path.clone(), d.clone(), lv));
            }
        }
    }
}

/// Whether `set` owns `path`: the path itself, something below it, or an ancestor owned whole.
fn owns_path(set: &FieldSet, path: &[PathElement]) -> bool {
    let mut node = set;
    for (i, pe) in path.iter().enumerate() {
        let below = node.child(pe).filter(|c| !c.is_empty());
        if i + 1 == path.len() {
            return node.has_member(pe) || below.is_some();
        }
        match below {
            Some(c) => node = c,
            None => return node.has_member(pe),
        }
    }
    false
}

/// `spec.containers[name=app].image`: fields joined by dots, list items in brackets by key
/// (`[name=x]`, `[containerPort=80,protocol=TCP]`), value (`[=x]`) or position (`[0]`).
fn path_string(path: &[PathElement]) -> String {
    let scalar = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut s = String::new();
    for pe in path {
        match pe {
            PathElement::Field(name) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(name);
            }
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(n, v)| format!("{n}={}", scalar(v)))
                    .collect();
                s.push_str(&format!("[{}]", parts.join(",")));
            }
            PathElement::Value(v) => s.push_str(&format!("[={}]", scalar(v))),
            PathElement::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machinery::ssa::{ApplyRequest, Schema, apply, record_update};
    use serde_json::json;

    const T1: &str = "2026-01-01T10:00:00Z";
    const T2: &str = "2026-01-01T10:05:00Z";

    /// `desired` applied by the agent, then changed by `kubectl edit` (a PATCH with fieldManager
    /// `kubectl-edit`, operation Update), as the local control plane records both.
    fn applied_then_edited(desired: &Value, schema: &Schema, edit: impl Fn(&mut Value)) -> Value {
        let api_version = desired["apiVersion"].as_str().unwrap();
        let live = apply(&ApplyRequest {
            live: None,
            applied: desired,
            manager: FIELD_MANAGER,
            force: false,
            schema,
            subresource: None,
            api_version,
            now: T1,
        })
        .unwrap();
        let mut edited = live.clone();
        edit(&mut edited);
        record_update(
            Some(&live),
            &mut edited,
            "kubectl-edit",
            schema,
            None,
            api_version,
            T2,
        );
        edited
    }

    fn paths(drift: &[DriftedField]) -> Vec<&str> {
        drift.iter().map(|d| d.path.as_str()).collect()
    }

    #[test]
    fn kubectl_edit_of_an_applied_field_is_drift_owned_by_kubectl_edit() {
        let desired = json!({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "settings", "namespace": "apps"},
                             "data": {"a": "1", "b": "2"}});
        let schema = Schema::builtin("", "ConfigMap");
        let live = applied_then_edited(&desired, &schema, |o| o["data"]["a"] = json!("changed"));
        // The control plane moved the field from the agent's Apply entry to kubectl-edit.
        let sets = managed_sets(&live);
        let owner = |m: &str| sets.iter().find(|(n, _, _)| n == m).unwrap();
        let a = [
            PathElement::Field("data".into()),
            PathElement::Field("a".into()),
        ];
        assert!(!owner(FIELD_MANAGER).2.has(&a));
        assert!(owner("kubectl-edit").2.has(&a));
        assert_eq!(
            owner("kubectl-edit").1,
            crate::machinery::ssa::Operation::Update
        );

        assert_eq!(
            drifted_fields(&desired, &live),
            vec![DriftedField {
                path: "data.a".into(),
                desired: Some(json!("1")),
                live: Some(json!("changed")),
                managers: vec!["kubectl-edit".into()],
            }]
        );
        assert!(drifted_fields(&desired, &desired).is_empty());
    }

    #[test]
    fn secret_drift_names_paths_never_values() {
        let desired = json!({"apiVersion": "v1", "kind": "Secret",
                             "metadata": {"name": "creds", "namespace": "apps"},
                             "data": {"user": "YWRtaW4=", "password": "aHVudGVyMg=="}});
        let schema = Schema::builtin("", "Secret");
        let live = applied_then_edited(&desired, &schema, |o| {
            o["data"]["password"] = json!("b3RoZXI=")
        });
        let drift = drifted_fields(&desired, &live);
        assert_eq!(
            drift,
            vec![DriftedField {
                path: "data.password".into(),
                desired: None,
                live: None,
                managers: vec!["kubectl-edit".into()],
            }]
        );
        // Missing from live: still no values.
        let mut gone = live.clone();
        gone["data"].as_object_mut().unwrap().shift_remove("user");
        let drift = drifted_fields(&desired, &gone);
        assert_eq!(paths(&drift), vec!["data.user", "data.password"]);
        assert!(
            drift
                .iter()
                .all(|d| d.desired.is_none() && d.live.is_none())
        );
    }

    #[test]
    fn secret_string_data_is_compared_as_the_data_the_server_stores() {
        let desired = json!({"apiVersion": "v1", "kind": "Secret",
                             "metadata": {"name": "creds", "namespace": "apps"},
                             "type": "Opaque", "stringData": {"password": "hunter2"}});
        // As the server stores it: folded into data, the agent owning `stringData` fields.
        let live = json!({"apiVersion": "v1", "kind": "Secret",
                          "metadata": {"name": "creds", "namespace": "apps", "managedFields": [
                              {"manager": FIELD_MANAGER, "operation": "Apply", "apiVersion": "v1",
                               "fieldsType": "FieldsV1", "fieldsV1": {
                                   "f:stringData": {"f:password": {}}, "f:type": {}}}]},
                          "type": "Opaque", "data": {"password": "aHVudGVyMg=="}});
        assert!(drifted_fields(&desired, &live).is_empty());
        let (d, l) = crate::plan::normalize::comparable(&desired, &live);
        assert_eq!(d, l, "the plan diff and drift agree");
        let (diff, fields) = judge(&desired, Some(&live), true);
        assert_eq!((diff.action, fields.len()), (Action::Unchanged, 0));
        let mut edited = live.clone();
        edited["data"]["password"] = json!("b3RoZXI=");
        let drift = drifted_fields(&desired, &edited);
        assert_eq!(paths(&drift), vec!["data.password"]);
        assert!(drift[0].desired.is_none() && drift[0].live.is_none());
        let (diff, fields) = judge(&desired, Some(&edited), true);
        assert_eq!(
            (diff.action, paths(&fields)),
            (Action::Update, vec!["data.password"])
        );
        assert!(!diff.diff.contains("b3RoZXI=") && !diff.diff.contains("aHVudGVyMg=="));
        // Changed in git: an update, not drift.
        let (diff, fields) = judge(&desired, Some(&edited), false);
        assert_eq!((diff.action, fields.len()), (Action::Update, 0));
    }

    #[test]
    fn only_what_drift_sees_makes_a_pass_write_an_object_git_did_not_change() {
        // The agent still owns a field git no longer sets (the diff shows it as a removal), yet
        // git did not change since the apply: drift sees nothing, so nothing is written.
        let desired = json!({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "c", "namespace": "apps"}, "data": {"a": "1"}});
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": "c", "namespace": "apps", "managedFields": [
                              {"manager": FIELD_MANAGER, "operation": "Apply", "apiVersion": "v1",
                               "fieldsType": "FieldsV1", "fieldsV1": {
                                   "f:data": {"f:a": {}, "f:b": {}}}}]},
                          "data": {"a": "1", "b": "2"}});
        assert_eq!(
            diff_object(Some(&desired), Some(&live)).action,
            Action::Update
        );
        let (diff, fields) = judge(&desired, Some(&live), true);
        assert_eq!(diff.action, Action::Unchanged);
        assert!(fields.is_empty() && diff.diff.is_empty());
        // Missing live: a create, never drift.
        let (diff, fields) = judge(&desired, None, true);
        assert_eq!((diff.action, fields.len()), (Action::Create, 0));
    }

    fn cluster_schema() -> Schema {
        Schema::from_openapi_v3(&json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "properties": {"type": "object", "properties": {
                    "platform": {"type": "object", "properties": {
                        "vmSize": {"type": "string"}, "diskSizeGiB": {"type": "integer"},
                        "subnetId": {"type": "string"}}}}},
                "containers": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {
                        "name": {"type": "string"}, "image": {"type": "string"},
                        "pullPolicy": {"type": "string"}}}}
            }}}
        }))
    }

    fn cluster(spec: Value) -> Value {
        json!({"apiVersion": "aro.example.com/v1", "kind": "HcpCluster",
               "metadata": {"name": "c1", "namespace": "fleet"}, "spec": spec})
    }

    #[test]
    fn nested_fields_and_list_items_edited_by_hand() {
        let desired = cluster(json!({
            "properties": {"platform": {"vmSize": "Standard_D4s_v3", "diskSizeGiB": 128}},
            "containers": [{"name": "agent", "image": "agent:1"},
                           {"name": "proxy", "image": "proxy:1"}]
        }));
        let live = applied_then_edited(&desired, &cluster_schema(), |o| {
            o["spec"]["properties"]["platform"]["vmSize"] = json!("Standard_D8s_v3");
            o["spec"]["containers"][1]["image"] = json!("proxy:hotfix");
            // Not drift: fields git does not set.
            o["spec"]["properties"]["platform"]["subnetId"] = json!("/subnets/x");
            o["spec"]["containers"][0]["pullPolicy"] = json!("Always");
        });
        let drift = drifted_fields(&desired, &live);
        assert_eq!(
            paths(&drift),
            vec![
                "spec.properties.platform.vmSize",
                "spec.containers[name=proxy].image"
            ]
        );
        assert!(drift.iter().all(|d| d.managers == vec!["kubectl-edit"]));
        assert_eq!(drift[1].desired, Some(json!("proxy:1")));
        assert_eq!(drift[1].live, Some(json!("proxy:hotfix")));
    }

    #[test]
    fn removed_from_git_is_not_drift_and_unknown_managers_are_empty() {
        let applied =
            cluster(json!({"properties": {"platform": {"vmSize": "a", "diskSizeGiB": 128}}}));
        let live = applied_then_edited(&applied, &cluster_schema(), |_| {});
        let desired = cluster(json!({"properties": {"platform": {"vmSize": "a"}}}));
        assert!(drifted_fields(&desired, &live).is_empty());

        // No managedFields at all: drift without managers; a missing field has no live value.
        let desired = cluster(
            json!({"properties": {"platform": {"vmSize": "b"}}, "replicas": 2,
                                     "tags": ["x"]}),
        );
        let live = cluster(json!({"properties": {"platform": {"vmSize": "a"}},
                                  "tags": ["x", "y"]}));
        let drift = drifted_fields(&desired, &live);
        assert_eq!(
            drift,
            vec![
                DriftedField {
                    path: "spec.properties.platform.vmSize".into(),
                    desired: Some(json!("b")),
                    live: Some(json!("a")),
                    managers: vec![],
                },
                DriftedField {
                    path: "spec.replicas".into(),
                    desired: Some(json!(2)),
                    live: None,
                    managers: vec![],
                },
                DriftedField {
                    path: "spec.tags".into(),
                    desired: Some(json!(["x"])),
                    live: Some(json!(["x", "y"])),
                    managers: vec![],
                },
            ]
        );
    }

    #[test]
    fn an_atomic_map_is_one_field() {
        let desired = json!({"apiVersion": "v1", "kind": "Service",
                             "metadata": {"name": "web", "namespace": "apps"},
                             "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}});
        let schema = Schema::builtin("", "Service");
        let live = applied_then_edited(&desired, &schema, |o| {
            o["spec"]["selector"]["tier"] = json!("front");
            o["spec"]["ports"][0]["targetPort"] = json!(8080);
        });
        assert_eq!(
            drifted_fields(&desired, &live),
            vec![DriftedField {
                path: "spec.selector".into(),
                desired: Some(json!({"app": "web"})),
                live: Some(json!({"app": "web", "tier": "front"})),
                managers: vec!["kubectl-edit".into()],
            }]
        );
    }

    #[test]
    fn ownership_of_a_path() {
        let set = FieldSet::from_fields_v1(&json!({
            "f:spec": {"f:selector": {}, "f:ports": {
                "k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:targetPort": {}}}}
        }))
        .unwrap();
        let f = |n: &str| PathElement::Field(n.into());
        let port = PathElement::Key(vec![
            ("port".into(), json!(80)),
            ("protocol".into(), json!("TCP")),
        ]);
        assert!(owns_path(
            &set,
            &[f("spec"), f("selector"), f("matchLabels"), f("app")]
        ));
        assert!(owns_path(
            &set,
            &[f("spec"), f("ports"), port.clone(), f("targetPort")]
        ));
        assert!(owns_path(&set, &[f("spec"), f("ports")]));
        assert!(!owns_path(
            &set,
            &[f("spec"), f("ports"), port.clone(), f("name")]
        ));
        assert!(!owns_path(&set, &[f("spec"), f("type")]));
        assert_eq!(
            path_string(&[f("spec"), f("ports"), port, f("targetPort")]),
            "spec.ports[port=80,protocol=TCP].targetPort"
        );
        assert_eq!(path_string(&[f("args"), PathElement::Index(0)]), "args[0]");
    }
}

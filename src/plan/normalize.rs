//! The one diff normaliser: turns a desired object and its live counterpart into two values that are
//! equal exactly when applying the desired object would change nothing the agent cares about.
//!
//! - Fields the server sets (`uid`, `resourceVersion`, `generation`, timestamps, `managedFields`, ...),
//!   `status`, and the `kubectl.kubernetes.io/last-applied-configuration` annotation are dropped.
//! - The live object is projected onto the fields the desired object sets plus the fields the
//!   agent's server-side-apply entry (manager [`FIELD_MANAGER`], operation Apply) manages, list
//!   items included ([`project`]): server defaults and other managers' fields do not show, a field
//!   removed from git that the agent still manages shows as a removal.
//! - `null` in a desired map means "absent" and is dropped; an empty desired map or list equals an
//!   absent one; numbers compare by value (`1 == 1.0`); strings equal as Kubernetes quantities or
//!   RFC 3339 instants take the desired spelling ([`format`]); map key order never matters, and the
//!   live side lists keys in the desired order.
//! - A desired Secret's `stringData` is folded into `data` (base64), as the API server stores it.

mod format;
mod project;

pub(crate) use project::{Ctx, Owned, is_empty_container, match_items, project};

use crate::machinery::ssa::{FieldSet, Operation, managed_sets};
use crate::marks::FIELD_MANAGER;
use base64::Engine as _;
use serde_json::{Map, Value};

/// `metadata` fields set by the API server, never by the agent.
const SERVER_METADATA: &[&str] = &[
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// Annotation written by `kubectl apply`; it holds a copy of the object (for a Secret, its data).
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Returns `(desired, live)` in comparable form: compare them with `==`.
pub fn comparable(desired: &Value, live: &Value) -> (Value, Value) {
    let p = Prepared::new(desired, live);
    let l = project(
        &p.live,
        Some(&p.desired),
        p.owned(),
        Ctx::root(&p.desired, true),
    );
    (p.desired, l)
}

/// Both sides cleaned of what never counts, and the live object's field ownership.
pub(crate) struct Prepared {
    pub desired: Value,
    pub live: Value,
    /// Fields the agent's Apply entries own.
    agent: FieldSet,
    /// Fields any manager owns.
    all: FieldSet,
}

impl Prepared {
    pub(crate) fn new(desired: &Value, live: &Value) -> Prepared {
        let mut agent = FieldSet::new();
        let mut all = FieldSet::new();
        for (manager, operation, set) in managed_sets(live) {
            if manager == FIELD_MANAGER && operation == Operation::Apply {
                agent = agent.union(&set);
            }
            all = all.union(&set);
        }
        let mut d = without_server_fields(desired);
        strip_nulls(&mut d);
        fold_secret_string_data(&mut d);
        canonical_numbers(&mut d);
        let mut l = without_server_fields(live);
        canonical_numbers(&mut l);
        Prepared {
            desired: d,
            live: l,
            agent,
            all,
        }
    }

    /// Ownership at the root of the live object.
    pub(crate) fn owned(&self) -> Owned<'_> {
        Owned::root(&self.agent, &self.all)
    }
}

/// A copy of `obj` without what the server sets (`status`, server metadata, the last-applied
/// annotation), made without copying those first (a live object's status and managedFields are
/// often most of it).
fn without_server_fields(obj: &Value) -> Value {
    let Some(map) = obj.as_object() else {
        return obj.clone();
    };
    let mut out = Map::with_capacity(map.len());
    for (k, v) in map {
        match (k.as_str(), v.as_object()) {
            ("status", _) => {}
            ("metadata", Some(meta)) => {
                let mut m = Map::with_capacity(meta.len());
                for (mk, mv) in meta {
                    match (mk.as_str(), mv.as_object()) {
                        (f, _) if SERVER_METADATA.contains(&f) => {}
                        ("annotations", Some(a)) => {
                            let kept = a
                                .iter()
                                .filter(|(ak, _)| ak.as_str() != LAST_APPLIED_ANNOTATION)
                                .map(|(ak, av)| (ak.clone(), av.clone()))
                                .collect();
                            m.insert(mk.clone(), Value::Object(kept));
                        }
                        _ => {
                            m.insert(mk.clone(), mv.clone());
                        }
                    }
                }
                out.insert(k.clone(), Value::Object(m));
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// Drops `null` values from maps, at any depth (also in maps inside lists).
fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// Integral floats become integers, so `1.0` and `1` compare (and print) the same.
fn canonical_numbers(v: &mut Value) {
    match v {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if f.fract() == 0.0 && f.is_finite() {
                if f >= 0.0 && f <= u64::MAX as f64 {
                    *v = Value::from(f as u64);
                } else if f < 0.0 && f >= i64::MIN as f64 {
                    *v = Value::from(f as i64);
                }
            }
        }
        Value::Object(map) => map.values_mut().for_each(canonical_numbers),
        Value::Array(items) => items.iter_mut().for_each(canonical_numbers),
        _ => {}
    }
}

/// The API server merges `stringData` into `data` (base64, `stringData` wins) and never returns it.
fn fold_secret_string_data(obj: &mut Value) {
    if !crate::kinds::is_secret(obj) {
        return;
    }
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let Some(Value::Object(string_data)) = map.shift_remove("stringData") else {
        return;
    };
    let data = map
        .entry("data")
        .or_insert_with(|| Value::Object(Map::new()));
    if !data.is_object() {
        *data = Value::Object(Map::new());
    }
    let data = data.as_object_mut().expect("just made an object");
    for (k, v) in string_data {
        let text = match v {
            Value::String(s) => s,
            other => other.to_string(),
        };
        data.insert(
            k,
            Value::String(base64::engine::general_purpose::STANDARD.encode(text)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn server_fields_status_and_foreign_keys_do_not_count() {
        let desired = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "ns", "labels": {"x": "1"}},
            "data": {"k": "v"}
        });
        let live = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": "a", "namespace": "ns", "uid": "u", "resourceVersion": "7", "generation": 3,
                "creationTimestamp": "2024-01-01T00:00:00Z", "managedFields": [{}], "selfLink": "/x",
                "labels": {"x": "1", "added-by-other": "y"},
                "annotations": {LAST_APPLIED_ANNOTATION: "{}"},
                "ownerReferences": [{"kind": "Foo", "name": "f"}]
            },
            "data": {"k": "v"},
            "status": {"phase": "whatever"},
            "extra": {"defaulted": true}
        });
        let (d, l) = comparable(&desired, &live);
        assert_eq!(d, l);
        assert_eq!(l["metadata"]["labels"], json!({"x": "1"}));
    }

    #[test]
    fn real_changes_show() {
        let desired = json!({"kind": "X", "spec": {"a": {"b": 2}, "list": [1, 2]}});
        let changed_leaf = json!({"kind": "X", "spec": {"a": {"b": 3, "c": 1}, "list": [1, 2]}});
        let changed_list = json!({"kind": "X", "spec": {"a": {"b": 2}, "list": [1, 2, 3]}});
        let missing = json!({"kind": "X", "spec": {"list": [1, 2]}});
        for live in [changed_leaf, changed_list, missing] {
            let (d, l) = comparable(&desired, &live);
            assert_ne!(d, l, "{live}");
        }
    }

    #[test]
    fn list_items_are_projected_and_scalar_lists_compare_whole() {
        let desired = json!({"spec": {"items": [{"a": 1}], "args": ["x", "y"]}});
        let live = json!({"spec": {"items": [{"a": 1, "defaulted": "x"}], "args": ["x", "y"]}});
        let (d, l) = comparable(&desired, &live);
        assert_eq!(d, l);
        let live = json!({"spec": {"items": [{"a": 1}], "args": ["x", "y", "z"]}});
        let (d, l) = comparable(&desired, &live);
        assert_ne!(d, l);
    }

    #[test]
    fn owner_references_kept_when_desired_sets_them() {
        let desired =
            json!({"metadata": {"name": "a", "ownerReferences": [{"kind": "A", "name": "o"}]}});
        let live =
            json!({"metadata": {"name": "a", "ownerReferences": [{"kind": "B", "name": "o"}]}});
        let (d, l) = comparable(&desired, &live);
        assert_ne!(d, l);
        assert_eq!(l["metadata"]["ownerReferences"][0]["kind"], "B");
    }

    #[test]
    fn numbers_by_value_and_nulls_as_absent() {
        let desired = json!({"spec": {"replicas": 1.0, "ratio": 0.5, "neg": -2.0, "gone": null}});
        let live = json!({"spec": {"replicas": 1, "ratio": 0.5, "neg": -2}});
        let (d, l) = comparable(&desired, &live);
        assert_eq!(d, l);
        assert_eq!(d["spec"]["replicas"], json!(1));
    }

    #[test]
    fn secret_string_data_folds_into_data() {
        let desired = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                             "data": {"a": "eA==", "b": "old"}, "stringData": {"b": "y"}});
        let live = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                          "data": {"a": "eA==", "b": "eQ=="}, "type": "Opaque"});
        let (d, l) = comparable(&desired, &live);
        assert_eq!(d, l);
        assert!(d.get("stringData").is_none());
    }

    #[test]
    fn inputs_are_not_modified() {
        let desired = json!({"metadata": {"name": "a", "uid": "x"}, "status": {}});
        let before = desired.clone();
        let _ = comparable(&desired, &desired);
        assert_eq!(desired, before);
    }

    /// A managedFields entry.
    pub(crate) fn entry(manager: &str, operation: &str, fields: Value) -> Value {
        json!({"manager": manager, "operation": operation, "apiVersion": "apps/v1",
               "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields})
    }

    fn deployment(spec: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web", "namespace": "apps", "labels": {"app": "web"}},
               "spec": spec})
    }

    /// What the agent applied, as git has it.
    fn desired_deployment() -> Value {
        deployment(json!({
            "replicas": 2,
            "template": {"spec": {"containers": [{
                "name": "app", "image": "web:1",
                "ports": [{"containerPort": 8080}],
                "resources": {"limits": {"cpu": "0.5", "memory": "1Gi"}}
            }]}}
        }))
    }

    /// The agent's Apply entry for [`desired_deployment`], as the API server records it.
    fn agent_fields() -> Value {
        json!({
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {},
                    "f:ports": {"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":
                        {".": {}, "f:containerPort": {}}},
                    "f:resources": {"f:limits": {"f:cpu": {}, "f:memory": {}}}}
            }}}}
        })
    }

    /// [`desired_deployment`] as the API server returns it: defaults, status, server metadata,
    /// another manager's fields and container, canonical quantities, other key order.
    fn live_deployment() -> Value {
        json!({
            "kind": "Deployment", "apiVersion": "apps/v1",
            "metadata": {
                "namespace": "apps", "name": "web", "uid": "u-1", "resourceVersion": "812",
                "generation": 4, "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"app": "web", "team": "ops"},
                "annotations": {"deployment.kubernetes.io/revision": "3"},
                "managedFields": [
                    entry(FIELD_MANAGER, "Apply", agent_fields()),
                    entry("kube-controller-manager", "Update", json!({
                        "f:metadata": {"f:annotations": {
                            "f:deployment.kubernetes.io/revision": {}}},
                        "f:status": {"f:replicas": {}}})),
                    entry("labeller", "Apply", json!({"f:metadata": {"f:labels": {"f:team": {}}}})),
                    entry("injector", "Update", json!({"f:spec": {"f:template": {"f:spec": {
                        "f:containers": {"k:{\"name\":\"sidecar\"}": {".": {}, "f:name": {},
                            "f:image": {}}}}}}}))
                ]
            },
            "spec": {
                "template": {"spec": {
                    "restartPolicy": "Always",
                    "containers": [
                        {"name": "sidecar", "image": "proxy:2"},
                        {"terminationMessagePath": "/dev/termination-log", "image": "web:1",
                         "name": "app", "imagePullPolicy": "IfNotPresent",
                         "ports": [{"protocol": "TCP", "containerPort": 8080}],
                         "resources": {"limits": {"memory": "1024Mi", "cpu": "500m"}}}
                    ]
                }},
                "replicas": 2,
                "revisionHistoryLimit": 10,
                "strategy": {"type": "RollingUpdate"}
            },
            "status": {"replicas": 2, "observedGeneration": 4}
        })
    }

    #[test]
    fn a_no_op_is_equal_whatever_the_server_added() {
        let (d, l) = comparable(&desired_deployment(), &live_deployment());
        assert_eq!(d, l);
        // Spelling follows the desired object, and so does key order.
        assert_eq!(
            l["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"],
            json!({"cpu": "0.5", "memory": "1Gi"})
        );
        assert_eq!(
            crate::yaml::to_string(&l),
            crate::yaml::to_string(&d),
            "printed the same"
        );
    }

    #[test]
    fn a_field_removed_from_git_that_the_agent_manages_shows() {
        let mut desired = desired_deployment();
        desired["metadata"]
            .as_object_mut()
            .unwrap()
            .shift_remove("labels");
        desired["spec"]["template"]["spec"]["containers"][0]
            .as_object_mut()
            .unwrap()
            .shift_remove("ports");
        let (d, l) = comparable(&desired, &live_deployment());
        assert_ne!(d, l);
        // Only the agent's label, not the other manager's.
        assert_eq!(l["metadata"]["labels"], json!({"app": "web"}));
        assert_eq!(
            l["spec"]["template"]["spec"]["containers"][0]["ports"],
            json!([{"containerPort": 8080}])
        );
        // Managed-only keys come after the desired ones.
        let keys: Vec<&String> = l["spec"]["template"]["spec"]["containers"][0]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(keys, vec!["name", "image", "resources", "ports"]);
    }

    #[test]
    fn a_container_removed_from_git_shows_another_managers_does_not() {
        let mut desired = desired_deployment();
        desired["spec"]["template"]["spec"]["containers"] = json!([]);
        let (_, l) = comparable(&desired, &live_deployment());
        let containers = &l["spec"]["template"]["spec"]["containers"];
        assert_eq!(containers.as_array().unwrap().len(), 1, "{containers}");
        assert_eq!(containers[0]["name"], "app");
        assert_eq!(containers[0]["image"], "web:1");
        assert!(containers[0].get("imagePullPolicy").is_none());
    }

    #[test]
    fn fields_other_managers_set_are_ignored_also_without_agent_entries() {
        let mut live = live_deployment();
        live["metadata"]["managedFields"] = json!([]);
        let (d, l) = comparable(&desired_deployment(), &live);
        assert_eq!(d, l);
        // A real change still shows.
        live["spec"]["template"]["spec"]["containers"][1]["image"] = json!("web:2");
        let (d, l) = comparable(&desired_deployment(), &live);
        assert_ne!(d, l);
    }

    #[test]
    fn formats_never_cross_types_or_free_form_data() {
        let desired = json!({"spec": {"n": "1", "m": 1, "t": "2026-01-01T00:00:00Z"}});
        let live = json!({"spec": {"n": 1, "m": "1", "t": "2026-01-01T00:00:00.000+00:00"}});
        let (d, l) = comparable(&desired, &live);
        assert_eq!(
            l["spec"],
            json!({"n": 1, "m": "1", "t": "2026-01-01T00:00:00Z"})
        );
        assert_ne!(d, l);
        let cm = |v: &str| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "c", "annotations": {"a": v}},
                                  "data": {"version": v}})
        };
        let (d, l) = comparable(&cm("1k"), &cm("1000"));
        assert_ne!(d, l);
        assert_eq!(l["data"]["version"], "1000");
        assert_eq!(l["metadata"]["annotations"]["a"], "1000");
    }

    #[test]
    fn empty_maps_and_lists_equal_absent() {
        let desired = json!({"metadata": {"name": "a", "annotations": {}}, "spec": {"env": []}});
        let live = json!({"metadata": {"name": "a"}, "spec": {}});
        let (d, l) = comparable(&desired, &live);
        assert_eq!(d, l);
    }
}

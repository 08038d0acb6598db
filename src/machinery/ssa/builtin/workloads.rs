//! The shapes of the workload kinds served without controllers (see `controlplane/workloads.rs`):
//! core Pod, apps ReplicaSet and batch Job, whose pod spec is the Deployment template's. Claims
//! and Nodes need none: their lists are atomic and their maps granular, as an unknown shape is.

use super::deploy::{label_selector, pod_spec};
use super::{Schema, atomic_list, conditions, object, object_meta, strukt};
use serde_json::{Value, json};

/// The shape of `group`/`kind` when it is one of these kinds.
pub(super) fn schema(group: &str, kind: &str) -> Option<Schema> {
    Some(match (group, kind) {
        ("", "Pod") => object(vec![
            ("spec", pod_spec()),
            (
                "status",
                strukt(vec![
                    ("phase", Schema::Scalar),
                    ("qosClass", Schema::Scalar),
                    ("conditions", conditions(&[])),
                    ("podIPs", atomic_list()),
                    ("hostIPs", atomic_list()),
                ]),
            ),
        ]),
        ("apps", "ReplicaSet") => object(vec![
            (
                "spec",
                strukt(vec![
                    ("replicas", Schema::Scalar),
                    ("minReadySeconds", Schema::Scalar),
                    ("selector", label_selector()),
                    ("template", template()),
                ]),
            ),
            ("status", strukt(vec![("conditions", conditions(&[]))])),
        ]),
        ("batch", "Job") => object(vec![
            (
                "spec",
                strukt(vec![
                    ("selector", label_selector()),
                    ("template", template()),
                    ("podFailurePolicy", strukt(vec![("rules", atomic_list())])),
                ]),
            ),
            ("status", strukt(vec![("conditions", conditions(&[]))])),
        ]),
        _ => return None,
    })
}

/// The object an empty Go struct of these kinds serializes to (see [`super::zero_object`]): the
/// non-pointer spec, pod template and status members present, a pod spec's containers null.
pub(super) fn zero_object(group: &str, kind: &str) -> Option<Value> {
    let template = json!({"metadata": {}, "spec": {"containers": null}});
    Some(match (group, kind) {
        ("", "Pod") => json!({"metadata": {}, "spec": {"containers": null}, "status": {}}),
        ("apps", "ReplicaSet") => {
            json!({"metadata": {}, "spec": {"template": template}, "status": {"replicas": 0}})
        }
        ("batch", "Job") => json!({"metadata": {}, "spec": {"template": template}, "status": {}}),
        ("", "PersistentVolumeClaim") => {
            json!({"metadata": {}, "spec": {"resources": {}}, "status": {}})
        }
        _ => return None,
    })
}

fn template() -> Schema {
    strukt(vec![("metadata", object_meta()), ("spec", pod_spec())])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_and_their_controllers_list_containers_by_name() {
        for (group, kind, path) in [
            ("", "Pod", &["spec"][..]),
            ("apps", "ReplicaSet", &["spec", "template", "spec"][..]),
            ("batch", "Job", &["spec", "template", "spec"][..]),
        ] {
            let mut s = &schema(group, kind).unwrap();
            for p in path {
                s = s.field(p).0;
            }
            assert!(
                matches!(s.field("containers").0, Schema::List { list_type: super::super::ListType::Map(k), .. } if k == &vec!["name".to_string()]),
                "{group}/{kind}"
            );
        }
        assert!(schema("", "Node").is_none());
    }
}

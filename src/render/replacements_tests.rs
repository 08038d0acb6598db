use super::*;
use crate::object::{Origin, SourcedObject};
use serde_json::json;

fn map(objs: Vec<Value>) -> ResMap {
    ResMap::from_vec(
        objs.into_iter()
            .map(|object| {
                Resource::loaded(SourcedObject {
                    object,
                    origin: Origin {
                        file: "a.yaml".into(),
                        document: 0,
                    },
                })
            })
            .collect(),
    )
}

fn objects() -> ResMap {
    map(vec![
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"},
               "data": {"image": "nginx:1.2", "replicas": "3"}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
               "spec": {"replicas": 1, "template": {"spec": {"containers": [
                   {"name": "a", "image": "x:1"}, {"name": "b", "image": "y:1"}]}}}}),
    ])
}

#[test]
fn copies_values_keeping_target_types() {
    let mut m = objects();
    apply(
        &mut m,
        &json!({"source": {"kind": "ConfigMap", "name": "cfg", "fieldPath": "data.replicas"},
                "targets": [{"select": {"kind": "Deployment"}, "fieldPaths": ["spec.replicas"]}]}),
    )
    .unwrap();
    assert_eq!(m.resources()[1].object()["spec"]["replicas"], json!(3));
    apply(
        &mut m,
        &json!({"source": {"kind": "ConfigMap", "name": "cfg", "fieldPath": "data.image"},
                "targets": [{"select": {"kind": "Deployment"},
                             "fieldPaths": ["spec.template.spec.containers.[name=b].image"]}]}),
    )
    .unwrap();
    let c = &m.resources()[1].object()["spec"]["template"]["spec"]["containers"];
    assert_eq!(
        c,
        &json!([{"name": "a", "image": "x:1"}, {"name": "b", "image": "nginx:1.2"}])
    );
}

#[test]
fn delimiters_create_and_errors() {
    let mut m = objects();
    apply(
        &mut m,
        &json!({"source": {"kind": "ConfigMap", "name": "cfg", "fieldPath": "data.image",
                           "options": {"delimiter": ":", "index": 1}},
                "targets": [{"select": {"kind": "Deployment"},
                             "fieldPaths": ["spec.template.spec.containers.*.image"],
                             "options": {"delimiter": ":", "index": 1}},
                            {"select": {"name": "web"}, "fieldPaths": ["metadata.labels.version"],
                             "options": {"create": true}}]}),
    )
    .unwrap();
    let d = m.resources()[1].object();
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "x:1.2"
    );
    // A scalar created by the replacement is typed from its text, as kustomize prints it (`version: 1.2`).
    assert_eq!(d["metadata"]["labels"]["version"], json!(1.2));
    let err = apply(
        &mut m,
        &json!({"source": {"kind": "Secret"}, "targets": []}),
    )
    .unwrap_err();
    assert!(
        err.contains("nothing selected by source kind Secret"),
        "{err}"
    );
    let err = apply(
        &mut m,
        &json!({"source": {"kind": "ConfigMap"},
                "targets": [{"select": {"kind": "Deployment"}, "fieldPaths": ["spec.nope"]}]}),
    )
    .unwrap_err();
    assert!(err.contains("unable to find field \"spec.nope\""), "{err}");
}

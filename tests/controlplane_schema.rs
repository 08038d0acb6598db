//! CRD structural schemas on the local control plane, where a request sequence cannot show them:
//! a default added to a CRD after its objects were stored shows on every read (GET, list, watch),
//! and a CEL rule added later holds updates, as on kube-apiserver.

mod common;

use common::{eventually, local_cluster};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
    WatchEvent, WatchParams,
};
use serde_json::{Value, json};
use std::time::Duration;

const T: Duration = Duration::from_secs(10);

fn crd(spec_properties: Value, spec_rules: Value) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "knobs.schema.example.com"},
        "spec": {"group": "schema.example.com", "scope": "Namespaced",
            "names": {"plural": "knobs", "singular": "knob", "kind": "Knob"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "properties": {"spec": {"type": "object",
                    "properties": spec_properties, "x-kubernetes-validations": spec_rules}}}}}]}
    }))
    .unwrap()
}

fn knobs(client: &kube::Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("schema.example.com", "v1", "Knob");
    Api::namespaced_with(
        client.clone(),
        "default",
        &ApiResource::from_gvk_with_plural(&gvk, "knobs"),
    )
}

#[tokio::test]
async fn a_default_added_later_shows_on_read_and_a_rule_added_later_holds_updates() {
    let c = local_cluster(false);
    let crds: Api<CustomResourceDefinition> = Api::all(c.client.clone());
    let first = crd(json!({"size": {"type": "integer"}}), json!([]));
    crds.create(&PostParams::default(), &first).await.unwrap();
    let api = knobs(&c.client);
    let knob: DynamicObject = serde_json::from_value(json!({"apiVersion": "schema.example.com/v1",
        "kind": "Knob", "metadata": {"name": "k"}, "spec": {"size": 5}}))
    .unwrap();
    eventually(T, "the Knob kind is served", || async {
        api.create(&PostParams::default(), &knob).await.ok()
    })
    .await;

    let mut later = crd(
        json!({"size": {"type": "integer"}, "color": {"type": "string", "default": "red"}}),
        json!([{"rule": "self.size <= 3", "message": "size is at most 3"}]),
    );
    let live = crds.get("knobs.schema.example.com").await.unwrap();
    later.metadata.resource_version = live.metadata.resource_version;
    crds.replace("knobs.schema.example.com", &PostParams::default(), &later)
        .await
        .unwrap();

    let color = |o: &DynamicObject| o.data["spec"]["color"].clone();
    let got = eventually(T, "GET shows the new default", || async {
        let o = api.get("k").await.ok()?;
        (color(&o) == json!("red")).then_some(o)
    })
    .await;
    assert_eq!(got.data["spec"]["size"], json!(5));
    let listed = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(color(&listed.items[0]), json!("red"));
    let mut events = api
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    match events.try_next().await.unwrap() {
        Some(WatchEvent::Added(o)) => assert_eq!(color(&o), json!("red")),
        other => panic!("expected the Knob added, got {other:?}"),
    }

    // The stored size breaks the new rule; an update that leaves it alone is let through
    // (ratcheting), one that changes it to another breaking value is refused.
    let labelled = json!({"metadata": {"labels": {"a": "b"}}});
    api.patch("k", &PatchParams::default(), &Patch::Merge(&labelled))
        .await
        .unwrap();
    let err = api
        .patch(
            "k",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"size": 4}})),
        )
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 422);
            assert_eq!(
                s.message,
                "Knob.schema.example.com \"k\" is invalid: spec: Invalid value: size is at most 3"
            );
        }
        other => panic!("expected a 422, got {other:?}"),
    }
}

#[tokio::test]
async fn a_crd_whose_rule_calls_an_unsupported_function_is_refused() {
    let c = local_cluster(false);
    let crds: Api<CustomResourceDefinition> = Api::all(c.client.clone());
    let bad = crd(
        json!({"endpoint": {"type": "string"}}),
        json!([{"rule": "url(self.endpoint).getScheme() == 'https'"}]),
    );
    let err = crds.create(&PostParams::default(), &bad).await.unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 422);
            assert!(
                s.message.contains("x-kubernetes-validations[0].rule"),
                "{}",
                s.message
            );
            assert!(s.message.contains("'url'"), "{}", s.message);
        }
        other => panic!("expected a 422, got {other:?}"),
    }
}

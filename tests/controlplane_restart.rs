//! Restarts of the control plane: a kube-rs watcher keeps going across a restart of a standalone
//! server (it resumes from the durable event log), and what was deleted stays deleted.

mod common;

use common::kubectl::Server;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use std::time::{Duration, Instant};

fn client(server: &Server) -> kube::Client {
    kube::Client::try_from(kube::Config::new(server.url.parse().unwrap())).unwrap()
}

async fn create(server: &Server, name: &str) {
    let api: Api<ConfigMap> = Api::namespaced(client(server), "default");
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();
}

#[tokio::test]
async fn watcher_resumes_after_the_server_restarts() {
    let server = Server::start();
    create(&server, "before").await;
    let api: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    let mut events = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let deadline = Instant::now() + Duration::from_secs(30);
    // Consume the initial listing.
    loop {
        let ev = tokio::time::timeout_at(deadline.into(), events.next())
            .await
            .expect("initial list in time");
        if let Some(Ok(watcher::Event::InitDone)) = ev {
            break;
        }
    }
    create(&server, "before-restart").await;
    let server = server.restart();
    create(&server, "after-restart").await;
    let mut seen = Vec::new();
    while !seen.contains(&"after-restart".to_string()) {
        match tokio::time::timeout_at(deadline.into(), events.next()).await {
            Ok(Some(Ok(watcher::Event::Apply(cm) | watcher::Event::InitApply(cm)))) => {
                seen.push(cm.metadata.name.unwrap())
            }
            Ok(Some(_)) => {}
            Ok(None) => panic!("watch stream ended"),
            Err(_) => panic!(
                "no event for the object created after the restart; saw {seen:?}; server log:\n{}",
                server.log()
            ),
        }
    }
    assert!(
        seen.contains(&"before-restart".to_string()),
        "the change made before the restart was delivered too: {seen:?}"
    );
}

#[tokio::test]
async fn an_object_whose_last_finalizer_is_released_stays_gone_after_a_restart() {
    use aro_gitops::controlplane::{Config, ControlPlane};
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};

    let dir = tempfile::tempdir().unwrap();
    let open = || {
        let mut config = Config::new(dir.path());
        config.preload_crds = false;
        ControlPlane::open(config).unwrap()
    };
    let cp = open();
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), "default");
    let cm: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]}}))
    .unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();
    api.delete("held", &DeleteParams::default()).await.unwrap();
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(api.get_opt("held").await.unwrap().is_none());
    drop(api);
    assert!(cp.close(std::time::Duration::from_secs(10)).await);

    let cp = open();
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), "default");
    assert!(
        api.get_opt("held").await.unwrap().is_none(),
        "the released object came back after a restart"
    );
}

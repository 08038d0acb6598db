//! A kube-rs watcher keeps going across a restart of a standalone control plane: it reconnects,
//! resumes from the resourceVersion it had (the event log is durable), and sees later changes.

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

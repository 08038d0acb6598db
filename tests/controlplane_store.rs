//! The store under load: many concurrent writers share durable syncs (group commit), yet no write
//! a client heard succeed is lost to a kill -9, resourceVersions stay gapless in commit order, and
//! watchers see the writes in that order.

mod common;

use common::kubectl::{Server, http_request};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(30);
const WRITERS: usize = 16;

fn rv_of(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion")
        .parse()
        .expect("numeric resourceVersion")
}

#[test]
fn concurrent_writers_lose_no_acknowledged_write_to_kill_9() {
    let mut server = Server::start();
    let ns = server.http(
        "POST",
        "/api/v1/namespaces",
        Some("application/json"),
        br#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"burst"}}"#,
    );
    assert_eq!(ns.status, 201, "{}", ns.body);
    let ns_rv = rv_of(&ns.json());

    let (tx, rx) = std::sync::mpsc::channel::<(String, u64)>();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let addr = server.addr.clone();
            let tx = tx.clone();
            std::thread::spawn(move || {
                for i in 0.. {
                    let name = format!("w{w:02}-{i:05}");
                    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": name}, "data": {"writer": w.to_string(), "i": i.to_string()}});
                    match http_request(
                        &addr,
                        "POST",
                        "/api/v1/namespaces/burst/configmaps",
                        Some("application/json"),
                        body.to_string().as_bytes(),
                    ) {
                        Ok(r) if r.status == 201 => {
                            if tx.send((name, rv_of(&r.json()))).is_err() {
                                break;
                            }
                        }
                        // Half an answer or none: the server is gone mid-request.
                        Ok(r) if r.status == 0 || r.body.is_empty() => break,
                        Ok(r) => panic!("unexpected answer to a create: {} {}", r.status, r.body),
                        Err(_) => break,
                    }
                }
            })
        })
        .collect();
    drop(tx);

    // Kill mid-burst, once every writer is well under way.
    let deadline = Instant::now() + T;
    let mut acked = Vec::new();
    while acked.len() < 400 {
        let left = deadline.saturating_duration_since(Instant::now());
        acked.push(rx.recv_timeout(left).unwrap_or_else(|e| {
            panic!(
                "writers stalled after {} writes ({e}); log:\n{}",
                acked.len(),
                server.log()
            )
        }));
    }
    server.kill9();
    for w in writers {
        w.join().expect("writer thread");
    }
    acked.extend(rx.try_iter());

    let server = server.restart();
    let list = server.http("GET", "/api/v1/namespaces/burst/configmaps", None, b"");
    assert_eq!(list.status, 200, "{}", list.body);
    let list = list.json();
    let stored: std::collections::BTreeMap<String, u64> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|o| {
            (
                o["metadata"]["name"].as_str().unwrap().to_string(),
                rv_of(o),
            )
        })
        .collect();
    for (name, rv) in &acked {
        assert_eq!(
            stored.get(name),
            Some(rv),
            "acknowledged {name} (resourceVersion {rv}) lost or changed after kill -9"
        );
    }
    // Every create took the next resourceVersion in commit order: what survived is a gapless run
    // after the namespace, so no write was lost while a later one was kept.
    let rvs: BTreeSet<u64> = stored.values().copied().collect();
    assert_eq!(rvs.len(), stored.len(), "resourceVersions are unique");
    let expected: BTreeSet<u64> = (ns_rv + 1..=ns_rv + stored.len() as u64).collect();
    assert_eq!(rvs, expected, "resourceVersions have a gap");
    let list_rv: u64 = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(list_rv >= ns_rv + stored.len() as u64);

    // The restarted server goes on from there.
    let r = server.http(
        "POST",
        "/api/v1/namespaces/burst/configmaps",
        Some("application/json"),
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"after-restart"}}"#,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(rv_of(&r.json()), list_rv + 1);
}

#[tokio::test]
async fn concurrent_writes_are_acknowledged_and_watched_in_commit_order() {
    let cluster = common::local_cluster(false);
    let api: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), "default");
    let start_rv = cluster.cp.resource_version();
    let mut watch = api
        .watch(&WatchParams::default(), &start_rv.to_string())
        .await
        .expect("watch")
        .boxed();

    let per_writer = 25;
    let tasks: Vec<_> = (0..WRITERS)
        .map(|w| {
            let api = api.clone();
            tokio::spawn(async move {
                let mut rvs = Vec::new();
                for i in 0..per_writer {
                    let cm: ConfigMap = serde_json::from_value(
                        json!({"metadata": {"name": format!("w{w:02}-{i:03}")}}),
                    )
                    .unwrap();
                    let created = api.create(&PostParams::default(), &cm).await.unwrap();
                    let rv: u64 = created.metadata.resource_version.unwrap().parse().unwrap();
                    // An acknowledged write is visible to reads at once.
                    let got = api.get(&format!("w{w:02}-{i:03}")).await.unwrap();
                    assert_eq!(got.metadata.resource_version, Some(rv.to_string()));
                    rvs.push(rv);
                }
                rvs
            })
        })
        .collect();
    let mut acked = BTreeSet::new();
    for t in tasks {
        let rvs = t.await.unwrap();
        assert!(
            rvs.windows(2).all(|w| w[0] < w[1]),
            "one writer's writes got increasing resourceVersions: {rvs:?}"
        );
        acked.extend(rvs);
    }
    let total = WRITERS * per_writer;
    assert_eq!(acked.len(), total);
    assert_eq!(
        acked,
        (start_rv + 1..=start_rv + total as u64).collect::<BTreeSet<_>>(),
        "gapless resourceVersions"
    );

    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + T;
    while seen.len() < total {
        let ev = tokio::time::timeout_at(deadline, watch.try_next())
            .await
            .expect("watch events in time")
            .expect("watch stream")
            .expect("watch open");
        match ev {
            WatchEvent::Added(cm) => seen.push(
                cm.metadata
                    .resource_version
                    .unwrap()
                    .parse::<u64>()
                    .unwrap(),
            ),
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected watch event {other:?}"),
        }
    }
    assert!(
        seen.windows(2).all(|w| w[0] + 1 == w[1]),
        "watch events follow commit order one by one"
    );
    assert_eq!(seen.into_iter().collect::<BTreeSet<_>>(), acked);
}

//! Change notifications that wake units up: one watch per kind the units use, all namespaces.
//! A unit that is waiting costs nothing until something in its namespace changes.

use crate::apply::Cluster;
use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::runtime::{WatchStreamExt, watcher};
use std::collections::BTreeSet;
use tokio::sync::mpsc;

/// A change seen: the namespace of the object that changed (`None` for cluster-scoped ones).
pub type Change = Option<String>;

/// Starts watches on every `(group, version, kind)` in `kinds` the cluster serves. Dropping the
/// returned guard stops them.
pub async fn start(
    cluster: &Cluster,
    kinds: &BTreeSet<(String, String, String)>,
) -> (mpsc::UnboundedReceiver<Change>, Watches) {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut tasks = Vec::new();
    for (group, version, kind) in kinds {
        let Ok(Some(k)) = cluster.kind(group, version, kind).await else {
            continue;
        };
        let api: Api<DynamicObject> = Api::all_with(cluster.client().clone(), &k.resource);
        let tx = tx.clone();
        tasks.push(tokio::spawn(async move {
            let mut events = watcher(api, watcher::Config::default())
                .default_backoff()
                .boxed();
            while let Some(ev) = events.next().await {
                let obj = match ev {
                    Ok(watcher::Event::Apply(o) | watcher::Event::Delete(o)) => o,
                    _ => continue,
                };
                if tx.send(obj.metadata.namespace.clone()).is_err() {
                    return;
                }
            }
        }));
    }
    (rx, Watches(tasks))
}

/// The running watches; dropped, they stop.
pub struct Watches(Vec<tokio::task::JoinHandle<()>>);

impl Drop for Watches {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

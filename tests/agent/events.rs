//! The control plane's event log read back: every event of one kind in one namespace from the
//! start (a watch from resourceVersion 1), so tests can assert the order things happened in. The
//! resourceVersion is one counter for the whole store, so events of different kinds compare.

use super::*;
use futures::StreamExt;
use kube::api::{Api, DynamicObject, WatchEvent, WatchParams};

/// How long reading the log may take (it is replayed at once; this only bounds a broken test).
const LOG_DEADLINE: Duration = Duration::from_secs(20);

/// One event: the resourceVersion it happened at, its type and the object.
#[derive(Debug, Clone)]
pub struct Event {
    pub rv: u64,
    pub type_: &'static str,
    pub object: Value,
}

impl Event {
    pub fn name(&self) -> &str {
        self.object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    pub fn deleting(&self) -> bool {
        self.object.pointer("/metadata/deletionTimestamp").is_some()
    }
}

/// Reads the events of `key`'s kind in `key`'s namespace from the start of the log until `enough`
/// holds for what was read.
pub async fn read(
    cluster: &Cluster,
    key: &ObjectKey,
    enough: impl Fn(&[Event]) -> bool,
) -> Vec<Event> {
    let kind = cluster
        .kind(&key.group, &key.version, &key.kind)
        .await
        .expect("discovery")
        .unwrap_or_else(|| panic!("{} is served", key.kind));
    let ns = key.namespace.as_deref().expect("namespaced");
    let api: Api<DynamicObject> =
        Api::namespaced_with(cluster.client().clone(), ns, &kind.resource);
    let mut stream = api
        .watch(&WatchParams::default().timeout(20), "1")
        .await
        .expect("watch from the start of the event log")
        .boxed();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + LOG_DEADLINE;
    while !enough(&events) {
        let ev = tokio::time::timeout_at(deadline, stream.next())
            .await
            .unwrap_or_else(|_| panic!("the log of {} in {ns} ended early: {events:#?}", key.kind));
        let (type_, o) = match ev {
            Some(Ok(WatchEvent::Added(o))) => ("ADDED", o),
            Some(Ok(WatchEvent::Modified(o))) => ("MODIFIED", o),
            Some(Ok(WatchEvent::Deleted(o))) => ("DELETED", o),
            Some(Ok(_)) => continue,
            Some(Err(e)) => panic!("watch of {}: {e}", key.kind),
            None => panic!("the watch of {} ended: {events:#?}", key.kind),
        };
        let rv = o
            .metadata
            .resource_version
            .as_deref()
            .and_then(|v| v.parse().ok())
            .expect("a numeric resourceVersion");
        let object = serde_json::to_value(o).expect("serialises");
        events.push(Event { rv, type_, object });
    }
    events
}

/// The resourceVersion of the first event of `name` that `pred` holds for.
pub fn first(events: &[Event], name: &str, pred: impl Fn(&Event) -> bool) -> Option<u64> {
    events
        .iter()
        .find(|e| e.name() == name && pred(e))
        .map(|e| e.rv)
}

/// Whether every one of `names` has an event `pred` holds for.
pub fn all_seen(events: &[Event], names: &[String], pred: impl Fn(&Event) -> bool) -> bool {
    names.iter().all(|n| first(events, n, &pred).is_some())
}

/// When the object `name` started going (its first event with a deletionTimestamp) and when it
/// was gone (its DELETED event).
pub fn deletion(events: &[Event], name: &str) -> (u64, u64) {
    let started = first(events, name, Event::deleting).unwrap_or_else(|| panic!("{name} deleted"));
    let gone =
        first(events, name, |e| e.type_ == "DELETED").unwrap_or_else(|| panic!("{name} gone"));
    (started, gone)
}

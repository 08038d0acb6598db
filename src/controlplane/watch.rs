//! WATCH streams: replay from the event log after a resourceVersion, then live events, filtered by
//! namespace and selectors, with bookmarks and a timeout; newline-delimited JSON as upstream.

use super::error::ApiError;
use super::objects::{as_version, served_as_stored};
use super::registry::ResourceType;
use super::selector::{FieldSelector, LabelSelector};
use super::state::{Entry, EventType, WatchEvent};
use super::table::{IncludeObject, table};
use bytes::Bytes;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

/// What one watcher wants to see.
#[derive(Clone)]
pub struct WatchFilter {
    pub rt: Arc<ResourceType>,
    pub version: String,
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub table: Option<IncludeObject>,
}

impl WatchFilter {
    fn key_matches(&self, key: &str) -> bool {
        let prefix = match &self.namespace {
            Some(ns) => format!("{}{}/", self.rt.key_prefix(), ns),
            None => self.rt.key_prefix(),
        };
        key.starts_with(&prefix)
    }

    fn selects_object(&self, obj: &Value) -> bool {
        self.labels.matches(obj) && self.fields.matches(obj)
    }

    fn has_selectors(&self) -> bool {
        !(self.labels.is_empty() && self.fields.is_empty())
    }

    /// Whether the stored object matches the selectors (parsed only when there are some).
    pub fn selects(&self, entry: &Entry) -> bool {
        !self.has_selectors() || self.selects_object(&entry.object())
    }

    /// The event type this watcher sees for `ev`, if any: an object that stops matching a selector
    /// is seen as DELETED, one that starts matching as ADDED.
    pub fn view(&self, ev: &WatchEvent) -> Option<EventType> {
        if !self.key_matches(&ev.key) {
            return None;
        }
        if !self.has_selectors() {
            return Some(ev.type_);
        }
        let now = self.selects_object(&ev.object.object());
        let before = ev
            .previous
            .as_ref()
            .map(|p| self.selects_object(&p.object()));
        match (ev.type_, before, now) {
            (EventType::Deleted, _, true) => Some(EventType::Deleted),
            (EventType::Deleted, _, false) => None,
            (EventType::Added, _, true) => Some(EventType::Added),
            (EventType::Modified, Some(false), true) => Some(EventType::Added),
            (EventType::Modified, Some(true), false) => Some(EventType::Deleted),
            (EventType::Modified, _, true) => Some(EventType::Modified),
            _ => None,
        }
    }

    /// One line of the stream, in pieces. A watcher of the storage version as JSON (the common
    /// case) gets the stored text itself between a fixed head and tail: an event is serialised
    /// once, when written, and every watcher shares that one copy.
    pub fn lines(&self, type_: EventType, entry: &Entry) -> Vec<Bytes> {
        if self.table.is_none() && served_as_stored(&self.rt, &self.version) {
            let head: &'static [u8] = match type_ {
                EventType::Added => b"{\"type\":\"ADDED\",\"object\":",
                EventType::Modified => b"{\"type\":\"MODIFIED\",\"object\":",
                EventType::Deleted => b"{\"type\":\"DELETED\",\"object\":",
            };
            return vec![
                Bytes::from_static(head),
                entry.json.clone(),
                Bytes::from_static(b"}\n"),
            ];
        }
        vec![self.line(type_.as_str(), &entry.object())]
    }

    /// One line of the stream, built for this watcher.
    pub fn line(&self, type_: &str, obj: &Value) -> Bytes {
        let obj = as_version(obj, &self.rt, &self.version);
        let obj = match self.table {
            Some(include) => {
                let rv = obj
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                table(&self.rt, &[obj], &rv, include, chrono::Utc::now())
            }
            None => obj,
        };
        let mut line = serde_json::to_vec(&json!({"type": type_, "object": obj}))
            .expect("JSON values serialise");
        line.push(b'\n');
        Bytes::from(line)
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj = json!({"kind": self.rt.kind, "apiVersion": self.rt.api_version(&self.version), "metadata": meta});
        let mut line = serde_json::to_vec(&json!({"type": "BOOKMARK", "object": obj}))
            .expect("JSON values serialise");
        line.push(b'\n');
        Bytes::from(line)
    }
}

/// A watch ready to stream: what to send first, then the live feed.
pub struct WatchStart {
    pub initial: Vec<Bytes>,
    pub replay: Vec<Arc<WatchEvent>>,
    pub receiver: broadcast::Receiver<Arc<WatchEvent>>,
    /// The resourceVersion the stream is at once `initial` and `replay` are sent.
    pub resource_version: u64,
    pub initial_events_end: bool,
}

/// Settings of one stream.
pub struct StreamSettings {
    pub timeout: Duration,
    pub bookmarks: bool,
    pub bookmark_interval: Duration,
}

/// A stream answering "too old resource version" the way upstream does inside a watch.
pub fn expired_stream(err: &ApiError) -> Vec<Bytes> {
    let mut line = serde_json::to_vec(&json!({"type": "ERROR", "object": err.to_status()}))
        .expect("JSON values serialise");
    line.push(b'\n');
    vec![Bytes::from(line)]
}

/// Runs the watch, feeding lines into a channel the HTTP body reads. Ends at the timeout, when the
/// client goes away, or when it falls too far behind (it then resumes from its last resourceVersion).
pub fn spawn(
    filter: WatchFilter,
    start: WatchStart,
    settings: StreamSettings,
) -> mpsc::Receiver<Result<Bytes, std::convert::Infallible>> {
    let (tx, rx) = mpsc::channel(256);
    tokio::spawn(async move {
        let WatchStart {
            initial,
            replay,
            mut receiver,
            mut resource_version,
            initial_events_end,
        } = start;
        for line in initial {
            if tx.send(Ok(line)).await.is_err() {
                return;
            }
        }
        if initial_events_end
            && tx
                .send(Ok(filter.bookmark(resource_version, true)))
                .await
                .is_err()
        {
            return;
        }
        for ev in replay {
            resource_version = ev.resource_version;
            if let Some(t) = filter.view(&ev)
                && !send_all(&tx, filter.lines(t, &ev.object)).await
            {
                return;
            }
        }
        let deadline = tokio::time::Instant::now() + settings.timeout;
        let mut ticker = tokio::time::interval_at(
            tokio::time::Instant::now() + settings.bookmark_interval,
            settings.bookmark_interval,
        );
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => {
                    if settings.bookmarks {
                        let _ = tx.send(Ok(filter.bookmark(resource_version, false))).await;
                    }
                    return;
                }
                _ = ticker.tick(), if settings.bookmarks => {
                    if tx.send(Ok(filter.bookmark(resource_version, false))).await.is_err() {
                        return;
                    }
                }
                _ = tx.closed() => return,
                msg = receiver.recv() => match msg {
                    Ok(ev) => {
                        if ev.resource_version <= resource_version {
                            continue;
                        }
                        resource_version = ev.resource_version;
                        if let Some(t) = filter.view(&ev)
                            && !send_all(&tx, filter.lines(t, &ev.object)).await
                        {
                            return;
                        }
                    }
                    // Fell behind the broadcast buffer: end the stream; the client re-watches from
                    // the last resourceVersion it saw and the event log replays the rest.
                    Err(_) => return,
                }
            }
        }
    });
    rx
}

type LineSender = mpsc::Sender<Result<Bytes, std::convert::Infallible>>;

/// Sends the pieces of one line; false when the client went away.
async fn send_all(tx: &LineSender, pieces: Vec<Bytes>) -> bool {
    for piece in pieces {
        if tx.send(Ok(piece)).await.is_err() {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controlplane::registry::Registry;

    #[test]
    fn storage_version_lines_share_the_stored_text_and_read_as_built_ones() {
        let rt = Registry::new(std::iter::empty())
            .by_kind("", "ConfigMap")
            .unwrap();
        let filter = WatchFilter {
            version: rt.storage_version.clone(),
            rt,
            namespace: None,
            labels: LabelSelector::default(),
            fields: FieldSelector::default(),
            table: None,
        };
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}});
        let entry = Entry {
            json: Bytes::from(serde_json::to_vec(&obj).unwrap()),
        };
        let pieces = filter.lines(EventType::Modified, &entry);
        assert!(
            pieces.iter().any(|p| p.as_ptr() == entry.json.as_ptr()),
            "the stored text itself, not a copy"
        );
        let spliced: Vec<u8> = pieces.concat();
        let built = filter.line("MODIFIED", &obj);
        let parse = |b: &[u8]| serde_json::from_slice::<Value>(b).unwrap();
        assert_eq!(parse(&spliced), parse(&built));
        assert!(spliced.ends_with(b"\n"));
    }
}

//! WATCH streams: replay from the event log after a resourceVersion, then live events, filtered by
//! namespace and selectors, with bookmarks and a timeout; newline-delimited JSON as upstream.

use super::error::ApiError;
use super::objects::as_version;
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

    /// What this watcher sees of `ev`, if anything: an object that stops matching a selector is
    /// seen as DELETED, one that starts matching as ADDED.
    pub fn view(&self, ev: &WatchEvent) -> Option<(EventType, Entry)> {
        let type_ = self.view_type(ev)?;
        // As upstream's watch cache: the DELETED of an object that stopped matching carries its
        // last matching state, at the event's resourceVersion.
        let stopped_matching = type_ == EventType::Deleted && ev.type_ == EventType::Modified;
        match (&ev.previous, stopped_matching) {
            (Some(previous), true) => Some((type_, at_version(previous, ev.resource_version))),
            _ => Some((type_, ev.object.clone())),
        }
    }

    fn view_type(&self, ev: &WatchEvent) -> Option<EventType> {
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
        if self.table.is_none() && self.rt.serves_stored_text(&self.version) {
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

/// The stored object with its `metadata.resourceVersion` set to `rv`.
fn at_version(entry: &Entry, rv: u64) -> Entry {
    let mut obj = Arc::unwrap_or_clone(entry.object());
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
    Entry {
        json: Bytes::from(serde_json::to_vec(&obj).expect("JSON values serialise")),
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

/// A query string's parameters, as the HTTP layer reads them.
type Params = std::collections::HashMap<String, String>;

/// A deprecated watch path's collection path and query (see [`legacy_watch_path`]); `None` for
/// any other path.
pub fn legacy_watch(path: &str, query: &Params) -> Result<Option<(String, Params)>, ApiError> {
    let Some((path, name)) = legacy_watch_path(path) else {
        return Ok(None);
    };
    Ok(Some((path, legacy_watch_query(query, name.as_deref())?)))
}

/// The deprecated `/api/v1/watch/...` and `/apis/G/V/watch/...` paths, which kube-apiserver still
/// serves as watches: the collection path they watch, and the one object's name when they name
/// one. `None` for any other path.
fn legacy_watch_path(path: &str) -> Option<(String, Option<String>)> {
    let segs: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    let (base, rest) = match segs.as_slice() {
        ["api", v, "watch", rest @ ..] => (format!("/api/{v}"), rest),
        ["apis", g, v, "watch", rest @ ..] => (format!("/apis/{g}/{v}"), rest),
        _ => return None,
    };
    let (collection, name) = match rest {
        [plural] => (vec![*plural], None),
        [plural, name] => (vec![*plural], Some(*name)),
        ["namespaces", ns, plural] => (vec!["namespaces", ns, plural], None),
        ["namespaces", ns, plural, name] => (vec!["namespaces", ns, plural], Some(*name)),
        _ => return None,
    };
    Some((
        format!("{base}/{}", collection.join("/")),
        name.map(str::to_string),
    ))
}

/// The query of a legacy watch path: a watch, of the named object only when it names one. A
/// `fieldSelector` given with a name must select that name, as kube-apiserver requires.
fn legacy_watch_query(query: &Params, name: Option<&str>) -> Result<Params, ApiError> {
    let mut query = query.clone();
    query.insert("watch".into(), "true".into());
    let Some(name) = name else {
        return Ok(query);
    };
    match query.get("fieldSelector").filter(|f| !f.is_empty()) {
        Some(fields) => {
            let selected = fields.split(',').find_map(|term| {
                let term = term.trim();
                term.strip_prefix("metadata.name==")
                    .or_else(|| term.strip_prefix("metadata.name="))
            });
            if selected != Some(name) {
                return Err(ApiError::bad_request(
                    "fieldSelector metadata.name doesn't match requested name",
                ));
            }
        }
        None => {
            query.insert("fieldSelector".into(), format!("metadata.name={name}"));
        }
    }
    Ok(query)
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
            if let Some((t, entry)) = filter.view(&ev)
                && !send_all(&tx, filter.lines(t, &entry)).await
            {
                return;
            }
        }
        let deadline = tokio::time::Instant::now() + settings.timeout;
        let mut next_mark = settings
            .bookmarks
            .then(|| {
                next_bookmark(
                    tokio::time::Instant::now(),
                    deadline,
                    settings.bookmark_interval,
                )
            })
            .flatten();
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => return,
                _ = tokio::time::sleep_until(next_mark.unwrap_or(deadline)), if next_mark.is_some() => {
                    if tx.send(Ok(filter.bookmark(resource_version, false))).await.is_err() {
                        return;
                    }
                    next_mark = next_bookmark(tokio::time::Instant::now(), deadline, settings.bookmark_interval);
                }
                _ = tx.closed() => return,
                msg = receiver.recv() => match msg {
                    Ok(ev) => {
                        if ev.resource_version <= resource_version {
                            continue;
                        }
                        resource_version = ev.resource_version;
                        if let Some((t, entry)) = filter.view(&ev)
                            && !send_all(&tx, filter.lines(t, &entry)).await
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

/// When the next BOOKMARK goes out, as upstream's watch cache schedules them: every
/// `interval`, and once about 2 s before the watch times out (so a client resumes from a recent
/// resourceVersion), but never at or after the timeout itself.
fn next_bookmark<I>(now: I, deadline: I, interval: Duration) -> Option<I>
where
    I: Copy + Ord + std::ops::Add<Duration, Output = I> + std::ops::Sub<Duration, Output = I>,
{
    let heartbeat = now + interval;
    let before_timeout = deadline - PRE_TIMEOUT_BOOKMARK;
    let at = heartbeat.min(before_timeout);
    (at > now).then_some(at)
}

/// How long before a watch's timeout its last BOOKMARK goes out.
const PRE_TIMEOUT_BOOKMARK: Duration = Duration::from_secs(2);

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

    #[test]
    fn legacy_watch_paths_watch_their_collection_or_one_object() {
        let p = |path: &str| legacy_watch_path(path);
        assert_eq!(
            p("/api/v1/watch/namespaces/n/configmaps"),
            Some(("/api/v1/namespaces/n/configmaps".into(), None))
        );
        assert_eq!(
            p("/apis/example.com/v1/watch/namespaces/n/widgets/w"),
            Some((
                "/apis/example.com/v1/namespaces/n/widgets".into(),
                Some("w".into())
            ))
        );
        assert_eq!(
            p("/api/v1/watch/namespaces/n"),
            Some(("/api/v1/namespaces".into(), Some("n".into())))
        );
        assert_eq!(
            p("/api/v1/watch/configmaps"),
            Some(("/api/v1/configmaps".into(), None))
        );
        assert_eq!(p("/api/v1/namespaces/n/configmaps"), None);
        assert_eq!(p("/api/v1/watch"), None);

        let q = |pairs: &[(&str, &str)]| -> Params {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let named = legacy_watch_query(&q(&[("resourceVersion", "5")]), Some("w")).unwrap();
        assert_eq!(named["watch"], "true");
        assert_eq!(named["fieldSelector"], "metadata.name=w");
        assert!(
            legacy_watch_query(&q(&[("fieldSelector", "metadata.name==w")]), Some("w")).is_ok()
        );
        let other = legacy_watch_query(&q(&[("fieldSelector", "metadata.name=x")]), Some("w"));
        assert_eq!(other.unwrap_err().code, 400);
        let all = legacy_watch_query(&q(&[]), None).unwrap();
        assert!(!all.contains_key("fieldSelector"));
    }

    #[test]
    fn bookmarks_come_every_interval_and_once_two_seconds_before_the_timeout() {
        let secs = Duration::from_secs;
        let start = secs(100);
        let minute = secs(60);
        // A long watch: the heartbeat first, then the pre-timeout one.
        assert_eq!(
            next_bookmark(start, start + secs(300), minute),
            Some(secs(160))
        );
        assert_eq!(
            next_bookmark(secs(340), start + secs(300), minute),
            Some(secs(398))
        );
        // A short one: only the pre-timeout bookmark, and none when that is already past.
        assert_eq!(
            next_bookmark(start, start + secs(10), minute),
            Some(secs(108))
        );
        assert_eq!(next_bookmark(start, start + secs(2), minute), None);
        assert_eq!(next_bookmark(secs(108), start + secs(10), minute), None);
    }
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

//! One stored object ([`Entry`]: its JSON text, read in part without building it) and one change
//! as watchers and the store's event log see it ([`WatchEvent`]).

use bytes::Bytes;
use serde_json::Value;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
    pub(super) fn parse(s: &str) -> Option<Self> {
        match s {
            "ADDED" => Some(EventType::Added),
            "MODIFIED" => Some(EventType::Modified),
            "DELETED" => Some(EventType::Deleted),
            _ => None,
        }
    }
}

/// One stored object: its JSON text, as stored and as served (LIST and watches splice it). Cloning
/// shares the text; nothing keeps a parsed tree of it.
#[derive(Debug, Clone)]
pub struct Entry {
    pub json: Bytes,
}

impl Entry {
    pub(super) fn new(object: &Value) -> Self {
        let json = serde_json::to_vec(object).expect("JSON values serialise");
        // The text is kept for the object's life: without the serialiser's spare capacity (a
        // quarter of it on average).
        Entry {
            json: Bytes::from(json.into_boxed_slice()),
        }
    }

    /// An entry of JSON already checked to be an object (see [`StoredMeta`]).
    pub(super) fn from_json(json: Vec<u8>) -> Self {
        Entry {
            json: Bytes::from(json),
        }
    }

    /// The object, parsed now (each call parses: callers that need it often keep it).
    pub fn object(&self) -> Arc<Value> {
        Arc::new(serde_json::from_slice(&self.json).expect("stored JSON was checked at open"))
    }

    /// The object's uid, read without building the object.
    pub(super) fn uid(&self) -> Option<std::borrow::Cow<'_, str>> {
        self.meta().uid
    }

    /// The object's uid and its owners' uids, read without building the object.
    pub(super) fn meta(&self) -> StoredMetadata<'_> {
        serde_json::from_slice::<StoredMeta>(&self.json)
            .map(|m| m.metadata)
            .unwrap_or_default()
    }
}

/// What the index reads of each object: its uid and its owners' uids. Deserializing into it
/// checks the whole JSON text without building it.
#[derive(serde::Deserialize)]
pub(super) struct StoredMeta<'a> {
    #[serde(borrow, default)]
    pub(super) metadata: StoredMetadata<'a>,
}

#[derive(Default, serde::Deserialize)]
pub(super) struct StoredMetadata<'a> {
    #[serde(borrow, default)]
    pub(super) uid: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default, rename = "ownerReferences")]
    owner_references: Vec<StoredOwner<'a>>,
}

impl StoredMetadata<'_> {
    pub(super) fn owners(&self) -> impl Iterator<Item = &str> {
        self.owner_references
            .iter()
            .filter_map(|o| o.uid.as_deref())
    }
}

#[derive(serde::Deserialize)]
struct StoredOwner<'a> {
    #[serde(borrow, default)]
    uid: Option<std::borrow::Cow<'a, str>>,
}

/// A stored watch event, its object kept as JSON text.
#[derive(serde::Deserialize)]
pub(super) struct StoredEvent<'a> {
    #[serde(borrow, rename = "type")]
    pub(super) type_: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    pub(super) key: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    pub(super) object: &'a serde_json::value::RawValue,
}

/// A change, as watchers see it: one per write, shared by the log and every watcher.
#[derive(Debug)]
pub struct WatchEvent {
    pub resource_version: u64,
    pub type_: EventType,
    pub key: String,
    pub object: Entry,
    /// The object before the change, when known (for label-selector watches).
    pub previous: Option<Entry>,
}

impl WatchEvent {
    /// What keeping this event costs, in bytes of object JSON: the object, and the object before
    /// the change (often shared with an older event, counted anyway).
    pub fn weight(&self) -> usize {
        self.object.json.len() + self.previous.as_ref().map_or(0, |p| p.json.len())
    }

    /// The event as the store's event log keeps it (the object's text spliced in).
    pub(super) fn record(&self) -> Vec<u8> {
        let key = serde_json::to_string(&self.key).expect("strings serialise");
        let mut out = Vec::with_capacity(self.object.json.len() + key.len() + 40);
        out.extend_from_slice(b"{\"type\":\"");
        out.extend_from_slice(self.type_.as_str().as_bytes());
        out.extend_from_slice(b"\",\"key\":");
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b",\"object\":");
        out.extend_from_slice(&self.object.json);
        out.push(b'}');
        out
    }
}

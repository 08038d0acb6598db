//! The in-memory index of the store and the transaction every API write runs in.
//!
//! Reads are served from memory. A write stages its changes in a [`Txn`] overlay; [`State::commit`]
//! makes them durable in one store transaction, then updates the index, appends the watch events to
//! the bounded event log and broadcasts them. Objects are kept in their storage version.

use super::error::{ApiError, ControlPlaneError};
use super::registry::Registry;
use super::store::{Batch, Loaded, Store};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, OnceLock};
use tokio::sync::broadcast;

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
    fn parse(s: &str) -> Option<Self> {
        match s {
            "ADDED" => Some(EventType::Added),
            "MODIFIED" => Some(EventType::Modified),
            "DELETED" => Some(EventType::Deleted),
            _ => None,
        }
    }
}

/// One stored object, with its serialised form cached for fast LISTs.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The object's JSON, as stored and as served (LIST splices it).
    pub json: Arc<Vec<u8>>,
    /// The object parsed, on first use: an object that is only stored and served is never
    /// parsed, so opening a large store costs its bytes, not a tree per object.
    parsed: Arc<OnceLock<Arc<Value>>>,
}

impl Entry {
    fn new(object: Arc<Value>) -> Self {
        let json = Arc::new(serde_json::to_vec(&*object).expect("JSON values serialise"));
        Entry {
            json,
            parsed: Arc::new(OnceLock::from(object)),
        }
    }

    /// An entry of JSON already checked to be an object (see [`StoredMeta`]).
    fn from_json(json: Vec<u8>) -> Self {
        Entry {
            json: Arc::new(json),
            parsed: Arc::new(OnceLock::new()),
        }
    }

    /// The object, parsed now if it was not yet.
    pub fn object(&self) -> &Arc<Value> {
        self.parsed.get_or_init(|| {
            Arc::new(serde_json::from_slice(&self.json).expect("stored JSON was checked at open"))
        })
    }
}

/// What opening a store reads of each object: its uid and its owners' uids. Deserializing into it
/// checks the whole JSON text without building it.
#[derive(serde::Deserialize)]
struct StoredMeta<'a> {
    #[serde(borrow, default)]
    metadata: StoredMetadata<'a>,
}

#[derive(Default, serde::Deserialize)]
struct StoredMetadata<'a> {
    #[serde(borrow, default)]
    uid: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default, rename = "ownerReferences")]
    owner_references: Vec<StoredOwner<'a>>,
}

/// A stored watch event, its object kept as JSON text.
#[derive(serde::Deserialize)]
struct StoredEvent<'a> {
    #[serde(borrow, rename = "type")]
    type_: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    key: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    object: &'a serde_json::value::RawValue,
}

#[derive(serde::Deserialize)]
struct StoredOwner<'a> {
    #[serde(borrow, default)]
    uid: Option<std::borrow::Cow<'a, str>>,
}

/// A change, as watchers see it.
#[derive(Debug)]
pub struct WatchEvent {
    pub resource_version: u64,
    pub type_: EventType,
    pub key: String,
    pub object: Entry,
    /// The object before the change, when known (for label-selector watches).
    pub previous: Option<Arc<Value>>,
}

impl WatchEvent {
    /// What keeping this event costs, in bytes of object JSON: the object, and the object before
    /// the change (taken to be about as large).
    pub fn weight(&self) -> usize {
        let json = self.object.json.len();
        if self.previous.is_some() {
            2 * json
        } else {
            json
        }
    }
}

/// The index and the durable store, behind the control plane's write lock.
pub struct State {
    store: Store,
    objects: BTreeMap<String, Entry>,
    /// Owner uid → keys of objects that name it in ownerReferences.
    dependents: HashMap<String, BTreeSet<String>>,
    /// uid → key of every object.
    uids: HashMap<String, String>,
    resource_version: u64,
    events: VecDeque<Arc<WatchEvent>>,
    event_capacity: usize,
    /// Budget and current total of [`WatchEvent::weight`] over `events`.
    event_byte_budget: usize,
    event_bytes: usize,
    /// Watches may resume from any resourceVersion at or above this one.
    compacted: u64,
    registry: Arc<Registry>,
    sender: broadcast::Sender<Arc<WatchEvent>>,
    /// Namespaces nothing deletes, not even garbage collection.
    protected_namespaces: Vec<String>,
}

/// Storage key of a CRD object.
pub const CRD_PREFIX: &str = "apiextensions.k8s.io/CustomResourceDefinition/";

impl State {
    pub fn open(
        store: Store,
        loaded: Loaded,
        event_capacity: usize,
        event_byte_budget: usize,
    ) -> Result<State, ControlPlaneError> {
        let mut objects = BTreeMap::new();
        let mut dependents: HashMap<String, BTreeSet<String>> = HashMap::new();
        let mut uids = HashMap::new();
        for (key, bytes) in loaded.objects {
            let meta: StoredMeta =
                serde_json::from_slice(&bytes).map_err(|e| ControlPlaneError::CorruptObject {
                    path: Default::default(),
                    key: key.clone(),
                    message: e.to_string(),
                })?;
            for owner in meta.metadata.owner_references {
                if let Some(uid) = owner.uid {
                    dependents
                        .entry(uid.into_owned())
                        .or_default()
                        .insert(key.clone());
                }
            }
            if let Some(uid) = meta.metadata.uid {
                uids.insert(uid.into_owned(), key.clone());
            }
            objects.insert(key, Entry::from_json(bytes));
        }
        let mut events = VecDeque::new();
        for (rv, bytes) in loaded.events {
            let Ok(ev) = serde_json::from_slice::<StoredEvent>(&bytes) else {
                continue;
            };
            let Some(t) = EventType::parse(&ev.type_) else {
                continue;
            };
            events.push_back(Arc::new(WatchEvent {
                resource_version: rv,
                type_: t,
                key: ev.key.into_owned(),
                object: Entry::from_json(ev.object.get().as_bytes().to_vec()),
                previous: None,
            }));
        }
        let compacted = events
            .front()
            .map(|e| e.resource_version - 1)
            .unwrap_or(loaded.resource_version);
        let registry = Arc::new(Registry::new(
            objects
                .range(CRD_PREFIX.to_string()..)
                .take_while(|(k, _)| k.starts_with(CRD_PREFIX))
                .map(|(_, e)| &**e.object()),
        ));
        let (sender, _) = broadcast::channel(16_384);
        let event_bytes = events.iter().map(|e| e.weight()).sum();
        Ok(State {
            store,
            objects,
            dependents,
            uids,
            resource_version: loaded.resource_version,
            events,
            event_capacity: event_capacity.max(1),
            event_bytes,
            event_byte_budget: event_byte_budget.max(1),
            compacted,
            registry,
            sender,
            protected_namespaces: Vec::new(),
        })
    }

    pub fn protect_namespaces(&mut self, names: Vec<String>) {
        self.protected_namespaces = names;
    }

    pub fn registry(&self) -> Arc<Registry> {
        self.registry.clone()
    }

    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.objects.get(key)
    }

    /// Objects whose key starts with `prefix`, in key order, starting after `after` when given.
    pub fn range<'a>(
        &'a self,
        prefix: &'a str,
        after: Option<&str>,
    ) -> impl Iterator<Item = (&'a String, &'a Entry)> + 'a {
        let start = match after {
            Some(a) => std::ops::Bound::Excluded(a.to_string()),
            None => std::ops::Bound::Included(prefix.to_string()),
        };
        self.objects
            .range((start, std::ops::Bound::Unbounded))
            .take_while(move |(k, _)| k.starts_with(prefix))
    }

    /// Events after `rv`, or 410 when the log no longer reaches back that far.
    pub fn events_since(&self, rv: u64) -> Result<Vec<Arc<WatchEvent>>, ApiError> {
        if rv < self.compacted {
            return Err(ApiError::gone(format!(
                "too old resource version: {rv} ({})",
                self.compacted
            )));
        }
        Ok(self
            .events
            .iter()
            .filter(|e| e.resource_version > rv)
            .cloned()
            .collect())
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<WatchEvent>> {
        self.sender.subscribe()
    }

    /// Whether watches and continue tokens can still resume from `rv`.
    pub fn can_resume_from(&self, rv: u64) -> bool {
        rv >= self.compacted
    }

    pub fn begin(&self) -> Txn<'_> {
        Txn {
            state: self,
            overlay: BTreeMap::new(),
            changes: Vec::new(),
            resource_version: self.resource_version,
            deferred: BTreeSet::new(),
        }
    }

    /// Makes a transaction's changes durable, then visible.
    pub fn commit(&mut self, txn: TxnChanges) -> Result<(), ApiError> {
        if txn.changes.is_empty() {
            return Ok(());
        }
        let mut batch = Batch {
            resource_version: txn.resource_version,
            ..Batch::default()
        };
        let mut events = Vec::new();
        let mut crds_changed = false;
        for change in &txn.changes {
            crds_changed |= change.key.starts_with(CRD_PREFIX);
            let entry = Entry::new(change.object.clone());
            // The store applies deletes before puts: the last change of a key in the transaction
            // must be the only one staged for it (a finalizer released by a patch writes the object
            // and then removes it).
            if change.type_ == EventType::Deleted {
                batch.puts.retain(|(k, _)| *k != change.key);
                batch.deletes.push(change.key.clone());
            } else {
                batch.deletes.retain(|k| *k != change.key);
                batch.puts.retain(|(k, _)| *k != change.key);
                batch.puts.push((change.key.clone(), entry.json.to_vec()));
            }
            let record = json!({"type": change.type_.as_str(), "key": change.key, "object": &*change.object});
            batch.events.push((
                change.resource_version,
                serde_json::to_vec(&record).expect("JSON values serialise"),
            ));
            events.push(Arc::new(WatchEvent {
                resource_version: change.resource_version,
                type_: change.type_,
                key: change.key.clone(),
                object: entry,
                previous: change.previous.clone(),
            }));
        }
        // Drop the oldest events beyond the count, and beyond the byte budget.
        let mut overflow = (self.events.len() + events.len()).saturating_sub(self.event_capacity);
        let mut bytes = self.event_bytes + events.iter().map(|e| e.weight()).sum::<usize>();
        {
            let mut all = self.events.iter().chain(events.iter());
            for e in all.by_ref().take(overflow) {
                bytes -= e.weight();
            }
            // Keep at least the newest event, whatever its size.
            let total = self.events.len() + events.len();
            for e in all {
                if bytes <= self.event_byte_budget || overflow + 1 >= total {
                    break;
                }
                bytes -= e.weight();
                overflow += 1;
            }
        }
        let new_compacted = if overflow > 0 {
            self.events
                .iter()
                .chain(events.iter())
                .nth(overflow - 1)
                .map(|e| e.resource_version)
        } else {
            None
        };
        batch.trim_events_below = new_compacted.map(|rv| rv + 1);
        self.store
            .commit(&batch)
            .map_err(|e| ApiError::internal(e.to_string()))?;

        self.resource_version = txn.resource_version;
        for ev in events {
            let old = match ev.type_ {
                EventType::Deleted => self.objects.remove(&ev.key),
                _ => self.objects.insert(ev.key.clone(), ev.object.clone()),
            };
            if let Some(old) = &old
                && let Some(uid) = object_uid(old.object())
            {
                self.uids.remove(uid);
            }
            if let Some(uid) =
                object_uid(ev.object.object()).filter(|_| ev.type_ != EventType::Deleted)
            {
                self.uids.insert(uid.to_string(), ev.key.clone());
            }
            if let Some(old) = old {
                for uid in owner_uids(old.object()) {
                    if let Some(set) = self.dependents.get_mut(&uid) {
                        set.remove(&ev.key);
                        if set.is_empty() {
                            self.dependents.remove(&uid);
                        }
                    }
                }
            }
            if ev.type_ != EventType::Deleted {
                for uid in owner_uids(ev.object.object()) {
                    self.dependents
                        .entry(uid)
                        .or_default()
                        .insert(ev.key.clone());
                }
            }
            self.event_bytes += ev.weight();
            self.events.push_back(ev.clone());
            // No receiver is fine: nobody is watching.
            let _ = self.sender.send(ev);
        }
        if let Some(rv) = new_compacted {
            while self
                .events
                .front()
                .is_some_and(|e| e.resource_version <= rv)
            {
                if let Some(e) = self.events.pop_front() {
                    self.event_bytes -= e.weight();
                }
            }
            self.compacted = rv;
        }
        if crds_changed {
            self.registry = Arc::new(Registry::new(
                self.range(CRD_PREFIX, None).map(|(_, e)| &**e.object()),
            ));
        }
        Ok(())
    }
}

fn object_uid(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/uid").and_then(Value::as_str)
}

/// The uids an object's ownerReferences name.
pub fn owner_uids(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

struct Change {
    key: String,
    type_: EventType,
    object: Arc<Value>,
    previous: Option<Arc<Value>>,
    resource_version: u64,
}

/// The staged changes of a transaction, detached from the state so it can be committed.
pub struct TxnChanges {
    changes: Vec<Change>,
    resource_version: u64,
}

/// A write in progress: reads see the staged changes over the committed state.
pub struct Txn<'s> {
    state: &'s State,
    overlay: BTreeMap<String, Option<Arc<Value>>>,
    changes: Vec<Change>,
    resource_version: u64,
    /// Namespaces whose completion check waits until their bulk delete is done.
    deferred: BTreeSet<String>,
}

impl<'s> Txn<'s> {
    /// Whether the object at `key` is a namespace no deletion may touch.
    pub fn is_protected(&self, key: &str) -> bool {
        super::limits::is_protected_key(key, &self.state.protected_namespaces)
    }

    /// The key of the live (committed or staged) object with this uid.
    pub fn key_of_uid(&self, uid: &str) -> Option<String> {
        for (k, v) in &self.overlay {
            if v.as_deref().and_then(object_uid) == Some(uid) {
                return Some(k.clone());
            }
        }
        let key = self.state.uids.get(uid)?;
        self.get(key)
            .filter(|v| object_uid(v) == Some(uid))
            .map(|_| key.clone())
    }

    /// Holds namespace-completion checks for `namespace` (while its content is deleted in bulk).
    pub fn defer_namespace(&mut self, namespace: &str, defer: bool) {
        if defer {
            self.deferred.insert(namespace.to_string());
        } else {
            self.deferred.remove(namespace);
        }
    }

    pub fn namespace_deferred(&self, namespace: &str) -> bool {
        self.deferred.contains(namespace)
    }

    pub fn get(&self, key: &str) -> Option<Arc<Value>> {
        match self.overlay.get(key) {
            Some(v) => v.clone(),
            None => self.state.objects.get(key).map(|e| e.object().clone()),
        }
    }

    /// Keys (committed or staged) starting with `prefix`, with their current objects.
    pub fn scan(&self, prefix: &str) -> Vec<(String, Arc<Value>)> {
        let mut keys: BTreeSet<String> = self
            .state
            .range(prefix, None)
            .map(|(k, _)| k.clone())
            .collect();
        keys.extend(
            self.overlay
                .keys()
                .filter(|k| k.starts_with(prefix))
                .cloned(),
        );
        keys.into_iter()
            .filter_map(|k| self.get(&k).map(|v| (k, v)))
            .collect()
    }

    /// Every object (committed or staged) matching `pred` on its key.
    pub fn scan_keys(&self, pred: impl Fn(&str) -> bool) -> Vec<(String, Arc<Value>)> {
        let mut keys: BTreeSet<String> = self
            .state
            .objects
            .keys()
            .filter(|k| pred(k))
            .cloned()
            .collect();
        keys.extend(self.overlay.keys().filter(|k| pred(k)).cloned());
        keys.into_iter()
            .filter_map(|k| self.get(&k).map(|v| (k, v)))
            .collect()
    }

    /// Keys of live objects whose ownerReferences name `uid`.
    pub fn dependents_of(&self, uid: &str) -> Vec<String> {
        let mut keys: BTreeSet<String> =
            self.state.dependents.get(uid).cloned().unwrap_or_default();
        for (k, v) in &self.overlay {
            match v {
                Some(obj) if owner_uids(obj).iter().any(|u| u == uid) => {
                    keys.insert(k.clone());
                }
                _ => {
                    if !v
                        .as_ref()
                        .is_some_and(|o| owner_uids(o).iter().any(|u| u == uid))
                    {
                        keys.remove(k);
                    }
                }
            }
        }
        keys.into_iter().collect()
    }

    fn next_rv(&mut self) -> u64 {
        self.resource_version += 1;
        self.resource_version
    }

    /// Stages a create or update; sets `metadata.resourceVersion`.
    pub fn put(&mut self, key: &str, mut object: Value) -> Arc<Value> {
        let previous = self.get(key);
        let rv = self.next_rv();
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        let object = Arc::new(object);
        let type_ = if previous.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.overlay.insert(key.to_string(), Some(object.clone()));
        self.changes.push(Change {
            key: key.to_string(),
            type_,
            object: object.clone(),
            previous,
            resource_version: rv,
        });
        object
    }

    /// Stages a removal; the DELETED event carries the object at its final resourceVersion.
    pub fn remove(&mut self, key: &str) -> Option<Arc<Value>> {
        let previous = self.get(key)?;
        let rv = self.next_rv();
        let mut last = (*previous).clone();
        last["metadata"]["resourceVersion"] = json!(rv.to_string());
        let last = Arc::new(last);
        self.overlay.insert(key.to_string(), None);
        self.changes.push(Change {
            key: key.to_string(),
            type_: EventType::Deleted,
            object: last.clone(),
            previous: Some(previous),
            resource_version: rv,
        });
        Some(last)
    }

    pub fn into_changes(self) -> TxnChanges {
        TxnChanges {
            changes: self.changes,
            resource_version: self.resource_version,
        }
    }
}

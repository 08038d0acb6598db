//! The in-memory index of the store: what reads see, the writes staged for the next durable batch,
//! and the bounded watch event log.
//!
//! A write runs in a [`Txn`] over the staged and committed state and is staged ([`State::stage`]):
//! later writes see it at once, reads and watches only once the committer made its batch durable
//! and applied it ([`State::apply`]). Objects are kept as their JSON text in their storage version,
//! one copy shared by the index, the watch log and every watcher; a tree is parsed only on demand.

pub use super::entry::{Entry, EventType, WatchEvent};
use super::entry::{StoredEvent, StoredMeta};
use super::error::ControlPlaneError;
use super::registry::Registry;
use super::store::{Batch, Loaded};
pub use super::txn::{Txn, TxnChanges};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use tokio::sync::broadcast;

/// A key's staged (not yet durable) value and the resourceVersion that staged it.
pub(super) struct Pending {
    pub rv: u64,
    /// The object, parsed (what later transactions read) and as text; `None` once deleted.
    pub value: Option<(Arc<Value>, Entry)>,
}

/// One write's changes, staged: its events in resourceVersion order. Empty for a write that
/// changed nothing but read staged state (it is answered once that state is durable).
pub struct Staged {
    pub events: Vec<Arc<WatchEvent>>,
    /// The newest resourceVersion staged when this write was.
    pub resource_version: u64,
}

/// A group of staged writes made into one store batch.
pub struct Planned {
    pub batch: Batch,
    /// The newest resourceVersion the log drops once the batch is applied.
    compact_through: Option<u64>,
}

/// The index, the staged writes and the event log, behind the control plane's lock.
pub struct State {
    pub(super) objects: BTreeMap<String, Entry>,
    /// Owner uid → keys of objects that name it in ownerReferences.
    pub(super) dependents: HashMap<String, BTreeSet<String>>,
    /// uid → key of every object.
    pub(super) uids: HashMap<String, String>,
    /// Staged writes not yet durable, newest value per key.
    pub(super) pending: BTreeMap<String, Pending>,
    /// The durable resourceVersion, what reads see.
    resource_version: u64,
    /// The newest resourceVersion handed out to a staged write.
    pub(super) head: u64,
    events: VecDeque<Arc<WatchEvent>>,
    event_capacity: usize,
    /// Budget and current total of [`WatchEvent::weight`] over `events`.
    event_byte_budget: usize,
    event_bytes: usize,
    /// Watches may resume from any resourceVersion at or above this one (where the log loaded at
    /// open begins).
    compacted: u64,
    /// The newest resourceVersion the log dropped (over its count or byte budget).
    trimmed: u64,
    /// Per kind (its storage key prefix, `group/Kind/`), the newest resourceVersion of that kind
    /// the log dropped: a watch of the kind from before it is too old, as a kube-apiserver watch
    /// cache (one per kind) answers, while the other kinds' watches are unaffected.
    trimmed_by_kind: HashMap<String, u64>,
    /// The history (see [`super::history`]) answers at any resourceVersion at or above this one
    /// (and [`State::compacted`]), as etcd's at or above its last compaction.
    history_compacted: u64,
    /// CRD name → the resourceVersion its kind began to be served at, in this process: where
    /// kube-apiserver's watch cache of the kind would start.
    served_since: HashMap<String, u64>,
    registry: Arc<Registry>,
    sender: broadcast::Sender<Arc<WatchEvent>>,
    /// Namespaces nothing deletes, not even garbage collection.
    pub(super) protected_namespaces: Vec<String>,
}

/// Storage key of a CRD object.
pub const CRD_PREFIX: &str = "apiextensions.k8s.io/CustomResourceDefinition/";

impl State {
    pub fn open(
        loaded: Loaded,
        event_capacity: usize,
        event_byte_budget: usize,
    ) -> Result<State, ControlPlaneError> {
        let mut state = State {
            objects: BTreeMap::new(),
            dependents: HashMap::new(),
            uids: HashMap::new(),
            pending: BTreeMap::new(),
            resource_version: loaded.resource_version,
            head: loaded.resource_version,
            events: VecDeque::new(),
            event_capacity: event_capacity.max(1),
            event_byte_budget: event_byte_budget.max(1),
            event_bytes: 0,
            compacted: loaded.resource_version,
            trimmed: 0,
            trimmed_by_kind: HashMap::new(),
            history_compacted: 0,
            served_since: HashMap::new(),
            registry: Arc::new(Registry::new(std::iter::empty())),
            sender: broadcast::channel(16_384).0,
            protected_namespaces: Vec::new(),
        };
        for (key, bytes) in loaded.objects {
            serde_json::from_slice::<StoredMeta>(&bytes).map_err(|e| {
                ControlPlaneError::CorruptObject {
                    path: Default::default(),
                    key: key.clone(),
                    message: e.to_string(),
                }
            })?;
            state.index(&key, None, Some(&Entry::from_json(bytes)));
        }
        // The object before each loaded event is the one of the key's previous event in the log,
        // shared; unknown for the first event of a key that existed before the log begins.
        let mut last: HashMap<String, Entry> = HashMap::new();
        for (rv, bytes) in loaded.events {
            let Ok(ev) = serde_json::from_slice::<StoredEvent>(&bytes) else {
                continue;
            };
            let Some(t) = EventType::parse(&ev.type_) else {
                continue;
            };
            // The newest event of a live object holds what the index holds: share that copy.
            let text = ev.object.get().as_bytes();
            let object = match state.objects.get(ev.key.as_ref()) {
                Some(live) if live.json == text => live.clone(),
                _ => Entry::from_json(text.to_vec()),
            };
            let key = ev.key.into_owned();
            let previous = match t {
                EventType::Added => None,
                _ => last.get(&key).cloned(),
            };
            match t {
                EventType::Deleted => last.remove(&key),
                _ => last.insert(key.clone(), object.clone()),
            };
            let ev = Arc::new(WatchEvent {
                resource_version: rv,
                type_: t,
                key,
                object,
                previous,
            });
            state.event_bytes += ev.weight();
            state.events.push_back(ev);
        }
        if let Some(front) = state.events.front() {
            state.compacted = front.resource_version - 1;
        }
        state.rebuild_registry();
        Ok(state)
    }

    /// Puts `new` (or nothing) at `key` in the index, in place of `old`.
    fn index(&mut self, key: &str, old: Option<&Entry>, new: Option<&Entry>) {
        if let Some(old) = old {
            let meta = old.meta();
            if let Some(uid) = meta.uid.as_deref()
                && self.uids.get(uid).is_some_and(|k| k == key)
            {
                self.uids.remove(uid);
            }
            for uid in meta.owners() {
                if let Some(set) = self.dependents.get_mut(uid) {
                    set.remove(key);
                    if set.is_empty() {
                        self.dependents.remove(uid);
                    }
                }
            }
        }
        match new {
            Some(new) => {
                let meta = new.meta();
                if let Some(uid) = meta.uid.as_deref() {
                    self.uids.insert(uid.to_string(), key.to_string());
                }
                for uid in meta.owners() {
                    self.dependents
                        .entry(uid.to_string())
                        .or_default()
                        .insert(key.to_string());
                }
                self.objects.insert(key.to_string(), new.clone());
            }
            None => {
                self.objects.remove(key);
            }
        }
    }

    fn rebuild_registry(&mut self) {
        let crds: Vec<Arc<Value>> = self
            .range(CRD_PREFIX, None)
            .map(|(_, e)| e.object())
            .collect();
        self.registry = Arc::new(Registry::new(crds.iter().map(|o| &**o)));
    }

    pub fn protect_namespaces(&mut self, names: Vec<String>) {
        self.protected_namespaces = names;
    }

    pub fn registry(&self) -> Arc<Registry> {
        self.registry.clone()
    }

    /// The durable resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    /// Whether some staged write is not durable yet.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
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

    /// Events after `rv`, or 410 when the log no longer reaches back that far, or `rv` is older
    /// than `start` (where the watched kind's window starts).
    pub fn events_since(
        &self,
        rv: u64,
        start: u64,
    ) -> Result<Vec<Arc<WatchEvent>>, super::ApiError> {
        let oldest = self.compacted.max(start);
        if rv < oldest {
            return Err(super::ApiError::gone(format!(
                "too old resource version: {rv} ({oldest})"
            )));
        }
        Ok(self
            .events
            .iter()
            .filter(|e| e.resource_version > rv)
            .cloned()
            .collect())
    }

    /// The newest resourceVersion of the kind stored under `prefix` (`group/Kind/`) that the log
    /// dropped; 0 when none was.
    pub fn trimmed_for(&self, prefix: &str) -> u64 {
        self.trimmed_by_kind.get(prefix).copied().unwrap_or(0)
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<WatchEvent>> {
        self.sender.subscribe()
    }

    /// The oldest resourceVersion the history answers at (see [`super::history`]).
    pub fn history_start(&self) -> u64 {
        self.compacted.max(self.trimmed).max(self.history_compacted)
    }

    /// Compacts the history through `rv` (at most the durable resourceVersion), as etcd's
    /// compaction: exact lists and continue tokens older than it are answered 410 Expired.
    /// Watches are not affected: they are served from the event log, as upstream's from its
    /// watch cache. Returns the resourceVersion compacted through.
    pub fn compact_history(&mut self, rv: u64) -> u64 {
        self.history_compacted = self.history_compacted.max(rv.min(self.resource_version));
        self.history_compacted
    }

    /// The events kept, oldest first.
    pub(super) fn log(&self) -> &VecDeque<Arc<WatchEvent>> {
        &self.events
    }

    /// Where watches of the custom resources of the CRD `crd` (`plural.group`) may start from,
    /// when its kind began to be served in this process (upstream's watch cache of a kind starts
    /// then).
    pub fn served_since(&self, crd: &str) -> Option<u64> {
        self.served_since.get(crd).copied()
    }

    /// Stages a transaction's changes: later transactions see them at once; reads once
    /// [`State::apply`] ran for them. Each change becomes its watch event here, serialised once.
    pub fn stage(&mut self, txn: TxnChanges) -> Staged {
        let mut events: Vec<Arc<WatchEvent>> = Vec::with_capacity(txn.changes.len());
        for change in txn.changes {
            let previous = match events.iter().rev().find(|e| e.key == change.key) {
                Some(e) => (e.type_ != EventType::Deleted).then(|| e.object.clone()),
                None => match self.pending.get(&change.key) {
                    Some(p) => p.value.as_ref().map(|(_, e)| e.clone()),
                    None => self.objects.get(&change.key).cloned(),
                },
            };
            let entry = Entry::new(&change.object);
            let value = (change.type_ != EventType::Deleted)
                .then(|| (change.object.clone(), entry.clone()));
            self.pending.insert(
                change.key.clone(),
                Pending {
                    rv: change.resource_version,
                    value,
                },
            );
            events.push(Arc::new(WatchEvent {
                resource_version: change.resource_version,
                type_: change.type_,
                object: entry,
                key: change.key,
                previous,
            }));
        }
        self.head = self.head.max(txn.resource_version);
        Staged {
            events,
            resource_version: self.head,
        }
    }

    /// A write that changed nothing but read staged state: answered once that state is durable.
    pub fn barrier(&self) -> Staged {
        Staged {
            events: Vec::new(),
            resource_version: self.head,
        }
    }

    /// The store batch for a group of staged writes, in order, and what the log drops with it.
    pub fn plan<'a>(&self, group: impl IntoIterator<Item = &'a Staged>) -> Planned {
        let mut batch = Batch::default();
        let mut weight = 0;
        let mut count = 0;
        let mut last: BTreeMap<&str, &Arc<WatchEvent>> = BTreeMap::new();
        let mut new_events: Vec<&Arc<WatchEvent>> = Vec::new();
        for staged in group {
            batch.resource_version = batch.resource_version.max(staged.resource_version);
            for ev in &staged.events {
                last.insert(&ev.key, ev);
                batch.events.push((ev.resource_version, ev.record()));
                weight += ev.weight();
                count += 1;
                new_events.push(ev);
            }
        }
        // The last change of a key in the group is the only one the store needs.
        for (key, ev) in last {
            if ev.type_ == EventType::Deleted {
                batch.deletes.push(key.to_string());
            } else {
                batch.puts.push((key.to_string(), ev.object.json.clone()));
            }
        }
        // Drop the oldest events beyond the count, and beyond the byte budget; keep the newest.
        let total = self.events.len() + count;
        let mut overflow = total.saturating_sub(self.event_capacity);
        let mut bytes = self.event_bytes + weight;
        let mut all = self.events.iter().chain(new_events.iter().copied());
        let mut compact_through = None;
        for e in all.by_ref().take(overflow) {
            bytes -= e.weight();
            compact_through = Some(e.resource_version);
        }
        for e in all {
            if bytes <= self.event_byte_budget || overflow + 1 >= total {
                break;
            }
            bytes -= e.weight();
            overflow += 1;
            compact_through = Some(e.resource_version);
        }
        batch.trim_events_below = compact_through.map(|rv| rv + 1);
        Planned {
            batch,
            compact_through,
        }
    }

    /// Makes a durable group visible: index, event log, watchers, in resourceVersion order.
    pub fn apply<'a>(&mut self, group: impl IntoIterator<Item = &'a Staged>, planned: &Planned) {
        let mut crds_changed = false;
        for staged in group {
            for ev in &staged.events {
                if ev.key.starts_with(CRD_PREFIX) {
                    crds_changed = true;
                    let name = ev.key.rsplit('/').next().unwrap_or_default();
                    match ev.type_ {
                        EventType::Added => {
                            self.served_since
                                .insert(name.to_string(), ev.resource_version);
                        }
                        EventType::Deleted => {
                            self.served_since.remove(name);
                        }
                        EventType::Modified => {}
                    }
                }
                let old = self.objects.get(&ev.key).cloned();
                let new = (ev.type_ != EventType::Deleted).then_some(&ev.object);
                self.index(&ev.key, old.as_ref(), new);
                if self
                    .pending
                    .get(&ev.key)
                    .is_some_and(|p| p.rv <= ev.resource_version)
                {
                    self.pending.remove(&ev.key);
                }
                self.resource_version = self.resource_version.max(ev.resource_version);
                self.event_bytes += ev.weight();
                self.events.push_back(ev.clone());
                // No receiver is fine: nobody is watching.
                let _ = self.sender.send(ev.clone());
            }
        }
        self.resource_version = self.resource_version.max(planned.batch.resource_version);
        if let Some(rv) = planned.compact_through {
            while self
                .events
                .front()
                .is_some_and(|e| e.resource_version <= rv)
            {
                if let Some(e) = self.events.pop_front() {
                    self.event_bytes -= e.weight();
                    let kind = kind_prefix(&e.key);
                    match self.trimmed_by_kind.get_mut(kind) {
                        Some(through) => *through = e.resource_version,
                        None => {
                            self.trimmed_by_kind
                                .insert(kind.to_string(), e.resource_version);
                        }
                    }
                }
            }
            self.trimmed = self.trimmed.max(rv);
        }
        if crds_changed {
            self.rebuild_registry();
        }
    }

    /// After a failed commit: every staged write is dropped (later ones were built on the failed
    /// ones). Returns the newest resourceVersion dropped: queued writes up to it must fail too;
    /// later writes take resourceVersions above it.
    pub fn abort(&mut self) -> u64 {
        self.pending.clear();
        self.head
    }
}

/// The kind part (`group/Kind/`) of a storage key.
fn kind_prefix(key: &str) -> &str {
    let mut slashes = key.match_indices('/').map(|(i, _)| i);
    match (slashes.next(), slashes.next()) {
        (Some(_), Some(second)) => &key[..=second],
        _ => key,
    }
}

#[cfg(test)]
mod kind_prefix_tests {
    use super::kind_prefix;

    #[test]
    fn the_kind_part_of_a_storage_key() {
        assert_eq!(kind_prefix("/ConfigMap/ns/a"), "/ConfigMap/");
        assert_eq!(kind_prefix("apps/Deployment/ns/d"), "apps/Deployment/");
        assert_eq!(kind_prefix("/Namespace/default"), "/Namespace/");
        assert_eq!(kind_prefix("odd"), "odd");
    }
}

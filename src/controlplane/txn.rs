//! A write in progress: reads see its own changes over the staged (not yet durable) writes over
//! the committed index; its changes become watch events when staged.

use super::state::{EventType, State};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

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

pub(super) struct Change {
    pub key: String,
    pub type_: EventType,
    pub object: Arc<Value>,
    pub resource_version: u64,
}

/// The staged changes of a transaction, detached from the state so it can be staged.
pub struct TxnChanges {
    pub(super) changes: Vec<Change>,
    pub(super) resource_version: u64,
}

impl TxnChanges {
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
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

impl State {
    pub fn begin(&self) -> Txn<'_> {
        Txn {
            state: self,
            overlay: BTreeMap::new(),
            changes: Vec::new(),
            resource_version: self.head,
            deferred: BTreeSet::new(),
        }
    }
}

impl<'s> Txn<'s> {
    /// The resourceVersion of the state this transaction reads.
    pub fn read_version(&self) -> u64 {
        self.state.resource_version()
    }

    /// Whether the object at `key` is a namespace no deletion may touch.
    pub fn is_protected(&self, key: &str) -> bool {
        super::limits::is_protected_key(key, &self.state.protected_namespaces)
    }

    /// Keys staged here or by writes not yet durable, with their values (`None`: deleted), the
    /// transaction's own last.
    fn staged(&self) -> impl Iterator<Item = (&String, Option<&Arc<Value>>)> {
        let pending = self
            .state
            .pending
            .iter()
            .filter(|(k, _)| !self.overlay.contains_key(*k))
            .map(|(k, p)| (k, p.value.as_ref().map(|(v, _)| v)));
        pending.chain(self.overlay.iter().map(|(k, v)| (k, v.as_ref())))
    }

    /// The key of the live (committed or staged) object with this uid.
    pub fn key_of_uid(&self, uid: &str) -> Option<String> {
        for (k, v) in self.staged() {
            if v.and_then(|v| object_uid(v)) == Some(uid) {
                return Some(k.clone());
            }
        }
        let key = self.state.uids.get(uid)?;
        // A staged object at that key has another uid (the loop above would have found it).
        if self.overlay.contains_key(key) || self.state.pending.contains_key(key) {
            return None;
        }
        let entry = self.state.objects.get(key)?;
        (entry.uid().as_deref() == Some(uid)).then(|| key.clone())
    }

    /// Whether an object (committed or staged) is at `key`, without building it.
    pub fn contains(&self, key: &str) -> bool {
        if let Some(v) = self.overlay.get(key) {
            return v.is_some();
        }
        if let Some(p) = self.state.pending.get(key) {
            return p.value.is_some();
        }
        self.state.objects.contains_key(key)
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
        if let Some(v) = self.overlay.get(key) {
            return v.clone();
        }
        if let Some(p) = self.state.pending.get(key) {
            return p.value.as_ref().map(|(v, _)| v.clone());
        }
        self.state.objects.get(key).map(|e| e.object())
    }

    /// Keys (committed or staged) starting with `prefix`, with their current objects.
    pub fn scan(&self, prefix: &str) -> Vec<(String, Arc<Value>)> {
        let mut keys: BTreeSet<String> = self
            .state
            .range(prefix, None)
            .map(|(k, _)| k.clone())
            .collect();
        keys.extend(
            self.staged()
                .map(|(k, _)| k)
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
        keys.extend(self.staged().map(|(k, _)| k).filter(|k| pred(k)).cloned());
        keys.into_iter()
            .filter_map(|k| self.get(&k).map(|v| (k, v)))
            .collect()
    }

    /// Keys of live objects whose ownerReferences name `uid`.
    pub fn dependents_of(&self, uid: &str) -> Vec<String> {
        let mut keys: BTreeSet<String> =
            self.state.dependents.get(uid).cloned().unwrap_or_default();
        for (k, v) in self.staged() {
            if v.is_some_and(|o| owner_uids(o).iter().any(|u| u == uid)) {
                keys.insert(k.clone());
            } else {
                keys.remove(k);
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
        let existed = self.contains(key);
        let rv = self.next_rv();
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        let object = Arc::new(object);
        let type_ = if existed {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.overlay.insert(key.to_string(), Some(object.clone()));
        self.changes.push(Change {
            key: key.to_string(),
            type_,
            object: object.clone(),
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

//! The garbage collector: what kube-controller-manager does after a DELETE, here a thread fed by
//! the store's own change events. Each event names the little work it causes (the object itself,
//! the owners it names, the dependents of an object gone); the work of the events that arrived
//! together is done in one write, through the committer like any other (see [`super::gc::collect`]
//! for what is done to each object). Only at start, and after falling behind the event stream, is
//! every object looked at.

use super::Shared;
use super::commit::Queued;
use super::gc::{self, FOREGROUND, ORPHAN};
use super::state::{EventType, State, WatchEvent};
use std::borrow::Cow;
use std::sync::{Arc, Weak};
use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};

/// What the collector reads of each changed object, without building it.
#[derive(Default, serde::Deserialize)]
struct Meta<'a> {
    #[serde(borrow, default)]
    metadata: MetaFields<'a>,
}

#[derive(Default, serde::Deserialize)]
struct MetaFields<'a> {
    #[serde(borrow, default)]
    uid: Option<Cow<'a, str>>,
    #[serde(default, rename = "deletionTimestamp")]
    deletion_timestamp: Option<serde::de::IgnoredAny>,
    #[serde(borrow, default)]
    finalizers: Vec<Cow<'a, str>>,
    #[serde(borrow, default, rename = "ownerReferences")]
    owner_references: Vec<OwnerRef<'a>>,
}

#[derive(Default, PartialEq, serde::Deserialize)]
struct OwnerRef<'a> {
    #[serde(borrow, default)]
    uid: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(default, rename = "blockOwnerDeletion")]
    block: Option<bool>,
}

impl MetaFields<'_> {
    fn parse(json: &[u8]) -> MetaFields<'_> {
        serde_json::from_slice::<Meta>(json)
            .map(|m| m.metadata)
            .unwrap_or_default()
    }

    fn owners(&self) -> impl Iterator<Item = &str> {
        self.owner_references
            .iter()
            .filter_map(|r| r.uid.as_deref())
    }

    /// A deleting object the collector still has to finish (a collection finalizer on it).
    fn awaits_collector(&self) -> bool {
        self.deletion_timestamp.is_some()
            && self
                .finalizers
                .iter()
                .any(|f| f == ORPHAN || f == FOREGROUND)
    }
}

/// One piece of the collector's work.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Work {
    /// Look at the object at this key (a dependent, or a deleting owner).
    Key(String),
    /// Look at the object of this uid (an owner whose dependents changed).
    Uid(String),
    /// Look at the dependents of this uid (its object is gone).
    DependentsOf(String),
}

/// The work one change causes.
fn work_of(type_: EventType, key: &str, object: &[u8], previous: Option<&[u8]>) -> Vec<Work> {
    let meta = MetaFields::parse(object);
    let mut out = Vec::new();
    if type_ == EventType::Deleted {
        if let Some(uid) = &meta.uid {
            out.push(Work::DependentsOf(uid.to_string()));
        }
        // An owner waiting for its dependents may now go.
        out.extend(meta.owners().map(|u| Work::Uid(u.to_string())));
        return out;
    }
    let before = previous.map(MetaFields::parse);
    let refs_changed = before
        .as_ref()
        .is_none_or(|b| b.owner_references != meta.owner_references);
    // As upstream's graph builder: a dependent is looked at when it comes or its references
    // change (an owner's going or deleting wakes it through the owner's own event), so an update
    // of anything else, such as a status, costs the collector nothing.
    if (!meta.owner_references.is_empty() && refs_changed) || meta.awaits_collector() {
        out.push(Work::Key(key.to_string()));
    }
    if let Some(before) = before.filter(|_| refs_changed) {
        // An owner waiting for this dependent may no longer be blocked by it.
        out.extend(before.owners().map(|u| Work::Uid(u.to_string())));
    }
    out
}

fn add(queue: &mut Vec<Work>, more: Vec<Work>) {
    for w in more {
        if !queue.contains(&w) {
            queue.push(w);
        }
    }
}

/// Everything to look at when the event stream cannot be trusted to say it: at start, and after
/// the collector fell behind it.
fn full_scan(state: &State) -> Vec<Work> {
    let mut out = Vec::new();
    for (key, entry) in &state.objects {
        let meta = MetaFields::parse(&entry.json);
        if !meta.owner_references.is_empty() || meta.awaits_collector() {
            out.push(Work::Key(key.clone()));
        }
    }
    out
}

/// Starts the collector, subscribed to changes from now on. It ends with the control plane.
/// What a look at every object finds (garbage left by an earlier run) is collected here, before
/// the control plane is handed out, so that the thread takes up the control plane only for changes
/// its clients make.
pub fn spawn(shared: &Arc<Shared>) -> std::io::Result<()> {
    let (mut events, mut work) = {
        let state = shared.state.lock().expect("state lock");
        (state.subscribe(), full_scan(&state))
    };
    // To a fixed point: what this collection changes may leave more to collect (a chain).
    while !work.is_empty() {
        let staged = stage_work(&mut shared.state.lock().expect("state lock"), &work);
        let Some(staged) = staged else { break };
        if let Err(e) = super::commit::commit_group(&shared.state, &shared.store, &[&staged]) {
            shared.state.lock().expect("state lock").abort();
            tracing::warn!(error = %e.message, "garbage collection at start not stored");
            break;
        }
        work.clear();
        while let Ok(ev) = events.try_recv() {
            let previous = ev.previous.as_ref().map(|p| p.json.as_ref());
            add(
                &mut work,
                work_of(ev.type_, &ev.key, &ev.object.json, previous),
            );
        }
    }
    let weak = Arc::downgrade(shared);
    std::thread::Builder::new()
        .name("controlplane-gc".into())
        .spawn(move || run(weak, events))
        .map(|_| ())
}

fn run(shared: Weak<Shared>, mut events: broadcast::Receiver<Arc<WatchEvent>>) {
    let mut queue = Vec::new();
    loop {
        if !queue.is_empty() {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            apply(&shared, std::mem::take(&mut queue));
        }
        let first = match events.blocking_recv() {
            Ok(ev) => ev,
            Err(RecvError::Closed) => return,
            Err(RecvError::Lagged(_)) => {
                let Some(shared) = shared.upgrade() else {
                    return;
                };
                queue = full_scan(&shared.state.lock().expect("state lock"));
                continue;
            }
        };
        let mut next = Some(first);
        while let Some(ev) = next.take() {
            let previous = ev.previous.as_ref().map(|p| p.json.as_ref());
            add(
                &mut queue,
                work_of(ev.type_, &ev.key, &ev.object.json, previous),
            );
            next = match events.try_recv() {
                Ok(ev) => Some(ev),
                Err(TryRecvError::Lagged(_)) => {
                    let Some(shared) = shared.upgrade() else {
                        return;
                    };
                    queue = full_scan(&shared.state.lock().expect("state lock"));
                    None
                }
                Err(_) => None,
            };
        }
    }
}

/// Stages `work` as one write, if it changes anything.
fn stage_work(state: &mut State, work: &[Work]) -> Option<super::state::Staged> {
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let mut txn = state.begin();
    for w in work {
        match w {
            Work::Key(key) => gc::collect(&mut txn, key, &now),
            Work::Uid(uid) => {
                if let Some(key) = txn.key_of_uid(uid) {
                    gc::collect(&mut txn, &key, &now);
                }
            }
            Work::DependentsOf(uid) => {
                for key in txn.dependents_of(uid) {
                    gc::collect(&mut txn, &key, &now);
                }
            }
        }
    }
    let changes = txn.into_changes();
    (!changes.is_empty()).then(|| state.stage(changes))
}

/// Does `work` in one write, and waits until it is durable.
fn apply(shared: &Shared, work: Vec<Work>) {
    let durable = {
        let mut state = shared.state.lock().expect("state lock");
        let Some(staged) = stage_work(&mut state, &work) else {
            return;
        };
        // Queued in the critical section that staged it, so the queue stays in
        // resourceVersion order (see `commit`).
        let (done, durable) = tokio::sync::oneshot::channel();
        if shared.queue.send(Queued { staged, done }).is_err() {
            return;
        }
        durable
    };
    match durable.blocking_recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e.message, "garbage collection not stored"),
        Err(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> Work {
        Work::Key(k.into())
    }

    #[test]
    fn an_object_without_owners_or_collection_finalizers_causes_no_work() {
        let obj = br#"{"metadata":{"uid":"u","finalizers":["x"]}}"#;
        assert!(work_of(EventType::Added, "/ConfigMap/ns/a", obj, None).is_empty());
    }

    #[test]
    fn a_dependent_or_a_deleting_owner_is_looked_at() {
        let dep = br#"{"metadata":{"uid":"u","ownerReferences":[{"uid":"o"}]}}"#;
        assert_eq!(
            work_of(EventType::Added, "/ConfigMap/ns/d", dep, None),
            vec![key("/ConfigMap/ns/d")]
        );
        let owner = br#"{"metadata":{"uid":"o","deletionTimestamp":"t","finalizers":["orphan"]}}"#;
        assert_eq!(
            work_of(EventType::Modified, "/ConfigMap/ns/o", owner, None),
            vec![key("/ConfigMap/ns/o")]
        );
    }

    #[test]
    fn an_object_gone_wakes_its_dependents_and_its_owners() {
        let gone = br#"{"metadata":{"uid":"u","ownerReferences":[{"uid":"o"}]}}"#;
        assert_eq!(
            work_of(EventType::Deleted, "/ConfigMap/ns/d", gone, None),
            vec![Work::DependentsOf("u".into()), Work::Uid("o".into())]
        );
    }

    #[test]
    fn a_dependent_whose_references_changed_wakes_its_former_owners() {
        let before = br#"{"metadata":{"uid":"u","ownerReferences":[{"uid":"o","blockOwnerDeletion":true}]}}"#;
        let after = br#"{"metadata":{"uid":"u"}}"#;
        assert_eq!(
            work_of(EventType::Modified, "/ConfigMap/ns/d", after, Some(before)),
            vec![Work::Uid("o".into())]
        );
        assert!(
            work_of(EventType::Modified, "/ConfigMap/ns/d", before, Some(before)).is_empty(),
            "references unchanged: nothing to look at"
        );
        let renamed = br#"{"metadata":{"uid":"u","ownerReferences":[{"uid":"o","name":"b","blockOwnerDeletion":true}]}}"#;
        assert_eq!(
            work_of(
                EventType::Modified,
                "/ConfigMap/ns/d",
                renamed,
                Some(before)
            ),
            vec![key("/ConfigMap/ns/d"), Work::Uid("o".into())],
            "a reference renamed: the dependent and its former owner"
        );
    }

    #[test]
    fn a_dependent_updated_without_touching_its_references_causes_no_work() {
        let before =
            br#"{"metadata":{"uid":"u","ownerReferences":[{"uid":"o","kind":"K","name":"a"}]}}"#;
        let after = br#"{"metadata":{"uid":"u","ownerReferences":[{"uid":"o","kind":"K","name":"a"}]},"status":{"x":1}}"#;
        assert!(work_of(EventType::Modified, "/ConfigMap/ns/d", after, Some(before)).is_empty());
        let deleting = br#"{"metadata":{"uid":"u","deletionTimestamp":"t","finalizers":["foregroundDeletion"],"ownerReferences":[{"uid":"o","kind":"K","name":"a"}]}}"#;
        assert_eq!(
            work_of(
                EventType::Modified,
                "/ConfigMap/ns/d",
                deleting,
                Some(before)
            ),
            vec![key("/ConfigMap/ns/d")],
            "a deleting object with a collection finalizer is the collector's to finish"
        );
    }
}

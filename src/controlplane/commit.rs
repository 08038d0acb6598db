//! Group commit: one thread makes staged writes durable, many per sync.
//!
//! A write stages its changes under the state lock and queues itself here in the same critical
//! section, so the queue is in resourceVersion order. The committer takes everything queued (the
//! writes that arrived while the previous transaction was syncing), commits it as one redb
//! transaction with fsync, applies it to the index (reads and watches see it, in order) and only
//! then answers each write. An idle queue is served at once: a lone write waits for its own sync
//! and nothing else.

use super::Shared;
use super::error::ApiError;
use super::history::{COMPACTION_INTERVAL, Compactor};
use super::state::{Staged, State};
use super::store::Store;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Mutex, Weak};
use tokio::sync::oneshot;

/// A staged write waiting for durability.
pub struct Queued {
    pub staged: Staged,
    pub done: oneshot::Sender<Result<(), ApiError>>,
}

/// Where writes queue for the committer.
pub type Queue = Sender<Queued>;

pub fn queue() -> (Queue, Receiver<Queued>) {
    std::sync::mpsc::channel()
}

/// Starts the committer. It ends when the control plane is dropped (the queue's sender with it).
pub fn spawn(shared: Weak<Shared>, rx: Receiver<Queued>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("controlplane-commit".into())
        .spawn(move || run(shared, rx))
        .map(|_| ())
}

fn run(shared: Weak<Shared>, rx: Receiver<Queued>) {
    // Writes staged at or below this resourceVersion were built on a batch that failed.
    let mut failed_through = 0;
    // The committer also keeps the history's compaction schedule: it is awake anyway.
    let mut compactor = Compactor::new(std::time::Instant::now(), COMPACTION_INTERVAL);
    loop {
        let first = match rx.recv_timeout(compactor.until_due(std::time::Instant::now())) {
            Ok(first) => first,
            Err(RecvTimeoutError::Timeout) => {
                let Some(shared) = shared.upgrade() else {
                    return;
                };
                compact_on_schedule(&shared, &mut compactor);
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let mut group = vec![first];
        group.extend(rx.try_iter());
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let (doomed, group): (Vec<_>, Vec<_>) = group
            .into_iter()
            .partition(|q| q.staged.resource_version <= failed_through);
        for q in doomed {
            let _ = q.done.send(Err(ApiError::internal(
                "an earlier write this one depended on could not be stored",
            )));
        }
        let staged: Vec<&Staged> = group.iter().map(|q| &q.staged).collect();
        let result = commit_group(&shared.state, &shared.store, &staged);
        if result.is_err() {
            failed_through = shared.state.lock().expect("state lock").abort();
        }
        tracing::trace!(
            writes = group.len(),
            ok = result.is_ok(),
            syncs = shared.store.syncs(),
            "group committed"
        );
        for q in group {
            let _ = q.done.send(result.clone());
        }
        compact_on_schedule(&shared, &mut compactor);
    }
}

/// Compacts the history when the schedule says so (see [`Compactor`]).
fn compact_on_schedule(shared: &Shared, compactor: &mut Compactor) {
    let mut state = shared.state.lock().expect("state lock");
    if let Some(through) = compactor.tick(std::time::Instant::now(), state.resource_version()) {
        let through = state.compact_history(through);
        tracing::debug!(through, "history compacted");
    }
}

/// Makes a group of staged writes durable in one transaction, then visible.
pub fn commit_group(
    state: &Mutex<State>,
    store: &Store,
    group: &[&Staged],
) -> Result<(), ApiError> {
    let planned = state
        .lock()
        .expect("state lock")
        .plan(group.iter().copied());
    if !planned.batch.is_empty() {
        store
            .commit(&planned.batch)
            .map_err(|e| ApiError::internal(e.to_string()))?;
    }
    state
        .lock()
        .expect("state lock")
        .apply(group.iter().copied(), &planned);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controlplane::store::Store;
    use serde_json::json;

    fn open(dir: &std::path::Path) -> (Mutex<State>, Store) {
        let (store, loaded) = Store::open(dir).unwrap();
        (
            Mutex::new(State::open(loaded, 1000, 1 << 20).unwrap()),
            store,
        )
    }

    fn cm(name: &str, n: u32) -> serde_json::Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"n": n.to_string()}})
    }

    /// Stages one write putting each `(key, n)`.
    fn stage(state: &Mutex<State>, puts: &[(&str, u32)]) -> Staged {
        let mut state = state.lock().unwrap();
        let mut txn = state.begin();
        for (key, n) in puts {
            txn.put(key, cm(key, *n));
        }
        let changes = txn.into_changes();
        state.stage(changes)
    }

    #[test]
    fn staged_writes_are_seen_by_later_writes_and_by_reads_once_durable() {
        let dir = tempfile::tempdir().unwrap();
        let (state, store) = open(dir.path());
        let rv0 = state.lock().unwrap().resource_version();
        let a = stage(&state, &[("/ConfigMap/ns/a", 1)]);
        {
            let s = state.lock().unwrap();
            assert!(
                s.get("/ConfigMap/ns/a").is_none(),
                "not durable: no read sees it"
            );
            assert_eq!(s.resource_version(), rv0);
            assert!(s.has_pending());
            let txn = s.begin();
            assert_eq!(txn.get("/ConfigMap/ns/a").unwrap()["data"]["n"], "1");
            assert_eq!(txn.scan("/ConfigMap/ns/").len(), 1);
        }
        let b = stage(&state, &[("/ConfigMap/ns/a", 2)]);
        assert_eq!(
            b.events[0].type_,
            crate::controlplane::state::EventType::Modified
        );
        assert_eq!(
            b.events[0].previous.as_ref().map(|p| p.json.clone()),
            Some(a.events[0].object.json.clone()),
            "the previous object is the staged one, shared, not a copy"
        );
        commit_group(&state, &store, &[&a]).unwrap();
        {
            let s = state.lock().unwrap();
            assert_eq!(s.resource_version(), rv0 + 1);
            assert_eq!(s.get("/ConfigMap/ns/a").unwrap().object()["data"]["n"], "1");
            assert!(s.has_pending(), "the second write is still staged");
        }
        commit_group(&state, &store, &[&b]).unwrap();
        let s = state.lock().unwrap();
        assert_eq!(s.resource_version(), rv0 + 2);
        assert!(!s.has_pending());
        let events = s.events_since(rv0, 0).unwrap();
        assert_eq!(
            events
                .iter()
                .map(|e| e.resource_version)
                .collect::<Vec<_>>(),
            vec![rv0 + 1, rv0 + 2]
        );
        assert!(
            std::ptr::eq(
                events[1].object.json.as_ptr(),
                s.get("/ConfigMap/ns/a").unwrap().json.as_ptr()
            ),
            "the index and the watch log share one copy of the JSON"
        );
    }

    #[test]
    fn the_history_answers_at_older_versions_until_compacted_and_after_a_reopen() {
        use crate::controlplane::history::{TooOld, range_at};
        let dir = tempfile::tempdir().unwrap();
        let names = |s: &State, rv: u64| -> Result<Vec<String>, TooOld> {
            Ok(range_at(s, "/ConfigMap/ns/", None, rv)?
                .map(|(k, e)| format!("{k}={}", e.object()["data"]["n"].as_str().unwrap()))
                .collect())
        };
        let rv0 = {
            let (state, store) = open(dir.path());
            let rv0 = state.lock().unwrap().resource_version();
            for puts in [
                &[("/ConfigMap/ns/a", 1)][..],
                &[("/ConfigMap/ns/b", 1)],
                &[("/ConfigMap/ns/a", 2)],
            ] {
                let staged = stage(&state, puts);
                commit_group(&state, &store, &[&staged]).unwrap();
            }
            let mut s = state.lock().unwrap();
            assert_eq!(names(&s, rv0 + 1).unwrap(), ["/ConfigMap/ns/a=1"]);
            assert_eq!(
                names(&s, rv0 + 2).unwrap(),
                ["/ConfigMap/ns/a=1", "/ConfigMap/ns/b=1"]
            );
            assert_eq!(
                names(&s, rv0 + 3).unwrap(),
                ["/ConfigMap/ns/a=2", "/ConfigMap/ns/b=1"]
            );
            assert_eq!(s.compact_history(rv0 + 2), rv0 + 2);
            assert_eq!(names(&s, rv0 + 1), Err(TooOld), "compacted");
            assert!(names(&s, rv0 + 2).is_ok());
            assert_eq!(
                s.events_since(rv0, 0).unwrap().len(),
                3,
                "watches are served from the log, not the history"
            );
            rv0
        };
        // After a reopen, the log's events know the object before them again.
        let (state, _) = open(dir.path());
        let s = state.lock().unwrap();
        assert_eq!(
            names(&s, rv0 + 2).unwrap(),
            ["/ConfigMap/ns/a=1", "/ConfigMap/ns/b=1"]
        );
    }

    #[test]
    fn a_group_is_one_batch_in_order_and_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (state, store) = open(dir.path());
            let group = [
                stage(&state, &[("/ConfigMap/ns/a", 1), ("/ConfigMap/ns/b", 1)]),
                stage(&state, &[("/ConfigMap/ns/a", 2)]),
                stage(&state, &[("/ConfigMap/ns/c", 1)]),
            ];
            let refs: Vec<&Staged> = group.iter().collect();
            let planned = state.lock().unwrap().plan(refs.iter().copied());
            assert_eq!(planned.batch.events.len(), 4);
            assert!(
                planned
                    .batch
                    .events
                    .windows(2)
                    .all(|w| w[0].0 + 1 == w[1].0)
            );
            assert_eq!(
                planned.batch.puts.len(),
                3,
                "one put per key: its last value"
            );
            assert_eq!(planned.batch.resource_version, 4);
            commit_group(&state, &store, &refs).unwrap();
        }
        let (state, _) = open(dir.path());
        let s = state.lock().unwrap();
        assert_eq!(s.resource_version(), 4);
        assert_eq!(s.get("/ConfigMap/ns/a").unwrap().object()["data"]["n"], "2");
        assert!(s.get("/ConfigMap/ns/c").is_some());
        let events = s.events_since(0, 0).unwrap();
        assert_eq!(events.len(), 4);
        assert!(
            std::ptr::eq(
                events[2].object.json.as_ptr(),
                s.get("/ConfigMap/ns/a").unwrap().json.as_ptr()
            ),
            "after a reopen too, the log's newest event of an object shares the index's copy"
        );
    }

    #[test]
    fn a_failed_batch_drops_staged_writes_and_later_ones_take_higher_versions() {
        let dir = tempfile::tempdir().unwrap();
        let (state, _store) = open(dir.path());
        let a = stage(&state, &[("/ConfigMap/ns/a", 1)]);
        let dropped = state.lock().unwrap().abort();
        assert_eq!(dropped, a.resource_version);
        let s = state.lock().unwrap();
        assert!(!s.has_pending());
        let mut txn = s.begin();
        assert!(txn.get("/ConfigMap/ns/a").is_none());
        let obj = txn.put("/ConfigMap/ns/b", cm("b", 1));
        assert_eq!(
            obj["metadata"]["resourceVersion"],
            json!((dropped + 1).to_string())
        );
    }

    #[test]
    fn writes_queued_during_a_sync_share_the_next_one_and_are_answered_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let (state, store) = open(dir.path());
        let (queue, rx) = super::queue();
        let shared = std::sync::Arc::new(Shared {
            state,
            store,
            queue,
            config: crate::controlplane::Config::new(dir.path()),
            faults: None,
        });
        // Ten writes queue while the committer is busy (not started yet).
        let answers: Vec<_> = (0..10)
            .map(|i| {
                let staged = stage(&shared.state, &[(&format!("/ConfigMap/ns/c{i}"), i)]);
                let (done, answer) = oneshot::channel();
                shared.queue.send(Queued { staged, done }).unwrap();
                answer
            })
            .collect();
        let committer = {
            let weak = std::sync::Arc::downgrade(&shared);
            std::thread::spawn(move || run(weak, rx))
        };
        for answer in answers {
            answer.blocking_recv().unwrap().unwrap();
        }
        assert_eq!(shared.store.syncs(), 1, "ten writes, one durable sync");
        let s = shared.state.lock().unwrap();
        assert_eq!(s.resource_version(), 10);
        assert!(!s.has_pending());
        drop(s);
        drop(shared);
        committer.join().unwrap();
    }
}

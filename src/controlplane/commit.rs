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
use super::state::{Staged, State};
use super::store::Store;
use std::sync::mpsc::{Receiver, Sender};
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
    while let Ok(first) = rx.recv() {
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
        tracing::trace!(writes = group.len(), ok = result.is_ok(), "group committed");
        for q in group {
            let _ = q.done.send(result.clone());
        }
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

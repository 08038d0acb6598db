//! The durable store behind the control plane: redb, one write transaction per group of API writes.
//!
//! Three tables: `objects` (storage key → object JSON), `events` (resourceVersion → watch event JSON,
//! trimmed to a bounded log) and `meta` (the global resourceVersion counter). A write is acknowledged
//! only after the transaction holding it commits with `Durability::Immediate` (fsync), so a kill -9
//! loses nothing that a client was told succeeded. Writes queued while one transaction syncs share
//! the next one (see `commit`).

use super::error::ControlPlaneError;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use std::path::{Path, PathBuf};

const OBJECTS: TableDefinition<&str, &[u8]> = TableDefinition::new("objects");
const EVENTS: TableDefinition<u64, &[u8]> = TableDefinition::new("events");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// redb's page cache.
const STORE_CACHE_BYTES: usize = 32 * 1024 * 1024;
const META_RV: &str = "resourceVersion";

/// Everything the store held when it was opened.
pub struct Loaded {
    pub objects: Vec<(String, Vec<u8>)>,
    pub events: Vec<(u64, Vec<u8>)>,
    pub resource_version: u64,
}

/// The changes of a group of API writes, committed atomically with one sync.
#[derive(Default)]
pub struct Batch {
    pub puts: Vec<(String, bytes::Bytes)>,
    pub deletes: Vec<String>,
    pub events: Vec<(u64, Vec<u8>)>,
    pub resource_version: u64,
    /// Drop events with a resourceVersion lower than this.
    pub trim_events_below: Option<u64>,
}

impl Batch {
    /// Whether committing it would change nothing.
    pub fn is_empty(&self) -> bool {
        self.puts.is_empty()
            && self.deletes.is_empty()
            && self.events.is_empty()
            && self.trim_events_below.is_none()
    }
}

pub struct Store {
    db: Database,
    path: PathBuf,
    /// Batches committed (each one durable sync).
    syncs: std::sync::atomic::AtomicU64,
}

impl Store {
    /// Opens (or creates) the store in `dir` and reads everything in it.
    pub fn open(dir: &Path) -> Result<(Store, Loaded), ControlPlaneError> {
        std::fs::create_dir_all(dir).map_err(|source| ControlPlaneError::StateDir {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = dir.join("state.redb");
        // Every object is read once at open and then held by the state, so redb's page cache only
        // serves writes: a small one keeps a large store from doubling in memory (the default is
        // 1 GiB, filled by the first full read).
        let db = redb::Builder::new()
            .set_cache_size(STORE_CACHE_BYTES)
            .create(&path)
            .map_err(|e| ControlPlaneError::OpenStore {
                path: path.clone(),
                source: Box::new(e.into()),
            })?;
        let store = Store {
            db,
            path,
            syncs: Default::default(),
        };
        let loaded = store.load()?;
        Ok((store, loaded))
    }

    fn err(&self, e: impl Into<redb::Error>) -> ControlPlaneError {
        ControlPlaneError::Store {
            path: self.path.clone(),
            source: Box::new(e.into()),
        }
    }

    fn load(&self) -> Result<Loaded, ControlPlaneError> {
        // Make sure the tables exist, so a read transaction can open them.
        let w = self.db.begin_write().map_err(|e| self.err(e))?;
        w.open_table(OBJECTS).map_err(|e| self.err(e))?;
        w.open_table(EVENTS).map_err(|e| self.err(e))?;
        w.open_table(META).map_err(|e| self.err(e))?;
        w.commit().map_err(|e| self.err(e))?;

        let r = self.db.begin_read().map_err(|e| self.err(e))?;
        let objects_table = r.open_table(OBJECTS).map_err(|e| self.err(e))?;
        let mut objects = Vec::new();
        for row in objects_table.iter().map_err(|e| self.err(e))? {
            let (k, v) = row.map_err(|e| self.err(e))?;
            objects.push((k.value().to_string(), v.value().to_vec()));
        }
        let events_table = r.open_table(EVENTS).map_err(|e| self.err(e))?;
        let mut events = Vec::new();
        for row in events_table.iter().map_err(|e| self.err(e))? {
            let (k, v) = row.map_err(|e| self.err(e))?;
            events.push((k.value(), v.value().to_vec()));
        }
        let meta = r.open_table(META).map_err(|e| self.err(e))?;
        let resource_version = meta
            .get(META_RV)
            .map_err(|e| self.err(e))?
            .map(|v| v.value())
            .unwrap_or(0);
        Ok(Loaded {
            objects,
            events,
            resource_version,
        })
    }

    /// Commits one batch durably.
    pub fn commit(&self, batch: &Batch) -> Result<(), ControlPlaneError> {
        let w = self.db.begin_write().map_err(|e| self.err(e))?;
        {
            let mut objects = w.open_table(OBJECTS).map_err(|e| self.err(e))?;
            for key in &batch.deletes {
                objects.remove(key.as_str()).map_err(|e| self.err(e))?;
            }
            for (key, value) in &batch.puts {
                objects
                    .insert(key.as_str(), value.as_ref())
                    .map_err(|e| self.err(e))?;
            }
            let mut events = w.open_table(EVENTS).map_err(|e| self.err(e))?;
            for (rv, value) in &batch.events {
                events
                    .insert(*rv, value.as_slice())
                    .map_err(|e| self.err(e))?;
            }
            if let Some(below) = batch.trim_events_below {
                events
                    .retain_in(..below, |_, _| false)
                    .map_err(|e| self.err(e))?;
            }
            let mut meta = w.open_table(META).map_err(|e| self.err(e))?;
            meta.insert(META_RV, batch.resource_version)
                .map_err(|e| self.err(e))?;
        }
        w.commit().map_err(|e| self.err(e))?;
        self.syncs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// How many batches were committed since the store was opened.
    pub fn syncs(&self) -> u64 {
        self.syncs.load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_survive_reopen_and_events_trim() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (store, loaded) = Store::open(dir.path()).unwrap();
            assert_eq!(loaded.resource_version, 0);
            for rv in 1..=5u64 {
                store
                    .commit(&Batch {
                        puts: vec![(
                            format!("/Secret/ns/s{rv}"),
                            bytes::Bytes::from_static(b"{}"),
                        )],
                        events: vec![(rv, b"{}".to_vec())],
                        resource_version: rv,
                        trim_events_below: (rv == 5).then_some(3),
                        ..Batch::default()
                    })
                    .unwrap();
            }
            store
                .commit(&Batch {
                    deletes: vec!["/Secret/ns/s1".into()],
                    resource_version: 6,
                    ..Batch::default()
                })
                .unwrap();
        }
        let (_, loaded) = Store::open(dir.path()).unwrap();
        assert_eq!(loaded.resource_version, 6);
        assert_eq!(loaded.objects.len(), 4);
        assert_eq!(
            loaded.events.iter().map(|e| e.0).collect::<Vec<_>>(),
            vec![3, 4, 5]
        );
    }
}

//! Shared caches of live state: for the agent's whole life, one LIST + WATCH per kind the units
//! read (all namespaces, paged), kept in memory by namespace and name (as JSON text) and shared by every unit.
//! A pass reads its kinds here instead of listing them; a kind is added when a revision first
//! needs it. Objects come in without `managedFields` (most of their size): a pass that needs
//! field ownership (a diff to judge) reads that one object with a GET.
//!
//! The reflector's `Store` of kube-runtime answers by object; a unit reads by namespace, so the
//! store here is indexed by namespace (a read never scans the fleet). Every change is also sent
//! on, naming the object, to wake the unit that owns it.

use crate::apply::inventory::{self, Identity};
use crate::apply::{Cluster, LIST_PAGE_SIZE};
use crate::object::{ObjectKey, Sym};
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

pub use super::follower::Change;
use super::follower::{Follower, KindCodec, Objects, Stamps, codec_of, parse, prepare};

/// A kind: group, version, kind.
pub type KindKey = (Sym, Sym, Sym);

/// How long a new kind's first LIST may take before passes fall back to listing it themselves.
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);

/// How long reading the inventories, or a unit's objects for a pass, waits for the caches to see
/// the agent's own last writes.
const CATCH_UP: Duration = Duration::from_secs(2);

struct KindCache {
    namespaced: bool,
    objects: Arc<RwLock<Objects>>,
    codec: KindCodec,
    ready: watch::Receiver<bool>,
    /// The error of the watch's last failed try and when, until it resumes (for `/readyz`).
    failing: Arc<RwLock<Option<(String, Instant)>>>,
    /// Counts the changes to `objects`: what was computed from them at one count still holds
    /// while it stays.
    generation: Arc<std::sync::atomic::AtomicU64>,
    /// Each namespace's last change, as a [`generation`](KindCache::generation): what was
    /// computed from one namespace's objects still holds while its stamp stays.
    stamps: Arc<RwLock<Stamps>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for KindCache {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How long a watch counts as failing after its last error. A watch that reconnects says
/// nothing until an object changes, so failing ends with its next event or once no error came
/// for longer than kube's watcher backs off between tries (30 s at most).
const FAILING_WINDOW: Duration = Duration::from_secs(45);

/// Every kind's cache, and the changes they see.
pub struct Caches {
    kinds: RwLock<HashMap<KindKey, Arc<KindCache>>>,
    /// Whether the kinds of a whole revision have been asked for ([`Caches::revision_watched`]):
    /// until then the set of caches is not complete, whatever each says.
    revision_watched: std::sync::atomic::AtomicBool,
    tx: mpsc::UnboundedSender<Change>,
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<Change>>,
}

impl Default for Caches {
    fn default() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Caches {
            kinds: RwLock::default(),
            revision_watched: Default::default(),
            tx,
            rx: tokio::sync::Mutex::new(rx),
        }
    }
}
impl Caches {
    /// Starts a cache for every kind of `kinds` the cluster serves and has none yet, and waits
    /// (within [`SYNC_TIMEOUT`]) for their first LIST.
    pub async fn ensure(&self, cluster: &Cluster, kinds: &BTreeSet<KindKey>) {
        let mut started = Vec::new();
        for key in kinds {
            if self.kinds.read().expect("caches lock").contains_key(key) {
                continue;
            }
            let Ok(Some(kind)) = cluster.kind(&key.0, &key.1, &key.2).await else {
                continue;
            };
            let cache = Arc::new(self.start(cluster, kind.resource, kind.namespaced));
            started.push((key.clone(), cache.ready.clone()));
            self.kinds
                .write()
                .expect("caches lock")
                .insert(key.clone(), cache);
        }
        for (key, mut ready) in started {
            let synced = tokio::time::timeout(SYNC_TIMEOUT, ready.wait_for(|r| *r)).await;
            if !matches!(synced, Ok(Ok(_))) {
                tracing::warn!(group = %key.0, version = %key.1, kind = %key.2, "the cache of a kind is not synced yet: passes list it");
            }
        }
    }

    fn start(&self, cluster: &Cluster, resource: ApiResource, namespaced: bool) -> KindCache {
        let api: Api<DynamicObject> = Api::all_with(cluster.client().clone(), &resource);
        let objects: Arc<RwLock<Objects>> = Arc::default();
        let codec = KindCodec::default();
        let (ready_tx, ready) = watch::channel(false);
        let failing: Arc<RwLock<Option<(String, Instant)>>> = Arc::default();
        let generation: Arc<std::sync::atomic::AtomicU64> = Arc::default();
        let stamps: Arc<RwLock<Stamps>> = Arc::default();
        let mut follower = Follower {
            store: objects.clone(),
            codec: codec.clone(),
            failed: failing.clone(),
            changed: generation.clone(),
            stamps: stamps.clone(),
            ready: ready_tx,
            echoes: cluster.echoes().clone(),
            group: Sym::new(&resource.group),
            kind: Sym::new(&resource.kind),
            building: None,
            echoed: BTreeSet::new(),
        };
        let tx = self.tx.clone();
        let config = watcher::Config::default().page_size(LIST_PAGE_SIZE);
        let task = tokio::spawn(async move {
            let mut events = watcher(api, config)
                .default_backoff()
                .modify(move |o| prepare(o, &resource))
                .boxed();
            while let Some(ev) = events.next().await {
                for change in follower.on(ev) {
                    if tx.send(change).is_err() {
                        return;
                    }
                }
            }
        });
        KindCache {
            namespaced,
            objects,
            codec,
            ready,
            failing,
            generation,
            stamps,
            task,
        }
    }

    /// What a unit reads for `key`: every object of its kind in its namespace (the client's
    /// default one for a namespaced kind without one); of a cluster-scoped kind, only the object
    /// `key` names (a unit never needs the fleet's Namespaces), or all of them for a key without
    /// a name. `None` when no synced cache holds that kind (list it instead).
    pub fn read(&self, cluster: &Cluster, key: &ObjectKey) -> Option<Vec<Value>> {
        let kinds = self.kinds.read().expect("caches lock");
        let cache = kinds.get(&(key.group.clone(), key.version.clone(), key.kind.clone()))?;
        if !*cache.ready.borrow() {
            return None;
        }
        let ns = match (&key.namespace, cache.namespaced) {
            (_, false) => None,
            (Some(ns), true) => Some(ns.to_string()),
            (None, true) => Some(cluster.client().default_namespace().to_string()),
        };
        let objects = cache.objects.read().expect("cache lock");
        let Some(in_ns) = objects.get(&ns) else {
            return Some(vec![]);
        };
        let parse = |text| parse(codec_of(&cache.codec), text);
        if !cache.namespaced && !key.name.is_empty() {
            return Some(in_ns.get(&key.name).map(parse).into_iter().collect());
        }
        Some(in_ns.values().map(parse).collect())
    }

    /// How many times the cache of `kind` changed; `None` when no synced cache holds that kind.
    pub fn generation(&self, kind: &KindKey) -> Option<u64> {
        let kinds = self.kinds.read().expect("caches lock");
        let cache = kinds.get(kind)?;
        (*cache.ready.borrow()).then(|| cache.generation.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// The namespaces holding objects of `kind` (`None` for a cluster-scoped kind), each with
    /// its stamp (what was read of it at one stamp still holds while the stamp stays); `None`
    /// when no synced cache holds that kind. Read each with [`Caches::read`]: a fleet-wide
    /// question goes namespace by namespace, never parsing the whole kind at once.
    pub fn namespaces(&self, kind: &KindKey) -> Option<Vec<(Option<String>, u64)>> {
        let kinds = self.kinds.read().expect("caches lock");
        let cache = kinds.get(kind)?;
        if !*cache.ready.borrow() {
            return None;
        }
        // Stamps taken first: a change in between only moves the stamp past what is read.
        let stamps = cache.stamps.read().expect("cache lock");
        let objects = cache.objects.read().expect("cache lock");
        Some(
            (objects.keys())
                .map(|ns| (ns.clone(), stamps.get(ns).copied().unwrap_or_default()))
                .collect(),
        )
    }

    /// The ConfigMaps of the agent's namespace (where the inventories are), once the cache holds
    /// the agent's own last write of each (within [`CATCH_UP`]), with the cache's
    /// [`generation`](Caches::generation) then: `None` when no synced cache holds ConfigMaps or it
    /// lags behind (read them with a LIST instead). At the generation `known` (what was read at
    /// it still holds), the generation alone.
    pub async fn inventories(
        &self,
        cluster: &Cluster,
        known: Option<u64>,
    ) -> Option<(u64, Option<Vec<Value>>)> {
        let key = inventory::config_map_key("");
        let kind = (key.group.clone(), key.version.clone(), key.kind.clone());
        let ours = |id: &Identity| {
            (id.group == kind.0 && id.kind == kind.2 && id.namespace == key.namespace)
                .then(|| kind.clone())
        };
        if let Err(pending) = self.caught_up(cluster, ours).await {
            tracing::debug!(
                "the cache has not seen the agent's last inventory writes: they are listed"
            );
            // The LIST reads what they wrote: their echoes are of no more use.
            for (id, rv) in pending {
                cluster.echoes().take(&id, &rv);
            }
            return None;
        }
        // Taken before the read: a change in between makes the next generation another.
        let generation = self.generation(&kind)?;
        if known == Some(generation) {
            return Some((generation, None));
        }
        Some((generation, Some(self.read(cluster, &key)?)))
    }

    /// Waits, within [`CATCH_UP`], until the caches hold the agent's own last write of each
    /// object `kind_of` gives a kind for: a pass that reads a cache behind its own writes would
    /// write them again. The writes still not seen then, when some are.
    pub async fn caught_up(
        &self,
        cluster: &Cluster,
        kind_of: impl Fn(&Identity) -> Option<KindKey>,
    ) -> Result<(), Vec<(Identity, String)>> {
        let deadline = tokio::time::Instant::now() + CATCH_UP;
        loop {
            // A write the cache has not taken as its echo: either not seen yet, or a write that
            // changed nothing (the same resourceVersion, no event) and that the cache holds.
            let pending = cluster.echoes().pending(|id| kind_of(id).is_some());
            let behind = pending.iter().any(|(id, rv)| {
                let held = (kind_of(id)).and_then(|kind| self.resource_version(&kind, id));
                if held.as_deref() == Some(rv.as_str()) {
                    cluster.echoes().take(id, rv);
                    return false;
                }
                true
            });
            if !behind {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(pending);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The resourceVersion of the object `id` of `kind` as cached.
    fn resource_version(&self, kind: &KindKey, id: &Identity) -> Option<String> {
        let kinds = self.kinds.read().expect("caches lock");
        let cache = kinds.get(kind)?;
        let objects = cache.objects.read().expect("cache lock");
        let text = objects
            .get(&id.namespace.as_deref().map(str::to_string))?
            .get(&id.name)?;
        let object = parse(codec_of(&cache.codec), text);
        crate::object::str_at(&object, "/metadata/resourceVersion").map(str::to_string)
    }

    /// Where the caches stand: how many kinds have one, and those whose first LIST has not ended
    /// (for `/readyz`).
    pub fn sync_state(&self) -> crate::health::CacheSync {
        let kinds = self.kinds.read().expect("caches lock");
        let name = |(group, version, kind): &KindKey| match group.as_str() {
            "" => format!("{kind}/{version}"),
            g => format!("{kind}.{g}/{version}"),
        };
        let mut unsynced: Vec<String> = kinds
            .iter()
            .filter(|(_, c)| !*c.ready.borrow())
            .map(|(k, _)| name(k))
            .collect();
        unsynced.sort();
        let mut failing: Vec<String> = kinds
            .iter()
            .filter_map(|(k, c)| {
                let (e, at) = c.failing.read().expect("cache lock").clone()?;
                (at.elapsed() < FAILING_WINDOW).then(|| format!("{}: {e}", name(k)))
            })
            .collect();
        failing.sort();
        crate::health::CacheSync {
            kinds: kinds.len(),
            all_started: self
                .revision_watched
                .load(std::sync::atomic::Ordering::Relaxed),
            unsynced,
            failing,
            source_error: None,
        }
    }

    /// Notes that every kind a revision reads has a cache (started, maybe not yet synced).
    pub fn revision_watched(&self) {
        self.revision_watched
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Waits up to `wait` for the first change; `None` when none came.
    pub async fn next_change(&self, wait: Duration) -> Option<Change> {
        let mut rx = self.rx.lock().await;
        tokio::time::timeout(wait, rx.recv()).await.ok().flatten()
    }

    /// Every change already seen, without waiting.
    pub async fn drain(&self) -> BTreeSet<Change> {
        let mut rx = self.rx.lock().await;
        let mut seen = BTreeSet::new();
        while let Ok(c) = rx.try_recv() {
            seen.insert(c);
        }
        seen
    }
}

//! Shared caches of live state: for the agent's whole life, one LIST + WATCH per kind the units
//! read (all namespaces, paged), kept in memory by namespace and name and shared by every unit.
//! A pass reads its kinds here instead of listing them; a kind is added when a revision first
//! needs it. Objects come in without `managedFields` (most of their size): a pass that needs
//! field ownership (a diff to judge) reads that one object with a GET.
//!
//! The reflector's `Store` of kube-runtime answers by object; a unit reads by namespace, so the
//! store here is indexed by namespace (a read never scans the fleet). Every change is also sent
//! on, as the namespace it happened in, to wake the units there.

use crate::apply::{Cluster, LIST_PAGE_SIZE};
use crate::object::ObjectKey;
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, TypeMeta};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// A kind: group, version, kind.
pub type KindKey = (String, String, String);

/// A change seen: the namespace of the object that changed (`None` for cluster-scoped ones, and
/// for a re-list, which may have changed anything).
pub type Change = Option<String>;

/// How long a new kind's first LIST may take before passes fall back to listing it themselves.
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);

/// Objects of one kind: namespace → name → object.
type Objects = HashMap<Option<String>, HashMap<String, Arc<Value>>>;

struct KindCache {
    namespaced: bool,
    objects: Arc<RwLock<Objects>>,
    ready: watch::Receiver<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for KindCache {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Every kind's cache, and the changes they see.
pub struct Caches {
    kinds: RwLock<HashMap<KindKey, Arc<KindCache>>>,
    tx: mpsc::UnboundedSender<Change>,
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<Change>>,
}

impl Default for Caches {
    fn default() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Caches {
            kinds: RwLock::default(),
            tx,
            rx: tokio::sync::Mutex::new(rx),
        }
    }
}

/// The object as cached: `managedFields` dropped, `apiVersion` and `kind` filled in.
fn prepare(obj: &mut DynamicObject, resource: &ApiResource) {
    obj.metadata.managed_fields = None;
    if obj.types.is_none() {
        obj.types = Some(TypeMeta {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
        });
    }
}

fn place(obj: &DynamicObject) -> (Option<String>, String) {
    (
        obj.metadata.namespace.clone(),
        obj.metadata.name.clone().unwrap_or_default(),
    )
}

fn to_value(obj: DynamicObject) -> Arc<Value> {
    Arc::new(serde_json::to_value(obj).expect("objects serialise"))
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
        let (ready_tx, ready) = watch::channel(false);
        let (store, tx) = (objects.clone(), self.tx.clone());
        let config = watcher::Config::default().page_size(LIST_PAGE_SIZE);
        let task = tokio::spawn(async move {
            let mut events = watcher(api, config)
                .default_backoff()
                .modify(move |o| prepare(o, &resource))
                .boxed();
            let mut building: Option<Objects> = None;
            while let Some(ev) = events.next().await {
                let change = match ev {
                    Ok(watcher::Event::Init) => {
                        building = Some(Objects::new());
                        continue;
                    }
                    Ok(watcher::Event::InitApply(o)) => {
                        let (ns, name) = place(&o);
                        building
                            .get_or_insert_default()
                            .entry(ns)
                            .or_default()
                            .insert(name, to_value(o));
                        continue;
                    }
                    Ok(watcher::Event::InitDone) => {
                        *store.write().expect("cache lock") = building.take().unwrap_or_default();
                        let first = !*ready_tx.borrow();
                        ready_tx.send_replace(true);
                        if first {
                            continue;
                        }
                        None // a re-list: anything may have changed
                    }
                    Ok(watcher::Event::Apply(o)) => {
                        let (ns, name) = place(&o);
                        store
                            .write()
                            .expect("cache lock")
                            .entry(ns.clone())
                            .or_default()
                            .insert(name, to_value(o));
                        ns
                    }
                    Ok(watcher::Event::Delete(o)) => {
                        let (ns, name) = place(&o);
                        if let Some(m) = store.write().expect("cache lock").get_mut(&ns) {
                            m.remove(&name);
                        }
                        ns
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "watch interrupted; it resumes");
                        continue;
                    }
                };
                if tx.send(change).is_err() {
                    return;
                }
            }
        });
        KindCache {
            namespaced,
            objects,
            ready,
            task,
        }
    }

    /// The objects of `key`'s kind in its namespace (the client's default one for a namespaced
    /// kind without one), or `None` when no synced cache holds that kind (list it instead).
    pub fn list(&self, cluster: &Cluster, key: &ObjectKey) -> Option<Vec<Value>> {
        let kinds = self.kinds.read().expect("caches lock");
        let cache = kinds.get(&(key.group.clone(), key.version.clone(), key.kind.clone()))?;
        if !*cache.ready.borrow() {
            return None;
        }
        let ns = match (&key.namespace, cache.namespaced) {
            (_, false) => None,
            (Some(ns), true) => Some(ns.clone()),
            (None, true) => Some(cluster.client().default_namespace().to_string()),
        };
        let objects = cache.objects.read().expect("cache lock");
        Some(
            objects
                .get(&ns)
                .map(|m| m.values().map(|v| Value::clone(v)).collect())
                .unwrap_or_default(),
        )
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

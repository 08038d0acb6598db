//! What a kind's watch task keeps as its events come ([`Follower`]): the kind's objects by
//! namespace and name, each packed ([`crate::packed`]), the stamps of the namespaces' last
//! changes, and the changes to wake units for. [`super::cache`] serves the reads.

use crate::apply::Echoes;
use crate::apply::inventory::{self, Identity};
use crate::object::Sym;
use crate::packed::{Codec, PLAIN};
use kube::api::{ApiResource, DynamicObject, TypeMeta};
use kube::runtime::watcher;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};
use std::time::Instant;
use tokio::sync::watch;

/// A change seen.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Change {
    /// One object changed (created, updated or deleted), and the resourceVersion it has now.
    /// A kind listed again after its watch broke off (a 410 Gone, a server restart) sends one for
    /// each object the re-list found changed, added or gone ([`relisted`]), so a re-list wakes only
    /// the units whose objects changed meanwhile.
    Object(Identity, Option<String>),
}

impl Change {
    /// Whether this is the echo of the agent's own last write of the object (see [`Echoes`]).
    pub fn is_echo(&self, echoes: &Echoes) -> bool {
        match self {
            Change::Object(id, Some(rv)) => echoes.take(id, rv),
            _ => false,
        }
    }
}

/// Objects of one kind: namespace → name → object.
pub(super) type Objects = HashMap<Option<String>, HashMap<String, Text>>;

/// Where an object is: its namespace and name.
pub(super) type Place = (Option<String>, String);

/// Each namespace's stamp: the kind's generation at the namespace's last change.
pub(super) type Stamps = HashMap<Option<String>, u64>;

/// An object kept as its JSON text, packed ([`crate::packed`]): a fraction of a parsed tree's
/// size (every string and map of a `Value` is its own allocation), parsed again when a pass
/// reads it.
pub(super) type Text = Box<[u8]>;

/// How a kind's objects are packed: without a dictionary until the kind has enough objects to
/// train one on ([`Follower::train`]).
pub(super) type KindCodec = Arc<std::sync::OnceLock<Codec>>;

pub(super) fn codec_of(codec: &KindCodec) -> &Codec {
    codec.get().unwrap_or(&PLAIN)
}

/// What a kind's watch task keeps as the events come: the cache it fills, and what a re-list is
/// building.
pub(super) struct Follower {
    pub(super) store: Arc<RwLock<Objects>>,
    pub(super) codec: KindCodec,
    /// Why the watch fails, since when (cleared once it resumes).
    pub(super) failed: Arc<RwLock<Option<(String, Instant)>>>,
    /// Moved by every change of the store.
    pub(super) changed: Arc<std::sync::atomic::AtomicU64>,
    /// Each namespace's last change.
    pub(super) stamps: Arc<RwLock<Stamps>>,
    /// Raised once the first list is in.
    pub(super) ready: watch::Sender<bool>,
    pub(super) echoes: Echoes,
    pub(super) group: Sym,
    pub(super) kind: Sym,
    /// The objects of a re-list in progress.
    pub(super) building: Option<Objects>,
    /// The objects a re-list found at the agent's own last write of them.
    pub(super) echoed: BTreeSet<Place>,
}

impl Follower {
    fn identity(&self, (namespace, name): Place) -> Identity {
        Identity {
            group: self.group.clone(),
            kind: self.kind.clone(),
            namespace: namespace.map(Sym::from),
            name,
        }
    }

    fn what(&self) -> String {
        format!("{}.{}", self.kind, self.group)
    }

    /// Once the kind holds [`SAMPLES`](crate::packed::SAMPLES) objects, trains its packing
    /// dictionary on them and packs every object with it (once in the cache's life).
    fn train(&self) {
        if self.codec.get().is_some() {
            return;
        }
        let mut store = self.store.write().expect("cache lock");
        // Counted before anything is unpacked: a kind short of the samples is asked at each event.
        if store.values().map(HashMap::len).sum::<usize>() < crate::packed::SAMPLES {
            return;
        }
        let samples: Vec<Vec<u8>> = (store.values().flat_map(HashMap::values))
            .take(crate::packed::SAMPLES)
            .map(|text| PLAIN.unpack(text))
            .collect();
        if samples.len() < crate::packed::SAMPLES {
            return;
        }
        let trained = self.codec.get_or_init(|| Codec::trained(&samples));
        if trained.has_dictionary() {
            for text in store.values_mut().flat_map(HashMap::values_mut) {
                *text = trained.pack(&PLAIN.unpack(text));
            }
        }
        tracing::debug!(kind = %self.what(), dictionary = trained.has_dictionary(), "objects packed");
    }

    /// Counts a change of the objects in `namespaces`.
    fn bump<'n>(&self, namespaces: impl IntoIterator<Item = &'n Option<String>>) {
        let generation = 1 + self
            .changed
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut stamps = self.stamps.write().expect("cache lock");
        for ns in namespaces {
            stamps.insert(ns.clone(), generation);
        }
    }

    /// Takes one event of the watch into the cache; the changes it makes to wake for.
    pub(super) fn on(
        &mut self,
        ev: Result<watcher::Event<DynamicObject>, watcher::Error>,
    ) -> Vec<Change> {
        if ev.is_ok() && self.failed.read().expect("cache lock").is_some() {
            *self.failed.write().expect("cache lock") = None;
            tracing::info!(kind = %self.what(), "the watch resumed");
        }
        match ev {
            Ok(watcher::Event::Init) => {
                self.building = Some(Objects::new());
                self.echoed.clear();
                vec![]
            }
            Ok(watcher::Event::InitApply(o)) => {
                let (ns, name) = place(&o);
                // A re-list may be the first sight of the agent's own last write.
                if let Some(rv) = &o.metadata.resource_version
                    && self
                        .echoes
                        .take(&self.identity((ns.clone(), name.clone())), rv)
                {
                    self.echoed.insert((ns.clone(), name.clone()));
                }
                let text = to_text(codec_of(&self.codec), o);
                self.building
                    .get_or_insert_default()
                    .entry(ns)
                    .or_default()
                    .insert(name, text);
                vec![]
            }
            Ok(watcher::Event::InitDone) => self.relist_done(),
            Ok(watcher::Event::Apply(o)) => {
                let (ns, name) = place(&o);
                let id = self.identity((ns.clone(), name.clone()));
                let rv = o.metadata.resource_version.clone();
                let text = to_text(codec_of(&self.codec), o);
                self.store
                    .write()
                    .expect("cache lock")
                    .entry(ns.clone())
                    .or_default()
                    .insert(name.clone(), text);
                self.bump([&ns]);
                self.train();
                // Taken once the cache holds it: while an echo waits, a pass reading the object
                // waits for it ([`Caches::caught_up`]).
                let echo = rv.as_deref().is_some_and(|rv| self.echoes.take(&id, rv));
                if echo {
                    return vec![]; // the agent's own write: nothing to wake for
                }
                vec![Change::Object(id, rv)]
            }
            Ok(watcher::Event::Delete(o)) => {
                let (ns, name) = place(&o);
                if let Some(m) = self.store.write().expect("cache lock").get_mut(&ns) {
                    m.remove(&name);
                }
                self.bump([&ns]);
                vec![Change::Object(self.identity((ns, name)), None)]
            }
            Err(e) => {
                let message = e.to_string();
                let mut failing = self.failed.write().expect("cache lock");
                if failing.is_none() {
                    tracing::warn!(kind = %self.what(), error = %message,
                        "a watch failed; it retries with backoff (readiness says so until it resumes)");
                } else {
                    tracing::debug!(kind = %self.what(), error = %message, "the watch failed again");
                }
                *failing = Some((message, Instant::now()));
                vec![]
            }
        }
    }

    /// A (re-)list is in: it becomes the cache; after the first, what it found changed (but the
    /// agent's own writes) is to wake for.
    fn relist_done(&mut self) -> Vec<Change> {
        let new = self.building.take().unwrap_or_default();
        let first = !*self.ready.borrow();
        let found = if first {
            Vec::new()
        } else {
            let codec = codec_of(&self.codec);
            relisted(&self.store.read().expect("cache lock"), &new, codec)
        };
        // Every namespace before or after counts as changed: a re-list is rare.
        let namespaces: BTreeSet<Option<String>> = (self.store.read().expect("cache lock").keys())
            .chain(new.keys())
            .cloned()
            .collect();
        *self.store.write().expect("cache lock") = new;
        self.bump(&namespaces);
        self.train();
        self.ready.send_replace(true);
        found
            .into_iter()
            .filter(|(place, _)| !self.echoed.contains(place))
            .map(|(place, rv)| Change::Object(self.identity(place), rv))
            .collect()
    }
}

/// The object as cached: `managedFields` dropped (of an inventory, all but what its trust check
/// reads: [`inventory::trust_facts`]), `apiVersion` and `kind` filled in.
pub(super) fn prepare(obj: &mut DynamicObject, resource: &ApiResource) {
    let managed = obj.metadata.managed_fields.take();
    if is_inventory(obj, resource)
        && let Some(managed) = managed
    {
        let facts = serde_json::to_value(&managed)
            .ok()
            .map(|m| inventory::trust_facts(&m))
            .and_then(|f| serde_json::from_value(f).ok());
        // Facts that do not round-trip: an empty list, which the trust check refuses.
        obj.metadata.managed_fields = Some(facts.unwrap_or_default());
    }
    if obj.types.is_none() {
        obj.types = Some(TypeMeta {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
        });
    }
}

/// An inventory ConfigMap: in the agent's namespace, with the inventory label.
fn is_inventory(obj: &DynamicObject, resource: &ApiResource) -> bool {
    resource.group.is_empty()
        && resource.kind == "ConfigMap"
        && obj.metadata.namespace.as_deref() == Some(crate::marks::AGENT_NAMESPACE)
        && obj
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(crate::marks::INVENTORY_LABEL))
            .is_some_and(|v| v == "true")
}

fn place(obj: &DynamicObject) -> (Option<String>, String) {
    (
        obj.metadata.namespace.clone(),
        obj.metadata.name.clone().unwrap_or_default(),
    )
}

fn to_text(codec: &Codec, obj: DynamicObject) -> Text {
    codec.pack(&serde_json::to_vec(&obj).expect("objects serialise"))
}

/// What a re-list found changed since the cache's last view (`old`): each object added, changed
/// (its text, resourceVersion included, differs) or gone, with the resourceVersion it has now.
fn relisted(old: &Objects, new: &Objects, codec: &Codec) -> Vec<(Place, Option<String>)> {
    let empty = HashMap::new();
    let mut out = Vec::new();
    for (ns, objects) in new {
        let before = old.get(ns).unwrap_or(&empty);
        for (name, text) in objects {
            // The same bytes, or the same text packed before and after a dictionary was trained.
            let same = before
                .get(name)
                .is_some_and(|b| b == text || codec.unpack(b) == codec.unpack(text));
            if !same {
                let rv = parse(codec, text)
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                out.push(((ns.clone(), name.clone()), rv));
            }
        }
    }
    for (ns, objects) in old {
        let now = new.get(ns).unwrap_or(&empty);
        for name in objects.keys().filter(|n| !now.contains_key(*n)) {
            out.push(((ns.clone(), name.clone()), None));
        }
    }
    out.sort();
    out
}

pub(super) fn parse(codec: &Codec, text: &Text) -> Value {
    serde_json::from_slice(&codec.unpack(text)).expect("the cache holds JSON it wrote")
}

#[cfg(test)]
#[path = "follower_tests.rs"]
mod tests;

//! How the simulator learns about ASO objects: discovery of the ASO kinds served (every group ending
//! in `.azure.com`) and one watcher per kind that reports which objects changed or went away, and
//! keeps what it saw in a cache ([`Watched::cache`]) the reconciles read instead of the API server.

use super::policy;
use crate::arm::OwnerRef;
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::discovery::{Discovery, Scope, verbs};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, RwLock};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// One simulated object, independent of the API version it is served at.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Key {
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.kind, self.namespace, self.name)
    }
}

/// What a watcher reports.
pub(super) enum Seen {
    Applied {
        key: Key,
        owner: OwnerRef,
    },
    /// Gone from the control plane; `arm_id` is the Azure resource ASO deletes with it (policy
    /// `manage`), `None` when the Azure resource is kept (`detach-on-delete`, `skip`) or never
    /// existed. `uid` tells whether the simulator's finalizer already did it.
    Deleted {
        key: Key,
        uid: String,
        arm_id: Option<String>,
    },
}

/// One watched kind: how to reach it, and the objects its watch has delivered so far.
#[derive(Clone)]
pub(super) struct Watched {
    pub ar: ApiResource,
    /// Updated before the watcher reports the change, so a reconcile woken by a change reads at
    /// least that version. Empty until the first list is complete; readers fall back to the API.
    pub cache: Cache,
}

impl Watched {
    /// The cached object (see [`to_value`]), if the watch has delivered it.
    pub fn cached(&self, namespace: &str, name: &str) -> Option<Value> {
        self.cache.get(namespace, name)
    }
}

/// (namespace, name) → the object's JSON text.
type Texts = HashMap<(String, String), Box<[u8]>>;

/// A kind's objects as the watch delivered them, kept as JSON text without managedFields (the
/// reconciles read none and write patches of their own) and parsed when a reconcile reads one:
/// a parsed object takes several times its text's memory, and a reconcile already paid for a
/// conversion of the object.
#[derive(Clone, Default)]
pub(super) struct Cache(Arc<RwLock<CacheState>>);

#[derive(Default)]
struct CacheState {
    /// What reads see: the last complete list and the changes since.
    objects: Texts,
    /// A list in progress (after a watch restarted), swapped in once complete.
    listing: Option<Texts>,
}

impl Cache {
    fn get(&self, namespace: &str, name: &str) -> Option<Value> {
        let state = self.0.read().expect("simulator cache lock");
        let text = state
            .objects
            .get(&(namespace.to_string(), name.to_string()))?;
        serde_json::from_slice(text).ok()
    }

    /// A list begins (the watch started or restarted): what it delivers is read once it ends.
    fn list_started(&self) {
        self.0.write().expect("simulator cache lock").listing = Some(Texts::new());
    }

    /// The list ended: it replaces what was read before.
    fn list_done(&self) {
        let mut state = self.0.write().expect("simulator cache lock");
        state.objects = state.listing.take().unwrap_or_default();
    }

    /// An object the watch delivered: into the list in progress, if one is, else read at once.
    fn put(&self, id: (String, String), obj: &Value) {
        let Ok(text) = serde_json::to_vec(obj) else {
            return;
        };
        let mut state = self.0.write().expect("simulator cache lock");
        let state = &mut *state;
        let texts = state.listing.as_mut().unwrap_or(&mut state.objects);
        texts.insert(id, text.into_boxed_slice());
    }

    fn remove(&self, id: &(String, String)) {
        self.0
            .write()
            .expect("simulator cache lock")
            .objects
            .remove(id);
    }
}

/// Watched kinds by (group, kind).
pub(super) type Kinds = HashMap<(String, String), Watched>;

/// Finds ASO kinds not in `kinds` yet and starts a watcher for each. True when at least one ASO
/// kind is watched.
pub(super) async fn discover(
    client: &Client,
    kinds: &mut Kinds,
    tx: &mpsc::UnboundedSender<Seen>,
    watchers: &mut JoinSet<()>,
) -> bool {
    let groups = match client.list_api_groups().await {
        Ok(groups) => groups,
        Err(error) => {
            tracing::warn!(%error, "Azure simulator: API discovery failed");
            return !kinds.is_empty();
        }
    };
    let names: Vec<String> = groups
        .groups
        .into_iter()
        .map(|g| g.name)
        .filter(|n| n.ends_with(".azure.com"))
        .collect();
    if names.is_empty() {
        tracing::debug!("Azure simulator: no ASO API group served yet");
        return !kinds.is_empty();
    }
    let allow: Vec<&str> = names.iter().map(String::as_str).collect();
    let discovery = match Discovery::new(client.clone()).filter(&allow).run().await {
        Ok(d) => d,
        Err(error) => {
            tracing::warn!(%error, "Azure simulator: discovery of ASO groups failed");
            return !kinds.is_empty();
        }
    };
    for group in discovery.groups() {
        for (ar, caps) in group.recommended_resources() {
            if caps.scope != Scope::Namespaced || !caps.supports_operation(verbs::WATCH) {
                continue;
            }
            let gk = (ar.group.clone(), ar.kind.clone());
            if kinds.contains_key(&gk) {
                continue;
            }
            tracing::info!(group = %ar.group, version = %ar.version, kind = %ar.kind, "Azure simulator: watching ASO kind");
            let cache = Cache::default();
            watchers.spawn(watch_kind(
                client.clone(),
                ar.clone(),
                cache.clone(),
                tx.clone(),
            ));
            kinds.insert(gk, Watched { ar, cache });
        }
    }
    !kinds.is_empty()
}

/// Watches one ASO kind in every namespace and reports changes until the receiver is gone.
async fn watch_kind(
    client: Client,
    ar: ApiResource,
    cache: Cache,
    tx: mpsc::UnboundedSender<Seen>,
) {
    let api: Api<DynamicObject> = Api::all_with(client, &ar);
    let mut events = watcher(api, watcher::Config::default())
        .default_backoff()
        .modify(|o| o.metadata.managed_fields = None)
        .boxed();
    while let Some(event) = events.next().await {
        let seen = match event {
            Ok(watcher::Event::Apply(obj) | watcher::Event::InitApply(obj)) => {
                let key = key_of(&obj, &ar);
                let obj = to_value(obj, &ar);
                cache.put((key.namespace.clone(), key.name.clone()), &obj);
                let owner = crate::arm::owner_of(&obj);
                Seen::Applied { key, owner }
            }
            Ok(watcher::Event::Delete(obj)) => {
                let key = key_of(&obj, &ar);
                let uid = obj.uid().unwrap_or_default();
                cache.remove(&(key.namespace.clone(), key.name.clone()));
                let obj = to_value(obj, &ar);
                Seen::Deleted {
                    key,
                    uid,
                    arm_id: policy::deleted_in_azure(&obj),
                }
            }
            Ok(watcher::Event::Init) => {
                cache.list_started();
                continue;
            }
            Ok(watcher::Event::InitDone) => {
                cache.list_done();
                continue;
            }
            Err(error) => {
                tracing::warn!(kind = %ar.kind, %error, "Azure simulator: watch failed; retrying");
                continue;
            }
        };
        if tx.send(seen).is_err() {
            return;
        }
    }
}

fn key_of(obj: &DynamicObject, ar: &ApiResource) -> Key {
    Key {
        group: ar.group.clone(),
        kind: ar.kind.clone(),
        namespace: obj.namespace().unwrap_or_default(),
        name: obj.name_any(),
    }
}

/// The object as JSON, with `apiVersion` and `kind` filled in (list items may lack them).
pub(super) fn to_value(obj: DynamicObject, ar: &ApiResource) -> Value {
    let mut value = serde_json::to_value(obj).unwrap_or_else(|_| json!({}));
    if value
        .get("kind")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        value["kind"] = json!(ar.kind);
    }
    if value
        .get("apiVersion")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        value["apiVersion"] = json!(ar.api_version);
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_is_read_once_complete_and_changes_at_once() {
        let cache = Cache::default();
        let id = ("ns".to_string(), "rg".to_string());
        let obj = json!({"kind": "ResourceGroup", "metadata": {"name": "rg"}, "spec": {"location": "eastus"}});
        cache.list_started();
        cache.put(id.clone(), &obj);
        assert_eq!(
            cache.get("ns", "rg"),
            None,
            "a list in progress is not read"
        );
        cache.list_done();
        assert_eq!(cache.get("ns", "rg"), Some(obj.clone()));

        let changed = json!({"kind": "ResourceGroup", "metadata": {"name": "rg"}, "spec": {"location": "westus"}});
        cache.put(id.clone(), &changed);
        assert_eq!(cache.get("ns", "rg"), Some(changed));
        // A watch that restarts lists again: what the new list lacks is gone once it completes.
        cache.list_started();
        assert!(
            cache.get("ns", "rg").is_some(),
            "the last list stands meanwhile"
        );
        cache.list_done();
        assert_eq!(cache.get("ns", "rg"), None);
        cache.put(id.clone(), &obj);
        cache.remove(&id);
        assert_eq!(cache.get("ns", "rg"), None);
    }
}

//! How the simulator learns about ASO objects: discovery of the ASO kinds served (every group ending
//! in `.azure.com`) and one watcher per kind that reports which objects changed or went away, and
//! keeps what it saw in a cache ([`Watched::store`]) the reconciles read instead of the API server.

use super::policy;
use crate::arm::OwnerRef;
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::discovery::{Discovery, Scope, verbs};
use kube::runtime::reflector::{ObjectRef, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
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
    pub store: Store<DynamicObject>,
}

impl Watched {
    /// The cached object, if the watch has delivered it.
    pub fn cached(&self, namespace: &str, name: &str) -> Option<Arc<DynamicObject>> {
        self.store
            .get(&ObjectRef::new_with(name, self.ar.clone()).within(namespace))
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
            let writer = Writer::new(ar.clone());
            let store = writer.as_reader();
            watchers.spawn(watch_kind(client.clone(), ar.clone(), writer, tx.clone()));
            kinds.insert(gk, Watched { ar, store });
        }
    }
    !kinds.is_empty()
}

/// Watches one ASO kind in every namespace and reports changes until the receiver is gone.
async fn watch_kind(
    client: Client,
    ar: ApiResource,
    writer: Writer<DynamicObject>,
    tx: mpsc::UnboundedSender<Seen>,
) {
    let api: Api<DynamicObject> = Api::all_with(client, &ar);
    let mut events = watcher(api, watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .boxed();
    while let Some(event) = events.next().await {
        let seen = match event {
            Ok(watcher::Event::Apply(obj) | watcher::Event::InitApply(obj)) => {
                let key = key_of(&obj, &ar);
                let owner = crate::arm::owner_of(&to_value(obj, &ar));
                Seen::Applied { key, owner }
            }
            Ok(watcher::Event::Delete(obj)) => {
                let key = key_of(&obj, &ar);
                let uid = obj.uid().unwrap_or_default();
                let obj = to_value(obj, &ar);
                Seen::Deleted {
                    key,
                    uid,
                    arm_id: policy::deleted_in_azure(&obj),
                }
            }
            Ok(watcher::Event::Init | watcher::Event::InitDone) => continue,
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

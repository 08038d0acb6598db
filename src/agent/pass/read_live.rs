//! Reading a unit's live state for a pass, from the shared caches (a LIST only for a kind no
//! cache holds): every object of each kind, version and namespace the unit renders, the Secrets of its namespaces (without their data: the kubeconfig's presence is what
//! the chain needs; the unit's own Secrets keep theirs, compared with git `data` against `data` as
//! `aro-gitops drift` compares them), the AutoNodePolicies of the namespaces of its node pools,
//! and the kinds its ARO objects recorded as owned but no longer render.

use crate::agent::controller::cache::{Caches, KindKey};
use crate::agent::pass::prepare::Prepared;
use crate::apply::Cluster;
use crate::apply::inventory::Identity;
use crate::object::{ObjectKey, Sym};
use crate::reconcile::aro::node_policy;
use crate::report::UnitError;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap, HashSet};

/// A listing: group, version, kind, namespace.
pub type ListKey = (Sym, Sym, Sym, Option<Sym>);

/// What a pass reads before it acts.
pub struct Live {
    /// Live objects, keyed with the version the unit asked for.
    pub objects: HashMap<ObjectKey, Value>,
    /// Listings of kinds the cluster does not serve.
    pub unserved: BTreeSet<ListKey>,
}

/// Secrets are kept for the chain (the kubeconfig) without their data.
pub fn without_secret_data(mut obj: Value) -> Value {
    if obj.get("kind").and_then(Value::as_str) == Some("Secret")
        && let Some(m) = obj.as_object_mut()
    {
        m.remove("data");
        m.remove("stringData");
    }
    obj
}

/// The listing `key` is read by.
pub fn list_key(key: &ObjectKey) -> ListKey {
    (
        key.group.clone(),
        key.version.clone(),
        key.kind.clone(),
        key.namespace.clone(),
    )
}

/// What has been read already: a listing, with the name for a key without a namespace (a
/// cluster-scoped kind is read by name from the caches).
type Read = (ListKey, Option<String>);

/// Lists `key`'s kind in its namespace into `live` (once per kind, version and namespace).
async fn list_into(
    cluster: &Cluster,
    caches: Option<&Caches>,
    key: &ObjectKey,
    live: &mut HashMap<ObjectKey, Value>,
    listed: &mut BTreeSet<Read>,
    unserved: &mut BTreeSet<ListKey>,
    errors: &mut Vec<UnitError>,
) {
    let by_name = key.namespace.is_none().then(|| key.name.clone());
    if !listed.insert((list_key(key), by_name)) {
        return;
    }
    let listed = match caches.and_then(|c| c.read(cluster, key)) {
        Some(items) => Ok(items),
        None => cluster.list(key, None).await,
    };
    match listed {
        Ok(items) => {
            for item in items {
                if let Ok(k) = ObjectKey::from_object(&item) {
                    // Keep the version the unit asked for, so lookups by key match.
                    let k = ObjectKey {
                        version: key.version.clone(),
                        ..k
                    };
                    live.insert(k, item);
                }
            }
        }
        Err(crate::apply::ApplyError::UnknownKind { .. }) => {
            unserved.insert(list_key(key));
        }
        Err(e) => errors.push(UnitError {
            object: Some(key.clone()),
            file: None,
            message: e.to_string(),
            ..Default::default()
        }),
    }
}

/// Reads the live state of `prepared`'s unit.
pub async fn read(
    cluster: &Cluster,
    caches: Option<&Caches>,
    prepared: &Prepared,
    errors: &mut Vec<UnitError>,
) -> Live {
    if let Some(caches) = caches {
        // A pass reading its objects before the caches saw its last writes of them would write
        // them again, for nothing.
        let kinds: HashMap<Identity, KindKey> = (prepared.objects.iter())
            .map(|o| {
                let k = &o.key;
                let kind = (k.group.clone(), k.version.clone(), k.kind.clone());
                (Identity::from(k), kind)
            })
            .collect();
        if let Err(lagging) = caches.caught_up(cluster, |id| kinds.get(id).cloned()).await {
            tracing::debug!(unit = %prepared.unit.name(), lagging = lagging.len(),
                "the caches have not seen the agent's last writes of the unit: read as they are");
        }
    }
    let mut live: HashMap<ObjectKey, Value> = HashMap::new();
    let mut listed = BTreeSet::new();
    let mut unserved = BTreeSet::new();
    let namespaces: BTreeSet<Option<Sym>> = prepared
        .objects
        .iter()
        .map(|o| o.key.namespace.clone())
        .collect();
    let secret_keys = namespaces.iter().flatten().map(|ns| ObjectKey {
        group: Default::default(),
        version: "v1".into(),
        kind: "Secret".into(),
        namespace: Some(ns.clone()),
        name: String::new(),
    });
    let unit_keys: Vec<ObjectKey> = prepared
        .objects
        .iter()
        .map(|o| o.key.clone())
        .chain(secret_keys)
        .collect();
    for key in &unit_keys {
        list_into(
            cluster,
            caches,
            key,
            &mut live,
            &mut listed,
            &mut unserved,
            errors,
        )
        .await;
    }
    // The AutoNodePolicies of the namespaces whose node pools the unit reconciles, rendered by
    // the unit or not (a kind the cluster does not serve there just holds none).
    for ns in prepared.node_policy_namespaces() {
        let key = node_policy::list_key(Some(&ns));
        let mut ignored = BTreeSet::new();
        list_into(
            cluster,
            caches,
            &key,
            &mut live,
            &mut listed,
            &mut ignored,
            errors,
        )
        .await;
    }
    // The kinds the ARO objects recorded and the unit no longer renders: their owned objects are
    // still to be seen (and pruned).
    for key in crate::agent::pass::reconcilers::recorded_kind_keys(prepared, &live) {
        let seen = listed
            .iter()
            .any(|((g, _, k, ns), _)| (g, k, ns) == (&key.group, &key.kind, &key.namespace));
        if !seen {
            let mut ignored = BTreeSet::new();
            list_into(
                cluster,
                caches,
                &key,
                &mut live,
                &mut listed,
                &mut ignored,
                errors,
            )
            .await;
        }
    }
    // Only the Secrets the unit renders keep their data (they are compared with git).
    let rendered: HashSet<&ObjectKey> = prepared.objects.iter().map(|o| &o.key).collect();
    let objects = live
        .into_iter()
        .map(|(k, v)| {
            let v = if rendered.contains(&k) {
                v
            } else {
                without_secret_data(v)
            };
            (k, v)
        })
        .collect();
    Live { objects, unserved }
}

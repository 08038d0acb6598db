//! The embedded ARO reconcilers' IO in a pass; the decisions are `reconcile::aro`'s (pure).
//!
//! - [`key_states`]: asks the pass's [`KeyManager`] where each AROControlPlane's etcd key stands,
//!   once, before any decision;
//! - [`recorded_kind_keys`]: the kinds the ARO owners recorded and the unit no longer renders, so
//!   the pass lists them and the decisions see the owned objects left behind;
//! - [`decide`]: the decisions of a unit's ARO objects against the live objects of the pass;
//! - [`record_owned_kinds`]: the owned-kinds annotation, written before an owner's first apply;
//! - [`write`]: at the end of a pass, each decision's patches (the AROCluster's endpoint, the CAPI
//!   MachinePool's replicas-managed-by) and its status, through the status subresource, each
//!   written only when it differs from what is live.

use super::prepare::Prepared;
use crate::apply::{Cluster, OWNERSHIP_MANAGER, RECONCILER_MANAGER};
use crate::object::ObjectKey;
use crate::reconcile::aro::{
    self, Decision, KeyManager, KeyState, OWNED_KINDS_ANNOTATION, parse_owned_kind, recorded_kinds,
};
use crate::report::UnitError;
use serde_json::{Value, json};
use std::collections::HashMap;

pub fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn aro_objects(prepared: &Prepared) -> impl Iterator<Item = &super::prepare::PlannedObject> {
    prepared
        .objects
        .iter()
        .filter(|o| aro::is_aro_kind(&o.key.group, &o.key.kind))
}

/// The key state of every AROControlPlane of the unit, from `keys`.
pub async fn key_states(
    keys: &dyn KeyManager,
    prepared: &Prepared,
) -> HashMap<ObjectKey, KeyState> {
    let mut out = HashMap::new();
    for o in aro_objects(prepared).filter(|o| o.key.kind == "AROControlPlane") {
        let hcp = o
            .object
            .pointer("/spec/resources")
            .and_then(Value::as_array)
            .and_then(|l| l.iter().find(|r| r["kind"] == aro::HCP_CLUSTER));
        let state = match hcp {
            Some(h) => keys.key_state(&o.object, h).await,
            None => KeyState::NotConfigured,
        };
        out.insert(o.key.clone(), state);
    }
    out
}

/// List keys (namespace-wide, any name) of the kinds the unit's live ARO owners recorded.
pub fn recorded_kind_keys(prepared: &Prepared, live: &HashMap<ObjectKey, Value>) -> Vec<ObjectKey> {
    aro_objects(prepared)
        .filter_map(|o| live.get(&o.key).map(|l| (o, l)))
        .flat_map(|(o, l)| {
            recorded_kinds(l)
                .into_iter()
                .filter_map(|e| parse_owned_kind(&e))
                .map(|(group, version, kind)| ObjectKey {
                    group,
                    version,
                    kind,
                    namespace: o.key.namespace.clone(),
                    name: String::new(),
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The decisions of the unit's ARO objects against `live` (see [`aro::decide_all`]).
pub fn decide(
    prepared: &Prepared,
    live: &HashMap<ObjectKey, Value>,
    keys: &HashMap<ObjectKey, KeyState>,
    now: &str,
) -> Vec<Decision> {
    let desired: Vec<&Value> = aro_objects(prepared).map(|o| &o.object).collect();
    if desired.is_empty() {
        return vec![];
    }
    let mut snapshot: Vec<Value> = live.values().cloned().collect();
    // A stable world: decisions do not depend on the map's iteration order.
    snapshot.sort_by_key(|o| ObjectKey::from_object(o).ok());
    aro::decide_all(&desired, &snapshot, keys, now)
}

/// Writes the owned-kinds annotation `value` on `owner` before its first apply of a new kind.
pub async fn record_owned_kinds(
    cluster: &Cluster,
    owner: &ObjectKey,
    value: &str,
    live: &mut HashMap<ObjectKey, Value>,
) -> Result<(), crate::apply::ApplyError> {
    tracing::debug!(%owner, kinds = %value, "recording owned kinds");
    let patch = json!({"apiVersion": owner.api_version(), "kind": owner.kind,
        "metadata": {"name": owner.name, "namespace": owner.namespace,
            "annotations": {OWNED_KINDS_ANNOTATION: value}}});
    let updated = cluster.apply(owner, &patch, OWNERSHIP_MANAGER).await?;
    live.insert(owner.clone(), updated);
    Ok(())
}

/// Server-side applies `patch` as the reconciler (or its `status` through the status subresource)
/// and keeps the result in `live`.
async fn reconciler_write(
    cluster: &Cluster,
    patch: &Value,
    status: bool,
    live: &mut HashMap<ObjectKey, Value>,
    errors: &mut Vec<UnitError>,
) {
    let Ok(found) = ObjectKey::from_object(patch) else {
        return;
    };
    // The live map is keyed by the version the unit asked for.
    let key = live
        .keys()
        .find(|k| {
            (&k.group, &k.kind, &k.namespace, &k.name)
                == (&found.group, &found.kind, &found.namespace, &found.name)
        })
        .cloned()
        .unwrap_or(found);
    let result = if status {
        cluster.apply_status(&key, patch, RECONCILER_MANAGER).await
    } else {
        cluster.apply(&key, patch, RECONCILER_MANAGER).await
    };
    match result {
        Ok(updated) => {
            live.insert(key, updated);
        }
        Err(e) => errors.push(UnitError {
            object: Some(key),
            file: None,
            message: e.to_string(),
        }),
    }
}

/// The reconcilers' writes at the end of a pass: patches, then status, where they differ from live.
pub async fn write(
    cluster: &Cluster,
    prepared: &Prepared,
    live: &mut HashMap<ObjectKey, Value>,
    keys: &HashMap<ObjectKey, KeyState>,
    errors: &mut Vec<UnitError>,
) {
    for d in decide(prepared, live, keys, &now()) {
        let Some(obj) = live.get(&d.owner).cloned() else {
            continue;
        };
        for patch in &d.patches {
            tracing::debug!(object = %d.owner, patch = %patch["kind"], "reconciler patch");
            reconciler_write(cluster, patch, false, live, errors).await;
        }
        let obj = live.get(&d.owner).cloned().unwrap_or(obj);
        let current = obj.get("status").cloned().unwrap_or(json!({}));
        let differs = d
            .status
            .as_object()
            .is_some_and(|m| m.iter().any(|(k, v)| current.get(k) != Some(v)));
        if differs {
            tracing::debug!(object = %d.owner, live = %current, computed = %d.status, "status write");
            let patch = json!({"apiVersion": obj["apiVersion"], "kind": obj["kind"],
                "metadata": {"name": d.owner.name, "namespace": d.owner.namespace},
                "status": d.status});
            reconciler_write(cluster, &patch, true, live, errors).await;
        }
    }
}

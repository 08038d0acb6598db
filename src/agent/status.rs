//! The embedded ARO reconcilers' writes at the end of a pass: the status of AROCluster,
//! AROControlPlane and AROMachinePool (computed by `reconcile::aro`, pure) and the AROCluster's
//! mirrored control plane endpoint, each written only when it differs from what is live.

use super::prepare::Prepared;
use crate::apply::{Cluster, RECONCILER_MANAGER};
use crate::object::ObjectKey;
use crate::reconcile::aro;
use crate::report::UnitError;
use serde_json::{Value, json};
use std::collections::HashMap;

fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The embedded reconcilers' status writes (and the AROCluster endpoint mirror), only where the
/// computed state differs from what is live.
pub async fn write(
    cluster: &Cluster,
    prepared: &Prepared,
    live: &mut HashMap<ObjectKey, Value>,
    errors: &mut Vec<UnitError>,
) {
    let now = now();
    // The control plane first: the clusters mirror its endpoint and readiness.
    let rank = |k: &ObjectKey| match k.kind.as_str() {
        "AROControlPlane" => 0,
        "AROMachinePool" => 1,
        _ => 2,
    };
    let mut aro_objects: Vec<_> = prepared
        .objects
        .iter()
        .filter(|o| aro::is_aro_kind(&o.key.group, &o.key.kind))
        .collect();
    aro_objects.sort_by_key(|o| rank(&o.key));
    for planned in aro_objects {
        let key = &planned.key;
        let Some(obj) = live.get(key).cloned() else {
            continue;
        };
        let snapshot: Vec<Value> = live.values().cloned().collect();
        let (status, endpoint) = match key.kind.as_str() {
            "AROCluster" => aro::aro_cluster_status(&obj, &snapshot, &now),
            "AROControlPlane" => (aro::aro_control_plane_status(&obj, &snapshot, &now), None),
            _ => (aro::aro_machine_pool_status(&obj, &snapshot, &now), None),
        };
        if let Some((host, port)) = endpoint {
            let want = json!({"host": host, "port": port});
            if obj.pointer("/spec/controlPlaneEndpoint") != Some(&want) {
                tracing::debug!(object = %key, "mirroring the control plane endpoint");
                let patch = json!({"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": {"name": key.name, "namespace": key.namespace}, "spec": {"controlPlaneEndpoint": want}});
                match cluster.apply(key, &patch, RECONCILER_MANAGER).await {
                    Ok(updated) => {
                        live.insert(key.clone(), updated);
                    }
                    Err(e) => errors.push(UnitError {
                        object: Some(key.clone()),
                        file: None,
                        message: e.to_string(),
                    }),
                }
            }
        }
        let obj = live.get(key).cloned().unwrap_or(obj);
        let current = obj.get("status").cloned().unwrap_or(json!({}));
        let differs = status
            .as_object()
            .is_some_and(|m| m.iter().any(|(k, v)| current.get(k) != Some(v)));
        if differs {
            tracing::debug!(object = %key, live = %current, computed = %status, "status write");
            let patch = json!({"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": {"name": key.name, "namespace": key.namespace}, "status": status});
            match cluster.apply_status(key, &patch, RECONCILER_MANAGER).await {
                Ok(updated) => {
                    live.insert(key.clone(), updated);
                }
                Err(e) => errors.push(UnitError {
                    object: Some(key.clone()),
                    file: None,
                    message: e.to_string(),
                }),
            }
        }
    }
}

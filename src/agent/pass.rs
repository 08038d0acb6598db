//! One pass over a prepared unit: read live state (one LIST per kind and namespace), apply what
//! is unblocked and changed in dependency order, then let the embedded reconcilers write the ARO
//! objects' status. A pass never waits: what is blocked now is retried when a watch fires.

use super::prepare::Prepared;
use crate::apply::{Cluster, FIELD_MANAGER, OWNERSHIP_MANAGER, RECONCILER_MANAGER};
use crate::object::ObjectKey;
use crate::plan::{Action, diff_object};
use crate::reconcile::aro::{self, OWNED_KINDS_ANNOTATION, controller_ref, owned_kinds_entry};
use crate::reconcile::readiness::{Readiness, aso_readiness};
use crate::report::{AzureMode, ObjectAction, ObjectOutcome, UnitError, UnitOutcome};
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};

/// How far one object has come, as the pass judges it.
#[derive(Debug, Clone, PartialEq)]
enum State {
    Ready,
    Waiting { reason: String, message: String },
    Failed { reason: String, message: String },
    Missing,
}

/// Readiness of a live object: the ASO rule for ASO kinds, `status.ready` for the ARO kinds,
/// existence for everything else.
fn state_of(key: &ObjectKey, live: Option<&Value>) -> State {
    let Some(obj) = live else {
        return State::Missing;
    };
    if aro::is_aso_group(&key.group) {
        return match aso_readiness(obj) {
            Readiness::Ready => State::Ready,
            Readiness::Failed { reason, message } => State::Failed { reason, message },
            Readiness::Progressing { reason, message } => State::Waiting { reason, message },
            Readiness::Unknown => State::Waiting {
                reason: "Pending".into(),
                message: "no Ready condition yet".into(),
            },
        };
    }
    if aro::is_aro_kind(&key.group, &key.kind) {
        if obj.pointer("/status/ready").and_then(Value::as_bool) == Some(true) {
            return State::Ready;
        }
        let first_false = obj
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c.get("status").and_then(Value::as_str) != Some("True"))
            });
        return match first_false {
            Some(c) => State::Waiting {
                reason: format!(
                    "{}: {}",
                    c["type"].as_str().unwrap_or(""),
                    c["reason"].as_str().unwrap_or("")
                ),
                message: c["message"].as_str().unwrap_or("").to_string(),
            },
            None => State::Waiting {
                reason: "NotReady".into(),
                message: "status.ready is not true yet".into(),
            },
        };
    }
    State::Ready
}

/// Whether a dependency lets its dependents go: ASO resources must be Ready (the spec's rule);
/// anything else must exist.
fn unblocks(key: &ObjectKey, live: Option<&Value>) -> bool {
    match live {
        None => false,
        Some(_) if aro::is_aso_group(&key.group) => state_of(key, live) == State::Ready,
        Some(_) => true,
    }
}

/// Secrets are kept for the chain (the kubeconfig) without their data.
fn without_secret_data(mut obj: Value) -> Value {
    if obj.get("kind").and_then(Value::as_str) == Some("Secret")
        && let Some(m) = obj.as_object_mut()
    {
        m.remove("data");
        m.remove("stringData");
    }
    obj
}

fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn list_key(key: &ObjectKey) -> (String, String, String, Option<String>) {
    (
        key.group.clone(),
        key.version.clone(),
        key.kind.clone(),
        key.namespace.clone(),
    )
}

/// Runs one pass and says how the unit stands.
pub async fn run(
    cluster: &Cluster,
    prepared: &Prepared,
    revision: &str,
    azure: AzureMode,
    stale_source: Option<String>,
) -> UnitOutcome {
    let mut errors = Vec::new();
    let mut live: HashMap<ObjectKey, Value> = HashMap::new();
    let mut listed = BTreeSet::new();
    let mut unserved = BTreeSet::new();
    let namespaces: BTreeSet<Option<String>> = prepared
        .objects
        .iter()
        .map(|o| o.key.namespace.clone())
        .collect();
    let secret_keys = namespaces.iter().flatten().map(|ns| ObjectKey {
        group: String::new(),
        version: "v1".into(),
        kind: "Secret".into(),
        namespace: Some(ns.clone()),
        name: String::new(),
    });
    for key in prepared
        .objects
        .iter()
        .map(|o| o.key.clone())
        .chain(secret_keys)
    {
        if !listed.insert(list_key(&key)) {
            continue;
        }
        match cluster.list(&key, None).await {
            Ok(items) => {
                for item in items {
                    if let Ok(k) = ObjectKey::from_object(&item) {
                        // Keep the version the unit asked for, so lookups by key match.
                        let k = ObjectKey {
                            version: key.version.clone(),
                            ..k
                        };
                        live.insert(k, without_secret_data(item));
                    }
                }
            }
            Err(crate::apply::ApplyError::UnknownKind { .. }) => {
                unserved.insert(list_key(&key));
            }
            Err(e) => errors.push(UnitError {
                object: Some(key.clone()),
                file: None,
                message: e.to_string(),
            }),
        }
    }

    let mut outcomes: Vec<Option<ObjectOutcome>> = vec![None; prepared.objects.len()];
    let mut recorded_kinds: HashMap<usize, BTreeSet<String>> = HashMap::new();
    for &i in &prepared.order {
        let planned = &prepared.objects[i];
        let key = &planned.key;
        if unserved.contains(&list_key(key)) {
            errors.push(UnitError {
                object: Some(key.clone()),
                file: Some(planned.origin.file.clone()),
                message: format!("{key} ({}): the cluster serves no kind {} in {} (is its CustomResourceDefinition installed?)", planned.origin, key.kind, key.api_version()),
            });
            outcomes[i] = Some(ObjectOutcome {
                key: key.clone(),
                action: ObjectAction::Failed,
                ready: false,
                reason: Some("UnknownKind".into()),
                message: None,
            });
            continue;
        }
        let blockers: Vec<ObjectKey> = prepared.deps[i]
            .iter()
            .map(|&d| &prepared.objects[d].key)
            .filter(|d| !unblocks(d, live.get(*d)))
            .cloned()
            .collect();
        if !blockers.is_empty() {
            let current = live.get(key);
            let state = state_of(key, current);
            outcomes[i] = Some(ObjectOutcome {
                key: key.clone(),
                action: ObjectAction::Blocked { on: blockers },
                ready: state == State::Ready && current.is_some(),
                reason: None,
                message: None,
            });
            continue;
        }
        let mut desired = planned.object.clone();
        if let Some(p) = planned.embedded_in {
            let parent_key = &prepared.objects[p].key;
            let Some(parent) = live.get(parent_key).cloned() else {
                outcomes[i] = Some(ObjectOutcome {
                    key: key.clone(),
                    action: ObjectAction::Blocked {
                        on: vec![parent_key.clone()],
                    },
                    ready: false,
                    reason: None,
                    message: None,
                });
                continue;
            };
            if let Some(r) = controller_ref(&parent) {
                desired["metadata"]["ownerReferences"] = json!([r]);
            }
            // Shared applier, step 1: record the kind on the owner before the first object of it exists.
            let entry = owned_kinds_entry(&desired);
            let recorded = recorded_kinds.entry(p).or_insert_with(|| {
                parent
                    .pointer(&format!(
                        "/metadata/annotations/{}",
                        OWNED_KINDS_ANNOTATION.replace('/', "~1")
                    ))
                    .and_then(Value::as_str)
                    .map(|s| {
                        s.split(';')
                            .filter(|e| !e.is_empty())
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default()
            });
            if !recorded.contains(&entry) {
                tracing::debug!(owner = %parent_key, kind = %entry, "recording owned kind");
                recorded.insert(entry);
                let value = recorded.iter().cloned().collect::<Vec<_>>().join(";");
                let patch = json!({"apiVersion": parent["apiVersion"], "kind": parent["kind"], "metadata": {"name": parent_key.name, "namespace": parent_key.namespace, "annotations": {OWNED_KINDS_ANNOTATION: value}}});
                match cluster.apply(parent_key, &patch, OWNERSHIP_MANAGER).await {
                    Ok(updated) => {
                        live.insert(parent_key.clone(), updated);
                    }
                    Err(e) => {
                        errors.push(UnitError {
                            object: Some(parent_key.clone()),
                            file: Some(planned.origin.file.clone()),
                            message: e.to_string(),
                        });
                        outcomes[i] = Some(ObjectOutcome {
                            key: key.clone(),
                            action: ObjectAction::Failed,
                            ready: false,
                            reason: Some("OwnerRecordFailed".into()),
                            message: None,
                        });
                        continue;
                    }
                }
            }
        }
        let current = live.get(key);
        let diff = diff_object(Some(&desired), current);
        let action = match diff.action {
            Action::Create | Action::Update => {
                match cluster.apply(key, &desired, FIELD_MANAGER).await {
                    Ok(applied) => {
                        tracing::info!(object = %key, action = %diff.action, "applied");
                        live.insert(key.clone(), applied);
                        if diff.action == Action::Create {
                            ObjectAction::Created
                        } else {
                            ObjectAction::Updated
                        }
                    }
                    Err(e) => {
                        errors.push(UnitError {
                            object: Some(key.clone()),
                            file: Some(planned.origin.file.clone()),
                            message: e.to_string(),
                        });
                        ObjectAction::Failed
                    }
                }
            }
            _ => ObjectAction::Unchanged,
        };
        outcomes[i] = Some(ObjectOutcome {
            key: key.clone(),
            action,
            ready: false,
            reason: None,
            message: None,
        });
    }

    reconcile_aro_status(cluster, prepared, &mut live, &mut errors).await;

    let objects = prepared
        .order
        .iter()
        .filter_map(|&i| {
            let mut o = outcomes[i].clone()?;
            let state = state_of(&o.key, live.get(&o.key));
            o.ready = state == State::Ready;
            match state {
                State::Failed { reason, message } => {
                    if !matches!(o.action, ObjectAction::Blocked { .. }) {
                        o.action = ObjectAction::Failed;
                    }
                    o.reason = Some(reason);
                    o.message = Some(message);
                }
                State::Waiting { reason, message } => {
                    o.reason = Some(reason);
                    o.message = Some(message).filter(|m| !m.is_empty());
                }
                State::Missing if o.reason.is_none() => o.reason = Some("NotCreated".into()),
                _ => {}
            }
            Some(o)
        })
        .collect();
    let mut live_objects: Vec<Value> = live.into_values().collect();
    live_objects.sort_by(|a, b| {
        let k = |v: &Value| {
            (
                v["kind"].as_str().unwrap_or("").to_string(),
                v.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            )
        };
        k(a).cmp(&k(b))
    });
    UnitOutcome {
        unit: prepared.unit.name(),
        cluster: prepared.cluster.clone(),
        revision: revision.to_string(),
        stale_source,
        azure,
        objects,
        errors,
        live: live_objects,
    }
}

/// The embedded reconcilers' status writes (and the AROCluster endpoint mirror), only where the
/// computed state differs from what is live.
async fn reconcile_aro_status(
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

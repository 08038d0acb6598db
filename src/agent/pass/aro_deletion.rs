//! The IO of the ARO finalizers and of deletion in reverse order: the finalizer goes on an ARO
//! object before the first resource it embeds is applied, and, once the object is deleted, each pass
//! reads its namespace, asks [`deletion::decide`] what may go now, sends those deletes, and
//! releases the finalizer when nothing it owns is left. A pass never waits: the next one runs when
//! a watch sees the deletions progress.
//!
//! Finalizer writes: added with server-side apply under [`FINALIZER_MANAGER`] (a manager of its
//! own, so the agent's later applies of the object, which do not carry the finalizer, keep it);
//! released with a JSON merge patch of `metadata.finalizers` under a `resourceVersion`
//! precondition (a concurrent change fails with a conflict and is retried on the next pass; the
//! patch never recreates an object that is gone, as an apply would).
//!
//! This only carries on deletions already started (a `deletionTimestamp` is set by the prune, with
//! consent, or by a person); it never starts one, so a failed or empty render deletes nothing.

use crate::apply::{ApplyError, Cluster};

use crate::kinds::{CONTROL_PLANE_GROUP, INFRA_GROUP};
use crate::marks::FINALIZER_MANAGER;
use crate::object::ObjectKey;
use crate::plan::ownership::Fleet;
use crate::reconcile::aro::deletion::{self, Deletion, Step};
use crate::reconcile::aro::{self};
use crate::report::{ObjectAction, ObjectOutcome, UnitError};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What is listed in a namespace where an ARO object is being deleted, besides the kinds its ARO
/// objects recorded as owned: the ARO kinds and the CAPI Cluster (for its pause).
const NAMESPACE_KINDS: [(&str, &str, &str); 4] = [
    (INFRA_GROUP, "v1beta2", "AROCluster"),
    (CONTROL_PLANE_GROUP, "v1beta2", "AROControlPlane"),
    (INFRA_GROUP, "v1beta2", "AROMachinePool"),
    ("cluster.x-k8s.io", "v1beta2", "Cluster"),
];

/// Whether a live object is being deleted.
pub fn is_deleting(live: Option<&Value>) -> bool {
    live.is_some_and(deletion::is_deleting)
}

/// Puts the finalizer of its kind on the live ARO object `key` (when it has none yet and is not
/// being deleted), before anything it embeds is applied.
pub async fn ensure_finalizer(
    cluster: &Cluster,
    key: &ObjectKey,
    live: &mut HashMap<ObjectKey, Value>,
) -> Result<(), UnitError> {
    let (Some(obj), Some(finalizer)) = (live.get(key), deletion::finalizer_for(&key.kind)) else {
        return Ok(());
    };
    if deletion::is_deleting(obj) || deletion::holds_finalizer(obj) {
        return Ok(());
    }
    let patch = json!({"apiVersion": obj["apiVersion"], "kind": obj["kind"],
        "metadata": {"name": key.name, "namespace": key.namespace, "finalizers": [finalizer]}});
    match cluster.apply(key, &patch, FINALIZER_MANAGER).await {
        Ok(updated) => {
            tracing::info!(object = %key, finalizer, "finalizer added");
            live.insert(key.clone(), updated);
            Ok(())
        }
        Err(e) => Err(UnitError {
            object: Some(key.clone()),
            file: None,
            message: format!("{key}: adding finalizer {finalizer} failed: {e}"),
            ..Default::default()
        }),
    }
}

/// Carries on the deletion of every ARO object of the unit (`of_unit`) among `live` that is being
/// deleted and still holds its finalizer (another unit's, in a shared namespace, is left to that
/// unit). Returns the outcomes of those objects and of the resources they own.
///
/// A resource that another object of the revision (`fleet`) stands for in Azure is detached
/// before it is deleted (`detach-on-delete`): the owner's deletion goes on, and the Azure resource
/// the other object still uses is kept.
pub async fn drive(
    cluster: &Cluster,
    live: &HashMap<ObjectKey, Value>,
    of_unit: impl Fn(&ObjectKey) -> bool,
    (unit, fleet): (&str, &Fleet),
    errors: &mut Vec<UnitError>,
) -> Vec<ObjectOutcome> {
    let mut owners: BTreeMap<Option<String>, BTreeSet<ObjectKey>> = BTreeMap::new();
    for (k, v) in live {
        if crate::kinds::is_aro_kind(&k.group, &k.kind)
            && of_unit(k)
            && deletion::is_deleting(v)
            && deletion::holds_finalizer(v)
        {
            owners
                .entry(k.namespace.as_deref().map(str::to_string))
                .or_default()
                .insert(k.clone());
        }
    }
    let mut out = Vec::new();
    for (namespace, keys) in owners {
        let objects = read_namespace(cluster, namespace.as_deref(), errors).await;
        for key in keys {
            // The owner as just read: another pass may have released it meanwhile.
            let Some(owner) = objects.iter().find(|o| same_object(o, &key)) else {
                continue;
            };
            if !deletion::is_deleting(owner) || !deletion::holds_finalizer(owner) {
                continue;
            }
            let decided = deletion::decide(owner, &objects);
            let shared = shared_in_azure(&objects, &decided, unit, fleet);
            out.extend(carry_out(cluster, &key, owner, &decided, &shared, errors).await);
        }
    }
    out
}

/// The resources `decided` deletes that another object of the revision stands for in Azure, with
/// the reason naming it.
fn shared_in_azure(
    objects: &[Value],
    decided: &Deletion,
    unit: &str,
    fleet: &Fleet,
) -> HashMap<ObjectKey, (Value, String)> {
    let keys: Vec<Option<ObjectKey>> = objects
        .iter()
        .map(|o| ObjectKey::from_object(o).ok())
        .collect();
    let present: Vec<(ObjectKey, &Value)> = keys
        .iter()
        .zip(objects)
        .filter_map(|(k, o)| Some((k.clone()?, o)))
        .collect();
    let ks: Vec<ObjectKey> = present.iter().map(|(k, _)| k.clone()).collect();
    let bodies: Vec<Option<&Value>> = present.iter().map(|(_, o)| Some(*o)).collect();
    let ids = crate::agent::fleet::live_identities(&ks, &bodies);
    let mut out = HashMap::new();
    for (k, step) in &decided.steps {
        if *step != Step::Delete {
            continue;
        }
        let Some(i) = ks.iter().position(|x| same_identity(x, k)) else {
            continue;
        };
        if let Some(a) = &ids[i]
            && let Some(other) = fleet.other_for(a, unit, k)
        {
            out.insert(
                k.clone(),
                (
                    present[i].1.clone(),
                    format!(
                        "{other} stands for the same Azure resource {}: detached (detach-on-delete) before the delete, so the Azure resource is kept",
                        a.arm_id
                    ),
                ),
            );
        }
    }
    out
}

/// Whether `obj` is the object `key` names (any version).
fn same_object(obj: &Value, key: &ObjectKey) -> bool {
    ObjectKey::from_object(obj).is_ok_and(|k| same_identity(&k, key))
}

fn same_identity(a: &ObjectKey, b: &ObjectKey) -> bool {
    (&a.group, &a.kind, &a.namespace, &a.name) == (&b.group, &b.kind, &b.namespace, &b.name)
}

/// The live ARO objects and CAPI Clusters of `namespace`, and every object of the kinds its ARO
/// objects recorded as owned (so a resource missing from the unit's inventory is found too).
async fn read_namespace(
    cluster: &Cluster,
    namespace: Option<&str>,
    errors: &mut Vec<UnitError>,
) -> Vec<Value> {
    let list_key = |(group, version, kind): (&str, &str, &str)| ObjectKey {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        namespace: namespace.map(crate::object::Sym::new),
        name: String::new(),
    };
    let mut objects = Vec::new();
    for k in NAMESPACE_KINDS {
        list_into(cluster, &list_key(k), &mut objects, errors).await;
    }
    let recorded: BTreeSet<(String, String, String)> =
        objects.iter().flat_map(aro::owned_kinds).collect();
    for (group, version, kind) in &recorded {
        list_into(
            cluster,
            &list_key((group, version, kind)),
            &mut objects,
            errors,
        )
        .await;
    }
    objects
}

async fn list_into(
    cluster: &Cluster,
    key: &ObjectKey,
    into: &mut Vec<Value>,
    errors: &mut Vec<UnitError>,
) {
    match cluster.list(key, None).await {
        Ok(items) => into.extend(items),
        // A kind no longer served holds no objects.
        Err(ApplyError::UnknownKind { .. }) => {}
        Err(e) => errors.push(UnitError {
            object: None,
            file: None,
            message: format!("reading {} for an ARO deletion: {e}", key.kind),
            ..Default::default()
        }),
    }
}

fn deleting(key: &ObjectKey, reason: String) -> ObjectOutcome {
    ObjectOutcome {
        key: key.clone(),
        action: ObjectAction::Deleting,
        ready: false,
        reason: Some(reason),
        message: None,
    }
}

fn listed(keys: &[ObjectKey]) -> String {
    keys.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Sends the deletes `decided` asks for, releases the finalizer when it may, and says how each
/// object stands.
async fn carry_out(
    cluster: &Cluster,
    key: &ObjectKey,
    owner: &Value,
    decided: &Deletion,
    shared: &HashMap<ObjectKey, (Value, String)>,
    errors: &mut Vec<UnitError>,
) -> Vec<ObjectOutcome> {
    let mut out = Vec::new();
    for (k, step) in &decided.steps {
        if *step == Step::Delete
            && let Some((obj, why)) = shared.get(k)
        {
            tracing::warn!(object = %k, owner = %key, reason = %why, "detached before its deletion");
            if let Err(e) = crate::agent::pass::prune::write_detach(cluster, k, obj).await {
                errors.push(UnitError {
                    object: Some(k.clone()),
                    file: None,
                    message: format!(
                        "{k}: writing detach-on-delete before the delete: {e} ({why})"
                    ),
                    ..Default::default()
                });
                out.push(ObjectOutcome {
                    action: ObjectAction::Failed,
                    ..deleting(k, "DetachFailed".into())
                });
                continue;
            }
        }
        out.push(match step_outcome(k, key, step) {
            Some(o) => o,
            None => delete(cluster, k, key, errors).await,
        });
    }
    out.push(owner_outcome(cluster, key, owner, decided, errors).await);
    out
}

/// What a step other than a delete says of `k` (owned by `key`); `None` for a delete (sent by
/// [`delete`]).
fn step_outcome(k: &ObjectKey, key: &ObjectKey, step: &Step) -> Option<ObjectOutcome> {
    Some(match step {
        Step::Delete => return None,
        Step::Going => deleting(k, format!("being deleted with {key}")),
        Step::Wait { on, stuck: false } => {
            deleting(k, format!("waiting for {} to be deleted first", listed(on)))
        }
        Step::Wait { on, stuck: true } => ObjectOutcome {
            action: ObjectAction::DeletionBlocked,
            ..deleting(
                k,
                format!(
                    "waiting for {} to be deleted first, and nothing deletes them: delete them (or the objects that own them)",
                    listed(on)
                ),
            )
        },
        Step::Left => ObjectOutcome {
            action: ObjectAction::Kept,
            ..deleting(
                k,
                "reconcile-policy skip: not deleted by aro-gitops; garbage collection removes it after its owner, and the Azure resource is kept".into(),
            )
        },
        Step::Paused => ObjectOutcome {
            action: ObjectAction::DeletionBlocked,
            ..deleting(
                k,
                format!("{key} is paused: its deletion goes on once it is resumed"),
            )
        },
    })
}

/// Deletes `k` (owned by `key`), in its turn.
async fn delete(
    cluster: &Cluster,
    k: &ObjectKey,
    key: &ObjectKey,
    errors: &mut Vec<UnitError>,
) -> ObjectOutcome {
    match cluster.delete(k).await {
        Ok(_) => {
            tracing::info!(object = %k, owner = %key, "deleted (reverse order)");
            deleting(k, format!("deleted with {key}, in reverse order"))
        }
        Err(e) => {
            errors.push(UnitError {
                object: Some(k.clone()),
                file: None,
                message: format!("deleting {k} for {key}: {e}"),
                ..Default::default()
            });
            ObjectOutcome {
                action: ObjectAction::Failed,
                ..deleting(k, "DeleteFailed".into())
            }
        }
    }
}

/// The owner's outcome: its finalizer released once nothing it owns is left, else what holds it.
async fn owner_outcome(
    cluster: &Cluster,
    key: &ObjectKey,
    owner: &Value,
    decided: &Deletion,
    errors: &mut Vec<UnitError>,
) -> ObjectOutcome {
    let finalizer = deletion::finalizer_for(&key.kind).unwrap_or_default();
    let left: Vec<ObjectKey> = decided
        .steps
        .iter()
        .filter(|(_, s)| *s != Step::Left)
        .map(|(k, _)| k.clone())
        .collect();
    let paused = decided.steps.iter().any(|(_, s)| *s == Step::Paused);
    if decided.release {
        match release(cluster, key, owner).await {
            Ok(()) => deleting(
                key,
                format!("nothing it owns is left: finalizer {finalizer} released"),
            ),
            Err(e) if e.is_conflict() => {
                tracing::debug!(object = %key, "finalizer release conflicted: retried on the next pass");
                deleting(key, format!("releasing finalizer {finalizer}"))
            }
            Err(e) => {
                errors.push(UnitError {
                    object: Some(key.clone()),
                    file: None,
                    message: format!("{key}: releasing finalizer {finalizer} failed: {e}"),
                    ..Default::default()
                });
                ObjectOutcome {
                    action: ObjectAction::Failed,
                    ..deleting(key, "FinalizerNotReleased".into())
                }
            }
        }
    } else if paused || (left.is_empty() && !decided.release) {
        ObjectOutcome {
            action: ObjectAction::DeletionBlocked,
            ..deleting(
                key,
                format!("paused: finalizer {finalizer} is kept until it is resumed"),
            )
        }
    } else {
        deleting(
            key,
            format!(
                "finalizer {finalizer} holds it until what it owns is deleted: {}",
                listed(&left)
            ),
        )
    }
}

/// Removes the owner's finalizer (a merge patch of the list, under the resourceVersion read).
async fn release(cluster: &Cluster, key: &ObjectKey, owner: &Value) -> Result<(), ApplyError> {
    let body = json!({"metadata": {
        "resourceVersion": owner.pointer("/metadata/resourceVersion"),
        "finalizers": deletion::without_own_finalizer(owner),
    }});
    cluster.merge_patch(key, &body, FINALIZER_MANAGER).await?;
    tracing::info!(object = %key, "finalizer released: its owned resources are gone");
    Ok(())
}

/// Puts the outcomes of [`drive`] into a pass's: each replaces the outcome of the same object (of
/// any version), or is added.
pub fn merge(objects: &mut Vec<ObjectOutcome>, driven: Vec<ObjectOutcome>) {
    for d in driven {
        match objects.iter_mut().find(|o| same_identity(&o.key, &d.key)) {
            Some(o) => {
                o.action = d.action;
                o.reason = d.reason;
                o.message = d.message;
                o.ready = false;
            }
            None => objects.push(d),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(name: &str, version: &str, action: ObjectAction) -> ObjectOutcome {
        ObjectOutcome {
            key: ObjectKey {
                group: "resources.azure.com".into(),
                version: version.into(),
                kind: "ResourceGroup".into(),
                namespace: Some("ns".into()),
                name: name.into(),
            },
            action,
            ready: true,
            reason: None,
            message: None,
        }
    }

    #[test]
    fn driven_outcomes_replace_those_of_the_same_object_in_any_version() {
        let mut objects = vec![outcome("a", "v1", ObjectAction::Unchanged)];
        merge(
            &mut objects,
            vec![
                outcome("a", "v2", ObjectAction::Deleting),
                outcome("b", "v2", ObjectAction::DeletionBlocked),
            ],
        );
        assert_eq!(objects.len(), 2);
        assert_eq!(objects[0].action, ObjectAction::Deleting);
        assert_eq!(objects[0].key.version, "v1", "the pass's key is kept");
        assert!(!objects[0].ready);
        assert_eq!(objects[1].key.name, "b");
    }
}

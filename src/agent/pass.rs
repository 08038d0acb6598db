//! One pass over a prepared unit: read live state (`read_live`: from the shared caches),
//! apply what is unblocked and changed in dependency order, prune what left git (as far as
//! deletion safety allows), then let the embedded reconcilers write the ARO objects' status. A
//! pass never waits: what is blocked now is retried when a watch fires.
//!
//! The resources embedded in ARO objects are applied as their owner's decision says
//! (`reconcilers::Reconcilers`, on `reconcile::aro`): the body to apply, or held by a gate (the
//! infrastructure, control-plane, ExternalAuth and key gates), with the owned kinds recorded on
//! the owner before its first apply.
//!
//! The unit's inventory is written before anything new is created (so nothing can be orphaned),
//! and a `reconcile-policy-if-exists` decision is recorded in it before its create is sent.
//! Without `self_heal`, an object whose desired state did not change since the agent last applied
//! it is not re-applied when live state differs: that is drift, and it is reported.
//!
//! Its helpers, one file each, are below: `prepare` (the unit as rendered), `read_live`,
//! `preflight`, `identity_check`, `guest`, `reconcilers`, `prune` and `aro_deletion`.

pub(super) mod aro_deletion;
pub(super) mod guest;
pub(super) mod identity_check;
pub(super) mod preflight;
pub mod prepare;
pub mod prune;
pub(super) mod read_live;
pub(super) mod reconcilers;

use crate::agent::failpoint::FAILPOINT_ENV;
use crate::agent::pass::prepare::Prepared;
use crate::agent::pass::prune::{self as pruning, Safety};
use crate::agent::pass::reconcilers::{Reconcilers, Step};
use crate::apply::inventory::{self, Inventory, body_digest};
use crate::apply::{AzureView, Cluster};
use crate::marks::FIELD_MANAGER;
use crate::object::ObjectKey;
use crate::plan::Action;
use crate::plan::ownership;
use crate::plan::policy::{self, Decision, Policy};
use crate::reconcile::aro::apiservices::AVAILABLE_CONDITION;
use crate::reconcile::aro::{KeyManager, node_policy};
use crate::reconcile::readiness::{Readiness, aso_readiness};
use crate::report::{AzureMode, ObjectAction, ObjectOutcome, Standing, UnitError, UnitOutcome};
use serde_json::Value;
use std::collections::HashMap;

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
    if crate::kinds::is_aso_group(&key.group) {
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
    if crate::kinds::is_aro_kind(&key.group, &key.kind) {
        let conditions = obj.pointer("/status/conditions").and_then(Value::as_array);
        // A control plane is ready once `Available` too (the aggregated-APIServices gate).
        let available = conditions
            .and_then(|cs| cs.iter().find(|c| c["type"] == AVAILABLE_CONDITION))
            .filter(|c| c["status"] != "True");
        if obj.pointer("/status/ready").and_then(Value::as_bool) == Some(true) {
            return match available {
                Some(c) if key.kind == "AROControlPlane" => State::Waiting {
                    reason: format!(
                        "{AVAILABLE_CONDITION}: {}",
                        c["reason"].as_str().unwrap_or("")
                    ),
                    message: c["message"].as_str().unwrap_or("").to_string(),
                },
                _ => State::Ready,
            };
        }
        // `Available` sums the others up: the first other condition not True says more.
        let first_false = conditions.and_then(|cs| {
            cs.iter().find(|c| {
                c.get("status").and_then(Value::as_str) != Some("True")
                    && c["type"] != AVAILABLE_CONDITION
            })
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
        Some(_) if crate::kinds::is_aso_group(&key.group) => state_of(key, live) == State::Ready,
        Some(_) => true,
    }
}

/// The dependencies of object `i` that hold it back now. An embedded resource waits here only on
/// what is not embedded in another ARO object (its owner's other resources, Namespaces, CRDs):
/// the gates between the ARO objects of a cluster are their decisions' ([`aro::Decision::held`]).
fn blockers_of(prepared: &Prepared, i: usize, live: &HashMap<ObjectKey, Value>) -> Vec<ObjectKey> {
    let own = prepared.objects[i].embedded_in;
    prepared.deps[i]
        .iter()
        .filter(|&&d| {
            let theirs = prepared.objects[d].embedded_in;
            own.is_none() || theirs.is_none() || theirs == own
        })
        .map(|&d| &prepared.objects[d].key)
        .filter(|d| !unblocks(d, live.get(*d)))
        .cloned()
        .collect()
}

/// The outcome of an object that could not be applied, with the reason.
fn failed(key: &ObjectKey, reason: &str) -> ObjectOutcome {
    ObjectOutcome {
        key: key.clone(),
        action: ObjectAction::Failed,
        ready: false,
        reason: Some(reason.to_string()),
        message: None,
    }
}

/// What every pass of a run shares.
pub struct PassContext<'a> {
    pub cluster: &'a Cluster,
    pub azure_view: &'a AzureView,
    pub azure: AzureMode,
    pub revision: &'a str,
    pub stale_source: Option<String>,
    pub safety: Safety,
    pub self_heal: bool,
    /// Where the etcd encryption keys of the AROControlPlanes stand.
    pub keys: &'a dyn KeyManager,
    /// The guest clusters' clients (the aggregated-APIServices gate).
    pub guests: &'a crate::agent::pass::guest::GuestClients,
    /// The way to Azure's endpoints (a rotated identity secret is tried there), when there is one.
    pub azure_sdk: Option<&'a crate::azure::access::AzureAccess>,
    /// Live state to read instead of listing it.
    pub caches: Option<&'a crate::agent::controller::cache::Caches>,
    /// What every unit of the revision declares (ownership's deletion guard).
    pub fleet: &'a crate::plan::ownership::Fleet,
}

/// Writes `inventory` when it differs from `written`, and remembers what was written.
async fn save(
    cluster: &Cluster,
    inventory: &Inventory,
    written: &mut Inventory,
    errors: &mut Vec<UnitError>,
) -> bool {
    if inventory == written {
        return true;
    }
    match inventory::write(cluster, inventory).await {
        Ok(()) => {
            *written = inventory.clone();
            true
        }
        Err(e) => {
            errors.push(UnitError {
                object: None,
                file: None,
                message: format!("writing the unit's inventory failed: {e}"),
                ..Default::default()
            });
            false
        }
    }
}

/// Runs one pass and says how the unit stands.
pub async fn run(ctx: &PassContext<'_>, prepared: &Prepared, inv: &mut Inventory) -> UnitOutcome {
    let cluster = ctx.cluster;
    let revision = ctx.revision;
    let azure = ctx.azure;
    let stale_source = ctx.stale_source.clone();
    let mut written = inv.clone();
    let mut errors = Vec::new();
    let crate::agent::pass::read_live::Live {
        objects: mut live,
        unserved,
    } = crate::agent::pass::read_live::read(cluster, ctx.caches, prepared, &mut errors).await;
    // An object live and owned by another unit is not taken over silently: nothing of the unit
    // is recorded or applied until that is resolved.
    let unit = prepared.unit.name();
    let taken: Vec<UnitError> = prepared
        .objects
        .iter()
        .filter_map(|o| {
            let message = ownership::take_over(&unit, &o.key, &o.object, live.get(&o.key)?)?;
            Some(UnitError {
                object: Some(o.key.clone()),
                file: Some(o.origin.file.clone()),
                message,
                ..Default::default()
            })
        })
        .collect();
    if !taken.is_empty() {
        for e in &taken {
            tracing::error!(unit = %unit, error = %e.message, "not taken over from another unit");
        }
        errors.extend(taken);
        return UnitOutcome {
            unit,
            cluster: prepared.cluster.clone(),
            revision: revision.to_string(),
            stale_source,
            azure,
            objects: vec![],
            errors,
            standing: Standing::unknown(prepared.cluster.as_ref()),
        };
    }
    // The whole unit is checked against the cluster before its first write (inventory included).
    let refused =
        crate::agent::pass::preflight::check(cluster, prepared, &live, &unserved, inv, revision)
            .await;
    if !refused.is_empty() {
        return UnitOutcome {
            unit,
            cluster: prepared.cluster.clone(),
            revision: revision.to_string(),
            stale_source,
            azure,
            objects: crate::agent::pass::preflight::outcomes(prepared, &refused, |k| {
                state_of(k, live.get(k)) == State::Ready
            }),
            errors: errors.into_iter().chain(refused).collect(),
            standing: Standing::of(
                &live.into_values().collect::<Vec<_>>(),
                prepared.cluster.as_ref(),
            ),
        };
    }
    // The identities of the unit's clusters: a cluster they stop has nothing applied.
    let identities = crate::agent::pass::identity_check::check(
        cluster,
        ctx.caches,
        ctx.azure_sdk,
        prepared,
        ctx.fleet,
        &mut errors,
    )
    .await;
    let mut reconcilers = Reconcilers::start(ctx.keys, prepared, &live)
        .await
        .with_identities(identities);
    reconcilers
        .read_guests(ctx.guests, cluster, prepared, &live)
        .await;

    // Record every object about to be managed before anything is created: a crash after a create
    // can never leave an object the inventory does not know. Decisions under
    // reconcile-policy-if-exists are taken just before their create, below.
    for o in &prepared.objects {
        if inv.get(&o.key).is_some() {
            continue;
        }
        match live.get(&o.key) {
            Some(l) => inv.record(&o.key, policy::decide_live(&o.object, l, None), None),
            None if policy::if_exists(&o.object).is_none() => inv.record(
                &o.key,
                policy::decide_create(&o.object, None, Ok(false)).expect("no Azure view needed"),
                None,
            ),
            None => {}
        }
    }
    let inventory_ok = save(cluster, inv, &mut written, &mut errors).await;
    let unit_objects: Vec<&Value> = prepared.objects.iter().map(|o| &o.object).collect();

    let mut outcomes: Vec<Option<ObjectOutcome>> = vec![None; prepared.objects.len()];
    for &i in &prepared.order {
        let planned = &prepared.objects[i];
        let key = &planned.key;
        if unserved.contains(&crate::agent::pass::read_live::list_key(key)) {
            errors.push(UnitError {
                object: Some(key.clone()),
                file: Some(planned.origin.file.clone()),
                message: format!("{key} ({}): the cluster serves no kind {} in {} (is its CustomResourceDefinition installed?)", planned.origin, key.kind, key.api_version()),
                ..Default::default()
            });
            outcomes[i] = Some(failed(key, "UnknownKind"));
            continue;
        }
        // An ARO object being deleted: nothing it embeds is applied (its deletion decides).
        if let Some(p) = planned.embedded_in
            && crate::agent::pass::aro_deletion::is_deleting(live.get(&prepared.objects[p].key))
        {
            let owner = &prepared.objects[p].key;
            outcomes[i] = Some(crate::agent::pass::aro_deletion::held_by_deleting_owner(
                key, owner,
            ));
            continue;
        }
        let mut desired = planned.object.clone();
        if planned.embedded_in.is_some()
            || crate::reconcile::credentials::is_credential_secret(&planned.object)
        {
            match reconcilers.step(prepared, i, &live, &mut errors) {
                Step::Apply(body) => desired = body,
                Step::Held(h) => {
                    // A hold only a person lifts (a node pool its AutoNodePolicy refuses) fails.
                    let action = if h.needs_person() {
                        ObjectAction::Failed
                    } else {
                        ObjectAction::Blocked { on: h.on }
                    };
                    outcomes[i] = Some(ObjectOutcome {
                        key: key.clone(),
                        action,
                        ready: state_of(key, live.get(key)) == State::Ready,
                        reason: Some(h.reason),
                        message: Some(h.message).filter(|m| !m.is_empty()),
                    });
                    continue;
                }
                Step::Failed(reason) => {
                    outcomes[i] = Some(failed(key, reason));
                    continue;
                }
            }
        }
        let blockers = blockers_of(prepared, i, &live);
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
        // The owner's finalizer goes on before the first resource it embeds exists.
        if let Some(p) = planned.embedded_in
            && let Err(e) = crate::agent::pass::aro_deletion::ensure_finalizer(
                cluster,
                &prepared.objects[p].key,
                &mut live,
            )
            .await
        {
            errors.push(e);
            outcomes[i] = Some(failed(key, "FinalizerNotAdded"));
            continue;
        }
        if !reconcilers
            .record_owned_kinds(cluster, prepared, i, &mut live, &mut errors)
            .await
        {
            outcomes[i] = Some(failed(key, "OwnerRecordFailed"));
            continue;
        }
        if !inventory_ok {
            outcomes[i] = Some(failed(key, "InventoryNotWritten"));
            continue;
        }
        // Reconcile policy and adoption.
        let current = live.get(key);
        let decision: Decision = match current {
            Some(l) => policy::decide_live(&desired, l, inv.get(key).map(|e| e.decision())),
            None => {
                let recorded = inv.get(key).map(|e| e.decision());
                let exists = if recorded.is_none() && policy::if_exists(&desired).is_some() {
                    ctx.azure_view.exists(&desired, &unit_objects).await
                } else {
                    Ok(false)
                };
                match policy::decide_create(&desired, recorded, exists) {
                    Ok(d) => {
                        if recorded.is_none() {
                            inv.record(key, d, None);
                            if !save(cluster, inv, &mut written, &mut errors).await {
                                outcomes[i] = Some(failed(key, "InventoryNotWritten"));
                                continue;
                            }
                            tracing::info!(object = %key, provenance = d.provenance.as_str(), policy = %d.policy, "adoption decision recorded");
                            if std::env::var(FAILPOINT_ENV).as_deref()
                                == Ok("exit-after-adoption-record")
                            {
                                tracing::error!(object = %key, "failpoint exit-after-adoption-record: exiting before the create");
                                std::process::exit(137);
                            }
                        }
                        d
                    }
                    Err(e) => {
                        errors.push(UnitError {
                            object: Some(key.clone()),
                            file: Some(planned.origin.file.clone()),
                            message: format!("{key} ({}): {e}", planned.origin),
                            ..Default::default()
                        });
                        outcomes[i] = Some(failed(key, "AdoptionUndecided"));
                        continue;
                    }
                }
            }
        };
        let desired = ownership::mark(policy::with_decision(desired, &decision), &unit);
        if decision.policy == Policy::Skip && !policy::skip_needs_write(current, &decision) {
            inv.record(key, decision, None);
            outcomes[i] = Some(ObjectOutcome {
                key: key.clone(),
                action: ObjectAction::Skipped,
                ready: false,
                reason: Some("ReconcilePolicySkip".into()),
                message: Some(if current.is_some() {
                    "reconcile-policy skip: read and reported, never written".into()
                } else {
                    "reconcile-policy skip: not created".into()
                }),
            });
            continue;
        }
        let digest = body_digest(&desired);
        let adopted = current.is_some()
            && inv.get(key).and_then(|e| e.applied.as_ref()).is_none()
            && decision.provenance == crate::plan::policy::Provenance::Adopted;
        // Unchanged in git since the last apply, yet different live: drift, judged as
        // `aro-gitops drift` judges it.
        let unchanged_in_git =
            inv.get(key).and_then(|e| e.applied.as_deref()) == Some(digest.as_str());
        let mut judged = crate::plan::drift::judge(&desired, current, unchanged_in_git);
        // Cached objects come without managedFields (field ownership), and a cache may lag behind
        // the agent's own writes: an object to be written or reported drifted is read whole first.
        if current.is_some_and(|c| c.pointer("/metadata/managedFields").is_none())
            && (!unchanged_in_git || judged.0.action != Action::Unchanged || !judged.1.is_empty())
        {
            match cluster.get(key).await {
                Ok(Some(whole)) => drop(live.insert(key.clone(), whole)),
                Ok(None) => drop(live.remove(key)),
                Err(e) => tracing::warn!(object = %key, error = %e, "reading the object failed"),
            }
            judged = crate::plan::drift::judge(&desired, live.get(key), unchanged_in_git);
        }
        let (diff, fields) = judged;
        let drifted = !fields.is_empty();
        if drifted && !ctx.self_heal {
            let described: Vec<String> = fields
                .iter()
                .map(|f| match f.managers.as_slice() {
                    [] => f.path.clone(),
                    m => format!("{} (changed by {})", f.path, m.join(", ")),
                })
                .collect();
            tracing::info!(object = %key, fields = %described.join("; "), "drift: live differs from what was applied (self-heal is off)");
            outcomes[i] = Some(ObjectOutcome {
                key: key.clone(),
                action: ObjectAction::Drifted,
                ready: false,
                reason: Some("Drifted".into()),
                message: Some(format!(
                    "live state differs from what aro-gitops applied: {}; run with --self-heal to correct it",
                    described.join("; ")
                )),
            });
            continue;
        }
        let action = match diff.action {
            Action::Create | Action::Update => {
                match cluster.apply(key, &desired, FIELD_MANAGER).await {
                    Ok(applied) => {
                        tracing::info!(object = %key, action = %diff.action, drifted, "applied");
                        live.insert(key.clone(), applied);
                        inv.record(key, decision, Some(digest));
                        if adopted {
                            ObjectAction::Adopted
                        } else if diff.action == Action::Create {
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
                            ..Default::default()
                        });
                        ObjectAction::Failed
                    }
                }
            }
            _ => {
                inv.record(key, decision, Some(digest));
                if adopted {
                    ObjectAction::Adopted
                } else {
                    ObjectAction::Unchanged
                }
            }
        };
        outcomes[i] = Some(ObjectOutcome {
            key: key.clone(),
            action,
            ready: false,
            reason: None,
            message: None,
        });
    }

    // Prune what left git, unless the render or the source says not to.
    let desired_keys: Vec<ObjectKey> = prepared.objects.iter().map(|o| o.key.clone()).collect();
    reconcilers.record_deletions(prepared, &live, inv);
    let leaving: Vec<inventory::Entry> = pruning::candidates(inv, &desired_keys)
        .into_iter()
        .cloned()
        .collect();
    let mut pruned = Vec::new();
    if !leaving.is_empty() {
        let unit_consent = prepared
            .cluster
            .as_ref()
            .and_then(|c| prepared.objects.iter().find(|o| &o.key == c))
            .is_some_and(|o| crate::plan::prune::consents(&o.object));
        let how = pruning::UnitPruning {
            rendered: Some(prepared.objects.len()),
            stale_source: stale_source.as_deref(),
            unit_consent,
            safety: ctx.safety,
        };
        let total = inv.entries.len();
        (pruned, _) = pruning::prune(
            cluster,
            inv,
            leaving,
            &mut live,
            total,
            how,
            ctx.fleet,
            &mut errors,
        )
        .await;
    }
    if errors.is_empty() && stale_source.is_none() {
        inv.revision = Some(revision.to_string());
    }
    save(cluster, inv, &mut written, &mut errors).await;

    reconcilers
        .write(cluster, prepared, &mut live, &mut errors)
        .await;
    // ARO objects being deleted (left git, or deleted by a person): the next step, in reverse order.
    let of_unit =
        |k: &ObjectKey| inv.get(k).is_some() || prepared.objects.iter().any(|o| &o.key == k);
    let driven = crate::agent::pass::aro_deletion::drive(
        cluster,
        &live,
        of_unit,
        (&unit, ctx.fleet),
        &mut errors,
    )
    .await;

    let mut objects: Vec<ObjectOutcome> = prepared
        .order
        .iter()
        .filter_map(|&i| {
            let mut o = outcomes[i].clone()?;
            let state = state_of(&o.key, live.get(&o.key));
            o.ready = state == State::Ready;
            // Skipped and drifted objects keep the reason the pass gave them.
            let keep = matches!(o.action, ObjectAction::Skipped | ObjectAction::Drifted);
            match state {
                State::Failed { reason, message } if o.action != ObjectAction::Skipped => {
                    if !matches!(o.action, ObjectAction::Blocked { .. }) {
                        o.action = ObjectAction::Failed;
                    }
                    o.reason = Some(reason);
                    o.message = Some(message);
                }
                State::Waiting { reason, message } if !keep => {
                    o.reason = Some(reason);
                    o.message = Some(message).filter(|m| !m.is_empty());
                }
                State::Missing if o.reason.is_none() => o.reason = Some("NotCreated".into()),
                _ => {}
            }
            if let Some(why) = node_policy::ignored(&prepared.objects[i].object)
                && o.reason.is_none()
            {
                o.reason = Some(node_policy::NOT_DEFAULT.into());
                o.message = Some(why);
            }
            Some(o)
        })
        .chain(pruned)
        .collect();
    crate::agent::pass::aro_deletion::merge(&mut objects, driven);
    // The unit's own Secrets were read whole to be compared; their values go no further.
    let live_objects: Vec<Value> = live
        .into_values()
        .map(crate::agent::pass::read_live::without_secret_data)
        .collect();
    UnitOutcome {
        unit: prepared.unit.name(),
        cluster: prepared.cluster.clone(),
        revision: revision.to_string(),
        stale_source,
        azure,
        objects,
        errors,
        standing: Standing::of(&live_objects, prepared.cluster.as_ref()),
    }
}

/// A pass over a unit that left git: prunes its whole inventory as deletion safety allows (every
/// object counts against the share guard, so it needs the unit's consent), and drops the inventory
/// once nothing is left in it.
pub async fn remove(ctx: &PassContext<'_>, inv: &mut Inventory) -> UnitOutcome {
    let mut written = inv.clone();
    let mut errors = Vec::new();
    let leaving: Vec<inventory::Entry> = inv.entries.values().cloned().collect();
    // The report stays where the cluster's report was: its CAPI Cluster, as the inventory knows it.
    let capi_cluster = leaving
        .iter()
        .find(|e| e.id.group == "cluster.x-k8s.io" && e.id.kind == "Cluster")
        .map(inventory::Entry::key);
    let mut live = HashMap::new();
    let how = pruning::UnitPruning {
        rendered: None,
        stale_source: ctx.stale_source.as_deref(),
        unit_consent: false,
        safety: ctx.safety,
    };
    let total = leaving.len();
    let (mut objects, went_ahead) = pruning::prune(
        ctx.cluster,
        inv,
        leaving,
        &mut live,
        total,
        how,
        ctx.fleet,
        &mut errors,
    )
    .await;
    if went_ahead {
        let of_unit = |k: &ObjectKey| inv.get(k).is_some();
        let fleet = (inv.unit.as_str(), ctx.fleet);
        let driven = crate::agent::pass::aro_deletion::drive(
            ctx.cluster,
            &live,
            of_unit,
            fleet,
            &mut errors,
        )
        .await;
        crate::agent::pass::aro_deletion::merge(&mut objects, driven);
    }
    if inv.entries.is_empty() {
        if let Err(e) = inventory::remove(ctx.cluster, &inv.unit).await {
            errors.push(UnitError {
                object: None,
                file: None,
                message: format!("removing the inventory of a unit that left git: {e}"),
                ..Default::default()
            });
        }
    } else {
        save(ctx.cluster, inv, &mut written, &mut errors).await;
    }
    UnitOutcome {
        unit: inv.unit.clone(),
        standing: Standing::unknown(capi_cluster.as_ref()),
        cluster: capi_cluster,
        revision: ctx.revision.to_string(),
        stale_source: ctx.stale_source.clone(),
        azure: ctx.azure,
        objects,
        errors,
    }
}

//! Pruning in a pass: objects in a unit's inventory that are no longer rendered are deleted, as the
//! deletion-safety decisions of [`crate::plan::prune`] allow, dependents before what they depend on,
//! one step per pass (a pass never waits: the next one goes on when the watches fire). What an ARO
//! object embeds is not deleted here when the ARO object leaves too: the prune deletes the ARO
//! object and its finalizer takes what it embeds in reverse order (`crate::agent::pass::aro_deletion`).

use crate::apply::Cluster;
use crate::apply::inventory::{Entry, Inventory};
use crate::marks::OWNERSHIP_MANAGER;
use crate::object::ObjectKey;
use crate::plan::graph::{self, Node};
use crate::plan::ownership::{Fleet, Guard, guard_deletion};
use crate::plan::policy::Policy;
use crate::plan::prune::{self, Candidate, Consent, Verdict};
use crate::report::{ObjectAction, ObjectOutcome, UnitError};
use crate::validate::RECONCILE_POLICY;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};

/// How deletions are allowed, from the command line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Safety {
    /// `--allow-deletion`.
    pub allow_deletion: bool,
    /// `--max-delete-share`.
    pub max_delete_share: f64,
    /// `--allow-empty-render`: a unit may render no objects and prune what it has.
    pub allow_empty_render: bool,
}

impl Default for Safety {
    fn default() -> Self {
        Safety {
            allow_deletion: false,
            max_delete_share: prune::DEFAULT_MAX_DELETE_SHARE,
            allow_empty_render: false,
        }
    }
}

/// How one unit is pruned: `rendered` is how many objects it rendered (`None`: it left git),
/// `unit_consent` whether its CAPI Cluster in git allows its deletions.
#[derive(Debug, Clone, Copy)]
pub struct UnitPruning<'a> {
    pub rendered: Option<usize>,
    pub stale_source: Option<&'a str>,
    pub unit_consent: bool,
    pub safety: Safety,
    /// The fleet whose ownership and Azure guards hold.
    pub fleet: &'a Fleet,
}

impl UnitPruning<'_> {
    /// Whether the unit may render nothing and prune: the flag, or its inventory's annotation.
    fn allows_empty_render(&self, inventory: &Inventory) -> bool {
        self.safety.allow_empty_render || inventory.allow_empty_render
    }
}

/// The deletions of one unit's candidates, decided.
pub struct Decided {
    pub keys: Vec<ObjectKey>,
    /// Their live objects (`None`: gone).
    pub bodies: Vec<Option<Value>>,
    /// A verdict per candidate, or why nothing is pruned now.
    pub verdicts: Result<Vec<Verdict>, prune::Hold>,
}

/// The deletions of one unit, as [`prune::deletions`] decides them (the decision a plan shows):
/// `entries` are its inventory members no longer rendered, `live` their live objects, `total` the
/// share guard's denominator.
pub fn decide(
    how: UnitPruning,
    inventory: &Inventory,
    entries: &[&Entry],
    live: impl Fn(&ObjectKey) -> Option<Value>,
    total: usize,
    fleet: &Fleet,
) -> Decided {
    let keys: Vec<ObjectKey> = entries.iter().map(|e| e.key()).collect();
    let bodies: Vec<Option<Value>> = keys.iter().map(live).collect();
    let cands: Vec<Candidate> = entries
        .iter()
        .zip(&keys)
        .zip(&bodies)
        .map(|((e, k), l)| Candidate {
            key: k,
            live: l.as_ref(),
            recorded: e.policy,
        })
        .collect();
    let verdicts = prune::deletions(&prune::Pruning {
        rendered: how.rendered,
        stale_source: how.stale_source,
        candidates: &cands,
        total,
        consent: Consent {
            flag: how.safety.allow_deletion,
            unit: how.unit_consent || inventory.consent,
        },
        max_share: how.safety.max_delete_share,
        allow_empty_render: how.allows_empty_render(inventory),
    })
    .map(|verdicts| {
        let old: Vec<Option<&Value>> = bodies.iter().map(Option::as_ref).collect();
        guard(&inventory.unit, fleet, &keys, &old, verdicts)
    });
    Decided {
        keys,
        bodies,
        verdicts,
    }
}

/// Prunes one unit for a pass: reads the live objects of `entries` into `live` (unless nothing
/// may be pruned now), decides ([`decide`], ownership and Azure guards of `fleet` included) and
/// runs one step; when nothing may be pruned now,
/// every candidate is blocked with the reason, and an empty render fails the unit. Returns the
/// candidates' outcomes and whether the pruning went ahead.
pub async fn prune(
    cluster: &Cluster,
    inventory: &mut Inventory,
    entries: Vec<Entry>,
    live: &mut HashMap<ObjectKey, Value>,
    total: usize,
    how: UnitPruning<'_>,
    errors: &mut Vec<UnitError>,
) -> (Vec<ObjectOutcome>, bool) {
    let fleet = how.fleet;
    let refs: Vec<&Entry> = entries.iter().collect();
    let allow_empty = how.allows_empty_render(inventory);
    let verdicts = match prune::may_prune(how.rendered, how.stale_source, allow_empty) {
        Ok(()) => {
            read_live(cluster, &refs, live, errors).await;
            decide(
                how,
                inventory,
                &refs,
                |k| live.get(k).cloned(),
                total,
                fleet,
            )
            .verdicts
        }
        Err(hold) => Err(hold),
    };
    match verdicts {
        Ok(verdicts) => (
            step(cluster, inventory, entries, live, verdicts, errors).await,
            true,
        ),
        Err(hold) => {
            if hold.fails_unit() {
                tracing::error!(unit = %inventory.unit, %hold, "prune refused");
                errors.push(UnitError {
                    object: None,
                    file: None,
                    message: hold.to_string(),
                    ..Default::default()
                });
            } else {
                tracing::warn!(unit = %inventory.unit, %hold, "prune held");
            }
            let outcomes = entries
                .iter()
                .map(|e| ObjectOutcome {
                    key: e.key(),
                    action: ObjectAction::DeletionBlocked,
                    ready: false,
                    reason: Some(hold.object_reason()),
                    message: None,
                })
                .collect();
            (outcomes, false)
        }
    }
}

/// The inventory entries of `inventory` that `desired` no longer holds.
pub fn candidates<'a>(inventory: &'a Inventory, desired: &[ObjectKey]) -> Vec<&'a Entry> {
    let wanted: BTreeSet<_> = desired
        .iter()
        .map(crate::apply::inventory::Identity::from)
        .collect();
    inventory
        .entries
        .values()
        .filter(|e| !wanted.contains(&e.id))
        .collect()
}

/// Reads the live objects of `entries` (one LIST per kind and namespace not listed yet).
async fn read_live(
    cluster: &Cluster,
    entries: &[&Entry],
    live: &mut HashMap<ObjectKey, Value>,
    errors: &mut Vec<UnitError>,
) {
    let mut listed = BTreeSet::new();
    for e in entries {
        let key = e.key();
        if live.contains_key(&key)
            || !listed.insert((key.group.clone(), key.kind.clone(), key.namespace.clone()))
        {
            continue;
        }
        match cluster.list(&key, None).await {
            Ok(items) => {
                for item in items {
                    if let Ok(k) = ObjectKey::from_object(&item) {
                        live.insert(
                            ObjectKey {
                                version: key.version.clone(),
                                ..k
                            },
                            item,
                        );
                    }
                }
            }
            // A kind no longer served holds no objects.
            Err(crate::apply::ApplyError::UnknownKind { .. }) => {}
            Err(e) => errors.push(UnitError {
                object: Some(key),
                file: None,
                message: format!("reading an object to prune: {e}"),
                ..Default::default()
            }),
        }
    }
}

/// Runs one pruning step for a unit on the verdicts of its candidates (`entries`): deletes those
/// whose dependents among the candidates are gone, and forgets what is gone or kept. Returns the
/// outcomes of the candidates.
async fn step(
    cluster: &Cluster,
    inventory: &mut Inventory,
    entries: Vec<Entry>,
    live: &HashMap<ObjectKey, Value>,
    verdicts: Vec<Verdict>,
    errors: &mut Vec<UnitError>,
) -> Vec<ObjectOutcome> {
    let keys: Vec<ObjectKey> = entries.iter().map(Entry::key).collect();
    let bodies: Vec<Option<&Value>> = keys.iter().map(|k| live.get(k)).collect();
    let g = deletion_graph(&keys, &bodies);
    let order = dependents_first(&g);
    let delegated = delegated_to_owner(&keys, &bodies, &verdicts);
    let mut outcomes = Vec::new();
    for &i in &order {
        let key = &keys[i];
        let outcome = |action: ObjectAction, reason: Option<String>| ObjectOutcome {
            key: key.clone(),
            action,
            ready: false,
            reason,
            message: None,
        };
        if let Some(owner) = delegated[i]
            && matches!(
                verdicts[i],
                Verdict::Delete { .. } | Verdict::Blocked { .. }
            )
        {
            outcomes.push(outcome(
                ObjectAction::Deleting,
                Some(format!(
                    "deleted with {}, in reverse order, before its finalizer is released",
                    keys[owner]
                )),
            ));
            continue;
        }
        match &verdicts[i] {
            Verdict::Gone => {
                inventory.forget(key);
                outcomes.push(outcome(ObjectAction::Deleted, None));
            }
            Verdict::Keep { reason } => {
                tracing::info!(object = %key, %reason, "left alone");
                inventory.forget(key);
                outcomes.push(outcome(ObjectAction::Kept, Some(reason.clone())));
            }
            Verdict::Blocked { reason } => {
                tracing::warn!(object = %key, %reason, "deletion blocked");
                outcomes.push(outcome(ObjectAction::DeletionBlocked, Some(reason.clone())));
            }
            Verdict::Delete { detach } => {
                // Dependents first: wait until every candidate that depends on this one is gone.
                // What an ARO object embeds goes with its deletion, not before it.
                let candidates = (&keys[..], &verdicts[..], &delegated[..]);
                if let Some((action, reason)) = waiting_on_dependents(i, &g, candidates, live) {
                    outcomes.push(outcome(action, Some(reason)));
                    continue;
                }
                let obj = live.get(key).expect("a Delete verdict has a live object");
                if obj.pointer("/metadata/deletionTimestamp").is_some() {
                    outcomes.push(outcome(ObjectAction::Deleting, None));
                    continue;
                }
                if *detach && let Err(e) = write_detach(cluster, key, obj).await {
                    errors.push(UnitError {
                        object: Some(key.clone()),
                        file: None,
                        message: format!("writing detach-on-delete before the delete: {e}"),
                        ..Default::default()
                    });
                    outcomes.push(outcome(ObjectAction::Failed, None));
                    continue;
                }
                match cluster.delete(key).await {
                    Ok(_) => {
                        tracing::info!(object = %key, detach, "deleted");
                        let reason = detach
                            .then(|| "detach-on-delete: the Azure resource is kept".to_string());
                        outcomes.push(outcome(ObjectAction::Deleting, reason));
                    }
                    Err(e) => {
                        errors.push(UnitError {
                            object: Some(key.clone()),
                            file: None,
                            message: e.to_string(),
                            ..Default::default()
                        });
                        outcomes.push(outcome(ObjectAction::Failed, None));
                    }
                }
            }
        }
    }
    outcomes
}

/// Why candidate `i` is not deleted yet, when candidates that depend on it are still live (but
/// those its owner deletes with it): waiting for them, or blocked when one of them is blocked.
fn waiting_on_dependents(
    i: usize,
    g: &graph::Graph,
    (keys, verdicts, delegated): (&[ObjectKey], &[Verdict], &[Option<usize>]),
    live: &HashMap<ObjectKey, Value>,
) -> Option<(ObjectAction, String)> {
    let waiting: Vec<&ObjectKey> = g
        .dependents(i)
        .into_iter()
        .filter(|&d| delegated[d] != Some(i))
        .map(|d| &keys[d])
        .filter(|d| live.contains_key(*d))
        .collect();
    if waiting.is_empty() {
        return None;
    }
    let blocked = waiting.iter().any(|d| {
        let j = keys.iter().position(|k| k == *d).expect("a candidate");
        matches!(verdicts[j], Verdict::Blocked { .. })
    });
    let names = waiting
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    Some(if blocked {
        (
            ObjectAction::DeletionBlocked,
            format!("objects that depend on it are not deleted: {names}"),
        )
    } else {
        (
            ObjectAction::Deleting,
            format!("waiting for {names} to be deleted first"),
        )
    })
}

/// For each candidate, the candidate ARO object that controls it, when that one is deleted too:
/// its finalizer deletes what it embeds in reverse order (`crate::agent::pass::aro_deletion`), so the prune
/// leaves those to it.
fn delegated_to_owner(
    keys: &[ObjectKey],
    bodies: &[Option<&Value>],
    verdicts: &[Verdict],
) -> Vec<Option<usize>> {
    use crate::reconcile::aro::controller_uid;
    let uid = |b: Option<&Value>| {
        b.and_then(|o| o.pointer("/metadata/uid"))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    bodies
        .iter()
        .map(|b| {
            let c = controller_uid((*b)?)?;
            (0..keys.len()).find(|&j| {
                crate::kinds::is_aro_kind(&keys[j].group, &keys[j].kind)
                    && uid(bodies[j]).as_deref() == Some(c)
                    && matches!(verdicts[j], Verdict::Delete { .. })
            })
        })
        .collect()
}

/// Makes sure `detach-on-delete` is on the live object before it is deleted (so ASO keeps the
/// Azure resource), with a write of its own when it is not there yet.
pub(in crate::agent) async fn write_detach(
    cluster: &Cluster,
    key: &ObjectKey,
    obj: &Value,
) -> Result<(), crate::apply::ApplyError> {
    let current = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(RECONCILE_POLICY))
        .and_then(Value::as_str);
    if current == Some(Policy::DetachOnDelete.as_str()) {
        return Ok(());
    }
    let patch = json!({
        "apiVersion": obj["apiVersion"], "kind": obj["kind"],
        "metadata": {"name": key.name, "namespace": key.namespace,
                     "annotations": {RECONCILE_POLICY: Policy::DetachOnDelete.as_str()}},
    });
    cluster
        .apply(key, &patch, OWNERSHIP_MANAGER)
        .await
        .map(|_| ())
}

/// The dependency graph of objects about to be deleted, from their bodies (`None`: gone); an
/// object controlled by another of them (its controller ownerReference) counts as embedded in it.
pub fn deletion_graph(keys: &[ObjectKey], bodies: &[Option<&Value>]) -> graph::Graph {
    let empty = json!({});
    let uids: Vec<Option<&str>> = bodies
        .iter()
        .map(|b| {
            b.and_then(|o| o.pointer("/metadata/uid"))
                .and_then(Value::as_str)
        })
        .collect();
    let nodes: Vec<Node> = keys
        .iter()
        .zip(bodies)
        .map(|(k, body)| {
            let obj = body.unwrap_or(&empty);
            let controller = obj
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .and_then(|refs| {
                    refs.iter()
                        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
                })
                .and_then(|r| r.get("uid"))
                .and_then(Value::as_str);
            let embedded_in = controller.and_then(|uid| {
                uids.iter()
                    .position(|u| *u == Some(uid))
                    .map(|p| keys[p].clone())
            });
            Node {
                key: k.clone(),
                object: obj,
                embedded_in,
            }
        })
        .collect();
    graph::build(&nodes)
}

/// Indexes of the graph's nodes, dependents before what they depend on.
pub fn dependents_first(g: &graph::Graph) -> Vec<usize> {
    match g.order() {
        Ok(mut order) => {
            order.reverse();
            order
        }
        Err(_) => (0..g.len()).rev().collect(),
    }
}

/// Ownership's deletion guard over a unit's verdicts (`crate::plan::ownership::guard_deletion`):
/// an object another unit declares or owns is forgotten, not deleted (`Keep`); one not marked as
/// this unit's, a Namespace another unit puts objects in, an Azure resource another object stands
/// for, and an ARO object embedding any of those, are held (`Blocked`). `bodies` are the candidates'
/// live objects (`None`: gone); the Azure identities follow owner chains through them.
pub fn guard(
    unit: &str,
    fleet: &Fleet,
    keys: &[ObjectKey],
    bodies: &[Option<&Value>],
    verdicts: Vec<Verdict>,
) -> Vec<Verdict> {
    use crate::kinds::is_aro_kind;
    use crate::reconcile::aro::controller_uid;
    let uid = |b: &Value| {
        b.pointer("/metadata/uid")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let azure = crate::agent::fleet::live_identities(keys, bodies);
    let guards: Vec<Guard> = (0..keys.len())
        .map(|i| match bodies[i] {
            // detach-on-delete keeps the Azure resource: the deletion never reaches Azure.
            Some(b) => {
                let detached = verdicts[i] == Verdict::Delete { detach: true };
                let azure = azure[i].as_ref().filter(|_| !detached);
                guard_deletion(unit, &keys[i], b, azure, fleet)
            }
            None => Guard::Allow,
        })
        .collect();
    verdicts
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            if !matches!(v, Verdict::Delete { .. } | Verdict::Blocked { .. }) {
                return v;
            }
            match &guards[i] {
                Guard::NotOurs(reason) => {
                    return Verdict::Keep {
                        reason: reason.clone(),
                    };
                }
                Guard::Hold(reason) => {
                    return Verdict::Blocked {
                        reason: reason.clone(),
                    };
                }
                Guard::Allow => {}
            }
            // An ARO object's deletion takes what it embeds: held while any of those is.
            if is_aro_kind(&keys[i].group, &keys[i].kind)
                && let Some(own) = bodies[i].and_then(uid)
                && let Some((j, why)) = (0..keys.len()).find_map(|j| {
                    let b = bodies[j]?;
                    if controller_uid(b) != Some(own.as_str()) {
                        return None;
                    }
                    match &guards[j] {
                        Guard::Allow => None,
                        Guard::NotOurs(r) | Guard::Hold(r) => Some((j, r.clone())),
                    }
                })
            {
                return Verdict::Blocked {
                    reason: format!("it embeds {}, which is not deleted: {why}", keys[j]),
                };
            }
            v
        })
        .collect()
}

/// The error of a unit that left the revision (its folder, or its kustomization, is gone) while
/// deleting what it declared waits for consent (`blocked`: the reasons of its blocked deletions;
/// those that say how to consent count, naming [`prune::ALLOW_DELETION_ANNOTATION`]): its objects
/// stay live and unmanaged, so the unit is not converged; it fails, naming what blocks the
/// deletions (the distinct reasons, in order), until consent is given or the folder comes back.
/// A deletion held because another unit still stands for the object is safety working, not a
/// failure. `None` when nothing waits for consent.
pub fn left_git_blocked<'a>(
    unit: &str,
    blocked: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let mut reasons: Vec<&str> = Vec::new();
    let mut count = 0;
    for reason in blocked
        .into_iter()
        .filter(|r| r.contains(prune::ALLOW_DELETION_ANNOTATION))
    {
        count += 1;
        if !reasons.contains(&reason) {
            reasons.push(reason);
        }
    }
    (count > 0).then(|| {
        let objects = if count == 1 { "object" } else { "objects" };
        format!(
            "{unit} left the revision (its folder or its kustomization.yaml is gone), and deleting its {count} live {objects} is blocked: {}",
            reasons.join("; ")
        )
    })
}

#[cfg(test)]
mod left_git_tests {
    use super::left_git_blocked;

    #[test]
    fn a_unit_that_left_git_fails_while_its_deletions_are_blocked() {
        assert_eq!(left_git_blocked("clusters/dev", []), None);
        let why = "deleting it deletes the Azure resource; allow with --allow-deletion or the annotation aro-gitops.dev/allow-deletion=true";
        let other = "the annotation aro-gitops.dev/allow-deletion=true on its cluster";
        assert_eq!(
            left_git_blocked("clusters/dev", [why, why, other]).unwrap(),
            format!(
                "clusters/dev left the revision (its folder or its kustomization.yaml is gone), and deleting its 3 live objects is blocked: {why}; {other}"
            )
        );
        assert!(
            left_git_blocked("u", [other])
                .unwrap()
                .contains("its 1 live object is blocked: the annotation")
        );
        // Held because another unit stands for it: safety, not a failure.
        assert_eq!(
            left_git_blocked("u", ["unit clusters/prod declares the same Azure resource"]),
            None
        );
    }
}

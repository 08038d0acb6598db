//! The fleet-wide ownership check, in one place for `run`, `plan` and `drift`: what each unit
//! declares (a small summary per unit), the conflicts between units (one object declared twice, two
//! objects for one Azure resource) turned into failed units, and the fleet the deletion guard asks.

use crate::agent::pass::prepare::{Prepared, PreparedUnit, aro_cluster_name};
use crate::apply::inventory::Inventory;
use crate::object::ObjectKey;
use crate::plan::azure_identity::{self, AsoObject, AzureIdentity};
use crate::plan::ownership::{self, Claim, Fleet, LiveOwners, UnitClaims};
use crate::report::UnitError;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

/// The Azure identities of a prepared unit's objects (by index; `None` for other kinds).
pub fn azure_identities(p: &Prepared) -> Vec<Option<AzureIdentity>> {
    let thawed = p.thawed();
    let bodies = || thawed.iter().map(|b| &**b);
    let aso: Vec<AsoObject> = (p.objects.iter().zip(&thawed))
        .map(|(o, body)| AsoObject {
            key: &o.key,
            body,
            subscription: o.embedded_in.and_then(|i| {
                azure_identity::subscription_of(&thawed[i], bodies(), aro_cluster_name)
            }),
        })
        .collect();
    azure_identity::of_unit(&aso)
}

/// The Azure identities of live objects (`None`: gone, or not an ASO kind): owner chains are
/// followed through `bodies`, and the subscription is that of the AROControlPlane of the ARO object
/// controlling the chain's root, when both are among them.
pub fn live_identities(
    keys: &[ObjectKey],
    bodies: &[Option<&Value>],
) -> Vec<Option<AzureIdentity>> {
    use crate::reconcile::aro::controller_uid;
    let present: Vec<usize> = (0..keys.len()).filter(|&i| bodies[i].is_some()).collect();
    let uid = |b: &Value| {
        b.pointer("/metadata/uid")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let aso: Vec<AsoObject> = present
        .iter()
        .map(|&i| {
            let body = bodies[i].expect("present");
            let live = || present.iter().filter_map(|&j| bodies[j]);
            let subscription = controller_uid(body).and_then(|c| {
                live()
                    .find(|p| uid(p).as_deref() == Some(c))
                    .and_then(|aro| azure_identity::subscription_of(aro, live(), aro_cluster_name))
            });
            AsoObject {
                key: &keys[i],
                body,
                subscription,
            }
        })
        .collect();
    let mut out = vec![None; keys.len()];
    for (n, id) in azure_identity::of_unit(&aso).into_iter().enumerate() {
        out[present[n]] = id;
    }
    out
}

/// The errors of a unit declaring objects live as another fleet's, or as another unit's without
/// its consent (see [`ownership::take_over`]): nothing of it is applied. `live`: the live copy of
/// the unit's object at an index.
pub fn taken_over<'a>(
    scope: &ownership::FleetScope,
    p: &Prepared,
    live: impl Fn(usize) -> Option<&'a Value>,
) -> Vec<UnitError> {
    let unit = p.unit.name();
    (p.objects.iter().enumerate())
        .filter_map(|(i, o)| {
            let live = live(i)?;
            let message = ownership::take_over(scope, &unit, &o.key, &o.object(), live)?;
            Some(UnitError {
                object: Some(o.key.clone()),
                file: Some(o.origin.file.clone()),
                message,
                ..Default::default()
            })
        })
        .collect()
}

/// What a prepared unit declares.
pub fn claims(p: &Prepared) -> UnitClaims {
    UnitClaims {
        unit: p.unit.name(),
        claims: p
            .objects
            .iter()
            .zip(azure_identities(p))
            .map(|(o, azure)| Claim {
                key: o.key.clone(),
                file: o.origin.to_string(),
                azure,
            })
            .collect(),
    }
}

/// The errors of each unit in a conflict with another, by unit; `owner_of`: who owns an object
/// live ([`owner_in`]): of units declaring an object one of them owns, only the others fail.
pub fn conflict_errors(
    fleet: &Fleet,
    owner_of: impl Fn(&ObjectKey) -> Option<String>,
) -> BTreeMap<String, Vec<UnitError>> {
    by_unit(fleet.conflicts(owner_of))
}

/// Who owns an object live: the unit whose inventory (among the fleet's, by unit) holds it.
/// Looked up when asked: only objects in a conflict are.
pub fn owner_in(
    inventories: &BTreeMap<String, Inventory>,
) -> impl Fn(&ObjectKey) -> Option<String> + '_ {
    |key| inventory_holding(inventories, key).map(str::to_string)
}

/// Who owns an object, by a map of owners ([`declared_owners`]).
pub fn owner_by(owners: &LiveOwners) -> impl Fn(&ObjectKey) -> Option<String> + '_ {
    |key| owners.get(&ownership::id(key)).cloned()
}

/// Conflicts as the errors of the units they fail, by unit.
fn by_unit(
    conflicts: impl IntoIterator<Item = ownership::Conflict>,
) -> BTreeMap<String, Vec<UnitError>> {
    let mut out: BTreeMap<String, Vec<UnitError>> = BTreeMap::new();
    for c in conflicts {
        out.entry(c.unit).or_default().push(UnitError {
            object: Some(c.key),
            file: Some(PathBuf::from(c.file)),
            message: c.message,
            ..Default::default()
        });
    }
    out
}

/// Who owns each object as a revision declares it (a preview against a base revision, whose
/// units are taken to own what they declare): the unit declaring it, when only one does.
pub fn declared_owners<'a>(claims: impl Iterator<Item = &'a UnitClaims>) -> LiveOwners {
    let mut by: BTreeMap<ownership::Id, Option<String>> = BTreeMap::new();
    for u in claims {
        for c in &u.claims {
            by.entry(ownership::id(&c.key))
                .and_modify(|o| {
                    if o.as_deref() != Some(u.unit.as_str()) {
                        *o = None;
                    }
                })
                .or_insert_with(|| Some(u.unit.clone()));
        }
    }
    by.into_iter().filter_map(|(k, o)| Some((k, o?))).collect()
}

/// Fails every unit in a conflict with another (nothing of it is applied; see
/// [`conflict_errors`] for `owners`), and returns the fleet of every unit that prepared,
/// conflicting or not (they all still declare their objects), and the names of the units it
/// failed. `earlier`: the units and the fleet of the revision before; a unit whose preparation
/// this one kept (the same one, shared) keeps what it declared.
pub fn check(
    units: &mut [PreparedUnit],
    owner_of: impl Fn(&ObjectKey) -> Option<String>,
    earlier: Option<(&[PreparedUnit], &Fleet)>,
) -> (Fleet, BTreeSet<String>) {
    let kept = earlier.map(|(u, f)| kept_claims(u, f)).unwrap_or_default();
    let claims = (units.iter())
        .filter_map(|(u, p)| Some((u.name(), p.as_ref().ok()?)))
        .map(|(name, p)| match kept.get(name.as_str()) {
            Some((before, c)) if Arc::ptr_eq(before, p) => Arc::clone(c),
            _ => Arc::new(claims(p)),
        })
        .collect();
    let fleet = Fleet::new(claims);
    let failed = fail_conflicts(units, &fleet, owner_of);
    (fleet, failed)
}

/// The preparation and the claims of each unit of `fleet` that prepared among `units`, by name.
fn kept_claims<'a>(
    units: &'a [PreparedUnit],
    fleet: &'a Fleet,
) -> HashMap<String, (&'a Arc<Prepared>, &'a Arc<UnitClaims>)> {
    let claims: HashMap<&str, &Arc<UnitClaims>> = (fleet.claims().iter())
        .map(|c| (c.unit.as_str(), c))
        .collect();
    (units.iter())
        .filter_map(|(u, p)| {
            let name = u.name();
            let c = *claims.get(name.as_str())?;
            Some((name, (p.as_ref().ok()?, c)))
        })
        .collect()
}

/// [`check`] on the fleet made already: fails every unit in a conflict with another and returns
/// their names.
pub fn fail_conflicts(
    units: &mut [PreparedUnit],
    fleet: &Fleet,
    owner_of: impl Fn(&ObjectKey) -> Option<String>,
) -> BTreeSet<String> {
    let mut errors = conflict_errors(fleet, owner_of);
    let mut failed = BTreeSet::new();
    for (u, p) in units.iter_mut() {
        if let Some(e) = errors.remove(&u.name()) {
            for e in &e {
                tracing::error!(unit = %u.name(), error = %e.message, "conflict between units");
            }
            *p = Err(e);
            failed.insert(u.name());
        }
    }
    failed
}

/// The Azure identities of live objects (ASO kinds, and the ARO objects giving them their
/// subscription), owner chains followed namespace by namespace.
pub fn live_aso_identities(objects: Vec<Value>) -> Vec<(ObjectKey, AzureIdentity)> {
    by_namespace(objects)
        .into_values()
        .flat_map(namespace_identities)
        .collect()
}

/// `objects` with their keys, by namespace (those without a key left out).
fn by_namespace(objects: Vec<Value>) -> BTreeMap<Option<String>, Vec<(ObjectKey, Value)>> {
    let mut out: BTreeMap<Option<String>, Vec<(ObjectKey, Value)>> = BTreeMap::new();
    for o in objects {
        if let Ok(k) = ObjectKey::from_object(&o) {
            out.entry(k.namespace.as_deref().map(str::to_string))
                .or_default()
                .push((k, o));
        }
    }
    out
}

/// [`live_aso_identities`] of the objects of one namespace.
fn namespace_identities(objects: Vec<(ObjectKey, Value)>) -> Vec<(ObjectKey, AzureIdentity)> {
    let (keys, bodies): (Vec<ObjectKey>, Vec<Value>) = objects.into_iter().unzip();
    let present: Vec<Option<&Value>> = bodies.iter().map(Some).collect();
    let ids = live_identities(&keys, &present);
    (keys.into_iter().zip(ids))
        .filter_map(|(k, id)| Some((k, id?)))
        .collect()
}

/// The errors of each unit declaring an object that stands for the Azure resource of a live
/// object no unit declares (`fleet.live_conflicts`), by unit.
pub fn live_conflict_errors<'a>(
    fleet: &Fleet,
    inventory_of: impl Fn(&ObjectKey) -> Option<&'a str>,
) -> BTreeMap<String, Vec<UnitError>> {
    let conflicts = fleet.live_conflicts(inventory_of);
    for c in &conflicts {
        tracing::error!(unit = %c.unit, error = %c.message, "conflict with a live object");
    }
    by_unit(conflicts)
}

/// The kinds a live Azure-identity check lists: the revision's ASO kinds and ARO kinds.
pub fn identity_kinds(units: &[PreparedUnit]) -> std::collections::BTreeSet<ObjectKey> {
    use crate::kinds::{is_aro_kind, is_aso_group};
    // Borrowed first: a fleet has many objects and few kinds.
    let kinds: std::collections::BTreeSet<(&str, &str, &str)> = units
        .iter()
        .filter_map(|(_, p)| p.as_ref().ok())
        .flat_map(|p| p.objects.iter())
        .filter(|o| is_aso_group(&o.key.group) || is_aro_kind(&o.key.group, &o.key.kind))
        .map(|o| (&*o.key.group, &*o.key.version, &*o.key.kind))
        .collect();
    (kinds.into_iter())
        .map(|(group, version, kind)| ObjectKey {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            namespace: None,
            name: String::new(),
        })
        .collect()
}

/// The unit whose inventory holds `key`, found by looking through `inventories` (for the rare
/// question of a conflict, where an index of every inventory's objects would cost more).
pub fn inventory_holding<'a>(
    inventories: &'a BTreeMap<String, Inventory>,
    key: &ObjectKey,
) -> Option<&'a str> {
    let id = crate::apply::inventory::Identity::from(key);
    (inventories.iter())
        .find(|(_, inv)| inv.entries.contains_key(&id))
        .map(|(unit, _)| unit.as_str())
}

/// The error of each unit whose inventory the agent does not act on (it does not decode, or
/// someone else wrote it): the unit applies and prunes nothing until a person restores or
/// deletes it.
pub fn refused(broken: &[crate::apply::inventory::InventoryError]) -> BTreeMap<String, UnitError> {
    let mut out = BTreeMap::new();
    for e in broken {
        tracing::error!(error = %e, "an inventory is not acted on: its unit applies and prunes nothing");
        if let Some(unit) = &e.unit {
            out.insert(
                unit.clone(),
                UnitError {
                    object: Some(crate::apply::inventory::config_map_key(&e.name)),
                    file: None,
                    message: e.to_string(),
                    ..Default::default()
                },
            );
        }
    }
    out
}

/// The live Azure identities of one namespace's objects.
pub type NamespaceIds = Arc<Vec<(ObjectKey, AzureIdentity)>>;

/// What [`live_identities_in`] read from the caches, by namespace, with the kinds read and each
/// kind's stamp of that namespace then: a namespace whose stamps stayed is not read again.
#[derive(Default)]
pub struct IdentitiesRead {
    kinds: Vec<ObjectKey>,
    by_namespace: HashMap<Option<String>, Stamped>,
}

/// A namespace's identities, with the stamps of its kinds (the kind's index, its stamp) then.
type Stamped = (Vec<(usize, u64)>, NamespaceIds);

/// The Azure identities of the live ASO objects of the revision's kinds (ASO and ARO kinds,
/// across namespaces), for [`live_conflict_errors`] and [`Fleet::with_live`], a namespace at a
/// time: read from the `caches` when they hold the kind (one namespace parsed at a time; one
/// whose objects did not change since `read` took it is taken from there), else with one LIST
/// per kind.
pub async fn live_identities_in(
    cluster: &crate::apply::Cluster,
    caches: Option<&crate::agent::controller::cache::Caches>,
    units: &[PreparedUnit],
    read: &mut IdentitiesRead,
) -> Vec<NamespaceIds> {
    let kinds: Vec<ObjectKey> = identity_kinds(units).into_iter().collect();
    if kinds != read.kinds {
        *read = IdentitiesRead {
            kinds: kinds.clone(),
            ..Default::default()
        };
    }
    let mut listed = Vec::new();
    let mut all_cached = true;
    // Each namespace's stamps of the kinds the caches hold: (the kind's index, its stamp).
    let mut stamps: BTreeMap<Option<String>, Vec<(usize, u64)>> = BTreeMap::new();
    for (i, k) in kinds.iter().enumerate() {
        let kind = (k.group.clone(), k.version.clone(), k.kind.clone());
        if let Some(held) = caches.and_then(|c| c.namespaces(&kind)) {
            for (ns, stamp) in held {
                stamps.entry(ns).or_default().push((i, stamp));
            }
            continue;
        }
        all_cached = false;
        match cluster.list_all(k, None).await {
            Ok(items) => listed.extend(items),
            Err(crate::apply::ApplyError::UnknownKind { .. }) => {}
            Err(e) => {
                tracing::warn!(error = %e, kind = %k.kind, "listing live objects for Azure identities failed")
            }
        }
    }
    let mut listed = by_namespace(listed);
    let namespaces: BTreeSet<Option<String>> =
        (stamps.keys()).chain(listed.keys()).cloned().collect();
    let mut out = Vec::new();
    let mut kept = HashMap::new();
    let mut reused = 0;
    for ns in namespaces {
        let stamp = stamps.remove(&ns).unwrap_or_default();
        let from_list = listed.remove(&ns);
        if all_cached
            && let Some((then, ids)) = read.by_namespace.remove(&ns)
            && then == stamp
        {
            out.push(ids.clone());
            kept.insert(ns, (then, ids));
            reused += 1;
            continue;
        }
        let mut objects = from_list.unwrap_or_default();
        for &(i, _) in &stamp {
            let key = ObjectKey {
                namespace: ns.as_deref().map(crate::object::Sym::new),
                ..kinds[i].clone()
            };
            let read = caches
                .and_then(|c| c.read(cluster, &key))
                .unwrap_or_default();
            objects.extend(
                (read.into_iter()).filter_map(|o| Some((ObjectKey::from_object(&o).ok()?, o))),
            );
        }
        let ids = Arc::new(namespace_identities(objects));
        out.push(ids.clone());
        // What a LIST gave is read again next time: only the caches say what stayed.
        if all_cached {
            kept.insert(ns, (stamp, ids));
        }
    }
    tracing::debug!(
        namespaces = out.len(),
        read_again = out.len() - reused,
        all_cached,
        "live Azure identities read"
    );
    read.by_namespace = kept;
    out
}

/// The live ASO and ARO objects of a live index (what [`live_aso_identities`] needs).
pub fn identity_objects(live: &crate::apply::live_index::LiveIndex) -> Vec<Value> {
    use crate::kinds::{is_aro_kind, is_aso_group};
    live.identities()
        .filter(|id| is_aso_group(&id.group) || is_aro_kind(&id.group, &id.kind))
        .filter_map(|id| live.get(id))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::pass::prepare::PlannedObject;
    use crate::unit::Unit;
    use serde_json::json;

    /// A unit declaring one ConfigMap `name` in namespace `ns`.
    fn unit(path: &str, ns: &str, name: &str) -> PreparedUnit {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns}});
        let unit = Unit { path: path.into() };
        let prepared = Prepared {
            unit: unit.clone(),
            objects: vec![PlannedObject::new(
                ObjectKey::from_object(&object).unwrap(),
                &object,
                crate::object::Origin {
                    file: format!("{path}/cm.yaml").into(),
                    document: 0,
                },
                None,
            )],
            deps: vec![vec![]],
            order: vec![0],
            cluster: None,
            rollout: Default::default(),
        };
        (unit, Ok(Arc::new(prepared)))
    }

    #[test]
    fn a_kept_preparation_keeps_its_claims_and_conflicts_are_found_again() {
        let mut first = vec![unit("clusters/a", "a", "x"), unit("clusters/b", "b", "x")];
        let (fleet, failed) = check(&mut first, |_| None, None);
        assert!(failed.is_empty());
        // b is rendered again and now declares a's object; a's preparation is kept.
        let mut second = vec![first[0].clone(), unit("clusters/b", "a", "x")];
        let (again, failed) = check(&mut second, |_| None, Some((&first, &fleet)));
        assert!(Arc::ptr_eq(&fleet.claims()[0], &again.claims()[0]));
        assert!(!Arc::ptr_eq(&fleet.claims()[1], &again.claims()[1]));
        assert_eq!(
            again.claims()[1].claims[0].key.namespace.as_deref(),
            Some("a")
        );
        assert_eq!(
            failed,
            BTreeSet::from(["clusters/a".to_string(), "clusters/b".to_string()])
        );
        assert!(second.iter().all(|(_, p)| p.is_err()));
        // Whoever owns it live goes on.
        let mut third = vec![first[0].clone(), unit("clusters/b", "a", "x")];
        let owners = LiveOwners::from([(
            ownership::id(&third[1].1.as_ref().unwrap().objects[0].key),
            "clusters/a".to_string(),
        )]);
        let (_, failed) = check(&mut third, owner_by(&owners), Some((&first, &fleet)));
        assert_eq!(failed, BTreeSet::from(["clusters/b".to_string()]));
    }
}

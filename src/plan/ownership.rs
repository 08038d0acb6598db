//! Ownership: every object the agent applies belongs to exactly one unit, as pure decisions.
//!
//! - **The mark.** Every object is applied with [`OWNER_ANNOTATION`] (the unit's path) and
//!   [`OWNER_LABEL`] (a short digest of it) under the agent's field manager ([`mark`]).
//! - **One unit per object.** Two units of one revision declaring one object (group, kind,
//!   namespace, name), or two ASO objects standing for one Azure resource
//!   ([`super::azure_identity`]), fail both units, before anything of either is applied
//!   ([`conflicts`]); the message names both units, files and objects.
//! - **No silent take-over.** A unit declaring an object that is live and marked as another unit's
//!   fails ([`take_over`]), unless the object in git carries [`ADOPT_FROM_ANNOTATION`] naming that
//!   unit (the consent, as ASO's `reconcile-policy-if-exists` is for Azure) and that unit no longer
//!   declares it.
//! - **Prune deletes only its own.** An inventory member that left git is deleted only when its
//!   live copy carries this unit's mark (marked as another's: forgotten), no unit of the revision
//!   declares it, no other unit declares objects in it (a Namespace), and no other object stands for its Azure resource
//!   ([`guard_deletion`]).

use super::azure_identity::AzureIdentity;
use crate::marks::{ADOPT_FROM_ANNOTATION, FLEET_ANNOTATION, OWNER_ANNOTATION, OWNER_LABEL};
use crate::object::ObjectKey;
use declared::Declared;
use serde_json::Value;
use std::collections::BTreeMap;

mod conflicts;
mod declared;
pub mod scope;
pub use conflicts::LiveOwners;
pub use scope::FleetScope;

/// An object's identity across API versions.
pub type Id = crate::object::VersionlessId;

/// The identity ownership judges by (the version does not count).
pub fn id(key: &ObjectKey) -> Id {
    key.versionless()
}

/// The label value of a unit: the first 16 hex digits of the SHA-256 of its path.
pub fn unit_digest(unit: &str) -> String {
    crate::object::sha256_hex(unit.as_bytes())[..16].to_string()
}

/// `body` with the ownership mark of `unit` of the fleet `fleet` (none when unnamed), as the
/// agent applies it.
pub fn mark(mut body: Value, unit: &str, fleet: &str) -> Value {
    let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) else {
        return body;
    };
    let fleet = (!fleet.is_empty()).then(|| ("annotations", FLEET_ANNOTATION, fleet.to_string()));
    for (field, key, value) in [
        ("annotations", OWNER_ANNOTATION, unit.to_string()),
        ("labels", OWNER_LABEL, unit_digest(unit)),
    ]
    .into_iter()
    .chain(fleet)
    {
        let map = meta
            .entry(field)
            .or_insert_with(|| Value::Object(Default::default()));
        if !map.is_object() {
            *map = Value::Object(Default::default());
        }
        map.as_object_mut()
            .expect("an object")
            .insert(key.into(), Value::String(value));
    }
    body
}

/// The unit a live object's mark names.
pub fn owner(live: &Value) -> Option<&str> {
    live.pointer("/metadata/annotations")
        .and_then(|a| a.get(OWNER_ANNOTATION))
        .and_then(Value::as_str)
}

/// The unit a desired object consents to take its live copy over from.
pub fn adopts_from(desired: &Value) -> Option<&str> {
    desired
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(ADOPT_FROM_ANNOTATION))
        .and_then(Value::as_str)
}

/// Why `unit` of the fleet `scope` may not apply `desired` over `live`: it is another fleet's, or
/// owned by another unit without consent.
pub fn take_over(
    scope: &FleetScope,
    unit: &str,
    key: &ObjectKey,
    desired: &Value,
    live: &Value,
) -> Option<String> {
    if let Some(fleet) = scope.foreign_object(live) {
        return Some(format!(
            "{key} is live and belongs to fleet {fleet:?} (annotation {FLEET_ANNOTATION}), not to this agent's fleet {:?}: it is left alone; remove it from unit {unit}, or take that fleet's units over with --take-over-fleet {fleet:?}",
            scope.name
        ));
    }
    let other = owner(live)?;
    if other == unit || adopts_from(desired) == Some(other) {
        return None;
    }
    Some(format!(
        "{key} is live and owned by unit {other} (annotation {OWNER_ANNOTATION}); unit {unit} does not take it over silently: remove it from one of the units, or to move it to {unit} remove it from {other} and set the annotation {ADOPT_FROM_ANNOTATION}: {other} on it in git"
    ))
}

/// What one unit declares: each object with the file it comes from and the Azure resource it
/// stands for (ASO kinds).
#[derive(Debug, Clone)]
pub struct Claim {
    pub key: ObjectKey,
    pub file: String,
    pub azure: Option<AzureIdentity>,
}

/// Every claim of one unit (a small summary, kept while units are rendered one by one).
#[derive(Debug, Clone)]
pub struct UnitClaims {
    pub unit: String,
    pub claims: Vec<Claim>,
}

/// One unit's part in a conflict: the object of this unit at fault and the message naming both.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    pub unit: String,
    pub key: ObjectKey,
    pub file: String,
    pub message: String,
}

/// What a revision's units declare, for the deletion guard: every object's unit, every Azure
/// resource's object, and the namespaces each unit puts objects in.
#[derive(Debug, Clone, Default)]
pub struct Fleet {
    /// What the units declare: shared, so that a fleet with other live objects or another name
    /// is made without copying it.
    declared: std::sync::Arc<Declared>,
    /// Live ASO objects no unit declares, by identity ([`Fleet::with_live`]).
    live: BTreeMap<String, Vec<(ObjectKey, AzureIdentity)>>,
    /// Whose inventories and objects the units act on.
    pub scope: FleetScope,
}

impl Fleet {
    /// The fleet of the units that declare `units`.
    pub fn new(units: Vec<std::sync::Arc<UnitClaims>>) -> Fleet {
        Fleet {
            declared: std::sync::Arc::new(Declared::new(units)),
            ..Fleet::default()
        }
    }

    /// What each unit declares, in the units' order.
    pub fn claims(&self) -> &[std::sync::Arc<UnitClaims>] {
        self.declared.units()
    }

    /// The conflicts between the fleet's units (see [`conflicts`]): who fails is decided by who
    /// owns the object live (`owner_of`: the unit whose inventory holds it), asked only of the
    /// objects in a conflict.
    pub fn conflicts(&self, owner_of: impl Fn(&ObjectKey) -> Option<String>) -> Vec<Conflict> {
        let (twice, one_resource) = (
            self.declared.declared_twice(),
            self.declared.writing_one_resource(),
        );
        conflicts::conflicts(&twice, &one_resource, &owner_of)
    }
}

impl Fleet {
    /// Another object standing for the Azure resource `azure`, which `unit`'s `key` stands for
    /// too: one of the revision (or the same one in another unit), else a live one no unit
    /// declares ([`Fleet::with_live`]). Says which, for messages: "Kind/ns/name of unit U", or
    /// "the live object Kind/ns/name".
    pub fn other_for(&self, azure: &AzureIdentity, unit: &str, key: &ObjectKey) -> Option<String> {
        let declared = (self.declared.for_azure(&azure.id))
            .find(|(other, c, a)| (*other != unit || id(&c.key) != id(key)) && a.same(azure))
            .map(|(other, c, _)| format!("{} of unit {other}", c.key));
        declared.or_else(|| {
            self.live
                .get(&*azure.id)?
                .iter()
                .find(|(object, a)| id(object) != id(key) && a.same(azure))
                .map(|(object, _)| format!("the live object {object}"))
        })
    }

    /// How many live objects no unit declares stand for an Azure resource.
    pub fn undeclared_live(&self) -> usize {
        self.live.values().map(Vec::len).sum()
    }

    /// This fleet, named (see [`scope`]).
    pub fn named(mut self, scope: FleetScope) -> Fleet {
        self.scope = scope;
        self
    }

    /// This fleet with the live ASO objects no unit declares, for the deletion guard.
    pub fn with_live<'l>(
        mut self,
        live: impl IntoIterator<Item = &'l (ObjectKey, AzureIdentity)>,
    ) -> Fleet {
        for (k, a) in live {
            if self.declared_by(k).is_none() {
                self.live
                    .entry(a.id.to_string())
                    .or_default()
                    .push((k.clone(), a.clone()));
            }
        }
        self
    }

    /// The conflicts of the live ASO objects no unit declares (those [`Fleet::with_live`] took)
    /// with the objects of the revision that stand for the same Azure resource, in the order of
    /// their Azure ids. A live object still in the inventory of the unit declaring the other
    /// (`inventory_of`: the unit whose inventory holds it) is that unit's own business: its prune
    /// holds the old object.
    pub fn live_conflicts<'a>(
        &self,
        inventory_of: impl Fn(&ObjectKey) -> Option<&'a str>,
    ) -> Vec<Conflict> {
        let mut out = Vec::new();
        for (key, a) in self.live.values().flatten() {
            if !a.writes {
                continue;
            }
            let Some((unit, c, _)) =
                (self.declared.for_azure(&a.id)).find(|(_, _, x)| x.writes && x.same(a))
            else {
                continue;
            };
            if inventory_of(key) == Some(unit) {
                continue;
            }
            let held = inventory_of(key)
                .map(|u| format!(" (in the inventory of unit {u}, which no longer declares it)"))
                .unwrap_or_else(|| " (no unit declares it)".into());
            out.push(Conflict {
                unit: unit.to_string(),
                key: c.key.clone(),
                file: c.file.clone(),
                message: format!(
                    "{} ({}, unit {unit}) and the live object {key}{held} are the same Azure resource {}: one Azure resource is managed by one object; delete the live object first (with {} detach-on-delete on it to keep the Azure resource), or give {} other Azure names (nothing of unit {unit} is applied until then)",
                    c.key,
                    c.file,
                    a.arm_id,
                    crate::validate::RECONCILE_POLICY,
                    c.key
                ),
            });
        }
        out
    }

    /// The unit of the revision that declares `key`.
    pub fn declared_by(&self, key: &ObjectKey) -> Option<&str> {
        self.declared.unit_of(key)
    }
}

/// What the deletion guard makes of one candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guard {
    /// Deletion may go on as deletion safety decides.
    Allow,
    /// Not this unit's to delete: forget it (the reason says whose it is).
    NotOurs(String),
    /// Not deleted now; the reason says why.
    Hold(String),
}

/// Whether `unit` may delete the inventory member `key` (no longer in its render), live as
/// `live`, standing for the Azure resource `azure` (when an ASO kind). `unit_in_git`: the unit is
/// still in the revision (else every object it declared left with it).
pub fn guard_deletion(
    unit: &str,
    key: &ObjectKey,
    live: &Value,
    azure: Option<&AzureIdentity>,
    fleet: &Fleet,
) -> Guard {
    if let Some(other) = fleet.scope.foreign_object(live) {
        return Guard::NotOurs(format!(
            "it belongs to fleet {other:?} now (annotation {FLEET_ANNOTATION}): it is not deleted, and {unit} no longer tracks it"
        ));
    }
    match owner(live) {
        Some(o) if o == unit => {}
        Some(other) => {
            return Guard::NotOurs(format!(
                "it is owned by unit {other} now (annotation {OWNER_ANNOTATION}): it is not deleted, and {unit} no longer tracks it"
            ));
        }
        None => {
            return Guard::Hold(format!(
                "it carries no ownership mark of unit {unit} (annotation {OWNER_ANNOTATION}): the agent deletes only objects marked as the unit's; delete it by hand if it should go"
            ));
        }
    }
    if let Some(other) = fleet.declared_by(key).filter(|o| *o != unit) {
        return Guard::Hold(format!(
            "unit {other} declares it in this revision: it is not deleted (it moves to {other} once that unit takes it over with the annotation {ADOPT_FROM_ANNOTATION}: {unit})"
        ));
    }
    if key.group.is_empty()
        && key.kind == "Namespace"
        && let Some((other, object)) =
            (fleet.declared.in_namespace(&key.name)).find(|(u, _)| *u != unit)
    {
        return Guard::Hold(format!(
            "unit {other} declares objects in this namespace ({object}): deleting it would delete them"
        ));
    }
    if let Some(a) = azure
        && let Some(other) = fleet.other_for(a, unit, key)
    {
        return Guard::Hold(format!(
            "{other} stands for the same Azure resource {}: deleting this object would delete it in Azure; set {} detach-on-delete on it to delete only the Kubernetes object",
            a.arm_id,
            crate::validate::RECONCILE_POLICY
        ));
    }
    Guard::Allow
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    pub(super) fn key(kind: &str, ns: Option<&str>, name: &str) -> ObjectKey {
        ObjectKey {
            group: Default::default(),
            version: "v1".into(),
            kind: kind.into(),
            namespace: ns.map(Into::into),
            name: name.into(),
        }
    }

    pub(super) fn claim(k: ObjectKey, file: &str, azure: Option<&str>) -> Claim {
        Claim {
            key: k,
            file: file.into(),
            azure: azure.map(|a| AzureIdentity {
                id: a.to_lowercase().into(),
                arm_id: a.into(),
                subscription: None,
                writes: true,
            }),
        }
    }

    #[test]
    fn the_mark_names_the_unit_and_fits_a_label() {
        let m = mark(
            json!({"metadata": {"name": "x", "labels": {"a": "b"}}}),
            "clusters/dev",
            "",
        );
        assert_eq!(owner(&m), Some("clusters/dev"));
        assert_eq!(m["metadata"]["labels"]["a"], "b");
        assert_eq!(
            m["metadata"]["labels"][OWNER_LABEL].as_str().unwrap().len(),
            16
        );
    }

    #[test]
    fn a_take_over_needs_consent() {
        let none = FleetScope::default();
        let k = key("ConfigMap", Some("ns"), "x");
        let live = mark(json!({"metadata": {"name": "x"}}), "clusters/old", "");
        let plain = json!({"metadata": {"name": "x"}});
        assert!(
            take_over(&none, "clusters/new", &k, &plain, &live)
                .unwrap()
                .contains("owned by unit clusters/old")
        );
        assert_eq!(take_over(&none, "clusters/old", &k, &plain, &live), None);
        let consent = json!({"metadata": {"name": "x", "annotations": {ADOPT_FROM_ANNOTATION: "clusters/old"}}});
        assert_eq!(take_over(&none, "clusters/new", &k, &consent, &live), None);
        assert_eq!(take_over(&none, "clusters/new", &k, &plain, &plain), None);
    }

    #[test]
    fn prune_deletes_only_its_own_unclaimed_objects() {
        let ns = key("Namespace", None, "aro-dev");
        let cm = key("ConfigMap", Some("aro-dev"), "x");
        let fleet = Fleet::new(vec![std::sync::Arc::new(UnitClaims {
            unit: "clusters/dev".into(),
            claims: vec![claim(cm.clone(), "cm.yaml", None)],
        })]);
        let ours = mark(
            json!({"metadata": {"name": "aro-dev"}}),
            "clusters/copy",
            "",
        );
        // Another unit declares objects in the namespace.
        assert!(
            matches!(guard_deletion("clusters/copy", &ns, &ours, None, &fleet), Guard::Hold(r) if r.contains("clusters/dev declares objects"))
        );
        // Another unit declares the object itself.
        assert!(matches!(
            guard_deletion("clusters/copy", &cm, &ours, None, &fleet),
            Guard::Hold(r) if r.contains("unit clusters/dev declares it")
        ));
        // Not marked as ours.
        let other = key("ConfigMap", Some("elsewhere"), "y");
        let theirs = mark(json!({"metadata": {}}), "clusters/dev", "");
        assert!(matches!(
            guard_deletion("clusters/copy", &other, &theirs, None, &fleet),
            Guard::NotOurs(_)
        ));
        assert!(matches!(
            guard_deletion("clusters/copy", &other, &json!({}), None, &fleet),
            Guard::Hold(_)
        ));
        assert_eq!(
            guard_deletion("clusters/copy", &other, &ours, None, &fleet),
            Guard::Allow
        );
    }

    #[test]
    fn a_live_object_no_unit_declares_conflicts_with_a_desired_one() {
        let rg = |ns: &str| key("ResourceGroup", Some(ns), "rg");
        let fleet = Fleet::new(vec![std::sync::Arc::new(UnitClaims {
            unit: "clusters/dev2".into(),
            claims: vec![claim(rg("aro-dev2"), "rg.yaml", Some("/s/rg"))],
        })]);
        let a = AzureIdentity {
            id: "/s/rg".into(),
            arm_id: "/s/rg".into(),
            subscription: None,
            writes: true,
        };
        let live = vec![(rg("aro-dev"), a.clone()), (rg("aro-dev2"), a)];
        let fleet = fleet.with_live(&live);
        let c = fleet.live_conflicts(|_| None);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].unit, "clusters/dev2");
        assert!(
            c[0].message
                .contains("the live object ResourceGroup/aro-dev/rg (no unit declares it)"),
            "{}",
            c[0].message
        );
        // The declaring unit's own old object: its prune holds it.
        assert!(fleet.live_conflicts(|_| Some("clusters/dev2")).is_empty());
    }

    #[test]
    fn a_live_object_no_unit_declares_holds_a_deletion_of_its_azure_resource() {
        let mine = key("ResourceGroup", Some("aro-dev"), "rg");
        let stray = key("ResourceGroup", Some("scratch"), "stray");
        let a = AzureIdentity {
            id: "/s/rg".into(),
            arm_id: "/s/rg".into(),
            subscription: None,
            writes: true,
        };
        let fleet = Fleet::default().with_live(&[(mine.clone(), a.clone()), (stray, a.clone())]);
        let live = mark(json!({"metadata": {}}), "clusters/dev", "");
        assert!(
            matches!(guard_deletion("clusters/dev", &mine, &live, Some(&a), &fleet),
            Guard::Hold(r) if r.starts_with("the live object ResourceGroup/scratch/stray stands for"))
        );
        let alone = Fleet::default().with_live(&[(mine.clone(), a.clone())]);
        assert_eq!(
            guard_deletion("clusters/dev", &mine, &live, Some(&a), &alone),
            Guard::Allow
        );
    }

    #[test]
    fn an_azure_resource_another_object_stands_for_is_not_deleted() {
        let mine = key("ResourceGroup", Some("aro-dev2"), "rg");
        let theirs = key("ResourceGroup", Some("aro-dev"), "rg");
        let fleet = Fleet::new(vec![std::sync::Arc::new(UnitClaims {
            unit: "clusters/dev".into(),
            claims: vec![claim(theirs, "rg.yaml", Some("/s/rg"))],
        })]);
        let live = mark(json!({"metadata": {}}), "clusters/dev2", "");
        let a = AzureIdentity {
            id: "/s/rg".into(),
            arm_id: "/s/rg".into(),
            subscription: None,
            writes: true,
        };
        assert!(
            matches!(guard_deletion("clusters/dev2", &mine, &live, Some(&a), &fleet), Guard::Hold(r) if r.contains("of unit clusters/dev stands for the same Azure resource"))
        );
    }

    #[test]
    fn another_fleets_object_is_neither_taken_over_nor_deleted() {
        let k = key("ConfigMap", Some("ns"), "x");
        let theirs = mark(json!({"metadata": {"name": "x"}}), "clusters/dev", "b");
        let plain = json!({"metadata": {"name": "x"}});
        let a = FleetScope::new("a", None);
        let why = take_over(&a, "clusters/dev", &k, &plain, &theirs).unwrap();
        assert!(
            why.contains("belongs to fleet \"b\"") && why.contains("--take-over-fleet \"b\""),
            "{why}"
        );
        let taking = FleetScope::new("a", Some("b".into()));
        assert_eq!(
            take_over(&taking, "clusters/dev", &k, &plain, &theirs),
            None
        );
        // Written before fleets were named: judged by its unit alone.
        let unnamed = mark(json!({"metadata": {"name": "x"}}), "clusters/dev", "");
        assert_eq!(take_over(&a, "clusters/dev", &k, &plain, &unnamed), None);
        let fleet = Fleet::default().named(a);
        assert!(matches!(
            guard_deletion("clusters/dev", &k, &theirs, None, &fleet),
            Guard::NotOurs(r) if r.contains("fleet \"b\"")
        ));
        let ours = mark(json!({"metadata": {"name": "x"}}), "clusters/dev", "a");
        assert_eq!(ours["metadata"]["annotations"][FLEET_ANNOTATION], "a");
        assert_eq!(
            guard_deletion("clusters/dev", &k, &ours, None, &fleet),
            Guard::Allow
        );
    }
}

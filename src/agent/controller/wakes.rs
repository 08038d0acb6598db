//! Which units a change wakes, found through an index built once per revision (never a scan of
//! the fleet):
//! - the units that own the changed object: they render it, or their inventory holds it;
//! - for an object no unit owns (a Secret the Azure side wrote, a policy someone applied by
//!   hand), and for any AutoNodePolicy (it shapes the node pools of its whole namespace), the
//!   units with objects in its namespace; a cluster-scoped object no unit owns wakes none.
//!
//! A re-list wakes only for the objects it found changed (see [`Change::Object`]).
//!
//! A change that comes while the unit's pass runs is held until the pass ends ([`DuringPass`]):
//! most are the echoes of the pass's own writes, which only then are all known.

use super::cache::Change;
use crate::apply::Echoes;
use crate::apply::inventory::Identity;
use crate::reconcile::aro::node_policy::{POLICY_GROUP, POLICY_KIND};
use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};

/// An object as the index holds it: the hash of its identity, and of its namespace. Two objects
/// of one hash (a 64-bit collision) only wake one unit more, which finds nothing to do: the index
/// never misses a unit, and holds no copy of the fleet's names.
pub type WakeKey = (u64, Option<u64>);

/// The [`WakeKey`] of the object `group`/`kind` `namespace`/`name` (its API version aside).
fn wake_key(group: &str, kind: &str, namespace: Option<&str>, name: &str) -> WakeKey {
    let mut h = std::hash::DefaultHasher::new();
    (group, kind, namespace, name).hash(&mut h);
    (h.finish(), namespace.map(namespace_hash))
}

fn namespace_hash(namespace: &str) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    namespace.hash(&mut h);
    h.finish()
}

impl From<&crate::object::ObjectKey> for WakeKey {
    fn from(k: &crate::object::ObjectKey) -> Self {
        wake_key(&k.group, &k.kind, k.namespace.as_deref(), &k.name)
    }
}

impl From<&Identity> for WakeKey {
    fn from(id: &Identity) -> Self {
        wake_key(&id.group, &id.kind, id.namespace.as_deref(), &id.name)
    }
}

/// The index of a revision's units (by their index in the revision): (hash, unit) pairs, sorted,
/// looked up by binary search.
#[derive(Debug, Default)]
pub struct Wakes {
    by_object: Vec<(u64, u32)>,
    by_namespace: Vec<(u64, u32)>,
}

impl Wakes {
    /// Indexes each unit's objects: those it renders and those its inventory holds.
    pub fn new<O>(units: impl IntoIterator<Item = (usize, O)>) -> Wakes
    where
        O: IntoIterator<Item = WakeKey>,
    {
        let mut wakes = Wakes::default();
        for (i, objects) in units {
            let i = u32::try_from(i).expect("fewer than 2^32 units");
            for (object, namespace) in objects {
                wakes.by_object.push((object, i));
                wakes.by_namespace.extend(namespace.map(|ns| (ns, i)));
            }
        }
        for index in [&mut wakes.by_object, &mut wakes.by_namespace] {
            index.sort_unstable();
            index.dedup();
            index.shrink_to_fit();
        }
        wakes
    }

    /// The units `change` concerns (see the module header).
    pub fn units(&self, change: &Change) -> BTreeSet<usize> {
        let Change::Object(id, _) = change;
        let (object, namespace) = WakeKey::from(id);
        let owners = of(&self.by_object, object);
        let policy = id.group == POLICY_GROUP && id.kind == POLICY_KIND;
        let of_namespace = match namespace {
            Some(ns) if owners.is_empty() || policy => of(&self.by_namespace, ns),
            _ => &[],
        };
        (owners.iter().chain(of_namespace))
            .map(|&(_, i)| i as usize)
            .collect()
    }
}

impl Wakes {
    /// The units that render `id`, hold it in their inventory, or whose clusters use it (an
    /// identity or its Secret): its owners and readers, without the namespace's other units.
    pub fn holding(&self, (object, _): WakeKey) -> impl Iterator<Item = usize> + '_ {
        of(&self.by_object, object).iter().map(|&(_, i)| i as usize)
    }
}

/// The run of `index` (sorted) under `hash`.
fn of(index: &[(u64, u32)], hash: u64) -> &[(u64, u32)] {
    let start = index.partition_point(|&(h, _)| h < hash);
    let end = index.partition_point(|&(h, _)| h <= hash);
    &index[start..end]
}

/// The changes seen by units while their pass ran.
#[derive(Debug, Default)]
pub struct DuringPass(HashMap<usize, Vec<Change>>);

impl DuringPass {
    pub fn hold(&mut self, unit: usize, change: &Change) {
        self.0.entry(unit).or_default().push(change.clone());
    }

    /// Whether `unit`'s pass, just ended, saw a change other than its own writes' echoes: then
    /// it runs again.
    pub fn release(&mut self, unit: usize, echoes: &Echoes) -> bool {
        let held = self.0.remove(&unit).unwrap_or_default();
        // Every echo is taken (not only up to the first other change), so none is left over:
        // `any` would stop at the first other change.
        #[allow(clippy::unnecessary_fold)]
        held.iter()
            .fold(false, |other, c| !c.is_echo(echoes) || other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(group: &str, kind: &str, ns: Option<&str>, name: &str) -> Identity {
        Identity {
            group: group.into(),
            kind: kind.into(),
            namespace: ns.map(Into::into),
            name: name.into(),
        }
    }

    fn change(i: &Identity) -> Change {
        Change::Object(i.clone(), None)
    }

    fn wakes() -> Wakes {
        wakes_with(vec![])
    }

    /// The three units below, unit 2 with `more` objects too.
    fn wakes_with(more: Vec<Identity>) -> Wakes {
        let units = [
            (
                0,
                vec![
                    id("", "Namespace", None, "a"),
                    id("", "ConfigMap", Some("a"), "settings"),
                ],
            ),
            (
                1,
                vec![
                    id("", "Namespace", None, "b"),
                    id("", "ConfigMap", Some("b"), "settings"),
                ],
            ),
            (
                2,
                [vec![id("", "ConfigMap", Some("b"), "other")], more].concat(),
            ),
        ];
        Wakes::new(
            (units.iter()).map(|(i, ids)| (*i, ids.iter().map(WakeKey::from).collect::<Vec<_>>())),
        )
    }

    #[test]
    fn an_owned_object_wakes_its_owner_only() {
        let w = wakes();
        assert_eq!(
            w.units(&change(&id("", "Namespace", None, "a"))),
            [0].into()
        );
        assert_eq!(
            w.units(&change(&id("", "ConfigMap", Some("b"), "settings"))),
            [1].into()
        );
    }

    #[test]
    fn an_unowned_object_wakes_the_units_of_its_namespace() {
        let w = wakes();
        assert_eq!(
            w.units(&change(&id("", "Secret", Some("b"), "kubeconfig"))),
            [1, 2].into()
        );
        assert!(w.units(&change(&id("", "Namespace", None, "c"))).is_empty());
        assert!(
            w.units(&change(&id("", "Secret", Some("c"), "x")))
                .is_empty()
        );
    }

    #[test]
    fn after_a_pass_only_a_change_other_than_its_own_writes_runs_it_again() {
        let echoes = Echoes::default();
        let obj = |name: &str, rv: &str| {
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "a", "resourceVersion": rv}})
        };
        let seen = |name: &str, rv: &str| {
            Change::Object(id("", "ConfigMap", Some("a"), name), Some(rv.into()))
        };
        let mut during = DuringPass::default();
        // The watch saw the pass's writes before their responses came back.
        during.hold(0, &seen("settings", "5"));
        during.hold(0, &seen("other", "6"));
        echoes.record(&obj("settings", "5"));
        echoes.record(&obj("other", "6"));
        assert!(!during.release(0, &echoes), "only its own writes");
        during.hold(0, &seen("settings", "7"));
        echoes.record(&obj("settings", "8"));
        assert!(during.release(0, &echoes), "someone else wrote version 7");
        assert!(!during.release(1, &echoes), "nothing held");
    }

    #[test]
    fn a_policy_wakes_its_whole_namespace() {
        let (g, k) = (POLICY_GROUP, POLICY_KIND);
        let w = wakes_with(vec![id(g, k, Some("b"), "default")]);
        assert_eq!(
            w.units(&change(&id(g, k, Some("b"), "default"))),
            [1, 2].into()
        );
    }
}

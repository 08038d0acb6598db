//! What a revision's units declare, indexed for the deletion guard and the conflict checks.
//!
//! The units' claims are kept once; the indexes hold only a hash of what they are looked up by
//! and where the claim is (unit, claim), and a lookup compares the candidates with the claims
//! themselves. At 1,000 clusters the claims are 50,000 objects: an index keyed by copies of their
//! identities and Azure ids cost three times the claims' own size.

use super::{Claim, UnitClaims, id};
use crate::object::{ObjectKey, Sym};
use crate::plan::azure_identity::AzureIdentity;
use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

/// Where a claim is: its unit's index and its index in that unit's claims.
type At = (u32, u32);

/// See the module's documentation.
#[derive(Debug, Default)]
pub(super) struct Declared {
    /// Shared: a unit whose preparation a new revision keeps keeps its claims too.
    units: Vec<Arc<UnitClaims>>,
    /// Every claim, by the hash of its object's identity ([`id`]), sorted.
    objects: Vec<(u64, At)>,
    /// Where each hash's run in `objects` starts: a lookup goes straight to it (the deletion
    /// guard and the live checks look up tens of thousands of live objects per revision).
    object_runs: HashMap<u64, u32>,
    /// The claims standing for an Azure resource, by the hash of its identity, sorted.
    azure: Vec<(u64, At)>,
    /// Namespace → the first object each unit declares in it, in the units' order.
    namespaces: BTreeMap<Sym, Vec<At>>,
}

fn hash_of(v: impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

/// The hash of `key`'s [`id`], from its borrowed fields (no copy of them made).
fn id_hash(key: &ObjectKey) -> u64 {
    hash_of((
        key.group.as_str(),
        key.kind.as_str(),
        key.namespace.as_deref(),
        key.name.as_str(),
    ))
}

/// Whether two keys have one [`id`].
fn same_id(a: &ObjectKey, b: &ObjectKey) -> bool {
    a.name == b.name && a.namespace == b.namespace && a.kind == b.kind && a.group == b.group
}

/// The entries of `set` (sorted) under the hash `h`, in the units' order.
fn under(set: &[(u64, At)], h: u64) -> impl Iterator<Item = At> + '_ {
    let start = set.partition_point(|&(x, _)| x < h);
    let end = set.partition_point(|&(x, _)| x <= h);
    set[start..end].iter().map(|(_, at)| *at)
}

impl Declared {
    pub(super) fn new(units: Vec<Arc<UnitClaims>>) -> Declared {
        let mut d = Declared::default();
        for (u, unit) in units.iter().enumerate() {
            for (c, claim) in unit.claims.iter().enumerate() {
                let at = (u as u32, c as u32);
                d.objects.push((id_hash(&claim.key), at));
                if let Some(a) = &claim.azure {
                    d.azure.push((hash_of(&*a.id), at));
                }
                if let Some(ns) = &claim.key.namespace {
                    match d.namespaces.get_mut(ns) {
                        Some(v) if v.iter().any(|(other, _)| *other == at.0) => {}
                        Some(v) => v.push(at),
                        None => {
                            d.namespaces.insert(ns.clone(), vec![at]);
                        }
                    }
                }
            }
        }
        d.objects.sort_unstable();
        d.azure.sort_unstable();
        d.object_runs.reserve(d.objects.len());
        for (i, (h, _)) in d.objects.iter().enumerate().rev() {
            d.object_runs.insert(*h, i as u32);
        }
        d.units = units;
        d
    }

    fn unit(&self, (u, _): At) -> &str {
        &self.units[u as usize].unit
    }

    fn claim(&self, (u, c): At) -> &Claim {
        &self.units[u as usize].claims[c as usize]
    }

    /// The unit declaring `key` (of two, the later).
    pub(super) fn unit_of(&self, key: &ObjectKey) -> Option<&str> {
        let h = id_hash(key);
        let start = *self.object_runs.get(&h)? as usize;
        (self.objects[start..].iter())
            .take_while(|(x, _)| *x == h)
            .map(|&(_, at)| at)
            .filter(|&at| same_id(&self.claim(at).key, key))
            .last()
            .map(|at| self.unit(at))
    }

    /// The claims standing for the Azure resource `azure` names (by id), in the units' order:
    /// unit, claim, and its identity.
    pub(super) fn for_azure<'a>(
        &'a self,
        azure: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a Claim, &'a AzureIdentity)> + 'a {
        under(&self.azure, hash_of(azure)).filter_map(move |at| {
            let c = self.claim(at);
            let a = c.azure.as_ref().filter(|a| *a.id == *azure)?;
            Some((self.unit(at), c, a))
        })
    }

    /// Every unit's claims, in the units' order.
    pub(super) fn units(&self) -> &[Arc<UnitClaims>] {
        &self.units
    }

    /// The claims of one object declared more than once (a unit and the claim), in the order
    /// of the objects' identities.
    pub(super) fn declared_twice(&self) -> Vec<Vec<(&str, &Claim)>> {
        self.shared(&self.objects, |c| Some(id(&c.key)))
    }

    /// The claims writing to one Azure resource (by id), more than one, in the order of the ids.
    pub(super) fn writing_one_resource(&self) -> Vec<Vec<(&str, &Claim)>> {
        self.shared(&self.azure, |c| {
            c.azure.as_ref().filter(|a| a.writes).map(|a| &*a.id)
        })
    }

    /// The groups of more than one claim of `set` with the same `key_of`, sorted by it.
    fn shared<'a, K: Ord>(
        &'a self,
        set: &[(u64, At)],
        key_of: impl Fn(&'a Claim) -> Option<K>,
    ) -> Vec<Vec<(&'a str, &'a Claim)>> {
        let mut groups: BTreeMap<K, Vec<(&str, &Claim)>> = BTreeMap::new();
        for run in set.chunk_by(|a, b| a.0 == b.0).filter(|r| r.len() > 1) {
            let mut by_key: BTreeMap<K, Vec<(&str, &Claim)>> = BTreeMap::new();
            for &(_, at) in run {
                let c = self.claim(at);
                if let Some(k) = key_of(c) {
                    by_key.entry(k).or_default().push((self.unit(at), c));
                }
            }
            groups.extend(by_key.into_iter().filter(|(_, v)| v.len() > 1));
        }
        groups.into_values().collect()
    }

    /// The units declaring objects in the namespace `ns`, each with the first such object.
    pub(super) fn in_namespace(&self, ns: &str) -> impl Iterator<Item = (&str, &ObjectKey)> {
        (self.namespaces.get(ns).into_iter().flatten())
            .map(|&at| (self.unit(at), &self.claim(at).key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(kind: &str, ns: &str, name: &str) -> ObjectKey {
        ObjectKey {
            group: "g".into(),
            version: "v1".into(),
            kind: kind.into(),
            namespace: Some(ns.into()),
            name: name.into(),
        }
    }

    fn claim(key: ObjectKey, azure: Option<&str>) -> Claim {
        Claim {
            key,
            file: "f.yaml".into(),
            azure: azure.map(|id| AzureIdentity {
                id: id.into(),
                subscription: None,
                arm_id: id.into(),
                writes: true,
            }),
        }
    }

    #[test]
    fn lookups_find_the_claims_they_were_made_of() {
        let d = Declared::new(vec![
            Arc::new(UnitClaims {
                unit: "clusters/a".into(),
                claims: vec![
                    claim(key("ResourceGroup", "ns-a", "rg"), Some("/rg/x")),
                    claim(key("ConfigMap", "ns-a", "cm"), None),
                ],
            }),
            Arc::new(UnitClaims {
                unit: "clusters/b".into(),
                claims: vec![
                    claim(key("ResourceGroup", "ns-b", "rg"), Some("/rg/x")),
                    claim(key("ConfigMap", "ns-a", "cm"), None),
                ],
            }),
        ]);
        // Declared twice: the later unit.
        assert_eq!(
            d.unit_of(&key("ConfigMap", "ns-a", "cm")),
            Some("clusters/b")
        );
        assert_eq!(
            d.unit_of(&key("ResourceGroup", "ns-b", "rg")),
            Some("clusters/b")
        );
        assert_eq!(d.unit_of(&key("ResourceGroup", "ns-c", "rg")), None);
        let units: Vec<&str> = d.for_azure("/rg/x").map(|(u, _, _)| u).collect();
        assert_eq!(units, ["clusters/a", "clusters/b"]);
        assert_eq!(d.for_azure("/rg/y").count(), 0);
        let in_a: Vec<(&str, &str)> = (d.in_namespace("ns-a"))
            .map(|(u, k)| (u, k.name.as_str()))
            .collect();
        assert_eq!(in_a, [("clusters/a", "rg"), ("clusters/b", "cm")]);
        assert_eq!(d.in_namespace("ns-c").count(), 0);
        let twice: Vec<Vec<&str>> = (d.declared_twice().iter())
            .map(|g| g.iter().map(|(u, _)| *u).collect())
            .collect();
        assert_eq!(twice, [["clusters/a", "clusters/b"]]);
        assert_eq!(d.writing_one_resource().len(), 1);
    }
}

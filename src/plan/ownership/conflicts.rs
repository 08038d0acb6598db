//! Conflicts between the units of a revision: one object declared by two units, or two objects
//! standing for one Azure resource (both writing).
//!
//! Who fails is decided by who owns the object live. When the inventories say one of the units
//! owns it (its inventory holds it), only the others (the newcomers) fail: the owner goes on
//! reconciling, as Argo CD flags the newcomer of a shared resource and leaves the owner alone.
//! When none of them owns it yet, every unit involved fails and nothing of any is applied.

use super::{ADOPT_FROM_ANNOTATION, Claim, Conflict, Id, id};
use crate::object::ObjectKey;
use std::collections::BTreeMap;

/// Who owns each object: the unit whose inventory holds it (or, in a preview against a base
/// revision, the unit declaring it there).
pub type LiveOwners = BTreeMap<Id, String>;

/// One unit's side of a pair in a conflict, and whether the other unit owns it live.
type Pair = (String, String, bool);

/// The conflicts of a revision's units (see the module's documentation), from the claims of
/// objects declared more than once (`twice`) and of Azure resources more than one object writes
/// to (`one_resource`), each group in the order of the objects' identities (of the Azure ids).
/// Every unit that fails gets its own [`Conflict`], naming the other unit and both files.
pub(super) fn conflicts(
    twice: &[Vec<(&str, &Claim)>],
    one_resource: &[Vec<(&str, &Claim)>],
    owner_of: &dyn Fn(&ObjectKey) -> Option<String>,
) -> Vec<Conflict> {
    let owns = |unit: &str, c: &Claim| owner_of(&c.key).is_some_and(|o| o == unit);
    let mut out = declared_twice(twice, &owns);
    out.extend(one_azure_resource(one_resource, &owns));
    out
}

/// Objects two units declare: one conflict per failing unit and other unit, the first object in
/// full, the others listed.
fn declared_twice(
    objects: &[Vec<(&str, &Claim)>],
    owns: &impl Fn(&str, &Claim) -> bool,
) -> Vec<Conflict> {
    let mut twice: BTreeMap<Pair, Vec<(&Claim, &Claim)>> = BTreeMap::new();
    for claims in objects {
        let owner = claims.iter().find(|(u, c)| owns(u, c)).map(|(u, _)| *u);
        for (unit, c) in claims.iter().filter(|(u, _)| Some(*u) != owner) {
            for (other, oc) in claims.iter().filter(|(o, _)| o != unit) {
                let key = (unit.to_string(), other.to_string(), Some(*other) == owner);
                let list = twice.entry(key).or_default();
                if !list.iter().any(|(x, _)| id(&x.key) == id(&c.key)) {
                    list.push((c, oc));
                }
            }
        }
    }
    let mut out = Vec::new();
    for ((unit, other, owned), list) in twice {
        let (c, oc) = list[0];
        let message = if owned {
            format!(
                "{} is owned by unit {other} ({}), whose inventory holds it, and unit {unit} ({}) declares it too{}; remove it from {unit} (nothing of {unit} is applied until then; {other} goes on). To move it to {unit}, remove it from {other} and set the annotation {ADOPT_FROM_ANNOTATION}: {other} on it in git",
                c.key,
                oc.file,
                c.file,
                more(list[1..].iter().map(|(c, _)| c.key.to_string()), "so are")
            )
        } else {
            format!(
                "{} is declared by two units: {unit} ({}) and {other} ({}){}; an object belongs to one unit: remove it from one of them (nothing of either unit is applied until then)",
                c.key,
                c.file,
                oc.file,
                more(
                    list[1..].iter().map(|(c, _)| c.key.to_string()),
                    "both units also declare"
                )
            )
        };
        out.push(Conflict {
            unit,
            key: c.key.clone(),
            file: c.file.clone(),
            message,
        });
    }
    out
}

/// Two objects of two units standing for one Azure resource: both fail, but a unit whose object
/// is live in its inventory when the other's is not (the other is the newcomer).
fn one_azure_resource(
    azure: &[Vec<(&str, &Claim)>],
    owns: &impl Fn(&str, &Claim) -> bool,
) -> Vec<Conflict> {
    let mut shared: BTreeMap<Pair, Vec<(&Claim, &Claim)>> = BTreeMap::new();
    for claims in azure {
        for (unit, c) in claims {
            for (other, oc) in claims.iter() {
                if id(&oc.key) == id(&c.key) {
                    continue; // the same object twice: reported by `declared_twice`
                }
                let (Some(a), Some(b)) = (&c.azure, &oc.azure) else {
                    continue;
                };
                if !a.same(b) {
                    continue; // the same names in two subscriptions
                }
                let (mine, theirs) = (owns(unit, c), owns(other, oc));
                if mine && !theirs {
                    continue; // the other is the newcomer
                }
                let key = (unit.to_string(), other.to_string(), theirs && !mine);
                shared.entry(key).or_default().push((c, oc));
            }
        }
    }
    let global = |c: &Claim| {
        c.azure
            .as_ref()
            .is_some_and(|a| a.id.starts_with("global:"))
    };
    let mut out = Vec::new();
    for ((unit, other, owned), list) in shared {
        let (c, oc) = list[0];
        let arm = c.azure.as_ref().map(|a| &*a.arm_id).unwrap_or("");
        let its = if global(c) {
            " (its name is global in Azure)"
        } else {
            ""
        };
        let others = list[1..].iter().map(|(c, oc)| {
            let its = if global(c) {
                ", its name is global in Azure"
            } else {
                ""
            };
            format!("{} and {}{its}", c.key, oc.key)
        });
        let (what, fix) = if owned {
            (
                format!("{} of unit {other} is live in its inventory", oc.key),
                format!(
                    "give {} other Azure names (nothing of {unit} is applied until then; {other} goes on)",
                    c.key
                ),
            )
        } else {
            (
                String::new(),
                "give one of them other Azure names (nothing of either unit is applied until then)"
                    .to_string(),
            )
        };
        let what = if what.is_empty() {
            what
        } else {
            format!("; {what}")
        };
        out.push(Conflict {
            unit: unit.clone(),
            key: c.key.clone(),
            file: c.file.clone(),
            message: format!(
                "{} ({}, unit {unit}) and {} ({}, unit {other}) are the same Azure resource {arm}{its}{}{what}; one Azure resource is managed by one object: {fix}",
                c.key,
                c.file,
                oc.key,
                oc.file,
                more(others, "so are")
            ),
        });
    }
    out
}

/// `; {what}: a, b, c` (at most 30, then how many more), or nothing.
fn more(items: impl Iterator<Item = String>, what: &str) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        return String::new();
    }
    let shown = items.len().min(30);
    let rest = if items.len() > shown {
        format!(" and {} more", items.len() - shown)
    } else {
        String::new()
    };
    format!("; {what}: {}{rest}", items[..shown].join(", "))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{claim, key};
    use super::super::{Fleet, UnitClaims};
    use super::*;

    fn conflicts(units: &[UnitClaims], owners: &LiveOwners) -> Vec<Conflict> {
        Fleet::new(units.iter().cloned().map(std::sync::Arc::new).collect())
            .conflicts(|k| owners.get(&id(k)).cloned())
    }

    fn unit(name: &str, claims: Vec<Claim>) -> UnitClaims {
        UnitClaims {
            unit: name.into(),
            claims,
        }
    }

    fn owned_by(unit: &str, keys: &[&ObjectKey]) -> LiveOwners {
        keys.iter().map(|k| (id(k), unit.to_string())).collect()
    }

    fn failing(c: &[Conflict]) -> Vec<&str> {
        c.iter().map(|c| c.unit.as_str()).collect()
    }

    #[test]
    fn an_object_of_two_units_that_neither_owns_fails_both_naming_both() {
        let ns = key("Namespace", None, "aro-dev");
        let units = vec![
            unit(
                "clusters/dev",
                vec![claim(ns.clone(), "base/cluster/namespace.yaml", None)],
            ),
            unit(
                "clusters/dev-copy",
                vec![claim(ns.clone(), "base/cluster/namespace.yaml", None)],
            ),
            unit(
                "clusters/prod",
                vec![claim(key("Namespace", None, "aro-prod"), "x.yaml", None)],
            ),
        ];
        let c = conflicts(&units, &LiveOwners::new());
        assert_eq!(failing(&c), ["clusters/dev", "clusters/dev-copy"], "{c:?}");
        assert!(c[0].message.contains("clusters/dev ("), "{}", c[0].message);
        assert!(c[0].message.contains("clusters/dev-copy ("));
    }

    #[test]
    fn an_object_one_unit_owns_live_fails_only_the_newcomer_naming_both_files() {
        let ns = key("Namespace", None, "aro-dev");
        let units = vec![
            unit("clusters/dev", vec![claim(ns.clone(), "dev/ns.yaml", None)]),
            unit("clusters/new", vec![claim(ns.clone(), "new/ns.yaml", None)]),
        ];
        let c = conflicts(&units, &owned_by("clusters/dev", &[&ns]));
        assert_eq!(failing(&c), ["clusters/new"], "{c:?}");
        let m = &c[0].message;
        assert!(
            m.contains("owned by unit clusters/dev (dev/ns.yaml)")
                && m.contains("unit clusters/new (new/ns.yaml) declares it too")
                && m.contains("remove it from clusters/new"),
            "{m}"
        );
        assert_eq!(c[0].file, "new/ns.yaml");
        // Owned by a unit that is not among them (it left git): as if nobody owned it.
        let c = conflicts(&units, &owned_by("clusters/gone", &[&ns]));
        assert_eq!(failing(&c), ["clusters/dev", "clusters/new"]);
    }

    #[test]
    fn three_units_over_an_owned_object_fail_the_two_newcomers() {
        let ns = key("Namespace", None, "aro-dev");
        let units = vec![
            unit("a", vec![claim(ns.clone(), "a.yaml", None)]),
            unit("b", vec![claim(ns.clone(), "b.yaml", None)]),
            unit("c", vec![claim(ns.clone(), "c.yaml", None)]),
        ];
        let c = conflicts(&units, &owned_by("b", &[&ns]));
        assert!(!failing(&c).contains(&"b"), "{c:?}");
        assert!(failing(&c).contains(&"a") && failing(&c).contains(&"c"));
    }

    #[test]
    fn two_objects_for_one_azure_resource_fail_both_unless_one_is_live_in_its_inventory() {
        let a = key("ResourceGroup", Some("aro-dev"), "rg");
        let b = key("ResourceGroup", Some("aro-dev2"), "rg");
        let units = vec![
            unit(
                "clusters/dev",
                vec![claim(
                    a.clone(),
                    "a.yaml",
                    Some("/subscriptions/s/resourceGroups/RG"),
                )],
            ),
            unit(
                "clusters/dev2",
                vec![claim(
                    b,
                    "b.yaml",
                    Some("/subscriptions/s/resourceGroups/rg"),
                )],
            ),
        ];
        let c = conflicts(&units, &LiveOwners::new());
        assert_eq!(failing(&c), ["clusters/dev", "clusters/dev2"], "{c:?}");
        assert!(
            c[1].message.contains("unit clusters/dev2")
                && c[1].message.contains("unit clusters/dev)")
        );
        assert!(c[0].message.contains("same Azure resource"));
        let c = conflicts(&units, &owned_by("clusters/dev", &[&a]));
        assert_eq!(failing(&c), ["clusters/dev2"], "{c:?}");
        assert!(
            c[0].message
                .contains("of unit clusters/dev is live in its inventory"),
            "{}",
            c[0].message
        );
    }
}

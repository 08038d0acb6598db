//! Sharding: `run --shard-index i --shard-count n` splits the fleet's units between `n` agents.
//!
//! A unit belongs to shard `fnv1a64(name) % n`, `name` being its path as [`crate::unit::Unit::name`]
//! gives it (`clusters/dev`). FNV-1a is written out here, not taken from the standard library's
//! hasher, so that the split never changes across versions, platforms or processes: two agents
//! built at different times agree on who owns what, and a unit that left git belongs to the shard
//! its name hashes to, as it did while it was in git.
//!
//! Only the units are split: every shard still prepares the whole revision, because the
//! ownership check ("nothing is deleted that any unit still declares") and the conflicts between
//! units are fleet-wide.

use crate::agent::pass::prepare::PreparedUnit;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

/// Which part of the fleet this agent reconciles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    index: u32,
    count: u32,
}

impl Default for Shard {
    /// The whole fleet: shard 0 of 1.
    fn default() -> Self {
        Shard { index: 0, count: 1 }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ShardError {
    #[error("--shard-count must be at least 1 (it is 0)")]
    NoShards,
    #[error(
        "--shard-index {index} is out of range for --shard-count {count}: shards are numbered 0 to {last}",
        last = count - 1
    )]
    OutOfRange { index: u32, count: u32 },
}

impl Shard {
    /// Shard `index` of `count`: `0 <= index < count`.
    pub fn new(index: u32, count: u32) -> Result<Shard, ShardError> {
        if count == 0 {
            return Err(ShardError::NoShards);
        }
        if index >= count {
            return Err(ShardError::OutOfRange { index, count });
        }
        Ok(Shard { index, count })
    }

    pub fn index(self) -> u32 {
        self.index
    }

    pub fn count(self) -> u32 {
        self.count
    }

    /// The shard as (index, count): what its records on the cluster are keyed by.
    pub fn layout(self) -> (u32, u32) {
        (self.index, self.count)
    }

    /// More than one shard: this agent reconciles only part of the fleet.
    pub fn is_partial(self) -> bool {
        self.count > 1
    }

    /// Whether the unit named `unit` (in git or gone from it) is this shard's.
    pub fn owns(self, unit: &str) -> bool {
        shard_of(unit, self.count) == self.index
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shard {} of {}", self.index, self.count)
    }
}

/// The shard of the unit named `unit` among `count` (at least one).
pub fn shard_of(unit: &str, count: u32) -> u32 {
    (fnv1a64(unit.as_bytes()) % u64::from(count.max(1))) as u32
}

/// The 64-bit FNV-1a hash of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |h, b| (h ^ u64::from(*b)).wrapping_mul(PRIME))
}

/// The units of `all` that `shard` reconciles (all of them, shared, without sharding).
pub fn units_of(shard: Shard, all: &Arc<Vec<PreparedUnit>>) -> Arc<Vec<PreparedUnit>> {
    if !shard.is_partial() {
        return all.clone();
    }
    Arc::new(
        all.iter()
            .filter(|(u, _)| shard.owns(&u.name()))
            .cloned()
            .collect(),
    )
}

/// The units that left git whose inventories `shard` prunes: inventoried, not a unit of the
/// revision (`present`: every shard's units), and hashing to `shard`. None when the revision has
/// no unit at all: an empty render of the whole repository is never pruned on.
pub fn gone_units<'a>(
    shard: Shard,
    present: &BTreeSet<String>,
    inventoried: impl IntoIterator<Item = &'a String>,
) -> Vec<String> {
    if present.is_empty() {
        return vec![];
    }
    inventoried
        .into_iter()
        .filter(|u| !present.contains(*u) && shard.owns(u))
        .cloned()
        .collect()
}

/// The name of the coordination Lease of `shard` for leader election `id`: `id` itself for a
/// whole fleet, `<id>-shard-<i>` when there are several shards (each elects its own leader).
pub fn lease_name(id: &str, shard: Shard) -> String {
    if shard.is_partial() {
        format!("{id}-shard-{}", shard.index)
    } else {
        id.to_string()
    }
}

/// The line a sharded agent prints when it loads a revision: `shard 0 of 2: 5 of 9 units`.
pub fn line(shard: Shard, mine: usize, all: usize) -> String {
    format!("{shard}: {mine} of {all} units")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fnv1a_64_and_never_changes() {
        // The published FNV-1a 64 test vectors, then unit names: a change here moves units
        // between shards of running fleets.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
        assert_eq!(fnv1a64(b"clusters/dev"), 0x9f58_3f1d_7fb6_c49e);
        assert_eq!(shard_of("clusters/dev", 2), 0);
        assert_eq!(shard_of("clusters/prod", 2), 0);
        assert_eq!(shard_of("clusters/c00001", 3), 2);
    }

    #[test]
    fn every_unit_is_in_exactly_one_shard_and_shards_are_balanced() {
        let names: Vec<String> = (1..=1000).map(|i| format!("clusters/c{i:05}")).collect();
        for count in [1u32, 2, 3, 5, 8] {
            let shards: Vec<Shard> = (0..count).map(|i| Shard::new(i, count).unwrap()).collect();
            let mut sizes = vec![0usize; count as usize];
            for n in &names {
                let owners: Vec<u32> = shards
                    .iter()
                    .filter(|s| s.owns(n))
                    .map(|s| s.index())
                    .collect();
                assert_eq!(owners.len(), 1, "{n} among {count}: {owners:?}");
                sizes[owners[0] as usize] += 1;
            }
            let fair = names.len() / count as usize;
            for (i, size) in sizes.iter().enumerate() {
                assert!(
                    size.abs_diff(fair) * 100 <= fair * 15,
                    "shard {i} of {count} holds {size} of 1000 units: {sizes:?}"
                );
            }
        }
    }

    #[test]
    fn the_index_must_be_below_the_count() {
        assert_eq!(Shard::new(0, 1), Ok(Shard::default()));
        assert_eq!(Shard::new(2, 3).map(Shard::index), Ok(2));
        assert_eq!(Shard::new(0, 0), Err(ShardError::NoShards));
        let e = Shard::new(2, 2).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--shard-index 2 is out of range for --shard-count 2: shards are numbered 0 to 1"
        );
    }

    #[test]
    fn one_shard_owns_everything() {
        let all = Shard::default();
        assert!(!all.is_partial());
        for n in ["clusters/dev", "clusters/prod", "", "x"] {
            assert!(all.owns(n));
        }
    }

    #[test]
    fn a_unit_that_left_git_is_pruned_by_the_shard_its_name_hashes_to_only() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // clusters/dev and clusters/prod are shard 0's; of the gone ones, 1 and 3 hash to 0.
        let present: BTreeSet<String> = names(&["clusters/dev", "clusters/prod"])
            .into_iter()
            .collect();
        let inventoried = names(&[
            "clusters/dev",
            "clusters/gone-1",
            "clusters/gone-2",
            "clusters/gone-3",
            "clusters/gone-4",
            "clusters/prod",
        ]);
        let (zero, one) = (Shard::new(0, 2).unwrap(), Shard::new(1, 2).unwrap());
        assert_eq!(
            gone_units(zero, &present, &inventoried),
            names(&["clusters/gone-1", "clusters/gone-3"])
        );
        assert_eq!(
            gone_units(one, &present, &inventoried),
            names(&["clusters/gone-2", "clusters/gone-4"]),
            "shard 1 owns no unit in git, and still never prunes shard 0's"
        );
        assert_eq!(
            gone_units(Shard::default(), &present, &inventoried).len(),
            4,
            "one shard prunes every unit that left git"
        );
        assert!(gone_units(zero, &BTreeSet::new(), &inventoried).is_empty());
    }

    #[test]
    fn each_shard_has_its_own_lease() {
        let id = "aro-gitops-leader";
        assert_eq!(lease_name(id, Shard::default()), "aro-gitops-leader");
        assert_eq!(
            lease_name(id, Shard::new(0, 2).unwrap()),
            "aro-gitops-leader-shard-0"
        );
        assert_eq!(
            lease_name(id, Shard::new(2, 3).unwrap()),
            "aro-gitops-leader-shard-2"
        );
    }

    #[test]
    fn the_line_names_the_shard() {
        assert_eq!(
            line(Shard::new(0, 2).unwrap(), 5, 9),
            "shard 0 of 2: 5 of 9 units"
        );
    }
}

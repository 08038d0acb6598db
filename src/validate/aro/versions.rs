//! OpenShift versions: the format the HcpOpenShiftCluster API takes (`X.Y` or `X.Y.Z`), the
//! channel group, and no node pool on a newer version than its cluster (OpenShift's rule: the
//! control plane is upgraded first, node pools follow it, never lead it).

use super::{Declared, Item, Problem};
use crate::kinds::{HCP_CLUSTER, HCP_GROUP, NODE_POOL};

/// OpenShift's channel groups a version can be taken from.
pub const CHANNEL_GROUPS: &[&str] = &["stable", "fast", "candidate", "eus", "nightly"];

/// A version as the API takes it: major, minor and an optional patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: Option<u32>,
}

impl Version {
    /// `X.Y` or `X.Y.Z`, decimal numbers without leading zeros (or a sign).
    pub fn parse(text: &str) -> Option<Version> {
        let number = |s: &str| {
            (!s.is_empty()
                && s.bytes().all(|b| b.is_ascii_digit())
                && (s == "0" || !s.starts_with('0')))
            .then(|| s.parse::<u32>().ok())
            .flatten()
        };
        let parts: Vec<&str> = text.split('.').collect();
        match parts.as_slice() {
            [major, minor] => Some(Version {
                major: number(major)?,
                minor: number(minor)?,
                patch: None,
            }),
            [major, minor, patch] => Some(Version {
                major: number(major)?,
                minor: number(minor)?,
                patch: Some(number(patch)?),
            }),
            _ => None,
        }
    }

    /// Whether `self` is newer than `other`, comparing patches only when both name one.
    pub fn newer_than(&self, other: &Version) -> bool {
        match (self.major, self.minor).cmp(&(other.major, other.minor)) {
            std::cmp::Ordering::Equal => {
                matches!((self.patch, other.patch), (Some(a), Some(b)) if a > b)
            }
            o => o.is_gt(),
        }
    }
}

/// The version of `item` (cluster or node pool), checked; `None` when unset or wrong.
fn version_of(item: &Item, out: &mut Vec<Problem>) -> Option<Version> {
    if let Some(group) = item.str("/spec/properties/version/channelGroup")
        && !CHANNEL_GROUPS.contains(&group)
    {
        out.push(item.problem(
            "/spec/properties/version/channelGroup",
            format!(
                "{group:?} is not an OpenShift channel group: the version's channelGroup is one of {}",
                CHANNEL_GROUPS.join(", ")
            ),
        ));
    }
    let id = item.str("/spec/properties/version/id")?;
    let version = Version::parse(id);
    if version.is_none() {
        out.push(item.problem(
            "/spec/properties/version/id",
            format!(
                "{id:?} is not an OpenShift version: the version's id is X.Y or X.Y.Z (e.g. \"4.20\" or \"4.20.3\")"
            ),
        ));
    }
    version
}

pub(super) fn problems(declared: &Declared) -> Vec<Problem> {
    let mut out = Vec::new();
    let clusters: Vec<(&Item, Option<Version>)> = declared
        .of_kind(HCP_GROUP, HCP_CLUSTER)
        .map(|c| (c, version_of(c, &mut out)))
        .collect();
    for pool in declared.of_kind(HCP_GROUP, NODE_POOL) {
        let Some(version) = version_of(pool, &mut out) else {
            continue;
        };
        let cluster = clusters.iter().find(|(c, _)| {
            c.namespace == pool.namespace && Some(c.name) == pool.str("/spec/owner/name")
        });
        if let Some((cluster, Some(theirs))) = cluster
            && version.newer_than(theirs)
        {
            out.push(pool.problem(
                "/spec/properties/version/id",
                format!(
                    "node pool version {:?} is newer than its cluster {}'s {:?}: a node pool runs its cluster's version or an older one (upgrade the cluster first)",
                    pool.str("/spec/properties/version/id").unwrap_or_default(),
                    cluster.name,
                    cluster
                        .str("/spec/properties/version/id")
                        .unwrap_or_default()
                ),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::aro::testutil::{messages, set, unit};

    #[test]
    fn versions_parse_as_the_api_takes_them() {
        let v = |s| Version::parse(s);
        assert_eq!(
            v("4.20"),
            Some(Version {
                major: 4,
                minor: 20,
                patch: None
            })
        );
        assert_eq!(
            v("4.20.3"),
            Some(Version {
                major: 4,
                minor: 20,
                patch: Some(3)
            })
        );
        assert_eq!(
            v("4.0.0"),
            Some(Version {
                major: 4,
                minor: 0,
                patch: Some(0)
            })
        );
        for bad in [
            "banana", "4", "4.", ".20", "4.20.3.1", "v4.20", "4.020", "4.20-rc1", "4.+2", "",
        ] {
            assert_eq!(v(bad), None, "{bad}");
        }
    }

    #[test]
    fn newer_compares_minors_then_patches_when_both_say_one() {
        let v = |s| Version::parse(s).unwrap();
        assert!(v("4.21").newer_than(&v("4.20")));
        assert!(v("5.0").newer_than(&v("4.20")));
        assert!(v("4.20.4").newer_than(&v("4.20.3")));
        assert!(!v("4.20.4").newer_than(&v("4.20")));
        assert!(!v("4.20").newer_than(&v("4.20.3")));
        assert!(!v("4.19").newer_than(&v("4.20")));
        assert!(!v("4.20").newer_than(&v("4.20")));
    }

    #[test]
    fn a_bad_version_or_channel_names_the_field() {
        let mut objects = unit();
        set(
            &mut objects,
            "AROControlPlane",
            "/spec/resources/0/spec/properties/version/id",
            "banana",
        );
        set(
            &mut objects,
            "AROControlPlane",
            "/spec/resources/0/spec/properties/version/channelGroup",
            "beta",
        );
        let m = messages(objects);
        assert_eq!(m.len(), 2, "{m:?}");
        assert!(m[0].starts_with("AROControlPlane: /spec/resources/0/spec/properties/version/channelGroup: \"beta\" is not an OpenShift channel group"), "{}", m[0]);
        assert!(m[1].starts_with("AROControlPlane: /spec/resources/0/spec/properties/version/id: \"banana\" is not an OpenShift version"), "{}", m[1]);
    }

    #[test]
    fn a_node_pool_newer_than_its_cluster_is_refused() {
        let mut objects = unit();
        set(
            &mut objects,
            "AROMachinePool",
            "/spec/resources/0/spec/properties/version/id",
            "4.21",
        );
        assert_eq!(
            messages(objects),
            [
                "AROMachinePool: /spec/resources/0/spec/properties/version/id: node pool version \"4.21\" is newer than its cluster aro-dev's \"4.20\": a node pool runs its cluster's version or an older one (upgrade the cluster first)"
            ]
        );
        let mut objects = unit();
        set(
            &mut objects,
            "AROMachinePool",
            "/spec/resources/0/spec/properties/version/id",
            "4.19",
        );
        assert!(messages(objects).is_empty());
    }
}

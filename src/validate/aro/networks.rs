//! The networks of a cluster: CIDRs that parse as Azure takes them, the HcpOpenShiftCluster's
//! machine, service and pod networks apart from each other, every subnet inside its VNet's
//! address space, and no two subnets of one VNet overlapping.

use super::{Declared, Item, Problem};
use crate::kinds::{HCP_CLUSTER, HCP_GROUP};
use serde_json::Value;
use std::fmt;
use std::net::IpAddr;

const NETWORK: &str = "network.azure.com";

/// An address range: the first address (as a number) and the prefix length, IPv4 or IPv6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    pub v6: bool,
    pub first: u128,
    pub prefix: u8,
}

impl Cidr {
    fn bits(v6: bool) -> u8 {
        if v6 { 128 } else { 32 }
    }

    /// Reads `a.b.c.d/n` (or an IPv6 prefix) as Azure takes it: a prefix length in range and no
    /// host bits set. The error says what is wrong, and the range meant when only host bits are.
    pub fn parse(text: &str) -> Result<Cidr, String> {
        let Some((address, prefix)) = text.split_once('/') else {
            return Err(
                "is not a CIDR: write an address, a slash and a prefix length (10.0.0.0/16)".into(),
            );
        };
        let Ok(ip) = address.parse::<IpAddr>() else {
            return Err(format!("is not a CIDR: {address:?} is not an IP address"));
        };
        let v6 = ip.is_ipv6();
        let max = Cidr::bits(v6);
        let prefix = match prefix.parse::<u8>() {
            Ok(p) if p <= max && !prefix.starts_with('+') => p,
            _ => {
                return Err(format!(
                    "is not a CIDR: the prefix length {prefix:?} is not a number from 0 to {max}"
                ));
            }
        };
        let first = match ip {
            IpAddr::V4(a) => u128::from(u32::from(a)),
            IpAddr::V6(a) => u128::from(a),
        };
        let cidr = Cidr { v6, first, prefix };
        let network = first & cidr.mask();
        if network != first {
            let meant = Cidr {
                first: network,
                ..cidr
            };
            return Err(format!(
                "has host bits set: Azure takes the network's first address, {meant}"
            ));
        }
        Ok(cidr)
    }

    fn mask(&self) -> u128 {
        let bits = Cidr::bits(self.v6);
        let host = u32::from(bits - self.prefix);
        let all = if self.v6 {
            u128::MAX
        } else {
            u128::from(u32::MAX)
        };
        if host >= 128 {
            0
        } else {
            all & !((1u128 << host) - 1)
        }
    }

    fn last(&self) -> u128 {
        let bits = Cidr::bits(self.v6);
        let host = u32::from(bits - self.prefix);
        if host >= 128 {
            u128::MAX
        } else {
            self.first | ((1u128 << host) - 1)
        }
    }

    /// Whether every address of `other` is in `self`.
    pub fn contains(&self, other: &Cidr) -> bool {
        self.v6 == other.v6 && self.first <= other.first && other.last() <= self.last()
    }

    /// Whether the two share an address.
    pub fn overlaps(&self, other: &Cidr) -> bool {
        self.v6 == other.v6 && self.first <= other.last() && other.first <= self.last()
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.v6 {
            write!(
                f,
                "{}/{}",
                std::net::Ipv6Addr::from(self.first),
                self.prefix
            )
        } else {
            let v4 = u32::try_from(self.first).unwrap_or_default();
            write!(f, "{}/{}", std::net::Ipv4Addr::from(v4), self.prefix)
        }
    }
}

/// The CIDRs written at `pointer` of `item` (a string, or a list of strings), each with its own
/// pointer; those that do not parse are reported into `out`.
fn cidrs_at(item: &Item, pointer: &str, out: &mut Vec<Problem>) -> Vec<(String, Cidr)> {
    let written: Vec<(String, &str)> = match item.value.pointer(pointer) {
        Some(Value::String(s)) => vec![(pointer.to_string(), s.as_str())],
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .filter_map(|(i, v)| Some((format!("{pointer}/{i}"), v.as_str()?)))
            .collect(),
        _ => Vec::new(),
    };
    written
        .into_iter()
        .filter_map(|(at, text)| match Cidr::parse(text) {
            Ok(c) => Some((at, c)),
            Err(e) => {
                out.push(item.problem(&at, format!("{text:?} {e}")));
                None
            }
        })
        .collect()
}

/// The HcpOpenShiftCluster's networks: each parses as an IPv4 CIDR, and no two overlap.
fn cluster_networks(item: &Item, out: &mut Vec<Problem>) {
    let mut seen: Vec<(&str, String, Cidr)> = Vec::new();
    for (field, what) in [
        ("machineCidr", "machine"),
        ("serviceCidr", "service"),
        ("podCidr", "pod"),
    ] {
        let pointer = format!("/spec/properties/network/{field}");
        for (at, cidr) in cidrs_at(item, &pointer, out) {
            if cidr.v6 {
                out.push(item.problem(
                    &at,
                    format!("{cidr} is IPv6: an ARO HCP cluster's {what} network is IPv4"),
                ));
                continue;
            }
            if let Some((other, _, c)) = seen.iter().find(|(_, _, c)| c.overlaps(&cidr)) {
                out.push(item.problem(
                    &at,
                    format!(
                        "the {what} network {cidr} overlaps the {other} network {c}: a cluster's machine, service and pod networks must not share an address"
                    ),
                ));
            }
            seen.push((what, at, cidr));
        }
    }
}

/// The address prefixes of a subnet (`addressPrefix` and `addressPrefixes`).
fn subnet_prefixes(item: &Item, out: &mut Vec<Problem>) -> Vec<(String, Cidr)> {
    let mut all = cidrs_at(item, "/spec/addressPrefix", out);
    all.extend(cidrs_at(item, "/spec/addressPrefixes", out));
    all
}

pub(super) fn problems(declared: &Declared) -> Vec<Problem> {
    let mut out = Vec::new();
    for item in declared.of_kind(HCP_GROUP, HCP_CLUSTER) {
        cluster_networks(item, &mut out);
    }
    // Each VNet's address space, then its subnets against it and against each other.
    for vnet in declared.of_kind(NETWORK, "VirtualNetwork") {
        let space = cidrs_at(vnet, "/spec/addressSpace/addressPrefixes", &mut out);
        let mut placed: Vec<(&str, Cidr)> = Vec::new();
        for subnet in declared
            .of_kind(NETWORK, "VirtualNetworksSubnet")
            .filter(|s| {
                s.namespace == vnet.namespace && s.str("/spec/owner/name") == Some(vnet.name)
            })
        {
            for (at, cidr) in subnet_prefixes(subnet, &mut out) {
                if !space.is_empty() && !space.iter().any(|(_, s)| s.contains(&cidr)) {
                    let list: Vec<String> = space.iter().map(|(_, s)| s.to_string()).collect();
                    out.push(subnet.problem(
                        &at,
                        format!(
                            "{cidr} is outside the address space of its VirtualNetwork {} ({}): a subnet's addressPrefix must lie inside its VNet's addressPrefixes",
                            vnet.name,
                            list.join(", ")
                        ),
                    ));
                }
                if let Some((other, c)) = placed.iter().find(|(_, c)| c.overlaps(&cidr)) {
                    out.push(subnet.problem(
                        &at,
                        format!(
                            "{cidr} overlaps subnet {other} ({c}) of the same VirtualNetwork {}: subnets of one VNet must not share an address",
                            vnet.name
                        ),
                    ));
                }
                placed.push((subnet.name, cidr));
            }
        }
    }
    // Subnets whose VNet is not declared still parse.
    for subnet in declared
        .of_kind(NETWORK, "VirtualNetworksSubnet")
        .filter(|s| {
            s.str("/spec/owner/name").is_none_or(|v| {
                declared
                    .find(s.namespace, NETWORK, "VirtualNetwork", v)
                    .is_none()
            })
        })
    {
        subnet_prefixes(subnet, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::aro::testutil::{messages, set, unit};

    fn cidr(s: &str) -> Cidr {
        Cidr::parse(s).unwrap()
    }

    #[test]
    fn cidrs_parse_as_azure_takes_them() {
        assert_eq!(cidr("10.10.0.0/16").to_string(), "10.10.0.0/16");
        assert_eq!(cidr("0.0.0.0/0").to_string(), "0.0.0.0/0");
        assert_eq!(cidr("10.0.0.1/32").to_string(), "10.0.0.1/32");
        assert_eq!(cidr("fd00::/8").to_string(), "fd00::/8");
        for (bad, says) in [
            (
                "10.10.0.0/99",
                "the prefix length \"99\" is not a number from 0 to 32",
            ),
            ("10.10.0.0/-1", "is not a number from 0 to 32"),
            ("10.10.0.0/+8", "is not a number from 0 to 32"),
            ("10.10.0.0", "is not a CIDR: write an address"),
            ("10.10.0/16", "\"10.10.0\" is not an IP address"),
            ("010.10.0.0/16", "is not an IP address"),
            (
                "10.10.1.0/16",
                "has host bits set: Azure takes the network's first address, 10.10.0.0/16",
            ),
            ("fd00::1/8", "fd00::/8"),
        ] {
            let e = Cidr::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn containment_and_overlap() {
        assert!(cidr("10.10.0.0/16").contains(&cidr("10.10.0.0/24")));
        assert!(cidr("10.10.0.0/16").contains(&cidr("10.10.0.0/16")));
        assert!(!cidr("10.10.0.0/24").contains(&cidr("10.10.0.0/16")));
        assert!(!cidr("10.10.0.0/16").contains(&cidr("10.99.0.0/24")));
        assert!(cidr("0.0.0.0/0").contains(&cidr("255.255.255.255/32")));
        assert!(cidr("10.0.0.0/8").overlaps(&cidr("10.128.0.0/14")));
        assert!(!cidr("10.0.0.0/16").overlaps(&cidr("10.1.0.0/16")));
        assert!(!cidr("10.0.0.0/16").overlaps(&cidr("fd00::/8")));
        assert!(cidr("::/0").contains(&cidr("fd00::/8")));
    }

    #[test]
    fn a_bad_vnet_cidr_names_the_field() {
        let mut objects = unit();
        set(
            &mut objects,
            "AROCluster",
            "/spec/resources/1/spec/addressSpace/addressPrefixes/0",
            "10.10.0.0/99",
        );
        let m = messages(objects);
        assert_eq!(
            m,
            [
                "AROCluster: /spec/resources/1/spec/addressSpace/addressPrefixes/0: \"10.10.0.0/99\" is not a CIDR: the prefix length \"99\" is not a number from 0 to 32"
            ]
        );
    }

    #[test]
    fn a_subnet_outside_its_vnet_or_over_another_is_refused() {
        let mut objects = unit();
        set(
            &mut objects,
            "AROCluster",
            "/spec/resources/3/spec/addressPrefix",
            "10.99.0.0/24",
        );
        let m = messages(objects);
        assert_eq!(
            m,
            [
                "AROCluster: /spec/resources/3/spec/addressPrefix: 10.99.0.0/24 is outside the address space of its VirtualNetwork aro-dev-vnet (10.10.0.0/16): a subnet's addressPrefix must lie inside its VNet's addressPrefixes"
            ]
        );
        let mut objects = unit();
        let second = serde_json::json!({"apiVersion": "network.azure.com/v1api20201101", "kind": "VirtualNetworksSubnet",
            "metadata": {"name": "aro-dev-subnet2"}, "spec": {"owner": {"name": "aro-dev-vnet"}, "addressPrefix": "10.10.0.128/25"}});
        objects[1]["spec"]["resources"]
            .as_array_mut()
            .unwrap()
            .push(second);
        let m = messages(objects);
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(m[0].contains("/spec/addressPrefix: 10.10.0.128/25 overlaps subnet aro-dev-subnet (10.10.0.0/24) of the same VirtualNetwork aro-dev-vnet"), "{}", m[0]);
    }

    #[test]
    fn the_clusters_networks_must_not_overlap() {
        let mut objects = unit();
        set(
            &mut objects,
            "AROControlPlane",
            "/spec/resources/0/spec/properties/network/podCidr",
            "10.0.0.0/8",
        );
        let m = messages(objects);
        assert_eq!(
            m,
            [
                "AROControlPlane: /spec/resources/0/spec/properties/network/podCidr: the pod network 10.0.0.0/8 overlaps the machine network 10.10.0.0/16: a cluster's machine, service and pod networks must not share an address"
            ]
        );
        let mut objects = unit();
        set(
            &mut objects,
            "AROControlPlane",
            "/spec/resources/0/spec/properties/network/serviceCidr",
            "fd00::/108",
        );
        assert!(
            messages(objects)[0].contains("is IPv6: an ARO HCP cluster's service network is IPv4")
        );
    }
}

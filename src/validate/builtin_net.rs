//! kube-apiserver's rules for addresses: IP addresses as its legacy fields read them (Go's
//! lenient parser, then the strict checks of `StrictIPCIDRValidation`, on by default since
//! v1.36), Endpoints (their subsets, addresses and ports, and the warnings a non-canonical
//! address earns), and a Service's cluster IPs and IP families (how they relate, and what an
//! update may not change).

use super::{NameRule, label_key_messages, name_messages};
use crate::machinery::field::{BadValue, FieldError};
use serde_json::{Value, json};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An IPv4 address as Go's lenient parser reads it: four decimal numbers up to 255, leading
/// zeros allowed.
fn sloppy_v4(s: &str) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut parts = s.split('.');
    for o in &mut octets {
        let part = parts.next()?;
        if part.is_empty() || part.len() > 10 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = part.parse::<u32>().ok().filter(|n| *n <= 255)? as u8;
    }
    parts.next().is_none().then_some(Ipv4Addr::from(octets))
}

/// An address as Go's lenient `ParseIPSloppy` reads it (no zone; IPv4 with leading zeros, also
/// inside IPv6).
pub fn parse_sloppy(s: &str) -> Option<IpAddr> {
    if s.contains(':') {
        if let Ok(v6) = s.parse::<Ipv6Addr>() {
            return Some(IpAddr::V6(v6));
        }
        // An embedded IPv4 with leading zeros: rewritten without them.
        let (head, tail) = s.rsplit_once(':')?;
        let v4 = sloppy_v4(tail)?;
        return format!("{head}:{v4}").parse().ok().map(IpAddr::V6);
    }
    sloppy_v4(s).map(IpAddr::V4)
}

/// The address as Go's `net.IP` methods see it: an IPv4-mapped IPv6 address is IPv4.
fn unmapped(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// Whether `s` is an IPv6 address (as kube's `IsIPv6String`: a mapped IPv4 is not).
pub fn is_ipv6(s: &str) -> bool {
    parse_sloppy(s).is_some_and(|ip| unmapped(ip).is_ipv6())
}

/// kube's `IsValidIPForLegacyField` with strict validation: an address Go's lenient parser
/// reads, without leading zeros, not IPv4-mapped.
pub fn legacy_ip_errors(field: &str, value: &str) -> Vec<FieldError> {
    let Some(ip) = parse_sloppy(value) else {
        return vec![FieldError::invalid(
            field,
            value,
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        )];
    };
    let mut errors = Vec::new();
    if value.parse::<IpAddr>().is_err() {
        errors.push(FieldError::invalid(
            field,
            value,
            "must not have leading 0s",
        ));
    }
    if matches!(ip, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some()) {
        errors.push(FieldError::invalid(
            field,
            value,
            "must not be an IPv4-mapped IPv6 address",
        ));
    }
    errors
}

/// kube's `ValidateEndpointIP`: an address an endpoint can be reached at.
fn endpoint_ip_errors(field: &str, value: &str) -> Vec<FieldError> {
    let Some(ip) = parse_sloppy(value).map(unmapped) else {
        return vec![FieldError::invalid(
            field,
            value,
            "must be a valid IP address",
        )];
    };
    let mut errors = Vec::new();
    let mut refuse = |why: &str| errors.push(FieldError::invalid(field, value, why));
    if ip.is_unspecified() {
        refuse(&format!("may not be unspecified ({value})"));
    }
    if ip.is_loopback() {
        refuse("may not be in the loopback range (127.0.0.0/8, ::1/128)");
    }
    let (link_local, link_local_multicast) = match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            (v4.is_link_local(), o[0] == 224 && o[1] == 0 && o[2] == 0)
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            (s[0] & 0xffc0 == 0xfe80, s[0] & 0xff0f == 0xff02)
        }
    };
    if link_local {
        refuse("may not be in the link-local range (169.254.0.0/16, fe80::/10)");
    }
    if link_local_multicast {
        refuse("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)");
    }
    errors
}

/// kube's `GetWarningsForIP`, for an address its validation let through.
fn ip_warnings(field: &str, value: &str) -> Option<String> {
    let ip = parse_sloppy(value)?;
    let strict = value.parse::<IpAddr>().ok();
    match strict {
        Some(IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_none() => {
            let canonical = v6.to_string();
            (canonical != value).then(|| {
                format!(
                    "{field}: IPv6 address {value:?} should be in RFC 5952 canonical format ({canonical:?})"
                )
            })
        }
        Some(IpAddr::V4(_)) => None,
        _ => Some(format!(
            "{field}: non-standard IP address {value:?} is invalid: use {:?}",
            unmapped(ip).to_string()
        )),
    }
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The errors of an Endpoints' subsets (none on an update that leaves them as they were).
pub fn endpoints_errors(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    if old.is_some_and(|o| o.get("subsets") == obj.get("subsets")) {
        return Vec::new();
    }
    let mut errors = Vec::new();
    for (i, subset) in list(obj, "subsets").iter().enumerate() {
        let at = format!("subsets[{i}]");
        let (ready, not_ready) = (list(subset, "addresses"), list(subset, "notReadyAddresses"));
        if ready.is_empty() && not_ready.is_empty() {
            errors.push(FieldError::required(
                &at,
                "must specify `addresses` or `notReadyAddresses`",
            ));
        }
        for (key, addresses) in [("addresses", ready), ("notReadyAddresses", not_ready)] {
            for (j, a) in addresses.iter().enumerate() {
                errors.extend(address_errors(&format!("{at}.{key}[{j}]"), a));
            }
        }
        let ports = list(subset, "ports");
        for (j, p) in ports.iter().enumerate() {
            errors.extend(port_errors(&format!("{at}.ports[{j}]"), p, ports.len() > 1));
        }
    }
    errors
}

fn address_errors(at: &str, address: &Value) -> Vec<FieldError> {
    let ip_field = format!("{at}.ip");
    let ip = text(address, "ip");
    let mut errors = legacy_ip_errors(&ip_field, ip);
    let hostname = text(address, "hostname");
    if !hostname.is_empty() {
        for m in name_messages(NameRule::Label, hostname) {
            errors.push(FieldError::invalid(&format!("{at}.hostname"), hostname, &m));
        }
    }
    if let Some(node) = address.get("nodeName").and_then(Value::as_str) {
        for m in name_messages(NameRule::Subdomain, node) {
            errors.push(FieldError::invalid(&format!("{at}.nodeName"), node, &m));
        }
    }
    errors.extend(endpoint_ip_errors(&ip_field, ip));
    errors
}

fn port_errors(at: &str, port: &Value, name_required: bool) -> Vec<FieldError> {
    const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
    let mut errors = Vec::new();
    let field = |f: &str| format!("{at}.{f}");
    let name = text(port, "name");
    if name_required && name.is_empty() {
        errors.push(FieldError::required(&field("name"), ""));
    } else if !name.is_empty() {
        for m in name_messages(NameRule::Label, name) {
            errors.push(FieldError::invalid(&field("name"), name, &m));
        }
    }
    let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
    if !(1..=65535).contains(&number) {
        errors.push(FieldError::invalid_raw(
            &field("port"),
            number,
            "must be between 1 and 65535, inclusive",
        ));
    }
    match text(port, "protocol") {
        "" => errors.push(FieldError::required(&field("protocol"), "")),
        p if !PROTOCOLS.contains(&p) => errors.push(FieldError::not_supported(
            &field("protocol"),
            BadValue::Str(p.into()),
            PROTOCOLS,
        )),
        _ => {}
    }
    if let Some(app) = port.get("appProtocol").and_then(Value::as_str) {
        for m in label_key_messages(app) {
            errors.push(FieldError::invalid(&field("appProtocol"), app, &m));
        }
    }
    errors
}

/// The warnings a write of Endpoints earns: each address in a non-canonical form (none for the
/// Endpoints kube's own controller writes).
pub fn endpoints_warnings(obj: &Value) -> Vec<String> {
    let managed_by = obj
        .pointer("/metadata/labels/endpoints.kubernetes.io~1managed-by")
        .and_then(Value::as_str);
    if managed_by == Some("endpoint-controller") {
        return Vec::new();
    }
    let mut warnings = Vec::new();
    for (i, subset) in list(obj, "subsets").iter().enumerate() {
        for key in ["addresses", "notReadyAddresses"] {
            for (j, a) in list(subset, key).iter().enumerate() {
                let field = format!("subsets[{i}].{key}[{j}].ip");
                warnings.extend(ip_warnings(&field, text(a, "ip")));
            }
        }
    }
    warnings
}

// ---------------------------------------------------------------------------------------------
// Services

/// A Service's spec fields this file reads.
pub struct ServiceIps<'a> {
    pub cluster_ip: &'a str,
    pub cluster_ips: Vec<&'a str>,
    pub families: Vec<&'a str>,
    pub policy: Option<&'a str>,
    pub external_name: bool,
}

impl<'a> ServiceIps<'a> {
    pub fn of(service: &'a Value) -> Self {
        let spec = service.get("spec").unwrap_or(&Value::Null);
        let strings = |key: &str| list(spec, key).iter().filter_map(Value::as_str).collect();
        ServiceIps {
            cluster_ip: text(spec, "clusterIP"),
            cluster_ips: strings("clusterIPs"),
            families: strings("ipFamilies"),
            policy: spec.get("ipFamilyPolicy").and_then(Value::as_str),
            external_name: text(spec, "type") == "ExternalName",
        }
    }

    pub fn headless(&self) -> bool {
        self.cluster_ips == ["None"]
    }
}

/// A list as kube's messages show it: Go's JSON of the slice (`null` when empty).
fn shown_list(items: &[&str]) -> String {
    if items.is_empty() {
        "null".into()
    } else {
        json!(items).to_string()
    }
}

/// A policy as kube's messages show it (a pointer to a string: `null` when unset).
pub fn shown_policy(policy: Option<&str>) -> String {
    policy.map_or_else(|| "null".into(), |p| json!(p).to_string())
}

/// kube's `ValidateServiceClusterIPsRelatedFields`: `clusterIP` and `clusterIPs` agree, the
/// families and policy are known values, the addresses are valid and of their families.
pub fn cluster_ips_errors(service: &Value, old: Option<&Value>) -> Vec<FieldError> {
    const FAMILIES: &[&str] = &["IPv4", "IPv6"];
    const POLICIES: &[&str] = &["PreferDualStack", "RequireDualStack", "SingleStack"];
    let s = ServiceIps::of(service);
    if s.external_name {
        return Vec::new();
    }
    let ips_field = "spec.clusterIPs";
    let ips_value = shown_list(&s.cluster_ips);
    let mut errors = Vec::new();
    if !s.cluster_ip.is_empty() {
        match s.cluster_ips.first() {
            None => errors.push(FieldError::required(ips_field, "")),
            Some(first) if *first != s.cluster_ip => errors.push(FieldError::invalid_raw(
                ips_field,
                &ips_value,
                "first value must match `clusterIP`",
            )),
            Some(_) => {}
        }
    } else if !s.cluster_ips.is_empty() {
        errors.push(FieldError::invalid_raw(
            ips_field,
            &ips_value,
            "must be empty when `clusterIP` is not specified",
        ));
    }
    for (i, family) in s.families.iter().enumerate() {
        let at = format!("spec.ipFamilies[{i}]");
        if !FAMILIES.contains(family) {
            errors.push(FieldError::not_supported(
                &at,
                BadValue::Str((*family).into()),
                FAMILIES,
            ));
        }
        if s.families[..i].contains(family) {
            errors.push(FieldError {
                kind: crate::machinery::field::ErrorType::Duplicate,
                field: at,
                value: BadValue::Str((*family).into()),
                detail: String::new(),
            });
        }
    }
    if let Some(p) = s.policy.filter(|p| !POLICIES.contains(p)) {
        errors.push(FieldError::not_supported(
            "spec.ipFamilyPolicy",
            BadValue::Raw(shown_policy(Some(p))),
            POLICIES,
        ));
    }
    let existing = old.map(ServiceIps::of).map(|o| {
        o.cluster_ips
            .iter()
            .map(|ip| ip.to_string())
            .collect::<Vec<_>>()
    });
    let mut invalid_ips = false;
    for (i, ip) in s.cluster_ips.iter().enumerate() {
        if i == 0 && *ip == "None" {
            if s.cluster_ips.len() > 1 {
                invalid_ips = true;
                errors.push(FieldError::invalid_raw(
                    ips_field,
                    &ips_value,
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        if existing.as_ref().is_some_and(|e| e.iter().any(|x| x == ip)) {
            continue;
        }
        let found = legacy_ip_errors(&format!("{ips_field}[{i}]"), ip);
        invalid_ips |= !found.is_empty();
        errors.extend(found);
    }
    if s.cluster_ips.len() > 2 {
        errors.push(FieldError::invalid_raw(
            ips_field,
            &ips_value,
            "may only hold up to 2 values",
        ));
    }
    if invalid_ips {
        return errors;
    }
    if s.cluster_ips.len() > 1 {
        let v6 = s.cluster_ips.iter().filter(|ip| is_ipv6(ip)).count();
        if v6 == 0 || v6 == s.cluster_ips.len() {
            errors.push(FieldError::invalid_raw(
                ips_field,
                &ips_value,
                "may specify no more than one IP for each IP family",
            ));
        }
    }
    if !s.headless() {
        for (i, (ip, family)) in s.cluster_ips.iter().zip(&s.families).enumerate() {
            let at = format!("{ips_field}[{i}]");
            let expected = match (*family, is_ipv6(ip)) {
                ("IPv4", true) => "IPv4",
                ("IPv6", false) => "IPv6",
                _ => continue,
            };
            errors.push(FieldError::invalid(
                &at,
                ip,
                &format!("expected an {expected} value as indicated by `ipFamilies[{i}]`"),
            ));
        }
    }
    errors
}

/// A secondary address or family released under a policy other than SingleStack.
fn release_needs_single_stack(policy: Option<&str>, what: &str) -> FieldError {
    FieldError::invalid_raw(
        "spec.ipFamilyPolicy",
        shown_policy(policy),
        &format!("must be set to 'SingleStack' when releasing the secondary {what}"),
    )
}

/// What a Service update may not change of its cluster IPs and IP families (kube's
/// upgrade/downgrade rules: a secondary may come or go, with the policy to match; the primary
/// stays).
pub fn service_update_errors(service: &Value, old: &Value) -> Vec<FieldError> {
    let (new, was) = (ServiceIps::of(service), ServiceIps::of(old));
    if new.external_name || was.external_name {
        return Vec::new();
    }
    let mut errors = Vec::new();
    let ips = shown_list(&new.cluster_ips);
    let single_stack = new.policy == Some("SingleStack");
    let changed =
        |at: &str, shown: &str| FieldError::invalid_raw(at, shown, "may not change once set");
    if !(was.headless() && new.headless()) {
        let (n, o) = (&new.cluster_ips, &was.cluster_ips);
        if o.len() == n.len() {
            for (i, ip) in o.iter().enumerate() {
                if *ip != n[i] {
                    errors.push(changed(&format!("spec.clusterIPs[{i}]"), &ips));
                }
            }
        } else if o.len() > n.len() {
            if n.is_empty() {
                errors.push(FieldError::invalid_raw(
                    "spec.clusterIPs[0]",
                    &ips,
                    "primary clusterIP can not be unset",
                ));
            } else if n[0] != o[0] {
                errors.push(changed("spec.clusterIPs[0]", &ips));
            }
            if n.len() == 1 && !single_stack {
                errors.push(release_needs_single_stack(new.policy, "clusterIP"));
            }
        } else if !o.is_empty() && n[0] != o[0] {
            errors.push(changed("spec.clusterIPs[0]", &ips));
        }
    }
    if new.headless() || was.headless() {
        return errors;
    }
    let (n, o) = (&new.families, &was.families);
    let families = shown_list(n);
    if o.len() == n.len() {
        // kube reports each change at the first family.
        for _ in o.iter().zip(n).filter(|(a, b)| a != b) {
            errors.push(changed("spec.ipFamilies[0]", &families));
        }
    } else if o.len() > n.len() {
        if new.cluster_ips.is_empty() {
            errors.push(FieldError::invalid_raw(
                "spec.ipFamilies[0]",
                &families,
                "primary ipFamily can not be unset",
            ));
        }
        if !n.is_empty() && n[0] != o[0] {
            errors.push(changed("spec.ipFamilies[0]", &ips));
        }
        if n.len() == 1 && !single_stack {
            errors.push(release_needs_single_stack(new.policy, "ipFamily"));
        }
    } else if !o.is_empty() && !n.is_empty() && n[0] != o[0] {
        errors.push(changed("spec.ipFamilies[0]", &ips));
    }
    errors
}

#[cfg(test)]
#[path = "builtin_net_tests.rs"]
mod tests;

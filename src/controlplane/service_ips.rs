//! What kube-apiserver's Service storage sets after field management, so no manager owns it: a
//! cluster IP allocated from the service range (single-stack IPv4 here), the IP families and
//! their policy, and on an update the allocated values an update left out, `clusterIPs` kept in
//! step with `clusterIP`, and the IP families checked against what this cluster serves (one
//! family, IPv4), before the update is validated.

use crate::machinery::field::FieldError;
use crate::validate::builtin::net::{ServiceIps, cluster_ips_errors, is_ipv6, shown_policy};
use serde_json::{Value, json};
use std::collections::HashSet;

/// The one IP family this cluster serves.
const FAMILY: &str = "IPv4";

/// The first three octets of the service range, as kube-apiserver's default `10.96.0.0/12`
/// starts; `.0.1` is the `kubernetes` Service's own.
const RANGE_PREFIX: [u8; 2] = [10, 96];

/// The allocated fields a Service keeps across updates.
const ALLOCATED: &[&str] = &["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"];

fn is_external_name(obj: &Value) -> bool {
    obj.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName")
}

/// Fills in a new Service's IP family policy and families and its cluster IP (one not in `used`,
/// chosen from `seed`), or refuses families this cluster does not serve, as kube's allocator.
pub(super) fn allocate(obj: &mut Value, used: &HashSet<String>, seed: u32) -> Vec<FieldError> {
    if is_external_name(obj) || !obj.get("spec").is_some_and(Value::is_object) {
        return Vec::new();
    }
    // A client that set only `clusterIP` gets `clusterIPs` from it.
    let ip = ServiceIps::of(obj).cluster_ip.to_string();
    if !ip.is_empty() && ServiceIps::of(obj).cluster_ips.is_empty() {
        obj["spec"]["clusterIPs"] = json!([ip]);
    }
    let errors = init_ip_families(obj, None);
    if !errors.is_empty() || !ip.is_empty() {
        return errors;
    }
    let ip = free_ip(used, seed);
    obj["spec"]["clusterIP"] = json!(ip);
    obj["spec"]["clusterIPs"] = json!([ip]);
    Vec::new()
}

/// The first address from `seed` on, in the range, that is not in `used` (never `.0.0` or
/// `.0.1`).
fn free_ip(used: &HashSet<String>, seed: u32) -> String {
    const SIZE: u32 = 1 << 16;
    (0..SIZE)
        .map(|i| (seed.wrapping_add(i)) % SIZE)
        .filter(|n| *n > 1)
        .map(|n| {
            format!(
                "{}.{}.{}.{}",
                RANGE_PREFIX[0],
                RANGE_PREFIX[1],
                n >> 8,
                n & 0xff
            )
        })
        .find(|ip| !used.contains(ip))
        .unwrap_or_else(|| "10.96.0.2".into())
}

/// Carries a Service's allocated values from `old` into an update that left them out.
pub(super) fn keep_allocated(old: &Value, new: &mut Value) {
    if is_external_name(new) {
        return;
    }
    let Some(old_spec) = old.get("spec").and_then(Value::as_object) else {
        return;
    };
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for k in ALLOCATED {
        let missing = spec
            .get(*k)
            .is_none_or(|v| v.is_null() || v == "" || v.as_array().is_some_and(Vec::is_empty));
        if missing && let Some(v) = old_spec.get(*k) {
            spec.insert(k.to_string(), v.clone());
        }
    }
}

/// Keeps `clusterIPs` in step with an update that changed or cleared only `clusterIP` (an older
/// client's write), as kube's storage does before anything looks at them.
pub(super) fn sync_cluster_ips(old: &Value, new: &mut Value) {
    let (was_ip, was_ips) = {
        let o = ServiceIps::of(old);
        let ips: Vec<String> = o.cluster_ips.iter().map(|s| s.to_string()).collect();
        (o.cluster_ip.to_string(), ips)
    };
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let ip = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let ips: Vec<String> = spec
        .get("clusterIPs")
        .map(|v| crate::object::strings_at(v, ""))
        .unwrap_or_default();
    if !was_ips.is_empty() && ips.is_empty() && was_ip == ip {
        spec.insert("clusterIPs".into(), json!(was_ips));
        return;
    }
    if was_ip == ip || ips != was_ips {
        return;
    }
    if ip.is_empty() {
        spec.remove("clusterIPs");
    } else {
        spec.insert("clusterIPs".into(), json!([ip]));
    }
}

/// Sets a Service's IP family policy and families as kube's allocator does on a single-stack
/// IPv4 cluster, or refuses what such a cluster cannot serve (the errors of kube's 422). `old`
/// is the stored Service on an update.
pub(super) fn init_ip_families(new: &mut Value, old: Option<&Value>) -> Vec<FieldError> {
    let s = ServiceIps::of(new);
    if s.external_name || matching_prefer_dual_stack(new, old) {
        return Vec::new();
    }
    let selectorless = new
        .pointer("/spec/selector")
        .and_then(Value::as_object)
        .is_none_or(|m| m.is_empty());
    let headless_selectorless = s.cluster_ip == "None" && selectorless;
    let policy = match (s.policy, old.and_then(|o| ServiceIps::of(o).policy)) {
        (Some(p), _) | (None, Some(p)) => p.to_string(),
        (None, None) if headless_selectorless => "RequireDualStack".into(),
        (None, None) => "SingleStack".into(),
    };
    new["spec"]["ipFamilyPolicy"] = json!(policy);
    let errors = cluster_ips_errors(new, old);
    if !errors.is_empty() {
        return errors;
    }
    let mut ips = strings(new, "clusterIPs");
    let mut families = strings(new, "ipFamilies");
    let shown = Some(policy.as_str());
    let invalid =
        |detail: &str| FieldError::invalid_raw("spec.ipFamilyPolicy", shown_policy(shown), detail);
    let mut errors = Vec::new();
    if let Some(old) = old {
        let (was_ips, was_families) = (strings(old, "clusterIPs"), strings(old, "ipFamilies"));
        if policy == "SingleStack" {
            if ips == was_ips && ips.len() > 1 {
                ips.truncate(1);
            }
            if families == was_families && families.len() > 1 {
                families.truncate(1);
            }
        } else {
            if !ips.is_empty() && ips.len() < was_ips.len() {
                errors.push(invalid(
                    "must be 'SingleStack' to release the secondary cluster IP",
                ));
            }
            if !families.is_empty() && families.len() < was_families.len() {
                errors.push(invalid(
                    "must be 'SingleStack' to release the secondary IP family",
                ));
            }
        }
    }
    if policy == "SingleStack" {
        if ips.len() == 2 {
            errors.push(invalid(
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
            ));
        }
        if families.len() == 2 {
            errors.push(invalid(
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
            ));
        }
    }
    for (i, ip) in ips.iter().enumerate() {
        if ip == "None" {
            break;
        }
        let family = if is_ipv6(ip) { "IPv6" } else { "IPv4" };
        if i < families.len() {
            continue;
        }
        if family == FAMILY {
            families.push(family.to_string());
        } else {
            let shown: Vec<&str> = ips.iter().map(String::as_str).collect();
            errors.push(FieldError::invalid_raw(
                &format!("spec.clusterIPs[{i}]"),
                json!(shown),
                &format!("{family} is not configured on this cluster"),
            ));
        }
    }
    if errors.is_empty() {
        if headless_selectorless {
            if families.is_empty() {
                families.push(FAMILY.into());
            }
            if families.len() < 2 && policy != "SingleStack" {
                let other = if families[0] == "IPv4" {
                    "IPv6"
                } else {
                    "IPv4"
                };
                families.push(other.into());
            }
        } else {
            if policy == "RequireDualStack" {
                errors.push(invalid(
                    "this cluster is not configured for dual-stack services",
                ));
            }
            for (i, family) in families.iter().enumerate() {
                if family != FAMILY {
                    errors.push(FieldError::invalid(
                        &format!("spec.ipFamilies[{i}]"),
                        family,
                        "not configured on this cluster",
                    ));
                }
            }
            if families.is_empty() {
                families.push(FAMILY.into());
            }
        }
    }
    if errors.is_empty() {
        if !ips.is_empty() {
            new["spec"]["clusterIPs"] = json!(ips);
        }
        new["spec"]["ipFamilies"] = json!(families);
    }
    errors
}

fn strings(service: &Value, key: &str) -> Vec<String> {
    let s = ServiceIps::of(service);
    let list = if key == "clusterIPs" {
        s.cluster_ips
    } else {
        s.families
    };
    list.into_iter().map(str::to_string).collect()
}

/// An update of a PreferDualStack Service that keeps its addresses and families: kube leaves
/// such a Service as it is, whatever the cluster serves now.
fn matching_prefer_dual_stack(new: &Value, old: Option<&Value>) -> bool {
    let Some(old) = old else {
        return false;
    };
    let (n, o) = (ServiceIps::of(new), ServiceIps::of(old));
    let kind = |v: &Value| {
        v.pointer("/spec/type")
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP")
            .to_string()
    };
    let prefer = |p: Option<&str>| p.is_none_or(|p| p == "PreferDualStack");
    n.policy.is_some()
        && kind(new) == kind(old)
        && matches!(
            kind(new).as_str(),
            "ClusterIP" | "NodePort" | "LoadBalancer"
        )
        && prefer(n.policy)
        && prefer(o.policy)
        && n.cluster_ips == o.cluster_ips
        && n.families == o.families
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_ip_service_gets_a_free_address_and_one_family() {
        let used: HashSet<String> = ["10.96.0.5".to_string()].into();
        let mut s = json!({"spec": {"selector": {"a": "b"}}});
        assert!(allocate(&mut s, &used, 5).is_empty());
        assert_eq!(s["spec"]["clusterIP"], "10.96.0.6");
        assert_eq!(s["spec"]["clusterIPs"], json!(["10.96.0.6"]));
        assert_eq!(s["spec"]["ipFamilies"], json!(["IPv4"]));
        assert_eq!(s["spec"]["ipFamilyPolicy"], "SingleStack");
    }

    #[test]
    fn a_headless_service_without_selector_requires_both_families() {
        let mut s = json!({"spec": {"clusterIP": "None"}});
        assert!(allocate(&mut s, &HashSet::new(), 0).is_empty());
        assert_eq!(s["spec"]["clusterIPs"], json!(["None"]));
        assert_eq!(s["spec"]["ipFamilyPolicy"], "RequireDualStack");
        assert_eq!(s["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));
    }

    #[test]
    fn external_names_get_nothing_and_updates_keep_the_allocation() {
        let mut e = json!({"spec": {"type": "ExternalName", "externalName": "a.b"}});
        assert!(allocate(&mut e, &HashSet::new(), 0).is_empty());
        assert!(e["spec"].get("clusterIP").is_none());
        let old = json!({"spec": {"clusterIP": "10.96.0.9", "clusterIPs": ["10.96.0.9"], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack"}});
        let mut new = json!({"spec": {"ports": []}});
        keep_allocated(&old, &mut new);
        assert_eq!(new["spec"]["clusterIP"], "10.96.0.9");
        assert_eq!(new["spec"]["ipFamilyPolicy"], "SingleStack");
    }

    #[test]
    fn a_headless_service_given_an_address_cannot_keep_both_families() {
        let old = json!({"spec": {"clusterIP": "None", "clusterIPs": ["None"],
            "ipFamilies": ["IPv4", "IPv6"], "ipFamilyPolicy": "RequireDualStack"}});
        let mut new = old.clone();
        new["spec"]["clusterIP"] = json!("10.0.0.99");
        new["spec"]["clusterIPs"] = json!(["10.0.0.99"]);
        let errors: Vec<String> = init_ip_families(&mut new, Some(&old))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errors,
            [
                "spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services",
                "spec.ipFamilies[1]: Invalid value: \"IPv6\": not configured on this cluster",
            ]
        );
    }

    #[test]
    fn families_are_inferred_and_the_policy_kept_across_updates() {
        let old = json!({"spec": {"clusterIP": "10.96.0.9", "clusterIPs": ["10.96.0.9"],
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "selector": {"a": "b"}}});
        let mut new = json!({"spec": {"clusterIP": "10.96.0.9", "clusterIPs": ["10.96.0.9"], "selector": {"a": "b"}}});
        assert!(init_ip_families(&mut new, Some(&old)).is_empty());
        assert_eq!(new["spec"]["ipFamilyPolicy"], "SingleStack");
        assert_eq!(new["spec"]["ipFamilies"], json!(["IPv4"]));
        let mut v6 = json!({"spec": {"clusterIP": "fd00::1", "clusterIPs": ["fd00::1"], "ipFamilyPolicy": "SingleStack"}});
        let errors: Vec<String> = init_ip_families(&mut v6, None)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errors,
            [
                "spec.clusterIPs[0]: Invalid value: [\"fd00::1\"]: IPv6 is not configured on this cluster"
            ]
        );
    }

    #[test]
    fn cluster_ips_follow_a_changed_cluster_ip() {
        let old = json!({"spec": {"clusterIP": "10.96.0.9", "clusterIPs": ["10.96.0.9"]}});
        let mut new = json!({"spec": {"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.9"]}});
        sync_cluster_ips(&old, &mut new);
        assert_eq!(new["spec"]["clusterIPs"], json!(["10.96.0.10"]));
        let mut left_out = json!({"spec": {"clusterIP": "10.96.0.9"}});
        sync_cluster_ips(&old, &mut left_out);
        assert_eq!(left_out["spec"]["clusterIPs"], json!(["10.96.0.9"]));
    }
}

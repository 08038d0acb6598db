//! What kube-apiserver's Service storage sets after field management, so no manager owns it: a
//! cluster IP allocated from the service range (single-stack IPv4 here), the IP families and
//! their policy, and on an update the allocated values an update left out.

use serde_json::{Value, json};
use std::collections::HashSet;

/// The first three octets of the service range, as kube-apiserver's default `10.96.0.0/12`
/// starts; `.0.1` is the `kubernetes` Service's own.
const RANGE_PREFIX: [u8; 2] = [10, 96];

/// The allocated fields a Service keeps across updates.
const ALLOCATED: &[&str] = &["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"];

fn is_external_name(obj: &Value) -> bool {
    obj.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName")
}

/// Fills in a new Service's cluster IP (one not in `used`, chosen from `seed`) and IP families.
pub(super) fn allocate(obj: &mut Value, used: &HashSet<String>, seed: u32) {
    if is_external_name(obj) {
        return;
    }
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let cluster_ip = match spec.get("clusterIP").and_then(Value::as_str) {
        Some(ip) if !ip.is_empty() => ip.to_string(),
        _ => {
            let ip = free_ip(used, seed);
            spec.insert("clusterIP".into(), json!(ip));
            ip
        }
    };
    if spec.get("clusterIPs").is_none_or(Value::is_null) {
        spec.insert("clusterIPs".into(), json!([cluster_ip]));
    }
    let headless_without_selector = cluster_ip == "None"
        && spec
            .get("selector")
            .and_then(Value::as_object)
            .is_none_or(|m| m.is_empty());
    if spec.get("ipFamilyPolicy").is_none_or(Value::is_null) {
        let policy = if headless_without_selector {
            "RequireDualStack"
        } else {
            "SingleStack"
        };
        spec.insert("ipFamilyPolicy".into(), json!(policy));
    }
    if spec.get("ipFamilies").is_none_or(Value::is_null) {
        let dual = spec.get("ipFamilyPolicy") == Some(&json!("RequireDualStack"));
        let families = if dual {
            json!(["IPv4", "IPv6"])
        } else {
            json!(["IPv4"])
        };
        spec.insert("ipFamilies".into(), families);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_ip_service_gets_a_free_address_and_one_family() {
        let used: HashSet<String> = ["10.96.0.5".to_string()].into();
        let mut s = json!({"spec": {"selector": {"a": "b"}}});
        allocate(&mut s, &used, 5);
        assert_eq!(s["spec"]["clusterIP"], "10.96.0.6");
        assert_eq!(s["spec"]["clusterIPs"], json!(["10.96.0.6"]));
        assert_eq!(s["spec"]["ipFamilies"], json!(["IPv4"]));
        assert_eq!(s["spec"]["ipFamilyPolicy"], "SingleStack");
    }

    #[test]
    fn a_headless_service_without_selector_requires_both_families() {
        let mut s = json!({"spec": {"clusterIP": "None"}});
        allocate(&mut s, &HashSet::new(), 0);
        assert_eq!(s["spec"]["clusterIPs"], json!(["None"]));
        assert_eq!(s["spec"]["ipFamilyPolicy"], "RequireDualStack");
        assert_eq!(s["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));
    }

    #[test]
    fn external_names_get_nothing_and_updates_keep_the_allocation() {
        let mut e = json!({"spec": {"type": "ExternalName", "externalName": "a.b"}});
        allocate(&mut e, &HashSet::new(), 0);
        assert!(e["spec"].get("clusterIP").is_none());
        let old = json!({"spec": {"clusterIP": "10.96.0.9", "clusterIPs": ["10.96.0.9"], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack"}});
        let mut new = json!({"spec": {"ports": []}});
        keep_allocated(&old, &mut new);
        assert_eq!(new["spec"]["clusterIP"], "10.96.0.9");
        assert_eq!(new["spec"]["ipFamilyPolicy"], "SingleStack");
    }
}

//! The Azure facts the simulator makes up: the URLs and version of a simulated ARO HCP cluster (the
//! ARM ids it files resources under are `crate::arm`'s).
//!
//! Everything here is pure and deterministic. Ids use the all-zero subscription and host names live
//! under the reserved `.invalid` top-level domain, so nothing the simulator writes can be mistaken for
//! (or resolve to) a real Azure resource.

use crate::arm::azure_name;
use serde_json::Value;

/// The DNS suffix of simulated clusters (`.invalid` never resolves, RFC 2606).
pub const DNS_SUFFIX: &str = "aro-hcp.azuresim.invalid";

/// The port of the simulated API server (ARO HCP serves its API on 443).
pub const API_PORT: u16 = 443;

/// OpenShift version reported when the spec names none.
pub const DEFAULT_OPENSHIFT_VERSION: &str = "4.20.0";

/// The DNS base domain of a simulated cluster: `<name>.<location>.aro-hcp.azuresim.invalid`.
pub fn base_domain(cluster: &Value) -> String {
    let location = text_at(cluster, "/spec/location").unwrap_or("nolocation");
    format!(
        "{}.{}.{DNS_SUFFIX}",
        dns_label(azure_name(cluster)),
        dns_label(location)
    )
}

/// The simulated API server URL, always with an explicit port.
pub fn api_url(cluster: &Value) -> String {
    format!("https://api.{}:{API_PORT}", base_domain(cluster))
}

/// The simulated web console URL.
pub fn console_url(cluster: &Value) -> String {
    format!(
        "https://console-openshift-console.apps.{}",
        base_domain(cluster)
    )
}

/// The OpenShift version a simulated cluster reports: the spec's `X.Y` becomes `X.Y.0`.
pub fn openshift_version(cluster: &Value) -> String {
    match text_at(cluster, "/spec/properties/version/id") {
        Some(v) if v.matches('.').count() == 1 => format!("{v}.0"),
        Some(v) => v.to_string(),
        None => DEFAULT_OPENSHIFT_VERSION.to_string(),
    }
}

/// The replicas a simulated node pool reports: `spec.properties.replicas`, else the autoscaling minimum.
pub fn node_pool_replicas(pool: &Value) -> i64 {
    let props = pool.pointer("/spec/properties");
    let at = |p: &str| props.and_then(|v| v.pointer(p)).and_then(Value::as_i64);
    at("/replicas")
        .or_else(|| at("/autoScaling/min"))
        .or_else(|| at("/autoscaling/min"))
        .unwrap_or(0)
}

use crate::object::text_at;

/// A DNS label from an arbitrary name: lower case, `[a-z0-9-]`, at most 63 characters.
fn dns_label(s: &str) -> String {
    let label: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(63)
        .collect();
    let label = label.trim_matches('-');
    if label.is_empty() {
        "x".to_string()
    } else {
        label.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::{HCP_CLUSTER, NODE_POOL};
    use serde_json::json;

    fn obj(api_version: &str, kind: &str, spec: Value) -> Value {
        json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "n1", "namespace": "ns"}, "spec": spec})
    }

    #[test]
    fn cluster_urls_carry_a_port_and_a_reserved_domain() {
        let c = obj(
            "redhatopenshift.azure.com/v1",
            HCP_CLUSTER,
            json!({"location": "eastus", "properties": {"version": {"id": "4.19"}}}),
        );
        assert_eq!(
            api_url(&c),
            "https://api.n1.eastus.aro-hcp.azuresim.invalid:443"
        );
        assert_eq!(
            console_url(&c),
            "https://console-openshift-console.apps.n1.eastus.aro-hcp.azuresim.invalid"
        );
        assert_eq!(openshift_version(&c), "4.19.0");
        let c = obj(
            "redhatopenshift.azure.com/v1",
            HCP_CLUSTER,
            json!({"azureName": "My_Cluster", "properties": {"version": {"id": "4.20.3"}}}),
        );
        assert_eq!(
            base_domain(&c),
            "my-cluster.nolocation.aro-hcp.azuresim.invalid"
        );
        assert_eq!(openshift_version(&c), "4.20.3");
    }

    #[test]
    fn node_pool_replicas_fall_back_to_the_autoscaling_minimum() {
        let p = |props: Value| obj("g/v", NODE_POOL, json!({"properties": props}));
        assert_eq!(node_pool_replicas(&p(json!({"replicas": 3}))), 3);
        assert_eq!(
            node_pool_replicas(&p(json!({"autoScaling": {"min": 2, "max": 5}}))),
            2
        );
        assert_eq!(node_pool_replicas(&p(json!({}))), 0);
    }
}

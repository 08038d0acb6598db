//! What a simulated guest cluster's API answers (pure; served by `guest`): each provisioned
//! HcpOpenShiftCluster has a guest API at `/clusters/<namespace>/<name>` on the simulator's
//! loopback listener, which its kubeconfig Secret names, with a bearer token of its own.
//!
//! It serves `apiregistration.k8s.io/v1` APIServices (list and get) and `/version`: the
//! aggregated APIServices of an OpenShift guest (`policies.md` §4) and a few local ones, all
//! `Available` unless the HcpOpenShiftCluster's annotations say otherwise:
//! - [`UNAVAILABLE_ANNOTATION`]: APIService names (comma-separated) held `Available=False`;
//! - [`MISSING_ANNOTATION`]: APIService names left out of the guest;
//! - [`READ_ERROR_ANNOTATION`]: an HTTP status code every read of the guest answers with.
//!
//! A missing or wrong token gets 401; a cluster that does not exist, or is not provisioned yet
//! (`status.properties.provisioningState` neither `Succeeded` nor `Updating`), 503 (as an unreachable API server
//! would).

use crate::object::text_at;
use serde_json::{Value, json};

/// APIService names (comma-separated) the guest reports with `Available=False`.
pub const UNAVAILABLE_ANNOTATION: &str = "aro-gitops.dev/simulate-apiservice-unavailable";
/// APIService names (comma-separated) the guest does not have.
pub const MISSING_ANNOTATION: &str = "aro-gitops.dev/simulate-apiservice-missing";
/// An HTTP status code (e.g. `500`, `403`) every read of the guest's API answers with.
pub const READ_ERROR_ANNOTATION: &str = "aro-gitops.dev/simulate-guest-api-error";

/// The path prefix of a cluster's guest API on the simulator's listener.
pub fn path_prefix(namespace: &str, name: &str) -> String {
    format!("/clusters/{namespace}/{name}")
}

/// The bearer token of the simulated guest `cluster`: fake, and its own (from its namespace, name
/// and uid), so that a kubeconfig of one cluster does not open another.
pub fn token(cluster: &Value) -> String {
    let id = format!(
        "{}/{}/{}",
        text_at(cluster, "/metadata/namespace").unwrap_or_default(),
        text_at(cluster, "/metadata/name").unwrap_or_default(),
        text_at(cluster, "/metadata/uid").unwrap_or_default()
    );
    let digest = ring::digest::digest(&ring::digest::SHA256, id.as_bytes());
    let hex: String = digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{}-{hex}", super::secret::FAKE_TOKEN)
}

/// The APIServices an OpenShift guest serves through the aggregator: (group, service namespace,
/// service name, port).
const AGGREGATED: [(&str, &str, &str, u16); 12] = [
    ("apps.openshift.io", "openshift-apiserver", "api", 443),
    (
        "authorization.openshift.io",
        "openshift-apiserver",
        "api",
        443,
    ),
    ("build.openshift.io", "openshift-apiserver", "api", 443),
    ("image.openshift.io", "openshift-apiserver", "api", 443),
    ("quota.openshift.io", "openshift-apiserver", "api", 443),
    ("route.openshift.io", "openshift-apiserver", "api", 443),
    ("security.openshift.io", "openshift-apiserver", "api", 443),
    ("template.openshift.io", "openshift-apiserver", "api", 443),
    ("project.openshift.io", "openshift-apiserver", "api", 443),
    (
        "oauth.openshift.io",
        "openshift-oauth-apiserver",
        "api",
        443,
    ),
    ("user.openshift.io", "openshift-oauth-apiserver", "api", 443),
    (
        "packages.operators.coreos.com",
        "openshift-operator-lifecycle-manager",
        "packageserver-service",
        5443,
    ),
];
/// Groups the guest's own API server serves (no Service behind them).
const LOCAL: [&str; 3] = ["", "apps", "apiregistration.k8s.io"];

fn names_in(cluster: &Value, annotation: &str) -> Vec<String> {
    cluster
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(annotation))
        .and_then(Value::as_str)
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn apiservice(group: &str, service: Option<(&str, &str, u16)>, available: bool) -> Value {
    let name = if group.is_empty() {
        "v1.".to_string()
    } else {
        format!("v1.{group}")
    };
    let condition = match (available, service) {
        (true, None) => {
            json!({"type": "Available", "status": "True", "reason": "Local", "message": "Local APIServices are always available"})
        }
        (true, Some(_)) => {
            json!({"type": "Available", "status": "True", "reason": "Passed", "message": "all checks passed"})
        }
        (false, _) => {
            json!({"type": "Available", "status": "False", "reason": "FailedDiscoveryCheck",
            "message": format!("failing or missing response from the service of {name} (held unavailable by annotation {UNAVAILABLE_ANNOTATION}; aro-gitops Azure simulator)")})
        }
    };
    let mut spec = json!({"group": group, "version": "v1", "groupPriorityMinimum": 9900, "versionPriority": 15});
    if let Some((ns, svc, port)) = service {
        spec["service"] = json!({"namespace": ns, "name": svc, "port": port});
    }
    json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"conditions": [condition]},
    })
}

/// The APIServices of the simulated guest `cluster`, by name.
pub fn apiservices(cluster: &Value) -> Vec<Value> {
    let unavailable = names_in(cluster, UNAVAILABLE_ANNOTATION);
    let missing = names_in(cluster, MISSING_ANNOTATION);
    let local = LOCAL.iter().map(|g| apiservice(g, None, true));
    let aggregated = AGGREGATED.iter().map(|(g, ns, svc, port)| {
        let name = format!("v1.{g}");
        apiservice(g, Some((ns, svc, *port)), !unavailable.contains(&name))
    });
    let mut all: Vec<Value> = local
        .chain(aggregated)
        .filter(|a| !missing.iter().any(|m| a["metadata"]["name"] == m.as_str()))
        .collect();
    all.sort_by(|a, b| {
        a["metadata"]["name"]
            .as_str()
            .cmp(&b["metadata"]["name"].as_str())
    });
    all
}

/// A `Status` failure body.
fn status(code: u16, reason: &str, message: &str) -> (u16, Value) {
    (
        code,
        json!({"apiVersion": "v1", "kind": "Status", "status": "Failure",
            "message": message, "reason": reason, "code": code}),
    )
}

/// The answer to a GET of `rest` (the path after the cluster's prefix, no leading `/`) on the
/// guest of `cluster` (`None`: no such HcpOpenShiftCluster), with the request's bearer token.
pub fn respond(cluster: Option<&Value>, bearer: Option<&str>, rest: &str) -> (u16, Value) {
    let Some(cluster) = cluster else {
        return status(
            503,
            "ServiceUnavailable",
            "no such simulated cluster (aro-gitops Azure simulator)",
        );
    };
    // Up once provisioned, and through later updates.
    let state = super::status::previous_state(cluster);
    if !matches!(state, Some("Succeeded" | "Updating")) {
        return status(
            503,
            "ServiceUnavailable",
            "the simulated cluster is not provisioned yet (aro-gitops Azure simulator)",
        );
    }
    if bearer != Some(token(cluster).as_str()) {
        return status(401, "Unauthorized", "Unauthorized");
    }
    if let Some(code) = names_in(cluster, READ_ERROR_ANNOTATION).first() {
        let code = code
            .parse::<u16>()
            .ok()
            .filter(|c| (400..600).contains(c))
            .unwrap_or(500);
        return status(
            code,
            "InternalError",
            &format!(
                "simulated failure requested by annotation {READ_ERROR_ANNOTATION} (aro-gitops Azure simulator)"
            ),
        );
    }
    let rest = rest.trim_end_matches('/');
    match rest.split('/').collect::<Vec<_>>().as_slice() {
        ["version"] => (
            200,
            json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0-aro-gitops-simulated", "platform": "linux/amd64"}),
        ),
        ["apis", "apiregistration.k8s.io", "v1", "apiservices"] => (
            200,
            json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIServiceList",
                "metadata": {"resourceVersion": "1"}, "items": apiservices(cluster)}),
        ),
        ["apis", "apiregistration.k8s.io", "v1", "apiservices", name] => {
            match apiservices(cluster)
                .into_iter()
                .find(|a| a["metadata"]["name"] == *name)
            {
                Some(a) => (200, a),
                None => status(
                    404,
                    "NotFound",
                    &format!("apiservices.apiregistration.k8s.io \"{name}\" not found"),
                ),
            }
        }
        _ => status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(annotations: Value, provisioned: bool) -> Value {
        let state = if provisioned {
            "Succeeded"
        } else {
            "Provisioning"
        };
        let ready = if provisioned { "True" } else { "False" };
        json!({"apiVersion": "redhatopenshift.azure.com/v1api20240610preview", "kind": "HcpOpenShiftCluster",
            "metadata": {"name": "c1", "namespace": "team", "uid": "u-1", "generation": 1, "annotations": annotations},
            "status": {"properties": {"provisioningState": state}, "conditions": [{"type": "Ready", "status": ready, "observedGeneration": 1}]}})
    }

    fn names(list: &Value) -> Vec<&str> {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["metadata"]["name"].as_str().unwrap())
            .collect()
    }

    const LIST: &str = "apis/apiregistration.k8s.io/v1/apiservices";

    #[test]
    fn a_provisioned_guest_lists_every_apiservice_available() {
        let c = cluster(json!({}), true);
        let (code, body) = respond(Some(&c), Some(&token(&c)), LIST);
        assert_eq!(code, 200);
        let names = names(&body);
        assert_eq!(names.len(), 15);
        assert!(names.contains(&"v1.route.openshift.io"));
        assert!(names.contains(&"v1.packages.operators.coreos.com"));
        assert!(names.contains(&"v1."));
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        for a in body["items"].as_array().unwrap() {
            assert_eq!(a["status"]["conditions"][0]["status"], "True", "{a}");
            // The typed client can read each of them.
            serde_json::from_value::<
                k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService,
            >(a.clone())
            .unwrap();
        }
        let (code, one) = respond(
            Some(&c),
            Some(&token(&c)),
            &format!("{LIST}/v1.route.openshift.io"),
        );
        assert_eq!(
            (code, one["spec"]["service"]["namespace"].as_str()),
            (200, Some("openshift-apiserver"))
        );
        assert_eq!(
            respond(Some(&c), Some(&token(&c)), &format!("{LIST}/v1.nope")).0,
            404
        );
        assert_eq!(respond(Some(&c), Some(&token(&c)), "version").0, 200);
        assert_eq!(respond(Some(&c), Some(&token(&c)), "api/v1/pods").0, 404);
    }

    #[test]
    fn annotations_hold_apiservices_unavailable_or_missing_and_fail_reads() {
        let c = cluster(
            json!({UNAVAILABLE_ANNOTATION: "v1.route.openshift.io, v1.user.openshift.io", MISSING_ANNOTATION: "v1.build.openshift.io"}),
            true,
        );
        let (_, body) = respond(Some(&c), Some(&token(&c)), LIST);
        assert!(!names(&body).contains(&"v1.build.openshift.io"));
        let unavailable: Vec<&str> = body["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["status"]["conditions"][0]["status"] == "False")
            .map(|a| a["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            unavailable,
            ["v1.route.openshift.io", "v1.user.openshift.io"]
        );
        let failing = cluster(json!({READ_ERROR_ANNOTATION: "503"}), true);
        assert_eq!(respond(Some(&failing), Some(&token(&failing)), LIST).0, 503);
        let odd = cluster(json!({READ_ERROR_ANNOTATION: "often"}), true);
        assert_eq!(respond(Some(&odd), Some(&token(&odd)), LIST).0, 500);
    }

    #[test]
    fn tokens_are_per_cluster_and_checked_and_an_unprovisioned_cluster_does_not_answer() {
        let c = cluster(json!({}), true);
        let mut other = c.clone();
        other["metadata"]["uid"] = json!("u-2");
        assert_ne!(token(&c), token(&other));
        assert!(token(&c).starts_with(super::super::secret::FAKE_TOKEN));
        assert_eq!(respond(Some(&c), None, LIST).0, 401);
        assert_eq!(respond(Some(&c), Some(&token(&other)), LIST).0, 401);
        assert_eq!(respond(None, Some(&token(&c)), LIST).0, 503);
        let pending = cluster(json!({}), false);
        assert_eq!(respond(Some(&pending), Some(&token(&pending)), LIST).0, 503);
        assert_eq!(path_prefix("team", "c1"), "/clusters/team/c1");
    }
}

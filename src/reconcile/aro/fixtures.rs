//! Test fixtures of the ARO decisions: ARO objects of the cluster `dev` in `aro-dev`, ASO
//! resources in each readiness state, the CAPI objects, and a condition assertion.

use serde_json::{Value, json};

pub const NS: &str = "aro-dev";

/// The apiVersion of an embedded kind (`aro-reconcilers.md`, "Objects and API versions").
pub fn api_of(kind: &str) -> &'static str {
    match kind {
        "ResourceGroup" => "resources.azure.com/v1api20200601",
        "VirtualNetwork" | "VirtualNetworksSubnet" | "NetworkSecurityGroup" => {
            "network.azure.com/v1api20201101"
        }
        "Vault" => "keyvault.azure.com/v1api20230701",
        "UserAssignedIdentity" => "managedidentity.azure.com/v1api20230131",
        "RoleAssignment" => "authorization.azure.com/v1api20220401",
        _ => "redhatopenshift.azure.com/v1api20240610preview",
    }
}

fn entries(resources: &[(&str, &str)]) -> Value {
    json!(
        resources
            .iter()
            .map(|(k, n)| json!({"apiVersion": api_of(k), "kind": k, "metadata": {"name": n}, "spec": {}}))
            .collect::<Vec<_>>()
    )
}

fn aro(api: &str, kind: &str, name: &str, resources: &[(&str, &str)]) -> Value {
    json!({"apiVersion": api, "kind": kind,
        "metadata": {"name": name, "namespace": NS, "labels": {"cluster.x-k8s.io/cluster-name": "dev"}},
        "spec": {"resources": entries(resources)}})
}

pub fn aro_cluster_obj(resources: &[(&str, &str)]) -> Value {
    aro(
        "infrastructure.cluster.x-k8s.io/v1beta2",
        "AROCluster",
        "dev",
        resources,
    )
}

pub fn control_plane_obj(resources: &[(&str, &str)]) -> Value {
    aro(
        "controlplane.cluster.x-k8s.io/v1beta2",
        "AROControlPlane",
        "dev",
        resources,
    )
}

pub fn machine_pool_obj(name: &str, resources: &[(&str, &str)]) -> Value {
    aro(
        "infrastructure.cluster.x-k8s.io/v1beta2",
        "AROMachinePool",
        name,
        resources,
    )
}

/// The CAPI Cluster `name`, its control plane a `cp_kind` named `dev`.
pub fn capi(name: &str, cp_kind: Option<&str>) -> Value {
    let mut c = json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AROCluster", "name": "dev"}}});
    if let Some(k) = cp_kind {
        c["spec"]["controlPlaneRef"] = json!({"kind": k, "name": "dev"});
    }
    c
}

/// The CAPI MachinePool whose infrastructure is the AROMachinePool `amp`.
pub fn capi_machine_pool_obj(name: &str, amp: &str) -> Value {
    json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachinePool",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"clusterName": "dev", "template": {"spec": {"infrastructureRef": {"kind": "AROMachinePool", "name": amp}}}}})
}

pub fn secret(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NS}})
}

/// How an ASO resource's `Ready` condition stands.
#[derive(Debug, Clone)]
pub enum Ready {
    Yes,
    /// Reconciling, no message.
    No,
    /// Ready for an older generation.
    Stale,
    /// `(severity, reason, message)`.
    With(&'static str, &'static str, &'static str),
    /// No Ready condition at all.
    Absent,
}

pub fn aso(kind: &str, name: &str, ready: Ready) -> Value {
    let cond = |status: &str, severity: &str, reason: &str, message: &str, observed: u64| json!([{"type": "Ready", "status": status, "severity": severity, "reason": reason, "message": message, "observedGeneration": observed}]);
    let conditions = match ready {
        Ready::Yes => cond("True", "", "Succeeded", "", 2),
        Ready::No => cond("False", "Info", "Reconciling", "", 2),
        Ready::Stale => cond("True", "", "Succeeded", "", 1),
        Ready::With(sev, reason, message) => cond("False", sev, reason, message, 2),
        Ready::Absent => json!([]),
    };
    json!({"apiVersion": api_of(kind), "kind": kind,
        "metadata": {"name": name, "namespace": NS, "generation": 2},
        "spec": {}, "status": {"conditions": conditions}})
}

/// `obj` with `spec.owner.name = hcp` (a node pool or ExternalAuth of that cluster).
pub fn owned_by(mut obj: Value, hcp: &str) -> Value {
    obj["spec"]["owner"] = json!({"name": hcp});
    obj
}

/// `live` plus a live copy of `desired` (with a uid).
pub fn with_owner(desired: &Value, mut live: Vec<Value>) -> Vec<Value> {
    let mut o = desired.clone();
    o["metadata"]["uid"] = json!(format!(
        "uid-{}-{}",
        desired["kind"].as_str().unwrap_or(""),
        desired["metadata"]["name"].as_str().unwrap_or("")
    ));
    live.push(o);
    live
}

/// The condition `type_` of `status`.
pub fn cond<'a>(status: &'a Value, type_: &str) -> Option<&'a Value> {
    status["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
}

/// Asserts condition `type_` of `status` is `(status, reason, message)` (`""`: no message).
pub fn assert_cond(status: &Value, type_: &str, want: &str, reason: &str, message: &str) {
    let c = cond(status, type_).unwrap_or_else(|| panic!("no {type_} in {status:#}"));
    assert_eq!(
        (
            c["status"].as_str().unwrap_or(""),
            c["reason"].as_str().unwrap_or(""),
            c["message"].as_str().unwrap_or("")
        ),
        (want, reason, message),
        "{type_} in {status:#}"
    );
}

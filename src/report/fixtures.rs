//! Test fixtures: the live objects of the example `dev` cluster (namespace `aro-dev`) at each point of
//! its way along the dependency chain, and unit outcomes around them.

use super::model::{AzureMode, ObjectAction, ObjectOutcome, UnitError, UnitOutcome};
use crate::object::ObjectKey;
use serde_json::{Value, json};
use std::path::PathBuf;

pub const NS: &str = "aro-dev";
pub const REVISION: &str = "4ce1881c05da374ce1881c05da374ce1881c05da";
/// A value that must never appear in a report.
pub const SECRET_VALUE: &str = "c3VwZXItc2VjcmV0LWt1YmVjb25maWc=";

const ASO_NETWORK: &str = "network.azure.com/v1api20201101";
const ASO_ARO: &str = "redhatopenshift.azure.com/v1api20240610preview";

pub fn key(api_version: &str, kind: &str, name: &str) -> ObjectKey {
    let (group, version) = crate::object::split_api_version(api_version);
    ObjectKey {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        namespace: Some(NS.into()),
        name: name.into(),
    }
}

pub fn cluster_key() -> ObjectKey {
    key("cluster.x-k8s.io/v1beta2", "Cluster", "dev")
}

/// ASO's `Ready` condition, True, for generation 1.
pub fn ready() -> Value {
    json!([{"type": "Ready", "status": "True", "severity": "", "reason": "Succeeded",
            "observedGeneration": 1, "lastTransitionTime": "2026-01-01T00:00:00Z"}])
}

/// ASO's `Ready` condition, False, for generation 1.
pub fn not_ready(reason: &str, severity: &str, message: &str) -> Value {
    json!([{"type": "Ready", "status": "False", "severity": severity, "reason": reason,
            "message": message, "observedGeneration": 1,
            "lastTransitionTime": "2026-01-01T00:00:00Z"}])
}

fn condition(type_: &str, status: bool, reason: &str, message: &str) -> Value {
    json!({"type": type_, "status": if status { "True" } else { "False" }, "reason": reason,
           "message": message, "lastTransitionTime": "2026-01-01T00:00:00Z"})
}

/// A live ASO resource of generation 1, controlled by `owner`.
pub fn aso(api_version: &str, kind: &str, name: &str, owner: (&str, &str), conds: Value) -> Value {
    json!({
        "apiVersion": api_version, "kind": kind,
        "metadata": {"name": name, "namespace": NS, "generation": 1, "uid": format!("uid-{name}"),
                     "ownerReferences": [{"apiVersion": "v1", "kind": owner.0, "name": owner.1,
                                          "uid": "uid-owner", "controller": true}]},
        "spec": {"azureName": name},
        "status": {"conditions": conds}
    })
}

fn capi_cluster() -> Value {
    json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
           "metadata": {"name": "dev", "namespace": NS},
           "spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AROCluster", "name": "dev"},
                    "controlPlaneRef": {"apiGroup": "controlplane.cluster.x-k8s.io", "kind": "AROControlPlane", "name": "dev"}}})
}

fn infra_entries() -> Value {
    json!([
        {"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup", "metadata": {"name": "aro-dev-rg"}, "spec": {"location": "eastus"}},
        {"apiVersion": ASO_NETWORK, "kind": "VirtualNetwork", "metadata": {"name": "aro-dev-vnet"}, "spec": {"owner": {"name": "aro-dev-rg"}}},
        {"apiVersion": ASO_NETWORK, "kind": "VirtualNetworksSubnet", "metadata": {"name": "aro-dev-subnet"}, "spec": {"owner": {"name": "aro-dev-vnet"}}}
    ])
}

fn aro_cluster(status: Value) -> Value {
    json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AROCluster",
           "metadata": {"name": "dev", "namespace": NS, "labels": {"cluster.x-k8s.io/cluster-name": "dev"}},
           "spec": {"resources": infra_entries()}, "status": status})
}

fn control_plane(status: Value) -> Value {
    json!({"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "AROControlPlane",
           "metadata": {"name": "dev", "namespace": NS, "labels": {"cluster.x-k8s.io/cluster-name": "dev"}},
           "spec": {"resources": [
               {"apiVersion": ASO_ARO, "kind": "HcpOpenShiftCluster", "metadata": {"name": "aro-dev"},
                "spec": {"owner": {"name": "aro-dev-rg"},
                         "operatorSpec": {"secrets": {"adminCredentials": {"name": "dev-kubeconfig", "key": "value"}}}}},
               {"apiVersion": ASO_ARO, "kind": "HcpOpenShiftClustersExternalAuth", "metadata": {"name": "aro-dev-entra"},
                "spec": {"owner": {"name": "aro-dev"}}}
           ]},
           "status": status})
}

/// The kubeconfig Secret, with data (which a report must never show).
pub fn kubeconfig_secret() -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "dev-kubeconfig", "namespace": NS},
           "type": "Opaque", "data": {"value": SECRET_VALUE}})
}

fn machine_pools() -> Vec<Value> {
    vec![
        json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachinePool",
               "metadata": {"name": "dev-workers", "namespace": NS},
               "spec": {"clusterName": "dev", "template": {"spec": {"infrastructureRef": {"kind": "AROMachinePool", "name": "dev-workers"}}}}}),
        json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AROMachinePool",
               "metadata": {"name": "dev-workers", "namespace": NS},
               "spec": {"resources": [{"apiVersion": ASO_ARO, "kind": "HcpOpenShiftClustersNodePool",
                                       "metadata": {"name": "aro-dev-workers"}, "spec": {"owner": {"name": "aro-dev"}}}]}}),
    ]
}

pub fn node_pool(conds: Value) -> Value {
    let mut np = aso(
        ASO_ARO,
        "HcpOpenShiftClustersNodePool",
        "aro-dev-workers",
        ("AROMachinePool", "dev-workers"),
        conds,
    );
    np["spec"]["owner"] = json!({"name": "aro-dev"});
    np
}

pub fn external_auth(conds: Value) -> Value {
    let mut ea = aso(
        ASO_ARO,
        "HcpOpenShiftClustersExternalAuth",
        "aro-dev-entra",
        ("AROControlPlane", "dev"),
        conds,
    );
    ea["spec"]["owner"] = json!({"name": "aro-dev"});
    ea
}

pub fn hcp(conds: Value) -> Value {
    let mut h = aso(
        ASO_ARO,
        "HcpOpenShiftCluster",
        "aro-dev",
        ("AROControlPlane", "dev"),
        conds,
    );
    h["spec"]["operatorSpec"] =
        json!({"secrets": {"adminCredentials": {"name": "dev-kubeconfig", "key": "value"}}});
    h
}

pub fn infra(vnet: Value) -> Vec<Value> {
    let owner = ("AROCluster", "dev");
    vec![
        aso(
            "resources.azure.com/v1api20200601",
            "ResourceGroup",
            "aro-dev-rg",
            owner,
            ready(),
        ),
        aso(ASO_NETWORK, "VirtualNetwork", "aro-dev-vnet", owner, vnet),
        aso(
            ASO_NETWORK,
            "VirtualNetworksSubnet",
            "aro-dev-subnet",
            owner,
            ready(),
        ),
    ]
}

/// The live objects of `dev` when it is at `step` of the chain (every earlier step done); 11 means
/// every step done.
pub fn live_at(step: u32) -> Vec<Value> {
    let mut live = vec![capi_cluster()];
    let resources_ready = condition(
        "ResourcesReady",
        step > 2,
        if step > 2 {
            "InfrastructureReady"
        } else {
            "ProvisioningInfrastructure"
        },
        if step > 2 {
            "All 3 infrastructure resources are ready"
        } else {
            "Waiting for infrastructure resources: 2/3 ready"
        },
    );
    let network = condition(
        "NetworkInfrastructureReady",
        step > 6,
        if step > 6 {
            "Succeeded"
        } else {
            "ExternallyManagedControlPlane"
        },
        if step > 6 {
            ""
        } else {
            "Waiting for the Control Plane to get ready"
        },
    );
    live.push(aro_cluster(json!({
        "ready": step > 7,
        "initialization": {"provisioned": step > 8},
        "conditions": [resources_ready, network]
    })));
    let hcp_ready = match step {
        ..=3 => condition(
            "HcpClusterReady",
            false,
            "HcpOpenShiftClusterNotFound",
            "HcpOpenShiftCluster aro-dev not found",
        ),
        4 => condition(
            "HcpClusterReady",
            false,
            "Provisioning",
            "HcpOpenShiftCluster is not yet ready",
        ),
        _ => condition("HcpClusterReady", true, "Succeeded", ""),
    };
    let external_auth_ready = if step > 10 {
        condition("ExternalAuthReady", true, "Succeeded", "")
    } else {
        condition(
            "ExternalAuthReady",
            false,
            "WaitingForNodePool",
            "ExternalAuth creation deferred until at least one node pool is ready",
        )
    };
    live.push(control_plane(
        json!({"ready": step > 6, "conditions": [hcp_ready, external_auth_ready]}),
    ));
    match step {
        1 => live.push(infra(ready()).remove(0)),
        2 => live.extend(infra(not_ready(
            "Reconciling",
            "Info",
            "The resource is being reconciled",
        ))),
        _ => live.extend(infra(ready())),
    }
    if step >= 4 {
        live.push(hcp(if step == 4 {
            not_ready("Reconciling", "Info", "Creating the cluster")
        } else {
            ready()
        }));
    }
    if step >= 6 {
        live.push(kubeconfig_secret());
    }
    live.extend(machine_pools());
    if step >= 9 {
        live.push(node_pool(if step == 9 {
            not_ready("Reconciling", "Info", "Creating node pool")
        } else {
            ready()
        }));
    }
    if step >= 11 {
        live.push(external_auth(ready()));
    }
    live
}

/// An outcome for `dev` with the live objects at `step`.
pub fn outcome_at(step: u32) -> UnitOutcome {
    let infra_key =
        |kind: &str, name: &str| key("infrastructure.cluster.x-k8s.io/v1beta2", kind, name);
    UnitOutcome {
        rendered_at: None,
        held: None,
        unit: "clusters/dev".into(),
        cluster: Some(cluster_key()),
        revision: REVISION.into(),
        stale_source: None,
        azure: AzureMode::Simulated,
        objects: vec![
            ObjectOutcome {
                key: key(
                    "infrastructure.cluster.x-k8s.io/v1beta2",
                    "AROMachinePool",
                    "dev-workers",
                ),
                action: ObjectAction::Unchanged,
                ready: step > 10,
                reason: None,
                message: None,
            },
            ObjectOutcome {
                key: key("v1", "Namespace", "aro-dev"),
                action: ObjectAction::Unchanged,
                ready: true,
                reason: None,
                message: None,
            },
            ObjectOutcome {
                key: infra_key("AROCluster", "dev"),
                action: ObjectAction::Updated,
                ready: step > 8,
                reason: (step <= 2).then(|| "ProvisioningInfrastructure".into()),
                message: (step <= 2)
                    .then(|| "Waiting for infrastructure resources: 2/3 ready".into()),
            },
            ObjectOutcome {
                key: cluster_key(),
                action: ObjectAction::Created,
                ready: step > 8,
                reason: None,
                message: None,
            },
        ],
        errors: Vec::new(),
        standing: crate::report::Standing::of(&live_at(step), Some(&cluster_key())),
    }
}

/// An outcome with an error and a failed and a blocked object.
pub fn troubled_outcome() -> UnitOutcome {
    let mut outcome = outcome_at(2);
    outcome.objects.push(ObjectOutcome {
        key: key(
            "controlplane.cluster.x-k8s.io/v1beta2",
            "AROControlPlane",
            "dev",
        ),
        action: ObjectAction::Blocked {
            on: vec![
                key(
                    "infrastructure.cluster.x-k8s.io/v1beta2",
                    "AROCluster",
                    "dev",
                ),
                key(
                    "infrastructure.cluster.x-k8s.io/v1beta2",
                    "AROCluster",
                    "dev",
                ),
            ],
        },
        ready: false,
        reason: None,
        message: None,
    });
    outcome.objects.push(ObjectOutcome {
        key: key("cluster.x-k8s.io/v1beta2", "MachinePool", "dev-workers"),
        action: ObjectAction::Failed,
        ready: false,
        reason: Some("Invalid".into()),
        message: Some("spec.replicas: must be | at most <10> *now*".into()),
    });
    outcome.errors.push(UnitError {
        object: Some(key("cluster.x-k8s.io/v1beta2", "MachinePool", "dev-workers")),
        file: Some(PathBuf::from("clusters/dev/machinepools.yaml")),
        message: "MachinePool.cluster.x-k8s.io \"dev-workers\" is invalid: spec.replicas: Invalid value: -1".into(),
        ..Default::default()
    });
    outcome
}

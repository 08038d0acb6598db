//! Objects the validation tests start from: one valid object of each kind, to be broken per test.

use super::*;
use serde_json::json;
use std::path::PathBuf;

pub(super) fn sourced(file: &str, object: Value) -> SourcedObject {
    SourcedObject {
        object,
        origin: Origin {
            file: PathBuf::from(file),
            document: 0,
        },
    }
}

/// The messages of validating `objects` given as (file, object). The fixtures are objects out of
/// a unit: their references to the rest of it (subnet, NSG, identities) are not resolved here
/// (`aro::references` has its own tests, over a whole unit).
pub(super) fn messages(objects: Vec<(&str, Value)>) -> Vec<String> {
    let objects: Vec<SourcedObject> = objects.into_iter().map(|(f, o)| sourced(f, o)).collect();
    validate(&objects)
        .iter()
        .map(ToString::to_string)
        .filter(|m| !m.contains(" is not declared: a reference names a resource of the unit"))
        .collect()
}

pub(super) fn one(object: Value) -> Vec<String> {
    messages(vec![("f.yaml", object)])
}

pub(super) fn hcp_cluster() -> Value {
    json!({
        "apiVersion": "redhatopenshift.azure.com/v1api20240610preview",
        "kind": "HcpOpenShiftCluster",
        "metadata": {"name": "dev", "namespace": "aro-dev"},
        "spec": {
            "azureName": "dev",
            "owner": {"name": "dev-rg"},
            "identity": {"type": "UserAssigned", "userAssignedIdentities": own_identities()},
            "location": "eastus",
            "properties": {
                "version": {"id": "4.20", "channelGroup": "stable"},
                "network": {"machineCidr": "10.0.0.0/16", "podCidr": "10.128.0.0/14", "serviceCidr": "172.30.0.0/16", "hostPrefix": 23},
                "platform": {
                    "subnetReference": {"group": "network.azure.com", "kind": "VirtualNetworksSubnet", "name": "dev-subnet"},
                    "networkSecurityGroupReference": {"group": "network.azure.com", "kind": "NetworkSecurityGroup", "name": "dev-nsg"},
                    "operatorsAuthentication": operators_authentication()
                },
                "etcd": {"dataEncryption": {"keyManagementMode": "CustomerManaged", "customerManaged": {
                    "encryptionType": "KMS",
                    "kms": {"activeKey": {"name": "etcd-key", "vaultName": "dev-kv", "version": "0123abcd"}}}}}
            },
            "operatorSpec": {"secrets": {"adminCredentials": {"name": "dev-kubeconfig", "key": "value"}}}
        }
    })
}

/// The ARM id of the identity `name` (outside the unit, so no role assignment of the unit is due).
fn identity_id(name: &str) -> Value {
    json!({"armId": format!("/subscriptions/00000000-0000-4000-8000-000000000001/resourceGroups/dev-rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/{name}")})
}

/// Every identity OpenShift 4.20 requires, by ARM id.
fn operators_authentication() -> Value {
    let required = aro_identities::required("4.20").unwrap();
    let map = |plane| -> serde_json::Map<String, Value> {
        required
            .iter()
            .filter(|r| r.plane == plane)
            .map(|r| {
                (
                    r.operator.clone(),
                    identity_id(&format!("dev-{}", r.operator)),
                )
            })
            .collect()
    };
    json!({"userAssignedIdentities": {
        "controlPlaneOperatorsReferences": map(aro_identities::Plane::ControlPlane),
        "dataPlaneOperatorsReferences": map(aro_identities::Plane::DataPlane),
        "serviceManagedIdentityReference": identity_id("dev-service")}})
}

/// The cluster's own identities: the control plane operators' and the service managed identity.
fn own_identities() -> Value {
    let required = aro_identities::required("4.20").unwrap();
    let own: Vec<Value> = required
        .iter()
        .filter(|r| r.plane == aro_identities::Plane::ControlPlane)
        .map(|r| json!({"reference": identity_id(&format!("dev-{}", r.operator))}))
        .chain([json!({"reference": identity_id("dev-service")})])
        .collect();
    Value::Array(own)
}

pub(super) fn control_plane(resources: Value) -> Value {
    json!({
        "apiVersion": "controlplane.cluster.x-k8s.io/v1beta2",
        "kind": "AROControlPlane",
        "metadata": {"name": "dev", "namespace": "aro-dev"},
        "spec": {"subscriptionID": "00000000-0000-4000-8000-000000000001", "azureEnvironment": "AzurePublicCloud", "resources": resources}
    })
}

pub(super) fn node_pool(name: &str) -> Value {
    json!({
        "apiVersion": "redhatopenshift.azure.com/v1api20240610preview",
        "kind": "HcpOpenShiftClustersNodePool",
        "metadata": {"name": name},
        "spec": {"azureName": name, "owner": {"name": "dev"}, "location": "eastus", "properties": {
            "version": {"id": "4.20"}, "replicas": 2,
            "platform": {"vmSize": "Standard_D4s_v3", "availabilityZone": "1", "osDisk": {"sizeGiB": 128, "diskStorageAccountType": "Premium_LRS"}}}}
    })
}

pub(super) fn machine_pool(name: &str, resources: Value) -> Value {
    json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
        "kind": "AROMachinePool",
        "metadata": {"name": name, "namespace": "aro-dev"},
        "spec": {"resources": resources}
    })
}

pub(super) fn vault(annotations: Value) -> Value {
    json!({
        "apiVersion": "keyvault.azure.com/v1api20230701",
        "kind": "Vault",
        "metadata": {"name": "dev-kv", "annotations": annotations},
        "spec": {"azureName": "dev-kv", "owner": {"name": "dev-rg"}, "location": "eastus",
                 "properties": {"sku": {"family": "A", "name": "standard"}}}
    })
}

pub(super) fn aro_cluster(resources: Value) -> Value {
    json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
        "kind": "AROCluster",
        "metadata": {"name": "dev", "namespace": "aro-dev"},
        "spec": {"resources": resources}
    })
}

pub(super) fn identity(spec: Value) -> Value {
    json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "AzureClusterIdentity",
           "metadata": {"name": "aro-identity", "namespace": "aro-dev"}, "spec": spec})
}

pub(super) fn policy(requirements: Value) -> Value {
    json!({"apiVersion": "karpenter.hypershift.openshift.io/v1beta1", "kind": "AutoNodePolicy",
           "metadata": {"name": "default", "namespace": "aro-dev"},
           "spec": {"nodePoolDefaults": {"requirements": requirements},
                    "azureNodeClassDefaults": {"rootVolume": {"volumeSize": "128Gi", "volumeType": "Premium_LRS", "encrypted": true}}}})
}

//! A small, complete ARO unit (a cluster in namespace aro-dev) for the checks' tests, to be broken
//! per test: [0] Cluster, [1] AROCluster (0 ResourceGroup, 1 VirtualNetwork, 2 NSG, 3 subnet,
//! 4 and 5 UserAssignedIdentities), [2] AROControlPlane (0 HcpOpenShiftCluster), [3] MachinePool,
//! [4] AROMachinePool (0 node pool), [5] AutoNodePolicy, [6] AzureClusterIdentity.

use serde_json::{Value, json};

fn uai(name: &str) -> Value {
    json!({"apiVersion": "managedidentity.azure.com/v1api20230131", "kind": "UserAssignedIdentity",
        "metadata": {"name": name}, "spec": {"owner": {"name": "aro-dev-rg"}, "location": "eastus"}})
}

fn reference(group: &str, kind: &str, name: &str) -> Value {
    json!({"group": group, "kind": kind, "name": name})
}

pub fn unit() -> Vec<Value> {
    let meta = |name: &str| json!({"name": name, "namespace": "aro-dev", "labels": {"cluster.x-k8s.io/cluster-name": "dev"}});
    let cp = reference(
        "managedidentity.azure.com",
        "UserAssignedIdentity",
        "aro-dev-cp",
    );
    let service = reference(
        "managedidentity.azure.com",
        "UserAssignedIdentity",
        "aro-dev-service",
    );
    let subnet = reference(
        "network.azure.com",
        "VirtualNetworksSubnet",
        "aro-dev-subnet",
    );
    vec![
        json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": meta("dev"),
            "spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AROCluster", "name": "dev"},
                     "controlPlaneRef": {"apiGroup": "controlplane.cluster.x-k8s.io", "kind": "AROControlPlane", "name": "dev"}}}),
        json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AROCluster", "metadata": meta("dev"),
        "spec": {"resources": [
            {"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup",
             "metadata": {"name": "aro-dev-rg"}, "spec": {"location": "eastus"}},
            {"apiVersion": "network.azure.com/v1api20201101", "kind": "VirtualNetwork",
             "metadata": {"name": "aro-dev-vnet"}, "spec": {"owner": {"name": "aro-dev-rg"}, "location": "eastus",
                "addressSpace": {"addressPrefixes": ["10.10.0.0/16"]}}},
            {"apiVersion": "network.azure.com/v1api20201101", "kind": "NetworkSecurityGroup",
             "metadata": {"name": "aro-dev-nsg"}, "spec": {"owner": {"name": "aro-dev-rg"}, "location": "eastus"}},
            {"apiVersion": "network.azure.com/v1api20201101", "kind": "VirtualNetworksSubnet",
             "metadata": {"name": "aro-dev-subnet"}, "spec": {"owner": {"name": "aro-dev-vnet"}, "addressPrefix": "10.10.0.0/24",
                "networkSecurityGroup": {"reference": reference("network.azure.com", "NetworkSecurityGroup", "aro-dev-nsg")}}},
            uai("aro-dev-cp"),
            uai("aro-dev-service"),
        ]}}),
        json!({"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "AROControlPlane", "metadata": meta("dev"),
            "spec": {"identityRef": {"kind": "AzureClusterIdentity", "name": "aro-identity"}, "resources": [
                {"apiVersion": "redhatopenshift.azure.com/v1api20240610preview", "kind": "HcpOpenShiftCluster",
                 "metadata": {"name": "aro-dev"}, "spec": {"owner": {"name": "aro-dev-rg"}, "location": "eastus",
                    "identity": {"type": "UserAssigned", "userAssignedIdentities": [{"reference": cp.clone()}]},
                    "properties": {
                        "version": {"id": "4.20", "channelGroup": "stable"},
                        "network": {"machineCidr": "10.10.0.0/16", "podCidr": "10.128.0.0/14", "serviceCidr": "172.30.0.0/16"},
                        "platform": {"managedResourceGroup": "aro-dev-managed-rg", "subnetReference": subnet.clone(),
                            "networkSecurityGroupReference": reference("network.azure.com", "NetworkSecurityGroup", "aro-dev-nsg"),
                            "operatorsAuthentication": {"userAssignedIdentities": {
                                "controlPlaneOperatorsReferences": {"control-plane": cp},
                                "serviceManagedIdentityReference": service}}}}}}]}}),
        json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachinePool", "metadata": meta("dev-workers"),
            "spec": {"clusterName": "dev", "template": {"spec": {"clusterName": "dev",
                "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AROMachinePool", "name": "dev-workers"}}}}}),
        json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AROMachinePool", "metadata": meta("dev-workers"),
            "spec": {"resources": [
                {"apiVersion": "redhatopenshift.azure.com/v1api20240610preview", "kind": "HcpOpenShiftClustersNodePool",
                 "metadata": {"name": "aro-dev-workers"}, "spec": {"owner": {"name": "aro-dev"}, "location": "eastus",
                    "properties": {"version": {"id": "4.20", "channelGroup": "stable"},
                        "platform": {"vmSize": "Standard_D4s_v3", "subnetReference": subnet}}}}]}}),
        json!({"apiVersion": "karpenter.hypershift.openshift.io/v1beta1", "kind": "AutoNodePolicy",
            "metadata": {"name": "default", "namespace": "aro-dev"},
            "spec": {"nodePoolDefaults": {"requirements": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["Standard_D4s_v3", "Standard_D8s_v3"]}]}}}),
        json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "AzureClusterIdentity",
            "metadata": {"name": "aro-identity", "namespace": "aro-dev"},
            "spec": {"type": "WorkloadIdentity", "clientID": "6b8d0f2a-4c6e-4a8b-9c1d-3e5f7a9b1c2d",
                     "tenantID": "3e5a7c9d-1b2f-4a6c-8d0e-2f4a6c8e0b13"}}),
    ]
}

/// Sets the string at `pointer` of the first object of `kind`.
pub fn set(objects: &mut [Value], kind: &str, pointer: &str, value: &str) {
    let object = objects
        .iter_mut()
        .find(|o| o["kind"] == kind)
        .expect("an object of the kind");
    *object.pointer_mut(pointer).expect("the field") = json!(value);
}

/// The problems of `objects`, each as `Kind: message`.
pub fn messages(objects: Vec<Value>) -> Vec<String> {
    let refs: Vec<&Value> = objects.iter().collect();
    super::problems(&refs)
        .into_iter()
        .map(|p| {
            format!(
                "{}: {}",
                objects[p.object]["kind"].as_str().unwrap_or("?"),
                p.message
            )
        })
        .collect()
}

//! The objects of one synthetic ARO HCP cluster, shaped like `examples-repo/clusters/<name>/`: a Cluster,
//! its AROCluster and AROControlPlane embedding ASO resources, and two MachinePool + AROMachinePool pairs.
//! Everything cluster-specific comes from a [`Spec`]; the same builder makes the kustomize template (a
//! spec named `cluster`) and each cluster's final objects, so patches can be computed as their difference.

use aro_gitops::validate::aro_identities::{self, Plane, Required, Scope};
use serde_json::{Value, json};

/// What differs between environments (the per-environment kustomize components carry these).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    pub env: &'static str,
    pub label: &'static str,
    pub channel: &'static str,
    /// API server visibility of the control plane.
    pub visibility: &'static str,
    pub workers_vm: &'static str,
    pub workers_min: u32,
    pub workers_max: u32,
    pub infra_vm: &'static str,
    pub infra_replicas: u32,
    /// Availability zone of the worker pool, when pinned.
    pub zone: Option<&'static str>,
}

pub const PROFILES: [Profile; 3] = [
    Profile {
        env: "dev",
        label: "development",
        channel: "candidate",
        visibility: "Public",
        workers_vm: "Standard_D4s_v3",
        workers_min: 2,
        workers_max: 4,
        infra_vm: "Standard_D8s_v3",
        infra_replicas: 2,
        zone: None,
    },
    Profile {
        env: "staging",
        label: "staging",
        channel: "fast",
        visibility: "Public",
        workers_vm: "Standard_D8s_v3",
        workers_min: 2,
        workers_max: 6,
        infra_vm: "Standard_D8s_v3",
        infra_replicas: 2,
        zone: Some("2"),
    },
    Profile {
        env: "prod",
        label: "production",
        channel: "stable",
        visibility: "Private",
        workers_vm: "Standard_D8s_v3",
        workers_min: 3,
        workers_max: 10,
        infra_vm: "Standard_E8s_v3",
        infra_replicas: 3,
        zone: Some("1"),
    },
];

/// One cluster: everything its objects are made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub name: String,
    pub profile: Profile,
    pub subscription: String,
    pub location: &'static str,
    /// `10.a.b.0/24` network.
    pub cidr: (u8, u8),
    pub team: String,
    /// The shared identity (in [`crate::identities::NAMESPACE`]) its AROControlPlane names
    /// (`--identities`); else the per-namespace `aro-identity`.
    pub identity: Option<String>,
    /// `--kms`: the etcd encryption key is made by the agent (no version in git; needs `identity`).
    pub agent_key: bool,
}

pub const TENANT: &str = "3e5a7c9d-1b2f-4a6c-8d0e-2f4a6c8e0b13";

/// The objects of the cluster, in the order they are written: Cluster, AROCluster, AROControlPlane,
/// workers (MachinePool, AROMachinePool), infra (MachinePool, AROMachinePool).
pub fn cluster_objects(s: &Spec) -> Vec<Value> {
    let mut objects = vec![
        cluster(s),
        aro_cluster(s),
        aro_control_plane(s),
        machine_pool(s, "workers", None),
        aro_machine_pool(s, "workers"),
        machine_pool(s, "infra", Some(s.profile.infra_replicas)),
        aro_machine_pool(s, "infra"),
    ];
    // CAPZ's AROCluster has no `identityRef` (nor `subscriptionID`): the cluster's identity and
    // subscription are its AROControlPlane's.
    objects[2]["spec"]["identityRef"] = match &s.identity {
        Some(name) => json!({"kind": "AzureClusterIdentity", "name": name,
            "namespace": crate::identities::NAMESPACE}),
        None => json!({"kind": "AzureClusterIdentity", "name": "aro-identity"}),
    };
    objects
}

fn meta(name: &str, cluster: &str) -> Value {
    json!({"name": name, "labels": {"cluster.x-k8s.io/cluster-name": cluster}})
}

fn cluster(s: &Spec) -> Value {
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Cluster",
        "metadata": meta(&s.name, &s.name),
        "spec": {
            "clusterNetwork": {
                "pods": {"cidrBlocks": ["10.128.0.0/14"]},
                "services": {"cidrBlocks": ["172.30.0.0/16"]}
            },
            "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AROCluster", "name": s.name},
            "controlPlaneRef": {"apiGroup": "controlplane.cluster.x-k8s.io", "kind": "AROControlPlane", "name": s.name}
        }
    })
}

fn azure(s: &Spec, api_version: &str, kind: &str, name: &str, owner: &str, extra: Value) -> Value {
    let mut spec = json!({"azureName": name, "owner": {"name": owner}, "location": s.location});
    if let (Value::Object(spec), Value::Object(extra)) = (&mut spec, extra) {
        spec.extend(extra);
    }
    json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, "spec": spec})
}

/// The operator identities (and their roles) the clusters' OpenShift version requires, from the
/// project's table (`src/validate/aro_identities.yaml`): what `validate` checks them against.
const OPENSHIFT: &str = "4.20";

fn required() -> Vec<Required> {
    aro_identities::required(OPENSHIFT).expect("the table has a role set for the fleet's version")
}

/// The name of the UserAssignedIdentity of a required identity: `<p>-cp-<operator>`,
/// `<p>-dp-<operator>`, `<p>-service`.
fn identity_name(p: &str, r: &Required) -> String {
    match r.plane {
        Plane::ControlPlane => format!("{p}-cp-{}", r.operator),
        Plane::DataPlane => format!("{p}-dp-{}", r.operator),
        Plane::Service => format!("{p}-service"),
    }
}

/// The RoleAssignments that give each identity its role on its scopes, owned by the scope; the
/// principal is the ConfigMap the identity exports (named as the identity).
fn role_assignments(s: &Spec) -> Vec<Value> {
    let p = prefix(s);
    let mut out = Vec::new();
    for r in required() {
        let identity = identity_name(&p, &r);
        for scope in &r.scopes {
            let (group, short, owner) = match scope {
                Scope::Vnet => ("network.azure.com", "vnet", format!("{p}-vnet")),
                Scope::Subnet => ("network.azure.com", "subnet", format!("{p}-subnet")),
                Scope::Nsg => ("network.azure.com", "nsg", format!("{p}-nsg")),
                Scope::KeyVault => ("keyvault.azure.com", "kv", vault(s)),
            };
            let role = format!(
                "/subscriptions/{}/providers/Microsoft.Authorization/roleDefinitions/{}",
                s.subscription, r.role.id
            );
            let short_identity = identity.strip_prefix(&format!("{p}-")).unwrap_or(&identity);
            out.push(json!({
                "apiVersion": "authorization.azure.com/v1api20220401",
                "kind": "RoleAssignment",
                "metadata": {"name": format!("{p}-ra-{short_identity}-{short}")},
                "spec": {
                    "owner": {"group": group, "kind": scope.kind(), "name": owner},
                    "principalIdFromConfig": {"name": identity, "key": "principalId"},
                    "principalType": "ServicePrincipal",
                    "roleDefinitionReference": {"armId": role}
                }
            }));
        }
    }
    out
}

fn prefix(s: &Spec) -> String {
    format!("aro-{}", s.name)
}

fn vault(s: &Spec) -> String {
    format!("arogitops-{}-kv", s.name)
}

fn identity_ref(name: String) -> Value {
    json!({"group": "managedidentity.azure.com", "kind": "UserAssignedIdentity", "name": name})
}

fn aro_cluster(s: &Spec) -> Value {
    let p = prefix(s);
    let rg = format!("{p}-rg");
    let (a, b) = s.cidr;
    let mut resources = vec![
        json!({"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup",
               "metadata": {"name": rg}, "spec": {"azureName": rg, "location": s.location}}),
        azure(
            s,
            "network.azure.com/v1api20201101",
            "VirtualNetwork",
            &format!("{p}-vnet"),
            &rg,
            json!({"addressSpace": {"addressPrefixes": [format!("10.{a}.{b}.0/24")]}}),
        ),
        azure(
            s,
            "network.azure.com/v1api20201101",
            "NetworkSecurityGroup",
            &format!("{p}-nsg"),
            &rg,
            json!({}),
        ),
        json!({"apiVersion": "network.azure.com/v1api20201101", "kind": "VirtualNetworksSubnet",
               "metadata": {"name": format!("{p}-subnet")},
               "spec": {"azureName": format!("{p}-subnet"), "owner": {"name": format!("{p}-vnet")},
                        "addressPrefix": format!("10.{a}.{b}.0/25"),
                        "networkSecurityGroup": {"reference": {"group": "network.azure.com",
                            "kind": "NetworkSecurityGroup", "name": format!("{p}-nsg")}}}}),
        azure(
            s,
            "keyvault.azure.com/v1api20230701",
            "Vault",
            &vault(s),
            &rg,
            json!({"properties": {
            "tenantId": TENANT, "sku": {"family": "A", "name": "standard"},
            "enableRbacAuthorization": true, "enableSoftDelete": true, "enablePurgeProtection": true}}),
        ),
    ];
    for r in required() {
        let name = identity_name(&p, &r);
        let export = json!({"operatorSpec": {"configMaps": {
            "principalId": {"name": name, "key": "principalId"}}}});
        resources.push(azure(
            s,
            "managedidentity.azure.com/v1api20230131",
            "UserAssignedIdentity",
            &name,
            &rg,
            export,
        ));
    }
    resources.extend(role_assignments(s));
    json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
        "kind": "AROCluster",
        "metadata": meta(&s.name, &s.name),
        "spec": {"resources": resources}
    })
}

/// The etcd encryption of the cluster: with an `identityRef` on the control plane (always, here),
/// customer-managed KMS means the agent gets or creates the key (`--kms`: the cluster's own Vault,
/// no version in git); otherwise platform-managed.
fn etcd(s: &Spec) -> Value {
    if s.agent_key {
        json!({"dataEncryption": {"keyManagementMode": "CustomerManaged", "customerManaged": {
            "encryptionType": "KMS", "kms": {"activeKey": {
                "name": "etcd-data-kms-encryption-key", "vaultName": vault(s)}}}}})
    } else {
        json!({"dataEncryption": {"keyManagementMode": "PlatformManaged"}})
    }
}

fn aro_control_plane(s: &Spec) -> Value {
    let p = prefix(s);
    let (a, b) = s.cidr;
    let required = required();
    let refs = |plane: Plane| -> serde_json::Map<String, Value> {
        required
            .iter()
            .filter(|r| r.plane == plane)
            .map(|r| (r.operator.clone(), identity_ref(identity_name(&p, r))))
            .collect()
    };
    let (cp_refs, dp_refs) = (refs(Plane::ControlPlane), refs(Plane::DataPlane));
    // The control plane operators' identities and the service managed identity are the cluster's
    // own too, as the service requires.
    let own: Vec<Value> = required
        .iter()
        .filter(|r| r.plane != Plane::DataPlane)
        .map(|r| json!({"reference": identity_ref(identity_name(&p, r))}))
        .collect();
    let app = "0c2e4a6b-8d1f-4c3e-9a5b-7d9f1b3c5e71";
    json!({
        "apiVersion": "controlplane.cluster.x-k8s.io/v1beta2",
        "kind": "AROControlPlane",
        "metadata": meta(&s.name, &s.name),
        "spec": {
            "subscriptionID": s.subscription,
            "azureEnvironment": "AzurePublicCloud",
            "resources": [
                azure(s, "redhatopenshift.azure.com/v1api20240610preview", "HcpOpenShiftCluster", &p, &format!("{p}-rg"), json!({
                    "identity": {"type": "UserAssigned", "userAssignedIdentities": own},
                    "properties": {
                        "version": {"id": OPENSHIFT, "channelGroup": s.profile.channel},
                        "api": {"visibility": s.profile.visibility},
                        "clusterImageRegistry": {"state": "Enabled"},
                        "etcd": etcd(s),
                        "network": {"networkType": "OVNKubernetes", "machineCidr": format!("10.{a}.{b}.0/24"),
                            "podCidr": "10.128.0.0/14", "serviceCidr": "172.30.0.0/16", "hostPrefix": 23},
                        "platform": {
                            "managedResourceGroup": format!("{p}-managed-rg"),
                            "outboundType": "LoadBalancer",
                            "subnetReference": {"group": "network.azure.com", "kind": "VirtualNetworksSubnet", "name": format!("{p}-subnet")},
                            "networkSecurityGroupReference": {"group": "network.azure.com", "kind": "NetworkSecurityGroup", "name": format!("{p}-nsg")},
                            "operatorsAuthentication": {"userAssignedIdentities": {
                                "controlPlaneOperatorsReferences": cp_refs,
                                "dataPlaneOperatorsReferences": dp_refs,
                                "serviceManagedIdentityReference": identity_ref(format!("{p}-service"))}}
                        }
                    },
                    "operatorSpec": {"secrets": {"adminCredentials": {"name": format!("{}-kubeconfig", s.name), "key": "value"}}}
                })),
                {
                    "apiVersion": "redhatopenshift.azure.com/v1api20240610preview",
                    "kind": "HcpOpenShiftClustersExternalAuth",
                    "metadata": {"name": format!("{p}-entra")},
                    "spec": {
                        "azureName": format!("{}-entra", s.name),
                        "owner": {"name": p},
                        "properties": {
                            "issuer": {"url": format!("https://login.microsoftonline.com/{TENANT}/v2.0"), "audiences": [app]},
                            "clients": [{"clientId": app, "type": "Confidential", "extraScopes": ["openid", "profile"],
                                "component": {"name": "console", "authClientNamespace": "openshift-console"}}],
                            "claim": {"mappings": {"username": {"claim": "oid", "prefixPolicy": "NoPrefix"},
                                "groups": {"claim": "groups"}}}
                        }
                    }
                }
            ]
        }
    })
}

fn machine_pool(s: &Spec, pool: &str, replicas: Option<u32>) -> Value {
    let name = format!("{}-{pool}", s.name);
    let mut spec = json!({
        "clusterName": s.name,
        "template": {"spec": {
            "clusterName": s.name,
            "bootstrap": {"dataSecretName": ""},
            "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AROMachinePool", "name": name}
        }}
    });
    if let Some(r) = replicas {
        spec["replicas"] = json!(r);
    }
    json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachinePool", "metadata": meta(&name, &s.name), "spec": spec})
}

/// The embedded node pool list of a pool: what the per-environment components replace wholesale.
pub fn node_pool_resources(s: &Spec, pool: &str) -> Value {
    let p = prefix(s);
    let pr = &s.profile;
    let mut platform = json!({
        "vmSize": if pool == "workers" { pr.workers_vm } else { pr.infra_vm },
        "subnetReference": {"group": "network.azure.com", "kind": "VirtualNetworksSubnet", "name": format!("{p}-subnet")},
        "osDisk": {"sizeGiB": 128, "diskStorageAccountType": "Premium_LRS"}
    });
    if let (Some(zone), "workers") = (pr.zone, pool) {
        platform["availabilityZone"] = json!(zone);
    }
    let mut properties = json!({
        "version": {"id": "4.20", "channelGroup": pr.channel},
        "platform": platform,
        "autoRepair": true
    });
    if pool == "workers" {
        properties["autoScaling"] = json!({"min": pr.workers_min, "max": pr.workers_max});
    } else {
        properties["replicas"] = json!(pr.infra_replicas);
        // ASO takes node labels as a list of {key, value}.
        properties["labels"] = json!([{"key": "node-role.kubernetes.io/infra", "value": ""}]);
    }
    json!([{
        "apiVersion": "redhatopenshift.azure.com/v1api20240610preview",
        "kind": "HcpOpenShiftClustersNodePool",
        "metadata": {"name": format!("{p}-{pool}")},
        "spec": {"azureName": format!("{}-{pool}", s.name), "owner": {"name": p}, "location": s.location,
            "properties": properties}
    }])
}

fn aro_machine_pool(s: &Spec, pool: &str) -> Value {
    let name = format!("{}-{pool}", s.name);
    json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
        "kind": "AROMachinePool",
        "metadata": meta(&name, &s.name),
        "spec": {"resources": node_pool_resources(s, pool)}
    })
}

/// The fleet's shared AzureClusterIdentity, allowed in `namespaces`.
pub fn identity(namespaces: &[String]) -> Value {
    json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureClusterIdentity",
        "metadata": {"name": "aro-identity", "labels": {"app.kubernetes.io/part-of": "aro-fleet"}},
        "spec": {
            "type": "WorkloadIdentity",
            "clientID": "6b8d0f2a-4c6e-4a8b-9c1d-3e5f7a9b1c2d",
            "tenantID": TENANT,
            "allowedNamespaces": {"list": namespaces}
        }
    })
}

pub fn auto_node_policy() -> Value {
    json!({
        "apiVersion": "karpenter.hypershift.openshift.io/v1beta1",
        "kind": "AutoNodePolicy",
        "metadata": {"name": "default"},
        "spec": {
            "nodePoolDefaults": {"requirements": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In",
                 "values": ["Standard_D4s_v3", "Standard_D8s_v3", "Standard_D16s_v3", "Standard_E8s_v3"]},
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["1", "2", "3"]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
            ]},
            "azureNodeClassDefaults": {"rootVolume": {"volumeSize": "128Gi", "volumeType": "Premium_LRS", "encrypted": true}}
        }
    })
}

pub fn namespace(name: &str, profile: &Profile) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/part-of": "aro-fleet", "environment": profile.label}}
    })
}

/// RFC 6902 operations turning `from` into `to`: `replace` for changed scalars, `add`/`remove` for
/// members only on one side, whole-value `replace` where types or list lengths differ.
pub fn json6902_ops(from: &Value, to: &Value) -> Vec<Value> {
    let mut ops = Vec::new();
    diff_into(from, to, &mut String::new(), &mut ops);
    ops
}

fn diff_into(from: &Value, to: &Value, path: &mut String, ops: &mut Vec<Value>) {
    match (from, to) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                let len = path.len();
                path.push('/');
                path.push_str(&k.replace('~', "~0").replace('/', "~1"));
                match b.get(k) {
                    Some(vb) => diff_into(va, vb, path, ops),
                    None => ops.push(json!({"op": "remove", "path": path.clone()})),
                }
                path.truncate(len);
            }
            for (k, vb) in b.iter().filter(|(k, _)| !a.contains_key(*k)) {
                let p = format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"));
                ops.push(json!({"op": "add", "path": p, "value": vb}));
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                let len = path.len();
                path.push_str(&format!("/{i}"));
                diff_into(va, vb, path, ops);
                path.truncate(len);
            }
        }
        _ if from == to => {}
        _ => ops.push(json!({"op": "replace", "path": path.clone(), "value": to})),
    }
}

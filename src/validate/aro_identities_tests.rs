use super::*;
use serde_json::json;

const CP: &[&str] = &[
    "cluster-api-azure",
    "control-plane",
    "cloud-controller-manager",
    "ingress",
    "disk-csi-driver",
    "file-csi-driver",
    "image-registry",
    "cloud-network-config",
    "kms",
];
const DP: &[&str] = &["disk-csi-driver", "file-csi-driver", "image-registry"];

fn uai_ref(name: &str) -> Value {
    json!({"group": "managedidentity.azure.com", "kind": "UserAssignedIdentity", "name": name})
}

fn identity(name: &str) -> Value {
    json!({"apiVersion": "managedidentity.azure.com/v1api20230131", "kind": "UserAssignedIdentity",
        "metadata": {"name": name},
        "spec": {"owner": {"name": "rg"}, "operatorSpec": {"configMaps": {
            "principalId": {"name": format!("{name}-ids"), "key": "principalId"}}}}})
}

fn assignment(identity: &str, role: &str, kind: &str, scope: &str) -> Value {
    json!({"apiVersion": "authorization.azure.com/v1api20220401", "kind": "RoleAssignment",
        "metadata": {"name": format!("{identity}-{role}-{scope}")},
        "spec": {"owner": {"group": "network.azure.com", "kind": kind, "name": scope},
            "principalIdFromConfig": {"name": format!("{identity}-ids"), "key": "principalId"},
            "principalType": "ServicePrincipal",
            "roleDefinitionReference": {"armId": format!(
                "/subscriptions/s/providers/Microsoft.Authorization/roleDefinitions/{role}")}}})
}

fn cluster(version: &str) -> Value {
    let cp: serde_json::Map<String, Value> = CP
        .iter()
        .map(|o| (o.to_string(), uai_ref(&format!("cp-{o}"))))
        .collect();
    let dp: serde_json::Map<String, Value> = DP
        .iter()
        .map(|o| (o.to_string(), uai_ref(&format!("dp-{o}"))))
        .collect();
    let own: Vec<Value> = CP
        .iter()
        .map(|o| json!({"reference": uai_ref(&format!("cp-{o}"))}))
        .chain([json!({"reference": uai_ref("service")})])
        .collect();
    json!({"apiVersion": "redhatopenshift.azure.com/v1api20240610preview",
        "kind": "HcpOpenShiftCluster", "metadata": {"name": "c"},
        "spec": {"identity": {"type": "UserAssigned", "userAssignedIdentities": own},
            "properties": {"version": {"id": version},
                "platform": {
                    "subnetReference": {"group": "network.azure.com", "kind": "VirtualNetworksSubnet", "name": "subnet"},
                    "networkSecurityGroupReference": {"group": "network.azure.com", "kind": "NetworkSecurityGroup", "name": "nsg"},
                    "operatorsAuthentication": {"userAssignedIdentities": {
                        "controlPlaneOperatorsReferences": cp,
                        "dataPlaneOperatorsReferences": dp,
                        "serviceManagedIdentityReference": uai_ref("service")}}}}}})
}

/// Everything a 4.20 cluster needs: 13 identities and their role assignments.
fn unit() -> Vec<Value> {
    let mut out = vec![
        json!({"apiVersion": "network.azure.com/v1api20201101", "kind": "VirtualNetwork",
            "metadata": {"name": "vnet"}, "spec": {"owner": {"name": "rg"}}}),
        json!({"apiVersion": "network.azure.com/v1api20201101", "kind": "VirtualNetworksSubnet",
            "metadata": {"name": "subnet"}, "spec": {"owner": {"name": "vnet"}}}),
        json!({"apiVersion": "network.azure.com/v1api20201101", "kind": "NetworkSecurityGroup",
            "metadata": {"name": "nsg"}, "spec": {"owner": {"name": "rg"}}}),
        json!({"apiVersion": "keyvault.azure.com/v1api20230701", "kind": "Vault",
            "metadata": {"name": "kv"}, "spec": {"azureName": "my-kv", "owner": {"name": "rg"}}}),
    ];
    let required = required("4.20").unwrap();
    for need in &required {
        let name = match need.plane {
            Plane::ControlPlane => format!("cp-{}", need.operator),
            Plane::DataPlane => format!("dp-{}", need.operator),
            Plane::Service => "service".to_string(),
        };
        out.push(identity(&name));
        for scope in &need.scopes {
            let scope_name = match scope {
                Scope::Vnet => "vnet",
                Scope::Subnet => "subnet",
                Scope::Nsg => "nsg",
                Scope::KeyVault => "kv",
            };
            out.push(assignment(&name, &need.role.id, scope.kind(), scope_name));
        }
    }
    out
}

fn check(cluster: &Value, unit: &[Value]) -> Vec<Problem> {
    let refs: Vec<&Value> = unit.iter().collect();
    problems(cluster, &refs)
}

#[test]
fn the_table_parses_and_requires_thirteen_identities_and_sixteen_scoped_roles() {
    let required = required("4.20").unwrap();
    assert_eq!(required.len(), 13);
    let scoped: usize = required.iter().map(|r| r.scopes.len()).sum();
    assert_eq!(scoped, 16);
    assert_eq!(known_versions(), ["4.19", "4.20"]);
    let kms = required.iter().find(|r| r.operator == "kms").unwrap();
    assert!(kms.only_with_kms);
    assert_eq!(kms.role.id, "12338af0-0e69-4776-bea7-57ae8d297424");
    assert_eq!(kms.scopes, [Scope::KeyVault]);
    assert!(super::required("4.18").is_none());
}

#[test]
fn minors_are_read_from_version_ids() {
    assert_eq!(minor_of("4.20").as_deref(), Some("4.20"));
    assert_eq!(minor_of("4.20.3").as_deref(), Some("4.20"));
    assert_eq!(minor_of("4"), None);
    assert_eq!(minor_of("four.20"), None);
    assert_eq!(minor_of("4.x"), None);
}

#[test]
fn a_complete_cluster_has_no_problem() {
    assert_eq!(check(&cluster("4.20"), &unit()), []);
    assert_eq!(check(&cluster("4.19.7"), &unit()), []);
}

#[test]
fn an_unknown_minor_is_refused_and_a_malformed_version_left_to_the_version_check() {
    let got = check(&cluster("4.12"), &unit());
    assert!(matches!(&got[..], [Problem::UnknownVersion { minor, .. }] if minor == "4.12"));
    assert!(got[0].refused());
    assert!(
        got[0].to_string().contains("knows 4.19, 4.20"),
        "{}",
        got[0]
    );
    assert_eq!(check(&cluster("latest"), &unit()), []);
}

#[test]
fn a_missing_identity_names_its_field_and_the_version() {
    let mut c = cluster("4.20");
    let cp = c
        .pointer_mut(&format!("{AUTH}/controlPlaneOperatorsReferences"))
        .unwrap();
    cp.as_object_mut().unwrap().remove("file-csi-driver");
    let got = check(&c, &unit());
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].refused());
    assert_eq!(
        got[0].to_string(),
        format!(
            "{AUTH}/controlPlaneOperatorsReferences/file-csi-driver: OpenShift 4.20 requires the control plane operator identity \"file-csi-driver\" (rule: the service's operator identity role set for 4.20, {TABLE_FILE})"
        )
    );
    let mut c = cluster("4.20");
    c.pointer_mut(AUTH)
        .unwrap()
        .as_object_mut()
        .unwrap()
        .remove("serviceManagedIdentityReference");
    let got = check(&c, &unit());
    assert!(
        matches!(&got[..], [Problem::Missing { what, .. }] if what == "service managed identity"),
        "{got:?}"
    );
}

#[test]
fn kms_is_required_only_with_a_customer_managed_key_and_then_needs_its_role_on_the_vault() {
    let mut c = cluster("4.20");
    let cp = c
        .pointer_mut(&format!("{AUTH}/controlPlaneOperatorsReferences"))
        .unwrap();
    cp.as_object_mut().unwrap().remove("kms");
    assert_eq!(check(&c, &unit()), []);
    c["spec"]["properties"]["etcd"] = json!({"dataEncryption": {
        "keyManagementMode": "CustomerManaged",
        "customerManaged": {"encryptionType": "KMS", "kms": {"vaultName": "my-kv"}}}});
    assert!(matches!(&check(&c, &unit())[..], [Problem::Missing { .. }]));
    // Named, with a customer-managed key: its role on the Vault is checked.
    let mut c = cluster("4.20");
    c["spec"]["properties"]["etcd"] = json!({"dataEncryption": {
        "keyManagementMode": "CustomerManaged",
        "customerManaged": {"encryptionType": "KMS", "kms": {"vaultName": "my-kv"}}}});
    assert_eq!(check(&c, &unit()), []);
    let without: Vec<Value> = unit()
        .into_iter()
        .filter(|r| text_at(r, "/spec/owner/kind") != Some("Vault"))
        .collect();
    let got = check(&c, &without);
    assert!(
        matches!(&got[..], [Problem::MissingRole { scope: Scope::KeyVault, scope_name, .. }] if scope_name == "kv"),
        "{got:?}"
    );
}

#[test]
fn an_identity_the_unit_does_not_declare_is_unresolved_and_an_arm_id_is_taken_as_is() {
    let mut c = cluster("4.20");
    if let Some(v) = c.pointer_mut(&format!(
        "{AUTH}/dataPlaneOperatorsReferences/image-registry"
    )) {
        *v = uai_ref("nowhere");
    }
    let got = check(&c, &unit());
    assert!(
        matches!(&got[..], [Problem::Unresolved { name, .. }] if name == "nowhere"),
        "{got:?}"
    );
    let id = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/x";
    if let Some(v) = c.pointer_mut(&format!(
        "{AUTH}/dataPlaneOperatorsReferences/image-registry"
    )) {
        *v = json!({"armId": id});
    }
    assert_eq!(check(&c, &unit()), []);
}

#[test]
fn control_plane_operators_and_the_service_identity_must_be_the_clusters_own() {
    let mut c = cluster("4.20");
    let own = c
        .pointer_mut("/spec/identity/userAssignedIdentities")
        .unwrap()
        .as_array_mut()
        .unwrap();
    own.retain(|e| e.pointer("/reference/name") != Some(&json!("cp-ingress")));
    let got = check(&c, &unit());
    assert!(
        matches!(&got[..], [Problem::NotAssigned { name, .. }] if name == "cp-ingress"),
        "{got:?}"
    );
    assert!(got[0].refused());
}

#[test]
fn each_missing_role_is_named_with_its_scope_and_fails_provisioning_rather_than_creation() {
    let network = "be7a6435-15ae-4171-8f30-4a343eff9e8f";
    let without: Vec<Value> = unit()
        .into_iter()
        .filter(|r| {
            !(kind_of(r) == ROLE_ASSIGNMENT
                && text_at(r, "/spec/roleDefinitionReference/armId")
                    .is_some_and(|id| id.ends_with(network)))
        })
        .collect();
    let got = check(&cluster("4.20"), &without);
    let scopes: Vec<Scope> = got
        .iter()
        .map(|p| match p {
            Problem::MissingRole { scope, .. } => *scope,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(scopes, [Scope::Subnet, Scope::Vnet]);
    assert!(!got[0].refused());
    let text = got[1].to_string();
    assert!(
        text.starts_with(&format!(
            "{AUTH}/controlPlaneOperatorsReferences/cloud-network-config: "
        )),
        "{text}"
    );
    assert!(
        text.contains("\"Azure Red Hat OpenShift Network Operator\" (be7a6435-15ae-4171-8f30-4a343eff9e8f) on the VNet vnet"),
        "{text}"
    );
}

#[test]
fn a_role_on_the_wrong_scope_or_for_another_principal_does_not_count() {
    let ingress = "0336e1d3-7a87-462b-b6db-342b63f7802c";
    let mut moved = unit();
    for r in &mut moved {
        if text_at(r, "/spec/roleDefinitionReference/armId").is_some_and(|id| id.ends_with(ingress))
        {
            r["spec"]["owner"] =
                json!({"group": "network.azure.com", "kind": "VirtualNetwork", "name": "vnet"});
        }
    }
    let got = check(&cluster("4.20"), &moved);
    assert!(
        matches!(&got[..], [Problem::MissingRole { scope: Scope::Subnet, name, .. }] if name == "cp-ingress"),
        "{got:?}"
    );
    let mut other = unit();
    for r in &mut other {
        if text_at(r, "/spec/roleDefinitionReference/armId").is_some_and(|id| id.ends_with(ingress))
        {
            r["spec"]["principalIdFromConfig"]["name"] = json!("cp-control-plane-ids");
        }
    }
    assert_eq!(check(&cluster("4.20"), &other).len(), 1);
}

#[test]
fn an_identity_without_a_principal_export_cannot_be_given_a_role() {
    let mut u = unit();
    for r in &mut u {
        if text_at(r, "/metadata/name") == Some("cp-ingress") {
            r["spec"].as_object_mut().unwrap().remove("operatorSpec");
        }
    }
    let got = check(&cluster("4.20"), &u);
    assert!(
        matches!(&got[..], [Problem::NoPrincipal { name, .. }] if name == "cp-ingress"),
        "{got:?}"
    );
}

#[test]
fn scopes_given_by_arm_id_are_outside_the_unit_and_not_checked() {
    let mut c = cluster("4.20");
    c["spec"]["properties"]["platform"]["subnetReference"] = json!({"armId":
        "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/s"});
    c["spec"]["properties"]["platform"]["networkSecurityGroupReference"] = json!({"armId":
        "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/n"});
    let identities_only: Vec<Value> = unit()
        .into_iter()
        .filter(|r| kind_of(r) != ROLE_ASSIGNMENT)
        .collect();
    assert_eq!(check(&c, &identities_only), []);
}

#[test]
fn an_identity_reference_of_another_kind_is_named_first() {
    let mut c = cluster("4.20");
    c["spec"]["identity"]["userAssignedIdentities"][0]["reference"]["kind"] = json!("Vault");
    let got = check(&c, &unit());
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].refused());
    assert!(
        got[0]
            .to_string()
            .starts_with("/spec/identity/userAssignedIdentities/0/reference: an identity reference's kind is Vault"),
        "{}",
        got[0]
    );
}

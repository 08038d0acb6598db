//! The service's operator identity rules on the simulator: a cluster that lacks an identity its
//! OpenShift version requires is refused (`InvalidRequestContent`, nothing created) until it names
//! it; a cluster whose identities lack their roles on the network fails its provisioning
//! (`AuthorizationFailed`, `provisioningState` Failed) and succeeds once the RoleAssignments are
//! provisioned, as ASO retries.

use super::*;
use aro_gitops::validate::aro_identities::{self, Plane, Scope};

fn reason_is(reason: &'static str) -> impl Fn(&Value) -> bool {
    move |o: &Value| ready(o)["reason"] == reason
}

#[tokio::test]
async fn a_cluster_without_a_required_identity_is_refused_until_it_names_it() {
    let env = env();
    create(&env.client, RG).await;
    let line = "            file-csi-driver: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/dp-file-csi-driver}\n";
    assert!(CLUSTER.contains(line));
    let cluster = create(&env.client, &CLUSTER.replace(line, "")).await;
    let api = api_of(&env.client, &cluster);
    let refused = wait_for(&api, "c1", "refused", reason_is("InvalidRequestContent")).await;
    let c = ready(&refused);
    assert_eq!(
        (&c["status"], &c["severity"]),
        (&json!("False"), &json!("Error"))
    );
    let message = c["message"].as_str().unwrap();
    assert!(
        message.contains("requires the data plane operator identity \"file-csi-driver\""),
        "{message}"
    );
    assert!(
        refused.pointer("/status/id").is_none(),
        "nothing was created"
    );

    let id = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/dp-file-csi-driver";
    let patch = json!({"spec": {"properties": {"platform": {"operatorsAuthentication": {
        "userAssignedIdentities": {"dataPlaneOperatorsReferences": {"file-csi-driver": {"armId": id}}}}}}}});
    api.patch("c1", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch");
    wait_for(&api, "c1", "Ready once it names the identity", is_ready).await;
}

fn azure(kind: &str, api_version: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": api_version, "kind": kind,
        "metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

/// Creates `obj` under its kind's real plural (`userassignedidentities`).
async fn create_obj(client: &Client, obj: &Value) -> Value {
    let (group, version) =
        aro_gitops::object::split_api_version(obj["apiVersion"].as_str().unwrap());
    let kind = obj["kind"].as_str().unwrap();
    let lower = kind.to_lowercase();
    let plural = match lower.strip_suffix('y') {
        Some(stem) => format!("{stem}ies"),
        None => format!("{lower}s"),
    };
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), &plural);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let dynamic: DynamicObject = serde_json::from_value(obj.clone()).unwrap();
    let created = api
        .create(&PostParams::default(), &dynamic)
        .await
        .expect("create");
    serde_json::to_value(created).unwrap()
}

/// A 4.20 cluster on subnet `subnet1` of `vnet1` with NSG `nsg1`, its 13 identities in the
/// namespace (each exporting its principal ID), and the RoleAssignments they need (kept apart).
fn network_cluster() -> (Vec<Value>, Value, Vec<Value>) {
    let required = aro_identities::required("4.20").unwrap();
    let uai = |n: &str| json!({"group": "managedidentity.azure.com", "kind": "UserAssignedIdentity", "name": n});
    let name = |r: &aro_identities::Required| match r.plane {
        Plane::ControlPlane => format!("cp-{}", r.operator),
        Plane::DataPlane => format!("dp-{}", r.operator),
        Plane::Service => "service".to_string(),
    };
    let mut infra = vec![
        azure(
            "VirtualNetwork",
            "network.azure.com/v1api20201101",
            "vnet1",
            json!({"owner": {"name": "rg1"}, "location": "eastus", "addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}),
        ),
        azure(
            "NetworkSecurityGroup",
            "network.azure.com/v1api20201101",
            "nsg1",
            json!({"owner": {"name": "rg1"}, "location": "eastus"}),
        ),
        azure(
            "VirtualNetworksSubnet",
            "network.azure.com/v1api20201101",
            "subnet1",
            json!({"owner": {"name": "vnet1"}, "addressPrefix": "10.0.0.0/24"}),
        ),
    ];
    let mut roles = Vec::new();
    let (mut cp, mut dp, mut own) = (json!({}), json!({}), vec![]);
    for r in &required {
        let n = name(r);
        infra.push(azure("UserAssignedIdentity", "managedidentity.azure.com/v1api20230131", &n,
            json!({"owner": {"name": "rg1"}, "location": "eastus",
                "operatorSpec": {"configMaps": {"principalId": {"name": n, "key": "principalId"}}}})));
        match r.plane {
            Plane::ControlPlane => cp[&r.operator] = uai(&n),
            Plane::DataPlane => dp[&r.operator] = uai(&n),
            Plane::Service => {}
        }
        if r.plane != Plane::DataPlane {
            own.push(json!({"reference": uai(&n)}));
        }
        for scope in &r.scopes {
            let owner = match scope {
                Scope::Vnet => "vnet1",
                Scope::Subnet => "subnet1",
                Scope::Nsg => "nsg1",
                Scope::KeyVault => continue,
            };
            roles.push(azure("RoleAssignment", "authorization.azure.com/v1api20220401",
                &format!("{n}-{owner}"),
                json!({"owner": {"group": "network.azure.com", "kind": scope.kind(), "name": owner},
                    "principalIdFromConfig": {"name": n, "key": "principalId"},
                    "principalType": "ServicePrincipal",
                    "roleDefinitionReference": {"armId": format!(
                        "/subscriptions/00000000-0000-0000-0000-000000000000/providers/Microsoft.Authorization/roleDefinitions/{}", r.role.id)}})));
        }
    }
    let cluster = azure(
        "HcpOpenShiftCluster",
        "redhatopenshift.azure.com/v1api20240610preview",
        "c2",
        json!({"owner": {"name": "rg1"}, "location": "eastus",
            "identity": {"type": "UserAssigned", "userAssignedIdentities": own},
            "properties": {"version": {"id": "4.20", "channelGroup": "stable"},
                "platform": {
                    "subnetReference": {"group": "network.azure.com", "kind": "VirtualNetworksSubnet", "name": "subnet1"},
                    "networkSecurityGroupReference": {"group": "network.azure.com", "kind": "NetworkSecurityGroup", "name": "nsg1"},
                    "operatorsAuthentication": {"userAssignedIdentities": {
                        "controlPlaneOperatorsReferences": cp, "dataPlaneOperatorsReferences": dp,
                        "serviceManagedIdentityReference": uai("service")}}}}}),
    );
    (infra, cluster, roles)
}

#[tokio::test]
async fn a_cluster_whose_identities_lack_their_roles_fails_provisioning_until_they_are_given() {
    let env = env();
    create(&env.client, RG).await;
    let (infra, cluster, roles) = network_cluster();
    assert_eq!(roles.len(), 15, "16 role assignments less the Key Vault's");
    for o in &infra {
        create_obj(&env.client, o).await;
    }
    let cluster = create_obj(&env.client, &cluster).await;
    let api = api_of(&env.client, &cluster);
    let failed = wait_for(&api, "c2", "failed", reason_is("AuthorizationFailed")).await;
    assert_eq!(
        failed["status"]["properties"]["provisioningState"],
        "Failed"
    );
    let message = ready(&failed)["message"].as_str().unwrap().to_string();
    assert!(
        message.contains("needs the role \"Azure Red Hat OpenShift Network Operator\""),
        "{message}"
    );
    assert!(failed.pointer("/status/id").is_none());

    for o in &roles {
        create_obj(&env.client, o).await;
    }
    let ready_cluster =
        wait_for(&api, "c2", "Ready once the roles are provisioned", is_ready).await;
    assert_eq!(
        ready_cluster["status"]["properties"]["provisioningState"],
        "Succeeded"
    );
}

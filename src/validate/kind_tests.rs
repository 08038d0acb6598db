//! Tests of the per-kind schema rules through `validate`: each rule, good and bad, messages asserted.

use super::fixtures::*;
use super::*;
use serde_json::json;

const CP: &str = "f.yaml: AROControlPlane/aro-dev/dev: ";

#[test]
fn valid_objects_of_every_kind_pass() {
    let ext_auth = json!({"apiVersion": "redhatopenshift.azure.com/v1api20240610preview", "kind": "HcpOpenShiftClustersExternalAuth",
                          "metadata": {"name": "dev-ea"}, "spec": {"owner": {"name": "dev"}}});
    let found = messages(vec![
        ("cp.yaml", control_plane(json!([hcp_cluster(), ext_auth]))),
        (
            "mp.yaml",
            machine_pool("dev-a", json!([node_pool("dev-a")])),
        ),
        (
            "c.yaml",
            aro_cluster(json!([vault(
                json!({RECONCILE_POLICY: "detach-on-delete"})
            )])),
        ),
        (
            "id.yaml",
            identity(
                json!({"type": "WorkloadIdentity", "clientID": "00000000-0000-4000-8000-0000000000c1",
                                     "tenantID": "00000000-0000-4000-8000-0000000000aa", "allowedNamespaces": {"list": ["aro-dev"]}}),
            ),
        ),
        (
            "p.yaml",
            policy(
                json!([{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["1", "2"]},
                                  {"key": "karpenter.sh/capacity-type", "operator": "Exists"},
                                  {"key": "cpu", "operator": "Gt", "values": ["3"]}]),
            ),
        ),
        (
            "cm.yaml",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "anything", "namespace": "aro-dev"}, "data": {"k": "v"}}),
        ),
    ]);
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn control_plane_needs_exactly_one_hcp_cluster() {
    assert_eq!(
        one(control_plane(json!([]))),
        vec![format!(
            "{CP}/spec/resources: must hold exactly one HcpOpenShiftCluster; it holds none"
        )]
    );
    let mut second = hcp_cluster();
    second["metadata"]["name"] = json!("dev2");
    assert_eq!(
        one(control_plane(json!([hcp_cluster(), second]))),
        vec![format!(
            "{CP}/spec/resources: must hold exactly one HcpOpenShiftCluster; it holds more than one"
        )]
    );
    let mut no_resources = control_plane(json!([]));
    no_resources["spec"]
        .as_object_mut()
        .unwrap()
        .remove("resources");
    assert_eq!(
        one(no_resources),
        vec![format!("{CP}/spec/resources: is required but missing")]
    );
}

#[test]
fn embedded_entries_need_api_version_kind_and_name() {
    let found = one(control_plane(
        json!([hcp_cluster(), {"kind": "Vault", "metadata": {"name": "kv"}},
                                          {"apiVersion": "keyvault.azure.com/v1api20230701", "metadata": {"name": "kv"}},
                                          {"apiVersion": "keyvault.azure.com/v1api20230701", "kind": "Vault", "metadata": {}},
                                          "just a string"]),
    ));
    assert_eq!(
        found,
        vec![
            format!("{CP}/spec/resources/1/apiVersion: is required but missing"),
            format!("{CP}/spec/resources/2/kind: is required but missing"),
            format!("{CP}/spec/resources/3/metadata/name: is required but missing"),
            format!(
                "{CP}/spec/resources/4: each entry of spec.resources must be a Kubernetes object (apiVersion, kind, metadata)"
            ),
        ]
    );
    let found = one(aro_cluster(
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}]),
    ));
    assert_eq!(
        found,
        vec![
            "f.yaml: AROCluster/aro-dev/dev: /spec/resources/0/apiVersion: embedded resources must be Azure Service Operator \
              resources: apiVersion <group>.azure.com/<version>"
        ]
    );
}

#[test]
fn reserved_words_in_names_are_rejected() {
    let mut cluster = hcp_cluster();
    cluster["metadata"]["name"] = json!("my-windows-cluster");
    cluster["spec"]["azureName"] = json!("MicroSoftCluster");
    assert_eq!(
        one(control_plane(json!([cluster]))),
        vec![
            format!(
                "{CP}/spec/resources/0/metadata/name: must not contain \"microsoft\" or \"windows\" (reserved by Azure)"
            ),
            format!(
                "{CP}/spec/resources/0/spec/azureName: must not contain \"microsoft\" or \"windows\" (reserved by Azure)"
            ),
        ]
    );
    let mut pool = node_pool("dev-a");
    pool["spec"]["azureName"] = json!("windows1");
    assert_eq!(
        one(machine_pool("dev-a", json!([pool]))),
        vec![
            "f.yaml: AROMachinePool/aro-dev/dev-a: /spec/resources/0/spec/azureName: must not contain \"microsoft\" or \
              \"windows\" (reserved by Azure)"
        ]
    );
}

#[test]
fn hcp_cluster_fields_are_typed() {
    let mut cluster = hcp_cluster();
    cluster["apiVersion"] = json!("redhatopenshift.azure.com/v1");
    cluster["spec"]["properties"]["version"]["id"] = json!(4.2);
    cluster["spec"]["properties"]["network"]["podCidr"] = json!("10.128.0.0");
    cluster["spec"]["properties"]["etcd"]["dataEncryption"]["customerManaged"]["kms"]["activeKey"]
        ["version"] = json!(7);
    cluster["spec"]["operatorSpec"]["secrets"]["adminCredentials"] =
        json!({"name": "dev-kubeconfig"});
    assert_eq!(
        one(control_plane(json!([cluster]))),
        vec![
            format!(
                "{CP}/spec/resources/0/apiVersion: HcpOpenShiftCluster is served as redhatopenshift.azure.com/v1api20240610preview, \
                     redhatopenshift.azure.com/v1api20251223preview"
            ),
            format!(
                "{CP}/spec/resources/0/spec/properties/version/id: must be a quoted string such as \"4.20\" (unquoted, 4.20 is read as the number 4.2)"
            ),
            format!(
                "{CP}/spec/resources/0/spec/properties/network/podCidr: must be an IPv4 CIDR such as 10.128.0.0/14"
            ),
            format!(
                "{CP}/spec/resources/0/spec/properties/etcd/dataEncryption/customerManaged/kms/activeKey/version: must be a string: quote the key version"
            ),
            format!(
                "{CP}/spec/resources/0/spec/operatorSpec/secrets/adminCredentials/key: is required but missing"
            ),
        ]
    );
}

#[test]
fn control_plane_spec_fields() {
    let mut cp = control_plane(json!([hcp_cluster()]));
    cp["spec"]["azureEnvironment"] = json!("AzureCloud");
    cp["spec"]["identityRef"] = json!({"kind": "Secret", "name": "x"});
    cp["spec"]["version"] = json!("4.20");
    assert_eq!(
        one(cp),
        vec![
            format!("{CP}/spec: unknown field `version`"),
            format!(
                "{CP}/spec/azureEnvironment: must be one of \"AzurePublicCloud\", \"AzureChinaCloud\" or \"AzureUSGovernmentCloud\""
            ),
            format!("{CP}/spec/identityRef/kind: must be AzureClusterIdentity"),
        ]
    );
}

#[test]
fn machine_pool_needs_exactly_one_node_pool() {
    let mp = "f.yaml: AROMachinePool/aro-dev/dev-a: ";
    assert_eq!(
        one(machine_pool("dev-a", json!([vault(json!({}))]))),
        vec![format!(
            "{mp}/spec/resources: must hold exactly one HcpOpenShiftClustersNodePool; it holds none"
        )]
    );
    assert_eq!(
        one(machine_pool(
            "dev-a",
            json!([node_pool("dev-a"), node_pool("dev-b")])
        )),
        vec![format!(
            "{mp}/spec/resources: must hold exactly one HcpOpenShiftClustersNodePool; it holds more than one"
        )]
    );
    let mut pool = node_pool("dev-a");
    pool["spec"]["properties"]["autoscaling"] = json!({"min": 1, "max": 3});
    pool["spec"]["properties"]["platform"]["availabilityZone"] = json!(1);
    assert_eq!(
        one(machine_pool("dev-a", json!([pool]))),
        vec![
            format!(
                "{mp}/spec/resources/0/spec/properties: autoscaling is not a node pool field: the field is autoScaling"
            ),
            format!(
                "{mp}/spec/resources/0/spec/properties/platform/availabilityZone: must be a string: quote the zone (\"1\")"
            ),
        ]
    );
}

#[test]
fn aro_cluster_rules() {
    let mut c = aro_cluster(json!([]));
    c["apiVersion"] = json!("infrastructure.cluster.x-k8s.io/v1beta1");
    c["spec"]["subscriptionID"] = json!("my-subscription");
    c["spec"]["location"] = json!("eastus");
    c["metadata"]["annotations"] = json!({"owner": 42});
    assert_eq!(
        one(c),
        vec![
            "f.yaml: AROCluster/aro-dev/dev: /apiVersion: AROCluster is served as infrastructure.cluster.x-k8s.io/v1beta2",
            "f.yaml: AROCluster/aro-dev/dev: /metadata/annotations/owner: annotation values must be strings: quote numbers and booleans",
            "f.yaml: AROCluster/aro-dev/dev: /spec: unknown field `location`",
            "f.yaml: AROCluster/aro-dev/dev: /spec/subscriptionID: CAPZ's AROCluster has no subscriptionID: set spec.subscriptionID on the cluster's AROControlPlane",
        ]
    );
    // The identity is the control plane's too.
    let mut c = aro_cluster(json!([]));
    c["spec"]["identityRef"] = json!({"kind": "AzureClusterIdentity", "name": "aro-identity"});
    assert_eq!(
        one(c),
        vec![
            "f.yaml: AROCluster/aro-dev/dev: /spec/identityRef: CAPZ's AROCluster has no identityRef: set spec.identityRef on the cluster's AROControlPlane",
        ]
    );
    let bare = json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AROCluster",
                      "metadata": {"name": "bare", "namespace": "aro-dev"}});
    assert!(
        one(bare).is_empty(),
        "an AROCluster needs no spec (no infrastructure counts as ready)"
    );
    let mut top = aro_cluster(json!([]));
    top["specs"] = json!({});
    assert_eq!(
        one(top),
        vec!["f.yaml: AROCluster/aro-dev/dev: /: unknown field `specs`"]
    );
}

#[test]
fn azure_cluster_identity_rules() {
    let id = "f.yaml: AzureClusterIdentity/aro-dev/aro-identity: ";
    let base = |t: &str| json!({"type": t, "clientID": "00000000-0000-4000-8000-0000000000c1", "tenantID": "00000000-0000-4000-8000-0000000000aa"});
    assert_eq!(
        one(identity(base("ManagedIdentity"))),
        vec![format!(
            "{id}/spec/type: must be one of \"ServicePrincipal\", \"ServicePrincipalCertificate\", \
             \"UserAssignedMSI\", \"UserAssignedIdentityCredential\", \"WorkloadIdentity\" or \"ManualServicePrincipal\""
        )]
    );
    assert_eq!(
        one(identity(base("ServicePrincipal"))),
        vec![format!(
            "{id}/spec/clientSecret: a ServicePrincipal identity needs clientSecret, the Secret holding the client secret"
        )]
    );
    assert_eq!(
        one(identity(base("ServicePrincipalCertificate"))),
        vec![format!(
            "{id}/spec: a ServicePrincipalCertificate identity needs clientSecret (the Secret holding the certificate) or certPath"
        )]
    );
    let mut sp = base("ServicePrincipal");
    sp["clientSecret"] = json!({"name": "sp-secret", "namespace": "aro-dev"});
    assert!(one(identity(sp)).is_empty());
    assert_eq!(
        one(identity(json!({"type": "WorkloadIdentity"}))),
        vec![
            format!("{id}/spec/clientID: is required but missing"),
            format!("{id}/spec/tenantID: is required but missing")
        ]
    );
}

#[test]
fn auto_node_policy_rules() {
    let p = "f.yaml: AutoNodePolicy/aro-dev/default: ";
    assert_eq!(
        one(policy(
            json!([{"key": "topology.kubernetes.io/zone", "operator": "In", "values": [1, "2"]},
                           {"key": "kubernetes.io/arch", "operator": "Equals", "values": ["amd64"]},
                           {"key": "node.kubernetes.io/instance-type", "operator": "In"},
                           {"key": "cpu", "operator": "Gt", "values": ["3", "4"]},
                           {"key": "gpu", "operator": "DoesNotExist", "values": ["x"]}])
        )),
        vec![
            format!(
                "{p}/spec/nodePoolDefaults/requirements/0/values/0: must be a string: quote numbers (\"1\")"
            ),
            format!(
                "{p}/spec/nodePoolDefaults/requirements/1/operator: must be one of \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\" or \"Lt\""
            ),
            format!(
                "{p}/spec/nodePoolDefaults/requirements/2/values: In and NotIn need at least one value"
            ),
            format!(
                "{p}/spec/nodePoolDefaults/requirements/3/values: Gt and Lt take exactly one integer value"
            ),
            format!(
                "{p}/spec/nodePoolDefaults/requirements/4/values: Exists and DoesNotExist take no values"
            ),
        ]
    );
    let mut bad_volume = policy(json!([]));
    bad_volume["spec"]["azureNodeClassDefaults"]["rootVolume"] =
        json!({"volumeSize": "lots", "encrypted": "yes"});
    bad_volume["spec"]["nodeClassDefaults"] = json!({});
    assert_eq!(
        one(bad_volume),
        vec![
            format!("{p}/spec: unknown field `nodeClassDefaults`"),
            format!(
                "{p}/spec/azureNodeClassDefaults/rootVolume/volumeSize: must be a quantity such as 128Gi"
            ),
            format!(
                "{p}/spec/azureNodeClassDefaults/rootVolume/encrypted: expected a boolean, got a string"
            ),
        ]
    );
}

/// ASO's HcpOpenShiftCluster requires `kms.activeKey.version`: git leaves it out when the agent
/// manages the key (an `identityRef`), and the render's validation accepts that; in manual mode
/// (no `identityRef`) the version is the user's to give, and its absence is an error.
#[test]
fn a_key_version_the_agent_fills_in_is_not_required_of_git() {
    let mut cluster = hcp_cluster();
    cluster["spec"]["properties"]["etcd"]["dataEncryption"]["customerManaged"]["kms"]["activeKey"]
        .as_object_mut()
        .unwrap()
        .remove("version");
    let manual = control_plane(json!([cluster]));
    assert_eq!(
        one(manual.clone()),
        vec![format!(
            "{CP}/spec/resources/0/spec/properties/etcd/dataEncryption/customerManaged/kms/activeKey/version: \
             Required value (the cluster's schema of HcpOpenShiftCluster redhatopenshift.azure.com/v1api20240610preview)"
        )]
    );
    let mut managed = manual;
    managed["spec"]["identityRef"] =
        json!({"kind": "AzureClusterIdentity", "name": "aro-identity"});
    assert_eq!(one(managed), Vec::<String>::new());
}

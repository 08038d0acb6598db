//! Tests of the dependency graph: the spec's ARO chain, owners, references, cycles and stable order.

use super::*;
use serde_json::json;

const NS: &str = "default";

fn obj(api_version: &str, kind: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": NS}, "spec": spec})
}

fn aso(api_version: &str, kind: &str, name: &str, owner: Value) -> Value {
    obj(
        api_version,
        kind,
        name,
        json!({"azureName": name, "owner": owner}),
    )
}

/// Top-level objects and, after each, the resources embedded in its `spec.resources` (namespace forced).
fn nodes(tops: &[Value]) -> Vec<Node<'_>> {
    let mut out = Vec::new();
    for top in tops {
        let key = ObjectKey::from_object(top).unwrap();
        out.push(Node {
            key: key.clone(),
            object: top,
            embedded_in: None,
        });
        for r in top
            .pointer("/spec/resources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let mut k = ObjectKey::from_object(r).unwrap();
            k.namespace = key.namespace.clone();
            out.push(Node {
                key: k,
                object: r,
                embedded_in: Some(key.clone()),
            });
        }
    }
    out
}

fn names(g: &Graph, idx: &[usize]) -> Vec<String> {
    idx.iter().map(|&i| g.key(i).to_string()).collect()
}

fn ordered(g: &Graph) -> Vec<String> {
    names(g, &g.order().unwrap())
}

fn find(g: &Graph, name: &str) -> usize {
    (0..g.len())
        .find(|&i| g.key(i).to_string() == name)
        .unwrap_or_else(|| panic!("no node {name}"))
}

fn deps(g: &Graph, name: &str) -> Vec<String> {
    names(g, g.dependencies(find(g, name)))
}

fn assert_before(order: &[String], first: &str, then: &str) {
    let p = |n: &str| {
        order
            .iter()
            .position(|o| o == n)
            .unwrap_or_else(|| panic!("{n} not in {order:?}"))
    };
    assert!(
        p(first) < p(then),
        "{first} should come before {then}: {order:?}"
    );
}

const NET: &str = "network.azure.com/v1api20201101";
const RG: &str = "resources.azure.com/v1api20200601";
const HCP: &str = "redhatopenshift.azure.com/v1api20240610preview";
const INFRA: &str = "infrastructure.cluster.x-k8s.io/v1beta2";

fn subnet_ref() -> Value {
    json!({"group": "network.azure.com", "kind": "VirtualNetworksSubnet", "name": "my-cluster-vnet-subnet"})
}

/// The seed's example cluster, listed deliberately out of order.
fn example_unit() -> Vec<Value> {
    let hcp = json!({"apiVersion": HCP, "kind": "HcpOpenShiftCluster", "metadata": {"name": "my-cluster", "namespace": NS},
        "spec": {"owner": {"name": "my-cluster-resgroup"}, "properties": {"platform": {
            "subnetReference": subnet_ref(),
            "networkSecurityGroupReference": {"group": "network.azure.com", "kind": "NetworkSecurityGroup", "name": "my-cluster-nsg"},
            "operatorsAuthentication": {"userAssignedIdentities": {"controlPlaneOperatorsReferences": {"cp": {"armId": "/x"}}}}}}}});
    let ea = aso(
        HCP,
        "HcpOpenShiftClustersExternalAuth",
        "my-cluster-ea",
        json!({"name": "my-cluster"}),
    );
    let pool = json!({"apiVersion": HCP, "kind": "HcpOpenShiftClustersNodePool", "metadata": {"name": "my-cluster-mp1", "namespace": NS},
        "spec": {"owner": {"name": "my-cluster"}, "properties": {"platform": {"subnetReference": subnet_ref()}}}});
    vec![
        obj(
            "controlplane.cluster.x-k8s.io/v1beta2",
            "AROControlPlane",
            "my-cluster",
            json!({
            "identityRef": {"kind": "AzureClusterIdentity", "name": "aro-identity", "namespace": NS},
            "resources": [ea, hcp]}),
        ),
        obj(
            INFRA,
            "AROMachinePool",
            "my-cluster-mp1",
            json!({"resources": [pool]}),
        ),
        obj(
            "cluster.x-k8s.io/v1beta2",
            "Cluster",
            "my-cluster",
            json!({
            "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AROCluster", "name": "my-cluster"},
            "controlPlaneRef": {"apiGroup": "controlplane.cluster.x-k8s.io", "kind": "AROControlPlane", "name": "my-cluster"}}),
        ),
        obj(
            INFRA,
            "AROCluster",
            "my-cluster",
            json!({"resources": [
                aso(NET, "VirtualNetworksSubnet", "my-cluster-vnet-subnet", json!({"name": "my-cluster-vnet"})),
                aso(NET, "VirtualNetwork", "my-cluster-vnet", json!({"name": "my-cluster-resgroup"})),
                aso(RG, "ResourceGroup", "my-cluster-resgroup", Value::Null),
                aso(NET, "NetworkSecurityGroup", "my-cluster-nsg", json!({"name": "my-cluster-resgroup"})),
                aso("keyvault.azure.com/v1api20230701", "Vault", "my-cluster-kv", json!({"name": "my-cluster-resgroup"})),
                aso("managedidentity.azure.com/v1api20230131", "UserAssignedIdentity", "my-cluster-cp", json!({"name": "my-cluster-resgroup"})),
                aso("authorization.azure.com/v1api20220401", "RoleAssignment", "my-cluster-kv-ra", json!({"name": "my-cluster-kv"})),
            ]}),
        ),
        obj(
            "infrastructure.cluster.x-k8s.io/v1beta1",
            "AzureClusterIdentity",
            "aro-identity",
            json!({"type": "WorkloadIdentity"}),
        ),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
    ]
}

#[test]
fn example_chain_from_the_spec() {
    let tops = example_unit();
    let g = build(&nodes(&tops));
    let order = ordered(&g);
    assert_eq!(order[0], "Namespace/default", "{order:?}");

    let infra = [
        "ResourceGroup/default/my-cluster-resgroup",
        "VirtualNetwork/default/my-cluster-vnet",
        "VirtualNetworksSubnet/default/my-cluster-vnet-subnet",
        "NetworkSecurityGroup/default/my-cluster-nsg",
        "Vault/default/my-cluster-kv",
        "UserAssignedIdentity/default/my-cluster-cp",
        "RoleAssignment/default/my-cluster-kv-ra",
    ];
    let hcp = "HcpOpenShiftCluster/default/my-cluster";
    let pool = "HcpOpenShiftClustersNodePool/default/my-cluster-mp1";
    let ea = "HcpOpenShiftClustersExternalAuth/default/my-cluster-ea";
    for i in infra {
        assert_before(&order, "AROCluster/default/my-cluster", i);
        assert_before(&order, i, hcp);
    }
    assert_before(&order, infra[0], infra[1]);
    assert_before(&order, infra[1], infra[2]);
    assert_before(&order, infra[4], infra[6]);
    assert_before(&order, "AROControlPlane/default/my-cluster", hcp);
    assert_before(&order, hcp, pool);
    assert_before(&order, pool, ea);
    assert_before(
        &order,
        "AzureClusterIdentity/default/aro-identity",
        "AROControlPlane/default/my-cluster",
    );
    assert_before(
        &order,
        "AROCluster/default/my-cluster",
        "Cluster/default/my-cluster",
    );

    assert_eq!(
        deps(&g, infra[2]),
        [
            "AROCluster/default/my-cluster",
            "VirtualNetwork/default/my-cluster-vnet",
            "Namespace/default"
        ]
    );
    assert_eq!(
        deps(&g, infra[6]),
        [
            "AROCluster/default/my-cluster",
            "Vault/default/my-cluster-kv",
            "Namespace/default"
        ]
    );
    assert_eq!(
        deps(&g, pool),
        [
            hcp,
            "AROMachinePool/default/my-cluster-mp1",
            infra[2],
            "Namespace/default"
        ]
    );
    assert_eq!(
        deps(&g, ea),
        [
            "AROControlPlane/default/my-cluster",
            hcp,
            pool,
            "Namespace/default"
        ]
    );
    let hcp_deps = deps(&g, hcp);
    assert!(
        infra.iter().all(|i| hcp_deps.iter().any(|d| d == i)),
        "{hcp_deps:?}"
    );
    assert_eq!(names(&g, &g.dependents(find(&g, pool))), [ea]);
}

#[test]
fn external_auth_waits_for_the_control_plane_without_node_pools() {
    let tops: Vec<Value> = example_unit()
        .into_iter()
        .filter(|t| t["kind"] != "AROMachinePool")
        .collect();
    let g = build(&nodes(&tops));
    let order = ordered(&g);
    assert_before(
        &order,
        "HcpOpenShiftCluster/default/my-cluster",
        "HcpOpenShiftClustersExternalAuth/default/my-cluster-ea",
    );
}

fn labelled(mut top: Value, cluster: &str) -> Value {
    top["metadata"]["labels"] = json!({"cluster.x-k8s.io/cluster-name": cluster});
    top
}

fn control_plane(name: &str) -> Value {
    obj(
        "controlplane.cluster.x-k8s.io/v1beta2",
        "AROControlPlane",
        name,
        json!({"resources": [
        aso(HCP, "HcpOpenShiftCluster", name, json!({"name": "rg"}))]}),
    )
}

fn machine_pool(name: &str, cluster: &str) -> Value {
    obj(
        INFRA,
        "AROMachinePool",
        name,
        json!({"resources": [
        aso(HCP, "HcpOpenShiftClustersNodePool", name, json!({"name": cluster}))]}),
    )
}

#[test]
fn chain_stays_within_one_cluster() {
    // Pool "a-pool" is labelled for cluster a; pool "b-pool" is found through its CAPI MachinePool;
    // their owners are deliberately not in the unit so only the chain links them.
    let tops = vec![
        labelled(control_plane("a"), "a"),
        labelled(control_plane("b"), "b"),
        labelled(machine_pool("a-pool", "missing-a"), "a"),
        machine_pool("b-pool", "missing-b"),
        obj(
            "cluster.x-k8s.io/v1beta2",
            "MachinePool",
            "b-pool",
            json!({"clusterName": "b",
            "template": {"spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AROMachinePool", "name": "b-pool"}}}}),
        ),
    ];
    let g = build(&nodes(&tops));
    let pool_deps = |name: &str| deps(&g, &format!("HcpOpenShiftClustersNodePool/default/{name}"));
    assert_eq!(
        pool_deps("a-pool"),
        [
            "HcpOpenShiftCluster/default/a",
            "AROMachinePool/default/a-pool"
        ]
    );
    assert_eq!(
        pool_deps("b-pool"),
        [
            "HcpOpenShiftCluster/default/b",
            "AROMachinePool/default/b-pool"
        ]
    );
}

#[test]
fn unnamed_cluster_falls_back_to_the_namespace() {
    let mut other_ns = control_plane("x");
    other_ns["metadata"]["namespace"] = json!("elsewhere");
    let tops = vec![machine_pool("p", "not-here"), other_ns, control_plane("c")];
    let g = build(&nodes(&tops));
    assert_eq!(
        deps(&g, "HcpOpenShiftClustersNodePool/default/p"),
        ["AROMachinePool/default/p", "HcpOpenShiftCluster/default/c"]
    );
}

#[test]
fn cycle_names_its_members() {
    let a = obj(
        "example.com/v1",
        "Widget",
        "a",
        json!({"targetRef": {"kind": "Gadget", "name": "b"}}),
    );
    let b = obj(
        "example.com/v1",
        "Gadget",
        "b",
        json!({"sourceRef": {"apiVersion": "example.com/v1", "kind": "Widget", "name": "a"}}),
    );
    let bystander = obj(
        "example.com/v1",
        "Widget",
        "c",
        json!({"targetRef": {"kind": "Gadget", "name": "b"}}),
    );
    let tops = vec![bystander, b, a];
    let g = build(&nodes(&tops));
    let err = g.order().unwrap_err();
    let members: Vec<String> = err.members.iter().map(ToString::to_string).collect();
    assert_eq!(members, ["Gadget/default/b", "Widget/default/a"]);
    assert_eq!(
        err.to_string(),
        "dependency cycle: Gadget/default/b -> Widget/default/a -> Gadget/default/b"
    );
}

#[test]
fn self_reference_is_not_a_cycle() {
    let a = obj(
        "example.com/v1",
        "Widget",
        "a",
        json!({"selfRef": {"kind": "Widget", "name": "a"}}),
    );
    let tops = vec![a];
    assert_eq!(ordered(&build(&nodes(&tops))), ["Widget/default/a"]);
}

#[test]
fn unresolved_references_are_ignored() {
    let tops = vec![
        aso(
            HCP,
            "HcpOpenShiftClustersNodePool",
            "p",
            json!({"name": "no-such-cluster"}),
        ),
        obj(
            NET,
            "VirtualNetwork",
            "v",
            json!({"owner": {"armId": "/subscriptions/x/resourceGroups/rg"},
            "subnetReference": subnet_ref(), "secretRef": {"name": "no-kind"}}),
        ),
        obj(
            "example.com/v1",
            "Widget",
            "w",
            json!({"targetRef": {"kind": "Widget", "name": "x", "namespace": "other"},
            "thing": {"kind": "Widget", "name": "w2"}}),
        ),
        obj("example.com/v1", "Widget", "w2", json!({})),
    ];
    let g = build(&nodes(&tops));
    assert!((0..g.len()).all(|i| g.dependencies(i).is_empty()), "{g}");
    assert_eq!(g.order().unwrap(), [0, 1, 2, 3]);
}

#[test]
fn order_is_stable() {
    let tops = vec![
        aso(NET, "VirtualNetwork", "v", json!({"name": "rg"})),
        obj("v1", "ConfigMap", "c1", json!({})),
        aso(RG, "ResourceGroup", "rg", Value::Null),
        obj("v1", "ConfigMap", "c2", json!({})),
    ];
    let g = build(&nodes(&tops));
    assert_eq!(
        ordered(&g),
        [
            "ConfigMap/default/c1",
            "ResourceGroup/default/rg",
            "VirtualNetwork/default/v",
            "ConfigMap/default/c2"
        ]
    );
    assert_eq!(ordered(&build(&nodes(&tops))), ordered(&g));
}

#[test]
fn owners_explicit_implied_and_by_name() {
    let tops = vec![
        aso(RG, "ResourceGroup", "shared", Value::Null),
        aso(NET, "VirtualNetwork", "shared", json!({"name": "shared"})),
        aso(
            NET,
            "NetworkSecurityGroup",
            "implied",
            json!({"name": "shared"}),
        ),
        aso(
            NET,
            "NetworkSecurityGroup",
            "explicit",
            json!({"group": "network.azure.com", "kind": "VirtualNetwork", "name": "shared"}),
        ),
        aso(
            NET,
            "NetworkSecurityGroupsSecurityRule",
            "rule",
            json!({"name": "implied"}),
        ),
        aso(
            "authorization.azure.com/v1api20220401",
            "RoleAssignment",
            "ra",
            json!({"name": "implied"}),
        ),
    ];
    let g = build(&nodes(&tops));
    assert_eq!(
        deps(&g, "NetworkSecurityGroup/default/implied"),
        ["ResourceGroup/default/shared"]
    );
    assert_eq!(
        deps(&g, "NetworkSecurityGroup/default/explicit"),
        ["VirtualNetwork/default/shared"]
    );
    assert_eq!(
        deps(&g, "NetworkSecurityGroupsSecurityRule/default/rule"),
        ["NetworkSecurityGroup/default/implied"]
    );
    assert_eq!(
        deps(&g, "RoleAssignment/default/ra"),
        ["NetworkSecurityGroup/default/implied"]
    );
}

#[test]
fn namespaces_and_crds_come_first() {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com", "names": {"kind": "Widget"}}});
    let tops = vec![
        obj("v1", "ConfigMap", "c", json!({})),
        obj("example.com/v1", "Widget", "w", json!({})),
        crd,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "unrelated"}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
    ];
    let g = build(&nodes(&tops));
    assert_eq!(
        ordered(&g),
        [
            "CustomResourceDefinition/widgets.example.com",
            "Namespace/unrelated",
            "Namespace/default",
            "ConfigMap/default/c",
            "Widget/default/w"
        ]
    );
    assert_eq!(
        deps(&g, "Widget/default/w"),
        [
            "CustomResourceDefinition/widgets.example.com",
            "Namespace/default"
        ]
    );
    assert_eq!(deps(&g, "ConfigMap/default/c"), ["Namespace/default"]);
}

#[test]
fn service_then_endpoints_then_apiservice() {
    let api_service = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1.route.openshift.io"},
        "spec": {"group": "route.openshift.io", "version": "v1", "service": {"namespace": NS, "name": "api"}}});
    let tops = vec![
        api_service,
        json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "api", "namespace": NS}}),
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "api-x1", "namespace": NS, "labels": {"kubernetes.io/service-name": "api"}}}),
        obj("v1", "Service", "api", json!({"ports": [{"port": 443}]})),
        json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "other", "namespace": NS}}),
    ];
    let g = build(&nodes(&tops));
    assert_eq!(
        ordered(&g),
        [
            "Service/default/api",
            "Endpoints/default/api",
            "EndpointSlice/default/api-x1",
            "APIService/v1.route.openshift.io",
            "Endpoints/default/other"
        ]
    );
    assert!(
        g.dependencies(find(&g, "Endpoints/default/other"))
            .is_empty()
    );
}

//! References inside a unit, resolved before anything is applied:
//!
//! - the cluster's managed resource group is not its own resource group (ARO HCP creates and
//!   owns the managed one);
//! - an ASO reference (`{group, kind, name}`: the cluster's identities, its subnet and network
//!   security group, a node pool's subnet, a subnet's NSG) has the kind its field takes and names
//!   a resource the unit declares in the same namespace;
//! - Cluster API: a Cluster's infrastructureRef and controlPlaneRef, and a MachinePool's
//!   clusterName and infrastructureRef, name objects of the unit in the same namespace.

use super::{Declared, Item, Problem};
use crate::kinds::{HCP_CLUSTER, HCP_GROUP};
use serde_json::Value;

const CAPI_GROUP: &str = "cluster.x-k8s.io";

/// The kind a reference field takes, by the field's name (and, for lists and maps of identity
/// references, the name of the field holding them).
fn expected_kind(path: &[String]) -> Option<(&'static str, &'static str, &'static str)> {
    const UAI: (&str, &str, &str) = (
        "managedidentity.azure.com",
        "UserAssignedIdentity",
        "an identity reference",
    );
    let key = path
        .iter()
        .rev()
        .find(|k| k.parse::<usize>().is_err() && *k != "reference")?;
    if path.iter().any(|k| k == "userAssignedIdentities") || key.ends_with("IdentityReference") {
        return Some(UAI);
    }
    if key.starts_with("subnet") {
        return Some((
            "network.azure.com",
            "VirtualNetworksSubnet",
            "a subnet reference",
        ));
    }
    if key.starts_with("networkSecurityGroup") {
        return Some((
            "network.azure.com",
            "NetworkSecurityGroup",
            "a network security group reference",
        ));
    }
    None
}

/// Every `{kind, name}` object under `value` (the references), with its path; not the owner.
fn references<'a>(
    value: &'a Value,
    path: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, &'a Value)>,
) {
    match value {
        Value::Object(map) => {
            if map.get("name").is_some_and(Value::is_string)
                && map.get("kind").is_some_and(Value::is_string)
            {
                out.push((path.clone(), value));
                return;
            }
            for (k, v) in map {
                if k == "owner" && path.len() == 1 {
                    continue;
                }
                path.push(k.clone());
                references(v, path, out);
                path.pop();
            }
        }
        Value::Array(list) => {
            for (i, v) in list.iter().enumerate() {
                path.push(i.to_string());
                references(v, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn pointer(path: &[String]) -> String {
    path.iter()
        .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// ASO references of one embedded or declared ASO resource.
fn aso_references(declared: &Declared, item: &Item, out: &mut Vec<Problem>) {
    let Some(spec) = item.value.get("spec") else {
        return;
    };
    let mut found = Vec::new();
    references(spec, &mut vec!["spec".to_string()], &mut found);
    for (path, reference) in found {
        let at = pointer(&path);
        let kind = reference["kind"].as_str().unwrap_or_default();
        let name = reference["name"].as_str().unwrap_or_default();
        let group = reference.get("group").and_then(Value::as_str);
        if let Some((want_group, want_kind, what)) = expected_kind(&path)
            && (kind != want_kind || group.is_some_and(|g| g != want_group))
        {
            out.push(item.problem(
                &format!("{at}/kind"),
                format!(
                    "kind {kind}{}: {what} names a {want_kind} (group {want_group})",
                    group.map(|g| format!(" (group {g})")).unwrap_or_default()
                ),
            ));
            continue;
        }
        let resolves = declared.items.iter().any(|i| {
            i.namespace == item.namespace
                && i.kind == kind
                && i.name == name
                && group.is_none_or(|g| g == i.group)
        });
        if !resolves {
            out.push(item.problem(
                &format!("{at}/name"),
                format!(
                    "{kind} {name:?} is not declared: a reference names a resource of the unit in namespace {} (declare it among the ARO objects' resources, or fix the name)",
                    item.namespace
                ),
            ));
        }
    }
}

/// The group a Cluster API reference names: `apiGroup` (v1beta2) or the group of `apiVersion`.
fn ref_group(reference: &Value) -> Option<&str> {
    reference
        .get("apiGroup")
        .and_then(Value::as_str)
        .or_else(|| {
            reference
                .get("apiVersion")
                .and_then(Value::as_str)
                .map(|a| a.rsplit_once('/').map_or("", |(g, _)| g))
        })
}

/// A Cluster API object reference at `at` of `item`: it names an object of the unit.
fn capi_reference(declared: &Declared, item: &Item, at: &str, whose: &str, out: &mut Vec<Problem>) {
    let Some(reference) = item.value.pointer(at) else {
        return;
    };
    let (Some(kind), Some(name)) = (
        reference.get("kind").and_then(Value::as_str),
        reference.get("name").and_then(Value::as_str),
    ) else {
        return;
    };
    let group = ref_group(reference);
    // Only the ARO providers' kinds are ours to resolve.
    if !kind.starts_with("ARO") {
        return;
    }
    let found = declared.items.iter().any(|i| {
        i.at.is_none()
            && i.namespace == item.namespace
            && i.kind == kind
            && i.name == name
            && group.is_none_or(|g| g == i.group)
    });
    if !found {
        out.push(item.problem(
            &format!("{at}/name"),
            format!(
                "names {kind} {name:?}, which the unit does not declare in namespace {}: {whose} points to the unit's {kind}{}",
                item.namespace,
                candidates(declared, item.namespace, kind)
            ),
        ));
    }
}

/// ` (NAME, ...)`: the objects of `kind` the unit declares in `namespace`, for the message.
fn candidates(declared: &Declared, namespace: &str, kind: &str) -> String {
    let names: Vec<&str> = declared
        .items
        .iter()
        .filter(|i| i.at.is_none() && i.namespace == namespace && i.kind == kind)
        .map(|i| i.name)
        .collect();
    if names.is_empty() {
        String::new()
    } else {
        format!(" ({})", names.join(", "))
    }
}

fn capi_references(declared: &Declared, out: &mut Vec<Problem>) {
    for cluster in declared.of_kind(CAPI_GROUP, "Cluster") {
        capi_reference(
            declared,
            cluster,
            "/spec/infrastructureRef",
            "a Cluster's infrastructureRef",
            out,
        );
        capi_reference(
            declared,
            cluster,
            "/spec/controlPlaneRef",
            "a Cluster's controlPlaneRef",
            out,
        );
    }
    for pool in declared.of_kind(CAPI_GROUP, "MachinePool") {
        for at in ["/spec/clusterName", "/spec/template/spec/clusterName"] {
            let Some(name) = pool.str(at) else { continue };
            if declared
                .find(pool.namespace, CAPI_GROUP, "Cluster", name)
                .is_none()
            {
                out.push(pool.problem(
                    at,
                    format!(
                        "names Cluster {name:?}, which the unit does not declare in namespace {}: a MachinePool belongs to a Cluster of its namespace{}",
                        pool.namespace,
                        candidates(declared, pool.namespace, "Cluster")
                    ),
                ));
            }
        }
        capi_reference(
            declared,
            pool,
            "/spec/template/spec/infrastructureRef",
            "a MachinePool's infrastructureRef",
            out,
        );
    }
}

/// The Azure name of the resource group `name` (its `azureName`, else its name), when declared.
fn resource_group_name<'a>(declared: &'a Declared, namespace: &str, name: &'a str) -> &'a str {
    declared
        .find(namespace, "resources.azure.com", "ResourceGroup", name)
        .and_then(|rg| rg.str("/spec/azureName"))
        .unwrap_or(name)
}

fn managed_resource_groups(declared: &Declared, out: &mut Vec<Problem>) {
    for cluster in declared.of_kind(HCP_GROUP, HCP_CLUSTER) {
        let (Some(managed), Some(owner)) = (
            cluster.str("/spec/properties/platform/managedResourceGroup"),
            cluster.str("/spec/owner/name"),
        ) else {
            continue;
        };
        let own = resource_group_name(declared, cluster.namespace, owner);
        if managed.eq_ignore_ascii_case(own) {
            out.push(cluster.problem(
                "/spec/properties/platform/managedResourceGroup",
                format!(
                    "{managed:?} is the cluster's own resource group: ARO HCP creates the managed resource group and owns what is in it, so managedResourceGroup names a resource group of its own"
                ),
            ));
        }
    }
}

pub(super) fn problems(declared: &Declared) -> Vec<Problem> {
    let mut out = Vec::new();
    managed_resource_groups(declared, &mut out);
    for item in declared
        .items
        .iter()
        .filter(|i| i.group.ends_with(".azure.com"))
    {
        aso_references(declared, item, &mut out);
    }
    capi_references(declared, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use crate::validate::aro::testutil::{messages, set, unit};

    const HCP: &str = "/spec/resources/0/spec/properties/platform";

    #[test]
    fn the_managed_resource_group_is_not_the_clusters_own() {
        let mut objects = unit();
        set(
            &mut objects,
            "AROControlPlane",
            &format!("{HCP}/managedResourceGroup"),
            "ARO-DEV-RG",
        );
        assert_eq!(
            messages(objects),
            [format!(
                "AROControlPlane: {HCP}/managedResourceGroup: \"ARO-DEV-RG\" is the cluster's own resource group: ARO HCP creates the managed resource group and owns what is in it, so managedResourceGroup names a resource group of its own"
            )]
        );
    }

    #[test]
    fn an_aso_reference_names_a_declared_resource_of_its_kind() {
        let mut objects = unit();
        let ingress = format!(
            "{HCP}/operatorsAuthentication/userAssignedIdentities/controlPlaneOperatorsReferences/control-plane/name"
        );
        set(
            &mut objects,
            "AROControlPlane",
            &ingress,
            "aro-dev-cp-nobody",
        );
        assert_eq!(
            messages(objects),
            [format!(
                "AROControlPlane: {ingress}: UserAssignedIdentity \"aro-dev-cp-nobody\" is not declared: a reference names a resource of the unit in namespace aro-dev (declare it among the ARO objects' resources, or fix the name)"
            )]
        );
        let mut objects = unit();
        set(
            &mut objects,
            "AROControlPlane",
            "/spec/resources/0/spec/identity/userAssignedIdentities/0/reference/kind",
            "Vault",
        );
        assert_eq!(
            messages(objects),
            [
                "AROControlPlane: /spec/resources/0/spec/identity/userAssignedIdentities/0/reference/kind: kind Vault (group managedidentity.azure.com): an identity reference names a UserAssignedIdentity (group managedidentity.azure.com)"
            ]
        );
        // A node pool's subnet, a subnet's NSG.
        let mut objects = unit();
        set(
            &mut objects,
            "AROMachinePool",
            "/spec/resources/0/spec/properties/platform/subnetReference/name",
            "aro-dev-nosubnet",
        );
        set(
            &mut objects,
            "AROCluster",
            "/spec/resources/3/spec/networkSecurityGroup/reference/kind",
            "VirtualNetwork",
        );
        let m = messages(objects);
        assert_eq!(m.len(), 2, "{m:?}");
        assert!(m[0].starts_with("AROCluster: /spec/resources/3/spec/networkSecurityGroup/reference/kind: kind VirtualNetwork (group network.azure.com): a network security group reference names a NetworkSecurityGroup"), "{}", m[0]);
        assert!(m[1].starts_with("AROMachinePool: /spec/resources/0/spec/properties/platform/subnetReference/name: VirtualNetworksSubnet \"aro-dev-nosubnet\" is not declared"), "{}", m[1]);
    }

    #[test]
    fn cluster_api_references_name_objects_of_the_unit() {
        let mut objects = unit();
        set(
            &mut objects,
            "Cluster",
            "/spec/infrastructureRef/name",
            "nowhere",
        );
        set(
            &mut objects,
            "Cluster",
            "/spec/controlPlaneRef/name",
            "elsewhere",
        );
        set(&mut objects, "MachinePool", "/spec/clusterName", "nowhere");
        set(
            &mut objects,
            "MachinePool",
            "/spec/template/spec/infrastructureRef/name",
            "gone",
        );
        assert_eq!(
            messages(objects),
            [
                "Cluster: /spec/infrastructureRef/name: names AROCluster \"nowhere\", which the unit does not declare in namespace aro-dev: a Cluster's infrastructureRef points to the unit's AROCluster (dev)",
                "Cluster: /spec/controlPlaneRef/name: names AROControlPlane \"elsewhere\", which the unit does not declare in namespace aro-dev: a Cluster's controlPlaneRef points to the unit's AROControlPlane (dev)",
                "MachinePool: /spec/clusterName: names Cluster \"nowhere\", which the unit does not declare in namespace aro-dev: a MachinePool belongs to a Cluster of its namespace (dev)",
                "MachinePool: /spec/template/spec/infrastructureRef/name: names AROMachinePool \"gone\", which the unit does not declare in namespace aro-dev: a MachinePool's infrastructureRef points to the unit's AROMachinePool (dev-workers)",
            ]
        );
    }

    #[test]
    fn another_providers_kinds_are_not_resolved_here() {
        let mut objects = unit();
        set(
            &mut objects,
            "Cluster",
            "/spec/infrastructureRef/kind",
            "AzureCluster",
        );
        set(
            &mut objects,
            "Cluster",
            "/spec/infrastructureRef/name",
            "elsewhere",
        );
        assert!(messages(objects).is_empty());
    }
}

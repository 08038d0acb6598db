//! The project's reference CustomResourceDefinitions, one per kind the agent handles: the local control
//! plane installs them at start, and `validate` checks rendered custom resources against them unless
//! the target cluster's own CRDs were read.
//!
//! The definitions live as YAML next to this file (`crds/<plural>.<group>.yaml`) and are compiled into the
//! binary. They are the project's own, smaller schemas: typed where the agent reads a field (ARO kinds'
//! `spec.resources`, `status.conditions`, ASO `spec.owner`, ...) and keeping unknown fields elsewhere, so
//! nothing the agent or a user writes is pruned away by a schema that does not model it.

use serde_json::Value;

/// Every preloaded CRD file, in the order [`preloaded`] returns them: CAPI, ARO (CAPZ), policy, ASO,
/// then the Azure simulator's record of simulated Azure resources.
const FILES: &[(&str, &str)] = &[
    (
        "clusters.cluster.x-k8s.io.yaml",
        include_str!("crds/clusters.cluster.x-k8s.io.yaml"),
    ),
    (
        "machinepools.cluster.x-k8s.io.yaml",
        include_str!("crds/machinepools.cluster.x-k8s.io.yaml"),
    ),
    (
        "aroclusters.infrastructure.cluster.x-k8s.io.yaml",
        include_str!("crds/aroclusters.infrastructure.cluster.x-k8s.io.yaml"),
    ),
    (
        "arocontrolplanes.controlplane.cluster.x-k8s.io.yaml",
        include_str!("crds/arocontrolplanes.controlplane.cluster.x-k8s.io.yaml"),
    ),
    (
        "aromachinepools.infrastructure.cluster.x-k8s.io.yaml",
        include_str!("crds/aromachinepools.infrastructure.cluster.x-k8s.io.yaml"),
    ),
    (
        "azureclusteridentities.infrastructure.cluster.x-k8s.io.yaml",
        include_str!("crds/azureclusteridentities.infrastructure.cluster.x-k8s.io.yaml"),
    ),
    (
        "autonodepolicies.karpenter.hypershift.openshift.io.yaml",
        include_str!("crds/autonodepolicies.karpenter.hypershift.openshift.io.yaml"),
    ),
    (
        "resourcegroups.resources.azure.com.yaml",
        include_str!("crds/resourcegroups.resources.azure.com.yaml"),
    ),
    (
        "virtualnetworks.network.azure.com.yaml",
        include_str!("crds/virtualnetworks.network.azure.com.yaml"),
    ),
    (
        "virtualnetworkssubnets.network.azure.com.yaml",
        include_str!("crds/virtualnetworkssubnets.network.azure.com.yaml"),
    ),
    (
        "networksecuritygroups.network.azure.com.yaml",
        include_str!("crds/networksecuritygroups.network.azure.com.yaml"),
    ),
    (
        "vaults.keyvault.azure.com.yaml",
        include_str!("crds/vaults.keyvault.azure.com.yaml"),
    ),
    (
        "userassignedidentities.managedidentity.azure.com.yaml",
        include_str!("crds/userassignedidentities.managedidentity.azure.com.yaml"),
    ),
    (
        "roleassignments.authorization.azure.com.yaml",
        include_str!("crds/roleassignments.authorization.azure.com.yaml"),
    ),
    (
        "hcpopenshiftclusters.redhatopenshift.azure.com.yaml",
        include_str!("crds/hcpopenshiftclusters.redhatopenshift.azure.com.yaml"),
    ),
    (
        "hcpopenshiftclustersnodepools.redhatopenshift.azure.com.yaml",
        include_str!("crds/hcpopenshiftclustersnodepools.redhatopenshift.azure.com.yaml"),
    ),
    (
        "hcpopenshiftclustersexternalauths.redhatopenshift.azure.com.yaml",
        include_str!("crds/hcpopenshiftclustersexternalauths.redhatopenshift.azure.com.yaml"),
    ),
    (
        "simulatedazureresources.azuresim.aro-gitops.dev.yaml",
        include_str!("crds/simulatedazureresources.azuresim.aro-gitops.dev.yaml"),
    ),
];

/// The reference CRDs, parsed, in a stable order (the control plane installs them at start unless
/// preloading is turned off).
pub fn preloaded() -> Vec<Value> {
    FILES
        .iter()
        .map(|(file, text)| {
            // The files are compiled in and every one is parsed by the tests below, so this cannot fail at run time.
            crate::yaml::from_str(text).unwrap_or_else(|e| panic!("src/crds/{file}: {e}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Every kind the agent handles, as (group, kind, served versions, storage version).
    const EXPECTED: &[(&str, &str, &[&str], &str)] = &[
        (
            "cluster.x-k8s.io",
            "Cluster",
            &["v1beta2", "v1beta1"],
            "v1beta2",
        ),
        (
            "cluster.x-k8s.io",
            "MachinePool",
            &["v1beta2", "v1beta1"],
            "v1beta2",
        ),
        (
            "infrastructure.cluster.x-k8s.io",
            "AROCluster",
            &["v1beta2"],
            "v1beta2",
        ),
        (
            "controlplane.cluster.x-k8s.io",
            "AROControlPlane",
            &["v1beta2"],
            "v1beta2",
        ),
        (
            "infrastructure.cluster.x-k8s.io",
            "AROMachinePool",
            &["v1beta2"],
            "v1beta2",
        ),
        (
            "infrastructure.cluster.x-k8s.io",
            "AzureClusterIdentity",
            &["v1beta1"],
            "v1beta1",
        ),
        (
            "karpenter.hypershift.openshift.io",
            "AutoNodePolicy",
            &["v1beta1"],
            "v1beta1",
        ),
        (
            "resources.azure.com",
            "ResourceGroup",
            &["v1api20200601"],
            "v1api20200601",
        ),
        (
            "network.azure.com",
            "VirtualNetwork",
            &["v1api20201101"],
            "v1api20201101",
        ),
        (
            "network.azure.com",
            "VirtualNetworksSubnet",
            &["v1api20201101"],
            "v1api20201101",
        ),
        (
            "network.azure.com",
            "NetworkSecurityGroup",
            &["v1api20201101"],
            "v1api20201101",
        ),
        (
            "keyvault.azure.com",
            "Vault",
            &["v1api20230701"],
            "v1api20230701",
        ),
        (
            "managedidentity.azure.com",
            "UserAssignedIdentity",
            &["v1api20230131"],
            "v1api20230131",
        ),
        (
            "authorization.azure.com",
            "RoleAssignment",
            &["v1api20220401"],
            "v1api20220401",
        ),
        (
            "redhatopenshift.azure.com",
            "HcpOpenShiftCluster",
            HCP_VERSIONS,
            "v1api20240610preview",
        ),
        (
            "redhatopenshift.azure.com",
            "HcpOpenShiftClustersNodePool",
            HCP_VERSIONS,
            "v1api20240610preview",
        ),
        (
            "redhatopenshift.azure.com",
            "HcpOpenShiftClustersExternalAuth",
            HCP_VERSIONS,
            "v1api20240610preview",
        ),
        (
            "azuresim.aro-gitops.dev",
            "SimulatedAzureResource",
            &["v1alpha1"],
            "v1alpha1",
        ),
    ];
    const HCP_VERSIONS: &[&str] = &["v1api20240610preview", "v1api20251223preview"];

    /// `spec.group` and `spec.names.plural` of a CRD, empty when absent.
    fn group_and_plural(crd: &Value) -> (&str, &str) {
        let spec = &crd["spec"];
        (
            spec["group"].as_str().unwrap_or(""),
            spec["names"]["plural"].as_str().unwrap_or(""),
        )
    }

    fn versions(crd: &Value) -> &Vec<Value> {
        crd["spec"]["versions"]
            .as_array()
            .expect("spec.versions is a list")
    }

    #[test]
    fn every_file_is_a_v1_crd_named_after_its_plural_and_group() {
        let crds = preloaded();
        assert_eq!(crds.len(), FILES.len());
        for ((file, _), crd) in FILES.iter().zip(&crds) {
            assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1", "{file}");
            assert_eq!(crd["kind"], "CustomResourceDefinition", "{file}");
            let (group, plural) = group_and_plural(crd);
            let name = format!("{plural}.{group}");
            assert_eq!(crd["metadata"]["name"], name.as_str(), "{file}");
            assert_eq!(
                *file,
                format!("{name}.yaml"),
                "file name follows <plural>.<group>.yaml"
            );
            assert_eq!(crd["spec"]["scope"], "Namespaced", "{file}");
            let names = &crd["spec"]["names"];
            let kind = names["kind"].as_str().expect("names.kind");
            assert_eq!(names["listKind"], format!("{kind}List").as_str(), "{file}");
            assert_eq!(names["singular"], kind.to_lowercase().as_str(), "{file}");
            assert_eq!(
                plural,
                plural.to_lowercase(),
                "{file}: plural is lower case"
            );
        }
    }

    #[test]
    fn exactly_one_storage_version_and_every_version_has_schema_status_and_age() {
        for crd in preloaded() {
            let name = crd["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let storage = versions(&crd)
                .iter()
                .filter(|v| v["storage"] == true)
                .count();
            assert_eq!(storage, 1, "{name}: storage versions");
            if versions(&crd).len() > 1 {
                assert_eq!(crd["spec"]["conversion"]["strategy"], "None", "{name}");
            }
            for v in versions(&crd) {
                let version = v["name"].as_str().unwrap_or_default();
                assert_eq!(v["served"], true, "{name} {version}");
                assert_eq!(
                    v["subresources"]["status"],
                    serde_json::json!({}),
                    "{name} {version}"
                );
                let schema = &v["schema"]["openAPIV3Schema"];
                assert_eq!(schema["type"], "object", "{name} {version}");
                for part in ["spec", "status"] {
                    assert_eq!(
                        schema["properties"][part]["type"], "object",
                        "{name} {version} {part}"
                    );
                }
                let columns = v["additionalPrinterColumns"]
                    .as_array()
                    .expect("printer columns");
                assert!(
                    columns
                        .iter()
                        .any(|c| c["name"] == "Age"
                            && c["jsonPath"] == ".metadata.creationTimestamp"),
                    "{name} {version}: Age column"
                );
            }
        }
    }

    /// The structural-schema rules a real API server enforces, checked on every node of every schema.
    fn check_structural(node: &Value, path: &str, errors: &mut Vec<String>) {
        let preserve = node["x-kubernetes-preserve-unknown-fields"] == true;
        let int_or_string = node["x-kubernetes-int-or-string"] == true;
        if node.get("type").is_none() && !preserve && !int_or_string {
            errors.push(format!("{path}: no type"));
        }
        if let Some(props) = node["properties"].as_object() {
            for (key, child) in props {
                check_structural(child, &format!("{path}.{key}"), errors);
            }
        }
        if let Some(extra) = node.get("additionalProperties").filter(|v| v.is_object()) {
            check_structural(extra, &format!("{path}.*"), errors);
        }
        if node["type"] == "array" {
            match node.get("items") {
                Some(items) => check_structural(items, &format!("{path}[]"), errors),
                None => errors.push(format!("{path}: array without items")),
            }
        }
        if node["x-kubernetes-list-type"] == "map" {
            let required: Vec<&str> = node["items"]["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            for key in node["x-kubernetes-list-map-keys"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let key = key.as_str().unwrap_or_default();
                let scalar = matches!(
                    node["items"]["properties"][key]["type"].as_str(),
                    Some("string" | "integer" | "boolean")
                );
                if !scalar || !required.contains(&key) {
                    errors.push(format!(
                        "{path}: list-map key {key} must be a required scalar"
                    ));
                }
            }
        }
    }

    #[test]
    fn schemas_are_structural() {
        let mut errors = Vec::new();
        for crd in preloaded() {
            let name = crd["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            for v in versions(&crd) {
                let path = format!("{name}/{}", v["name"].as_str().unwrap_or_default());
                check_structural(&v["schema"]["openAPIV3Schema"], &path, &mut errors);
            }
        }
        assert!(errors.is_empty(), "{errors:#?}");
    }

    #[test]
    fn every_conditions_list_is_a_map_keyed_by_type() {
        fn walk(node: &Value, path: &str, found: &mut usize) {
            if let Some(props) = node["properties"].as_object() {
                for (key, child) in props {
                    let here = format!("{path}.{key}");
                    if key == "conditions" {
                        *found += 1;
                        assert_eq!(child["x-kubernetes-list-type"], "map", "{here}");
                        assert_eq!(
                            child["x-kubernetes-list-map-keys"],
                            serde_json::json!(["type"]),
                            "{here}"
                        );
                    }
                    walk(child, &here, found);
                }
            }
        }
        for crd in preloaded() {
            let name = crd["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            for v in versions(&crd) {
                let schema = &v["schema"]["openAPIV3Schema"];
                let mut found = 0;
                walk(schema, &name, &mut found);
                // The simulator's record of Azure resources has no conditions.
                if name.ends_with(".azuresim.aro-gitops.dev") {
                    continue;
                }
                assert!(found >= 1, "{name}: status.conditions is modelled");
                assert_eq!(
                    schema["properties"]["status"]["properties"]["conditions"]["type"], "array",
                    "{name}"
                );
            }
        }
    }

    #[test]
    fn names_are_unique_across_files() {
        let crds = preloaded();
        let mut crd_names = BTreeSet::new();
        let mut resources = BTreeSet::new();
        for crd in &crds {
            let name = crd["metadata"]["name"].as_str().unwrap_or_default();
            assert!(crd_names.insert(name.to_string()), "duplicate CRD {name}");
            let (group, _) = group_and_plural(crd);
            let names = &crd["spec"]["names"];
            let mut all: Vec<&str> = vec![
                names["plural"].as_str().unwrap_or_default(),
                names["singular"].as_str().unwrap_or_default(),
                names["kind"].as_str().unwrap_or_default(),
            ];
            all.extend(
                names["shortNames"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str),
            );
            for n in all {
                // A kind or a plural may repeat across groups (as on any cluster), not within one.
                assert!(
                    resources.insert((group.to_string(), n.to_string())),
                    "{group}: {n} used twice"
                );
            }
        }
        // Short names are resolved by kubectl across all groups: they must not collide anywhere.
        let shorts: Vec<&str> = crds
            .iter()
            .flat_map(|c| {
                c["spec"]["names"]["shortNames"]
                    .as_array()
                    .into_iter()
                    .flatten()
            })
            .filter_map(Value::as_str)
            .collect();
        let unique: BTreeSet<&&str> = shorts.iter().collect();
        assert_eq!(unique.len(), shorts.len(), "{shorts:?}");
    }

    #[test]
    fn covers_every_kind_the_agent_handles() {
        let crds = preloaded();
        assert_eq!(crds.len(), EXPECTED.len());
        for (group, kind, served, storage) in EXPECTED {
            let crd = crds
                .iter()
                .find(|c| c["spec"]["group"] == *group && c["spec"]["names"]["kind"] == *kind)
                .unwrap_or_else(|| panic!("no CRD for {kind}.{group}"));
            let names: Vec<&str> = versions(crd)
                .iter()
                .filter_map(|v| v["name"].as_str())
                .collect();
            assert_eq!(&names, served, "{kind}.{group}: versions");
            let stored: Vec<&str> = versions(crd)
                .iter()
                .filter(|v| v["storage"] == true)
                .filter_map(|v| v["name"].as_str())
                .collect();
            assert_eq!(stored, vec![*storage], "{kind}.{group}: storage version");
        }
    }

    #[test]
    fn aso_kinds_show_the_ready_condition_and_sit_in_the_azure_category() {
        for crd in preloaded() {
            let (group, _) = group_and_plural(&crd);
            if !group.ends_with(".azure.com") {
                continue;
            }
            let categories = &crd["spec"]["names"]["categories"];
            assert!(
                categories
                    .as_array()
                    .is_some_and(|c| c.contains(&"azure".into())),
                "{group}"
            );
            for v in versions(&crd) {
                let columns: Vec<(&str, &str)> = v["additionalPrinterColumns"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        (
                            c["name"].as_str().unwrap_or(""),
                            c["jsonPath"].as_str().unwrap_or(""),
                        )
                    })
                    .collect();
                for (column, field) in [
                    ("Ready", "status"),
                    ("Severity", "severity"),
                    ("Reason", "reason"),
                    ("Message", "message"),
                ] {
                    let path = format!(".status.conditions[?(@.type==\"Ready\")].{field}");
                    assert!(
                        columns.contains(&(column, path.as_str())),
                        "{group}: {column} column"
                    );
                }
                let spec = &v["schema"]["openAPIV3Schema"]["properties"]["spec"];
                // A resource group has no owner in ASO (it lives in the subscription).
                if crd["spec"]["names"]["kind"] != "ResourceGroup" {
                    assert_eq!(
                        spec["properties"]["owner"]["properties"]["name"]["type"], "string",
                        "{group}"
                    );
                }
                assert_eq!(
                    spec["x-kubernetes-preserve-unknown-fields"], true,
                    "{group}"
                );
            }
        }
    }

    #[test]
    fn aro_kinds_embed_resources_that_keep_every_field() {
        for crd in preloaded() {
            let kind = crd["spec"]["names"]["kind"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if !kind.starts_with("ARO") {
                continue;
            }
            assert_eq!(
                crd["spec"]["names"]["categories"],
                serde_json::json!(["cluster-api"]),
                "{kind}"
            );
            let schema = &versions(&crd)[0]["schema"]["openAPIV3Schema"]["properties"];
            let resources = &schema["spec"]["properties"]["resources"];
            assert_eq!(resources["type"], "array", "{kind}");
            assert_eq!(
                resources["items"]["x-kubernetes-preserve-unknown-fields"], true,
                "{kind}"
            );
            assert_eq!(
                schema["status"]["properties"]["ready"]["type"], "boolean",
                "{kind}"
            );
            assert_eq!(
                schema["status"]["properties"]["resources"]["type"], "array",
                "{kind}"
            );
        }
    }
}

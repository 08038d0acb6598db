//! Tests over `examples-repo/`: the example fleet, rendered unit by unit, validates clean, and
//! broken copies of it are caught.

use super::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples-repo")
}

/// The objects of one unit, rendered as the agent renders it.
fn unit_objects(name: &str) -> Vec<SourcedObject> {
    crate::render::render(&repo_root(), Path::new("clusters").join(name).as_path())
        .unwrap_or_else(|e| panic!("clusters/{name}: {e}"))
}

/// Every object of every unit.
fn all_objects() -> Vec<SourcedObject> {
    ["dev", "prod"]
        .iter()
        .flat_map(|n| unit_objects(n))
        .collect()
}

fn rendered(messages: &[ValidationError]) -> Vec<String> {
    messages.iter().map(ToString::to_string).collect()
}

fn find<'a>(objects: &'a mut [SourcedObject], kind: &str, name: &str) -> &'a mut Value {
    let found = objects
        .iter_mut()
        .find(|o| o.object["kind"] == kind && o.object["metadata"]["name"] == name);
    &mut found
        .unwrap_or_else(|| panic!("no {kind} {name} in the examples"))
        .object
}

#[test]
fn every_example_unit_validates_clean() {
    let objects = all_objects();
    assert!(
        objects.len() >= 18,
        "only {} objects found under {}",
        objects.len(),
        repo_root().display()
    );
    let errors = validate(&objects);
    assert!(errors.is_empty(), "{:#?}", rendered(&errors));
}

#[test]
fn each_cluster_unit_validates_clean_in_its_namespace() {
    for name in ["dev", "prod"] {
        let objects = unit_objects(name);
        let errors = validate(&objects);
        assert!(errors.is_empty(), "{name}: {:#?}", rendered(&errors));
        let namespace = format!("aro-{name}");
        let mut kinds = BTreeSet::new();
        for o in &objects {
            let key = ObjectKey::from_object(&o.object).unwrap();
            if key.kind != "Namespace" {
                assert_eq!(key.namespace.as_deref(), Some(namespace.as_str()), "{key}");
            }
            kinds.insert(key.kind);
        }
        let expected = [
            "AROCluster",
            "AROControlPlane",
            "AROMachinePool",
            "AutoNodePolicy",
            "AzureClusterIdentity",
            "Cluster",
            "MachinePool",
            "Namespace",
        ];
        assert_eq!(
            kinds,
            expected
                .iter()
                .map(|k| crate::object::Sym::new(k))
                .collect(),
            "{name}"
        );
        let pools = objects
            .iter()
            .filter(|o| o.object["kind"] == "AROMachinePool")
            .count();
        assert_eq!(pools, 2, "{name}");
    }
}

#[test]
fn azure_names_are_distinct_across_the_fleet() {
    let mut seen = BTreeSet::new();
    for o in all_objects() {
        for (_, entry) in rules::embedded(&o.object) {
            // ASO names a role assignment in Azure by a GUID it derives from the object.
            if entry["kind"] == "RoleAssignment" {
                continue;
            }
            let name = entry
                .pointer("/spec/azureName")
                .and_then(Value::as_str)
                .unwrap()
                .to_string();
            assert!(
                seen.insert(name.clone()),
                "Azure name {name} is used twice ({})",
                o.origin
            );
        }
    }
    assert!(seen.len() >= 30, "{seen:?}");
}

#[test]
fn a_broken_copy_is_caught() {
    let mut objects = all_objects();

    // Schema: the dev control plane loses its HcpOpenShiftCluster.
    let cp = find(&mut objects, "AROControlPlane", "dev");
    cp["spec"]["resources"].as_array_mut().unwrap().remove(0);

    // Policy: an embedded Vault of prod gets an unknown reconcile policy.
    let prod = find(&mut objects, "AROCluster", "prod");
    let vault = prod["spec"]["resources"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r["kind"] == "Vault")
        .unwrap();
    vault["metadata"]["annotations"] = serde_json::json!({RECONCILE_POLICY: "orphan"});

    // Duplicate: the dev workers' AROMachinePool is copied into another file.
    let copy = objects.iter().find(|o| {
        o.object["kind"] == "AROMachinePool" && o.object["metadata"]["name"] == "dev-workers"
    });
    let mut copy = copy.unwrap().clone();
    copy.origin = Origin {
        file: PathBuf::from("clusters/dev/extra.yaml"),
        document: 0,
    };
    objects.push(copy);

    assert_eq!(
        rendered(&validate(&objects)),
        vec![
            "base/cluster/arocontrolplane.yaml: AROControlPlane/aro-dev/dev: /spec/resources: must hold exactly one \
             HcpOpenShiftCluster; it holds none",
            "base/cluster/arocluster.yaml: AROCluster/aro-prod/prod: /spec/resources/4 (Vault/arogitops-prod-kv)/metadata/\
             annotations/serviceoperator.azure.com~1reconcile-policy: \"orphan\" is not a reconcile policy: use manage, \
             skip or detach-on-delete",
            "clusters/dev/extra.yaml: AROMachinePool/aro-dev/dev-workers: defined twice: in base/cluster/machinepools.yaml \
             (document 2) and in clusters/dev/extra.yaml",
            "clusters/dev/extra.yaml: HcpOpenShiftClustersNodePool/aro-dev/aro-dev-workers: defined twice: in \
             base/cluster/machinepools.yaml (document 2) (AROMachinePool/aro-dev/dev-workers spec.resources[0]) and in \
             clusters/dev/extra.yaml (AROMachinePool/aro-dev/dev-workers spec.resources[0])",
        ]
    );
}

//! Tests over `examples-repo/`: the example fleet validates clean, file by file and cluster by
//! cluster, and broken copies of it are caught.

use super::*;
use crate::yaml;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples-repo")
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

/// The objects of one file, with origins relative to the repository root.
fn read_objects(path: &Path) -> Vec<SourcedObject> {
    let text = std::fs::read_to_string(path).unwrap();
    let docs = yaml::from_multi_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file = path.strip_prefix(repo_root()).unwrap().to_path_buf();
    docs.into_iter()
        .enumerate()
        .map(|(document, object)| SourcedObject {
            object,
            origin: Origin {
                file: file.clone(),
                document,
            },
        })
        .collect()
}

fn is_kustomization(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "kustomization.yaml")
}

/// Every object in the repository (kustomization files are the renderer's input, not objects).
fn all_objects() -> Vec<SourcedObject> {
    let mut files = Vec::new();
    yaml_files(&repo_root(), &mut files);
    files
        .iter()
        .filter(|f| !is_kustomization(f))
        .flat_map(|f| read_objects(f))
        .collect()
}

/// The objects of one folder with a kustomization, as the renderer of this stage builds them: its
/// `resources` (files, and folders with a kustomization) in order, then its `namespace` set.
fn unit_objects(dir: &Path) -> Vec<SourcedObject> {
    let kustomization =
        yaml::from_str(&std::fs::read_to_string(dir.join("kustomization.yaml")).unwrap()).unwrap();
    let mut objects = Vec::new();
    for entry in kustomization["resources"].as_array().unwrap() {
        let path = dir.join(entry.as_str().unwrap());
        assert!(
            path.exists(),
            "{} lists {} which does not exist",
            dir.display(),
            path.display()
        );
        if path.is_dir() {
            objects.extend(unit_objects(&path))
        } else {
            objects.extend(read_objects(&path))
        }
    }
    if let Some(ns) = kustomization.get("namespace").and_then(Value::as_str) {
        for o in &mut objects {
            if o.object["kind"] != "Namespace" {
                o.object["metadata"]["namespace"] = Value::from(ns);
            }
        }
    }
    objects
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
fn every_example_file_validates_clean() {
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
    let clusters = repo_root().join("clusters");
    for name in ["dev", "prod"] {
        let objects = unit_objects(&clusters.join(name));
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
            expected.iter().map(|k| k.to_string()).collect(),
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
            "clusters/dev/arocontrolplane.yaml: AROControlPlane/dev: /spec/resources: must hold exactly one HcpOpenShiftCluster; \
             it holds none",
            "clusters/prod/arocluster.yaml: AROCluster/prod: /spec/resources/4 (Vault/arogitops-prod-kv)/metadata/annotations/\
             serviceoperator.azure.com~1reconcile-policy: \"orphan\" is not a reconcile policy: use manage, skip or detach-on-delete",
            "clusters/dev/extra.yaml: AROMachinePool/dev-workers: defined twice: in clusters/dev/machinepools.yaml (document 2) \
             and in clusters/dev/extra.yaml",
            "clusters/dev/extra.yaml: HcpOpenShiftClustersNodePool/aro-dev-workers: defined twice: in \
             clusters/dev/machinepools.yaml (document 2) (AROMachinePool/dev-workers spec.resources[0]) and in \
             clusters/dev/extra.yaml (AROMachinePool/dev-workers spec.resources[0])",
        ]
    );
}

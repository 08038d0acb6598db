//! ASO fidelity: the Azure Service Operator objects the project makes (the resources the ARO kinds
//! embed, as examples-repo and `aro-gitops-fleetgen` render them, and as they are live after a
//! run, status included) checked, strictly, against ASO's own CRDs as a real management cluster
//! has them: `../shared/reference/aso-crds/` next to the repository, read at test time (never
//! copied). And the project's own ASO CRDs (`src/crds/*.azure.com.yaml`, preloaded
//! into the embedded control plane) held to ASO's for every field the project writes or reads.
//!
//! Strict is kubectl's `--validate=strict`: an unknown field is an error, and so is every schema
//! violation (types, required, enums, patterns, lengths). ASO's CRDs have no CEL rules. Without
//! the reference folder the tests say so and pass.

mod common;

use aro_gitops::crdschema::{FieldValidation, SchemaSet};
use aro_gitops::reconcile::aro::keyvault::with_key_version;
use aro_gitops::validate::filled::filled_by_agent;
use common::fleet::Fleet;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "aso_crds/agreement.rs"]
mod agreement;

/// Where ASO's CRDs are: `../shared/reference/aso-crds` from the repository.
fn reference_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/reference/aso-crds")
}

/// ASO's CRDs, read from [`reference_dir`]; `None` (and a line saying so) when it is absent.
fn aso_crds() -> Option<Vec<Value>> {
    let dir = reference_dir();
    if !dir.is_dir() {
        eprintln!(
            "skipped: ASO's CRDs are not at {} (the reference folder next to the repository)",
            dir.display()
        );
        return None;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read the reference folder")
        .map(|e| e.expect("a folder entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    let mut crds = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read a CRD file");
        let docs = aro_gitops::yaml::from_multi_str(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        crds.extend(
            docs.into_iter()
                .filter(|d| d["kind"] == "CustomResourceDefinition"),
        );
    }
    assert!(!crds.is_empty(), "no CRD in {}", dir.display());
    Some(crds)
}

/// ASO's schemas.
fn aso() -> Option<SchemaSet> {
    let crds = aso_crds()?;
    let (set, problems) = SchemaSet::from_crds(&crds);
    assert!(problems.is_empty(), "ASO's CRDs do not read: {problems:?}");
    Some(set)
}

/// Whether `obj` is an ASO object (its group ends in `.azure.com`).
fn is_aso(obj: &Value) -> bool {
    obj["apiVersion"]
        .as_str()
        .and_then(|a| a.rsplit_once('/'))
        .is_some_and(|(g, _)| g.ends_with(".azure.com"))
}

/// The ASO objects of a render: top-level ones, and those the ARO kinds embed in
/// `spec.resources`, with what the agent fills in itself in place (the agent-managed etcd key's
/// version: the agent writes it before the object meets the cluster's schema).
fn aso_objects(rendered: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for obj in rendered {
        if is_aso(obj) {
            out.push(obj.clone());
        }
        let entries = obj
            .pointer("/spec/resources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for entry in entries.filter(|e| is_aso(e)) {
            if filled_by_agent(obj, entry).is_empty() {
                out.push(entry.clone());
            } else {
                out.push(with_key_version(entry, "0a1b2c3d4e5f60718293a4b5c6d7e8f9"));
            }
        }
    }
    out
}

/// What ASO's schema says of `obj` in strict mode, each line naming `origin`, the object and the
/// field; empty when a real management cluster stores it as it is.
fn violations(aso: &SchemaSet, obj: &Value, origin: &str) -> Vec<String> {
    let api = obj["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = api.rsplit_once('/').unwrap_or(("", api));
    let kind = obj["kind"].as_str().unwrap_or_default();
    let name = format!(
        "{origin}: {kind}/{}/{}",
        obj.pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("-"),
        obj.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("-")
    );
    let Some(schema) = aso.get(group, version, kind) else {
        return vec![format!(
            "{name}: ASO serves {kind} as {:?}, not {version}",
            aso.versions(group, kind)
        )];
    };
    let out = schema.validate(obj, FieldValidation::Strict);
    out.errors
        .iter()
        .map(|e| format!("{name}: {e}"))
        .chain(
            out.unknown_field_messages()
                .into_iter()
                .map(|m| format!("{name}: {m}")),
        )
        .collect()
}

/// Checks every object of `objects`; returns how many there were.
fn check_all(
    aso: &SchemaSet,
    objects: &[Value],
    origin: &str,
    problems: &mut Vec<String>,
) -> usize {
    for obj in objects {
        problems.extend(violations(aso, obj, origin));
    }
    objects.len()
}

/// `aro-gitops render <unit>`: the unit's objects. Run from the folder that holds `clusters/`.
fn render(unit: &Path) -> Vec<Value> {
    let root = unit
        .parent()
        .and_then(Path::parent)
        .expect("a unit under <root>/clusters");
    let out = Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
        .arg("render")
        .arg(unit.strip_prefix(root).expect("under the root"))
        .current_dir(root)
        .env("NO_COLOR", "1")
        .output()
        .expect("aro-gitops render runs");
    assert!(
        out.status.success(),
        "render {} failed: {}",
        unit.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    aro_gitops::yaml::from_multi_str(&String::from_utf8(out.stdout).expect("UTF-8"))
        .expect("render prints YAML")
}

/// The unit folders under `root/clusters`.
fn units(root: &Path) -> Vec<PathBuf> {
    let mut units: Vec<PathBuf> = std::fs::read_dir(root.join("clusters"))
        .expect("a clusters folder")
        .map(|e| e.expect("a folder entry").path())
        .filter(|p| p.join("kustomization.yaml").is_file())
        .collect();
    units.sort();
    units
}

/// The ASO objects examples-repo renders, by unit.
fn examples_aso_objects() -> Vec<(String, Vec<Value>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples-repo");
    units(&root)
        .iter()
        .map(|u| (u.display().to_string(), aso_objects(&render(u))))
        .collect()
}

/// The ASO objects of three fleetgen fleets of three clusters (each cluster its own identity;
/// shared identities with agent-managed keys; `--plain`), by unit.
fn fleetgen_aso_objects(dir: &Path) -> Vec<(String, Vec<Value>)> {
    let mut all = Vec::new();
    for (name, args) in [
        ("default", vec![]),
        ("identities", vec!["--identities", "2", "--kms"]),
        ("plain", vec!["--plain"]),
    ] {
        let out_dir = dir.join(name);
        let out = Command::new(env!("CARGO_BIN_EXE_aro-gitops-fleetgen"))
            .args(["--clusters", "3", "--out"])
            .arg(&out_dir)
            .args(&args)
            .output()
            .expect("fleetgen runs");
        assert!(
            out.status.success(),
            "fleetgen {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for unit in units(&out_dir) {
            let origin = format!("fleetgen {name}: {}", unit.display());
            all.push((origin, aso_objects(&render(&unit))));
        }
    }
    all
}

/// The ASO kinds the project's control plane serves: (group, kind, plural, storage version).
fn project_aso_kinds() -> Vec<(String, String, String, String)> {
    aro_gitops::crds::preloaded()
        .iter()
        .filter(|c| {
            c["spec"]["group"]
                .as_str()
                .is_some_and(|g| g.ends_with(".azure.com"))
        })
        .map(|c| {
            let s = |p: &str| {
                c.pointer(p)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            let storage = c["spec"]["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|v| v["storage"] == true)
                .and_then(|v| v["name"].as_str())
                .unwrap_or("")
                .to_string();
            (
                s("/spec/group"),
                s("/spec/names/kind"),
                s("/spec/names/plural"),
                storage,
            )
        })
        .collect()
}

/// Every live ASO object in `f`'s embedded control plane, as a GET of it returns it.
fn live_aso_objects(f: &Fleet) -> Vec<Value> {
    let kinds = project_aso_kinds();
    f.with_client(async move |client| {
        use kube::api::{Api, DynamicObject, ListParams};
        use kube::discovery::ApiResource;
        let mut all = Vec::new();
        for (group, kind, plural, version) in kinds {
            let resource = ApiResource {
                group: group.clone(),
                version: version.clone(),
                api_version: format!("{group}/{version}"),
                kind: kind.clone(),
                plural,
            };
            let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
            let list = api
                .list(&ListParams::default())
                .await
                .unwrap_or_else(|e| panic!("list {kind}: {e}"));
            for o in list.items {
                let mut v = serde_json::to_value(o).expect("JSON");
                // A list's items carry no kind and apiVersion; a GET of one would.
                v["apiVersion"] = json!(format!("{group}/{version}"));
                v["kind"] = json!(kind);
                all.push(v);
            }
        }
        all
    })
}

#[test]
fn examples_repo_renders_only_what_aso_accepts() {
    let Some(aso) = aso() else { return };
    let mut problems = Vec::new();
    let mut checked = 0;
    for (origin, objects) in examples_aso_objects() {
        checked += check_all(&aso, &objects, &origin, &mut problems);
    }
    // Two clusters: 34 resources of the AROCluster (resource group, network, vault, 13 identities,
    // 16 role assignments), the HcpOpenShiftCluster and its external auth, two node pools.
    assert_eq!(checked, 76, "ASO objects rendered from examples-repo");
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn fleetgen_fleets_render_only_what_aso_accepts() {
    let Some(aso) = aso() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut problems = Vec::new();
    let mut checked = 0;
    for (origin, objects) in fleetgen_aso_objects(dir.path()) {
        checked += check_all(&aso, &objects, &origin, &mut problems);
    }
    assert!(
        checked >= 9 * 38,
        "ASO objects of the three fleets: {checked}"
    );
    assert!(problems.is_empty(), "{problems:#?}");
}

/// After a run of examples-repo to convergence, every live ASO object (the spec as applied, the
/// status as the Azure simulator wrote it) is one ASO's CRDs accept.
#[test]
fn live_aso_objects_after_a_run_are_aso_s() {
    let Some(aso) = aso() else { return };
    let f = Fleet::plain();
    f.run_binary_once();
    let live = live_aso_objects(&f);
    assert_eq!(live.len(), 76, "live ASO objects after the run");
    for o in &live {
        assert!(
            o.pointer("/status/conditions").is_some_and(Value::is_array),
            "no status.conditions: {o}"
        );
    }
    let hcp = live
        .iter()
        .find(|o| o["kind"] == "HcpOpenShiftCluster" && o["metadata"]["namespace"] == "aro-prod")
        .expect("prod's HcpOpenShiftCluster");
    assert!(
        hcp.pointer("/spec/properties/etcd/dataEncryption/customerManaged/kms/activeKey/version")
            .and_then(Value::as_str)
            .is_some_and(|v| !v.is_empty()),
        "the agent filled in the key version: {hcp}"
    );
    let mut problems = Vec::new();
    check_all(&aso, &live, "live after run --once", &mut problems);
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The check is strict where ASO is: a node pool without `location`, labels as a map, an HCP
/// whose agent-managed key has no version yet, and an unknown field are each reported.
#[test]
fn what_aso_refuses_is_reported() {
    let Some(aso) = aso() else { return };
    let objects = examples_aso_objects();
    let (_, dev) = &objects[0];
    let mut pool = dev
        .iter()
        .find(|o| o["kind"] == "HcpOpenShiftClustersNodePool")
        .expect("a node pool")
        .clone();
    assert!(violations(&aso, &pool, "dev").is_empty());
    pool["spec"].as_object_mut().unwrap().remove("location");
    pool["spec"]["properties"]["labels"] = json!({"node-role.kubernetes.io/infra": ""});
    pool["spec"]["properties"]["nodeLabels"] = json!([]);
    let got = violations(&aso, &pool, "dev").join("\n");
    for field in [
        "spec.location: Required value",
        "spec.properties.labels: Invalid value: \"object\"",
        "unknown field \"spec.properties.nodeLabels\"",
    ] {
        assert!(got.contains(field), "{field} not reported:\n{got}");
    }
    // As git has prod's HcpOpenShiftCluster: the agent fills in the version.
    let prod = render(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples-repo/clusters/prod"));
    let hcp = prod
        .iter()
        .filter(|o| o["kind"] == "AROControlPlane")
        .flat_map(|o| o["spec"]["resources"].as_array().unwrap().iter())
        .find(|o| o["kind"] == "HcpOpenShiftCluster")
        .expect("prod's HcpOpenShiftCluster");
    let got = violations(&aso, hcp, "prod").join("\n");
    assert!(
        got.contains("spec.properties.etcd.dataEncryption.customerManaged.kms.activeKey.version: Required value"),
        "{got}"
    );
}

/// The project's ASO CRDs agree with ASO's for every field the project writes (examples-repo,
/// fleetgen, and the live objects after a run: the simulator's statuses) or reads.
#[test]
fn the_project_s_aso_crds_agree_with_aso_s() {
    let Some(reference) = aso_crds() else { return };
    let project: Vec<Value> = aro_gitops::crds::preloaded()
        .into_iter()
        .filter(|c| {
            c["spec"]["group"]
                .as_str()
                .is_some_and(|g| g.ends_with(".azure.com"))
        })
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut used = agreement::Used::default();
    for (_, objects) in examples_aso_objects()
        .into_iter()
        .chain(fleetgen_aso_objects(dir.path()))
    {
        objects.iter().for_each(|o| used.add(o));
    }
    let f = Fleet::plain();
    f.run_binary_once();
    live_aso_objects(&f).iter().for_each(|o| used.add(o));
    let problems = agreement::disagreements(&project, &reference, &used);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let kinds: BTreeSet<&str> = project
        .iter()
        .filter_map(|c| c["spec"]["names"]["kind"].as_str())
        .collect();
    assert_eq!(kinds.len(), 10, "the project's ASO kinds: {kinds:?}");
}

/// The agreement check finds what it is there to find: a field typed otherwise than in ASO, a
/// list written as a map, a requirement left out, a field used but not declared, and a version
/// ASO does not serve.
#[test]
fn the_agreement_check_reports_drift() {
    let Some(reference) = aso_crds() else { return };
    let mut project: Vec<Value> = aro_gitops::crds::preloaded()
        .into_iter()
        .filter(|c| c["spec"]["names"]["kind"] == "HcpOpenShiftClustersNodePool")
        .collect();
    assert_eq!(project.len(), 1);
    let mut used = agreement::Used::default();
    let pool = json!({"apiVersion": "redhatopenshift.azure.com/v1api20240610preview",
        "kind": "HcpOpenShiftClustersNodePool", "metadata": {"name": "p"},
        "spec": {"location": "l", "owner": {"name": "o"},
            "properties": {"labels": [{"key": "k", "value": "v"}], "replicas": 1,
                "platform": {"vmSize": "s"}}}});
    used.add(&pool);
    assert_eq!(
        agreement::disagreements(&project, &reference, &used),
        Vec::<String>::new()
    );
    let crd = &mut project[0];
    let versions = crd["spec"]["versions"].as_array_mut().unwrap();
    let spec = versions[0]
        .pointer_mut("/schema/openAPIV3Schema/properties/spec")
        .unwrap();
    spec["properties"]["properties"]["properties"]["labels"] =
        json!({"type": "object", "additionalProperties": {"type": "string"}});
    spec["properties"]["properties"]["properties"]["replicas"] = json!({"type": "string"});
    spec["required"] = json!(["owner"]);
    spec["properties"]["properties"]["properties"]
        .as_object_mut()
        .unwrap()
        .remove("platform");
    let mut extra = versions[0].clone();
    extra["name"] = json!("v1api20990101");
    extra["storage"] = json!(false);
    versions.push(extra);
    let got = agreement::disagreements(&project, &reference, &used).join("\n");
    for what in [
        "spec.properties.labels: type object, ASO's array",
        "spec.properties.replicas: type string, ASO's integer",
        "spec: does not require location, ASO does",
        "spec.properties.platform: used but not declared",
        "v1api20990101: served, but ASO does not serve it",
    ] {
        assert!(got.contains(what), "{what:?} not reported:\n{got}");
    }
}

//! CAPZ fidelity: what the project makes of the CAPZ kinds (AROCluster, AROControlPlane,
//! AROMachinePool, AzureClusterIdentity) checked, strictly, against CAPZ's own CRDs, as a real
//! management cluster has them: `../shared/reference/crds/` next to the repository, read at test
//! time (never copied). The project's preloaded CRDs are its own; these tests keep them, the
//! examples, `aro-gitops-fleetgen` and the statuses the agent writes honest about CAPZ's.
//!
//! Strict is kubectl's `--validate=strict`: an unknown field is an error (a real API server would
//! prune it), and so is every schema violation (types, required, enums, patterns, lengths).
//! Without the reference folder the tests say so and pass.

mod common;

use aro_gitops::crdschema::{FieldValidation, SchemaSet};
use common::fleet::{Fleet, api_resource};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The CAPZ kinds: `(group, kind)`.
const CAPZ_KINDS: [(&str, &str); 4] = [
    ("infrastructure.cluster.x-k8s.io", "AROCluster"),
    ("controlplane.cluster.x-k8s.io", "AROControlPlane"),
    ("infrastructure.cluster.x-k8s.io", "AROMachinePool"),
    ("infrastructure.cluster.x-k8s.io", "AzureClusterIdentity"),
];

/// Where CAPZ's CRDs are: `../shared/reference/crds` from the repository.
fn reference_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/reference/crds")
}

/// CAPZ's schemas, read from [`reference_dir`]; `None` (and a line saying so) when it is absent.
fn capz() -> Option<SchemaSet> {
    let dir = reference_dir();
    if !dir.is_dir() {
        eprintln!(
            "skipped: CAPZ's CRDs are not at {} (the reference folder next to the repository)",
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
    let (set, problems) = SchemaSet::from_crds(&crds);
    assert!(problems.is_empty(), "CAPZ's CRDs do not read: {problems:?}");
    for (group, kind) in CAPZ_KINDS {
        assert!(
            !set.versions(group, kind).is_empty(),
            "no CRD of {kind} ({group}) in {}",
            dir.display()
        );
    }
    Some(set)
}

/// Whether `obj` is of a CAPZ kind.
fn is_capz(obj: &Value) -> bool {
    let group = obj["apiVersion"]
        .as_str()
        .and_then(|a| a.rsplit_once('/'))
        .map_or("", |(g, _)| g);
    CAPZ_KINDS
        .iter()
        .any(|(g, k)| *g == group && obj["kind"] == *k)
}

/// What CAPZ's schema says of `obj` (a CAPZ kind) in strict mode, each line naming `origin`, the
/// object and the field; empty when a real management cluster stores it as it is.
fn violations(capz: &SchemaSet, obj: &Value, origin: &str) -> Vec<String> {
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
    let Some(schema) = capz.get(group, version, kind) else {
        return vec![format!(
            "{name}: CAPZ serves {kind} as {:?}, not {version}",
            capz.versions(group, kind)
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

/// Checks every CAPZ object of `objects`; returns how many there were.
fn check_all<'a>(
    capz: &SchemaSet,
    objects: impl IntoIterator<Item = &'a Value>,
    origin: &str,
    problems: &mut Vec<String>,
) -> usize {
    let mut checked = 0;
    for obj in objects.into_iter().filter(|o| is_capz(o)) {
        checked += 1;
        problems.extend(violations(capz, obj, origin));
    }
    checked
}

/// `aro-gitops render <unit>`: the unit's objects. Run from the folder that holds `clusters/`
/// (the repository root, where it is not in git).
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

/// Every live object of the CAPZ kinds in `f`'s embedded control plane.
fn live_capz_objects(f: &Fleet) -> Vec<Value> {
    f.with_client(async move |client| {
        use kube::api::{Api, DynamicObject, ListParams};
        let mut all = Vec::new();
        for (group, kind) in CAPZ_KINDS {
            let version = if kind == "AzureClusterIdentity" {
                "v1beta1"
            } else {
                "v1beta2"
            };
            let resource = api_resource(&format!("{group}/{version}"), kind);
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
fn examples_repo_renders_only_what_capz_accepts() {
    let Some(capz) = capz() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples-repo");
    let mut problems = Vec::new();
    let mut checked = 0;
    for unit in units(&root) {
        let objects = render(&unit);
        checked += check_all(&capz, &objects, &unit.display().to_string(), &mut problems);
    }
    // Two clusters: AROCluster, AROControlPlane, two AROMachinePools and the identity each.
    assert_eq!(checked, 10, "CAPZ objects rendered from examples-repo");
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn fleetgen_fleets_render_only_what_capz_accepts() {
    let Some(capz) = capz() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut problems = Vec::new();
    // The default fleet (each cluster its own workload identity, platform-managed etcd keys), and
    // one with shared identities and agent-managed keys; `--plain` writes the same objects out.
    for (name, args) in [
        ("default", vec![]),
        ("identities", vec!["--identities", "2", "--kms"]),
        ("plain", vec!["--plain"]),
    ] {
        let out_dir = dir.path().join(name);
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
        let mut checked = 0;
        for unit in units(&out_dir) {
            let objects = render(&unit);
            let origin = format!("fleetgen {name}: {}", unit.display());
            checked += check_all(&capz, &objects, &origin, &mut problems);
        }
        // Three clusters of five CAPZ objects each, and the shared identities' unit.
        let expected = if name == "identities" { 17 } else { 15 };
        assert_eq!(checked, expected, "CAPZ objects of the {name} fleet");
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The statuses of the ARO objects are there to be checked: `ready` and some conditions.
fn assert_statuses_written(objects: &[Value]) {
    for o in objects
        .iter()
        .filter(|o| o["kind"] != "AzureClusterIdentity")
    {
        let status = &o["status"];
        assert!(status["ready"].is_boolean(), "no status.ready: {o}");
        assert!(
            status["conditions"]
                .as_array()
                .is_some_and(|c| !c.is_empty()),
            "no status.conditions: {o}"
        );
    }
}

#[test]
fn the_statuses_the_agent_writes_are_capz_s() {
    let Some(capz) = capz() else { return };
    let f = Fleet::plain();
    f.run_binary_once();
    let live = live_capz_objects(&f);
    assert_eq!(live.len(), 10, "live CAPZ objects after the run");
    assert_statuses_written(&live);
    // The whole object: the spec as applied, and the status as written.
    let mut problems = Vec::new();
    check_all(&capz, &live, "live after run --once", &mut problems);
    assert!(problems.is_empty(), "{problems:#?}");
}

/// A cluster its identity does not allow: the agent writes the refusal on its ARO objects
/// (`Ready` False, `NamespaceNotAllowedByIdentity`), in CAPZ's shape too.
#[test]
fn a_refused_cluster_s_status_is_capz_s_too() {
    let Some(capz) = capz() else { return };
    let f = Fleet::plain();
    f.replace("base/fleet/identity.yaml", "      - aro-dev\n", "");
    let out = f.aro_gitops(&["run", "--once", "--sim-delay", "0s", "--timeout", "60s"]);
    assert_eq!(out.code, 1, "dev is refused: {}", out.all());
    let live = live_capz_objects(&f);
    let refused: Vec<&Value> = live
        .iter()
        .filter(|o| o.pointer("/metadata/namespace") == Some(&json!("aro-dev")))
        .filter(|o| {
            o.pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["reason"] == "NamespaceNotAllowedByIdentity")
                })
        })
        .collect();
    assert!(!refused.is_empty(), "no refusal written: {live:#?}");
    let mut problems = Vec::new();
    check_all(&capz, &live, "live after a refusal", &mut problems);
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The check is strict where CAPZ is: the fields the project once wrote (an AROCluster's
/// `subscriptionID` and `identityRef`, a condition's `severity`, a condition without `message`,
/// a status resource's `message`) are each reported, naming the field.
#[test]
fn what_capz_refuses_is_reported() {
    let Some(capz) = capz() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples-repo/clusters/dev");
    let objects = render(&root);
    let mut ac = objects
        .iter()
        .find(|o| o["kind"] == "AROCluster")
        .expect("an AROCluster")
        .clone();
    assert!(violations(&capz, &ac, "dev").is_empty());
    ac["spec"]["subscriptionID"] = json!("8f1c2a34-5b6d-4e7f-9a0b-1c2d3e4f5a60");
    ac["spec"]["identityRef"] = json!({"kind": "AzureClusterIdentity", "name": "aro-identity"});
    ac["status"] = json!({
        "ready": "yes",
        "conditions": [{"type": "Ready", "status": "False", "severity": "Error", "reason": "Bad reason",
            "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "resources": [{"resource": {"group": "g", "version": "v", "kind": "K", "name": "n"},
            "ready": false, "message": "not created yet"}],
    });
    let got = violations(&capz, &ac, "dev").join("\n");
    for field in [
        "spec.subscriptionID",
        "spec.identityRef",
        "status.ready",
        "status.conditions[0].severity",
        "status.conditions[0].message",
        "status.conditions[0].reason",
        "status.resources[0].message",
    ] {
        assert!(got.contains(field), "{field} not reported:\n{got}");
    }
}

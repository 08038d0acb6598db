//! See `tests/safety.rs`. Cases 1 and 3: an object belongs to one unit, and inventories are the
//! agent's alone.
#[allow(unused_imports)]
use super::*;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// `run --once` on the embedded control plane with `extra` flags; the output, whatever the exit.
pub fn run(fleet: &Fleet, extra: &[&str]) -> Output {
    let mut args = vec!["run", "--once", "--sim-delay", "0s", "--timeout", "300s"];
    args.extend_from_slice(extra);
    fleet.aro_gitops(&args)
}

/// The names of the live objects of a kind (in `namespace`, or cluster-wide with `None`).
pub fn live_names(
    fleet: &Fleet,
    api_version: &str,
    kind: &str,
    namespace: Option<&str>,
) -> BTreeSet<String> {
    let ar = common::fleet::api_resource(api_version, kind);
    let ns = namespace.map(str::to_string);
    fleet.with_client(async move |client| {
        let api: Api<DynamicObject> = match &ns {
            Some(ns) => Api::namespaced_with(client, ns, &ar),
            None => Api::all_with(client, &ar),
        };
        match api.list(&Default::default()).await {
            Ok(list) => list
                .items
                .into_iter()
                .filter_map(|o| o.metadata.name)
                .collect(),
            Err(kube::Error::Api(s)) if s.code == 404 => BTreeSet::new(),
            Err(e) => panic!("list {kind}: {e}"),
        }
    })
}

/// The ARM ids the Azure simulator holds (`kubectl get simulatedazureresources -A`).
pub fn simulated_azure(fleet: &Fleet) -> BTreeSet<String> {
    let ar =
        common::fleet::api_resource("azuresim.aro-gitops.dev/v1alpha1", "SimulatedAzureResource");
    fleet.with_client(async move |client| {
        let api: Api<DynamicObject> = Api::all_with(client, &ar);
        api.list(&Default::default())
            .await
            .expect("list simulated Azure resources")
            .items
            .into_iter()
            .filter_map(|o| o.data.pointer("/spec/armId")?.as_str().map(str::to_string))
            .collect()
    })
}

/// Server-side applies `obj` under `manager` (as `kubectl apply --server-side` would).
pub fn apply_as(fleet: &Fleet, manager: &str, obj: Value) {
    let ar = common::fleet::api_resource(
        obj["apiVersion"].as_str().expect("apiVersion"),
        obj["kind"].as_str().expect("kind"),
    );
    let manager = manager.to_string();
    fleet.with_client(async move |client| {
        let name = obj["metadata"]["name"].as_str().expect("name").to_string();
        let api: Api<DynamicObject> = match obj.pointer("/metadata/namespace") {
            Some(Value::String(ns)) => Api::namespaced_with(client, ns, &ar),
            _ => Api::all_with(client, &ar),
        };
        api.patch(
            &name,
            &PatchParams::apply(&manager).force(),
            &Patch::Apply(&obj),
        )
        .await
        .expect("server-side apply");
    });
}

/// The inventory ConfigMap of `unit`.
fn inventory_of(fleet: &Fleet, unit: &str) -> Value {
    let name = fleet.inventory_name(unit);
    fleet
        .get("v1", "ConfigMap", Some("aro-gitops-system"), &name)
        .unwrap_or_else(|| panic!("the inventory of {unit}"))
}

const VICTIM: &str = "victim-ns";

/// The inventory line of Namespace/victim-ns, as the agent writes entries.
fn victim_entry() -> String {
    json!({"group": "", "kind": "Namespace", "name": VICTIM, "version": "v1",
           "provenance": "created", "policy": "manage", "applied": "0123456789abcdef0123456789abcdef"})
    .to_string()
}

fn namespaces(fleet: &Fleet) -> BTreeSet<String> {
    live_names(fleet, "v1", "Namespace", None)
}

#[test]
fn case_01_two_units_declaring_one_cluster_then_one_removed() {
    let (fleet, _) = Fleet::git();
    fleet.run_binary_once();
    let azure_before = simulated_azure(&fleet);
    let dev_objects = live_names(&fleet, "v1", "ConfigMap", Some("aro-dev"));
    assert!(
        azure_before.iter().any(|id| id.ends_with("/aro-dev-rg")),
        "{azure_before:?}"
    );
    let rv_before = fleet
        .get("v1", "Namespace", None, "aro-dev")
        .expect("aro-dev")
        .pointer("/metadata/resourceVersion")
        .cloned();

    // A unit added later declares the same objects (same namespace and names).
    common::git::copy_dir(&fleet.repo.join(DEV), &fleet.repo.join("clusters/dev-copy"));
    fleet.commit("copy clusters/dev");

    // plan shows the conflict on the newcomer only, naming both units and both files: dev owns
    // the objects live (its inventory holds them) and goes on.
    let plan = fleet.plan(&[]);
    assert_eq!(plan.code, 1, "{}", plan.all());
    for needle in [
        "owned by unit clusters/dev (",
        "unit clusters/dev-copy (",
        "declares it too",
        "remove it from clusters/dev-copy",
        "Namespace/aro-dev",
        "base/cluster/namespace.yaml",
    ] {
        assert!(
            plan.stdout.contains(needle),
            "{needle:?} in\n{}",
            plan.all()
        );
    }
    let json = fleet.plan(&["-o", "json"]).json();
    let failing: BTreeSet<&str> = json["clusters"]
        .as_array()
        .expect("clusters")
        .iter()
        .filter(|c| c["errors"].as_array().is_some_and(|e| !e.is_empty()))
        .map(|c| c["unit"].as_str().expect("unit"))
        .collect();
    assert_eq!(failing, BTreeSet::from(["clusters/dev-copy"]));

    // run: the copy fails and nothing is written for it; dev goes on converged, untouched.
    let out = run(&fleet, &["--allow-deletion"]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(out.all().contains("declares it too"), "{}", out.all());
    assert!(
        out.all().contains("clusters/dev-copy: Failed"),
        "{}",
        out.all()
    );
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("clusters/dev ") && l.contains("Converged")),
        "{}",
        out.all()
    );
    assert_eq!(simulated_azure(&fleet), azure_before);
    assert_eq!(
        fleet
            .get("v1", "Namespace", None, "aro-dev")
            .expect("aro-dev is still there")
            .pointer("/metadata/resourceVersion")
            .cloned(),
        rv_before
    );
    let copy_inventory = fleet.inventory_name("clusters/dev-copy");
    assert!(
        !live_names(&fleet, "v1", "ConfigMap", Some("aro-gitops-system")).contains(&copy_inventory),
        "the conflicting unit recorded nothing"
    );

    // The copy leaves git: dev converges and nothing of it is deleted.
    fleet.remove("clusters/dev-copy");
    fleet.commit("git rm -r clusters/dev-copy");
    let out = run(&fleet, &["--allow-deletion"]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("clusters/dev ") && l.contains("Converged")),
        "{}",
        out.all()
    );
    assert!(namespaces(&fleet).contains("aro-dev"));
    assert_eq!(simulated_azure(&fleet), azure_before);
    assert_eq!(
        live_names(&fleet, "v1", "ConfigMap", Some("aro-dev")),
        dev_objects
    );
    // Every object dev applied carries its mark.
    let ns = fleet
        .get("v1", "Namespace", None, "aro-dev")
        .expect("aro-dev");
    assert_eq!(ns["metadata"]["annotations"]["aro-gitops.dev/unit"], DEV);
}

#[test]
fn case_01_an_object_owned_by_another_unit_needs_consent_to_move() {
    let (fleet, _) = Fleet::git();
    let extra = |unit: &str, adopt: Option<&str>| {
        let annotations = adopt
            .map(|u| format!("\n  annotations:\n    aro-gitops.dev/adopt-from: {u}"))
            .unwrap_or_default();
        fleet.write(
            &format!("{unit}/shared.yaml"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n  namespace: aro-shared{annotations}\ndata:\n  a: b\n"
            ),
        );
    };
    // clusters/dev owns ConfigMap aro-shared/shared (its namespace is set by the unit's
    // kustomization, so the file keeps its own with a patch-free overlay: a unit of its own).
    fleet.write(
        "clusters/shared-a/kustomization.yaml",
        "resources:\n  - namespace.yaml\n  - shared.yaml\n",
    );
    fleet.write(
        "clusters/shared-a/namespace.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: aro-shared\n",
    );
    extra("clusters/shared-a", None);
    fleet.commit("shared-a");
    fleet.run_binary_once();
    // It moves to shared-b without consent: refused, nothing deleted.
    fleet.remove("clusters/shared-a/shared.yaml");
    fleet.write(
        "clusters/shared-a/kustomization.yaml",
        "resources:\n  - namespace.yaml\n",
    );
    fleet.write(
        "clusters/shared-b/kustomization.yaml",
        "resources:\n  - shared.yaml\n",
    );
    extra("clusters/shared-b", None);
    fleet.commit("move without consent");
    let out = run(&fleet, &["--allow-deletion"]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.all()
            .contains("is live and owned by unit clusters/shared-a"),
        "{}",
        out.all()
    );
    let cm = fleet
        .get("v1", "ConfigMap", Some("aro-shared"), "shared")
        .expect("not deleted by shared-a's prune: shared-b declares it");
    assert_eq!(
        cm["metadata"]["annotations"]["aro-gitops.dev/unit"],
        "clusters/shared-a"
    );
    // With consent it moves.
    extra("clusters/shared-b", Some("clusters/shared-a"));
    fleet.commit("move with consent");
    let out = run(&fleet, &["--allow-deletion"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let cm = fleet
        .get("v1", "ConfigMap", Some("aro-shared"), "shared")
        .expect("moved");
    assert_eq!(
        cm["metadata"]["annotations"]["aro-gitops.dev/unit"],
        "clusters/shared-b"
    );
}

#[test]
fn case_03_forged_inventory_in_the_agents_namespace() {
    let (fleet, _) = Fleet::git();
    fleet.run_binary_once();
    // A namespace created outside git.
    apply_as(
        &fleet,
        "kubectl",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": VICTIM}}),
    );
    // A unit ships a copy of dev's inventory plus Namespace/victim-ns.
    let real = inventory_of(&fleet, DEV);
    let entries = format!(
        "{}\n{}",
        real["data"]["entries"].as_str().expect("entries"),
        victim_entry()
    );
    let forged = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": real["metadata"]["name"], "namespace": "aro-gitops-system",
            "labels": {"aro-gitops.dev/inventory": "true"},
            "annotations": {"aro-gitops.dev/unit": DEV},
        },
        "data": {"entries": entries},
    });
    fleet.write(
        "clusters/forger/kustomization.yaml",
        "resources:\n  - inventory.yaml\n",
    );
    fleet.write("clusters/forger/inventory.yaml", &as_yaml(&forged));
    fleet.commit("forge dev's inventory");
    for pass in 0..3 {
        let out = run(&fleet, &["--self-heal", "--allow-deletion"]);
        assert_eq!(out.code, 1, "pass {pass}: {}", out.all());
        assert!(
            out.stdout.contains("clusters/forger: Failed"),
            "pass {pass}: {}",
            out.all()
        );
        let report = status_report(&fleet, "reports/_units/clusters_forger.md");
        for needle in [
            "clusters/forger/inventory.yaml",
            "aro-gitops-system is the agent's own namespace",
            "ConfigMap/aro-gitops-system/inventory-clusters-dev-",
        ] {
            assert!(
                report.contains(needle),
                "{needle:?} in pass {pass}: {report}"
            );
        }
        assert!(namespaces(&fleet).contains(VICTIM), "pass {pass}");
    }
    assert_eq!(
        inventory_of(&fleet, DEV)["data"]["entries"],
        real["data"]["entries"]
    );
    // plan says the same.
    let plan = fleet.plan(&["--allow-deletion"]);
    assert!(
        plan.stdout.contains("agent's own namespace"),
        "{}",
        plan.all()
    );
    assert!(!plan.stdout.contains(VICTIM), "{}", plan.all());
}

#[test]
fn case_03_forged_inventory_edited_by_another_field_manager() {
    let (fleet, _) = Fleet::git();
    fleet.run_binary_once();
    apply_as(
        &fleet,
        "kubectl",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": VICTIM}}),
    );
    // `kubectl edit` of dev's inventory: one more entry, under another field manager.
    let real = inventory_of(&fleet, DEV);
    let entries = format!(
        "{}\n{}",
        real["data"]["entries"].as_str().expect("entries"),
        victim_entry()
    );
    apply_as(
        &fleet,
        "kubectl-edit",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": real["metadata"]["name"], "namespace": "aro-gitops-system"},
               "data": {"entries": entries}}),
    );
    for pass in 0..2 {
        let out = run(&fleet, &["--self-heal", "--allow-deletion"]);
        assert_eq!(out.code, 1, "pass {pass}: {}", out.all());
        assert!(out.all().contains("\"kubectl-edit\""), "{}", out.all());
        assert!(
            out.all()
                .contains("ConfigMap/aro-gitops-system/inventory-clusters-dev-"),
            "{}",
            out.all()
        );
        assert!(namespaces(&fleet).contains(VICTIM), "pass {pass}");
        assert!(namespaces(&fleet).contains("aro-dev"), "pass {pass}");
    }
    let plan = fleet.plan(&["--allow-deletion"]);
    assert!(plan.stdout.contains("\"kubectl-edit\""), "{}", plan.all());
    assert!(!plan.stdout.contains(VICTIM), "{}", plan.all());
    // Deleting the forged inventory lets dev go on: it records its objects again.
    fleet.with_client(async move |client| {
        let api: Api<k8s_openapi::api::core::v1::ConfigMap> =
            Api::namespaced(client, "aro-gitops-system");
        let name = real["metadata"]["name"].as_str().expect("name").to_string();
        api.delete(&name, &Default::default())
            .await
            .expect("delete");
    });
    let out = run(&fleet, &["--self-heal", "--allow-deletion"]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(namespaces(&fleet).contains(VICTIM));
}

/// A report on the status branch of the fleet's repository.
pub fn status_report(fleet: &Fleet, path: &str) -> String {
    common::git::git(&fleet.repo, &["show", &format!("aro-gitops/status:{path}")])
}

/// `value` as YAML (JSON is YAML; the repository's files may be JSON documents).
fn as_yaml(value: &Value) -> String {
    serde_json::to_string_pretty(value).expect("JSON")
}

//! See `tests/safety.rs`. Case 2: two objects standing for one Azure resource.
#[allow(unused_imports)]
use super::*;
use crate::ownership::{live_names, run, simulated_azure};

#[test]
fn case_02_two_clusters_sharing_azure_names_fail_and_removing_one_keeps_the_other() {
    let (fleet, _) = Fleet::git();
    fleet.run_binary_once();
    let azure_before = simulated_azure(&fleet);
    assert!(
        azure_before
            .iter()
            .any(|id| id.ends_with("/resourceGroups/aro-dev-rg")),
        "{azure_before:?}"
    );

    // clusters/dev2: dev's parameters (so dev's Azure names) in namespace aro-dev2.
    common::git::copy_dir(&fleet.repo.join(DEV), &fleet.repo.join("clusters/dev2"));
    fleet.replace(
        "clusters/dev2/kustomization.yaml",
        "namespace: aro-dev\n",
        "namespace: aro-dev2\n",
    );
    fleet.commit("clusters/dev2 with dev's Azure names");

    let plan = fleet.plan(&[]);
    assert_eq!(plan.code, 1, "{}", plan.all());
    for needle in [
        "are the same Azure resource",
        "/resourceGroups/aro-dev-rg",
        "unit clusters/dev)",
        "unit clusters/dev2)",
        // The rest of the shared resources, the first ten named (a Vault's global name: corpus
        // case 89).
        "RoleAssignment/aro-dev2/aro-dev-ra-cp-kms-kv",
        "UserAssignedIdentity/aro-dev2/aro-dev-cp-control-plane",
    ] {
        assert!(
            plan.stdout.contains(needle),
            "{needle:?} in\n{}",
            plan.all()
        );
    }

    let out = run(&fleet, &[]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.all().contains("are the same Azure resource"),
        "{}",
        out.all()
    );
    assert!(out.all().contains("clusters/dev2"), "{}", out.all());
    assert_eq!(
        simulated_azure(&fleet),
        azure_before,
        "nothing of dev2 in Azure"
    );
    assert!(!live_names(&fleet, "v1", "Namespace", None).contains("aro-dev2"));

    // dev2 leaves git: dev converges, its resource group is still there.
    fleet.remove("clusters/dev2");
    fleet.commit("git rm -r clusters/dev2");
    let out = run(&fleet, &["--allow-deletion"]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert_eq!(simulated_azure(&fleet), azure_before);
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("clusters/dev ") && l.contains("Converged")),
        "{}",
        out.all()
    );
}

#[test]
fn case_02_a_live_object_no_unit_declares_holds_the_unit_naming_the_same_resource() {
    let (fleet, _) = Fleet::git();
    fleet.run_binary_once();
    // Someone creates a resource group object outside git, for dev's resource group.
    crate::ownership::apply_as(
        &fleet,
        "kubectl",
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "scratch-ns"}}),
    );
    crate::ownership::apply_as(
        &fleet,
        "kubectl",
        serde_json::json!({
            "apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup",
            "metadata": {"name": "stray", "namespace": "scratch-ns"},
            "spec": {"azureName": "aro-dev-rg", "location": "eastus"},
        }),
    );
    let plan = fleet.plan(&[]);
    assert_eq!(plan.code, 1, "{}", plan.all());
    assert!(
        plan.stdout
            .contains("the live object ResourceGroup/scratch-ns/stray (no unit declares it)"),
        "{}",
        plan.all()
    );
    let out = run(&fleet, &[]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.all().contains("ResourceGroup/scratch-ns/stray"),
        "{}",
        out.all()
    );
    assert!(
        out.stdout.contains("clusters/prod: Converged"),
        "{}",
        out.all()
    );
}

#[test]
fn case_02_removing_a_cluster_keeps_an_azure_resource_a_live_object_stands_for() {
    let (fleet, _) = Fleet::git();
    fleet.run_binary_once();
    let rg = simulated_azure(&fleet)
        .into_iter()
        .find(|id| id.ends_with("/resourceGroups/aro-dev-rg"))
        .expect("dev's resource group in simulated Azure");
    for obj in [
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "scratch-ns"}}),
        serde_json::json!({
            "apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup",
            "metadata": {"name": "stray", "namespace": "scratch-ns"},
            "spec": {"azureName": "aro-dev-rg", "location": "eastus"},
        }),
    ] {
        crate::ownership::apply_as(&fleet, "kubectl", obj);
    }
    fleet.remove(DEV);
    fleet.commit("git rm -r clusters/dev");
    let plan = fleet.plan(&["--allow-deletion"]);
    assert!(
        plan.stdout.contains(
            "the live object ResourceGroup/scratch-ns/stray stands for the same Azure resource"
        ),
        "{}",
        plan.all()
    );
    let out = run(&fleet, &["--allow-deletion"]);
    assert!(
        out.stderr.contains(
            "the live object ResourceGroup/scratch-ns/stray stands for the same Azure resource"
        ),
        "{}",
        out.all()
    );
    assert!(simulated_azure(&fleet).contains(&rg), "{}", out.all());
}

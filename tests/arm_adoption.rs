//! `reconcile-policy-if-exists` against a cluster reached by kubeconfig, asked through Azure
//! Resource Manager: the agent reads the resource's ARM id (in its AROControlPlane's subscription)
//! with the cluster's identity, here from the ARM endpoint of `aro-gitops azure-simulator`
//! (`--use-azure-simulator`), not from the simulator's inventory objects. An existing resource
//! group is adopted, a missing one created; neither is held. A read the identity may not make
//! (403) fails the object with a message naming the identity, and nothing is created.

mod common;

use common::fleet::{DEV, Fleet, Output};
use common::kubectl::{Kubectl, Server};
use common::simulator::Simulator;
use serde_json::Value;

const IF_EXISTS: &str = "serviceoperator.azure.com/reconcile-policy-if-exists";
const ADOPTION: &str = "aro-gitops.dev/adoption";
const POLICY: &str = "serviceoperator.azure.com/reconcile-policy";
/// `spec.subscriptionID` of dev's AROControlPlane (examples-repo/clusters/dev/cluster-params.yaml).
const DEV_SUBSCRIPTION: &str = "8f1c2a34-5b6d-4e7f-9a0b-1c2d3e4f5a60";

fn resource_group(name: &str) -> String {
    format!(
        "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: {name}\n  annotations: {{{IF_EXISTS}: skip}}\nspec:\n  location: eastus\n"
    )
}

fn annotation(obj: &Value, key: &str) -> Option<String> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn group(kubectl: &Kubectl, name: &str) -> Option<Value> {
    kubectl.get_json(&["resourcegroups.resources.azure.com", "-n", "aro-dev", name])
}

/// Records `name` in the simulated Azure (in its all-zero subscription), as if made outside
/// aro-gitops.
/// `read_fault`: what the simulator's Resource Manager answers every read of it with.
fn exists_in_azure(kubectl: &Kubectl, name: &str, read_fault: Option<&str>) {
    kubectl.ok_stdin(
        &["apply", "--server-side", "-f", "-"],
        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"aro-gitops-azure-simulator\"}}",
    );
    let id = format!(
        "/subscriptions/{}/resourceGroups/{name}",
        aro_gitops::arm::SUBSCRIPTION_ID
    );
    let mut record =
        aro_gitops::azuresim::inventory::record_object(&id, "Microsoft.Resources/resourceGroups");
    if let Some(fault) = read_fault {
        record["metadata"]["annotations"] =
            serde_json::json!({ aro_gitops::azuresim::https::arm::READ_FAULT_ANNOTATION: fault });
    }
    kubectl.ok_stdin(
        &["apply", "--server-side", "-f", "-"],
        &serde_json::to_string(&record).expect("JSON"),
    );
}

/// A fresh API server with the example fleet's git repository, the resource groups `names` under
/// `reconcile-policy-if-exists` in dev, and `existing-rg` in the simulated Azure.
fn setup(names: &[&str], read_fault: Option<&str>) -> (Server, Fleet) {
    let server = Server::start();
    exists_in_azure(&server.kubectl(), "existing-rg", read_fault);
    let (fleet, _) = Fleet::git();
    for name in names {
        fleet.write(&format!("{DEV}/{name}.yaml"), &resource_group(name));
        fleet.add_resource(DEV, &format!("{name}.yaml"));
    }
    fleet.commit("resource groups under reconcile-policy-if-exists");
    (server, fleet)
}

/// `run --once --kubeconfig --use-azure-simulator`, the simulator started for it and stopped
/// after (its log appended to the run's output on failure).
fn run(server: &Server, fleet: &Fleet) -> (Output, String) {
    let (sim, _) = Simulator::start(&server.kubeconfig);
    let kubeconfig = server.kubeconfig.to_str().expect("UTF-8");
    let out = fleet.aro_gitops(&[
        "run",
        "--once",
        "--kubeconfig",
        kubeconfig,
        "--use-azure-simulator",
        "--timeout",
        "120s",
        "--log",
        "info,aro_gitops::azure::resource_manager=debug",
    ]);
    (out, sim.terminate())
}

#[test]
fn if_exists_asks_resource_manager_on_a_cluster_reached_by_kubeconfig() {
    let (server, fleet) = setup(&["existing-rg", "new-rg"], None);
    let kubectl = server.kubectl();
    let (out, simulator_log) = run(&server, &fleet);
    assert_eq!(out.code, 0, "{}\n{simulator_log}", out.all());
    // Both questions went to Resource Manager, in dev's subscription (its AROControlPlane's).
    let reads: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("Azure Resource Manager read"))
        .collect();
    for (name, status) in [("existing-rg", "200"), ("new-rg", "404")] {
        let id = format!("/subscriptions/{DEV_SUBSCRIPTION}/resourceGroups/{name}");
        assert!(
            reads
                .iter()
                .any(|l| l.contains(&id) && l.contains(&format!("status={status}"))),
            "{id} read, {status}:\n{}",
            out.all()
        );
    }

    let existing = group(&kubectl, "existing-rg").expect("adopted");
    assert_eq!(
        annotation(&existing, ADOPTION).as_deref(),
        Some("adopted"),
        "{existing:#}\n{}",
        out.all()
    );
    assert_eq!(annotation(&existing, POLICY).as_deref(), Some("skip"));
    let new = group(&kubectl, "new-rg").expect("created");
    assert_eq!(
        annotation(&new, ADOPTION).as_deref(),
        Some("created"),
        "{new:#}\n{}",
        out.all()
    );
    assert_eq!(annotation(&new, POLICY), None, "created ones are managed");
}

#[test]
fn a_read_the_identity_may_not_make_fails_the_object_naming_the_identity() {
    let (server, fleet) = setup(&["existing-rg"], Some("403"));
    let (out, simulator_log) = run(&server, &fleet);
    assert_eq!(out.code, 1, "{}\n{simulator_log}", out.all());
    let all = out.all();
    assert!(
        all.contains("AzureClusterIdentity aro-dev/aro-identity")
            && all.contains("read access")
            && all.contains("AuthorizationFailed"),
        "{all}"
    );
    assert!(!all.contains("simulated-entra-token."), "no token shows");
    assert!(
        group(&server.kubectl(), "existing-rg").is_none(),
        "neither adopted nor created:\n{all}"
    );
}

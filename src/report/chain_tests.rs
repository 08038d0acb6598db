//! The dependency chain judged from realistic live objects, one test per step and per way to fail.

use super::{CHAIN_STEPS, Chain, StepState, chain};
use crate::report::fixtures::{
    NS, cluster_key, external_auth, hcp, infra, live_at, node_pool, not_ready,
};
use serde_json::{Value, json};

fn at(live: &[Value]) -> Chain {
    chain(live, Some(&cluster_key()))
}

fn states(c: &Chain) -> Vec<StepState> {
    c.steps.iter().map(|s| s.state).collect()
}

fn detail(c: &Chain, step: u32) -> &str {
    c.steps[(step - 1) as usize]
        .detail
        .as_deref()
        .unwrap_or_default()
}

/// Replaces the live object of this kind and name.
fn replace(live: &mut [Value], kind: &str, name: &str, with: Value) {
    let slot = live
        .iter_mut()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .expect("object in fixture");
    *slot = with;
}

#[test]
fn each_step_is_where_the_cluster_stands() {
    let expected_stage = [
        "creating the infrastructure (1/3 infrastructure resources exist; missing VirtualNetwork/aro-dev-vnet, VirtualNetworksSubnet/aro-dev-subnet)",
        "waiting for the infrastructure to be ready (Waiting for infrastructure resources: 2/3 ready)",
        "waiting for the HcpOpenShiftCluster to be created (HcpOpenShiftCluster/aro-dev not created yet)",
        "waiting for the hosted control plane to be ready (HcpOpenShiftCluster is not yet ready)",
        "waiting for the kubeconfig Secret (Secret/dev-kubeconfig not written yet)",
        "waiting for the AROControlPlane to be ready (AROControlPlane/dev not ready)",
        "waiting for the AROCluster to be ready (AROCluster/dev not ready)",
        "waiting for the AROCluster to be provisioned (AROCluster/dev not provisioned)",
        "waiting for the node pools to be ready (0/1 node pools ready; HcpOpenShiftClustersNodePool/aro-dev-workers: Reconciling: Creating node pool)",
        "waiting for the ExternalAuth to be ready (ExternalAuth creation deferred until at least one node pool is ready)",
    ];
    for step in 1..=CHAIN_STEPS {
        let c = at(&live_at(step));
        assert_eq!((c.step, c.total), (step, CHAIN_STEPS), "at step {step}");
        assert_eq!(
            c.stage,
            expected_stage[(step - 1) as usize],
            "at step {step}"
        );
        for s in &c.steps[..(step - 1) as usize] {
            assert_eq!(s.state, StepState::Done, "step {} before {step}", s.step);
        }
        assert_eq!(c.steps[(step - 1) as usize].state, StepState::Waiting);
        assert!(!c.is_complete() && !c.is_failed());
    }
}

#[test]
fn a_cluster_with_every_step_done_is_complete() {
    let c = at(&live_at(11));
    assert_eq!(states(&c), vec![StepState::Done; 10]);
    assert_eq!((c.step, c.stage.as_str()), (10, "complete: all steps done"));
    assert!(c.is_complete());
    assert_eq!(c.short(), "10/10 complete");
    assert_eq!(detail(&c, 1), "3/3 infrastructure resources exist");
    assert_eq!(detail(&c, 5), "Secret/dev-kubeconfig exists");
    assert_eq!(detail(&c, 9), "1/1 node pools ready");
    assert_eq!(detail(&c, 10), "1/1 ExternalAuths ready");
}

#[test]
fn a_failed_infrastructure_resource_fails_step_2() {
    let mut live = live_at(3);
    let vnet = infra(not_ready(
        "InvalidAddressPrefix",
        "Error",
        "Address prefix 10.10.0.0/33 is invalid",
    ))
    .remove(1);
    replace(&mut live, "VirtualNetwork", "aro-dev-vnet", vnet);
    let c = at(&live);
    assert_eq!(c.step, 2);
    assert_eq!(
        c.stage,
        "failed at step 2: VirtualNetwork/aro-dev-vnet: InvalidAddressPrefix: Address prefix 10.10.0.0/33 is invalid"
    );
    assert!(c.is_failed());
    assert_eq!(c.short(), "2/10 ResourcesReady failed");
    // The ResourcesReady condition (True, from an earlier pass) does not hide the failure.
    assert_eq!(c.steps[1].state, StepState::Failed);
}

#[test]
fn a_failed_hcp_fails_step_4_and_a_failed_node_pool_step_9() {
    let mut live = live_at(4);
    replace(
        &mut live,
        "HcpOpenShiftCluster",
        "aro-dev",
        hcp(not_ready(
            "QuotaExceeded",
            "Error",
            "Operation could not be completed as it results in exceeding approved quota",
        )),
    );
    let c = at(&live);
    assert_eq!(
        (c.step, c.stage.as_str()),
        (
            4,
            "failed at step 4: HcpOpenShiftCluster/aro-dev: QuotaExceeded: Operation could not be completed as it results in exceeding approved quota"
        )
    );

    let mut live = live_at(9);
    replace(
        &mut live,
        "HcpOpenShiftClustersNodePool",
        "aro-dev-workers",
        node_pool(not_ready(
            "BadRequest",
            "Error",
            "vmSize Standard_X is not available",
        )),
    );
    let c = at(&live);
    assert_eq!(
        (c.step, c.stage.as_str()),
        (
            9,
            "failed at step 9: HcpOpenShiftClustersNodePool/aro-dev-workers: BadRequest: vmSize Standard_X is not available"
        )
    );
}

#[test]
fn a_failure_later_on_the_chain_is_shown_before_an_earlier_wait() {
    // After a drift the AROCluster is no longer provisioned while a node pool has failed.
    let mut live = live_at(9);
    replace(
        &mut live,
        "HcpOpenShiftClustersNodePool",
        "aro-dev-workers",
        node_pool(not_ready("BadRequest", "Error", "no capacity")),
    );
    live[1]["status"]["initialization"]["provisioned"] = json!(false);
    let c = at(&live);
    assert_eq!(c.step, 9);
    assert_eq!(c.steps[7].state, StepState::Waiting);
}

#[test]
fn resources_ready_from_the_condition_or_from_every_resource() {
    // Condition True, resources still settling on a new generation: the condition is enough.
    let mut live = live_at(3);
    let mut vnet = infra(json!([])).remove(1);
    vnet["metadata"]["generation"] = json!(2);
    replace(&mut live, "VirtualNetwork", "aro-dev-vnet", vnet);
    assert_eq!(at(&live).steps[1].state, StepState::Done);

    // No condition yet, every resource Ready by the ASO rule: done too.
    let mut live = live_at(3);
    live[1]["status"]["conditions"] = json!([]);
    let c = at(&live);
    assert_eq!(c.steps[1].state, StepState::Done);
    assert_eq!(detail(&c, 2), "3/3 infrastructure resources ready");

    // No condition and one resource stale: waiting, with the count.
    let mut live = live_at(2);
    live[1]["status"]["conditions"] = json!([]);
    assert_eq!(detail(&at(&live), 2), "2/3 infrastructure resources ready");
}

#[test]
fn hcp_ready_from_the_control_plane_condition_or_the_hcp() {
    // The HCP is Ready but the control plane has not said so yet.
    let mut live = live_at(5);
    live[2]["status"]["conditions"][0] =
        json!({"type": "HcpClusterReady", "status": "False", "reason": "Provisioning"});
    assert_eq!(at(&live).steps[3].state, StepState::Done);
    // The control plane says so but the HCP's own status is not in `live`.
    let mut live = live_at(5);
    live.retain(|o| o["kind"] != "HcpOpenShiftCluster");
    let c = at(&live);
    assert_eq!(c.steps[2].state, StepState::Waiting);
    assert_eq!(c.steps[3].state, StepState::Done);
}

#[test]
fn aro_cluster_not_ready_says_why_when_the_endpoint_is_missing() {
    let mut live = live_at(7);
    live[1]["status"]["conditions"][1] = json!({"type": "NetworkInfrastructureReady", "status": "False",
        "reason": "ExternallyManagedControlPlane", "message": "Waiting for the Control Plane to get ready"});
    assert_eq!(
        detail(&at(&live), 7),
        "Waiting for the Control Plane to get ready"
    );
}

#[test]
fn kubeconfig_secret_name_from_admin_credentials_or_default() {
    // A custom name on the HCP.
    let mut live = live_at(6);
    for o in live
        .iter_mut()
        .filter(|o| o["kind"] == "HcpOpenShiftCluster")
    {
        o["spec"]["operatorSpec"]["secrets"]["adminCredentials"]["name"] = json!("dev-admin");
    }
    let c = at(&live);
    assert_eq!(detail(&c, 5), "Secret/dev-admin not written yet");

    // No admin credentials anywhere: `<cluster>-kubeconfig`.
    let mut live = live_at(6);
    for o in live.iter_mut() {
        if o["kind"] == "HcpOpenShiftCluster" {
            o["spec"].as_object_mut().unwrap().remove("operatorSpec");
        }
        if o["kind"] == "AROControlPlane" {
            o["spec"]["resources"][0]["spec"]
                .as_object_mut()
                .unwrap()
                .remove("operatorSpec");
        }
    }
    let c = at(&live);
    assert_eq!(c.steps[4].state, StepState::Done);
    assert_eq!(detail(&c, 5), "Secret/dev-kubeconfig exists");
}

#[test]
fn external_auth_and_node_pools_not_applicable_when_none() {
    let mut live = live_at(11);
    live.retain(|o| {
        !matches!(
            o["kind"].as_str(),
            Some(
                "HcpOpenShiftClustersExternalAuth"
                    | "HcpOpenShiftClustersNodePool"
                    | "AROMachinePool"
                    | "MachinePool"
            )
        )
    });
    for o in live.iter_mut().filter(|o| o["kind"] == "AROControlPlane") {
        o["spec"]["resources"].as_array_mut().unwrap().truncate(1);
        o["status"]["conditions"]
            .as_array_mut()
            .unwrap()
            .truncate(1);
    }
    let c = at(&live);
    assert_eq!(c.steps[8].state, StepState::NotApplicable);
    assert_eq!(c.steps[9].state, StepState::NotApplicable);
    assert_eq!(detail(&c, 10), "no ExternalAuth embedded");
    assert!(c.steps[9].done && c.is_complete());
}

#[test]
fn an_external_auth_failure_fails_step_10() {
    let mut live = live_at(11);
    replace(
        &mut live,
        "HcpOpenShiftClustersExternalAuth",
        "aro-dev-entra",
        external_auth(not_ready(
            "InvalidIssuer",
            "Error",
            "issuer URL unreachable",
        )),
    );
    let c = at(&live);
    assert_eq!(
        c.stage,
        "failed at step 10: HcpOpenShiftClustersExternalAuth/aro-dev-entra: InvalidIssuer: issuer URL unreachable"
    );
}

#[test]
fn missing_aro_objects_are_named() {
    let c = at(&[]);
    assert_eq!(c.step, 1);
    assert_eq!(
        c.stage,
        "creating the infrastructure (AROCluster/dev not found)"
    );
    assert_eq!(detail(&c, 3), "AROControlPlane/dev not found");
}

#[test]
fn references_of_the_capi_cluster_are_followed() {
    let mut live = live_at(11);
    for o in live.iter_mut() {
        if o["kind"] == "AROCluster" {
            o["metadata"]["name"] = json!("dev-infra");
        }
        if o["kind"] == "Cluster" {
            o["spec"]["infrastructureRef"]["name"] = json!("dev-infra");
        }
    }
    assert!(at(&live).is_complete());
}

#[test]
fn objects_of_other_namespaces_are_ignored() {
    let mut live = live_at(11);
    for o in live.iter_mut().filter(|o| o["kind"] == "Secret") {
        o["metadata"]["namespace"] = json!("elsewhere");
    }
    assert_eq!(at(&live).step, 5);
}

#[test]
fn without_a_cluster_key_the_only_cluster_is_taken() {
    let c = chain(&live_at(11), None);
    assert!(c.is_complete());
    let only_aro = live_at(4)
        .into_iter()
        .filter(|o| o["kind"] != "Cluster")
        .collect::<Vec<_>>();
    assert_eq!(chain(&only_aro, None).step, 4);

    let unknown = chain(&[], None);
    assert_eq!(
        (unknown.step, unknown.stage.as_str()),
        (0, "no cluster known")
    );
    assert_eq!(unknown.steps.len(), 10);
    assert!(unknown.current().is_none());
    assert_eq!(unknown.short(), "0/10 unknown");
    assert_eq!(NS, "aro-dev");
}

#[test]
fn external_auth_ready_from_itself_or_the_control_plane_condition() {
    // The ExternalAuth is Ready; the control plane's condition has not caught up.
    let mut live = live_at(11);
    live[2]["status"]["conditions"][1]["status"] = json!("False");
    assert!(at(&live).is_complete());
    // The condition is True; the ExternalAuth's own status is not in `live`.
    let mut live = live_at(11);
    live.retain(|o| o["kind"] != "HcpOpenShiftClustersExternalAuth");
    assert!(at(&live).is_complete());
}

#[test]
fn a_control_plane_held_by_its_aggregated_api_gate_waits_at_step_6() {
    let mut live = live_at(11);
    let cp = live
        .iter_mut()
        .find(|o| o["kind"] == "AROControlPlane")
        .expect("control plane in fixture");
    let conditions = cp["status"]["conditions"]
        .as_array_mut()
        .expect("conditions");
    conditions.push(json!({"type": "Available", "status": "False",
        "reason": "AggregatedAPIServicesNotAvailable",
        "message": "aggregated APIServices not available: v1.route.openshift.io"}));
    let c = at(&live);
    assert_eq!(c.steps[5].state, StepState::Waiting);
    assert_eq!(
        detail(&c, 6),
        "AROControlPlane/dev not available: aggregated APIServices not available: v1.route.openshift.io"
    );
    // Once Available, step 6 is done again.
    let cp = live
        .iter_mut()
        .find(|o| o["kind"] == "AROControlPlane")
        .unwrap();
    let last = cp["status"]["conditions"]
        .as_array_mut()
        .unwrap()
        .last_mut()
        .unwrap();
    last["status"] = json!("True");
    assert_eq!(at(&live).steps[5].state, StepState::Done);
}

//! The Azure simulator against an in-process local control plane (delay 0 unless a test needs to
//! see a step last): what a user of the simulated ASO sees, end to end.

#[path = "azuresim/guest.rs"]
mod guest;
#[path = "azuresim/sdk.rs"]
mod sdk;

use aro_gitops::azuresim::{
    AzureSimulator, FAIL_ANNOTATION, FINALIZER, SimConfig, WARN_ANNOTATION, inventory, secret,
};
use aro_gitops::controlplane::{Config, ControlPlane};
use aro_gitops::reconcile::readiness::aso_readiness;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams,
    PostParams, WatchEvent, WatchParams,
};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::time::Instant;

#[path = "azuresim/credential.rs"]
mod credential;
#[path = "azuresim/identities.rs"]
mod identities;

const DEADLINE: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(20);
const RG_ID: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1";

struct Env {
    client: Client,
    sim: tokio::task::JoinHandle<()>,
    _cp: ControlPlane,
    _dir: tempfile::TempDir,
}

impl Drop for Env {
    fn drop(&mut self) {
        self.sim.abort();
    }
}

fn env() -> Env {
    env_with(Duration::ZERO)
}

fn env_with(delay: Duration) -> Env {
    let dir = tempfile::tempdir().expect("tempdir");
    let cp = ControlPlane::open(Config::new(dir.path())).expect("control plane");
    let client = cp.client();
    let sim = AzureSimulator::new(
        client.clone(),
        SimConfig {
            provisioning_delay: delay,
        },
    )
    .spawn();
    Env {
        client,
        sim,
        _cp: cp,
        _dir: dir,
    }
}

fn api_for(client: &Client, api_version: &str, kind: &str) -> Api<DynamicObject> {
    let (group, version) = aro_gitops::object::split_api_version(api_version);
    let plural = format!("{}s", kind.to_lowercase());
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), &plural);
    Api::namespaced_with(client.clone(), "default", &ar)
}

fn api_of(client: &Client, obj: &Value) -> Api<DynamicObject> {
    api_for(
        client,
        obj["apiVersion"].as_str().unwrap(),
        obj["kind"].as_str().unwrap(),
    )
}

async fn create(client: &Client, yaml: &str) -> Value {
    let obj = aro_gitops::yaml::from_str(yaml).expect("test YAML");
    let dynamic: DynamicObject = serde_json::from_value(obj.clone()).unwrap();
    let created = api_of(client, &obj)
        .create(&PostParams::default(), &dynamic)
        .await
        .expect("create");
    serde_json::to_value(created).unwrap()
}

/// Polls `name` until `check` holds, or fails after [`DEADLINE`] showing the last state seen.
async fn wait_for(
    api: &Api<DynamicObject>,
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let last = api
            .get_opt(name)
            .await
            .expect("get")
            .map(|o| serde_json::to_value(o).unwrap());
        match last {
            Some(obj) if check(&obj) => return obj,
            _ if Instant::now() >= deadline => {
                panic!("{name}: timed out waiting for {what}; last seen: {last:#?}")
            }
            _ => tokio::time::sleep(POLL).await,
        }
    }
}

fn ready(obj: &Value) -> Value {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
        .cloned()
        .unwrap_or(Value::Null)
}

fn is_ready(obj: &Value) -> bool {
    let c = ready(obj);
    c["status"] == "True" && c["observedGeneration"] == obj["metadata"]["generation"]
}

const RG: &str = "
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata: {name: rg1, namespace: default}
spec: {location: eastus}
";

const CLUSTER: &str = "
apiVersion: redhatopenshift.azure.com/v1api20240610preview
kind: HcpOpenShiftCluster
metadata: {name: c1, namespace: default}
spec:
  owner: {name: rg1}
  location: eastus
  identity:
    type: UserAssigned
    userAssignedIdentities:
      - reference: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp-cluster-api-azure}
      - reference: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp-control-plane}
      - reference: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp-cloud-controller-manager}
      - reference: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp-ingress}
      - reference: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp-disk-csi-driver}
      - reference: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp-file-csi-driver}
      - reference: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp-image-registry}
      - reference: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp-cloud-network-config}
      - reference: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp-kms}
      - reference: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service}
  properties:
    version: {id: '4.20', channelGroup: stable}
    api: {visibility: Public}
    platform:
      subnetReference: {group: network.azure.com, kind: VirtualNetworksSubnet, name: subnet1}
      networkSecurityGroupReference: {group: network.azure.com, kind: NetworkSecurityGroup, name: nsg1}
      # Every identity OpenShift 4.20 requires, by ARM id (outside the namespace: no role to check).
      operatorsAuthentication:
        userAssignedIdentities:
          controlPlaneOperatorsReferences:
            cluster-api-azure: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp-cluster-api-azure}
            control-plane: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp-control-plane}
            cloud-controller-manager: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp-cloud-controller-manager}
            ingress: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp-ingress}
            disk-csi-driver: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp-disk-csi-driver}
            file-csi-driver: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp-file-csi-driver}
            image-registry: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp-image-registry}
            cloud-network-config: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp-cloud-network-config}
            kms: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp-kms}
          dataPlaneOperatorsReferences:
            disk-csi-driver: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/dp-disk-csi-driver}
            file-csi-driver: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/dp-file-csi-driver}
            image-registry: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/dp-image-registry}
          serviceManagedIdentityReference: {armId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service}
  operatorSpec:
    secrets:
      adminCredentials: {name: c1-kubeconfig, key: value}
";

#[tokio::test]
async fn resource_group_becomes_ready() {
    let env = env();
    let rg = create(&env.client, RG).await;
    let rg = wait_for(&api_of(&env.client, &rg), "rg1", "Ready", is_ready).await;
    let c = ready(&rg);
    assert_eq!(c["reason"], "Succeeded");
    assert!(c.get("severity").is_none(), "no severity when True: {c}");
    assert!(c["message"].as_str().unwrap().contains("simulator"), "{c}");
    assert_eq!(rg["status"]["id"], RG_ID);
}

#[tokio::test]
async fn vnet_waits_for_its_missing_resource_group_then_becomes_ready() {
    let env = env();
    let vnet = create(
        &env.client,
        "
apiVersion: network.azure.com/v1api20201101
kind: VirtualNetwork
metadata: {name: vnet1, namespace: default}
spec: {owner: {name: rg1}, location: eastus}
",
    )
    .await;
    let vnets = api_of(&env.client, &vnet);
    let waiting = wait_for(&vnets, "vnet1", "WaitingForOwner", |o| {
        ready(o)["reason"] == "WaitingForOwner"
    })
    .await;
    let c = ready(&waiting);
    assert_eq!(c["status"], "False");
    assert_eq!(c["severity"], "Warning");
    assert!(c["message"].as_str().unwrap().contains("rg1"), "{c}");

    create(&env.client, RG).await;
    let vnet = wait_for(&vnets, "vnet1", "Ready once the RG exists", is_ready).await;
    assert_eq!(
        vnet["status"]["id"],
        format!("{RG_ID}/providers/Microsoft.Network/virtualNetworks/vnet1")
    );
}

#[tokio::test]
async fn cluster_gets_its_status_and_kubeconfig_secret() {
    let env = env();
    create(&env.client, RG).await;
    let cluster = create(&env.client, CLUSTER).await;
    let cluster = wait_for(&api_of(&env.client, &cluster), "c1", "Ready", is_ready).await;
    let status = &cluster["status"];
    assert_eq!(
        status["id"],
        format!("{RG_ID}/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1")
    );
    let api_url = status["properties"]["api"]["url"]
        .as_str()
        .expect("API URL");
    let authority = api_url.strip_prefix("https://").expect("https URL");
    let (host, port) = authority.rsplit_once(':').expect("API URL with a port");
    assert!(
        host.ends_with(".invalid") && port.parse::<u16>().is_ok(),
        "{api_url}"
    );
    assert!(
        status["properties"]["console"]["url"]
            .as_str()
            .unwrap()
            .starts_with("https://console-openshift-console.apps.")
    );
    assert_eq!(status["properties"]["version"]["id"], "4.20.0");
    assert_eq!(status["properties"]["provisioningState"], "Succeeded");

    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), "default");
    let deadline = Instant::now() + DEADLINE;
    let kubeconfig_secret = loop {
        if let Some(s) = secrets.get_opt("c1-kubeconfig").await.expect("get Secret") {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "the kubeconfig Secret never appeared"
        );
        tokio::time::sleep(POLL).await;
    };
    assert_eq!(
        kubeconfig_secret
            .annotations()
            .get(secret::SIMULATED_ANNOTATION)
            .map(String::as_str),
        Some(secret::SIMULATED_NOTE)
    );
    let owner = &kubeconfig_secret.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("HcpOpenShiftCluster", "c1")
    );
    assert_eq!(
        Some(owner.uid.as_str()),
        cluster["metadata"]["uid"].as_str()
    );
    let bytes = &kubeconfig_secret.data.as_ref().expect("data")["value"].0;
    let kubeconfig = aro_gitops::yaml::from_str(std::str::from_utf8(bytes).unwrap())
        .expect("valid kubeconfig YAML");
    assert_eq!(kubeconfig["clusters"][0]["cluster"]["server"], api_url);
    assert_eq!(kubeconfig["users"][0]["user"]["token"], secret::FAKE_TOKEN);
}

#[tokio::test]
async fn node_pool_reports_provisioning_state_and_replicas() {
    let env = env();
    create(&env.client, RG).await;
    create(&env.client, CLUSTER).await;
    let pool = create(
        &env.client,
        "
apiVersion: redhatopenshift.azure.com/v1api20240610preview
kind: HcpOpenShiftClustersNodePool
metadata: {name: c1-pool, namespace: default}
spec:
  owner: {name: c1}
  location: eastus
  properties: {replicas: 3, version: {id: '4.20'}, platform: {vmSize: Standard_D4s_v3}}
",
    )
    .await;
    let pool = wait_for(&api_of(&env.client, &pool), "c1-pool", "Ready", is_ready).await;
    assert_eq!(
        pool["status"]["properties"]["provisioningState"],
        "Succeeded"
    );
    assert_eq!(pool["status"]["properties"]["replicas"], 3);
    let id = pool["status"]["id"].as_str().unwrap();
    assert!(
        id.ends_with("/hcpOpenShiftClusters/c1/nodePools/c1-pool"),
        "{id}"
    );
}

#[tokio::test]
async fn fail_annotation_fails_with_severity_error_and_the_arm_code() {
    let env = env();
    let rg = create(
        &env.client,
        &format!(
            "
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg1
  namespace: default
  annotations: {{'{FAIL_ANNOTATION}': QuotaExceeded}}
spec: {{location: eastus}}
"
        ),
    )
    .await;
    let rg = wait_for(&api_of(&env.client, &rg), "rg1", "a failure", |o| {
        ready(o)["severity"] == "Error"
    })
    .await;
    let c = ready(&rg);
    assert_eq!(c["status"], "False");
    assert_eq!(c["reason"], "QuotaExceeded");
    assert_eq!(c["observedGeneration"], 1);
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("Simulated ARM error"),
        "{c}"
    );
}

#[tokio::test]
async fn spec_change_goes_through_reconciling_to_succeeded_with_the_new_generation() {
    let env = env();
    create(&env.client, RG).await;
    let cluster = create(&env.client, CLUSTER).await;
    let clusters = api_of(&env.client, &cluster);
    let before = wait_for(&clusters, "c1", "Ready", is_ready).await;
    let since = before["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();

    let params = WatchParams::default()
        .fields("metadata.name=c1")
        .timeout(10);
    let mut events = clusters
        .watch(&params, &since)
        .await
        .expect("watch")
        .boxed();
    let changed = clusters
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"properties": {"version": {"id": "4.21"}}}})),
        )
        .await
        .expect("spec change");
    // Right after the change, before the simulator has reacted, Ready still speaks of
    // generation 1: stale, so not ready by the readiness rule.
    let changed = serde_json::to_value(changed).unwrap();
    assert_eq!(changed["metadata"]["generation"], 2);
    assert_eq!(ready(&changed)["observedGeneration"], 1);
    assert_eq!(ready(&changed)["status"], "True");
    let stale = aso_readiness(&changed);
    assert!(!stale.is_ready() && !stale.is_failed(), "{stale}");

    let mut seen = Vec::new();
    let deadline = Instant::now() + DEADLINE;
    let after = loop {
        let next = tokio::time::timeout_at(deadline, events.try_next()).await;
        let Ok(Ok(Some(event))) = next else {
            panic!("no Ready for generation 2; saw {seen:?} ({next:?})")
        };
        let WatchEvent::Modified(obj) = event else {
            continue;
        };
        let obj = serde_json::to_value(obj).unwrap();
        let c = ready(&obj);
        assert!(
            obj["status"].get("provisioningState").is_none(),
            "only where ASO has it: status.properties"
        );
        seen.push((
            c["reason"].clone(),
            c["observedGeneration"].clone(),
            obj["status"]["properties"]["provisioningState"].clone(),
        ));
        if obj["metadata"]["generation"] == 2 && is_ready(&obj) {
            break obj;
        }
    };
    let reconciling = (json!("Reconciling"), json!(2), json!("Updating"));
    assert!(
        seen.contains(&reconciling),
        "expected Reconciling/Updating for generation 2 before Ready: {seen:?}"
    );
    assert_eq!(
        seen.last().unwrap(),
        &(json!("Succeeded"), json!(2), json!("Succeeded"))
    );
    assert_eq!(after["status"]["properties"]["version"]["id"], "4.21.0");
}

#[tokio::test]
async fn provisioning_takes_the_configured_delay() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cp = ControlPlane::open(Config::new(dir.path())).expect("control plane");
    let client = cp.client();
    let delay = Duration::from_millis(300);
    let sim = AzureSimulator::new(
        client.clone(),
        SimConfig {
            provisioning_delay: delay,
        },
    )
    .spawn();
    let started = Instant::now();
    let rg = create(&client, RG).await;
    let rgs = api_of(&client, &rg);
    let reconciling = wait_for(&rgs, "rg1", "Reconciling", |o| !ready(o).is_null()).await;
    assert_eq!(ready(&reconciling)["reason"], "Reconciling");
    assert_eq!(ready(&reconciling)["severity"], "Info");
    wait_for(&rgs, "rg1", "Ready", is_ready).await;
    assert!(
        started.elapsed() >= delay,
        "Ready after {:?}, before the {delay:?} delay",
        started.elapsed()
    );
    sim.abort();
}

#[tokio::test]
async fn reconcile_policy_skip_is_left_alone() {
    let env = env();
    // Make sure the simulator watches ResourceGroups before the two below are created.
    let warm_up = create(&env.client, &RG.replace("rg1", "rg0")).await;
    wait_for(&api_of(&env.client, &warm_up), "rg0", "Ready", is_ready).await;
    let skipped = create(
        &env.client,
        "
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg-skipped
  namespace: default
  annotations: {serviceoperator.azure.com/reconcile-policy: skip}
spec: {location: eastus}
",
    )
    .await;
    create(&env.client, RG).await;
    let rgs = api_of(&env.client, &skipped);
    // Both come through the same watch, in order: once rg1 is ready, rg-skipped has been handled.
    wait_for(&rgs, "rg1", "Ready", is_ready).await;
    let skipped = rgs.get("rg-skipped").await.expect("get");
    let skipped = serde_json::to_value(skipped).unwrap();
    assert!(
        skipped
            .get("status")
            .is_none_or(|s| s.get("conditions").is_none()),
        "{skipped:#}"
    );
}

/// A resource group's `provisioningState` (in `status.properties`, as ASO has it).
fn arm_state(obj: &Value) -> String {
    obj["status"]["properties"]["provisioningState"]
        .as_str()
        .unwrap_or("-")
        .to_string()
}

fn finalizers(obj: &Value) -> Vec<String> {
    obj["metadata"]["finalizers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Watches `name` from `since` and collects `pick` of every event until `done` holds for one (then
/// returns what it collected), failing after [`DEADLINE`].
async fn watch_until<T: std::fmt::Debug>(
    api: &Api<DynamicObject>,
    name: &str,
    since: &str,
    pick: impl Fn(&WatchEvent<DynamicObject>) -> Option<T>,
    done: impl Fn(&WatchEvent<DynamicObject>) -> bool,
) -> Vec<T> {
    let params = WatchParams::default()
        .fields(&format!("metadata.name={name}"))
        .timeout(10);
    let mut events = api.watch(&params, since).await.expect("watch").boxed();
    let deadline = Instant::now() + DEADLINE;
    let mut seen = Vec::new();
    loop {
        let next = tokio::time::timeout_at(deadline, events.try_next()).await;
        let Ok(Ok(Some(event))) = next else {
            panic!("{name}: watch ended before the awaited event; saw {seen:?} ({next:?})")
        };
        seen.extend(pick(&event));
        if done(&event) {
            return seen;
        }
    }
}

fn object_of(event: &WatchEvent<DynamicObject>) -> Option<Value> {
    match event {
        WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
            Some(serde_json::to_value(o).unwrap())
        }
        _ => None,
    }
}

/// `states` without consecutive repeats.
fn steps(states: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in states {
        if out.last() != Some(&s) {
            out.push(s);
        }
    }
    out
}

#[tokio::test]
async fn provisioning_state_goes_accepted_provisioning_succeeded() {
    for delay in [Duration::ZERO, Duration::from_millis(300)] {
        let env = env_with(delay);
        // Make sure the simulator watches ResourceGroups, then watch rg1 from before its creation.
        let warm_up = create(&env.client, &RG.replace("rg1", "rg0")).await;
        let rgs = api_of(&env.client, &warm_up);
        let warm = wait_for(&rgs, "rg0", "Ready", is_ready).await;
        let since = warm["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        let watching = {
            let rgs = rgs.clone();
            tokio::spawn(async move {
                watch_until(
                    &rgs,
                    "rg1",
                    &since,
                    |e| object_of(e).map(|o| arm_state(&o)),
                    |e| object_of(e).is_some_and(|o| is_ready(&o)),
                )
                .await
            })
        };
        let started = Instant::now();
        create(&env.client, RG).await;
        let states = steps(watching.await.expect("watch task"));
        assert_eq!(
            states,
            ["-", "Accepted", "Provisioning", "Succeeded"],
            "delay {delay:?}"
        );
        assert!(started.elapsed() >= delay, "Succeeded before the delay");
        let rg = rgs.get("rg1").await.expect("get");
        let rg = serde_json::to_value(rg).unwrap();
        assert_eq!(finalizers(&rg), [FINALIZER]);
        assert!(
            inventory::exists(&env.client, RG_ID)
                .await
                .expect("inventory"),
            "recorded in the simulated Azure once Succeeded"
        );
    }
}

#[tokio::test]
async fn a_managed_delete_shows_deleting_for_the_delay_then_removes_the_azure_record() {
    let env = env_with(Duration::from_millis(300));
    let rg = create(&env.client, RG).await;
    let rgs = api_of(&env.client, &rg);
    wait_for(&rgs, "rg1", "Ready", is_ready).await;
    assert!(
        inventory::exists(&env.client, RG_ID)
            .await
            .expect("inventory")
    );

    let started = Instant::now();
    let held = rgs
        .delete("rg1", &DeleteParams::default())
        .await
        .expect("delete")
        .left()
        .expect("the finalizer holds the object");
    let held = serde_json::to_value(held).unwrap();
    assert!(
        held["metadata"]["deletionTimestamp"].is_string(),
        "{held:#}"
    );
    let since = held["metadata"]["resourceVersion"].as_str().unwrap();
    let seen = watch_until(
        &rgs,
        "rg1",
        since,
        |e| {
            let o = object_of(e)?;
            let kind = if matches!(e, WatchEvent::Deleted(_)) {
                "gone"
            } else {
                "live"
            };
            Some((kind, ready(&o)["reason"].clone(), arm_state(&o)))
        },
        |e| matches!(e, WatchEvent::Deleted(_)),
    )
    .await;
    assert!(
        seen.contains(&("live", json!("Deleting"), "Deleting".to_string())),
        "Deleting while the object still exists: {seen:?}"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "gone before the delay: {:?}",
        started.elapsed()
    );
    assert!(rgs.get_opt("rg1").await.expect("get").is_none());
    assert!(
        !inventory::exists(&env.client, RG_ID)
            .await
            .expect("inventory"),
        "the simulated Azure resource is deleted before the finalizer goes"
    );
}

#[tokio::test]
async fn deletion_keeps_other_finalizers_and_completes_promptly_without_delay() {
    let env = env();
    let rg = create(
        &env.client,
        "
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata: {name: rg1, namespace: default, finalizers: [example.com/keep]}
spec: {location: eastus}
",
    )
    .await;
    let rgs = api_of(&env.client, &rg);
    let live = wait_for(&rgs, "rg1", "Ready", is_ready).await;
    assert_eq!(finalizers(&live), ["example.com/keep", FINALIZER]);
    rgs.delete("rg1", &DeleteParams::default())
        .await
        .expect("delete");
    // The simulator finishes its part: Azure record gone, its finalizer released, the other kept.
    let held = wait_for(&rgs, "rg1", "the simulator's finalizer released", |o| {
        finalizers(o) == ["example.com/keep"]
    })
    .await;
    assert_eq!(ready(&held)["reason"], "Deleting");
    assert!(
        !inventory::exists(&env.client, RG_ID)
            .await
            .expect("inventory")
    );
    rgs.patch(
        "rg1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("release the other finalizer");
    assert!(rgs.get_opt("rg1").await.expect("get").is_none());
}

#[tokio::test]
async fn detach_on_delete_and_skip_release_at_once_and_keep_the_azure_record() {
    // A delay the test would notice: these policies must not wait for it.
    let env = env_with(Duration::from_secs(30));
    // skip only reads: the Azure resource must exist first.
    inventory::ensure(
        &env.client,
        &format!("{RG_ID}-skip"),
        "Microsoft.Resources/resourceGroups",
        "test",
    )
    .await
    .expect("record");
    let detached = create(
        &env.client,
        "
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg1
  namespace: default
  annotations: {serviceoperator.azure.com/reconcile-policy: detach-on-delete}
spec: {location: eastus}
",
    )
    .await;
    let rgs = api_of(&env.client, &detached);
    // Provisioning takes the long delay: record the detached one by hand, as if it had finished.
    inventory::ensure(
        &env.client,
        RG_ID,
        "Microsoft.Resources/resourceGroups",
        "test",
    )
    .await
    .expect("record");
    create(
        &env.client,
        "
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg1-skip
  namespace: default
  annotations: {serviceoperator.azure.com/reconcile-policy: skip}
spec: {location: eastus}
",
    )
    .await;
    wait_for(
        &rgs,
        "rg1-skip",
        "Ready (read from the simulated Azure)",
        is_ready,
    )
    .await;
    for (name, arm_id) in [
        ("rg1", RG_ID.to_string()),
        ("rg1-skip", format!("{RG_ID}-skip")),
    ] {
        wait_for(&rgs, name, "the finalizer", |o| {
            finalizers(o) == [FINALIZER]
        })
        .await;
        let started = Instant::now();
        rgs.delete(name, &DeleteParams::default())
            .await
            .expect("delete");
        let deadline = Instant::now() + DEADLINE;
        while rgs.get_opt(name).await.expect("get").is_some() {
            assert!(Instant::now() < deadline, "{name} was never released");
            tokio::time::sleep(POLL).await;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{name}");
        assert!(
            inventory::exists(&env.client, &arm_id)
                .await
                .expect("inventory"),
            "{name}: the simulated Azure resource is kept"
        );
    }
}

#[tokio::test]
async fn warning_annotation_is_a_transient_failure_until_removed() {
    let env = env();
    let rg = create(
        &env.client,
        &format!(
            "
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg1
  namespace: default
  annotations: {{'{WARN_ANNOTATION}': TooManyRequests}}
spec: {{location: eastus}}
"
        ),
    )
    .await;
    let rgs = api_of(&env.client, &rg);
    let retrying = wait_for(&rgs, "rg1", "a warning", |o| {
        ready(o)["severity"] == "Warning"
    })
    .await;
    let c = ready(&retrying);
    assert_eq!(c["status"], "False");
    assert_eq!(c["reason"], "TooManyRequests");
    let message = c["message"].as_str().unwrap();
    assert!(
        message.contains("transient") && message.contains("simulator"),
        "{message}"
    );
    assert_eq!(arm_state(&retrying), "Provisioning");
    let readiness = aso_readiness(&retrying);
    assert!(
        !readiness.is_ready() && !readiness.is_failed(),
        "{readiness}"
    );
    assert!(
        !inventory::exists(&env.client, RG_ID)
            .await
            .expect("inventory")
    );

    rgs.patch(
        "rg1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {WARN_ANNOTATION: null}}})),
    )
    .await
    .expect("remove the annotation");
    let done = wait_for(&rgs, "rg1", "Ready once the annotation is gone", is_ready).await;
    assert_eq!(arm_state(&done), "Succeeded");
}

#[tokio::test]
async fn removing_the_error_annotation_lets_it_provision() {
    let env = env();
    let rg = create(
        &env.client,
        &format!(
            "
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg1
  namespace: default
  annotations: {{'{FAIL_ANNOTATION}': QuotaExceeded}}
spec: {{location: eastus}}
"
        ),
    )
    .await;
    let rgs = api_of(&env.client, &rg);
    let failed = wait_for(&rgs, "rg1", "a failure", |o| {
        ready(o)["severity"] == "Error"
    })
    .await;
    assert_eq!(arm_state(&failed), "Failed");
    assert!(aso_readiness(&failed).is_failed());
    rgs.patch(
        "rg1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {FAIL_ANNOTATION: null}}})),
    )
    .await
    .expect("remove the annotation");
    let done = wait_for(&rgs, "rg1", "Ready once the annotation is gone", is_ready).await;
    assert_eq!(arm_state(&done), "Succeeded");
}

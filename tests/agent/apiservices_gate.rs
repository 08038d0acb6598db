//! The aggregated-APIServices gate through the whole agent (issue 13, `policies.md` §4): the
//! agent reads each hosted cluster's APIServices through its kubeconfig Secret from the
//! simulator's guest API. All available: `AggregatedAPIServicesAvailable` and `Available` True.
//! One held unavailable: the condition lists it, `Available` stays False with its message, the
//! cluster does not converge (and does once it is available again). Reads failing:
//! `ReconcileError`. Once Available, a later unavailable APIService does not take it back. And
//! the applier's order for an aggregated API in git: its Service, then its Endpoints, then the
//! APIService.

use super::*;
use aro_gitops::azuresim::guest_api::{READ_ERROR_ANNOTATION, UNAVAILABLE_ANNOTATION};
use aro_gitops::report::ReportCondition;

const CONTROL_PLANE_API: &str = "controlplane.cluster.x-k8s.io/v1beta2";
const GATE: &str = "AggregatedAPIServicesAvailable";
const AVAILABLE: &str = "Available";
/// How long one run of a unit that cannot converge goes on before it is looked at.
const SHORT_RUN: Duration = Duration::from_secs(5);

/// The condition `type_` of the AROControlPlane `ns/name` in a unit's outcome.
fn reported(o: &UnitOutcome, ns: &str, name: &str, type_: &str) -> Option<ReportCondition> {
    let object = format!("AROControlPlane/{ns}/{name}");
    o.standing
        .conditions
        .iter()
        .find(|c| c.object == object)?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .cloned()
}

fn status_of(c: &Option<ReportCondition>) -> (Option<&str>, Option<&str>) {
    (
        c.as_ref().map(|c| c.status.as_str()),
        c.as_ref().and_then(|c| c.reason.as_deref()),
    )
}

/// Annotates dev's HcpOpenShiftCluster (in git) with `annotation: value`.
fn annotate_dev_cluster(f: &Fleet, annotation: &str, value: &str) {
    f.add_patch(
        DEV,
        "AROControlPlane",
        "dev",
        &format!("- op: add\n  path: /spec/resources/0/metadata/annotations\n  value: {{{annotation}: '{value}'}}"),
    );
}

/// Removes the patch [`annotate_dev_cluster`] added.
fn unannotate_dev_cluster(f: &Fleet) {
    let rel = format!("{DEV}/kustomization.yaml");
    let text = std::fs::read_to_string(f.repo.join(&rel)).expect("read the kustomization");
    let (kept, _) = text.split_once("\npatches:").expect("the test's patch");
    f.write(&rel, kept);
}

/// Runs the agent (runs of [`SHORT_RUN`], dev not expected to converge) until `done` holds for
/// dev's outcome and prod has converged; gives that run.
async fn run_until(f: &Fleet, what: &str, done: impl Fn(&UnitOutcome) -> bool) -> RunSummary {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        f.wait_store_free().await;
        let mut config = f.config();
        config.timeout = SHORT_RUN;
        let s = agent::run(config).await.expect("the agent runs");
        if done(outcome(&s, DEV)) && report::phase(outcome(&s, PROD)) == Phase::Converged {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not seen in time\n{}\n{:#?}",
            describe(outcome(&s, DEV)),
            outcome(&s, DEV).standing.conditions
        );
    }
}

async fn live_control_plane(f: &Fleet, ns: &'static str, name: &'static str) -> Value {
    f.inspect(
        |c| async move { live(&c, &key(CONTROL_PLANE_API, "AROControlPlane", ns, name)).await },
    )
    .await
}

fn live_condition<'a>(obj: &'a Value, type_: &str) -> &'a Value {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .unwrap_or_else(|| panic!("condition {type_} in {obj:#}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_apiservice_available_makes_the_control_plane_available() {
    let f = Fleet::plain();
    let s = f.run().await;
    for (unit, ns, name) in [(DEV, "aro-dev", "dev"), (PROD, "aro-prod", "prod")] {
        let o = outcome(&s, unit);
        assert_converged(o);
        let gate = reported(o, ns, name, GATE);
        assert_eq!(
            status_of(&gate),
            (Some("True"), Some("AsExpected")),
            "{gate:?}"
        );
        // Both clusters sign in through an ExternalAuth: no OAuth server, 10 APIServices.
        assert_eq!(
            gate.unwrap().message.as_deref(),
            Some("All 10 aggregated APIServices are available")
        );
        let available = reported(o, ns, name, AVAILABLE);
        assert_eq!(status_of(&available), (Some("True"), Some("AsExpected")));
    }
    // The kubeconfig the agent read names the simulator's guest API on loopback, over HTTPS
    // with the simulator's guest CA.
    let secret = f
        .inspect(
            |c| async move { live(&c, &key("v1", "Secret", "aro-dev", "dev-kubeconfig")).await },
        )
        .await;
    let text = secret["data"]["value"].as_str().expect("kubeconfig data");
    use base64::Engine as _;
    let kubeconfig = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .expect("base64"),
    )
    .expect("UTF-8");
    assert!(
        kubeconfig.contains("server: https://127.0.0.1:")
            && kubeconfig.contains("/clusters/aro-dev/aro-dev"),
        "the kubeconfig names the guest API"
    );
    assert!(kubeconfig.contains("certificate-authority-data:"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unavailable_apiservice_holds_available_with_its_message_until_it_is_back() {
    let f = Fleet::plain();
    annotate_dev_cluster(
        &f,
        UNAVAILABLE_ANNOTATION,
        "v1.route.openshift.io,v1.apps.openshift.io",
    );
    let s = run_until(&f, "the gate False", |o| {
        status_of(&reported(o, "aro-dev", "dev", GATE)).0 == Some("False")
    })
    .await;
    let o = outcome(&s, DEV);
    let gate = reported(o, "aro-dev", "dev", GATE).expect("the gate");
    assert_eq!(
        gate.reason.as_deref(),
        Some("AggregatedAPIServicesNotAvailable")
    );
    let listed = "APIServices not available: v1.apps.openshift.io, v1.route.openshift.io";
    assert_eq!(gate.message.as_deref(), Some(listed));
    let available = reported(o, "aro-dev", "dev", AVAILABLE).expect("Available");
    assert_eq!(available.status, "False");
    assert_eq!(
        available.reason.as_deref(),
        Some("AggregatedAPIServicesNotAvailable")
    );
    assert_eq!(
        available.message.as_deref(),
        Some(listed),
        "the blocking message carried"
    );
    // The unit is not converged: its AROControlPlane is not ready, and says why.
    assert_ne!(report::phase(o), Phase::Converged, "{}", describe(o));
    let acp = o
        .objects
        .iter()
        .find(|ob| ob.key.kind == "AROControlPlane")
        .expect("the AROControlPlane");
    assert!(!acp.ready);
    assert_eq!(
        acp.reason.as_deref(),
        Some("Available: AggregatedAPIServicesNotAvailable")
    );
    assert_eq!(acp.message.as_deref(), Some(listed));
    // The other cluster is not held.
    assert_converged(outcome(&s, PROD));
    let md = f.report("reports/aro-dev/dev.md").expect("the dev report");
    assert!(
        md.contains(&format!(
            "| {AVAILABLE} | False | AggregatedAPIServicesNotAvailable | {listed} |"
        )),
        "{md}"
    );

    // Available again: the same run looks at the guest again and converges.
    unannotate_dev_cluster(&f);
    let s = f.run().await;
    let o = outcome(&s, DEV);
    assert_converged(o);
    assert_eq!(
        status_of(&reported(o, "aro-dev", "dev", GATE)),
        (Some("True"), Some("AsExpected"))
    );
    assert_eq!(
        status_of(&reported(o, "aro-dev", "dev", AVAILABLE)),
        (Some("True"), Some("AsExpected"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_reads_of_the_guest_are_a_reconcile_error() {
    let f = Fleet::plain();
    annotate_dev_cluster(&f, READ_ERROR_ANNOTATION, "500");
    let s = run_until(&f, "ReconcileError", |o| {
        status_of(&reported(o, "aro-dev", "dev", GATE)).1 == Some("ReconcileError")
    })
    .await;
    let o = outcome(&s, DEV);
    let gate = reported(o, "aro-dev", "dev", GATE).expect("the gate");
    assert_eq!(gate.status, "False");
    let message = gate.message.clone().unwrap_or_default();
    assert!(
        message.starts_with("reading the guest cluster's APIServices failed: 500"),
        "{message}"
    );
    assert!(
        !message.contains("sha256~"),
        "no token in the message: {message}"
    );
    let available = reported(o, "aro-dev", "dev", AVAILABLE).expect("Available");
    assert_eq!(
        (available.status.as_str(), available.reason.as_deref()),
        ("False", Some("ReconcileError"))
    );
    assert_eq!(available.message, gate.message);
    assert_ne!(report::phase(o), Phase::Converged, "{}", describe(o));
    assert_converged(outcome(&s, PROD));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_available_an_unavailable_apiservice_does_not_take_it_back() {
    let f = Fleet::plain();
    let s = f.run().await;
    assert_converged(outcome(&s, DEV));
    let before = live_control_plane(&f, "aro-dev", "dev").await;
    assert_eq!(live_condition(&before, AVAILABLE)["status"], "True");

    annotate_dev_cluster(&f, UNAVAILABLE_ANNOTATION, "v1.route.openshift.io");
    // The run applies the annotation; a later one reads the guest with it.
    let deadline = Instant::now() + Duration::from_secs(60);
    let s = loop {
        let s = f.run().await;
        if status_of(&reported(outcome(&s, DEV), "aro-dev", "dev", GATE)).0 == Some("False") {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "the gate never went False: {:#?}",
            outcome(&s, DEV).standing.conditions
        );
    };
    let o = outcome(&s, DEV);
    // The condition says what is wrong; Available keeps True (since the first run) and the
    // cluster stays converged.
    let gate = reported(o, "aro-dev", "dev", GATE).expect("the gate");
    assert_eq!(
        gate.reason.as_deref(),
        Some("AggregatedAPIServicesNotAvailable")
    );
    assert_eq!(
        gate.message.as_deref(),
        Some("APIServices not available: v1.route.openshift.io")
    );
    assert_eq!(
        status_of(&reported(o, "aro-dev", "dev", AVAILABLE)),
        (Some("True"), Some("AsExpected"))
    );
    assert_converged(o);
    let after = live_control_plane(&f, "aro-dev", "dev").await;
    assert_eq!(
        live_condition(&after, AVAILABLE),
        live_condition(&before, AVAILABLE),
        "Available untouched, its transition time too"
    );
}

/// An aggregated API in git, written in the wrong order on purpose.
const AGGREGATED_API: &str = "\
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1.example.aro-gitops.dev
spec:
  group: example.aro-gitops.dev
  version: v1
  service: {namespace: aro-dev, name: example-api, port: 443}
  groupPriorityMinimum: 1000
  versionPriority: 15
  insecureSkipTLSVerify: true
---
apiVersion: v1
kind: Endpoints
metadata:
  name: example-api
subsets:
  - addresses: [{ip: 10.0.0.10}]
    ports: [{port: 8443}]
---
apiVersion: v1
kind: Service
metadata:
  name: example-api
spec:
  ports: [{port: 443, targetPort: 8443}]
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_applier_creates_a_service_then_its_endpoints_then_the_apiservice() {
    let f = Fleet::plain();
    f.write(&format!("{DEV}/aggregated-api.yaml"), AGGREGATED_API);
    f.add_resource(DEV, "aggregated-api.yaml");
    let s = f.run().await;
    assert_converged(outcome(&s, DEV));
    let created = |o: &Value| {
        o.pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .and_then(|rv| rv.parse::<u64>().ok())
            .expect("a resourceVersion")
    };
    let (svc, ep, apisvc) = f
        .inspect(|c| async move {
            let svc = live(&c, &key("v1", "Service", "aro-dev", "example-api")).await;
            let ep = live(&c, &key("v1", "Endpoints", "aro-dev", "example-api")).await;
            let mut k = key(
                "apiregistration.k8s.io/v1",
                "APIService",
                "",
                "v1.example.aro-gitops.dev",
            );
            k.namespace = None;
            let apisvc = live(&c, &k).await;
            (svc, ep, apisvc)
        })
        .await;
    // Applied once each, so their resourceVersions are those of their creates.
    assert!(
        created(&svc) < created(&ep) && created(&ep) < created(&apisvc),
        "Service {}, Endpoints {}, APIService {}",
        created(&svc),
        created(&ep),
        created(&apisvc)
    );
}

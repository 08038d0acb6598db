//! A long-running `aro-gitops run` against `aro-gitops control-plane serve --simulate-azure`
//! (which serves events.k8s.io/v1): once the fleet converges, each cluster's AROControlPlane has
//! a `Converged` Event from `aro-gitops`, `kubectl get events.events.k8s.io -A` lists them, and
//! `/metrics` counts the passes, their durations, one render per unit and an empty queue. Drift
//! cycles over the converged fleet record no Event; a commit that changes one unit renders that
//! unit only (`aro_gitops_renders_total` goes up by exactly one).
//!
//! Not to be confused with `events`, the control plane's watch log.

use super::metrics::sample;
use super::resync::{Running, http_get};
use super::*;
use aro_gitops::agent::{CycleLine, CycleTrigger};
use common::kubectl::{Kubectl, Server};
use std::collections::BTreeSet;

/// How long the agent may take to start, converge, or take a commit (a debug build, a shared
/// machine).
const DEADLINE: Duration = Duration::from_secs(180);

/// `/metrics` until `done` holds for it (within [`DEADLINE`]).
fn metrics_until(addr: &str, what: &str, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let (_, body) = http_get(addr, "/metrics").expect("the metrics endpoint answers");
        if done(&body) {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "not {what} within {DEADLINE:?}:\n{body}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Every events.k8s.io Event, through kubectl.
fn events(k: &Kubectl) -> Vec<Value> {
    let list = k
        .get_json(&["events.events.k8s.io", "-A"])
        .expect("events are listed");
    list["items"].as_array().expect("items").clone()
}

/// Each Event's name and series count: a new Event, or one more of a series, changes it.
fn occurrences(events: &[Value]) -> BTreeSet<(String, String, i64)> {
    events
        .iter()
        .map(|e| {
            let s = |p: &str| e.pointer(p).and_then(Value::as_str).unwrap_or_default();
            let count = e.pointer("/series/count").and_then(Value::as_i64);
            (
                s("/metadata/namespace").to_string(),
                s("/metadata/name").to_string(),
                count.unwrap_or(1),
            )
        })
        .collect()
}

/// The next cycle line of `trigger` (within [`DEADLINE`]).
fn next_cycle(agent: &Running, trigger: CycleTrigger) -> CycleLine {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = agent
            .lines
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("no {trigger:?} cycle line within {DEADLINE:?}: {e}"));
        if let Some(c) = CycleLine::parse(&line)
            && c.trigger == trigger
        {
            return c;
        }
    }
}

#[test]
fn events_on_phase_changes_and_controller_metrics_while_the_agent_runs() {
    let server = Server::start_with_args(&["--simulate-azure", "--sim-delay", "0s"]);
    let f = Fleet::plain();
    let kubeconfig = server.kubeconfig.to_str().expect("UTF-8 path");
    let agent = Running::start_with(
        &f,
        &[
            "--kubeconfig",
            kubeconfig,
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--interval",
            "3s",
            "--drift-interval",
            "1s",
        ],
    );
    let addr = agent.served_address("metrics: serving on http://", "/metrics", DEADLINE);

    // The fleet converges: every pass counted and timed, each unit rendered once, the queue empty.
    let body = metrics_until(&addr, "two converged units", |b| {
        sample(b, r#"aro_gitops_units{phase="Converged"}"#) == Some(2.0)
    });
    let passes = |b: &str, result: &str| {
        sample(
            b,
            &format!(r#"aro_gitops_reconcile_total{{result="{result}"}}"#),
        )
        .unwrap_or_else(|| panic!("no reconcile_total{{result={result:?}}}:\n{b}"))
    };
    assert!(passes(&body, "success") >= 2.0, "{body}");
    assert_eq!(passes(&body, "error"), 0.0, "{body}");
    let total = passes(&body, "success") + passes(&body, "requeue");
    assert_eq!(
        sample(&body, "aro_gitops_reconcile_duration_seconds_count"),
        Some(total),
        "one duration per pass:\n{body}"
    );
    assert!(
        body.lines()
            .any(|l| l.starts_with(r#"aro_gitops_reconcile_duration_seconds_bucket{le="0.005"}"#)),
        "{body}"
    );
    assert_eq!(
        sample(&body, "aro_gitops_renders_total"),
        Some(2.0),
        "{body}"
    );
    metrics_until(&addr, "an empty queue", |b| {
        sample(b, "aro_gitops_queue_depth") == Some(0.0)
    });

    // Each cluster's AROControlPlane says it converged, from aro-gitops.
    let k = server.kubectl();
    let converged = common::kubectl::poll_until(DEADLINE, "Converged Events", || {
        let all = events(&k);
        let on: BTreeSet<String> = all
            .iter()
            .filter(|e| e["reason"] == "Converged" && e["regarding"]["kind"] == "AROControlPlane")
            .filter_map(|e| e["regarding"]["name"].as_str().map(str::to_string))
            .collect();
        (on.len() == 2).then_some(all)
    });
    let event = converged
        .iter()
        .find(|e| e["reason"] == "Converged" && e["regarding"]["kind"] == "AROControlPlane")
        .expect("found above");
    assert_eq!(event["type"], "Normal", "{event:#}");
    assert_eq!(event["reportingController"], "aro-gitops", "{event:#}");
    assert_eq!(event["action"], "Reconcile", "{event:#}");
    assert!(
        event["reportingInstance"]
            .as_str()
            .is_some_and(|i| !i.is_empty()),
        "{event:#}"
    );
    assert_eq!(
        event["regarding"]["apiVersion"], "controlplane.cluster.x-k8s.io/v1beta2",
        "{event:#}"
    );
    assert!(event["regarding"]["uid"].as_str().is_some(), "{event:#}");
    assert_eq!(
        event["metadata"]["namespace"], event["regarding"]["namespace"],
        "{event:#}"
    );
    assert!(
        event["note"].as_str().is_some_and(|n| n.contains("ready")),
        "{event:#}"
    );
    assert!(
        converged
            .iter()
            .any(|e| e["regarding"]["kind"] == "AROCluster" && e["reason"] == "Converged"),
        "the AROCluster too: {converged:#?}"
    );
    assert!(
        !converged.iter().any(|e| e["type"] == "Warning"),
        "{converged:#?}"
    );
    // kubectl's table of them.
    let table = k.ok(&["get", "events.events.k8s.io", "-A"]);
    assert!(table.lines().count() > 2, "{table}");

    // Drift cycles over the converged fleet record nothing and render nothing.
    let before = occurrences(&events(&k));
    for _ in 0..2 {
        let drift = next_cycle(&agent, CycleTrigger::Drift);
        assert_eq!(drift.writes, 0, "{drift}");
    }
    assert_eq!(occurrences(&events(&k)), before, "no new Event");
    let (_, body) = http_get(&addr, "/metrics").expect("metrics");
    assert_eq!(
        sample(&body, "aro_gitops_renders_total"),
        Some(2.0),
        "{body}"
    );

    // A commit that changes dev renders dev only.
    f.replace(
        "components/dev/kustomization.yaml",
        "value: Standard_D4s_v3",
        "value: Standard_D16s_v3",
    );
    metrics_until(&addr, "the change rendered", |b| {
        sample(b, "aro_gitops_renders_total") != Some(2.0)
    });
    next_cycle(&agent, CycleTrigger::Source);
    next_cycle(&agent, CycleTrigger::Drift);
    let body = metrics_until(&addr, "two converged units again", |b| {
        sample(b, r#"aro_gitops_units{phase="Converged"}"#) == Some(2.0)
    });
    assert_eq!(
        sample(&body, "aro_gitops_renders_total"),
        Some(3.0),
        "exactly one unit rendered again:\n{body}"
    );
}

/// The events.k8s.io Events in `namespace` of the embedded control plane `f`'s runs left.
async fn embedded_events(f: &Fleet, namespace: &str) -> Vec<Value> {
    let ns = namespace.to_string();
    f.inspect(|cluster| async move {
        let api: kube::Api<k8s_openapi::api::events::v1::Event> =
            kube::Api::namespaced(cluster.client().clone(), &ns);
        let list = api.list(&Default::default()).await.expect("events listed");
        list.items
            .iter()
            .map(|e| serde_json::to_value(e).expect("JSON"))
            .collect()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_that_fails_warns_on_its_aro_objects_on_the_embedded_control_plane() {
    let f = Fleet::plain();
    assert!(!f.run().await.failed());
    let first = embedded_events(&f, "aro-dev").await;
    assert!(
        first
            .iter()
            .any(|e| e["reason"] == "Converged" && e["regarding"]["kind"] == "AROControlPlane"),
        "{first:#?}"
    );

    // dev's overlay drops a required embedded resource: dev fails before anything is rendered
    // for it, and its live ARO objects (from its inventory) say so.
    f.add_patch(
        DEV,
        "AROControlPlane",
        "dev",
        "- op: remove\n  path: /spec/resources/0",
    );
    let second = f.run().await;
    assert!(second.failed());
    assert_eq!(report::phase(outcome(&second, DEV)), Phase::Failed);
    let all = embedded_events(&f, "aro-dev").await;
    let warnings: Vec<&Value> = all.iter().filter(|e| e["type"] == "Warning").collect();
    let kinds: BTreeSet<&str> = warnings
        .iter()
        .filter(|e| e["reason"] == "ReconcileFailed")
        .filter_map(|e| e["regarding"]["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        BTreeSet::from(["AROCluster", "AROControlPlane"]),
        "{all:#?}"
    );
    let note = warnings[0]["note"].as_str().expect("a note");
    assert!(
        note.contains("base/cluster/arocontrolplane.yaml") && note.contains("/spec/resources"),
        "the file and the field: {note}"
    );
    assert_eq!(warnings[0]["reportingController"], "aro-gitops");
    // prod converged before and still is: nothing new on it.
    let prod = embedded_events(&f, "aro-prod").await;
    assert!(prod.iter().all(|e| e["type"] == "Normal"), "{prod:#?}");
}

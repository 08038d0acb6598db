//! The agent end to end (`agent::run`, and `aro-gitops run --once`) on copies of `examples-repo/`:
//! the embedded local control plane with the Azure simulator (no provisioning delay), reports on
//! the status branch of the origin.
//!
//! Each test has its own state directory and its own copy of the repository, which it edits (the
//! fixture is `common::fleet::Fleet`). This file holds the helpers; `converge` has the first run of
//! the fleet (creation order, convergence, reports), `rerun` the runs after it (nothing written, a
//! change to one cluster), `failures` the units that fail alone (cycles, bad YAML, unknown kinds,
//! duplicates, schema violations) and `git_source` the git edge cases (a status branch that moved,
//! an unreachable remote). `aro_chain` has the order of the ARO dependency chain and its gates,
//! `aro_deletion` the deletion of a whole cluster in reverse order and a crash while recording owned
//! kinds; `events` reads the control plane's event log back for them; `apiservices_gate` has the
//! aggregated-APIServices gate (the guest clusters read through their kubeconfig Secrets).
//! `node_policy` has the AutoNodePolicy merged into the node pools; `identity` the
//! AzureClusterIdentity check and the clusters' ASO credential Secrets; `keyvault` the
//! agent-managed etcd key; `shared_identities` the identity benchmark's request counts at small
//! scale (shared identities, keys, a rotation). `resync` has a long-running run's drift cycles,
//! `metrics` its `/metrics` endpoint, `status_page` its status page (`--status-bind-address`), `status_views` the page on a
//! standby and for a unit broken on its first revision, `webhook` its push triggers (webhooks, a watched local repo),
//! `k8s_events` its Kubernetes Events (events.k8s.io) and the controller's metrics (passes,
//! renders, queue).
//! `sharding` runs two and three shards (`--shard-index`, `--shard-count`) against one served
//! control plane, `sharded_rollout` a rollout over two shards.
//! `faults` has runs with injected API faults (`--inject-faults`) and runs killed with SIGKILL;
//! `faults_proxy` runs through a loopback fault proxy to a server reached by `--kubeconfig`.
//! `leader` has two replicas with `--leader-elect` against a served control plane (one leads, the
//! standby takes over after a SIGKILL), `shutdown` a SIGTERM during a run.
//! `signatures` has signed commits (`--verify-signatures`): ssh-keygen and gpg keys, refusals.
//! `truth` has what a `--once` run did not do: units its deadline never reached, a refused
//! revision, a source that cannot be fetched (each fails the run).

#[path = "agent/apiservices_gate.rs"]
mod apiservices_gate;
#[path = "agent/aro.rs"]
mod aro;
#[path = "agent/aro_chain.rs"]
mod aro_chain;
#[path = "agent/aro_deletion.rs"]
mod aro_deletion;
mod common;
#[path = "agent/converge.rs"]
mod converge;
#[path = "agent/drift.rs"]
mod drift;
#[path = "agent/events.rs"]
mod events;
#[path = "agent/failures.rs"]
mod failures;
#[path = "agent/faults.rs"]
mod faults;
#[path = "agent/faults_proxy.rs"]
mod faults_proxy;
#[path = "agent/git_source.rs"]
mod git_source;
#[path = "agent/health.rs"]
mod health;
#[path = "agent/identity.rs"]
mod identity;
#[path = "agent/k8s_events.rs"]
mod k8s_events;
#[path = "agent/keyvault.rs"]
mod keyvault;
#[path = "agent/kubeconfig.rs"]
mod kubeconfig;
#[path = "agent/leader.rs"]
mod leader;
#[path = "agent/metrics.rs"]
mod metrics;
#[path = "agent/node_policy.rs"]
mod node_policy;
#[path = "agent/policies.rs"]
mod policies;
#[path = "agent/pruning.rs"]
mod pruning;
#[path = "agent/rerun.rs"]
mod rerun;
#[path = "agent/resync.rs"]
mod resync;
#[path = "agent/sharded_rollout.rs"]
mod sharded_rollout;
#[path = "agent/sharding.rs"]
mod sharding;
#[path = "agent/shared_identities.rs"]
mod shared_identities;
#[path = "agent/shutdown.rs"]
mod shutdown;
#[path = "agent/signatures.rs"]
mod signatures;
#[path = "agent/status_page.rs"]
mod status_page;
#[path = "agent/status_views.rs"]
mod status_views;
#[path = "agent/truth.rs"]
mod truth;
#[path = "agent/webhook.rs"]
mod webhook;

use aro_gitops::agent::{self, RunSummary};
use aro_gitops::apply::Cluster;
use aro_gitops::object::ObjectKey;
use aro_gitops::report::{self, ObjectAction, Phase, UnitOutcome};
use aro_gitops::source::GitRef;
pub use common::fleet::{DEV, Fleet, PROD, STATUS_BRANCH};
use common::git;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The outcome of `unit`.
pub fn outcome<'a>(summary: &'a RunSummary, unit: &str) -> &'a UnitOutcome {
    summary
        .outcomes
        .iter()
        .find(|o| o.unit == unit)
        .unwrap_or_else(|| panic!("no outcome for {unit}"))
}

/// What went on in a unit, for assertion messages.
pub fn describe(o: &UnitOutcome) -> String {
    let mut s = format!("{}: {:?}\n", o.unit, report::phase(o));
    for e in &o.errors {
        s += &format!(
            "  error: {:?} {:?}: {}\n",
            e.object.as_ref().map(ToString::to_string),
            e.file,
            e.message
        );
    }
    for ob in &o.objects {
        s += &format!(
            "  {}: {:?} ready={} {:?} {:?}\n",
            ob.key, ob.action, ob.ready, ob.reason, ob.message
        );
    }
    s
}

pub fn assert_converged(o: &UnitOutcome) {
    assert_eq!(report::phase(o), Phase::Converged, "{}", describe(o));
    assert!(o.errors.is_empty(), "{}", describe(o));
    assert!(!o.objects.is_empty(), "{}", describe(o));
    assert!(o.objects.iter().all(|ob| ob.ready), "{}", describe(o));
}

/// The objects of `o` whose action is `action`.
pub fn with_action(o: &UnitOutcome, action: &ObjectAction) -> Vec<String> {
    o.objects
        .iter()
        .filter(|ob| &ob.action == action)
        .map(|ob| ob.key.to_string())
        .collect()
}

pub fn key(api_version: &str, kind: &str, namespace: &str, name: &str) -> ObjectKey {
    let (group, version) = aro_gitops::object::split_api_version(api_version);
    ObjectKey {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        namespace: Some(namespace.into()),
        name: name.to_string(),
    }
}

pub async fn live(cluster: &Cluster, key: &ObjectKey) -> Value {
    cluster
        .get(key)
        .await
        .expect("get")
        .unwrap_or_else(|| panic!("{key} is live"))
}

/// The apiVersion of the ARO HCP kinds in the examples.
pub const HCP: &str = "redhatopenshift.azure.com/v1api20240610preview";

/// Whether `obj` has condition `type_` with status True.
pub fn condition_true(obj: &Value, type_: &str) -> bool {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == type_ && c["status"] == "True")
        })
}

//! The agent end to end (`agent::run`, and `aro-gitops run --once`) on copies of `examples-repo/`:
//! the embedded local control plane with the Azure simulator (no provisioning delay), reports on
//! the status branch of the origin.
//!
//! Each test has its own state directory and its own copy of the repository, which it edits. This
//! file holds the fixture and the helpers; `converge` has the first run of the fleet (creation
//! order, convergence, reports), `rerun` the runs after it (nothing written, a change to one
//! cluster), `failures` the units that fail alone (cycles, bad YAML, unknown kinds, duplicates,
//! schema violations) and `git_source` the git edge cases (a status branch that moved, an
//! unreachable remote). `aro_chain` has the order of the ARO dependency chain and its gates,
//! `aro_deletion` the deletion of a whole cluster in reverse order and a crash while recording owned
//! kinds; `events` reads the control plane's event log back for them; `apiservices_gate` has the
//! aggregated-APIServices gate (the guest clusters read through their kubeconfig Secrets).
//! `node_policy` has the AutoNodePolicy merged into the node pools; `identity` the
//! AzureClusterIdentity check and the clusters' ASO credential Secrets; `keyvault` the
//! agent-managed etcd key; `shared_identities` the identity benchmark's request counts at small
//! scale (shared identities, keys, a rotation). `resync` has a long-running run's drift cycles,
//! `metrics` its `/metrics` endpoint, `status_page` its status page (`--status-bind-address`), `webhook` its push triggers (webhooks, a watched local repo),
//! `k8s_events` its Kubernetes Events (events.k8s.io) and the controller's metrics (passes,
//! renders, queue).
//! `sharding` runs two and three shards (`--shard-index`, `--shard-count`) against one served
//! control plane.
//! `faults` has runs with injected API faults (`--inject-faults`) and runs killed with SIGKILL.
//! `leader` has two replicas with `--leader-elect` against a served control plane (one leads, the
//! standby takes over after a SIGKILL), `shutdown` a SIGTERM during a run.
//! `signatures` has signed commits (`--verify-signatures`): ssh-keygen and gpg keys, refusals.

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
#[path = "agent/webhook.rs"]
mod webhook;

use aro_gitops::agent::{self, RunConfig, RunSummary};
use aro_gitops::apply::{Cluster, RequestCounter};
use aro_gitops::controlplane::{Config, ControlPlane};
use aro_gitops::object::ObjectKey;
use aro_gitops::report::{self, ObjectAction, Phase, UnitOutcome};
use aro_gitops::source::{GitRef, ReportTarget};
use common::git;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long one `--once` run may take to settle (a run takes about two seconds here).
const RUN_TIMEOUT: Duration = Duration::from_secs(60);
/// How long to wait for the control plane's store to be released by a finished run.
const STORE_DEADLINE: Duration = Duration::from_secs(10);
pub const STATUS_BRANCH: &str = "aro-gitops/status";
pub const DEV: &str = "clusters/dev";
pub const PROD: &str = "clusters/prod";

/// A copy of `examples-repo/` and a state directory, in one tempdir.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    /// The copy of the repository that tests edit.
    pub repo: PathBuf,
    /// What the agent is pointed at: `repo` itself, or the bare remote `repo` pushes to.
    pub url: PathBuf,
    pub state: PathBuf,
    /// `url` is a bare git repository (used as the remote directly), not a plain folder.
    is_git: bool,
}

impl Fixture {
    /// A plain folder: the agent imports it into a bare origin under the state directory.
    pub fn plain() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        git::copy_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples-repo"),
            &repo,
        );
        let state = dir.path().join("state");
        Fixture {
            dir,
            url: repo.clone(),
            repo,
            state,
            is_git: false,
        }
    }

    /// A bare git repository (the agent's remote) with the examples pushed to `main` from the
    /// work tree `repo`; edits are committed and pushed.
    pub fn git_repo() -> Fixture {
        let mut f = Fixture::plain();
        git::init_and_commit(&f.repo, "the fleet");
        let remote = f.dir.path().join("remote.git");
        git::git(f.dir.path(), &["init", "-q", "--bare", "remote.git"]);
        git::git(
            &f.repo,
            &[
                "remote",
                "add",
                "origin",
                remote.to_str().expect("UTF-8 path"),
            ],
        );
        git::git(&f.repo, &["push", "-q", "origin", "main"]);
        f.url = remote;
        f.is_git = true;
        f
    }

    pub fn config(&self) -> RunConfig {
        RunConfig {
            repo: self.url.to_string_lossy().into_owned(),
            reference: GitRef::RemoteHead,
            state_dir: self.state.clone(),
            kubeconfig: None,
            in_cluster: false,
            once: true,
            timeout: RUN_TIMEOUT,
            sim_delay: Duration::ZERO,
            interval: Duration::from_secs(30),
            report_target: ReportTarget::default(),
            progress_bars: false,
            safety: agent::Safety::default(),
            self_heal: false,
            drift_interval: None,
            concurrency: 4,
            metrics_bind_address: None,
            status_bind_address: None,
            health_probe_bind_address: None,
            webhook_bind_address: None,
            webhook_secret: None,
            shard: agent::Shard::default(),
            faults: None,
            verify_signatures: None,
            decryption: None,
            use_azure_simulator: false,
        }
    }

    /// One `--once` run through the library; the store is free again when it returns.
    pub async fn run(&self) -> RunSummary {
        self.wait_store_free().await;
        let summary = agent::run(self.config()).await.expect("the agent runs");
        assert!(
            summary.timed_out.is_empty(),
            "units did not settle: {:?}",
            summary.timed_out
        );
        summary
    }

    /// The git repository the reports are pushed to.
    pub fn origin(&self) -> PathBuf {
        if self.is_git {
            self.url.clone()
        } else {
            self.state.join("source").join("origin.git")
        }
    }

    /// A report file on the status branch of the origin.
    pub fn report(&self, path: &str) -> Option<String> {
        git::show(&self.origin(), STATUS_BRANCH, path)
    }

    pub fn status_commits(&self) -> Vec<String> {
        git::commits(&self.origin(), STATUS_BRANCH)
    }

    /// Writes `content` to `rel` in the repository copy (committed when the copy is a git repo).
    pub fn write(&self, rel: &str, content: &str) {
        let path = self.repo.join(rel);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create folders");
        std::fs::write(&path, content).expect("write a file of the repository");
        self.commit_if_git(&format!("write {rel}"));
    }

    /// Replaces the single occurrence of `from` with `to` in `rel`.
    pub fn replace(&self, rel: &str, from: &str, to: &str) {
        let text = std::fs::read_to_string(self.repo.join(rel)).expect("read a repository file");
        assert_eq!(text.matches(from).count(), 1, "{from:?} once in {rel}");
        self.write(rel, &text.replacen(from, to, 1));
    }

    /// Adds `file` (relative to the unit's folder) to the unit's kustomization resources.
    pub fn add_resource(&self, unit: &str, file: &str) {
        self.replace(
            &format!("{unit}/kustomization.yaml"),
            "resources:\n",
            &format!("resources:\n  - {file}\n"),
        );
    }

    /// Appends a JSON 6902 patch to the unit's kustomization (the overlay's own patches run after its
    /// components, so names are the cluster's by then).
    pub fn add_patch(&self, unit: &str, kind: &str, name: &str, ops: &str) {
        let rel = format!("{unit}/kustomization.yaml");
        let text = std::fs::read_to_string(self.repo.join(&rel)).expect("read the kustomization");
        let ops: String = ops.lines().map(|l| format!("      {l}\n")).collect();
        let entry = format!("  - target: {{kind: {kind}, name: {name}}}\n    patch: |-\n{ops}");
        self.write(&rel, &common::fleet::with_patches(&text, &entry));
    }

    fn commit_if_git(&self, message: &str) {
        if self.is_git {
            git::commit_all(&self.repo, message);
            git::git(&self.repo, &["push", "-q", "origin", "main"]);
        }
    }

    fn store_config(&self) -> Config {
        let mut config = Config::new(self.state.join("control-plane"));
        config.preload_crds = false;
        config
    }

    /// Opens the control plane of the state directory once the last run has released it.
    pub async fn control_plane(&self) -> ControlPlane {
        let deadline = Instant::now() + STORE_DEADLINE;
        loop {
            match ControlPlane::open(self.store_config()) {
                Ok(cp) => return cp,
                Err(e) => assert!(
                    Instant::now() < deadline,
                    "the control plane store was not released within {STORE_DEADLINE:?}: {e}"
                ),
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until nothing holds the store. `agent::run` can return while its aborted tasks (and
    /// its kube clients' buffer workers) still hold the control plane for a moment; opening it
    /// again at once then fails with `DatabaseAlreadyOpen`. The same goes for an inspection's
    /// client.
    async fn wait_store_free(&self) {
        if self.state.join("control-plane").exists() {
            drop(self.control_plane().await);
        }
    }

    /// Waits until no earlier run or inspection holds the store (before calling `agent::run`
    /// directly with a config of the test's own).
    pub async fn wait_store_free_pub(&self) {
        self.wait_store_free().await;
    }

    /// Reads live state through `f`, then releases the store for the next run.
    pub async fn inspect<T, F, Fut>(&self, f: F) -> T
    where
        F: FnOnce(Cluster) -> Fut,
        Fut: std::future::Future<Output = T>,
    {
        let cp = self.control_plane().await;
        let out = f(Cluster::new(cp.client(), RequestCounter::default())).await;
        drop(cp);
        self.wait_store_free().await;
        out
    }
}

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
        group: group.to_string(),
        version: version.to_string(),
        kind: kind.to_string(),
        namespace: Some(namespace.to_string()),
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

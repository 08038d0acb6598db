//! The agent end to end (`agent::run`, and `aro-gitops run --once`) on copies of `examples-repo/`:
//! the embedded local control plane with the Azure simulator (no provisioning delay), reports on
//! the status branch of the origin.
//!
//! Each test has its own state directory and its own copy of the repository, which it edits. This
//! file holds the fixture and the tests of a healthy fleet (creation order, convergence, reruns,
//! a change to one cluster); `failures` has the units that fail alone (cycles, bad YAML, unknown
//! kinds, duplicates, schema violations) and `git_source` the git edge cases (a status branch that
//! moved, an unreachable remote).

mod common;
#[path = "agent/failures.rs"]
mod failures;
#[path = "agent/git_source.rs"]
mod git_source;

use aro_gitops::agent::{self, RunConfig, RunSummary};
use aro_gitops::apply::{Cluster, RequestCounter};
use aro_gitops::controlplane::{Config, ControlPlane};
use aro_gitops::object::ObjectKey;
use aro_gitops::report::{self, ObjectAction, Phase, UnitOutcome};
use aro_gitops::source::{GitRef, ReportTarget};
use common::git;
use futures::StreamExt;
use kube::api::{Api, DynamicObject, WatchEvent, WatchParams};
use serde_json::Value;
use std::collections::BTreeMap;
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
    /// The copy of the repository the agent is pointed at.
    pub repo: PathBuf,
    pub state: PathBuf,
    /// `repo` is a git repository (used as the remote directly), not a plain folder.
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
            repo,
            state,
            is_git: false,
        }
    }

    /// A git repository with the examples committed on `main`: the agent's remote.
    pub fn git_repo() -> Fixture {
        let mut f = Fixture::plain();
        git::init_and_commit(&f.repo, "the fleet");
        f.is_git = true;
        f
    }

    pub fn config(&self) -> RunConfig {
        RunConfig {
            repo: self.repo.to_string_lossy().into_owned(),
            reference: GitRef::RemoteHead,
            state_dir: self.state.clone(),
            kubeconfig: None,
            once: true,
            timeout: RUN_TIMEOUT,
            sim_delay: Duration::ZERO,
            interval: Duration::from_secs(30),
            report_target: ReportTarget::default(),
            progress_bars: false,
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
            self.repo.clone()
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
            "  - machinepools.yaml\n",
            &format!("  - machinepools.yaml\n  - {file}\n"),
        );
    }

    fn commit_if_git(&self, message: &str) {
        if self.is_git {
            git::commit_all(&self.repo, message);
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

    /// Waits until nothing holds the store (a previous run's tasks, an inspection's client).
    async fn wait_store_free(&self) {
        if self.state.join("control-plane").exists() {
            drop(self.control_plane().await);
        }
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

/// The resourceVersion each object of `key`'s kind in `key`'s namespace was created at, read
/// from the ADDED events of the durable event log (a watch from resourceVersion 1).
async fn creation_versions(cluster: &Cluster, key: &ObjectKey) -> BTreeMap<String, u64> {
    let names: Vec<String> = cluster
        .list(key, None)
        .await
        .expect("list")
        .iter()
        .map(|o| o["metadata"]["name"].as_str().expect("a name").to_string())
        .collect();
    let kind = cluster
        .kind(&key.group, &key.version, &key.kind)
        .await
        .expect("discovery")
        .expect("the kind is served");
    let ns = key.namespace.as_deref().expect("namespaced");
    let api: Api<DynamicObject> = Api::namespaced_with(cluster.client().clone(), ns, &kind.resource);
    let mut events = api
        .watch(&WatchParams::default().timeout(10), "1")
        .await
        .expect("watch from the start of the event log")
        .boxed();
    let mut created = BTreeMap::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while names.iter().any(|n| !created.contains_key(n)) {
        let ev = tokio::time::timeout_at(deadline, events.next())
            .await
            .unwrap_or_else(|_| panic!("ADDED events of every {} in {ns}", key.kind));
        match ev {
            Some(Ok(WatchEvent::Added(o))) => {
                let rv = o.metadata.resource_version.as_deref().expect("an rv");
                created
                    .entry(o.metadata.name.clone().expect("a name"))
                    .or_insert(rv.parse::<u64>().expect("a numeric resourceVersion"));
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => panic!("watch of {}: {e}", key.kind),
            None => panic!("the watch of {} ended early: {created:?}", key.kind),
        }
    }
    created
}

/// The ASO resources the AROCluster of `unit` embeds, as keys in `namespace`.
fn infrastructure(f: &Fixture, unit: &str, namespace: &str) -> Vec<ObjectKey> {
    let text = std::fs::read_to_string(f.repo.join(unit).join("arocluster.yaml")).unwrap();
    let cluster = aro_gitops::yaml::from_str(&text).expect("arocluster.yaml parses");
    cluster["spec"]["resources"]
        .as_array()
        .expect("embedded resources")
        .iter()
        .map(|r| {
            key(
                r["apiVersion"].as_str().unwrap(),
                r["kind"].as_str().unwrap(),
                namespace,
                r["metadata"]["name"].as_str().unwrap(),
            )
        })
        .collect()
}

const HCP: &str = "redhatopenshift.azure.com/v1api20240610preview";

fn condition_true(obj: &Value, type_: &str) -> bool {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == type_ && c["status"] == "True")
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_clusters_converge_with_the_chain_created_in_order() {
    let f = Fixture::plain();
    let summary = f.run().await;
    assert!(!summary.failed());
    assert_eq!(summary.outcomes.len(), 2);
    for unit in [DEV, PROD] {
        let o = outcome(&summary, unit);
        assert_converged(o);
        assert!(
            o.objects.iter().all(|ob| ob.action == ObjectAction::Created),
            "a first run creates everything: {}",
            describe(o)
        );
        assert!(o.stale_source.is_none());
    }
    assert!(summary.writes > 0);

    let infra = infrastructure(&f, DEV, "aro-dev");
    assert_eq!(infra.len(), 14, "{infra:?}");
    let (infra_created, hcp, pools, auth) = f
        .inspect(|cluster| async move {
            let cp = key(
                "controlplane.cluster.x-k8s.io/v1beta2",
                "AROControlPlane",
                "aro-dev",
                "dev",
            );
            assert_eq!(live(&cluster, &cp).await["status"]["ready"], true);
            let aro_cluster = key(
                "infrastructure.cluster.x-k8s.io/v1beta2",
                "AROCluster",
                "aro-dev",
                "dev",
            );
            assert_eq!(live(&cluster, &aro_cluster).await["status"]["ready"], true);
            for pool in ["dev-workers", "dev-infra"] {
                let mp = key(
                    "infrastructure.cluster.x-k8s.io/v1beta2",
                    "AROMachinePool",
                    "aro-dev",
                    pool,
                );
                assert_eq!(live(&cluster, &mp).await["status"]["ready"], true, "{pool}");
                let np = key(
                    HCP,
                    "HcpOpenShiftClustersNodePool",
                    "aro-dev",
                    &format!("aro-{pool}"),
                );
                let np = live(&cluster, &np).await;
                assert!(condition_true(&np, "Ready"), "{np:#}");
            }
            let prod_cp = key(
                "controlplane.cluster.x-k8s.io/v1beta2",
                "AROControlPlane",
                "aro-prod",
                "prod",
            );
            assert_eq!(live(&cluster, &prod_cp).await["status"]["ready"], true);

            let mut infra_created = BTreeMap::new();
            for k in &infra {
                let created = creation_versions(&cluster, k).await;
                let rv = *created
                    .get(&k.name)
                    .unwrap_or_else(|| panic!("{k} created: {created:?}"));
                infra_created.insert(k.to_string(), rv);
            }
            let created = |kind: &'static str| {
                let cluster = &cluster;
                async move { creation_versions(cluster, &key(HCP, kind, "aro-dev", "-")).await }
            };
            let hcp = created("HcpOpenShiftCluster").await;
            let pools = created("HcpOpenShiftClustersNodePool").await;
            let auth = created("HcpOpenShiftClustersExternalAuth").await;
            (infra_created, hcp, pools, auth)
        })
        .await;
    assert_eq!(hcp.len(), 1, "{hcp:?}");
    assert_eq!(pools.len(), 2, "{pools:?}");
    assert_eq!(auth.len(), 1, "{auth:?}");
    let hcp_rv = hcp["aro-dev"];
    let auth_rv = auth["aro-dev-entra"];
    let last_infra = infra_created.iter().max_by_key(|(_, rv)| **rv).unwrap();
    assert!(
        *last_infra.1 < hcp_rv,
        "every infrastructure resource before the HcpOpenShiftCluster ({hcp_rv}): {infra_created:?}"
    );
    for (pool, rv) in &pools {
        assert!(
            hcp_rv < *rv,
            "HcpOpenShiftCluster ({hcp_rv}) before node pool {pool} ({rv})"
        );
        assert!(
            *rv < auth_rv,
            "node pool {pool} ({rv}) before the ExternalAuth ({auth_rv})"
        );
    }

    // The reports, on the status branch of the origin.
    let commit = summary.report_commit.as_deref().expect("reports committed");
    assert_eq!(
        git::git(&f.origin(), &["rev-parse", STATUS_BRANCH]),
        commit,
        "the status branch's tip is the run's report commit"
    );
    for (unit, ns, name) in [(DEV, "aro-dev", "dev"), (PROD, "aro-prod", "prod")] {
        let o = outcome(&summary, unit);
        let md = f
            .report(&format!("reports/{ns}/{name}.md"))
            .unwrap_or_else(|| panic!("the Markdown report of {unit}"));
        assert!(md.contains("Converged"), "{md}");
        assert!(md.contains(&o.revision), "{md}");
        let yaml = f
            .report(&format!("reports/{ns}/{name}.yaml"))
            .unwrap_or_else(|| panic!("the YAML report of {unit}"));
        let r = aro_gitops::yaml::from_str(&yaml).expect("the report is YAML");
        assert_eq!(r["kind"], "ClusterReport");
        assert_eq!(r["unit"], unit);
        assert_eq!(r["cluster"]["namespace"], ns);
        assert_eq!(r["cluster"]["name"], name);
        assert_eq!(r["phase"], "Converged");
        assert_eq!(r["azure"], "simulated");
        assert_eq!(r["revision"], o.revision.as_str());
        assert_eq!(r["chain"]["step"], r["chain"]["total"], "{yaml}");
        assert!(
            aro_gitops::validate::validate_report(&r).is_empty(),
            "{:?}",
            aro_gitops::validate::validate_report(&r)
        );
    }
}

/// Parses "requests to the cluster: N reads, M writes" from the binary's stdout.
fn request_counts(stdout: &str) -> (u64, u64) {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("requests to the cluster: "))
        .unwrap_or_else(|| panic!("no request counts in:\n{stdout}"));
    let (reads, writes) = line.split_once(", ").expect("reads, writes");
    let number = |s: &str, unit: &str| -> u64 {
        s.strip_suffix(unit)
            .unwrap_or_else(|| panic!("{s:?} ends with {unit:?}"))
            .trim()
            .parse()
            .expect("a count")
    };
    (number(reads, " reads"), number(writes, " writes"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerunning_on_the_same_state_writes_nothing() {
    let f = Fixture::plain();
    let first = f.run().await;
    assert!(!first.failed());
    let first_commit = first.report_commit.clone().expect("first reports");

    // Second run: nothing to apply; its reports say "unchanged" where the first said "created".
    let second = f.run().await;
    assert_eq!(second.writes, 0, "no write to the cluster on a rerun");
    assert!(second.reads > 0);
    for unit in [DEV, PROD] {
        let o = outcome(&second, unit);
        assert_converged(o);
        assert!(
            o.objects
                .iter()
                .all(|ob| ob.action == ObjectAction::Unchanged),
            "{}",
            describe(o)
        );
    }
    let after_second = f.status_commits();
    if let Some(c) = &second.report_commit {
        assert_eq!(&after_second[0], c);
        assert_eq!(after_second[1], first_commit);
    }

    // Third run: the same state gives the same reports, so nothing is committed.
    let third = f.run().await;
    assert_eq!(third.writes, 0);
    assert_eq!(third.report_commit, None, "no new report commit");
    assert_eq!(f.status_commits(), after_second);
    assert_eq!(third.outcomes, second.outcomes);

    // The binary, on the same state.
    f.wait_store_free().await;
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
        .arg("run")
        .arg("--repo")
        .arg(&f.repo)
        .arg("--state")
        .arg(&f.state)
        .args(["--once", "--sim-delay", "0s", "--timeout", "60s"])
        .env("ARO_GITOPS_LOG", "warn")
        .env("NO_COLOR", "1")
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let (reads, writes) = request_counts(&stdout);
    assert!(reads > 0, "{stdout}");
    assert_eq!(writes, 0, "{stdout}");
    assert!(
        stdout.contains("reports unchanged: nothing committed"),
        "{stdout}"
    );
    assert_eq!(f.status_commits(), after_second);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_to_one_cluster_updates_only_that_cluster() {
    let f = Fixture::plain();
    let first = f.run().await;
    assert!(!first.failed());
    let prod_keys: Vec<ObjectKey> = outcome(&first, PROD)
        .objects
        .iter()
        .map(|o| o.key.clone())
        .collect();
    let versions = |keys: Vec<ObjectKey>| {
        f.inspect(|cluster| async move {
            let mut out = BTreeMap::new();
            for k in keys {
                let obj = live(&cluster, &k).await;
                out.insert(
                    k.to_string(),
                    obj["metadata"]["resourceVersion"].as_str().unwrap().to_string(),
                );
            }
            out
        })
    };
    let prod_before = versions(prod_keys.clone()).await;

    f.replace(
        "clusters/dev/machinepools.yaml",
        "vmSize: Standard_D4s_v3",
        "vmSize: Standard_D16s_v3",
    );
    let second = f.run().await;
    assert!(!second.failed());
    let dev = outcome(&second, DEV);
    assert_converged(dev);
    let updated = with_action(dev, &ObjectAction::Updated);
    assert!(
        updated.contains(&"HcpOpenShiftClustersNodePool/aro-dev/aro-dev-workers".to_string()),
        "{}",
        describe(dev)
    );
    assert!(
        updated.iter().all(|k| k.contains("dev-workers")),
        "only the workers pool changed: {updated:?}"
    );
    let prod = outcome(&second, PROD);
    assert_converged(prod);
    assert!(
        prod.objects
            .iter()
            .all(|o| o.action == ObjectAction::Unchanged),
        "{}",
        describe(prod)
    );
    assert_ne!(dev.revision, outcome(&first, DEV).revision);

    let pool = key(HCP, "HcpOpenShiftClustersNodePool", "aro-dev", "aro-dev-workers");
    let live_pool = f
        .inspect(|cluster| async move { live(&cluster, &pool).await })
        .await;
    assert_eq!(
        live_pool["spec"]["properties"]["platform"]["vmSize"],
        "Standard_D16s_v3"
    );
    assert!(condition_true(&live_pool, "Ready"), "{live_pool:#}");
    let prod_after = versions(prod_keys).await;
    assert_eq!(prod_before, prod_after, "no prod object was written");
}

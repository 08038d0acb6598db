//! The fixture of the tests that run the agent on a fleet: a copy of `examples-repo/` (or of a
//! generated fleet) in a tempdir with its own state directory. The agent runs on it through the
//! library ([`Fleet::run`], an async `agent::run` with `--once`) or as the `aro-gitops` binary
//! ([`Fleet::run_binary_once`], [`Fleet::plan`]); between runs the tests edit the repository and read
//! the embedded control plane's store ([`Fleet::inspect`] in async tests, [`Fleet::with_client`] and
//! [`Fleet::get`] in the others) and the reports on the status branch ([`Fleet::report`]).
//!
//! Three kinds of repository, as the agent meets them: a plain folder ([`Fleet::plain`], imported
//! into a bare origin under the state directory), a git work tree the agent reads directly
//! ([`Fleet::git`], whose changes are committed by [`Fleet::commit`]) and a work tree pushing to
//! a bare remote the agent follows ([`Fleet::with_remote`], where every edit is committed and
//! pushed at once).

use super::git;
use aro_gitops::agent::{self, RunConfig, RunSummary};
use aro_gitops::apply::{Cluster, RequestCounter};
use aro_gitops::controlplane::{Config, ControlPlane};
use aro_gitops::source::{GitRef, ReportTarget};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The branch the agent pushes its reports to.
pub const STATUS_BRANCH: &str = "aro-gitops/status";
/// The two units of `examples-repo/`.
pub const DEV: &str = "clusters/dev";
pub const PROD: &str = "clusters/prod";

/// How long one `--once` run may take to settle (a run takes about two seconds here).
const RUN_TIMEOUT: Duration = Duration::from_secs(300);
/// How long to wait for a finished run (or an inspection) to release the embedded control plane's
/// store.
const STORE_DEADLINE: Duration = Duration::from_secs(10);

/// A fleet's repository and state directory, in one tempdir.
pub struct Fleet {
    dir: Option<tempfile::TempDir>,
    /// The copy of the repository that tests edit.
    pub repo: PathBuf,
    /// What the agent is pointed at (`--repo`): `repo` itself, or the bare remote `repo` pushes to.
    pub url: PathBuf,
    pub state: PathBuf,
    kind: Kind,
}

/// How the agent meets the fleet's repository.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A plain folder: the agent imports it into a bare origin under the state directory.
    Plain,
    /// A git work tree on `main`, read by the agent directly; [`Fleet::commit`] commits.
    WorkTree,
    /// A work tree pushing to the bare remote `url`; every edit is committed and pushed.
    Remote,
}

impl Fleet {
    /// A plain folder (no git): what `aro-gitops run --repo <folder>` imports.
    pub fn plain() -> Fleet {
        Fleet::in_tempdir(Kind::Plain, |repo| {
            git::copy_dir(
                &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples-repo"),
                repo,
            )
        })
    }

    /// A fleet in a tempdir of its own: the repository `DIR/repo`, written by `fill`, and the
    /// state directory `DIR/state`.
    fn in_tempdir(kind: Kind, fill: impl FnOnce(&Path)) -> Fleet {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        fill(&repo);
        let state = dir.path().join("state");
        Fleet {
            dir: Some(dir),
            url: repo.clone(),
            repo,
            state,
            kind,
        }
    }

    /// The git work tree `repo` and the state directory `state`, owned by the caller.
    pub fn at(repo: PathBuf, state: PathBuf) -> Fleet {
        Fleet {
            dir: None,
            url: repo.clone(),
            repo,
            state,
            kind: Kind::WorkTree,
        }
    }

    /// A git repository on `main` with the examples committed; returns it and that commit.
    pub fn git() -> (Fleet, String) {
        let mut f = Fleet::plain();
        let first = git::init_and_commit(&f.repo, "the fleet");
        f.kind = Kind::WorkTree;
        (f, first)
    }

    /// A fleet written by `aro-gitops-fleetgen ARGS`, committed on `main` in a git work tree.
    pub fn generated(args: &[&str]) -> Fleet {
        Fleet::in_tempdir(Kind::WorkTree, |repo| {
            fleetgen(repo, args);
            git::init_and_commit(repo, "the fleet");
        })
    }

    /// A bare git repository (the agent's remote, `url`) with the examples pushed to `main` from
    /// the work tree `repo`; every edit is committed and pushed.
    pub fn with_remote() -> Fleet {
        let (mut f, _) = Fleet::git();
        let remote = f.dir().join("remote.git");
        git::git(f.dir(), &["init", "-q", "--bare", "remote.git"]);
        let url = remote.to_str().expect("UTF-8 path");
        git::git(&f.repo, &["remote", "add", "origin", url]);
        git::git(&f.repo, &["push", "-q", "origin", "main"]);
        f.url = remote;
        f.kind = Kind::Remote;
        f
    }

    /// The tempdir holding the repository and the state directory (for files of a test's own).
    pub fn dir(&self) -> &Path {
        self.dir
            .as_ref()
            .expect("a fleet in a tempdir of its own")
            .path()
    }

    /// Commits every change of the work tree (and pushes it to the remote, if any); returns the
    /// commit (a full 40-character SHA).
    pub fn commit(&self, message: &str) -> String {
        assert!(self.kind != Kind::Plain, "only a git fleet has commits");
        let sha = git::commit_all(&self.repo, message);
        assert_eq!(sha.len(), 40, "{sha}");
        if self.kind == Kind::Remote {
            git::git(&self.repo, &["push", "-q", "origin", "main"]);
        }
        sha
    }

    /// After an edit: a fleet with a remote commits and pushes it at once, the others keep it in
    /// the work tree.
    fn edited(&self, message: &str) {
        if self.kind == Kind::Remote {
            self.commit(message);
        }
    }

    /// Puts `path` back as it was at commit `rev` (uncommitted).
    pub fn checkout(&self, rev: &str, path: &str) {
        git::git(&self.repo, &["checkout", "-q", rev, "--", path]);
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.repo.join(rel)).expect("read a repository file")
    }

    /// Writes `content` to `rel` in the repository.
    pub fn write(&self, rel: &str, content: &str) {
        let path = self.repo.join(rel);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create folders");
        std::fs::write(&path, content).expect("write a repository file");
        self.edited(&format!("write {rel}"));
    }

    /// Removes a file or a folder of the repository.
    pub fn remove(&self, rel: &str) {
        let path = self.repo.join(rel);
        if path.is_dir() {
            std::fs::remove_dir_all(&path).expect("remove a folder");
        } else {
            std::fs::remove_file(&path).expect("remove a file");
        }
        self.edited(&format!("remove {rel}"));
    }

    /// Replaces the single occurrence of `from` with `to` in `rel`.
    pub fn replace(&self, rel: &str, from: &str, to: &str) {
        let text = self.read(rel);
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

    /// Adds `items` (YAML list entries, indented by two spaces) as the unit kustomization's own
    /// `patches:` (they run after its components, so they see the cluster's final names).
    pub fn add_patches(&self, unit: &str, items: &str) {
        let rel = format!("{unit}/kustomization.yaml");
        let text = self.read(&rel);
        self.write(&rel, &with_patches(&text, items));
    }

    /// Adds the JSON 6902 patch `ops` (YAML lines) on `kind` `name` to the unit's own `patches:`.
    pub fn add_patch(&self, unit: &str, kind: &str, name: &str, ops: &str) {
        let ops: String = ops.lines().map(|l| format!("      {l}\n")).collect();
        let entry = format!("  - target: {{kind: {kind}, name: {name}}}\n    patch: |-\n{ops}");
        self.add_patches(unit, &entry);
    }

    /// The git repository the reports are pushed to.
    pub fn origin(&self) -> PathBuf {
        match self.kind {
            Kind::Plain => self.state.join("source").join("origin.git"),
            Kind::WorkTree | Kind::Remote => self.url.clone(),
        }
    }

    /// A report file on the status branch of the origin.
    pub fn report(&self, path: &str) -> Option<String> {
        git::show(&self.origin(), STATUS_BRANCH, path)
    }

    /// The fleet the agent runs as on this fixture: named by its repository's URL.
    pub fn scope(&self) -> aro_gitops::plan::ownership::FleetScope {
        let naming = aro_gitops::plan::ownership::scope::FleetNaming::default();
        naming.at(None, &self.url.to_string_lossy())
    }

    /// The name of `unit`'s inventory ConfigMap.
    pub fn inventory_name(&self, unit: &str) -> String {
        aro_gitops::apply::inventory::name_for(&self.scope().name, unit)
    }

    /// The commits of the status branch, newest first.
    pub fn status_commits(&self) -> Vec<String> {
        git::commits(&self.origin(), STATUS_BRANCH)
    }

    /// The library's configuration of one `--once` run on this fleet, without provisioning delay.
    pub fn config(&self) -> RunConfig {
        RunConfig {
            repo: self.url.to_string_lossy().into_owned(),
            fleet: Default::default(),
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
            commit_status: None,
            clock: Default::default(),
        }
    }

    /// One `--once` run through the library; every unit settles, and the store is free again when
    /// it returns.
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

    /// `aro-gitops plan --repo R --state S ARGS`.
    pub fn plan(&self, args: &[&str]) -> Output {
        let mut all = vec!["plan", "--color", "never"];
        all.extend_from_slice(args);
        self.aro_gitops(&all)
    }

    /// `aro-gitops plan --base BASE --head HEAD ARGS`: head against the base revision.
    pub fn plan_revs(&self, base: &str, head: &str, args: &[&str]) -> Output {
        let mut all = vec!["--base", base, "--head", head];
        all.extend_from_slice(args);
        self.plan(&all)
    }

    /// `plan_revs` with `-o json`, parsed and checked against `schemas/plan.schema.json`.
    pub fn plan_json(&self, base: &str, head: &str, args: &[&str]) -> (i32, Value) {
        let mut all = vec!["-o", "json"];
        all.extend_from_slice(args);
        let out = self.plan_revs(base, head, &all);
        (out.code, out.json())
    }

    /// One `aro-gitops run --once` of the binary on the embedded control plane, without
    /// provisioning delay; it must converge.
    pub fn run_binary_once(&self) {
        let timeout = format!("{}s", RUN_TIMEOUT.as_secs());
        let out = self.aro_gitops(&["run", "--once", "--sim-delay", "0s", "--timeout", &timeout]);
        assert_eq!(out.code, 0, "the run did not converge:\n{}", out.all());
    }

    /// The binary with `--repo` and `--state` of this fleet, logs at warn, no colours, no user git
    /// config.
    pub fn aro_gitops(&self, args: &[&str]) -> Output {
        let mut all: Vec<&str> = args.to_vec();
        let (repo, state) = (self.url.to_str().unwrap(), self.state.to_str().unwrap());
        all.extend(["--repo", repo, "--state", state]);
        let mut out = aro_gitops_in(Path::new("."), &all);
        out.args.truncate(args.len());
        out
    }
}

/// The `aro-gitops` binary as the tests run it: logs at warn, no colours, no user git config, no
/// stdin.
pub fn aro_gitops_command() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_aro-gitops"));
    c.env("ARO_GITOPS_LOG", "warn")
        .env("NO_COLOR", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null());
    c
}

/// The binary run in `cwd` with `args` only, logs at warn, no colours, no user git config.
pub fn aro_gitops_in(cwd: &Path, args: &[&str]) -> Output {
    let out = aro_gitops_command()
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("aro-gitops runs");
    Output {
        args: args.iter().map(|a| a.to_string()).collect(),
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Writes a fleet with `aro-gitops-fleetgen ARGS --out OUT` (not committed).
pub fn fleetgen(out: &Path, args: &[&str]) {
    let run = Command::new(env!("CARGO_BIN_EXE_aro-gitops-fleetgen"))
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .expect("fleetgen runs");
    assert!(
        run.status.success(),
        "fleetgen: {}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// What one run of the binary printed.
#[derive(Debug)]
pub struct Output {
    pub args: Vec<String>,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// Everything, for assertion messages.
    pub fn all(&self) -> String {
        format!(
            "aro-gitops {:?} exited {}\n--- stdout\n{}\n--- stderr\n{}",
            self.args, self.code, self.stdout, self.stderr
        )
    }

    /// Stdout as JSON, checked against the schema.
    pub fn json(&self) -> Value {
        let v: Value = serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", self.all()));
        assert_valid(&v);
        v
    }

    /// Asserts the exit code.
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "{}", self.all());
        self
    }
}

/// Checks `preview` against `schemas/plan.schema.json`.
pub fn assert_valid(preview: &Value) {
    let schema: Value = serde_json::from_str(include_str!("../../schemas/plan.schema.json"))
        .expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(preview)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "the plan does not match schemas/plan.schema.json: {errors:#?}"
    );
}

impl Fleet {
    /// The embedded control plane of this fleet (`STATE/control-plane`), if nothing holds its
    /// store; fails the test once `deadline` has passed.
    fn try_open_store(&self, deadline: Instant) -> Option<ControlPlane> {
        let mut config = Config::new(self.state.join("control-plane"));
        config.preload_crds = false;
        match ControlPlane::open(config) {
            Ok(cp) => Some(cp),
            Err(e) => {
                assert!(
                    Instant::now() < deadline,
                    "the control plane store was not released within {STORE_DEADLINE:?}: {e}"
                );
                None
            }
        }
    }

    /// Opens the embedded control plane of this fleet, polling until no run holds its store any
    /// more (outside an async runtime).
    pub fn open_store(&self) -> ControlPlane {
        let deadline = Instant::now() + STORE_DEADLINE;
        loop {
            if let Some(cp) = self.try_open_store(deadline) {
                return cp;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// [`Fleet::open_store`] in an async test: the runtime keeps running while it polls, so the
    /// aborted tasks of a finished `agent::run` (and its kube clients' buffer workers) can end and
    /// release the store.
    async fn open_store_async(&self) -> ControlPlane {
        let deadline = Instant::now() + STORE_DEADLINE;
        loop {
            if let Some(cp) = self.try_open_store(deadline) {
                return cp;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until no earlier run or inspection holds the store (before calling `agent::run`
    /// directly with a config of the test's own). `agent::run` can return while its aborted tasks
    /// still hold the control plane for a moment; opening it again at once would then fail with
    /// `DatabaseAlreadyOpen`.
    pub async fn wait_store_free(&self) {
        if self.state.join("control-plane").exists() {
            drop(self.open_store_async().await);
        }
    }

    /// Reads live state through `f` in an async test, then releases the store for the next run.
    pub async fn inspect<T, F, Fut>(&self, f: F) -> T
    where
        F: FnOnce(Cluster) -> Fut,
        Fut: std::future::Future<Output = T>,
    {
        let cp = self.open_store_async().await;
        let out = f(Cluster::new(cp.client(), RequestCounter::default())).await;
        drop(cp);
        self.wait_store_free().await;
        out
    }

    /// Runs `f` with a `kube::Client` on this fleet's embedded control plane (between runs of the
    /// binary: the store is opened, then released again before this returns).
    pub fn with_client<T>(&self, f: impl AsyncFnOnce(kube::Client) -> T) -> T {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        let out = rt.block_on(async {
            let cp = self.open_store();
            let out = f(cp.client()).await;
            drop(cp);
            out
        });
        // Dropping the runtime ends the client's workers; then the store must open (and close) again.
        drop(rt);
        drop(self.open_store());
        out
    }
}

/// How `api_version` `kind` is addressed through the API (plural as kube-rs guesses it).
pub fn api_resource(api_version: &str, kind: &str) -> kube::discovery::ApiResource {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    kube::discovery::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(group, version, kind))
}

impl Fleet {
    /// The live object `api_version` `kind` `namespace`/`name` in this fleet's embedded store.
    pub fn get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        use kube::api::{Api, DynamicObject};
        let resource = api_resource(api_version, kind);
        let (namespace, name) = (namespace.map(str::to_string), name.to_string());
        self.with_client(async move |client| {
            let api: Api<DynamicObject> = match &namespace {
                Some(ns) => Api::namespaced_with(client, ns, &resource),
                None => Api::all_with(client, &resource),
            };
            api.get_opt(&name)
                .await
                .expect("a read of the store")
                .map(|o| serde_json::to_value(o).expect("JSON"))
        })
    }
}

/// `text` (a kustomization) with `items` (YAML list entries, indented by two spaces) added to its
/// `patches:`, which must be its last field when there is one.
pub fn with_patches(text: &str, items: &str) -> String {
    let sep = if text.ends_with('\n') { "" } else { "\n" };
    match text.split_once("\npatches:\n") {
        // A list already there (prod's KMS patch): it must be the file's last field.
        Some((_, rest)) => {
            assert!(
                rest.lines()
                    .all(|l| l.is_empty() || l.starts_with([' ', '#', '-'])),
                "the unit's patches must be its kustomization's last field"
            );
            format!("{text}{sep}{items}")
        }
        None => format!("{text}{sep}patches:\n{items}"),
    }
}

//! A copy of `examples-repo/` in a tempdir (a git repository on `main`, or a plain folder) with its
//! own state directory, and the `aro-gitops` binary run on it: the fixture of the tests that drive
//! the binary (`plan`, `safety`).

use super::git;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A copy of `examples-repo/` and a state directory, in one tempdir.
pub struct Fleet {
    _dir: Option<tempfile::TempDir>,
    pub repo: PathBuf,
    pub state: PathBuf,
    is_git: bool,
}

impl Fleet {
    /// A plain folder (no git): what `aro-gitops run --repo <folder>` imports.
    pub fn plain() -> Fleet {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        git::copy_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples-repo"),
            &repo,
        );
        let state = dir.path().join("state");
        Fleet {
            _dir: Some(dir),
            repo,
            state,
            is_git: false,
        }
    }

    /// The git repository `repo` and the state directory `state`, owned by the caller.
    pub fn at(repo: PathBuf, state: PathBuf) -> Fleet {
        Fleet {
            _dir: None,
            repo,
            state,
            is_git: true,
        }
    }

    /// A git repository on `main` with the examples committed; returns it and that commit.
    pub fn git() -> (Fleet, String) {
        let mut f = Fleet::plain();
        let first = git::init_and_commit(&f.repo, "the fleet");
        f.is_git = true;
        (f, first)
    }

    /// Commits every change of the work tree; returns the commit (a full 40-character SHA).
    pub fn commit(&self, message: &str) -> String {
        assert!(self.is_git, "only a git fleet has commits");
        let sha = git::commit_all(&self.repo, message);
        assert_eq!(sha.len(), 40, "{sha}");
        sha
    }

    /// Puts `path` back as it was at commit `rev` (uncommitted).
    pub fn checkout(&self, rev: &str, path: &str) {
        git::git(&self.repo, &["checkout", "-q", rev, "--", path]);
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.repo.join(rel)).expect("read a repository file")
    }

    pub fn write(&self, rel: &str, content: &str) {
        let path = self.repo.join(rel);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create folders");
        std::fs::write(&path, content).expect("write a repository file");
    }

    /// Removes a file or a folder of the repository.
    pub fn remove(&self, rel: &str) {
        let path = self.repo.join(rel);
        if path.is_dir() {
            std::fs::remove_dir_all(&path).expect("remove a folder");
        } else {
            std::fs::remove_file(&path).expect("remove a file");
        }
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

    /// One `aro-gitops run --once` on the embedded control plane, without provisioning delay; it
    /// must converge.
    pub fn run_once(&self) {
        let out = self.aro_gitops(&["run", "--once", "--sim-delay", "0s", "--timeout", "60s"]);
        assert_eq!(out.code, 0, "the run did not converge:\n{}", out.all());
    }

    /// The binary with `--repo` and `--state` of this fleet, logs at warn, no colours, no user git
    /// config.
    pub fn aro_gitops(&self, args: &[&str]) -> Output {
        let mut all: Vec<&str> = args.to_vec();
        let (repo, state) = (self.repo.to_str().unwrap(), self.state.to_str().unwrap());
        all.extend(["--repo", repo, "--state", state]);
        let mut out = aro_gitops_in(Path::new("."), &all);
        out.args.truncate(args.len());
        out
    }
}

/// The binary run in `cwd` with `args` only, logs at warn, no colours, no user git config.
pub fn aro_gitops_in(cwd: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
        .args(args)
        .current_dir(cwd)
        .env("ARO_GITOPS_LOG", "warn")
        .env("NO_COLOR", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null())
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

/// How long to wait for a finished run to release the embedded control plane's store.
const STORE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

impl Fleet {
    /// Opens the embedded control plane of this fleet (`STATE/control-plane`), polling until no
    /// run holds its store any more.
    pub fn open_store(&self) -> aro_gitops::controlplane::ControlPlane {
        use aro_gitops::controlplane::{Config, ControlPlane};
        let deadline = std::time::Instant::now() + STORE_DEADLINE;
        loop {
            let mut config = Config::new(self.state.join("control-plane"));
            config.preload_crds = false;
            match ControlPlane::open(config) {
                Ok(cp) => return cp,
                Err(e) => assert!(
                    std::time::Instant::now() < deadline,
                    "the control plane store was not released within {STORE_DEADLINE:?}: {e}"
                ),
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
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

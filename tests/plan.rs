//! `aro-gitops plan` end to end, through the binary, on copies of `examples-repo/`.
//!
//! Each test has its own tempdir holding a copy of the fleet (a git repository on `main`, or a plain
//! folder) and a state directory. `base` has the pull-request previews (head compared with the base
//! revision, no cluster) and `deletions` their deletion safety; `live` the plans against the
//! embedded control plane after a real `aro-gitops run --once`; `exit_codes` the exit codes
//! (0 no changes, 2 changes, 1 errors) in one table. This file holds the fixture and the helpers
//! that read a plan's output.

#[path = "plan/base.rs"]
mod base;
mod common;
#[path = "plan/deletions.rs"]
mod deletions;
#[path = "plan/exit_codes.rs"]
mod exit_codes;
#[path = "plan/live.rs"]
mod live;

use common::git;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub const DEV: &str = "clusters/dev";
pub const PROD: &str = "clusters/prod";

/// A copy of `examples-repo/` and a state directory, in one tempdir.
pub struct Fleet {
    _dir: tempfile::TempDir,
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
            _dir: dir,
            repo,
            state,
            is_git: false,
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
        assert!(!text.contains("\npatches:"), "one patch list per unit");
        self.write(&rel, &format!("{text}patches:\n{items}"));
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
        let out = Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
            .args(args)
            .arg("--repo")
            .arg(&self.repo)
            .arg("--state")
            .arg(&self.state)
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
            stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
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
    let schema: Value = serde_json::from_str(include_str!("../schemas/plan.schema.json"))
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

/// The preview of `unit` in a JSON plan.
pub fn cluster<'a>(plan: &'a Value, unit: &str) -> &'a Value {
    plan["clusters"]
        .as_array()
        .expect("clusters")
        .iter()
        .find(|c| c["unit"] == unit)
        .unwrap_or_else(|| panic!("no cluster {unit} in {plan:#}"))
}

/// A count of a cluster preview (`create`, `update`, ...).
pub fn count(c: &Value, what: &str) -> u64 {
    c["counts"][what]
        .as_u64()
        .unwrap_or_else(|| panic!("no count {what} in {c:#}"))
}

/// `Kind/name` of an object reference.
pub fn name(object: &Value) -> String {
    format!(
        "{}/{}",
        object["kind"].as_str().expect("kind"),
        object["name"].as_str().expect("name")
    )
}

/// The entries of list `field` of a cluster preview (absent: empty).
pub fn entries<'a>(c: &'a Value, field: &str) -> &'a [Value] {
    c.get(field)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// `(action, Kind/name)` of every change of a cluster preview, sorted.
pub fn changes(c: &Value) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = entries(c, "changes")
        .iter()
        .map(|ch| {
            (
                ch["action"].as_str().expect("action").to_string(),
                name(&ch["object"]),
            )
        })
        .collect();
    v.sort();
    v
}

/// The change of `kind_name` (`Kind/name`) in a cluster preview.
pub fn change<'a>(c: &'a Value, kind_name: &str) -> &'a Value {
    entries(c, "changes")
        .iter()
        .find(|ch| name(&ch["object"]) == kind_name)
        .unwrap_or_else(|| panic!("no change of {kind_name} in {c:#}"))
}

/// `Kind/name` of every entry of list `field` (`blockedDeletions`, `adopted`, ...), sorted.
pub fn names_in(c: &Value, field: &str) -> Vec<String> {
    let mut v: Vec<String> = entries(c, field)
        .iter()
        .map(|e| name(&e["object"]))
        .collect();
    v.sort();
    v
}

/// Owned pairs for comparing with [`changes`].
pub fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = items
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    v.sort();
    v
}

/// Replaces every 40-hex commit id, and every 12-hex short form of `commits`, with placeholders.
pub fn normalize(text: &str, commits: &[(&str, &str)]) -> String {
    let mut out = text.to_string();
    for (sha, label) in commits {
        out = out.replace(sha, &format!("<{label}>"));
        out = out.replace(&sha[..12], &format!("<{label}:short>"));
    }
    out
}

//! The agent on the real server, as deploy/base runs it: a [`RealCluster`] with deploy/base
//! applied, the binary run as its ServiceAccount `aro-gitops-system/aro-gitops` (the real RBAC
//! authorizer holds it to the ClusterRole and Role, so a missing permission fails the run), and a
//! small git fleet of plain objects (no Azure: for the controller's own features).
//!
//! Each unit `clusters/NAME` declares the Namespace `NAME` and the ConfigMap `NAME/settings`
//! (`data.greeting: hello`). The agent follows the bare remote by a `file://` URL; the work tree
//! commits and pushes to it.

use super::git;
use super::real_cluster::RealCluster;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// How long one `run --once` of the small fleet may take (a debug build, a shared machine).
pub const RUN_TIMEOUT: &str = "60s";

pub struct RealFleet {
    pub cluster: RealCluster,
    /// The kubeconfig of deploy/base's ServiceAccount (a TokenRequest token).
    pub kubeconfig: PathBuf,
    pub dir: tempfile::TempDir,
    /// The work tree tests edit and commit in.
    pub repo: PathBuf,
    /// The bare remote the work tree pushes to (the agent's source, its reports' branch).
    pub remote: PathBuf,
}

impl RealFleet {
    /// A fresh real cluster with deploy/base applied, and a fleet of `units` committed and
    /// pushed; `None` when the real-server tests are skipped.
    pub fn start(units: &[&str]) -> Option<RealFleet> {
        let cluster = RealCluster::start()?;
        let kubeconfig = cluster.deploy_base_kubeconfig();
        let dir = tempfile::Builder::new()
            .prefix("real-fleet-")
            .tempdir()
            .expect("tempdir");
        let repo = dir.path().join("repo");
        let remote = dir.path().join("remote.git");
        let fleet = RealFleet {
            cluster,
            kubeconfig,
            repo,
            remote,
            dir,
        };
        for unit in units {
            fleet.write(
                &format!("clusters/{unit}/kustomization.yaml"),
                &kustomization(&["namespace.yaml", "settings.yaml"]),
            );
            fleet.write(
                &format!("clusters/{unit}/namespace.yaml"),
                &format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {unit}\n"),
            );
            fleet.set_greeting(unit, "hello");
        }
        git::init_and_commit(&fleet.repo, "the fleet");
        git::git(fleet.dir.path(), &["init", "-q", "--bare", "remote.git"]);
        let remote = fleet.remote.to_str().expect("UTF-8 path");
        git::git(&fleet.repo, &["remote", "add", "origin", remote]);
        git::git(&fleet.repo, &["push", "-q", "origin", "main"]);
        Some(fleet)
    }

    /// The source the agent follows: the bare remote, by a `file://` URL (as a remote is named).
    pub fn url(&self) -> String {
        format!("file://{}", self.remote.display())
    }

    /// A state directory of its own for one agent (`state-NAME`).
    pub fn state(&self, name: &str) -> PathBuf {
        self.dir.path().join(format!("state-{name}"))
    }

    pub fn write(&self, rel: &str, content: &str) {
        let path = self.repo.join(rel);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create folders");
        std::fs::write(&path, content).expect("write a repository file");
    }

    /// Sets unit `unit`'s ConfigMap `settings` to `data.greeting: VALUE` (uncommitted).
    pub fn set_greeting(&self, unit: &str, value: &str) {
        self.write(
            &format!("clusters/{unit}/settings.yaml"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: {unit}\ndata:\n  greeting: {value}\n"
            ),
        );
    }

    /// Commits every change of the work tree and pushes it; returns the commit.
    pub fn commit(&self, message: &str) -> String {
        let sha = git::commit_all(&self.repo, message);
        self.push();
        sha
    }

    /// As [`RealFleet::commit`], the commit signed with the SSH private key `key`.
    pub fn commit_signed(&self, key: &Path, message: &str) -> String {
        let sha = git::commit_all_ssh_signed(&self.repo, key, message);
        self.push();
        sha
    }

    fn push(&self) {
        git::git(&self.repo, &["push", "-q", "origin", "main"]);
    }

    /// `aro-gitops ARGS --repo URL --kubeconfig SA` (logs at info, no colours): the agent as the
    /// ServiceAccount. Add `--state`.
    pub fn agent(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_aro-gitops"));
        cmd.args(args)
            .arg("--repo")
            .arg(self.url())
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .env("ARO_GITOPS_LOG", "info")
            .env("NO_COLOR", "1");
        cmd
    }

    /// `aro-gitops run --once` as the ServiceAccount with its own state directory `state`, and
    /// `extra` arguments: how it ended.
    pub fn run_once(&self, state: &str, extra: &[&str]) -> Output {
        let state = self.state(state);
        self.agent(&["run", "--once", "--timeout", RUN_TIMEOUT])
            .arg("--state")
            .arg(state)
            .args(extra)
            .output()
            .expect("the binary runs")
    }

    /// `data.KEY` of the live ConfigMap `namespace/name`, read as cluster admin; `None` when the
    /// ConfigMap does not exist.
    pub fn configmap(&self, namespace: &str, name: &str, key: &str) -> Option<String> {
        let live = self.get_json(&["-n", namespace, "configmap", name])?;
        live["data"][key].as_str().map(str::to_string)
    }

    /// `kubectl get ARGS -o json` as cluster admin; `None` when not found.
    pub fn get_json(&self, args: &[&str]) -> Option<Value> {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend(["-o", "json"]);
        let out = self.cluster.kubectl_output(&all);
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("NotFound"), "kubectl {all:?}: {err}");
            return None;
        }
        Some(serde_json::from_slice(&out.stdout).expect("kubectl prints JSON"))
    }
}

/// A unit's kustomization listing `resources`.
pub fn kustomization(resources: &[&str]) -> String {
    let mut text = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
        .to_string();
    for r in resources {
        text += &format!("  - {r}\n");
    }
    text
}

/// Standard output and error of a finished command, one after the other.
pub fn all_output(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

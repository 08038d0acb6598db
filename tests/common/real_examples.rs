//! The release-like binary against a real kube-apiserver, as deploy/base's ServiceAccount: a
//! [`RealCluster`] with the management cluster's CRDs and deploy/base applied, a copy of
//! `examples-repo/` in a git repository ([`Fleet`]), and, when the fleet needs Azure,
//! `aro-gitops azure-simulator` running against the same API server as cluster admin (it plays
//! ASO and the ARO service there; a child process killed when dropped).
//!
//! Every `run`, `plan` and `drift` goes through `--kubeconfig <the ServiceAccount's kubeconfig>`,
//! so the real RBAC authorizer holds the agent to deploy/base's ClusterRole and Role: a missing
//! permission fails the test.

use super::fleet::{Fleet, Output};
use super::real_cluster::RealCluster;
use std::path::{Path, PathBuf};

/// The fleet name of the example fleet's runs, on the real server and on the embedded default
/// beside it (each runs its own copy, at its own path).
pub const EXAMPLES_FLEET: [&str; 2] = ["--fleet", "examples"];

/// How long one `run --once` may take to settle on the real server.
pub const RUN_TIMEOUT: &str = "300s";

/// A real cluster with deploy/base, the fleet it reconciles and (optionally) the simulator.
pub struct RealExamples {
    /// Dropped last: the simulator and the fleet go first.
    pub fleet: Fleet,
    simulator: Option<Simulator>,
    /// The kubeconfig of ServiceAccount `aro-gitops-system/aro-gitops` (deploy/base).
    pub kubeconfig: PathBuf,
    scratch: tempfile::TempDir,
    pub cluster: RealCluster,
}

impl RealExamples {
    /// A real cluster with the CRDs and deploy/base, the example fleet committed on `main`, and
    /// the Azure simulator running against it; `None` when the real-server tests are skipped.
    pub fn start() -> Option<RealExamples> {
        RealExamples::start_with(true)
    }

    /// As [`RealExamples::start`]; without `simulator`, nothing plays Azure (for fleets of plain
    /// Kubernetes objects: runs then go without `--use-azure-simulator`).
    pub fn start_with(simulator: bool) -> Option<RealExamples> {
        let cluster = RealCluster::start()?;
        cluster.install_crds();
        let kubeconfig = cluster.deploy_base_kubeconfig();
        let simulator = simulator.then(|| Simulator::start(&cluster.admin_kubeconfig()).0);
        let (fleet, _) = Fleet::git();
        Some(RealExamples {
            fleet,
            simulator,
            kubeconfig,
            scratch: tempfile::tempdir().expect("tempdir"),
            cluster,
        })
    }

    /// A scratch folder that lives as long as the fixture (editor scripts and the like).
    pub fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    /// `aro-gitops CMD --kubeconfig SA [--use-azure-simulator] ARGS` on this fleet.
    fn binary(&self, command: &[&str], args: &[&str]) -> Output {
        let mut all: Vec<&str> = command.to_vec();
        all.extend([
            "--kubeconfig",
            self.kubeconfig.to_str().expect("utf-8 path"),
        ]);
        if self.simulator.is_some() {
            all.push("--use-azure-simulator");
        }
        // One fleet name whatever the copy's path, as the embedded runs compared with it use.
        all.extend(EXAMPLES_FLEET);
        all.extend_from_slice(args);
        self.fleet.aro_gitops(&all)
    }

    /// `aro-gitops run --once` as the ServiceAccount, whatever its exit.
    pub fn run(&self, args: &[&str]) -> Output {
        self.binary(&["run", "--once", "--timeout", RUN_TIMEOUT], args)
    }

    /// [`RealExamples::run`], which must converge (exit 0).
    pub fn converge(&self, args: &[&str]) -> Output {
        let out = self.run(args);
        assert_eq!(out.code, 0, "the run did not converge:\n{}", out.all());
        out
    }

    /// `aro-gitops plan --color never` against the real server's live state.
    pub fn plan(&self, args: &[&str]) -> Output {
        self.binary(&["plan", "--color", "never"], args)
    }

    /// `aro-gitops drift` against the real server.
    pub fn drift(&self, args: &[&str]) -> Output {
        self.binary(&["drift"], args)
    }

    /// `kubectl --kubeconfig ADMIN ARGS` (cluster admin), failing the test when it fails.
    pub fn kubectl(&self, args: &[&str]) -> String {
        self.cluster.kubectl(args)
    }

    /// Whether `kubectl get ARGS` (as admin) finds the object.
    pub fn exists(&self, args: &[&str]) -> bool {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        let out = self.cluster.kubectl_output(&all);
        if out.status.success() {
            return true;
        }
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("NotFound"), "kubectl get {args:?}: {err}");
        false
    }

    /// What the simulator printed so far (for assertion messages).
    pub fn simulator_output(&mut self) -> String {
        self.simulator
            .as_mut()
            .map(Simulator::drain)
            .unwrap_or_default()
    }
}

pub use super::simulator::Simulator;

impl Output {
    /// The summary's `requests to the cluster: N reads, M writes`, as (N, M).
    pub fn requests(&self) -> (u64, u64) {
        let line = self
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("requests to the cluster: "))
            .unwrap_or_else(|| panic!("no request counts in:\n{}", self.all()));
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

    /// The phase the summary table gives `unit` (`Converged`, `Failed`, ...).
    pub fn phase(&self, unit: &str) -> Option<String> {
        self.stdout.lines().find_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some(unit))
                .then(|| words.nth(1).map(str::to_string))
                .flatten()
        })
    }
}

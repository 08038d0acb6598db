//! The official Kubernetes Python client (`pip install kubernetes`) drives the local control plane
//! (`aro-gitops control-plane serve`) and kube-apiserver v1.37 (`common::real_cluster`) alike:
//! CRUD with typed bodies (no kind/apiVersion, taken from the URL), pagination, selectors, watch,
//! the three patch types, server-side apply (typed and dynamic client), CRDs with a status
//! subresource, Leases, namespace and CRD deletion. The checks live in
//! `controlplane_python/check.py`, one printed line each, every check in its own namespace.
//!
//! The one test runs check.py against both servers at once and prints one line per check with
//! both results (`discovery: local ok, kube-apiserver ok`) and the figure `clients (python): N of
//! M checks pass on both servers`. It fails when a check fails on a server where
//! `controlplane_python/known-differences.yaml` does not declare it, and when a declared check
//! passes there (see docs/clients.md). With `ARO_GITOPS_SKIP_REAL_CLUSTER` set only the local
//! server runs.
//!
//! Skipped with a message when the client is not installed, unless
//! `ARO_GITOPS_REQUIRE_PYTHON_CLIENT` is set (`.ci/run` installs it and sets it).

mod common;
#[path = "clients/report.rs"]
mod report;

use common::kubectl::Server;
use common::real_cluster::RealCluster;
use report::{CheckResult, Outcome};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What check.py runs, in order: each prints `ok <name>` or `FAIL <name>: <why>`.
const CHECKS: [&str; 18] = [
    "discovery",
    "namespace_create",
    "configmap_crud",
    "explicit_kind_mismatch_refused",
    "dry_run",
    "pagination",
    "selectors",
    "delete_collection",
    "watch",
    "watch_initial_state_and_timeout",
    "patch_types",
    "server_side_apply",
    "dynamic_client_apply",
    "crd_with_status",
    "custom_object_apply_and_list",
    "leases",
    "namespace_deletion",
    "crd_deletion",
];

const RUN_TIMEOUT: Duration = Duration::from_secs(180);

fn python_client_installed() -> bool {
    Command::new("python3")
        .args(["-c", "import kubernetes"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn python_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/controlplane_python")
}

/// What one run of check.py printed.
struct Run {
    stdout: String,
    stderr: String,
}

/// Runs check.py against `kubeconfig` to its end (its exit code only says whether a check failed).
fn run_checks(kubeconfig: &Path) -> Run {
    let mut child = Command::new("python3")
        .arg(python_dir().join("check.py"))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 starts");
    // Read both pipes on threads so a chatty child never blocks on a full pipe.
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
    let deadline = Instant::now() + RUN_TIMEOUT;
    loop {
        if child.try_wait().expect("wait for python3").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "check.py did not finish within {RUN_TIMEOUT:?}; its output:\n{}",
                stdout.join().unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Run {
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// A check's outcome in check.py's output.
fn outcome(out: &str, name: &str) -> Outcome {
    let failed = format!("FAIL {name}: ");
    for l in out.lines() {
        if l == format!("ok {name}") {
            return Outcome::Ok;
        }
        if let Some(why) = l.strip_prefix(&failed) {
            return Outcome::Failed(why.to_string());
        }
    }
    Outcome::Failed("check.py printed no line for it".to_string())
}

#[test]
fn the_official_python_client_drives_both_servers_alike() {
    if !python_client_installed() {
        assert!(
            std::env::var_os("ARO_GITOPS_REQUIRE_PYTHON_CLIENT").is_none(),
            "ARO_GITOPS_REQUIRE_PYTHON_CLIENT is set but `python3 -c 'import kubernetes'` fails: \
             run `python3 -m pip install kubernetes`"
        );
        eprintln!(
            "SKIPPED: the Kubernetes Python client is not installed \
             (`python3 -m pip install kubernetes`; .ci/run installs it)"
        );
        return;
    }
    let started = Instant::now();
    let local = Server::start();
    let local_kubeconfig = local.kubeconfig.clone();
    let local_run = std::thread::spawn(move || run_checks(&local_kubeconfig));
    let cluster = RealCluster::start();
    let kube_run = cluster.as_ref().map(|c| run_checks(&c.admin_kubeconfig()));
    let local_run = local_run.join().expect("the local run");

    let results: Vec<CheckResult> = CHECKS
        .iter()
        .map(|name| CheckResult {
            name: name.to_string(),
            local: outcome(&local_run.stdout, name),
            kube: kube_run
                .as_ref()
                .map_or(Outcome::NotRun, |r| outcome(&r.stdout, name)),
        })
        .collect();
    let problems = report::report(
        "python",
        &results,
        &report::load_declared(&python_dir().join("known-differences.yaml")),
        started,
    );
    if !problems.is_empty() {
        let kube = kube_run.as_ref().map_or(String::new(), |r| {
            format!(
                "\n--- kube-apiserver: check.py output:\n{}\nstderr:\n{}",
                r.stdout, r.stderr
            )
        });
        panic!(
            "{}\n--- local: check.py output:\n{}\nstderr:\n{}\nserver log:\n{}{kube}",
            problems.join("\n"),
            local_run.stdout,
            local_run.stderr,
            local.log()
        );
    }
}

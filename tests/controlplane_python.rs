//! The official Kubernetes Python client (`pip install kubernetes`) drives
//! `aro-gitops control-plane serve` as it drives a cluster: CRUD with typed bodies (no
//! kind/apiVersion, taken from the URL), pagination, selectors, watch, the three patch types,
//! server-side apply (typed and dynamic client), a CRD with a status subresource, Leases and
//! namespace deletion. The checks live in `controlplane_python/check.py`, one printed line each.
//!
//! Skipped with a message when the client is not installed, unless
//! `ARO_GITOPS_REQUIRE_PYTHON_CLIENT` is set (`.ci/run` installs it and sets it).

mod common;

use common::kubectl::Server;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What check.py runs, in order: each must print `ok <name>`.
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

#[test]
fn the_official_python_client_drives_the_control_plane() {
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
    let server = Server::start();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/controlplane_python/check.py");
    let mut child = Command::new("python3")
        .arg(&script)
        .arg("--kubeconfig")
        .arg(&server.kubeconfig)
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
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for python3") {
            break status;
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
    };
    let out = stdout.join().unwrap_or_default();
    let err = stderr.join().unwrap_or_default();
    let context = || {
        format!(
            "check.py output:\n{out}\nstderr:\n{err}\nserver log:\n{}",
            server.log()
        )
    };
    let failed: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL ")).collect();
    assert!(
        failed.is_empty(),
        "failed checks: {failed:#?}\n{}",
        context()
    );
    for name in CHECKS {
        assert!(
            out.lines().any(|l| l == format!("ok {name}")),
            "check {name} did not pass\n{}",
            context()
        );
    }
    assert!(
        status.success(),
        "check.py exited with {status}\n{}",
        context()
    );
}

//! `run --in-cluster` on the real server, with what kube reads in a pod: the environment
//! variables `KUBERNETES_SERVICE_HOST`/`_PORT` and the files `token`, `ca.crt` and `namespace`
//! of `/var/run/secrets/kubernetes.io/serviceaccount` (a TokenRequest token of deploy/base's
//! ServiceAccount, the cluster's CA).
//!
//! The files are never written into this machine's `/var/run`: the agent runs in a private mount
//! namespace (`unshare --mount --propagation private`, as root; else also in a user namespace,
//! `--user --map-root-user`) where a tmpfs is mounted over `/var/run` and the files are copied in
//! before the agent is exec'd. The machine's `/var/run` stays as it was.

use super::*;
use std::path::Path;
use std::process::Command;

/// The script run in the private mount namespace: `$1` the folder holding the service account's
/// files, the rest the agent's command line.
const IN_POD: &str = r#"set -e
mount -t tmpfs -o mode=0755 tmpfs /var/run
mkdir -p /var/run/secrets/kubernetes.io/serviceaccount
cp "$1"/token "$1"/ca.crt "$1"/namespace /var/run/secrets/kubernetes.io/serviceaccount/
shift
exec "$@""#;

/// `unshare` arguments for a private mount namespace: as root, a mount namespace alone;
/// otherwise a user namespace mapping this user to root as well.
fn unshare_args() -> Vec<&'static str> {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let mut args = vec!["--mount", "--propagation", "private"];
    if !root {
        args.extend(["--user", "--map-root-user"]);
    }
    args
}

#[test]
fn in_cluster_reads_the_pods_service_account_files_and_environment() {
    let Some(f) = RealFleet::start(&[APP]) else {
        return;
    };
    let host_files = Path::new("/var/run/secrets/kubernetes.io/serviceaccount");
    let there_before = host_files.exists();

    // The pod's files: a token of the ServiceAccount, the cluster's CA, the namespace.
    let pod = f.dir.path().join("serviceaccount");
    std::fs::create_dir_all(&pod).expect("a folder");
    let token = f
        .cluster
        .kubectl(&["-n", "aro-gitops-system", "create", "token", "aro-gitops"]);
    std::fs::write(pod.join("token"), token.trim()).expect("token");
    std::fs::copy(f.cluster.dir().join("pki/ca.crt"), pod.join("ca.crt")).expect("ca.crt");
    std::fs::write(pod.join("namespace"), "aro-gitops-system").expect("namespace");
    let ports = std::fs::read_to_string(f.cluster.dir().join("ports.env")).expect("ports.env");
    let port = ports
        .lines()
        .find_map(|l| l.strip_prefix("APISERVER_PORT="))
        .expect("the API server's port");

    let out = Command::new("unshare")
        .args(unshare_args())
        .args(["sh", "-c", IN_POD, "in-pod"])
        .arg(&pod)
        .arg(env!("CARGO_BIN_EXE_aro-gitops"))
        .args(["run", "--once", "--in-cluster", "--timeout"])
        .arg(common::real_agent::RUN_TIMEOUT)
        .arg("--repo")
        .arg(f.url())
        .arg("--state")
        .arg(f.state("pod"))
        .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        .env("KUBERNETES_SERVICE_PORT", port)
        .env("ARO_GITOPS_LOG", "info")
        .env("NO_COLOR", "1")
        .output()
        .expect("unshare runs");
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("live state: in-cluster config (service account)"),
        "{text}"
    );
    assert_eq!(
        f.configmap(APP, "settings", "greeting").as_deref(),
        Some("hello")
    );
    // The machine's /var/run is untouched.
    assert_eq!(host_files.exists(), there_before);
}

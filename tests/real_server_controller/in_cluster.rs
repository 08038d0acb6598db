//! `--in-cluster` on the real server, with what kube reads in a pod: the environment variables
//! `KUBERNETES_SERVICE_HOST`/`_PORT` and the files `token`, `ca.crt` and `namespace` of
//! `/var/run/secrets/kubernetes.io/serviceaccount` (a TokenRequest token of deploy/base's
//! ServiceAccount, the cluster's CA). The agent runs with deploy/base's Deployment's own
//! container arguments (`run --leader-elect --in-cluster`, probes, metrics, the webhook), only
//! its addresses and paths moved to this machine: it takes the Lease, applies the fleet, is ready
//! as the leader, and on SIGTERM releases the Lease and exits 0.
//!
//! The files are never written into this machine's `/var/run`: the agent runs in a private mount
//! namespace (`unshare --mount --propagation private`, as root; else also in a user namespace,
//! `--user --map-root-user`) where a tmpfs is mounted over `/var/run` and the files are copied in
//! before the agent is exec'd. The machine's `/var/run` stays as it was.

use super::*;
use common::kubectl::poll_until;
use common::running::Process;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The script run in the private mount namespace: `$1` the folder holding the service account's
/// files, the rest the agent's command line.
const IN_POD: &str = r#"set -e
mount -n -t tmpfs -o mode=0755 tmpfs /var/run
mkdir -p /var/run/secrets/kubernetes.io/serviceaccount
cp "$1"/token "$1"/ca.crt "$1"/namespace /var/run/secrets/kubernetes.io/serviceaccount/
shift
exec "$@""#;

const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

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

/// deploy/base's Deployment's container: its arguments and environment.
fn deployment_container() -> (Vec<String>, Vec<(String, String)>) {
    let file = common::real_cluster::repo_root().join("deploy/base/deployment.yaml");
    let text = std::fs::read_to_string(&file).expect("deploy/base/deployment.yaml");
    let deployment = aro_gitops::yaml::from_str(&text).expect("YAML");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .expect("a list")
            .iter()
            .map(|s| s.as_str().expect("a string").to_string())
            .collect()
    };
    let env = container["env"]
        .as_array()
        .map(|e| {
            e.iter()
                .map(|v| {
                    let name = v["name"].as_str().expect("a name").to_string();
                    // What the kubelet would put there: the pod's namespace from the downward API.
                    let value = match v["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
                        Some("metadata.namespace") => "aro-gitops-system",
                        _ => v["value"].as_str().unwrap_or_default(),
                    };
                    (name, value.to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    (strings(&container["args"]), env)
}

#[test]
fn the_deployments_command_line_runs_in_cluster_leads_and_releases_on_sigterm() {
    let Some(f) = RealFleet::start(&[APP]) else {
        return;
    };
    let host_files = Path::new(SERVICE_ACCOUNT_DIR);
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
    let webhook_secret = f.dir.path().join("webhook-secret");
    std::fs::write(&webhook_secret, "a-webhook-secret\n").expect("the webhook secret");

    // The Deployment's arguments, as the kubelet would expand them, on this machine: any free
    // loopback port for each server, the state and the webhook secret in this test's folder.
    let (args, env) = deployment_container();
    assert!(
        args.starts_with(&["run".into(), "--leader-elect".into(), "--in-cluster".into()]),
        "{args:?}"
    );
    let state = f.state("pod");
    let args: Vec<String> = args
        .into_iter()
        .map(|a| match a.as_str() {
            "$(ARO_GITOPS_REPO)" => f.url(),
            "/var/lib/aro-gitops" => state.display().to_string(),
            "/etc/aro-gitops/webhook/secret" => webhook_secret.display().to_string(),
            a if a.starts_with("0.0.0.0:") => "127.0.0.1:0".into(),
            _ => a,
        })
        .collect();
    assert!(!args.iter().any(|a| a.contains("$(")), "{args:?}");
    let mut agent = Process::spawn(
        Command::new("unshare")
            .args(unshare_args())
            .args(["sh", "-c", IN_POD, "in-pod"])
            .arg(&pod)
            .arg(env!("CARGO_BIN_EXE_aro-gitops"))
            .args(&args)
            .envs(env)
            .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
            .env("KUBERNETES_SERVICE_PORT", port)
            .env("ARO_GITOPS_LOG", "info")
            .env("NO_COLOR", "1"),
    );
    agent.wait_for("live state: in-cluster config (service account)", DEADLINE);
    let health = agent.after("health: serving on http://", DEADLINE);
    let identity = agent.after("leader election: identity ", DEADLINE);
    let identity = identity.split(',').next().expect("an identity").to_string();

    // It leads on the real Lease, applies the fleet and is ready as the leader.
    agent.wait_for("leader election: leading", DEADLINE);
    let lease = || {
        f.get_json(&["-n", "aro-gitops-system", "lease", "aro-gitops"])
            .map(|l| l["spec"].clone())
    };
    assert_eq!(
        lease().expect("a Lease")["holderIdentity"].as_str(),
        Some(identity.as_str())
    );
    agent.wait_for("cycle 0 (initial)", DEADLINE);
    assert_eq!(
        f.configmap(APP, "settings", "greeting").as_deref(),
        Some("hello"),
        "{}",
        agent.output()
    );
    poll_until(DEADLINE, "ready as the leader", || {
        let (_, body) = common::http::get(&health, "/readyz").ok()?;
        body.starts_with("ok: leading").then_some(())
    });

    // SIGTERM, as the kubelet stops a pod: the Lease released, exit 0.
    agent.terminate_leader(DEADLINE);
    let spec = lease().expect("the Lease stays");
    assert!(
        spec.get("holderIdentity").is_none_or(Value::is_null),
        "{spec}"
    );
    // The machine's /var/run is untouched.
    assert_eq!(host_files.exists(), there_before);
}

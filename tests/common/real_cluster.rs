//! A real kube-apiserver, kube-controller-manager and etcd for one test, started on loopback by
//! `scripts/real-cluster up` (as envtest starts them) and stopped when dropped.
//!
//! The binaries are built by `scripts/real-cluster build` (the README's test command does it).
//! A test that needs the real cluster FAILS when they are missing; `ARO_GITOPS_SKIP_REAL_CLUSTER=1`
//! opts out for quick local runs ([`RealCluster::start`] then returns `None` and the test returns).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// The environment variable that skips the real-server tests (local runs only; CI never sets it).
pub const SKIP_VAR: &str = "ARO_GITOPS_SKIP_REAL_CLUSTER";

/// The repository's root (where `scripts/` and `deploy/` are).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `../shared` beside the repository: the reference CRDs live there.
pub fn shared_dir() -> PathBuf {
    repo_root().join("../shared")
}

fn script() -> PathBuf {
    repo_root().join("scripts/real-cluster")
}

/// Runs `scripts/real-cluster ARGS`, failing the test with its output when it fails.
fn run_script(args: &[&str]) -> Output {
    let out = Command::new(script())
        .args(args)
        .env("ARO_GITOPS_REAL_CLUSTER_NO_BUILD", "1")
        .env(
            "ARO_GITOPS_REAL_CLUSTER_OWNER_PID",
            std::process::id().to_string(),
        )
        .output()
        .expect("scripts/real-cluster runs");
    assert!(
        out.status.success(),
        "scripts/real-cluster {} failed:\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// One running real cluster, its files in a temporary directory.
pub struct RealCluster {
    dir: tempfile::TempDir,
}

impl RealCluster {
    /// Starts a fresh cluster (about 7 s), or `None` when [`SKIP_VAR`] is set. Panics, with what to
    /// do, when the binaries are not built.
    pub fn start() -> Option<RealCluster> {
        if std::env::var_os(SKIP_VAR).is_some_and(|v| !v.is_empty() && v != "0") {
            eprintln!("{SKIP_VAR} is set: this real-server test is SKIPPED");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("real-cluster-")
            .tempdir()
            .expect("tempdir");
        let path = dir.path().to_str().expect("utf-8 path").to_string();
        run_script(&["up", &path]);
        Some(RealCluster { dir })
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The cluster-admin kubeconfig (`system:masters`).
    pub fn admin_kubeconfig(&self) -> PathBuf {
        self.dir.path().join("admin.kubeconfig")
    }

    /// A client as cluster admin.
    pub async fn admin_client(&self) -> kube::Client {
        client_for(&self.admin_kubeconfig()).await
    }

    /// A kubeconfig for ServiceAccount `namespace/name` (a TokenRequest token), written into the
    /// cluster's directory; the ServiceAccount must exist.
    pub fn service_account_kubeconfig(&self, namespace: &str, name: &str) -> PathBuf {
        let dir = self.dir.path().to_str().expect("utf-8 path");
        let out = run_script(&["kubeconfig", dir, &format!("{namespace}/{name}")]);
        let file = self
            .dir
            .path()
            .join(format!("{namespace}-{name}.kubeconfig"));
        std::fs::write(&file, &out.stdout).expect("write the kubeconfig");
        file
    }

    /// Stops and starts one component (`etcd`, `kube-apiserver`, `kube-controller-manager`) on the
    /// same ports and data; returns when it is ready again.
    pub fn restart(&self, component: &str) {
        let dir = self.dir.path().to_str().expect("utf-8 path");
        run_script(&["restart", dir, component]);
    }

    /// `kubectl --kubeconfig ADMIN ARGS`, failing the test when kubectl fails.
    pub fn kubectl(&self, args: &[&str]) -> String {
        let out = self.kubectl_output(args);
        assert!(
            out.status.success(),
            "kubectl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `kubectl --kubeconfig ADMIN ARGS`, as it ended.
    pub fn kubectl_output(&self, args: &[&str]) -> Output {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(self.admin_kubeconfig())
            .args(args)
            .output()
            .expect("kubectl runs")
    }

    /// Installs the CRDs a management cluster has: CAPZ's and ASO's from `../shared/reference`
    /// (read now, never copied; ASO's as [`without_conversion_webhook`] makes them), and the
    /// project's others (Cluster API's Cluster and MachinePool,
    /// AutoNodePolicy, the Azure simulator's inventory); returns when all are Established.
    pub fn install_crds(&self) {
        let shared = shared_dir().join("reference");
        let own = repo_root().join("src/crds");
        let mut files: Vec<PathBuf> = yaml_files(&shared.join("crds"));
        let adjusted = self.dir.path().join("aso-crds");
        std::fs::create_dir_all(&adjusted).expect("create a folder for the adjusted CRDs");
        for file in yaml_files(&shared.join("aso-crds")) {
            let to = adjusted.join(file.file_name().expect("a file name"));
            std::fs::write(&to, without_conversion_webhook(&file, &own).to_string())
                .expect("write an adjusted CRD");
            files.push(to);
        }
        files.extend(
            yaml_files(&own)
                .into_iter()
                .filter(|f| !reference_has(&shared, f)),
        );
        let mut args = vec!["apply", "--server-side", "--field-manager=test-setup"];
        let names: Vec<String> = files
            .iter()
            .map(|f| f.to_str().expect("utf-8 path").to_string())
            .collect();
        for n in &names {
            args.push("-f");
            args.push(n);
        }
        self.kubectl(&args);
        self.kubectl(&[
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd",
            "--all",
        ]);
    }

    /// Applies `deploy/base` (its Namespace, ServiceAccount, ClusterRole, Role and bindings,
    /// Deployment and Service, rendered by kubectl's kustomize) and returns the kubeconfig of its
    /// ServiceAccount `aro-gitops-system/aro-gitops`, which the real RBAC authorizer holds to
    /// exactly those permissions.
    pub fn deploy_base_kubeconfig(&self) -> PathBuf {
        let base = repo_root().join("deploy/base");
        self.kubectl(&[
            "apply",
            "--server-side",
            "--field-manager=test-setup",
            "-k",
            base.to_str().expect("utf-8 path"),
        ]);
        self.service_account_kubeconfig("aro-gitops-system", "aro-gitops")
    }
}

impl Drop for RealCluster {
    fn drop(&mut self) {
        let dir = self.dir.path().to_str().expect("utf-8 path").to_string();
        let _ = Command::new(script()).args(["down", &dir]).output();
    }
}

/// A client for a kubeconfig file's current context.
pub async fn client_for(kubeconfig: &Path) -> kube::Client {
    let config = kube::config::Kubeconfig::read_from(kubeconfig).expect("read the kubeconfig");
    let config =
        kube::Config::from_custom_kubeconfig(config, &kube::config::KubeConfigOptions::default())
            .await
            .expect("a client config");
    kube::Client::try_from(config).expect("a client")
}

/// The `.yaml` files directly in `dir`, sorted.
pub fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files
}

/// ASO's CRD in `file`, for a cluster where ASO's webhook does not run (as JSON, which is YAML).
///
/// ASO converts between a kind's versions through its webhook (a Service in
/// azureserviceoperator-system); without it kube-apiserver refuses every write of a version other
/// than the storage one ("conversion webhook ... service not found"). The simulator plays ASO's
/// controllers, not its webhook, so here the versions convert as `None` does (the apiVersion
/// rewritten, the fields kept), and the version stored is the one the project writes (the storage
/// version of its own CRD in `own`), so that no field is pruned on the way to etcd: ASO's storage
/// version of a newer API may lack a field of the one written (HcpOpenShiftCluster's
/// `kms.activeKey.vaultName`), which its webhook keeps in a property bag.
fn without_conversion_webhook(file: &Path, own: &Path) -> Value {
    let text = std::fs::read_to_string(file).expect("read a reference CRD");
    let mut crd = aro_gitops::yaml::from_str(&text).expect("a reference CRD is YAML");
    let name = crd["metadata"]["name"]
        .as_str()
        .expect("a CRD name")
        .to_string();
    let own_text = std::fs::read_to_string(own.join(format!("{name}.yaml")))
        .unwrap_or_else(|e| panic!("the project's own CRD {name}: {e}"));
    let own_crd = aro_gitops::yaml::from_str(&own_text).expect("the project's CRD is YAML");
    let written = own_crd["spec"]["versions"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["storage"] == true))
        .and_then(|v| v["name"].as_str())
        .expect("the project's CRD has a storage version")
        .to_string();
    crd["spec"]["conversion"] = serde_json::json!({"strategy": "None"});
    let versions = crd["spec"]["versions"]
        .as_array_mut()
        .expect("a CRD's versions");
    assert!(
        versions.iter().any(|v| v["name"] == written.as_str()),
        "{name} serves {written}"
    );
    for v in versions {
        let stored = v["name"] == written.as_str();
        v["storage"] = Value::Bool(stored);
    }
    crd
}

/// Whether the reference CRDs define the CRD of the project's file `own`
/// (`plural.group.yaml`; the reference files are `group_plural.yaml`).
fn reference_has(shared: &Path, own: &Path) -> bool {
    let stem = own.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let Some((plural, group)) = stem.split_once('.') else {
        return false;
    };
    let name = format!("{group}_{plural}.yaml");
    shared.join("crds").join(&name).exists() || shared.join("aso-crds").join(&name).exists()
}

/// The `.items` of `kubectl get KIND -A -o json`, as JSON.
pub fn items(cluster: &RealCluster, kind: &str) -> Vec<Value> {
    let out = cluster.kubectl(&["get", kind, "-A", "-o", "json"]);
    let list: Value = serde_json::from_str(&out).expect("kubectl prints JSON");
    list["items"].as_array().cloned().unwrap_or_default()
}

/// How long a real-server test waits for the cluster's own controllers (namespace deletion,
/// garbage collection).
pub const CONTROLLER_WAIT: Duration = Duration::from_secs(60);

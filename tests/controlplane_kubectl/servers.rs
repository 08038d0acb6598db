//! The servers a kubectl check runs on: the local control plane (`control-plane serve`) or
//! kube-apiserver v1.37 with its controllers (`common::real_cluster`), seen the same way by a check
//! ([`Target`]): a kubectl whose default namespace is the check's own, a plain-HTTP address for raw
//! requests (kube-apiserver's through `kubectl proxy`, which adds the admin credentials), and how
//! long to wait for work a controller does.

use super::T;
use super::report::Outcome;
use crate::common::kubectl::{HttpResponse, Kubectl, Server, http, poll_until};
use crate::common::real_cluster::{CONTROLLER_WAIT, RealCluster, repo_root};
use crate::common::running::Process;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// The CRDs the checks use that the local control plane does not preload, installed on
/// kube-apiserver when it starts (and by the checks themselves, which is then a no-op), so that its
/// garbage collector knows them before a check relies on it.
const CHECK_CRDS: [&str; 2] = [super::GIZMO_CRD, super::schema::WIDGET_CRD];

/// The local control plane's preloaded CRD that the checks use (a ResourceGroup of ASO's).
fn resource_group_crd() -> PathBuf {
    repo_root().join("src/crds/resourcegroups.resources.azure.com.yaml")
}

/// One server, as the checks reach it.
pub struct Backend {
    /// `local` or `kube-apiserver`, as printed.
    pub name: &'static str,
    kubeconfig: PathBuf,
    /// A plain-HTTP `host:port` serving the API.
    addr: String,
    /// How long a check waits for a controller (garbage collection, namespace deletion).
    wait: Duration,
    /// Per-check kubeconfigs and kubectl caches.
    scratch: tempfile::TempDir,
}

/// What keeps kube-apiserver reachable: the cluster and the proxy in front of it.
pub struct Real {
    _proxy: Process,
    _cluster: RealCluster,
}

impl Backend {
    /// The local control plane `server`.
    pub fn local(server: &Server) -> Backend {
        Backend {
            name: super::report::LOCAL,
            kubeconfig: server.kubeconfig.clone(),
            addr: server.addr.clone(),
            wait: T,
            scratch: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// A fresh kube-apiserver (about 7 s) with the checks' CRDs Established, or `None` when the
    /// real-server tests are skipped.
    pub fn real() -> Option<(Backend, Real)> {
        let cluster = RealCluster::start()?;
        let admin = cluster.admin_kubeconfig();
        let mut proxy = Process::spawn(
            Command::new("kubectl")
                .arg("--kubeconfig")
                .arg(&admin)
                .args(["proxy", "--port=0", "--address=127.0.0.1"])
                .env_remove("KUBECONFIG"),
        );
        let addr = proxy.after("Starting to serve on ", T).trim().to_string();
        let backend = Backend {
            name: super::report::KUBE,
            kubeconfig: admin,
            addr,
            wait: CONTROLLER_WAIT,
            scratch: tempfile::tempdir().expect("tempdir"),
        };
        let k = backend.kubectl(None, "setup");
        let rg = resource_group_crd();
        k.ok(&["apply", "--server-side", "-f", rg.to_str().expect("utf-8")]);
        for crd in CHECK_CRDS {
            k.ok_stdin(&["apply", "--server-side", "-f", "-"], crd);
        }
        k.ok(&[
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd",
            "--all",
        ]);
        Some((
            backend,
            Real {
                _proxy: proxy,
                _cluster: cluster,
            },
        ))
    }

    /// A kubectl with its own cache, defaulting to `namespace` when given.
    fn kubectl(&self, namespace: Option<&str>, label: &str) -> Kubectl {
        let kubeconfig = self.scratch.path().join(format!("{label}.kubeconfig"));
        std::fs::copy(&self.kubeconfig, &kubeconfig).expect("copy the kubeconfig");
        let k = Kubectl {
            kubeconfig,
            cache_dir: self.scratch.path().join(format!("{label}-cache")),
        };
        if let Some(ns) = namespace {
            k.ok(&[
                "config",
                "set-context",
                "--current",
                &format!("--namespace={ns}"),
            ]);
        }
        k
    }

    /// The view of this server for check `check`: its namespace (from its name) is created.
    pub fn target(&self, check: &str) -> Target {
        let ns = namespace_for(check);
        let k = self.kubectl(Some(&ns), &ns);
        k.ok(&["create", "namespace", &ns]);
        Target {
            k,
            ns,
            addr: self.addr.clone(),
            wait: self.wait,
        }
    }
}

/// A check's namespace: its name as a DNS label, short enough to take a suffix.
pub fn namespace_for(check: &str) -> String {
    let name: String = check
        .chars()
        .take(40)
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    name.trim_end_matches('-').to_string()
}

/// What a check sees of one server.
pub struct Target {
    /// kubectl, defaulting to [`Target::ns`].
    pub k: Kubectl,
    /// The check's own namespace.
    pub ns: String,
    addr: String,
    /// How long to wait for work a controller does (garbage collection, namespace deletion).
    pub wait: Duration,
}

impl Target {
    /// One raw HTTP/1.1 request.
    pub fn http(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> HttpResponse {
        http(&self.addr, method, path, content_type, body)
    }

    /// Installs a CRD (server-side apply) and waits until it is Established and served.
    pub fn install_crd(&self, manifest: &str, name: &str, list_path: &str) {
        self.k
            .ok_stdin(&["apply", "--server-side", "-f", "-"], manifest);
        self.k.ok(&[
            "wait",
            "--for=condition=Established",
            "--timeout=20s",
            &format!("crd/{name}"),
        ]);
        poll_until(T, &format!("{name} served"), || {
            (self.http("GET", list_path, None, b"").status == 200).then_some(())
        });
    }

    /// `--timeout=…` for a kubectl command that waits for a controller.
    pub fn timeout_arg(&self) -> String {
        format!("--timeout={}s", self.wait.as_secs())
    }
}

/// Runs `check` on its own fresh local server (the per-check tests `local::NAME`). A check
/// declared to fail on the local server must fail there, and its failure is shown.
pub fn on_local_server(name: &str, check: fn(&Target)) {
    let server = Server::start();
    let backend = Backend::local(&server);
    let outcome = run_check(&backend, name, check);
    let declared = super::both::declared();
    let expected_to_fail = declared.get(name).is_some_and(|d| {
        matches!(
            d.fails_on,
            super::report::FailsOn::Local | super::report::FailsOn::Both
        )
    });
    match outcome {
        Outcome::Failed(why) if expected_to_fail => {
            eprintln!("{name} fails on the local server, as declared: {why}")
        }
        Outcome::Failed(why) => panic!("{why}\nserver log:\n{}", server.log()),
        _ if expected_to_fail => panic!(
            "{name} passes on the local server, but known-differences.yaml declares it failing \
             there: update the table"
        ),
        _ => {}
    }
}

/// Runs one check on `backend` in its own namespace; a failure is its panic's message.
pub fn run_check(backend: &Backend, name: &str, check: fn(&Target)) -> Outcome {
    match catch_unwind(AssertUnwindSafe(|| check(&backend.target(name)))) {
        Ok(()) => Outcome::Ok,
        Err(panic) => Outcome::Failed(
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic without a message".to_string()),
        ),
    }
}

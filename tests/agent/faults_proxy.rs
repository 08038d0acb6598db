//! Faults between the agent and an API server it reaches with `--kubeconfig`: the loopback fault
//! proxy ([`common::fault_proxy`]) in front of the server fails 20% of the resource requests
//! (429 with `Retry-After`, 500, 503, 504, connection resets, watches ended with 410 Gone or cut),
//! and the server itself is restarted once mid-run. The fleet must converge to exactly the objects
//! of a fault-free run through the same proxy: nothing lost, duplicated or orphaned, and a second
//! run with faults changes no uid.
//!
//! The scenario is written against [`ApiServer`], so it runs on any server behind the proxy:
//! `control-plane serve --simulate-azure`, and a real kube-apiserver with `aro-gitops
//! azure-simulator` beside it.

use super::faults::{Live, assert_same_objects, dump};
use super::*;
use common::fault_proxy::{Fault, FaultProxy, Upstream};
use common::fleet::Fleet;
use common::kubectl::Server;
use common::write_log;
use std::collections::BTreeMap;

/// An API server the scenario runs the agent against, behind the proxy.
pub trait ApiServer: Send {
    /// Where the proxy forwards to.
    fn upstream(&self) -> Upstream;
    /// The agent's bearer token on this server (`None`: the server takes no credentials).
    fn token(&self) -> Option<String>;
    /// A client that reads every object, straight to the server (no proxy).
    fn reader(&self) -> kube::Client;
    /// The parts restarted mid-run, each once, with how many requests (more) the proxy sees
    /// before each.
    fn restartable(&self) -> Vec<(&'static str, u64)>;
    /// Whether a run converges here (something plays ASO), or stops at step 1 at its timeout.
    fn converges(&self) -> bool;
    /// The agent's further arguments on this server.
    fn agent_args(&self) -> &'static [&'static str] {
        &[]
    }
    /// Of the live objects, those the comparison is about.
    fn relevant(&self, live: Live) -> Live {
        live
    }
    /// Restarts `part`, returning when the server answers again.
    fn restart(&mut self, part: &str);
}

/// `aro-gitops control-plane serve --simulate-azure --sim-delay 0s` (no credentials; the store
/// and the server are one process, restarted whole).
struct Served(Option<Server>);

impl Served {
    fn start() -> Served {
        Served(Some(Server::start_with_args(&[
            "--simulate-azure",
            "--sim-delay",
            "0s",
        ])))
    }

    fn server(&self) -> &Server {
        self.0.as_ref().expect("a server")
    }
}

impl ApiServer for Served {
    fn upstream(&self) -> Upstream {
        Upstream {
            url: self.server().url.clone(),
            ca_pem: None,
        }
    }

    fn token(&self) -> Option<String> {
        None
    }

    fn reader(&self) -> kube::Client {
        kube::Client::try_from(kube::Config::new(self.server().url.parse().expect("a URL")))
            .expect("a client")
    }

    fn restartable(&self) -> Vec<(&'static str, u64)> {
        vec![("control-plane", 150)]
    }

    fn converges(&self) -> bool {
        true
    }

    fn restart(&mut self, _part: &str) {
        let server = self.0.take().expect("a server");
        self.0 = Some(server.restart());
    }
}

/// What one run through the proxy left: the live objects, the faults injected, the output, and
/// the restarts the run ended before (done after it).
struct Outcome {
    live: Live,
    faults: String,
    injected: BTreeMap<Fault, u64>,
    writes: BTreeMap<String, u64>,
    not_mid_run: Vec<(&'static str, u64)>,
}

/// `aro-gitops run --once` on `fleet` through a proxy to `server` at `rate`, restarting each of
/// `restarts` once the proxy has seen the given number of requests more (a kube-apiserver out of
/// the proxy's rotation until its `/readyz`, as behind a cluster's load balancer). When the run
/// ends before a later restart point, that part is restarted after the run and named in
/// [`Outcome::not_mid_run`] (the caller restarts it during its next run).
async fn run_through_proxy<S: ApiServer>(
    server: &mut S,
    fleet: &Fleet,
    proxy: &FaultProxy,
    restarts: &[(&'static str, u64)],
) -> Outcome {
    let kubeconfig = proxy.kubeconfig(
        &fleet.state.with_extension("kubeconfig"),
        server.token().as_deref(),
    );
    let (repo, state) = (fleet.repo.clone(), fleet.state.clone());
    let timeout = if server.converges() { "300s" } else { "45s" };
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
        .args(["run", "--once", "--timeout", timeout])
        .args(server.agent_args())
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--repo")
        .arg(&repo)
        .arg("--state")
        .arg(&state)
        .env("ARO_GITOPS_LOG", "warn")
        .env("NO_COLOR", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("aro-gitops starts");
    let waiting = tokio::task::spawn_blocking(move || child.wait_with_output());
    let mut seen = proxy.requests();
    let mut not_mid_run = Vec::new();
    for &(part, after) in restarts {
        let at = seen + after;
        common::eventually(
            Duration::from_secs(300),
            &format!("{after} more requests before restarting {part}"),
            || async { (proxy.requests() >= at || waiting.is_finished()).then_some(()) },
        )
        .await;
        if waiting.is_finished() {
            eprintln!(
                "the run ended before {part} was restarted, after {} requests",
                proxy.requests()
            );
            not_mid_run.push((part, after));
        } else {
            eprintln!("restarting {part} after {} requests", proxy.requests());
        }
        // A kube-apiserver answers before it is ready (403 until its RBAC cache syncs); the
        // proxy, like a cluster's load balancer, sends it nothing until `/readyz`.
        let health_checked = part == "kube-apiserver";
        proxy.set_in_rotation(!health_checked);
        tokio::task::block_in_place(|| server.restart(part));
        proxy.set_in_rotation(true);
        seen = proxy.requests();
    }
    let out = waiting.await.expect("joined").expect("aro-gitops ran");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let converges = server.converges();
    assert!(
        out.status.success() || !converges,
        "the run did not converge ({}):\n{stdout}\n{stderr}",
        proxy.line()
    );
    for unit in [DEV, PROD] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{unit} ")))
            .unwrap_or_else(|| panic!("{unit} in the summary:\n{stdout}\n{stderr}"));
        assert!(
            row.contains(" Converged ") || !converges,
            "{row}\n{stdout}\n{stderr}"
        );
    }
    Outcome {
        live: server.relevant(dump(server.reader()).await),
        faults: proxy.line(),
        injected: proxy.injected(),
        writes: proxy.take_writes(),
        not_mid_run,
    }
}

/// The scenario: a fault-free run on one server, a run with 20% faults (and each restartable part
/// restarted once mid-run) on another, the same objects; then a second faulty run on the second
/// server keeps every uid and object.
async fn faults_change_nothing<S: ApiServer>(start: impl Fn() -> Option<S>) {
    // One commit for both runs: the inventories name it.
    let (clean_fleet, _) = Fleet::git();
    let fleet = Fleet::at(
        clean_fleet.repo.clone(),
        clean_fleet.state.with_file_name("state-faulty"),
    );
    let Some(mut clean_server) = start() else {
        return; // the real-server tests are opted out (ARO_GITOPS_SKIP_REAL_CLUSTER)
    };
    let proxy = FaultProxy::start(&clean_server.upstream(), 0.0, 7).await;
    let clean = run_through_proxy(&mut clean_server, &clean_fleet, &proxy, &[]).await;
    // Every write of the fault-free run from empty, named; none leaves its object as it was.
    let writes = proxy.take_write_log();
    eprintln!(
        "the fault-free run's {} writes, by namespace:\n{}",
        writes.len(),
        write_log::table(&writes)
    );
    let unchanged: Vec<String> = writes
        .iter()
        .filter(|w| w.unchanged)
        .map(|w| format!("{} ({})", write_log::what(w), w.path))
        .collect();
    assert!(
        unchanged.is_empty(),
        "writes that left their object as it was: {unchanged:#?}"
    );
    drop(proxy);
    drop(clean_server);
    // At least the first step's objects (a ResourceGroup per cluster) were applied.
    assert!(
        clean
            .live
            .keys()
            .filter(|k| k.contains(" ResourceGroup "))
            .count()
            >= 2,
        "{:#?}",
        clean.live.keys()
    );
    eprintln!("fault-free run: {} objects", clean.live.len());

    let mut server = start().expect("started as the first");
    let proxy = FaultProxy::start(&server.upstream(), 0.2, 7).await;
    let restarts = server.restartable();
    let faulty = run_through_proxy(&mut server, &fleet, &proxy, &restarts).await;
    eprintln!("first run with faults: {}", faulty.faults);
    for kind in [
        Fault::TooManyRequests,
        Fault::InternalError,
        Fault::Unavailable,
        Fault::Timeout,
        Fault::Reset,
    ] {
        assert!(
            faulty.injected.get(&kind).copied().unwrap_or(0) > 0,
            "every kind of fault on a request: {}",
            faulty.faults
        );
    }
    assert_same_objects(
        &clean.live,
        &faulty.live,
        "20% faults through the proxy, restarts",
    );

    // Again with faults (and the restarts the first run ended before): every object keeps its uid
    // and content.
    let again = run_through_proxy(&mut server, &fleet, &proxy, &faulty.not_mid_run).await;
    assert!(
        faulty.not_mid_run.is_empty() || again.not_mid_run.len() < restarts.len(),
        "no part was restarted during a run: {:?}",
        again.not_mid_run
    );
    eprintln!(
        "second run with faults: {}; its writes: {:?}",
        again.faults, again.writes
    );
    assert_same_objects(&faulty.live, &again.live, "a second run with faults");
    for (key, (uid, _)) in &faulty.live {
        assert_eq!(
            &again.live[key].0, uid,
            "{key} was created again (a new uid)"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_a_fault_proxy_to_a_served_control_plane_the_fleet_converges_to_the_same_objects() {
    faults_change_nothing(|| Some(Served::start())).await;
}

/// A real kube-apiserver, etcd and kube-controller-manager (`scripts/real-cluster up`), with the
/// CRDs a management cluster has; the agent is a ServiceAccount bound to cluster-admin (the deploy
/// base's own permissions are tested in `real_server.rs`), its token passed through the proxy.
/// `aro-gitops azure-simulator` plays ASO straight to the server (not through the proxy: the faults
/// are the agent's), and the agent finds it with `--use-azure-simulator`, so the fleet converges.
struct Real {
    // Dropped before the cluster: the simulator ends first.
    _simulator: common::real_examples::Simulator,
    cluster: common::real_cluster::RealCluster,
    token: String,
    upstream: Upstream,
    reader: kube::Client,
}

impl Real {
    async fn start() -> Option<Real> {
        let cluster = tokio::task::block_in_place(common::real_cluster::RealCluster::start)?;
        tokio::task::block_in_place(|| {
            cluster.install_crds();
            cluster.kubectl(&["create", "serviceaccount", "fault-agent", "-n", "default"]);
            cluster.kubectl(&[
                "create",
                "clusterrolebinding",
                "fault-agent",
                "--clusterrole=cluster-admin",
                "--serviceaccount=default:fault-agent",
            ]);
        });
        let kubeconfig = tokio::task::block_in_place(|| {
            cluster.service_account_kubeconfig("default", "fault-agent")
        });
        let kc = kube::config::Kubeconfig::read_from(&kubeconfig).expect("the kubeconfig");
        let named = &kc.clusters[0];
        let c = named.cluster.as_ref().expect("a cluster");
        let ca = c
            .certificate_authority_data
            .as_ref()
            .map(|d| {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD
                    .decode(d)
                    .expect("base64")
            })
            .or_else(|| {
                c.certificate_authority
                    .as_ref()
                    .map(|f| std::fs::read(f).expect("the CA file"))
            });
        // The token as the kubeconfig holds it (kube keeps it as a secret string).
        let text = std::fs::read_to_string(&kubeconfig).expect("the kubeconfig");
        let token = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("token: "))
            .map(|t| t.trim().trim_matches('"').to_string())
            .expect("a token");
        let upstream = Upstream {
            url: c.server.clone().expect("a server"),
            ca_pem: ca,
        };
        let reader = common::real_cluster::client_for(&cluster.admin_kubeconfig()).await;
        let simulator = tokio::task::block_in_place(|| {
            common::real_examples::Simulator::start(&cluster.admin_kubeconfig()).0
        });
        Some(Real {
            _simulator: simulator,
            cluster,
            token,
            upstream,
            reader,
        })
    }
}

impl ApiServer for Real {
    fn upstream(&self) -> Upstream {
        self.upstream.clone()
    }

    fn token(&self) -> Option<String> {
        Some(self.token.clone())
    }

    fn reader(&self) -> kube::Client {
        self.reader.clone()
    }

    fn restartable(&self) -> Vec<(&'static str, u64)> {
        vec![("kube-apiserver", 40), ("etcd", 20)]
    }

    fn converges(&self) -> bool {
        true
    }

    fn agent_args(&self) -> &'static [&'static str] {
        &["--use-azure-simulator"]
    }

    /// The objects of the fleet's namespaces and the agent's, and its Namespaces, but the ones
    /// kube-controller-manager makes in every namespace (its CA bundle, the default account).
    fn relevant(&self, live: Live) -> Live {
        live.into_iter()
            .filter(|(key, _)| {
                let ours = ["aro-dev", "aro-prod", "aro-gitops-system"];
                let namespaced = ours.iter().any(|ns| key.contains(&format!(" {ns}/")));
                let namespace = ours.iter().any(|ns| key == &format!("v1 Namespace /{ns}"));
                // What the simulator publishes about itself (its address, its Lease) is not the fleet's.
                let simulator = key.ends_with("/aro-gitops-azure-simulator");
                let made = simulator
                    || key.ends_with("/kube-root-ca.crt")
                    || key.ends_with(" ServiceAccount /default")
                    || key.contains(" ServiceAccount ") && key.ends_with("/default");
                (namespaced || namespace) && !made
            })
            .collect()
    }

    fn restart(&mut self, part: &str) {
        self.cluster.restart(part);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_a_fault_proxy_to_a_real_kube_apiserver_the_fleet_converges_to_the_same_objects() {
    faults_change_nothing(|| {
        tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(Real::start()))
    })
    .await;
}

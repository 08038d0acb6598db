//! Faults between the agent and an API server it reaches with `--kubeconfig`: the loopback fault
//! proxy ([`common::fault_proxy`]) in front of the server fails 20% of the resource requests
//! (429 with `Retry-After`, 500, 503, 504, connection resets, watches ended with 410 Gone or cut),
//! and the server itself is restarted once mid-run. The fleet must converge to exactly the objects
//! of a fault-free run through the same proxy: nothing lost, duplicated or orphaned, and a second
//! run with faults changes no uid.
//!
//! The scenario is written against [`ApiServer`], so it runs on any server behind the proxy:
//! `control-plane serve --simulate-azure` here.

use super::faults::{Live, assert_same_objects, dump};
use super::*;
use common::fault_proxy::{Fault, FaultProxy, Upstream};
use common::fleet::Fleet;
use common::kubectl::Server;
use std::collections::BTreeMap;

/// An API server the scenario runs the agent against, behind the proxy.
pub trait ApiServer: Send {
    /// Where the proxy forwards to.
    fn upstream(&self) -> Upstream;
    /// The agent's bearer token on this server (`None`: the server takes no credentials).
    fn token(&self) -> Option<String>;
    /// A client that reads every object, straight to the server (no proxy).
    fn reader(&self) -> kube::Client;
    /// The parts that can be restarted mid-run, each once.
    fn restartable(&self) -> Vec<&'static str>;
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

    fn restartable(&self) -> Vec<&'static str> {
        vec!["control-plane"]
    }

    fn restart(&mut self, _part: &str) {
        let server = self.0.take().expect("a server");
        self.0 = Some(server.restart());
    }
}

/// What one run through the proxy left: the live objects, the faults injected, the output.
struct Outcome {
    live: Live,
    faults: String,
    injected: BTreeMap<Fault, u64>,
    writes: BTreeMap<String, u64>,
}

/// `aro-gitops run --once` on `fleet` through a proxy to `server` at `rate`, restarting each of
/// `restarts` once the proxy has seen the given number of requests more.
async fn run_through_proxy<S: ApiServer>(
    server: &mut S,
    fleet: &Fleet,
    proxy: &FaultProxy,
    restarts: &[(&str, u64)],
) -> Outcome {
    let kubeconfig = proxy.kubeconfig(
        &fleet.state.with_extension("kubeconfig"),
        server.token().as_deref(),
    );
    let (repo, state) = (fleet.repo.clone(), fleet.state.clone());
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
        .args(["run", "--once", "--timeout", "300s", "--kubeconfig"])
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
    for (part, after) in restarts {
        let at = seen + after;
        common::eventually(
            Duration::from_secs(300),
            &format!("{after} more requests before restarting {part}"),
            || async { (proxy.requests() >= at || waiting.is_finished()).then_some(()) },
        )
        .await;
        assert!(
            !waiting.is_finished(),
            "the run ended before {part} was restarted, after {} requests",
            proxy.requests()
        );
        eprintln!("restarting {part} after {} requests", proxy.requests());
        let part = part.to_string();
        tokio::task::block_in_place(|| server.restart(&part));
        seen = proxy.requests();
    }
    let out = waiting.await.expect("joined").expect("aro-gitops ran");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "the run did not converge ({}):\n{stdout}\n{stderr}",
        proxy.line()
    );
    for unit in [DEV, PROD] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{unit} ")))
            .unwrap_or_else(|| panic!("{unit} in the summary:\n{stdout}"));
        assert!(row.contains(" Converged "), "{row}\n{stdout}\n{stderr}");
    }
    Outcome {
        live: dump(server.reader()).await,
        faults: proxy.line(),
        injected: proxy.injected(),
        writes: proxy.take_writes(),
    }
}

/// The scenario: a fault-free run on one server, a run with 20% faults (and each restartable part
/// restarted once mid-run) on another, the same objects; then a second faulty run on the second
/// server keeps every uid and object.
async fn faults_change_nothing<S: ApiServer>(start: impl Fn() -> S) {
    // One commit for both runs: the inventories name it.
    let (clean_fleet, _) = Fleet::git();
    let fleet = Fleet::at(
        clean_fleet.repo.clone(),
        clean_fleet.state.with_file_name("state-faulty"),
    );
    let mut clean_server = start();
    let proxy = FaultProxy::start(&clean_server.upstream(), 0.0, 7).await;
    let clean = run_through_proxy(&mut clean_server, &clean_fleet, &proxy, &[]).await;
    drop(proxy);
    drop(clean_server);
    assert!(!clean.live.is_empty());

    let mut server = start();
    let proxy = FaultProxy::start(&server.upstream(), 0.2, 7).await;
    let restarts: Vec<(&str, u64)> = server
        .restartable()
        .into_iter()
        .enumerate()
        .map(|(i, part)| (part, 150 + 100 * i as u64))
        .collect();
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

    // Again with faults: every object keeps its uid and content.
    let again = run_through_proxy(&mut server, &fleet, &proxy, &[]).await;
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
    faults_change_nothing(Served::start).await;
}

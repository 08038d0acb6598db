//! Faults (`--inject-faults RATE --fault-seed N`) and crashes: the binary on a fleet in real git,
//! on the embedded control plane (Azure simulated, no provisioning delay). With a share of its
//! requests failed (500, 409, 429, timeouts, dropped watches) a run converges to exactly the live
//! objects a fault-free run makes; killed with SIGKILL at seeded moments and restarted each time,
//! it ends converged with no orphan and no object created twice (every object keeps the uid it was
//! first seen with).
//!
//! The example fleet and the 50-cluster fleet both run in the suite. The two 50-cluster tests are
//! the suite's longest, so they share one generated fleet and its fault-free run (whichever starts
//! first makes it; the other waits for it).

use crate::common::fleet::{Fleet, aro_gitops_command};
use aro_gitops::controlplane::faults::splitmix64;
use aro_gitops::controlplane::{Config, ControlPlane};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// `aro-gitops run --once` on `fleet` with the state directory `state` and `extra` arguments.
fn command(fleet: &Fleet, state: &Path, timeout: &str, extra: &[&str]) -> Command {
    let mut c = aro_gitops_command();
    c.args(["run", "--once", "--sim-delay", "0s", "--timeout", timeout])
        .args(extra)
        .arg("--repo")
        .arg(&fleet.url)
        .arg("--state")
        .arg(state);
    c
}

/// A run that must converge; returns its stdout and how long it took.
fn converge(fleet: &Fleet, state: &Path, timeout: &str, extra: &[&str]) -> (String, Duration) {
    let start = Instant::now();
    let out = command(fleet, state, timeout, extra)
        .output()
        .expect("aro-gitops runs");
    let took = start.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the run {extra:?} did not converge:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (stdout, took)
}

/// Every live object of a state's embedded control plane, by `apiVersion kind namespace/name`:
/// its uid and what a run decides of it (all but `status` and the server's metadata). Events (a
/// record of what happened, named at random) and Leases are left out.
pub(super) type Live = BTreeMap<String, (String, Value)>;

fn live(state: &Path) -> Live {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let dir = state.join("control-plane");
    let out = rt.block_on(async {
        let cp = open(&dir).await;
        let objects = dump(cp.client()).await;
        let _ = cp.close(Duration::from_secs(10)).await;
        objects
    });
    drop(rt);
    out
}

/// Opens a control plane's store, waiting until the process that held it let go.
async fn open(dir: &Path) -> ControlPlane {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut config = Config::new(dir);
        config.preload_crds = false;
        match ControlPlane::open(config) {
            Ok(cp) => return cp,
            Err(e) => assert!(Instant::now() < deadline, "the store stayed locked: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub(super) async fn dump(client: kube::Client) -> Live {
    use kube::api::{Api, DynamicObject, ListParams};
    let discovery = kube::Discovery::new(client.clone())
        .run()
        .await
        .expect("discovery");
    let mut out = Live::new();
    for group in discovery.groups() {
        for (resource, caps) in group.recommended_resources() {
            if !caps.supports_operation(kube::discovery::verbs::LIST)
                || ["Event", "Lease"].contains(&resource.kind.as_str())
            {
                continue;
            }
            let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
            for obj in api.list(&ListParams::default()).await.expect("a LIST") {
                let mut v = serde_json::to_value(&obj).expect("JSON");
                let meta = &obj.metadata;
                let key = format!(
                    "{} {} {}/{}",
                    resource.api_version,
                    resource.kind,
                    meta.namespace.clone().unwrap_or_default(),
                    meta.name.clone().unwrap_or_default()
                );
                let map = v.as_object_mut().expect("an object");
                // kube-apiserver leaves a list's items without their kind; the comparison wants it.
                map.insert("kind".into(), Value::String(resource.kind.clone()));
                map.remove("status");
                let m = map.remove("metadata").unwrap_or_default();
                map.insert(
                    "metadata".into(),
                    serde_json::json!({"labels": m.get("labels"), "annotations": m.get("annotations"),
                        "finalizers": m.get("finalizers"),
                        "owners": m.get("ownerReferences").and_then(Value::as_array).map(|o| o.iter()
                            .map(|r| format!("{} {}", r["kind"], r["name"])).collect::<Vec<_>>())}),
                );
                out.insert(key, (meta.uid.clone().unwrap_or_default(), v));
            }
        }
    }
    out
}

/// `v` without the values a fresh state makes anew on every run: the etcd key's version the agent
/// creates in the simulated Key Vault, the simulator's loopback addresses, the values of Secrets
/// (the simulator's guest kubeconfigs and CAs are made anew; their keys are kept), and the hashes
/// of what was applied in the inventories (they cover the owners' uids).
fn normalised(v: &Value) -> String {
    let mut v = v.clone();
    if v["kind"] == "Secret"
        && let Some(data) = v.get_mut("data").and_then(Value::as_object_mut)
    {
        data.values_mut().for_each(|d| *d = Value::Null);
    }
    let text = v.to_string();
    let applied = regex::Regex::new(r#"applied\\":\\"[0-9a-f]{32}"#).expect("a regex");
    let text = applied.replace_all(&text, "applied:<hash>");
    let key = regex::Regex::new(r#"(keyVersion|version)":"[0-9a-f]{32}""#).expect("a regex");
    let text = key.replace_all(&text, r#"$1":"<key version>""#);
    let address = regex::Regex::new(r"127\.0\.0\.1:[0-9]+").expect("a regex");
    address.replace_all(&text, "<loopback>").into_owned()
}

/// Asserts that `got` holds exactly the objects of `want`, each with the same content.
pub(super) fn assert_same_objects(want: &Live, got: &Live, what: &str) {
    let missing: Vec<&String> = want.keys().filter(|k| !got.contains_key(*k)).collect();
    let extra: Vec<&String> = got.keys().filter(|k| !want.contains_key(*k)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{what}: live objects differ from the fault-free run's: missing {missing:#?}, extra (orphans or duplicates) {extra:#?}"
    );
    let differ: Vec<String> = want
        .iter()
        .filter(|(key, (_, content))| normalised(&got[*key].1) != normalised(content))
        .map(|(key, (_, content))| {
            format!(
                "{key}:\n  want {}\n  got  {}",
                normalised(content),
                normalised(&got[key].1)
            )
        })
        .collect();
    assert!(
        differ.is_empty(),
        "{what}: objects differ from the fault-free run's:\n{}",
        differ.join("\n")
    );
}

/// The `faults injected: ...` line of a run's output, parsed: the total and the line.
fn faults_line(stdout: &str) -> (u64, String) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("faults injected: "))
        .unwrap_or_else(|| panic!("no faults line:\n{stdout}"))
        .to_string();
    let total = line["faults injected: ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a count");
    (total, line)
}

fn converged_units(stdout: &str) -> usize {
    stdout
        .lines()
        .filter(|l| l.starts_with("clusters/") && l.contains(" Converged "))
        .count()
}

/// A fleet and its fault-free run: the state it left (under the fleet's tempdir, `clean`), its
/// live objects and how long it took.
struct Clean {
    fleet: Fleet,
    took: Duration,
    live: Live,
}

impl Clean {
    fn run(fleet: Fleet, clusters: usize, timeout: &str) -> Clean {
        let (out, took) = converge(&fleet, &fleet.dir().join("clean"), timeout, &[]);
        assert_eq!(converged_units(&out), clusters, "{out}");
        let live = live(&fleet.dir().join("clean"));
        Clean { fleet, took, live }
    }

    /// The 50-cluster fleet after its fault-free run, shared by the tests running at the same
    /// time (its tempdir goes when the last of them drops it).
    fn fleet_of_50() -> Arc<Clean> {
        static SHARED: Mutex<Weak<Clean>> = Mutex::new(Weak::new());
        let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(clean) = shared.upgrade() {
            return clean;
        }
        let fleet = Fleet::generated(&["--clusters", "50"]);
        let clean = Arc::new(Clean::run(fleet, 50, "20m"));
        *shared = Arc::downgrade(&clean);
        clean
    }

    /// A state directory of this fleet's, for one test's runs.
    fn state(&self, name: &str) -> PathBuf {
        self.fleet.dir().join(name)
    }
}

/// A fault-free run and a run with 20% faults from seed 7 end with the same live objects.
fn faults_change_nothing(clean: &Clean, clusters: usize, timeout: &str) {
    let (fleet, clean_took) = (&clean.fleet, clean.took);
    let faulty_state = clean.state("faulty");
    let args = ["--inject-faults", "0.2", "--fault-seed", "7"];
    let (faulty, faulty_took) = converge(fleet, &faulty_state, timeout, &args);
    assert_eq!(converged_units(&faulty), clusters, "{faulty}");
    let (injected, line) = faults_line(&faulty);
    assert!(injected > 0, "{line}");
    for kind in ["500: ", "409: ", "429: ", "timeout: "] {
        assert!(
            !line.contains(&format!("{kind}0")),
            "every kind of fault: {line}"
        );
    }
    eprintln!(
        "{clusters} clusters: fault-free {clean_took:?}, with 20% faults {faulty_took:?}; {line}"
    );
    assert_same_objects(&clean.live, &live(&faulty_state), "20% faults");
    // A second run with faults finds nothing to do: faults made nothing half-done.
    let (again, _) = converge(fleet, &faulty_state, timeout, &args);
    assert_eq!(converged_units(&again), clusters, "{again}");
}

#[test]
fn the_example_fleet_converges_to_the_same_objects_with_20_percent_faults() {
    faults_change_nothing(&Clean::run(Fleet::git().0, 2, "120s"), 2, "120s");
}

#[test]
fn a_fleet_of_50_converges_to_the_same_objects_with_20_percent_faults() {
    faults_change_nothing(&Clean::fleet_of_50(), 50, "20m");
}

/// The same seed gives the same decisions, request number by request number (concurrent requests
/// take their numbers in the order they arrive, so which request gets which decision may vary).
#[test]
fn fault_decisions_follow_the_seed() {
    use aro_gitops::controlplane::faults::{RequestClass, decide};
    let seq = |seed| -> Vec<_> {
        (0..500)
            .map(|n| decide(seed, n, 0.2, RequestClass::Write))
            .collect()
    };
    assert_eq!(seq(7), seq(7));
    assert_ne!(seq(7), seq(8));
}

/// Kills `run --once` with SIGKILL `kills` times, at seeded moments spread over the time a whole
/// run takes, restarting each time on the same state; checks after each kill that no object was
/// created twice (each keeps the uid it was first seen with), then that a last run converges
/// every unit to exactly the objects of an uninterrupted run.
fn killed_runs_end_converged(clean: &Clean, clusters: usize, kills: usize, timeout: &str) {
    let (fleet, clean_took, want) = (&clean.fleet, clean.took, &clean.live);
    let state = clean.state("killed");
    let mut inspecting = Duration::ZERO;
    let mut uids: BTreeMap<String, String> = BTreeMap::new();
    let mut seed = 15u64;
    // The moments: gaps whose mean makes the kills cover one uninterrupted run's time.
    let mean_gap = clean_took.as_millis() as u64 / kills as u64;
    let start = Instant::now();
    let (mut killed, mut finished) = (0, 0);
    for i in 0..kills {
        seed = splitmix64(seed);
        let gap = Duration::from_millis(50 + seed % (2 * mean_gap.max(100)));
        let log = std::fs::File::create(fleet.dir().join(format!("kill-{i}.log"))).expect("a log");
        let mut child = command(fleet, &state, timeout, &[])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("aro-gitops starts");
        let deadline = Instant::now() + gap;
        let exited = loop {
            if let Some(status) = child.try_wait().expect("the child's status") {
                break Some(status);
            }
            if Instant::now() >= deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        match exited {
            Some(_) => finished += 1,
            None => {
                child.kill().expect("SIGKILL");
                child.wait().expect("the killed child is reaped");
                killed += 1;
            }
        }
        let inspected = Instant::now();
        let now = live(&state);
        inspecting += inspected.elapsed();
        for (key, (uid, _)) in now {
            let first = uids.entry(key.clone()).or_insert_with(|| uid.clone());
            assert_eq!(
                *first, uid,
                "{key} was created twice (a new uid after kill {i})"
            );
        }
    }
    let (last, _) = converge(fleet, &state, timeout, &[]);
    assert_eq!(converged_units(&last), clusters, "{last}");
    let got = live(&state);
    assert_same_objects(want, &got, "after the kills");
    for (key, (uid, _)) in &got {
        assert_eq!(uids.get(key).unwrap_or(uid), uid, "{key} was created twice");
    }
    eprintln!(
        "{clusters} clusters: {killed} SIGKILLs survived ({finished} runs ended before their kill) over {:?} ({inspecting:?} of it reading the store between kills); an uninterrupted run takes {clean_took:?}",
        start.elapsed()
    );
    assert!(
        killed > kills / 2,
        "most runs were killed: {killed}/{kills}"
    );
}

#[test]
fn the_example_fleet_survives_20_sigkills() {
    killed_runs_end_converged(&Clean::run(Fleet::git().0, 2, "120s"), 2, 20, "120s");
}

#[test]
fn a_fleet_of_50_survives_50_sigkills() {
    killed_runs_end_converged(&Clean::fleet_of_50(), 50, 50, "20m");
}

/// On a cluster given by a kubeconfig (or in-cluster) the agent injects nothing: it refuses, and
/// says where faults can be injected.
#[test]
fn faults_need_the_embedded_control_plane() {
    let (fleet, _) = Fleet::git();
    let out = command(
        &fleet,
        &fleet.dir().join("s"),
        "10s",
        &[
            "--kubeconfig",
            "/nonexistent/kubeconfig",
            "--inject-faults",
            "0.2",
        ],
    )
    .output()
    .expect("aro-gitops runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("--inject-faults works only on the embedded local control plane")
            && stderr.contains("control-plane serve"),
        "{stderr}"
    );
}

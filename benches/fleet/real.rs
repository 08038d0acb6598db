//! The fleet on a real kube-apiserver and etcd (issue 25): for each size a fresh cluster from
//! `scripts/real-cluster up` (through `tests/common/real_cluster.rs`, so the bench installs the
//! same CRDs as the real-server tests: CAPZ's and ASO's reference CRDs from `../shared/reference`
//! and the project's others), Azure played by `aro-gitops azure-simulator --kubeconfig ADMIN
//! --sim-delay 0s` in its own process, and the agent run as
//! `run --once --kubeconfig ADMIN --use-azure-simulator` under `/usr/bin/time -v`. The peak RSS of
//! kube-apiserver and etcd is their `VmHWM` (`/proc/PID/status`, the pids in the cluster's
//! directory) when the run ends, the simulator's likewise.
//!
//! ASO's CRDs name ASO's conversion webhook (`strategy: Webhook`), which no process here serves:
//! kube-apiserver would refuse every ASO object written in a version other than the storage one
//! ("service azureserviceoperator-webhook-service not found"). The bench switches those CRDs to
//! `strategy: None` once installed (kube-apiserver then converts by rewriting `apiVersion`), so it
//! measures all but the webhook calls a real ASO would answer.
//!
//! With `--real-crds project`, the project's own CRDs (every file of `src/crds`,
//! what `aro-gitops crds` prints: short hand-written ASO schemas, no conversion webhook) are
//! installed instead: fleets that ASO's real schemas refuse (before issue 25's fixes) run there.
//!
//! Step 1 only (`--real-step1`, or when a binary has no `azure-simulator` / no
//! `--use-azure-simulator`): nothing plays ASO, so every unit stops at step 1 of its chain. The
//! agent runs without `time -v`; its wall time is that of the last progress line it printed
//! (the last unit reaching step 1) once no line came for [`QUIET`], when it is stopped with
//! SIGTERM; its peak RSS and CPU are read from `/proc` just before.

use super::common::{ARO_GITOPS, TIME, log_tail, peak_rss_mb_of, run_measured, spawn_lines};
use super::real_cluster::RealCluster;
use super::rows::{Row, Series, row, summary};
use std::path::Path;
use std::process::{Child, Command};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

/// Step 1 only: the run has reached it everywhere when no progress line came for this long.
const QUIET: Duration = Duration::from_secs(20);

/// Whether `bin`'s help has `needle` (what a build can do: `azure-simulator`,
/// `--use-azure-simulator`).
fn has(bin: &str, args: &[&str], needle: &str) -> bool {
    Command::new(bin)
        .args(args)
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(needle))
}

/// Whether the whole run can be measured with `bin` as the agent: a simulator runs (see
/// [`simulator_of`]) and `bin` can use it.
pub fn whole_run_possible(bin: &str) -> bool {
    has(ARO_GITOPS, &["--help"], "azure-simulator")
        && has(bin, &["run", "--help"], "--use-azure-simulator")
}

/// The binary that plays ASO for `bin`: `bin` itself when it has the simulator (so a `--before`
/// build is measured with its own simulator), else this build.
fn simulator_of(bin: &str) -> &str {
    if has(bin, &["--help"], "azure-simulator") {
        bin
    } else {
        ARO_GITOPS
    }
}

/// `aro-gitops azure-simulator` against the cluster, until dropped (SIGTERM).
struct Simulator {
    child: Child,
}

impl Simulator {
    fn start(bin: &str, kubeconfig: &Path) -> Option<Simulator> {
        let (child, lines) = spawn_lines(
            Command::new(bin)
                .args(["--log", "warn", "azure-simulator", "--kubeconfig"])
                .arg(kubeconfig)
                .args(["--sim-delay", "0s"]),
        );
        let sim = Simulator { child };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(l) if l.starts_with("azure simulator: serving on") => break,
                Ok(_) => {}
                Err(_) => return None,
            }
        }
        // The rest of its output is read (and dropped) by `spawn_lines`'s thread.
        std::thread::spawn(move || lines.into_iter().for_each(drop));
        Some(sim)
    }

    fn peak_rss_mb(&self) -> Option<f64> {
        peak_rss_mb_of(self.child.id())
    }
}

impl Drop for Simulator {
    fn drop(&mut self) {
        terminate(&mut self.child, Duration::from_secs(30));
    }
}

/// SIGTERM, then SIGKILL after `grace`.
fn terminate(child: &mut Child, grace: Duration) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let until = Instant::now() + grace;
    while Instant::now() < until {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The pid a component of the cluster runs as (`DIR/COMPONENT.pid`).
fn pid(cluster: &RealCluster, component: &str) -> Option<u32> {
    std::fs::read_to_string(cluster.dir().join(format!("{component}.pid")))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// A process's CPU time so far (`/proc/PID/stat`, user + system, at 100 ticks a second).
fn cpu_s_of(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14 and 15 of the file; the third and after the name is field 3.
    let (utime, stime): (f64, f64) = (f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?);
    Some((utime + stime) / 100.0)
}

/// Every installed CRD converting through a webhook converts with `strategy: None` instead (see
/// the module).
fn without_conversion_webhooks(cluster: &RealCluster) {
    let list: serde_json::Value =
        serde_json::from_str(&cluster.kubectl(&["get", "crd", "-o", "json"]))
            .expect("CRDs as JSON");
    let webhook = |c: &&serde_json::Value| {
        c.pointer("/spec/conversion/strategy")
            .and_then(|s| s.as_str())
            == Some("Webhook")
    };
    for crd in list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(webhook)
    {
        let name = crd["metadata"]["name"].as_str().expect("a CRD's name");
        cluster.kubectl(&[
            "patch",
            "crd",
            name,
            "--type=merge",
            "-p",
            r#"{"spec":{"conversion":{"strategy":"None","webhook":null}}}"#,
        ]);
    }
}

/// What kube-apiserver says about its load: requests rejected by API priority and fairness
/// (429), and the requests it served, from its `/metrics`.
fn apiserver_note(cluster: &RealCluster) -> String {
    let out = cluster.kubectl_output(&["get", "--raw", "/metrics"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let sum = |metric: &str, filter: &dyn Fn(&str) -> bool| -> f64 {
        text.lines()
            .filter(|l| l.starts_with(metric) && filter(l))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .fold(0.0, |a, b| a + b)
    };
    let rejected = sum("apiserver_flowcontrol_rejected_requests_total", &|_| true);
    let total = sum("apiserver_request_total{", &|_| true);
    let code_429 = sum("apiserver_request_total{", &|l| l.contains("code=\"429\""));
    format!(
        "kube-apiserver: {total:.0} requests served, {code_429:.0} answered 429, {rejected:.0} rejected by priority and fairness"
    )
}

/// Which CRDs the cluster gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crds {
    /// CAPZ's and ASO's reference CRDs and the project's others (as the real-server tests).
    Reference,
    /// The project's own (`src/crds`).
    Project,
}

impl Crds {
    pub fn parse(s: &str) -> Option<Crds> {
        match s {
            "reference" => Some(Crds::Reference),
            "project" => Some(Crds::Project),
            _ => None,
        }
    }

    fn install(self, cluster: &RealCluster) {
        match self {
            Crds::Reference => {
                cluster.install_crds();
                without_conversion_webhooks(cluster);
            }
            Crds::Project => {
                let own = super::real_cluster::repo_root().join("src/crds");
                cluster.kubectl(&[
                    "apply",
                    "--server-side",
                    "--field-manager=test-setup",
                    "-f",
                    own.to_str().expect("utf-8 path"),
                ]);
                cluster.kubectl(&[
                    "wait",
                    "--for=condition=Established",
                    "--timeout=60s",
                    "crd",
                    "--all",
                ]);
            }
        }
    }
}

/// How a real-server case runs.
pub struct RealCase<'a> {
    pub timeout: &'a str,
    pub step1: bool,
    pub crds: Crds,
}

/// One real-server case: `bin` as the agent on a fresh cluster with the fleet `repo`.
pub fn real(bin: &str, series: Series, n: usize, repo: &Path, dir: &Path, case: &RealCase) -> Row {
    let (timeout, step1) = (case.timeout, case.step1);
    let state = dir.join("real-agent-state");
    let _ = std::fs::remove_dir_all(&state);
    let whole = !step1 && whole_run_possible(bin);
    eprintln!(
        "fleet bench: {} at {n} clusters on kube-apiserver + etcd ({})...",
        series.name(),
        if whole {
            "the whole run"
        } else {
            "step 1 only: nothing plays ASO"
        }
    );
    let Some(cluster) = RealCluster::start() else {
        return Row::failed(series, n);
    };
    case.crds.install(&cluster);
    let kubeconfig = cluster.admin_kubeconfig();
    let simulator = if whole {
        match Simulator::start(simulator_of(bin), &kubeconfig) {
            Some(s) => Some(s),
            None => {
                eprintln!("fleet bench: `aro-gitops azure-simulator` did not start");
                return Row::failed(series, n);
            }
        }
    } else {
        None
    };
    let cpu = |c: &str| pid(&cluster, c).and_then(cpu_s_of).unwrap_or_default();
    let cpu_before = (cpu("kube-apiserver"), cpu("etcd"));
    let mut args = vec![
        "--log",
        "warn",
        "run",
        "--once",
        "--timeout",
        timeout,
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--repo",
        repo.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
    ];
    if whole {
        args.push("--use-azure-simulator");
    }
    let mut r = if whole {
        let m = run_measured(bin, &args, Path::new(TIME).exists());
        if m.code != Some(0) {
            eprintln!(
                "fleet bench: {} at {n} on the real server exited with {:?}; its last output:\n{}\n{}",
                series.name(),
                m.code,
                log_tail(&m.stdout, 10),
                log_tail(&m.stderr, 20)
            );
        }
        row(series, n, &m)
    } else {
        step_one(bin, &args, series, n)
    };
    r.server_rss_mb = pid(&cluster, "kube-apiserver").and_then(peak_rss_mb_of);
    r.etcd_rss_mb = pid(&cluster, "etcd").and_then(peak_rss_mb_of);
    r.sim_rss_mb = simulator.as_ref().and_then(Simulator::peak_rss_mb);
    eprintln!(
        "fleet bench: {}; CPU during the run: kube-apiserver {:.1} s, etcd {:.1} s",
        apiserver_note(&cluster),
        cpu("kube-apiserver") - cpu_before.0,
        cpu("etcd") - cpu_before.1
    );
    drop(simulator);
    drop(cluster);
    let _ = std::fs::remove_dir_all(&state);
    r
}

/// Step 1 only: the time of the last progress line once the run went quiet (see the module).
fn step_one(bin: &str, args: &[&str], series: Series, n: usize) -> Row {
    let start = Instant::now();
    let (mut child, lines) = spawn_lines(Command::new(bin).args(args));
    let limit = Duration::from_secs(1800);
    let mut last = None;
    let mut stdout = String::new();
    loop {
        match lines.recv_timeout(Duration::from_millis(200)) {
            Ok(l) => {
                if l.contains(": step ") {
                    last = Some(start.elapsed());
                }
                stdout.push_str(&l);
                stdout.push('\n');
            }
            Err(RecvTimeoutError::Timeout) => {
                let quiet = last.is_some_and(|t| start.elapsed() - t >= QUIET);
                if quiet || start.elapsed() >= limit {
                    break;
                }
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    let (rss, cpu) = (peak_rss_mb_of(child.id()), cpu_s_of(child.id()));
    terminate(&mut child, Duration::from_secs(60));
    // The summary and the requests line it printed on the way out.
    while let Ok(l) = lines.recv_timeout(Duration::from_secs(5)) {
        stdout.push_str(&l);
        stdout.push('\n');
    }
    let s = summary(&stdout);
    Row {
        wall_s: last.unwrap_or_default().as_secs_f64(),
        cpu_s: cpu,
        rss_mb: rss,
        reads: s.reads,
        writes: s.writes,
        // Not a whole run: never counted Converged.
        code: None,
        units: s.units,
        converged: 0,
        ..Row::failed(series, n)
    }
}

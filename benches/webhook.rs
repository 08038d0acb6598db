//! Webhook benchmark (issue 14): how long a push takes to reach the cluster when it is delivered by
//! webhook. Run with `cargo bench --bench webhook` (options after `--`: `--clusters N`, default
//! 1000; `--commits K`, default 20; `--workdir DIR` to keep the fleet and state; `--binary PATH`:
//! the agent (and control plane) to measure, e.g. another build for a before/after, default this tree's; `--agent-log
//! FILTER`: the agent's `--log`, default `warn`).
//!
//! A fleet of N clusters from `aro-gitops-fleetgen` in a real git repository with a bare remote,
//! the control plane in its own process (`control-plane serve --simulate-azure --sim-delay 0s`),
//! converged first with `run --once --kubeconfig`. Then a long-running `run --interval 24h
//! --webhook-bind-address ... --metrics-bind-address ...` on the same state: polling never fires,
//! only the webhook triggers a fetch. K times: a commit that changes one cluster (a label of its
//! Namespace, the first object of its dependency order) is pushed; a watch on that Namespace is
//! opened; a signed GitHub push event is POSTed; the time from the POST to the watch seeing the
//! change is that commit's latency. After each cycle `aro_gitops_renders_total` says how many
//! units were rendered again (the target: exactly one), and the status branch on the remote says
//! when the cycle's reports landed (polled from the first write, every 5 ms), in how many commits,
//! and how many report files changed (issue 30: only the changed cluster's two).
//!
//! Target: first write to the changed cluster ≤ 1 s p50 over 20 commits, one render per commit.

mod common;

use common::{ARO_GITOPS, Server, generate_fleet, git, http, log_tail, run_measured, spawn_lines};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use std::path::Path;
use std::process::{Child, Command};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

const TARGET_P50: Duration = Duration::from_secs(1);
const SECRET: &str = "bench-webhook-secret";

struct Options {
    clusters: usize,
    commits: usize,
    workdir: Option<std::path::PathBuf>,
    binary: String,
    agent_log: String,
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    Options {
        clusters: value("--clusters")
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000),
        commits: value("--commits")
            .and_then(|v| v.parse().ok())
            .unwrap_or(20),
        workdir: value("--workdir").map(Into::into),
        binary: value("--binary").unwrap_or_else(|| ARO_GITOPS.to_string()),
        agent_log: value("--agent-log").unwrap_or_else(|| "warn".to_string()),
    }
}

/// The long-running agent: its output lines as they come; killed when dropped.
struct Agent {
    child: Child,
    lines: Receiver<String>,
}

impl Agent {
    fn start(binary: &str, log: &str, args: &[&str]) -> Agent {
        let (child, lines) =
            spawn_lines(Command::new(binary).args(["--log", log, "run"]).args(args));
        Agent { child, lines }
    }

    /// The rest of the first line starting with `prefix` (within `wait`).
    fn line_after(&self, prefix: &str, wait: Duration) -> String {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no line {prefix:?} within {wait:?}"));
            if let Some(rest) = line.strip_prefix(prefix) {
                return rest.to_string();
            }
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A GitHub push event for `repo`'s `main`, signed as GitHub signs it.
fn github_push(addr: &str, repo: &str, after: &str) -> u16 {
    let body = serde_json::json!({
        "ref": "refs/heads/main",
        "after": after,
        "repository": { "clone_url": repo, "html_url": repo },
    })
    .to_string();
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, SECRET.as_bytes());
    let tag = ring::hmac::sign(&key, body.as_bytes());
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    let headers = [
        ("content-type", "application/json".to_string()),
        ("x-github-event", "push".to_string()),
        ("x-hub-signature-256", format!("sha256={hex}")),
    ];
    http(addr, "POST", "/hooks/github", &headers, body.as_bytes())
        .expect("the webhook answers")
        .0
}

/// `aro_gitops_renders_total` now.
fn renders(metrics: &str) -> u64 {
    let (_, body) = http(metrics, "GET", "/metrics", &[], b"").expect("the metrics answer");
    body.lines()
        .find_map(|l| l.strip_prefix("aro_gitops_renders_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no aro_gitops_renders_total in:\n{body}"))
}

/// Adds or changes the label `bench.aro-gitops.dev/commit` of cluster `name`'s Namespace.
fn change_cluster(repo: &Path, name: &str, value: &str) {
    let path = repo.join("clusters").join(name).join("namespace.yaml");
    let text = std::fs::read_to_string(&path).expect("the cluster's namespace.yaml");
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("bench.aro-gitops.dev/commit"))
        .collect();
    let mut out = String::new();
    for line in kept {
        out.push_str(line);
        out.push('\n');
        if line.trim() == "labels:" {
            out.push_str(&format!("    bench.aro-gitops.dev/commit: \"{value}\"\n"));
        }
    }
    std::fs::write(&path, out).unwrap();
}

fn head(repo: &Path) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["rev-parse", "HEAD"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The status branch's tip on the bare remote, if it exists.
fn status_tip(remote: &Path) -> Option<git2::Oid> {
    let repo = git2::Repository::open_bare(remote).ok()?;
    repo.refname_to_id("refs/heads/aro-gitops/status").ok()
}

/// The report commits from `from` to `to` on the remote, and the files they change.
fn report_changes(remote: &Path, from: Option<git2::Oid>, to: Option<git2::Oid>) -> (usize, usize) {
    let (Some(from), Some(to)) = (from, to) else {
        return (0, 0);
    };
    if from == to {
        return (0, 0);
    }
    let repo = git2::Repository::open_bare(remote).expect("the remote");
    let mut walk = repo.revwalk().unwrap();
    walk.push(to).unwrap();
    walk.hide(from).unwrap();
    let commits = walk.count();
    let tree = |oid| repo.find_commit(oid).unwrap().tree().unwrap();
    let diff = repo
        .diff_tree_to_tree(Some(&tree(from)), Some(&tree(to)), None)
        .unwrap();
    (commits, diff.deltas().len())
}

/// Polls the status branch until it leaves `from` (every 5 ms, within `wait`): when it did.
fn status_moved(remote: &Path, from: Option<git2::Oid>, wait: Duration) -> Option<Instant> {
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        if status_tip(remote) != from {
            return Some(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() {
    let o = options();
    let _tmp;
    let work = match &o.workdir {
        Some(d) => {
            std::fs::create_dir_all(d).unwrap();
            d.clone()
        }
        None => {
            _tmp = tempfile::tempdir().unwrap();
            _tmp.path().to_path_buf()
        }
    };
    let repo = work.join(format!("fleet-{}", o.clusters));
    let remote = work.join(format!("fleet-{}.git", o.clusters));
    if !remote.exists() {
        eprintln!("webhook bench: generating {} clusters...", o.clusters);
        generate_fleet(o.clusters, &repo);
        git(
            &work,
            &[
                "clone",
                "-q",
                "--bare",
                repo.to_str().unwrap(),
                remote.to_str().unwrap(),
            ],
        );
        git(
            &repo,
            &["remote", "add", "origin", remote.to_str().unwrap()],
        );
    }
    // A file:// URL, not a path: a local path would also be watched (a commit there fetched
    // without the webhook), and this measures the webhook alone.
    let remote_url = format!("file://{}", remote.display());
    // The build under test serves the control plane too (a bench built in the dev profile, with a
    // release `--binary`, measures the release server).
    let server = Server::start(
        &o.binary,
        &work.join(format!("control-plane-{}", o.clusters)),
        &["--simulate-azure", "--sim-delay", "0s"],
        "aro-gitops local control plane serving",
        Duration::from_secs(300),
    )
    .expect("the control plane serves");
    let kubeconfig = server.kubeconfig.to_str().unwrap().to_string();
    let state = work.join(format!("state-{}", o.clusters));
    let state = state.to_str().unwrap().to_string();
    eprintln!(
        "webhook bench: converging {} clusters with run --once...",
        o.clusters
    );
    let populated = run_measured(
        &o.binary,
        &[
            "--log",
            "warn",
            "run",
            "--once",
            "--timeout",
            "30m",
            "--repo",
            &remote_url,
            "--state",
            &state,
            "--kubeconfig",
            &kubeconfig,
        ],
        false,
    );
    assert_eq!(
        populated.code,
        Some(0),
        "the fleet did not converge:\n{}\n{}",
        log_tail(&populated.stdout, 10),
        log_tail(&populated.stderr, 20)
    );
    eprintln!(
        "webhook bench: converged in {:.1} s",
        populated.wall.as_secs_f64()
    );

    let secret = work.join("webhook-secret");
    std::fs::write(&secret, SECRET).unwrap();
    let agent = Agent::start(
        &o.binary,
        &o.agent_log,
        &[
            "--repo",
            &remote_url,
            "--state",
            &state,
            "--kubeconfig",
            &kubeconfig,
            "--interval",
            "24h",
            "--webhook-bind-address",
            "127.0.0.1:0",
            "--webhook-secret-file",
            secret.to_str().unwrap(),
            "--metrics-bind-address",
            "127.0.0.1:0",
        ],
    );
    let wait = Duration::from_secs(600);
    let mut webhook = String::new();
    let mut metrics = String::new();
    let started = Instant::now();
    // The serving lines come before the initial sync's cycle line.
    while webhook.is_empty() || metrics.is_empty() {
        let line = agent.line_after("", wait);
        if let Some(a) = line.strip_prefix("webhook: serving on http://") {
            webhook = a.trim_end_matches('/').to_string();
        } else if let Some(a) = line.strip_prefix("metrics: serving on http://") {
            metrics = a.trim_end_matches("/metrics").to_string();
        }
    }
    let initial = agent.line_after("cycle 0 ", wait);
    eprintln!(
        "webhook bench: the agent's initial sync: cycle 0 {initial} ({:.1} s after start)",
        started.elapsed().as_secs_f64()
    );

    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(&kubeconfig).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let namespaces: Api<Namespace> = Api::all(client);

    println!(
        "| commit | cluster | first write after the webhook | reports landed after the first write | report commits | report files changed | cycle | renders |"
    );
    println!("|---:|---|---:|---:|---:|---:|---|---:|");
    let mut latencies = Vec::new();
    let mut render_counts = Vec::new();
    for k in 0..o.commits {
        let name = format!("c{:05}", (k * 37) % o.clusters + 1);
        let value = format!("{}-{k}", std::process::id());
        change_cluster(&repo, &name, &value);
        git(
            &repo,
            &["commit", "-qam", &format!("bench: change {name} ({k})")],
        );
        git(&repo, &["push", "-q", "origin", "main"]);
        let after = head(&repo);
        let ns = format!("aro-{name}");
        // Watch from now (the list's resourceVersion; the object's own may be older than the
        // control plane's bounded watch log).
        let listed = namespaces
            .list_metadata(&ListParams::default().fields(&format!("metadata.name={ns}")))
            .await
            .expect("the cluster's namespace");
        let rv = listed.metadata.resource_version.expect("a resourceVersion");
        let params = WatchParams::default().fields(&format!("metadata.name={ns}"));
        let mut watch = namespaces.watch(&params, &rv).await.unwrap().boxed();
        let before = renders(&metrics);
        let status_before = status_tip(&remote);
        let posted = Instant::now();
        let code = github_push(&webhook, &remote_url, &after);
        assert_eq!(code, 202, "the webhook was not accepted");
        let latency = loop {
            let ev = tokio::time::timeout(wait, watch.next())
                .await
                .expect("the change reached the cluster in time");
            let Some(ev) = ev else {
                // The server ended the watch: open it again where it was.
                watch = namespaces.watch(&params, &rv).await.unwrap().boxed();
                continue;
            };
            let ev = ev.expect("a watch event");
            if let WatchEvent::Error(e) = &ev {
                eprintln!("webhook bench: the watch ended with {e:?}; watching again");
                watch = namespaces.watch(&params, &rv).await.unwrap().boxed();
                continue;
            }
            if let WatchEvent::Modified(n) = ev {
                let label = n
                    .metadata
                    .labels
                    .unwrap_or_default()
                    .get("bench.aro-gitops.dev/commit")
                    .cloned();
                if label.as_deref() == Some(value.as_str()) {
                    break posted.elapsed();
                }
            }
        };
        let landed = status_moved(&remote, status_before, Duration::from_secs(120));
        let cycle = agent.line_after("cycle ", wait);
        let rendered = renders(&metrics) - before;
        let (commits, files) = report_changes(&remote, status_before, status_tip(&remote));
        let reports = landed.map_or("none".to_string(), |t| {
            let ms = t.duration_since(posted).as_secs_f64() * 1000.0;
            format!("{:.0} ms", ms - latency.as_secs_f64() * 1000.0)
        });
        println!(
            "| {k} | {name} | {:.0} ms | {reports} | {commits} | {files} | cycle {cycle} | {rendered} |",
            latency.as_secs_f64() * 1000.0
        );
        latencies.push(latency);
        render_counts.push(rendered);
    }
    latencies.sort();
    let p50 = percentile(&latencies, 0.5);
    let p90 = percentile(&latencies, 0.9);
    let max = *latencies.last().unwrap();
    println!();
    println!(
        "{} clusters, {} commits: first write p50 {:.0} ms, p90 {:.0} ms, max {:.0} ms (target p50 ≤ {} ms: {}); renders per commit: {:?} (target: 1 each: {})",
        o.clusters,
        o.commits,
        p50.as_secs_f64() * 1000.0,
        p90.as_secs_f64() * 1000.0,
        max.as_secs_f64() * 1000.0,
        TARGET_P50.as_millis(),
        if p50 <= TARGET_P50 { "met" } else { "NOT met" },
        render_counts,
        if render_counts.iter().all(|&r| r == 1) {
            "met"
        } else {
            "NOT met"
        },
    );
    println!(
        "load average: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    drop(agent);
    drop(server);
}

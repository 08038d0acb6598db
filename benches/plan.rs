//! Plan benchmark (issue 5): plan a synthetic fleet against an embedded control plane that already
//! holds it, once with nothing changed and once with one cluster's overlay changed in a new commit.
//! Run with `cargo bench --bench plan` (`-- --clusters N`, default 1,000); results go to stdout as
//! Markdown. `PLAN_BENCH_ARO_GITOPS=/path/to/aro-gitops` measures another build of the binary.
//!
//! 1. `aro-gitops-fleetgen` writes the fleet; it becomes a real git repository (`git` CLI).
//! 2. Populate (setup, timed but not a target): `aro-gitops run --once --sim-delay 0s` applies it
//!    into the embedded control plane under the state directory, inventories included.
//! 3. No-op plan: `aro-gitops plan -o json` as a process under `/usr/bin/time -v` (wall time, peak
//!    RSS, exit code, the JSON preview), then the same plan in-process in a child of this bench
//!    (re-executed with `--child-plan`) for `PlanRun::requests`: LISTs per kind and per-object GETs.
//! 4. One change: one cluster's worker node pool VM size changes in a new commit; both runs again.
//! 5. Both plans again with `--kubeconfig`, against the same store served by `aro-gitops
//!    control-plane serve` in its own process: what a plan costs against a real cluster, without
//!    loading the embedded store into the plan's own process.
//!
//! 6. Pull-request previews, no cluster (`plan --base/--head`, [`base_head`]): one cluster changed,
//!    then a shared base changed, each with a fresh state directory and again on the state left.
//!    `-- --base-head-only` runs only these (no populate: they need no control plane).
//!
//! Targets (issue 5): the one-change plan of 1,000 clusters in at most 5 s and 300 MB peak RSS; a
//! no-op plan sends at most one LIST per kind and no per-object GET. Issue 12: the same for
//! `--base/--head`, and a shared base change in at most 15 s.

#[path = "plan/base_head.rs"]
mod base_head;

mod common;

use aro_gitops::plan::preview::Preview;
use common::{ARO_GITOPS, Measured, Server, TIME, git, log_tail, mb, ms, yes};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Runs another `aro-gitops` binary than the one built with the bench (say, an earlier commit's,
/// to measure before and after side by side): its path. The in-process plans still use this tree.
const BINARY_ENV: &str = "PLAN_BENCH_ARO_GITOPS";

fn aro_gitops() -> String {
    std::env::var(BINARY_ENV).unwrap_or_else(|_| ARO_GITOPS.to_string())
}
const TARGET_TIME: Duration = Duration::from_secs(5);
const TARGET_RSS_MB: f64 = 300.0;

struct Options {
    clusters: usize,
    /// `--workdir DIR`: keep the fleet and the populated store in DIR, and reuse them when a
    /// previous run left them there (populate takes most of the bench's time).
    workdir: Option<PathBuf>,
    /// `--base-head-only`: only the `plan --base/--head` cases (no populate, no live plans).
    base_head_only: bool,
}

fn options(args: &[String]) -> Options {
    let mut o = Options {
        clusters: 1000,
        workdir: None,
        base_head_only: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--clusters" => o.clusters = it.next().and_then(|n| n.parse().ok()).unwrap_or(1000),
            "--workdir" => o.workdir = it.next().map(PathBuf::from),
            "--base-head-only" => o.base_head_only = true,
            _ => {} // `--bench` and anything cargo adds are ignored
        }
    }
    o
}

/// Runs `args` of the `aro-gitops` under test (see [`BINARY_ENV`]), under `/usr/bin/time -v` when
/// `time_v`.
fn run_measured(args: &[&str], time_v: bool) -> Measured {
    common::run_measured(&aro_gitops(), args, time_v)
}

/// Child mode: the plan in-process, reported one `key=value` per line.
fn child_plan(repo: &str, state: &Path) {
    // Log events with their time since start, so the parent can show where the time goes.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("warn,aro_gitops=info"))
        .with_timer(tracing_subscriber::fmt::time::uptime())
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .init();
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let start = Instant::now();
    let result = runtime.block_on(aro_gitops::agent::plan(aro_gitops::agent::PlanRequest {
        repo: repo.to_string(),
        head: "HEAD".parse().expect("HEAD is a reference"),
        base: None,
        state_dir: state.to_path_buf(),
        kubeconfig: None,
        in_cluster: false,
        safety: aro_gitops::agent::Safety::default(),
        use_azure_simulator: false,
        verify_signatures: None,
        fleet: Default::default(),
    }));
    let wall = start.elapsed();
    println!("wall_ns={}", wall.as_nanos());
    println!(
        "peak_rss_mb={:.1}",
        common::peak_rss_mb_of(std::process::id()).unwrap_or(0.0)
    );
    match result {
        Ok(run) => {
            println!("exit_code={}", run.preview.exit_code());
            for (path, n) in &run.requests {
                println!("request={n} {path}");
            }
        }
        Err(e) => println!("error={}", e.to_string().replace('\n', " ")),
    }
}

/// What the in-process child reported.
#[derive(Default)]
struct InProcess {
    wall: Duration,
    peak_rss_mb: f64,
    exit_code: Option<u8>,
    requests: BTreeMap<String, u64>,
    error: Option<String>,
    /// Info log lines (time since start, message), for the timeline.
    log: Vec<String>,
}

fn run_child(repo: &Path, state: &Path) -> InProcess {
    let exe = std::env::current_exe().expect("current exe");
    let out = Command::new(exe)
        .arg("--child-plan")
        .arg(repo)
        .arg(state)
        .output()
        .expect("bench child runs");
    let mut r = InProcess {
        log: String::from_utf8_lossy(&out.stderr)
            .lines()
            .map(str::to_string)
            .collect(),
        ..InProcess::default()
    };
    if !out.status.success() {
        r.error = Some(format!(
            "bench child failed: {}",
            log_tail(&r.log.join("\n"), 5)
        ));
    }
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        match k {
            "wall_ns" => r.wall = Duration::from_nanos(v.parse().unwrap_or(0)),
            "peak_rss_mb" => r.peak_rss_mb = v.parse().unwrap_or(0.0),
            "exit_code" => r.exit_code = v.parse().ok(),
            "request" => {
                if let Some((n, path)) = v.split_once(' ') {
                    r.requests.insert(path.to_string(), n.parse().unwrap_or(0));
                }
            }
            "error" => r.error = Some(v.to_string()),
            _ => {}
        }
    }
    r
}

/// What one request was, from its `METHOD path`.
#[derive(Debug, PartialEq, Eq)]
enum Request {
    /// API discovery (`/api`, `/apis`, `/apis/g/v`, `/version`, ...).
    Discovery,
    /// A LIST of `group/version/plural` (in one namespace, or across all when `namespace` is None).
    List {
        resource: String,
        namespace: Option<String>,
    },
    /// A GET of one named object (or its subresource).
    Get { resource: String },
    /// Anything that is not a GET (a plan should send none).
    Write,
}

fn classify(request: &str) -> Request {
    let (method, path) = request.split_once(' ').unwrap_or(("GET", request));
    if method != "GET" {
        return Request::Write;
    }
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (gv, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => (v.to_string(), rest),
        ["apis", g, v, rest @ ..] => (format!("{g}/{v}"), rest),
        _ => return Request::Discovery,
    };
    match rest {
        [] => Request::Discovery,
        [plural] => Request::List {
            resource: format!("{gv}/{plural}"),
            namespace: None,
        },
        ["namespaces", ns, plural] => Request::List {
            resource: format!("{gv}/{plural}"),
            namespace: Some(ns.to_string()),
        },
        ["namespaces", _, plural, _, ..] => Request::Get {
            resource: format!("{gv}/{plural}"),
        },
        [plural, ..] => Request::Get {
            resource: format!("{gv}/{plural}"),
        },
    }
}

/// The request pattern: LISTs per resource, per-object GETs, discovery and writes.
#[derive(Default)]
struct Pattern {
    lists: BTreeMap<String, u64>,
    /// Further pages of paged LISTs (500 items a page), by resource: part of the LIST they continue.
    pages: BTreeMap<String, u64>,
    /// Every LIST, as `resource [in namespace]`, with its count.
    list_detail: BTreeMap<String, u64>,
    gets: u64,
    get_detail: BTreeMap<String, u64>,
    discovery: u64,
    writes: u64,
}

impl Pattern {
    fn of(requests: &BTreeMap<String, u64>) -> Pattern {
        let mut p = Pattern::default();
        for (request, &n) in requests {
            if let Some(first) = request.strip_suffix(" (continued)") {
                if let Request::List { resource, .. } = classify(first) {
                    *p.pages.entry(resource).or_default() += n;
                }
                continue;
            }
            match classify(request) {
                Request::Discovery => p.discovery += n,
                Request::Write => p.writes += n,
                Request::List {
                    resource,
                    namespace,
                } => {
                    *p.lists.entry(resource.clone()).or_default() += n;
                    let shown = match namespace {
                        Some(ns) => format!("{resource} in {ns}"),
                        None => format!("{resource} (all namespaces)"),
                    };
                    *p.list_detail.entry(shown).or_default() += n;
                }
                Request::Get { resource } => {
                    p.gets += n;
                    *p.get_detail.entry(resource).or_default() += n;
                }
            }
        }
        p
    }

    fn max_lists_per_kind(&self) -> u64 {
        self.lists.values().copied().max().unwrap_or(0)
    }

    fn met(&self) -> bool {
        self.max_lists_per_kind() <= 1 && self.gets == 0 && self.writes == 0
    }
}

/// One plan: the process (user's view) and the in-process child (request pattern).
struct PlanResult {
    process: Measured,
    preview: Option<Preview>,
    child: InProcess,
}

impl PlanResult {
    fn changed_clusters(&self) -> Vec<String> {
        self.preview
            .iter()
            .flat_map(|p| p.clusters.iter())
            .filter(|c| c.has_changes())
            .map(|c| {
                let changes: Vec<String> = c
                    .changes
                    .iter()
                    .map(|ch| format!("{:?} {}", ch.action, ch.object))
                    .collect();
                format!("{} ({})", c.unit, changes.join(", "))
            })
            .collect()
    }

    fn rss(&self) -> f64 {
        self.process.peak_rss_mb.unwrap_or(self.child.peak_rss_mb)
    }
}

fn plan(repo: &Path, state: &Path, time_v: bool) -> PlanResult {
    let (repo_s, state_s) = (repo.to_str().unwrap(), state.to_str().unwrap());
    let process = run_measured(
        &[
            "--log", "info", "plan", "--repo", repo_s, "--state", state_s, "-o", "json",
        ],
        time_v,
    );
    let preview = serde_json::from_str::<Preview>(&process.stdout).ok();
    let child = run_child(repo, state);
    PlanResult {
        process,
        preview,
        child,
    }
}

/// The same store served by `aro-gitops control-plane serve` in its own process, so a plan with
/// `--kubeconfig` pays for reading live state over HTTP as with a real cluster, not for loading
/// the embedded store.
fn serve(state: &Path) -> Option<Server> {
    Server::start(
        &aro_gitops(),
        &state.join("control-plane"),
        &[],
        "aro-gitops local control plane serving at",
        Duration::from_secs(600),
    )
}

/// `plan --kubeconfig` against the served store.
fn plan_served(server: &Server, repo: &Path, state: &Path, head: &str, time_v: bool) -> Measured {
    run_measured(
        &[
            "--log",
            "warn",
            "plan",
            "--kubeconfig",
            server.kubeconfig.to_str().unwrap(),
            "--repo",
            repo.to_str().unwrap(),
            "--state",
            state.to_str().unwrap(),
            "--head",
            head,
            "-o",
            "json",
        ],
        time_v,
    )
}

fn head_commit(repo: &Path) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["rev-parse", "HEAD"])
        .output()
        .expect("git runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Changes the worker node pool's VM size of one cluster (a JSON 6902 patch op appended to the
/// overlay's own patch of it), and commits.
fn change_one_cluster(repo: &Path) -> String {
    let mut clusters: Vec<String> = std::fs::read_dir(repo.join("clusters"))
        .expect("clusters/")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    clusters.sort();
    let name = clusters[clusters.len() / 2].clone();
    let patch = repo
        .join("clusters")
        .join(&name)
        .join("patches/aromachinepool-workers.yaml");
    let mut text = std::fs::read_to_string(&patch).expect("worker pool patch");
    text.push_str(
        "- op: replace\n  path: /spec/resources/0/spec/properties/platform/vmSize\n  value: Standard_D16s_v3\n",
    );
    std::fs::write(&patch, text).expect("patch written");
    git(
        repo,
        &["commit", "-qam", &format!("{name}: bigger worker VMs")],
    );
    name
}

fn count_objects(repo: &Path) -> (usize, usize) {
    let mut units = 0;
    let mut objects = 0;
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(repo.join("clusters"))
        .expect("clusters/")
        .filter_map(Result::ok)
        .map(|e| Path::new("clusters").join(e.file_name()))
        .collect();
    dirs.sort();
    for d in dirs {
        if let Ok(o) = aro_gitops::render::render(repo, &d) {
            units += 1;
            objects += o.len();
        }
    }
    (units, objects)
}

/// Bytes of the files under `dir`, recursively.
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => dir_bytes(&e.path()),
                    _ => e.metadata().map_or(0, |m| m.len()),
                })
                .sum()
        })
        .unwrap_or(0)
}

/// The allocator the `aro-gitops` binary uses, so the in-process numbers are the agent's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--child-plan") {
        child_plan(&args[i + 1], Path::new(&args[i + 2]));
        return;
    }
    let opts = options(&args);
    let n = opts.clusters;
    let time_v = Path::new(TIME).exists();
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = opts
        .workdir
        .clone()
        .unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir).expect("workdir");
    let repo = dir.join("fleet");
    let state = dir.join("state");
    let marker = dir.join("populated");
    if opts.base_head_only {
        base_head_only(n, &repo, &dir, opts.workdir.is_some(), time_v);
        return;
    }
    let reuse = opts.workdir.is_some() && marker.exists();
    if reuse {
        eprintln!(
            "plan bench: reusing the fleet and the populated store in {}",
            dir.display()
        );
        // Back to the fleet's first commit; the plans' own mirrors and the served store start over.
        reset_to_first_commit(&repo);
        let _ = std::fs::remove_dir_all(state.join("plan"));
        let _ = std::fs::remove_dir_all(dir.join("state-kubeconfig"));
    } else {
        let _ = std::fs::remove_dir_all(&repo);
        let _ = std::fs::remove_dir_all(&state);
        let _ = std::fs::remove_file(&marker);
    }
    let populate = if reuse {
        None
    } else {
        Some(generate_and_populate(n, &repo, &state, time_v))
    };
    if populate.as_ref().is_some_and(|p| p.code == Some(0)) && opts.workdir.is_some() {
        std::fs::write(&marker, "").expect("marker written");
    }
    let (units, objects) = count_objects(&repo);
    let store_mb = dir_bytes(&state.join("control-plane")) as f64 / 1e6;

    eprintln!("plan bench: no-op plan...");
    let noop = plan(&repo, &state, time_v);
    let noop_commit = head_commit(&repo);
    eprintln!("plan bench: one cluster changed...");
    let changed_name = change_one_cluster(&repo);
    let one = plan(&repo, &state, time_v);
    let one_commit = head_commit(&repo);

    eprintln!(
        "plan bench: the same plans with --kubeconfig against the store served in its own process..."
    );
    let served = serve(&state).map(|server| {
        let kc_state = dir.join("state-kubeconfig");
        let noop = plan_served(&server, &repo, &kc_state, &noop_commit, time_v);
        let one = plan_served(&server, &repo, &kc_state, &one_commit, time_v);
        (noop, one)
    });
    let cases = base_head::run(&repo, &dir, (&noop_commit, &one_commit), time_v);
    report(
        n,
        units,
        objects,
        populate.as_ref(),
        store_mb,
        (&noop, &one),
        served.as_ref(),
        &changed_name,
    );
    base_head::report(&cases);
}

/// Only the `plan --base/--head` cases: the fleet (generated, or reused from `--workdir` back at
/// its first commit), one cluster's commit, then the shared base's.
fn base_head_only(n: usize, repo: &Path, dir: &Path, keep: bool, time_v: bool) {
    if keep && repo.join(".git").is_dir() {
        eprintln!("plan bench: reusing the fleet in {}", repo.display());
        reset_to_first_commit(repo);
    } else {
        let _ = std::fs::remove_dir_all(repo);
        generate(n, repo);
    }
    let before = head_commit(repo);
    change_one_cluster(repo);
    let one = head_commit(repo);
    let cases = base_head::run(repo, dir, (&before, &one), time_v);
    println!("## Plan benchmark (issue 12): {n} clusters, `plan --base/--head` only");
    base_head::report(&cases);
}

fn reset_to_first_commit(repo: &Path) {
    let first = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["rev-list", "--max-parents=0", "HEAD"])
        .output()
        .expect("git runs");
    let first = String::from_utf8_lossy(&first.stdout).trim().to_string();
    git(repo, &["reset", "-q", "--hard", &first]);
}

/// Writes the fleet into a new git repository at `repo`, one commit.
fn generate(n: usize, repo: &Path) {
    eprintln!("plan bench: generating {n} clusters...");
    common::generate_fleet(n, repo);
}

/// Writes the fleet into a new git repository at `repo` and applies it with `run --once`.
fn generate_and_populate(n: usize, repo: &Path, state: &Path, time_v: bool) -> Measured {
    generate(n, repo);
    let (units, objects) = count_objects(repo);

    eprintln!("plan bench: populating the control plane ({units} units, {objects} objects)...");
    let (repo_s, state_s) = (repo.to_str().unwrap(), state.to_str().unwrap());
    let populate = run_measured(
        &[
            "--log",
            "warn",
            "run",
            "--repo",
            repo_s,
            "--once",
            "--state",
            state_s,
            "--sim-delay",
            "0s",
            "--timeout",
            "30m",
        ],
        time_v,
    );
    if populate.code != Some(0) {
        eprintln!(
            "plan bench: populate exited with {:?}:\n{}\n{}",
            populate.code,
            log_tail(&populate.stdout, 10),
            log_tail(&populate.stderr, 20)
        );
    }
    populate
}

/// Prints the results as Markdown.
#[allow(clippy::too_many_arguments)]
fn report(
    n: usize,
    units: usize,
    objects: usize,
    populate: Option<&Measured>,
    store_mb: f64,
    (noop, one): (&PlanResult, &PlanResult),
    served: Option<&(Measured, Measured)>,
    changed_name: &str,
) {
    let noop_pattern = Pattern::of(&noop.child.requests);
    let one_pattern = Pattern::of(&one.child.requests);
    let one_changed = one.changed_clusters();
    let noop_changed = noop.changed_clusters();
    let time_met = one.process.wall <= TARGET_TIME;
    let rss_met = one.rss() <= TARGET_RSS_MB;

    println!("## Plan benchmark (issue 5): {n} clusters, embedded control plane\n");
    println!("| measurement | result |");
    println!("|---|---|");
    println!("| clusters / objects rendered | {units} / {objects} |");
    match populate {
        Some(populate) => println!(
            "| populate (`aro-gitops run --once --sim-delay 0s`, setup) | {} wall, {} CPU, peak RSS {}, exit {:?} |",
            ms(populate.wall),
            populate.cpu.map_or("n/a".into(), ms),
            mb(populate.peak_rss_mb),
            populate.code
        ),
        None => println!("| populate | reused from `--workdir` (populated by an earlier run) |"),
    }
    println!("| control-plane store on disk after populate | {store_mb:.0} MB |");
    for (label, r, p) in [
        ("no-op plan", &noop, &noop_pattern),
        ("one-change plan", &one, &one_pattern),
    ] {
        println!(
            "| {label}: `aro-gitops plan -o json` process | {} wall, {} CPU, peak RSS {}, exit {:?} |",
            ms(r.process.wall),
            r.process.cpu.map_or("n/a".into(), ms),
            mb(r.process.peak_rss_mb),
            r.process.code
        );
        println!(
            "| {label}: in-process (`agent::plan`) | {} wall, peak RSS {:.0} MB, exit {:?}{} |",
            ms(r.child.wall),
            r.child.peak_rss_mb,
            r.child.exit_code,
            r.child
                .error
                .as_deref()
                .map_or(String::new(), |e| format!(", error: {e}"))
        );
        println!(
            "| {label}: requests | {} kinds LISTed, max {} LIST per kind, {} LISTs in all ({} further pages); {} per-object GETs; {} discovery; {} writes |",
            p.lists.len(),
            p.max_lists_per_kind(),
            p.lists.values().sum::<u64>(),
            p.pages.values().sum::<u64>(),
            p.gets,
            p.discovery,
            p.writes
        );
    }
    match served {
        Some((noop_kc, one_kc)) => {
            for (label, m) in [("no-op plan", noop_kc), ("one-change plan", one_kc)] {
                println!(
                    "| {label}: `plan --kubeconfig` against the store served by `aro-gitops control-plane serve` | {} wall, {} CPU, peak RSS {}, exit {:?} |",
                    ms(m.wall),
                    m.cpu.map_or("n/a".into(), ms),
                    mb(m.peak_rss_mb),
                    m.code
                );
            }
        }
        None => {
            println!("| `plan --kubeconfig` against the served store | the server did not start |")
        }
    }
    println!(
        "| no-op plan: clusters with changes | {} |",
        if noop_changed.is_empty() {
            "0".to_string()
        } else {
            format!("{}: {}", noop_changed.len(), noop_changed.join("; "))
        }
    );
    println!(
        "| one-change plan: clusters with changes (changed: clusters/{changed_name}) | {}: {} |",
        one_changed.len(),
        one_changed.join("; ")
    );
    println!();
    println!("Targets:");
    println!(
        "- one-change plan ≤ 5 s: {} ({}){}",
        yes(time_met),
        ms(one.process.wall),
        if time_met {
            String::new()
        } else {
            format!(", over by {}", ms(one.process.wall - TARGET_TIME))
        }
    );
    println!(
        "- one-change plan ≤ 300 MB peak RSS: {} ({:.0} MB)",
        yes(rss_met),
        one.rss()
    );
    println!(
        "- no-op plan ≤ 1 LIST per kind and no per-object GET: {} (max {} per kind, {} GETs, {} writes)",
        yes(noop_pattern.met()),
        noop_pattern.max_lists_per_kind(),
        noop_pattern.gets,
        noop_pattern.writes
    );
    println!(
        "- exit codes 0 (no-op) and 2 (one change), exactly 1 cluster changed: {}",
        yes(noop.process.code == Some(0)
            && one.process.code == Some(2)
            && noop_changed.is_empty()
            && one_changed.len() == 1)
    );
    if let Some((_, one_kc)) = &served {
        println!(
            "- the same with `--kubeconfig` (store served in another process, as a real cluster): ≤ 5 s {} ({}), ≤ 300 MB {} ({})",
            yes(one_kc.wall <= TARGET_TIME),
            ms(one_kc.wall),
            yes(one_kc.peak_rss_mb.is_some_and(|m| m <= TARGET_RSS_MB)),
            mb(one_kc.peak_rss_mb)
        );
    }
    if let Some(populate) = populate.filter(|p| p.code != Some(0)) {
        println!(
            "- populate did not converge (exit {:?}); the plans ran against what it applied. Its last output:\n\n```\n{}\n{}\n```",
            populate.code,
            log_tail(&populate.stdout, 10),
            log_tail(&populate.stderr, 20)
        );
    }
    println!("\nNo-op plan, LISTs:\n");
    for (list, count) in &noop_pattern.list_detail {
        println!("- {list}: {count}");
    }
    if !noop_pattern.get_detail.is_empty() {
        println!("\nNo-op plan, per-object GETs by resource:\n");
        for (resource, count) in &noop_pattern.get_detail {
            println!("- {resource}: {count}");
        }
    }
    println!("\nOne-change plan, timeline of the in-process run (info log, time since start):\n");
    println!("```");
    for line in one.child.log.iter().take(40) {
        println!("{line}");
    }
    println!("```");
    for (label, r) in [("no-op", &noop), ("one-change", &one)] {
        if r.preview.is_none() {
            println!(
                "\n{label} plan: the process printed no JSON preview; its log:\n\n```\n{}\n```",
                log_tail(&r.process.stderr, 20)
            );
        }
    }
    if one.process.peak_rss_mb.is_none() {
        println!("\n{TIME} not found: process peak RSS not measured (in-process figures only).");
    }
}

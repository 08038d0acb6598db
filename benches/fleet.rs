//! Fleet benchmark (issue 12): a whole fleet from an empty control plane to all Converged, at
//! several sizes, with `aro-gitops run --once --sim-delay 0s` (Azure SIMULATED, no provisioning
//! delay). Run with `cargo bench --bench fleet` (options after `--`, see below); rows go to stdout
//! as Markdown as each case ends.
//!
//! 1. Curve: for each `--sizes` (default 100,200,500,1000,2000) a fleet from
//!    `aro-gitops-fleetgen` (a real git repository), an empty state directory, and `run --once` on
//!    the embedded control plane under `/usr/bin/time -v`: wall time, CPU, peak RSS, the requests
//!    line, the exit code and how many units the summary table shows Converged.
//! 2. Separate process: at `--separate-sizes` (default 1000) the control plane runs as
//!    `aro-gitops control-plane serve --simulate-azure --sim-delay 0s` in its own process and the
//!    agent runs with `--kubeconfig`; both processes' peak RSS are reported (the server's from
//!    `/proc/PID/status` when the run ends).
//! 3. `--before BIN`: the curve also with another `aro-gitops` binary (an older build), at
//!    `--before-sizes` (default: the curve's sizes).
//! 4. `--csv PATH` writes the rows (with `--merge`, rows of PATH this run did not measure are
//!    kept: the curve can be measured in several runs); `--svg PATH` draws clusters against time and
//!    peak RSS, before and after, from those rows.
//!
//! 5. Long-running `run` on a converged fleet (see `fleet/resync.rs`): `--noop-resync N[,N...]`
//!    (with `--noop-resync-served` also against `control-plane serve`; `--noop-cycles K`, default
//!    3) reads the cycle lines of the no-op drift cycles after the initial sync (writes, LISTs, GETs,
//!    seconds); `--drift-memory N,CYCLES` samples the agent's VmRSS from drift cycle 1 to CYCLES.
//!    Given alone (without `--sizes`/`--separate-sizes`), they run without the curve.
//!
//! 6. Real server (issue 25): at `--real-sizes N,...` (none by default; given alone, without the
//!    curve) the fleet runs on a fresh kube-apiserver + etcd from `scripts/real-cluster up` with
//!    the reference CRDs, Azure played by `aro-gitops azure-simulator --kubeconfig` and the agent
//!    given `--use-azure-simulator` (see `fleet/real.rs`); the rows add kube-apiserver's, etcd's
//!    and the simulator's peak RSS. With `--before BIN`, `BIN` runs there too, first, on its own
//!    fresh cluster, as the agent and (when it has one) as the simulator. `--real-step1` measures step 1 only (nothing plays ASO), as do binaries
//!    without the simulator; those rows are printed, not written to the CSV. The binaries come
//!    from `scripts/real-cluster build`. `--real-crds project` installs the project's own CRDs
//!    instead of ASO's and CAPZ's reference ones.
//!
//! Other options: `--timeout D` (each run's own `--timeout`, default 30m), `--workdir DIR` (keep
//! the fleets there; default a temporary directory).
//!
//! Targets (issue 12): 1,000 clusters ≤ 3 min and ≤ 1 GB peak RSS; 2,000 clusters ≤ 2.2× the time
//! and ≤ 2× the memory of 1,000, measured in the same run.

mod common;

use common::{ARO_GITOPS, TIME, log_tail, mb, run_measured, yes};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

#[path = "fleet/plot.rs"]
mod plot;
#[path = "fleet/real.rs"]
mod real;
#[path = "../tests/common/real_cluster.rs"]
#[allow(dead_code)] // the tests' helper: the bench uses its start, CRDs and kubectl
mod real_cluster;
#[path = "fleet/resync.rs"]
mod resync;
#[path = "fleet/rows.rs"]
mod rows;

use rows::{Row, Series, row};

const TARGET_SECS_1000: f64 = 180.0;
const TARGET_MB_1000: f64 = 1024.0;
const TARGET_TIME_RATIO: f64 = 2.2;
const TARGET_RSS_RATIO: f64 = 2.0;

struct Options {
    sizes: Vec<usize>,
    separate_sizes: Vec<usize>,
    before: Option<PathBuf>,
    before_sizes: Option<Vec<usize>>,
    csv: Option<PathBuf>,
    merge: bool,
    svg: Option<PathBuf>,
    timeout: String,
    workdir: Option<PathBuf>,
    /// `--noop-resync N,...`: the long-running no-op resync at these sizes (see `resync`).
    noop_resync: Vec<usize>,
    noop_resync_served: bool,
    noop_cycles: usize,
    /// `--drift-memory N,CYCLES`.
    drift_memory: Option<(usize, u64)>,
    /// `--real-sizes N,...`: on a real kube-apiserver and etcd (see `real`).
    real_sizes: Vec<usize>,
    /// `--real-step1`: on the real server, step 1 only (no simulator).
    real_step1: bool,
    /// `--real-crds reference|project`.
    real_crds: real::Crds,
}

fn sizes(v: Option<&String>) -> Vec<usize> {
    v.map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_default()
}

fn options(args: &[String]) -> Options {
    let mut o = Options {
        sizes: vec![100, 200, 500, 1000, 2000],
        separate_sizes: vec![1000],
        before: None,
        before_sizes: None,
        csv: None,
        merge: false,
        svg: None,
        timeout: "30m".into(),
        workdir: None,
        noop_resync: vec![],
        noop_resync_served: false,
        noop_cycles: 3,
        drift_memory: None,
        real_sizes: vec![],
        real_step1: false,
        real_crds: real::Crds::Reference,
    };
    let mut curve_asked = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--sizes" => {
                o.sizes = sizes(it.next());
                curve_asked = true;
            }
            "--separate-sizes" => {
                o.separate_sizes = sizes(it.next());
                curve_asked = true;
            }
            "--real-sizes" => o.real_sizes = sizes(it.next()),
            "--real-step1" => o.real_step1 = true,
            "--real-crds" => {
                o.real_crds = it
                    .next()
                    .and_then(|v| real::Crds::parse(v))
                    .expect("--real-crds reference|project")
            }
            "--noop-resync" => o.noop_resync = sizes(it.next()),
            "--noop-resync-served" => o.noop_resync_served = true,
            "--noop-cycles" => o.noop_cycles = it.next().and_then(|v| v.parse().ok()).unwrap_or(3),
            "--drift-memory" => {
                let v = sizes(it.next());
                o.drift_memory = (v.len() == 2).then(|| (v[0], v[1] as u64));
            }
            "--before" => o.before = it.next().map(PathBuf::from),
            "--before-sizes" => o.before_sizes = Some(sizes(it.next())),
            "--csv" => o.csv = it.next().map(PathBuf::from),
            "--merge" => o.merge = true,
            "--svg" => o.svg = it.next().map(PathBuf::from),
            "--timeout" => o.timeout = it.next().cloned().unwrap_or(o.timeout),
            "--workdir" => o.workdir = it.next().map(PathBuf::from),
            _ => {} // `--bench` and anything cargo adds are ignored
        }
    }
    // The long-running or real-server cases alone, unless the curve is asked for too.
    let others = !o.noop_resync.is_empty() || o.drift_memory.is_some() || !o.real_sizes.is_empty();
    if others && !curve_asked {
        o.sizes.clear();
        o.separate_sizes.clear();
    }
    o
}

fn report_failure(what: &str, m: &common::Measured) {
    if m.code != Some(0) {
        eprintln!(
            "fleet bench: {what} exited with {:?}; its last output:\n{}\n{}",
            m.code,
            log_tail(&m.stdout, 10),
            log_tail(&m.stderr, 20)
        );
    }
}

/// `run --once` of `bin` on the embedded control plane in a fresh state directory.
fn embedded(bin: &str, series: Series, n: usize, repo: &Path, state: &Path, o: &Options) -> Row {
    let _ = std::fs::remove_dir_all(state);
    eprintln!("fleet bench: {} at {n} clusters...", series.name());
    let m = run_measured(
        bin,
        &[
            "--log",
            "warn",
            "run",
            "--once",
            "--sim-delay",
            "0s",
            "--timeout",
            &o.timeout,
            "--repo",
            repo.to_str().unwrap(),
            "--state",
            state.to_str().unwrap(),
        ],
        Path::new(TIME).exists(),
    );
    report_failure(&format!("{} at {n}", series.name()), &m);
    let _ = std::fs::remove_dir_all(state);
    row(series, n, &m)
}

/// The agent with `--kubeconfig` against a control plane served in its own process.
fn separate(n: usize, repo: &Path, dir: &Path, o: &Options) -> Row {
    let (state, served) = (dir.join("agent-state"), dir.join("served-state"));
    let _ = std::fs::remove_dir_all(&state);
    let _ = std::fs::remove_dir_all(&served);
    eprintln!("fleet bench: {n} clusters against `control-plane serve` in its own process...");
    let Some(mut server) = common::serve_simulated(&served) else {
        eprintln!("fleet bench: `control-plane serve --simulate-azure` did not start");
        return Row::failed(Series::Separate, n);
    };
    let m = run_measured(
        ARO_GITOPS,
        &[
            "--log",
            "warn",
            "run",
            "--once",
            "--timeout",
            &o.timeout,
            "--kubeconfig",
            server.kubeconfig.to_str().unwrap(),
            "--repo",
            repo.to_str().unwrap(),
            "--state",
            state.to_str().unwrap(),
        ],
        Path::new(TIME).exists(),
    );
    let server_rss = server.peak_rss_mb();
    server.stop();
    report_failure(
        &format!("the run against the served control plane at {n}"),
        &m,
    );
    let _ = std::fs::remove_dir_all(&state);
    let _ = std::fs::remove_dir_all(&served);
    Row {
        server_rss_mb: server_rss,
        ..row(Series::Separate, n, &m)
    }
}

fn print_header() {
    println!("{}", Row::MARKDOWN_HEADER);
    let _ = std::io::stdout().flush();
}

fn print_row(r: &Row) {
    println!("{}", r.markdown());
    let _ = std::io::stdout().flush();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = options(&args);
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = o
        .workdir
        .clone()
        .unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir).expect("workdir");
    let fleet = |n: usize| {
        let repo = dir.join(format!("fleet-{n}"));
        if !repo.join(".git").exists() {
            let _ = std::fs::remove_dir_all(&repo);
            eprintln!("fleet bench: generating {n} clusters...");
            common::generate_fleet(n, &repo);
        }
        repo
    };
    if !o.noop_resync.is_empty() || o.drift_memory.is_some() {
        println!(
            "## Fleet benchmark (issue 12): long-running `run` on a converged fleet
"
        );
        println!("agent: `{ARO_GITOPS}`");
    }
    for &n in &o.noop_resync {
        resync::noop_resync(n, &fleet(n), &dir, false, o.noop_cycles);
        if o.noop_resync_served {
            resync::noop_resync(n, &fleet(n), &dir, true, o.noop_cycles);
        }
    }
    if let Some((n, cycles)) = o.drift_memory {
        resync::drift_memory(n, cycles, &fleet(n), &dir);
    }
    // Nothing to measure: only `--csv PATH --merge --svg PATH` goes on, to draw PATH's rows again.
    let redraw = o.merge && o.csv.is_some() && o.svg.is_some();
    if o.sizes.is_empty()
        && o.separate_sizes.is_empty()
        && o.real_sizes.is_empty()
        && o.before.is_none()
        && !redraw
    {
        return;
    }
    let before_sizes = o.before_sizes.clone().unwrap_or_else(|| o.sizes.clone());
    let mut all: Vec<usize> = o.sizes.clone();
    all.extend(&o.separate_sizes);
    all.extend(&o.real_sizes);
    if o.before.is_some() {
        all.extend(&before_sizes);
    }
    all.sort_unstable();
    all.dedup();

    println!(
        "## Fleet benchmark (issue 12): `run --once --sim-delay 0s` from an empty control plane (Azure SIMULATED)\n"
    );
    println!("after: `{ARO_GITOPS}`");
    if let Some(b) = &o.before {
        println!("before: `{}`", b.display());
    }
    println!();
    print_header();
    // Rows of earlier runs kept with `--merge`; the CSV and the plot are written after each case,
    // so a run stopped part way keeps what it measured.
    let previous: Vec<Row> = o
        .csv
        .as_ref()
        .filter(|_| o.merge)
        .and_then(|p| std::fs::read_to_string(p).ok())
        .map(|t| t.lines().filter_map(Row::from_csv).collect())
        .unwrap_or_default();
    let mut rows = Vec::new();
    let measured = |r: Row, rows: &mut Vec<Row>| {
        print_row(&r);
        // A step-1-only row on the real server is printed, not kept with whole runs.
        if r.series.is_real() && r.code.is_none() {
            return;
        }
        rows.push(r);
        save(&o, &merged(rows, &previous));
    };
    for &n in &all {
        let repo = fleet(n);
        let state = dir.join("state");
        if let Some(b) = o.before.as_ref().filter(|_| before_sizes.contains(&n)) {
            let r = embedded(b.to_str().unwrap(), Series::Before, n, &repo, &state, &o);
            measured(r, &mut rows);
        }
        if o.sizes.contains(&n) {
            let r = embedded(ARO_GITOPS, Series::After, n, &repo, &state, &o);
            measured(r, &mut rows);
        }
        if o.separate_sizes.contains(&n) {
            let r = separate(n, &repo, &dir, &o);
            measured(r, &mut rows);
        }
        if o.real_sizes.contains(&n) {
            let case = real::RealCase {
                timeout: &o.timeout,
                step1: o.real_step1,
                crds: o.real_crds,
            };
            if let Some(b) = &o.before {
                let b = b.to_str().unwrap();
                let r = real::real(b, Series::RealBefore, n, &repo, &dir, &case);
                measured(r, &mut rows);
            }
            let r = real::real(ARO_GITOPS, Series::Real, n, &repo, &dir, &case);
            measured(r, &mut rows);
        }
    }
    let all_rows = merged(&rows, &previous);
    if all_rows.len() > rows.len() {
        println!("\nWith the rows kept from `--merge` (earlier runs):\n");
        print_header();
        all_rows.iter().for_each(print_row);
    }
    targets(&all_rows);
    save(&o, &all_rows);
    if let Some(path) = &o.csv {
        eprintln!("fleet bench: rows written to {}", path.display());
    }
    if let Some(path) = &o.svg {
        eprintln!("fleet bench: plot written to {}", path.display());
    }
}

/// This run's rows, and the earlier rows of cases this run did not measure.
fn merged(rows: &[Row], previous: &[Row]) -> Vec<Row> {
    let mut all = rows.to_vec();
    for old in previous {
        if !rows
            .iter()
            .any(|r| r.series == old.series && r.clusters == old.clusters)
        {
            all.push(old.clone());
        }
    }
    all.sort_by_key(|r| (r.series, r.clusters));
    all
}

/// Writes the CSV and the plot, when asked for.
fn save(o: &Options, rows: &[Row]) {
    if let Some(path) = &o.csv {
        let mut text = format!("{}\n", Row::CSV_HEADER);
        for r in rows {
            text.push_str(&r.csv());
            text.push('\n');
        }
        std::fs::write(path, text).expect("CSV written");
    }
    if let Some(path) = &o.svg {
        std::fs::write(path, plot::svg(rows)).expect("SVG written");
    }
}

/// The targets, from the rows (of this run, and of earlier ones with `--merge`).
fn targets(rows: &[Row]) {
    let at = |s: Series, n: usize| rows.iter().find(|r| r.series == s && r.clusters == n);
    println!("\nTargets (issue 12):");
    if let Some(k) = at(Series::After, 1000) {
        println!(
            "- 1,000 clusters ≤ 3 min: {} ({:.1} s); ≤ 1 GB peak RSS: {} ({}); all Converged: {}",
            yes(k.wall_s <= TARGET_SECS_1000),
            k.wall_s,
            yes(k.rss_mb.is_some_and(|m| m <= TARGET_MB_1000)),
            mb(k.rss_mb),
            yes(k.all_converged())
        );
        if let Some(t) = at(Series::After, 2000) {
            let time = t.wall_s / k.wall_s;
            let rss = t.rss_mb.zip(k.rss_mb).map(|(a, b)| a / b);
            println!(
                "- 2,000 / 1,000 clusters: time ×{time:.2} (≤ ×{TARGET_TIME_RATIO}: {}), peak RSS {} (≤ ×{TARGET_RSS_RATIO}: {}); 2,000 all Converged: {}",
                yes(time <= TARGET_TIME_RATIO),
                rss.map_or("n/a".into(), |r| format!("×{r:.2}")),
                yes(rss.is_some_and(|r| r <= TARGET_RSS_RATIO)),
                yes(t.all_converged())
            );
        }
    }
    for r in rows.iter().filter(|r| r.series == Series::Separate) {
        println!(
            "- {} clusters against `control-plane serve` in its own process: {:.1} s, agent {} + server {} peak RSS; all Converged: {}",
            r.clusters,
            r.wall_s,
            mb(r.rss_mb),
            mb(r.server_rss_mb),
            yes(r.all_converged())
        );
    }
    for r in rows.iter().filter(|r| r.series.is_real()) {
        let embedded = at(Series::After, r.clusters)
            .map(|e| {
                format!(
                    " (×{:.1} the embedded run's {:.1} s)",
                    r.wall_s / e.wall_s,
                    e.wall_s
                )
            })
            .unwrap_or_default();
        println!(
            "- {} clusters on kube-apiserver + etcd ({}): {:.1} s{embedded}, agent {} + kube-apiserver {} + etcd {} + simulator {} peak RSS; all Converged: {}",
            r.clusters,
            r.series.name(),
            r.wall_s,
            mb(r.rss_mb),
            mb(r.server_rss_mb),
            mb(r.etcd_rss_mb),
            mb(r.sim_rss_mb),
            yes(r.all_converged())
        );
    }
    let after: BTreeMap<usize, &Row> = rows
        .iter()
        .filter(|r| r.series == Series::After)
        .map(|r| (r.clusters, r))
        .collect();
    for b in rows.iter().filter(|r| r.series == Series::Before) {
        if let Some(a) = after.get(&b.clusters) {
            println!(
                "- {} clusters, before → after: {:.1} s → {:.1} s (×{:.1} faster), {} → {}",
                b.clusters,
                b.wall_s,
                a.wall_s,
                b.wall_s / a.wall_s,
                mb(b.rss_mb),
                mb(a.rss_mb)
            );
        }
    }
    if !Path::new(TIME).exists() {
        println!("\n{TIME} not found: the agent's peak RSS was not measured.");
    }
}

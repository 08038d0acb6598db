//! Render benchmark: synthetic fleets of 100, 1,000 and 5,000 ARO clusters (written by
//! `aro-gitops-fleetgen`), every cluster overlay rendered natively and with `kubectl kustomize`.
//! Run with `cargo bench --bench render`; results go to stdout as Markdown.
//!
//! - Native: in-process calls to `aro_gitops::render::render`, one per overlay, in a child process (this
//!   bench re-executed with `--child`) so its peak RSS (VmHWM) counts the render alone, not generation
//!   nor kubectl. Each result is dropped after counting its objects.
//! - Binary: `aro-gitops render` once per overlay on a sample, for the cost a user sees per process.
//! - kubectl: `kubectl kustomize` once per overlay; all overlays at N=100, an evenly spaced sample of
//!   `--kubectl-sample` (default 100) overlays at larger N, extrapolated to N (stated in the table).
//!
//! Flags (after `--`): `--plain` uses fleets written with `aro-gitops-fleetgen --plain` (only `resources`
//! and `namespace`, what render v0 takes); `--sizes 100,1000` picks the fleet sizes; `--kubectl-sample K`.
//! When the renderer refuses the overlays (a field it does not support), the table says so and gives
//! kubectl's numbers alone.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const FLEETGEN: &str = env!("CARGO_BIN_EXE_aro-gitops-fleetgen");
const ARO_GITOPS: &str = env!("CARGO_BIN_EXE_aro-gitops");

struct Options {
    plain: bool,
    sizes: Vec<usize>,
    kubectl_sample: usize,
}

fn options(args: &[String]) -> Options {
    let mut o = Options {
        plain: false,
        sizes: vec![100, 1000, 5000],
        kubectl_sample: 100,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--plain" => o.plain = true,
            "--sizes" => {
                o.sizes = it
                    .next()
                    .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
                    .unwrap_or_default()
            }
            "--kubectl-sample" => {
                o.kubectl_sample = it.next().and_then(|n| n.parse().ok()).unwrap_or(100)
            }
            _ => {} // `--bench` and anything cargo adds
        }
    }
    o
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn overlays(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("clusters"))
        .expect("fleet has clusters/")
        .filter_map(Result::ok)
        .map(|e| Path::new("clusters").join(e.file_name()))
        .collect();
    dirs.sort();
    dirs
}

/// What the child reports, one `key=value` per line (no serialisation dependency).
#[derive(Debug, Default)]
struct Native {
    ok: usize,
    failed: usize,
    objects: usize,
    total: Duration,
    /// Per-overlay times of the successful renders, sorted.
    times: Vec<Duration>,
    peak_rss_mb: f64,
    first_error: Option<String>,
}

/// Child mode: render every overlay of the fleet at `root` in-process and report on stdout.
fn child(root: &Path) {
    let dirs = overlays(root);
    let mut n = Native::default();
    let start = Instant::now();
    for dir in &dirs {
        let t = Instant::now();
        match aro_gitops::render::render(root, dir) {
            Ok(objects) => {
                n.times.push(t.elapsed());
                n.ok += 1;
                n.objects += objects.len();
            }
            Err(e) => {
                n.failed += 1;
                n.first_error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    n.total = start.elapsed();
    println!("ok={}", n.ok);
    println!("failed={}", n.failed);
    println!("objects={}", n.objects);
    println!("total_ns={}", n.total.as_nanos());
    let times: Vec<String> = n.times.iter().map(|t| t.as_nanos().to_string()).collect();
    println!("times_ns={}", times.join(","));
    println!("peak_rss_mb={:.1}", peak_rss_mb());
    if let Some(e) = n.first_error {
        println!("first_error={}", e.replace('\n', " "));
    }
}

fn run_child(root: &Path) -> Native {
    let exe = std::env::current_exe().expect("current exe");
    let out = Command::new(exe)
        .arg("--child")
        .arg(root)
        .output()
        .expect("bench child runs");
    assert!(
        out.status.success(),
        "bench child failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut n = Native::default();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        match k {
            "ok" => n.ok = v.parse().unwrap_or(0),
            "failed" => n.failed = v.parse().unwrap_or(0),
            "objects" => n.objects = v.parse().unwrap_or(0),
            "total_ns" => n.total = Duration::from_nanos(v.parse().unwrap_or(0)),
            "times_ns" => {
                n.times = v
                    .split(',')
                    .filter_map(|t| t.parse().ok())
                    .map(Duration::from_nanos)
                    .collect();
                n.times.sort();
            }
            "peak_rss_mb" => n.peak_rss_mb = v.parse().unwrap_or(0.0),
            "first_error" => n.first_error = Some(v.to_string()),
            _ => {}
        }
    }
    n
}

/// Evenly spaced sample of `k` items (all when `k >= len`).
fn sample<T: Clone>(items: &[T], k: usize) -> Vec<T> {
    if k >= items.len() {
        return items.to_vec();
    }
    (0..k).map(|i| items[i * items.len() / k].clone()).collect()
}

/// Times one process per overlay; returns (successes, total time of the runs).
fn time_processes(
    dirs: &[PathBuf],
    mut command: impl FnMut(&Path) -> Command,
) -> (usize, Duration) {
    let mut ok = 0;
    let start = Instant::now();
    for dir in dirs {
        let out = command(dir).output().expect("process runs");
        if out.status.success() {
            ok += 1;
        }
    }
    (ok, start.elapsed())
}

fn kubectl_available() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 10.0 {
        format!("{ms:.2} ms")
    } else if ms < 10_000.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{:.1} s", ms / 1000.0)
    }
}

fn per(d: Duration, n: usize) -> Duration {
    if n == 0 { Duration::ZERO } else { d / n as u32 }
}

struct Row {
    n: usize,
    generate: Duration,
    files: String,
    native: Native,
    binary: Option<(usize, usize, Duration)>,
    kubectl: Option<(usize, usize, Duration)>,
}

fn measure(n: usize, opts: &Options, kubectl: bool) -> Row {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("fleet");
    let t = Instant::now();
    let mut gen_cmd = Command::new(FLEETGEN);
    gen_cmd
        .args(["--clusters", &n.to_string(), "--out"])
        .arg(&root);
    if opts.plain {
        gen_cmd.arg("--plain");
    }
    let out = gen_cmd.output().expect("fleetgen runs");
    assert!(
        out.status.success(),
        "fleetgen failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let generate = t.elapsed();
    let files = String::from_utf8_lossy(&out.stdout)
        .split_once(": ")
        .map(|(_, s)| s.trim().to_string())
        .unwrap_or_default();

    let native = run_child(&root);
    let dirs = overlays(&root);
    let picked = sample(&dirs, opts.kubectl_sample);
    let binary = (native.ok > 0).then(|| {
        let (ok, t) = time_processes(&picked, |d| {
            let mut c = Command::new(ARO_GITOPS);
            c.args(["--log", "error", "render"])
                .arg(root.join(d))
                .arg("--root")
                .arg(&root);
            c
        });
        (picked.len(), ok, t)
    });
    let kubectl = kubectl.then(|| {
        let (ok, t) = time_processes(&picked, |d| {
            let mut c = Command::new("kubectl");
            c.arg("kustomize").arg(root.join(d));
            c
        });
        (picked.len(), ok, t)
    });
    Row {
        n,
        generate,
        files,
        native,
        binary,
        kubectl,
    }
}

fn report(rows: &[Row], opts: &Options, kubectl: bool) {
    println!(
        "## Render benchmark ({} fleet)\n",
        if opts.plain {
            "plain: resources + namespace only"
        } else {
            "kustomize features: components, patches, generators"
        }
    );
    println!(
        "| N | fleet | generate | native ok/failed | native total | native per overlay (mean / p50 / max) | \
         objects | peak RSS (native) | `aro-gitops render` per process | kubectl per overlay | kubectl total | speedup |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        let nat = &r.native;
        let p50 = nat
            .times
            .get(nat.times.len() / 2)
            .copied()
            .unwrap_or_default();
        let max = nat.times.last().copied().unwrap_or_default();
        let native_per = per(nat.total, nat.ok + nat.failed);
        let native_times = if nat.ok == 0 {
            "n/a (nothing rendered)".to_string()
        } else {
            format!("{} / {} / {}", ms(native_per), ms(p50), ms(max))
        };
        let binary = match r.binary {
            Some((k, ok, t)) => format!("{} ({ok}/{k} ok)", ms(per(t, k))),
            None => "n/a".into(),
        };
        let (kper, ktotal, speedup) = match r.kubectl {
            Some((k, ok, t)) => {
                let each = per(t, k);
                let total = each * r.n as u32;
                let note = if k < r.n {
                    format!("{} (extrapolated from {k})", ms(total))
                } else {
                    ms(total)
                };
                let speedup = if nat.failed == 0 && nat.ok > 0 {
                    format!("{:.0}×", total.as_secs_f64() / nat.total.as_secs_f64())
                } else {
                    "n/a (native failed)".into()
                };
                (format!("{} ({ok}/{k} ok)", ms(each)), note, speedup)
            }
            None => ("n/a".into(), "n/a".into(), "n/a".into()),
        };
        println!(
            "| {} | {} | {} | {}/{} | {} | {native_times} | {} | {:.0} MB | {binary} | {kper} | {ktotal} | {speedup} |",
            r.n,
            r.files,
            ms(r.generate),
            nat.ok,
            nat.failed,
            ms(nat.total),
            nat.objects,
            nat.peak_rss_mb,
        );
    }
    println!();
    if !kubectl {
        println!("kubectl is not on PATH: no kubectl numbers.\n");
    }
    for r in rows.iter().filter(|r| r.native.failed > 0) {
        println!(
            "- N={}: the native renderer refused {} of {} overlays; first error: {}",
            r.n,
            r.native.failed,
            r.n,
            r.native.first_error.as_deref().unwrap_or("?")
        );
    }
    let ok: Vec<&Row> = rows.iter().filter(|r| r.native.failed == 0).collect();
    if let (Some(first), Some(last)) = (ok.first(), ok.last())
        && first.n != last.n
    {
        let a = per(first.native.total, first.n).as_secs_f64();
        let b = per(last.native.total, last.n).as_secs_f64();
        println!(
            "- growth: native time per overlay at N={} is {:.2}× that at N={} (1.0 = linear in N); totals {} → {}",
            last.n,
            b / a,
            first.n,
            ms(first.native.total),
            ms(last.native.total)
        );
    }
    for r in rows.iter().filter(|r| r.n == 1000) {
        if let (Some((k, _, t)), 0) = (r.kubectl, r.native.failed) {
            let kubectl_total = per(t, k) * r.n as u32;
            println!(
                "- N=1,000: kubectl {} (extrapolated from {k} overlays) vs native {} in-process: {:.0}× (target ≥ 50×); peak RSS {:.0} MB (target ≤ 200 MB)",
                ms(kubectl_total),
                ms(r.native.total),
                kubectl_total.as_secs_f64() / r.native.total.as_secs_f64(),
                r.native.peak_rss_mb
            );
        }
    }
}

/// The allocator the `aro-gitops` binary uses, so the native numbers are the agent's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        let root = args.get(i + 1).expect("--child ROOT");
        child(Path::new(root));
        return;
    }
    let opts = options(&args);
    let kubectl = kubectl_available();
    let rows: Vec<Row> = opts
        .sizes
        .iter()
        .map(|&n| {
            eprintln!("render bench: N={n}...");
            measure(n, &opts, kubectl)
        })
        .collect();
    report(&rows, &opts, kubectl);
}

//! The long-running cases of the fleet benchmark (issue 12): a converged fleet (populated with
//! `run --once`, whose state the long-running `run` then reuses) followed by a `run` without
//! `--once`, read through the line it prints at the end of each cycle
//! (`cycle N (drift): U units, W writes, L lists, G gets, S s`, see `aro_gitops::agent::CycleLine`).
//!
//! - `--noop-resync N[,N...]`: N clusters converged, then `run --drift-interval 5s`: the initial
//!   sync's line and the next `--noop-cycles` (default 3) drift cycles' lines. Target: 0 writes,
//!   0 LISTs, 0 GETs, ≤ 10 s at 1,000 clusters; each cycle's CPU time (`/proc/PID/stat`) is shown
//!   beside its wall time, as the machine may be shared. The converged embedded store is kept in
//!   the work directory (`resync-state-N`) and reused by the next run. With
//!   `--noop-resync-served`, the same against `control-plane serve --simulate-azure` in its own
//!   process (`--kubeconfig`).
//! - `--drift-memory N,CYCLES`: N clusters converged, then `run --drift-interval 0s` for CYCLES
//!   drift cycles; the agent's VmRSS (`/proc/PID/status`) after cycle 1, a few between, and after
//!   the last. Target: within 10% of cycle 1's after 1,000 cycles on 200 clusters.

use super::common::{ARO_GITOPS, Server, TIME, log_tail, mb, run_measured, spawn_lines, yes};
use aro_gitops::agent::CycleLine;
use std::path::Path;
use std::process::{Child, Command};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

const TARGET_NOOP_SECS: f64 = 10.0;
const TARGET_MEMORY_GROWTH: f64 = 0.10;

/// The 1-, 5- and 15-minute load averages, as `/proc/loadavg` gives them.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "n/a".into())
}

/// The resident set size of a running process now (VmRSS), from `/proc/PID/status`.
fn rss_mb_of(pid: u32) -> Option<f64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
}

/// The CPU time a running process has used (user and system), from `/proc/PID/stat`: with other
/// work on the machine, what a cycle costs whatever the load.
fn cpu_s_of(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0) // USER_HZ
}

/// A long-running `run`, its cycle lines as they come; killed when dropped.
struct LongRun {
    child: Child,
    lines: Receiver<String>,
}

impl LongRun {
    fn start(
        repo: &Path,
        state: &Path,
        kubeconfig: Option<&Path>,
        drift_interval: &str,
    ) -> LongRun {
        let mut cmd = Command::new(ARO_GITOPS);
        cmd.args([
            "--log",
            "warn",
            "run",
            "--interval",
            "24h",
            "--drift-interval",
        ])
        .arg(drift_interval)
        .args(["--timeout", "30m", "--repo"])
        .arg(repo)
        .arg("--state")
        .arg(state);
        match kubeconfig {
            Some(k) => cmd.arg("--kubeconfig").arg(k),
            None => cmd.args(["--sim-delay", "0s"]),
        };
        let (child, lines) = spawn_lines(&mut cmd);
        LongRun { child, lines }
    }

    /// The next cycle line (within `wait`).
    fn next(&self, wait: Duration) -> Option<CycleLine> {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).ok()?;
            if let Some(c) = CycleLine::parse(&line) {
                return Some(c);
            }
        }
    }
}

impl Drop for LongRun {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Brings `n` clusters to converged with `run --once` in `state` (against `kubeconfig` when
/// given); false when it did not.
fn populate(n: usize, repo: &Path, state: &Path, kubeconfig: Option<&Path>) -> bool {
    eprintln!("fleet bench: populating {n} clusters with run --once...");
    let mut args = vec!["--log", "warn", "run", "--once", "--timeout", "30m"];
    args.extend([
        "--repo",
        repo.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
    ]);
    match kubeconfig {
        Some(k) => args.extend(["--kubeconfig", k.to_str().unwrap()]),
        None => args.extend(["--sim-delay", "0s"]),
    }
    let m = run_measured(ARO_GITOPS, &args, Path::new(TIME).exists());
    eprintln!(
        "fleet bench: populated in {:.1} s (peak RSS {}), exit {:?}",
        m.wall.as_secs_f64(),
        mb(m.peak_rss_mb),
        m.code
    );
    if m.code != Some(0) {
        eprintln!("{}\n{}", log_tail(&m.stdout, 10), log_tail(&m.stderr, 20));
    }
    m.code == Some(0)
}

/// How long the initial sync of a long-running run may take.
const INITIAL_WAIT: Duration = Duration::from_secs(1800);

/// `--noop-resync`: the no-op drift cycles of `n` converged clusters.
pub fn noop_resync(n: usize, repo: &Path, dir: &Path, served: bool, cycles: usize) {
    let state = dir.join(format!("resync-state-{n}"));
    let served_state = dir.join(format!("resync-served-{n}"));
    // A converged embedded store left by an earlier run is reused (populate is most of the time).
    let populated = state.join("populated");
    let reuse = !served && populated.exists();
    if !reuse {
        let _ = std::fs::remove_dir_all(&state);
    }
    let _ = std::fs::remove_dir_all(&served_state);
    let server = if served {
        match super::common::serve_simulated(&served_state) {
            Some(s) => Some(s),
            None => {
                eprintln!("fleet bench: `control-plane serve --simulate-azure` did not start");
                return;
            }
        }
    } else {
        None
    };
    let kubeconfig = server.as_ref().map(|s| s.kubeconfig.as_path());
    let plane = if served {
        "served (own process)"
    } else {
        "embedded"
    };
    if reuse {
        eprintln!(
            "fleet bench: reusing the converged store in {}",
            state.display()
        );
    } else if populate(n, repo, &state, kubeconfig) {
        if !served {
            let _ = std::fs::write(&populated, "");
        }
    } else {
        println!("| {n} | {plane} | populate failed | | | | | | | |");
        return;
    }
    let load_before = load_average();
    eprintln!("fleet bench: long-running run on {n} converged clusters ({plane})...");
    let run = LongRun::start(repo, &state, kubeconfig, "5s");
    let started = Instant::now();
    println!(
        "\n### No-op resync: {n} converged clusters, long-running `run --drift-interval 5s` ({plane})\n"
    );
    println!(
        "| cycle | units | writes | lists | gets | cycle time | agent CPU in the cycle | agent RSS | server peak RSS | met |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut cpu = cpu_s_of(run.child.id());
    let mut met_all = true;
    for i in 0..=cycles {
        let wait = if i == 0 {
            INITIAL_WAIT
        } else {
            Duration::from_secs(120)
        };
        let Some(line) = run.next(wait) else {
            println!("| no cycle line within {wait:?} | | | | | | | | | ✗ |");
            met_all = false;
            break;
        };
        let met = line.number == 0
            || (line.writes == 0
                && line.lists == 0
                && line.gets == 0
                && line.seconds <= TARGET_NOOP_SECS);
        met_all &= met;
        let cpu_now = cpu_s_of(run.child.id());
        let cpu_cycle = cpu_now
            .zip(cpu)
            .map_or("n/a".into(), |(a, b)| format!("{:.1} s", a - b));
        cpu = cpu_now;
        println!(
            "| {} ({:?}) | {} | {} | {} | {} | {:.1} s | {cpu_cycle} | {} | {} | {} |",
            line.number,
            line.trigger,
            line.units,
            line.writes,
            line.lists,
            line.gets,
            line.seconds,
            mb(rss_mb_of(run.child.id())),
            mb(server.as_ref().and_then(Server::peak_rss_mb)),
            if line.number == 0 {
                "(initial sync)"
            } else if met {
                "✓"
            } else {
                "✗"
            }
        );
    }
    println!(
        "\nload average before / after: {load_before} / {}; {:.0} s in all",
        load_average(),
        started.elapsed().as_secs_f64()
    );
    println!(
        "- no-op drift cycles of {n} clusters ({plane}): 0 writes, 0 LISTs, 0 GETs, ≤ {TARGET_NOOP_SECS} s each: {}",
        yes(met_all)
    );
    drop(run);
    drop(server);
    if served {
        let _ = std::fs::remove_dir_all(&state);
    }
    let _ = std::fs::remove_dir_all(&served_state);
}

/// The cycles after which `--drift-memory` samples the agent's memory: the first, a few between
/// and the last.
fn samples(cycles: u64) -> Vec<u64> {
    let mut at: Vec<u64> = [1, 10, 50, 100, 250, 500, 750, cycles]
        .into_iter()
        .chain([cycles / 4, cycles / 2, cycles * 3 / 4])
        .filter(|&c| c >= 1 && c <= cycles)
        .collect();
    at.sort_unstable();
    at.dedup();
    at
}

/// `--drift-memory N,CYCLES`: the agent's memory along `cycles` drift cycles of `n` clusters.
pub fn drift_memory(n: usize, cycles: u64, repo: &Path, dir: &Path) {
    let state = dir.join(format!("memory-state-{n}"));
    let _ = std::fs::remove_dir_all(&state);
    if !populate(n, repo, &state, None) {
        println!("\n{n} clusters: populate failed");
        return;
    }
    let load_before = load_average();
    eprintln!("fleet bench: {cycles} drift cycles on {n} clusters...");
    let run = LongRun::start(repo, &state, None, "0s");
    let started = Instant::now();
    println!(
        "\n### Memory along {cycles} drift cycles: {n} converged clusters, long-running `run --drift-interval 0s` (embedded)\n"
    );
    println!(
        "| after cycle | agent RSS (VmRSS) | vs cycle 1 | writes | lists | gets | cycle time |"
    );
    println!("|---|---|---|---|---|---|---|");
    let at = samples(cycles);
    let mut first: Option<f64> = None;
    let mut last = None;
    let (mut writes, mut lists, mut gets, mut slowest) = (0, 0, 0, 0.0f64);
    loop {
        let wait = if last.is_none() {
            INITIAL_WAIT
        } else {
            Duration::from_secs(300)
        };
        let Some(line) = run.next(wait) else {
            println!("| no cycle line within {wait:?} | | | | | | |");
            break;
        };
        if line.number == 0 {
            continue;
        }
        writes += line.writes;
        lists += line.lists;
        gets += line.gets;
        slowest = slowest.max(line.seconds);
        if at.contains(&line.number) {
            let rss = rss_mb_of(run.child.id());
            if line.number == 1 {
                first = rss;
            }
            let vs = rss.zip(first).map_or("n/a".into(), |(r, f)| {
                format!("{:+.1}%", (r / f - 1.0) * 100.0)
            });
            println!(
                "| {} | {} | {vs} | {} | {} | {} | {:.1} s |",
                line.number,
                mb(rss),
                line.writes,
                line.lists,
                line.gets,
                line.seconds
            );
            last = rss.map(|r| (line.number, r));
        }
        if line.number >= cycles {
            break;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "\nall {cycles} cycles: {writes} writes, {lists} lists, {gets} gets; slowest cycle {slowest:.1} s; {elapsed:.0} s in all; load average before / after: {load_before} / {}",
        load_average()
    );
    match (first, last) {
        (Some(f), Some((c, l))) if c == cycles => println!(
            "- memory after {cycles} drift cycles on {n} clusters within 10% of after the first: {} ({} → {}, {:+.1}%)",
            yes(l <= f * (1.0 + TARGET_MEMORY_GROWTH)),
            mb(Some(f)),
            mb(Some(l)),
            (l / f - 1.0) * 100.0
        ),
        _ => println!(
            "- memory after {cycles} drift cycles on {n} clusters: not measured to the end"
        ),
    }
    drop(run);
    let _ = std::fs::remove_dir_all(&state);
}

//! What the process benchmarks share (`plan`, `fleet`, `rollout`): a real git repository for a generated
//! fleet, a measured run of a binary (wall time, and peak RSS and CPU from `/usr/bin/time -v`),
//! and the formatting of their figures.

#![allow(dead_code)] // each bench uses its part

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub const FLEETGEN: &str = env!("CARGO_BIN_EXE_aro-gitops-fleetgen");
pub const ARO_GITOPS: &str = env!("CARGO_BIN_EXE_aro-gitops");
pub const TIME: &str = "/usr/bin/time";

/// `git` in `repo`, with a bench identity; panics when it fails.
pub fn git(repo: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args([
            "-c",
            "user.name=aro-gitops bench",
            "-c",
            "user.email=bench@example.invalid",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes a fleet of `n` clusters with `aro-gitops-fleetgen` into `repo` and makes it a git
/// repository on `main` with one commit.
pub fn generate_fleet(n: usize, repo: &Path) {
    generate_fleet_with(n, &[], repo);
}

/// A process run: wall time, peak RSS (from `/usr/bin/time -v` when available), exit code, output.
pub struct Measured {
    pub wall: Duration,
    pub peak_rss_mb: Option<f64>,
    pub cpu: Option<Duration>,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `bin args`, under `/usr/bin/time -v` when `time_v`.
pub fn run_measured(bin: &str, args: &[&str], time_v: bool) -> Measured {
    let mut cmd = if time_v {
        let mut c = Command::new(TIME);
        c.arg("-v").arg(bin);
        c
    } else {
        Command::new(bin)
    };
    cmd.args(args);
    let start = Instant::now();
    let out: Output = cmd.output().expect("the measured binary runs");
    let wall = start.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let (peak_rss_mb, cpu) = time_report(&stderr);
    // `time -v` passes the command's exit code on as its own.
    Measured {
        wall,
        peak_rss_mb,
        cpu,
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    }
}

/// The peak RSS (MB) and CPU time (user and system) in a report of `/usr/bin/time -v`.
pub fn time_report(text: &str) -> (Option<f64>, Option<Duration>) {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .map(|v| v.trim().to_string())
    };
    let secs = |name: &str| field(name).and_then(|v| v.parse::<f64>().ok());
    let peak_rss_mb = field("Maximum resident set size (kbytes):")
        .and_then(|v| v.parse::<f64>().ok())
        .map(|kb| kb / 1024.0);
    let cpu = match (secs("User time (seconds):"), secs("System time (seconds):")) {
        (Some(u), Some(s)) => Some(Duration::from_secs_f64(u + s)),
        _ => None,
    };
    (peak_rss_mb, cpu)
}

/// The CPU time (user and system) a running process has used so far, from `/proc/PID/stat`
/// (clock ticks of 10 ms).
pub fn cpu_of(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command's name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    // utime and stime are the stat file's fields 14 and 15: the 12th and 13th after the name.
    Some(Duration::from_millis((ticks(11)? + ticks(12)?) * 10))
}

/// The last `n` log lines and errors of a run, without `time -v`'s report.
pub fn log_tail(stderr: &str, n: usize) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .take_while(|l| !l.trim_start().starts_with("Command being timed:"))
        .collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Peak RSS (VmHWM) of a running process, from `/proc/PID/status`.
pub fn peak_rss_mb_of(pid: u32) -> Option<f64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
}

pub fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 10_000.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{:.1} s", ms / 1000.0)
    }
}

pub fn mb(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("{v:.0} MB"))
}

pub fn yes(b: bool) -> &'static str {
    if b { "**yes**" } else { "**no**" }
}

/// `aro-gitops control-plane serve --state DIR` (with `args` added) in its own process, so that
/// an agent with `--kubeconfig` pays for reading live state over HTTP as with a real cluster.
/// Killed when dropped.
pub struct Server {
    pub child: std::process::Child,
    pub kubeconfig: std::path::PathBuf,
}

impl Server {
    /// Starts `bin control-plane serve --state dir args` and waits up to `wait` for a line of its
    /// output that starts with `ready` (`None` when it did not come: the server is stopped).
    pub fn start(
        bin: &str,
        dir: &Path,
        args: &[&str],
        ready: &str,
        wait: Duration,
    ) -> Option<Server> {
        use std::io::BufRead;
        use std::process::Stdio;
        let mut child = Command::new(bin)
            .args(["--log", "warn", "control-plane", "serve", "--state"])
            .arg(dir)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .ok()?;
        let stdout = child.stdout.take()?;
        // Reads the server's output to its end (so it never writes into a closed pipe) and says
        // when it serves.
        let (tx, rx) = std::sync::mpsc::channel();
        let ready = ready.to_string();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if line.starts_with(&ready) {
                    let _ = tx.send(());
                }
            }
        });
        let mut server = Server {
            child,
            kubeconfig: dir.join("kubeconfig"),
        };
        if rx.recv_timeout(wait).is_err() {
            server.stop();
            return None;
        }
        Some(server)
    }

    /// The server's peak RSS so far.
    pub fn peak_rss_mb(&self) -> Option<f64> {
        peak_rss_mb_of(self.child.id())
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `control-plane serve --simulate-azure --sim-delay 0s` in its own process, serving the store in
/// `dir`.
pub fn serve_simulated(dir: &Path) -> Option<Server> {
    Server::start(
        ARO_GITOPS,
        dir,
        &["--simulate-azure", "--sim-delay", "0s"],
        "Azure is SIMULATED",
        Duration::from_secs(120),
    )
}

/// Writes a fleet of `n` clusters with `aro-gitops-fleetgen` and `flags` into `repo` and makes it
/// a git repository on `main` with one commit (what the fleet's `.gitignore` keeps out stays out).
pub fn generate_fleet_with(n: usize, flags: &[&str], repo: &Path) {
    let out = Command::new(FLEETGEN)
        .args(["--clusters", &n.to_string()])
        .args(flags)
        .arg("--out")
        .arg(repo)
        .output()
        .expect("fleetgen runs");
    assert!(
        out.status.success(),
        "fleetgen failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    git(repo, &["init", "-q", "-b", "main"]);
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-qm", "fleet"]);
}

/// The machine's 1-minute load average (`/proc/loadavg`).
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The simulated Azure requests a run's summary printed
/// (`azure: N token requests, M key vault requests (simulated)`): `(N, M)`.
pub fn azure_requests(stdout: &str) -> Option<(u64, u64)> {
    let rest = stdout.lines().find_map(|l| l.strip_prefix("azure: "))?;
    let mut n = rest
        .split(|c: char| !c.is_ascii_digit())
        .filter(|t| !t.is_empty())
        .map(|v| v.parse().ok());
    Some((n.next()??, n.next()??))
}

/// `cmd` started with its standard output read line by line on a thread (stdin closed, stderr
/// inherited): the child and its lines as they come.
pub fn spawn_lines(cmd: &mut Command) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    use std::io::BufRead;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the process starts");
    let stdout = child.stdout.take().expect("piped");
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    (child, lines)
}

/// One HTTP/1.1 request on `addr` (the connection closed after it): the status code and the
/// body; `None` when the server cannot be reached or answers nothing readable.
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok()?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).ok()?;
    stream.write_all(body).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let code = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())?;
    Some((code, body))
}

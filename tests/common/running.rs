//! A long-running `aro-gitops run` (no `--once`) as a child process, its output as lines; killed
//! when dropped (a failed assertion included). [`Running`] reads standard output as it comes;
//! [`Process`] keeps every line seen (standard output and error), waits for one, sends signals and
//! waits for the exit.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

/// Short leader-election timings for `run --leader-elect`, so a handover takes seconds (lease
/// 4 s, renew deadline 3 s, retry 500 ms).
pub const FAST_ELECTION: &[&str] = &[
    "--leader-election-lease-duration",
    "4s",
    "--leader-election-renew-deadline",
    "3s",
    "--leader-election-retry-period",
    "500ms",
];
/// The lease duration of [`FAST_ELECTION`].
pub const FAST_LEASE_DURATION: Duration = Duration::from_secs(4);

pub struct Running {
    child: Child,
    /// Standard output's lines (and standard error's, when started with `stderr`), as they come.
    pub lines: Receiver<String>,
}

impl Running {
    /// `aro-gitops run --repo REPO --state STATE`, following it (a fetch an hour unless `extra`
    /// sets `--interval`), with `extra` arguments; standard error joins the lines when `stderr`.
    pub fn start(repo: &Path, state: &Path, extra: &[&str], stderr: bool) -> Running {
        let interval: &[&str] = if extra.contains(&"--interval") {
            &[]
        } else {
            &["--interval", "1h"]
        };
        let mut child = Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
            .arg("run")
            .arg("--repo")
            .arg(repo)
            .arg("--state")
            .arg(state)
            .args(["--sim-delay", "0s", "--timeout", "120s"])
            .args(interval)
            .args(extra)
            .env("ARO_GITOPS_LOG", "warn")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(if stderr {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .spawn()
            .expect("the binary starts");
        let (tx, lines) = channel();
        forward(child.stdout.take().expect("piped"), tx.clone());
        if let Some(err) = child.stderr.take() {
            forward(err, tx);
        }
        Running { child, lines }
    }

    /// The address in the first line `{prefix}ADDR{suffix}` the agent prints within `wait` (a
    /// server it started on port 0); the output seen so far when none comes.
    pub fn served_address(&self, prefix: &str, suffix: &str, wait: Duration) -> String {
        let deadline = Instant::now() + wait;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(addr) = line
                        .strip_prefix(prefix)
                        .and_then(|rest| rest.strip_suffix(suffix))
                    {
                        return addr.to_string();
                    }
                    seen.push(line);
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no line {prefix:?} within {wait:?}; output:\n{}",
                        seen.join("\n")
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the agent ended; output:\n{}", seen.join("\n"))
                }
            }
        }
    }
}

/// Sends each line of `stream` to `tx` until either ends (on a thread of its own).
pub fn forward(stream: impl std::io::Read + Send + 'static, tx: Sender<String>) {
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stream)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A child process (any command: the agent, or the agent behind `unshare`) with its standard
/// output and error as lines, kept in [`Process::seen`]; killed when dropped.
pub struct Process {
    child: Child,
    lines: Receiver<String>,
    pub seen: Vec<String>,
}

impl Process {
    /// Starts `command` with standard output and error piped (standard input closed).
    pub fn spawn(command: &mut Command) -> Process {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the process starts");
        let (tx, lines) = channel();
        forward(child.stdout.take().expect("piped"), tx.clone());
        forward(child.stderr.take().expect("piped"), tx);
        Process {
            child,
            lines,
            seen: vec![],
        }
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Waits for a line holding `what`; what follows it on that line.
    pub fn after(&mut self, what: &str, wait: Duration) -> String {
        let line = self.wait_for(what, wait);
        let at = line.find(what).expect("found") + what.len();
        line[at..].to_string()
    }

    /// Waits for a line holding `what` (the lines seen so far count too).
    pub fn wait_for(&mut self, what: &str, wait: Duration) -> String {
        self.wait_for_from(0, what, wait)
    }

    /// Waits for a line holding `what` among the lines from the `from`-th seen on.
    pub fn wait_for_from(&mut self, from: usize, what: &str, wait: Duration) -> String {
        if let Some(l) = self.seen.iter().skip(from).find(|l| l.contains(what)) {
            return l.clone();
        }
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(what) {
                        return line;
                    }
                }
                Err(e) => panic!(
                    "no line with {what:?} within {wait:?} ({e}); output:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// Reads what has arrived so far.
    pub fn drain(&mut self) {
        while let Ok(line) = self.lines.try_recv() {
            self.seen.push(line);
        }
    }

    /// Everything seen so far, one line each.
    pub fn output(&mut self) -> String {
        self.drain();
        self.seen.join("\n")
    }

    /// Sends `signal` (a `kill -s` name: TERM, INT, KILL).
    pub fn signal(&self, signal: &str) {
        let ok = Command::new("kill")
            .args(["-s", signal, &self.child.id().to_string()])
            .status()
            .expect("kill runs")
            .success();
        assert!(ok, "kill -s {signal} failed");
    }

    /// Waits for the process to end, reading its output meanwhile.
    pub fn wait_exit(&mut self, wait: Duration) -> ExitStatus {
        let deadline = Instant::now() + wait;
        loop {
            self.drain();
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                // The rest of its output.
                while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(500)) {
                    self.seen.push(line);
                }
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "still running after {wait:?}; output:\n{}",
                self.seen.join("\n")
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends SIGTERM and waits for a graceful stop of a leader: exit 0 after "shutting down",
    /// "leader election: Lease released" and "shutdown complete"; the whole output.
    pub fn terminate_leader(&mut self, wait: Duration) -> String {
        self.signal("TERM");
        let status = self.wait_exit(wait);
        let out = self.output();
        assert_eq!(status.code(), Some(0), "{status:?}; output:\n{out}");
        for stage in [
            "shutting down",
            "leader election: Lease released",
            "shutdown complete",
        ] {
            assert!(out.contains(stage), "no {stage:?} in:\n{out}");
        }
        out
    }

    /// SIGKILL, and reaps it.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill9();
    }
}

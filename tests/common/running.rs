//! A long-running `aro-gitops run` (no `--once`) as a child process, its output as lines; killed
//! when dropped (a failed assertion included).

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

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

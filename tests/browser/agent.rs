//! `aro-gitops run --status-bind-address 127.0.0.1:0` (long-running, `--interval 1h`: the local
//! repository's watcher picks up commits) on a copy of `examples-repo/`, and where it serves.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

/// The agent's line saying where the status page is: `{PREFIX}ADDR{SUFFIX}`.
const PREFIX: &str = "status page: serving on http://";
const SUFFIX: &str = "/";

pub struct Agent {
    child: Child,
    lines: Receiver<String>,
}

impl Agent {
    /// The agent on the git work tree `repo` (watched: a commit there is fetched at once), its
    /// state in `state`.
    pub fn start(repo: &Path, state: &Path) -> Agent {
        let mut child = Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
            .arg("run")
            .arg("--repo")
            .arg(repo)
            .arg("--state")
            .arg(state)
            .args(["--sim-delay", "0s", "--timeout", "120s", "--interval", "1h"])
            .args(["--status-bind-address", "127.0.0.1:0"])
            .env("ARO_GITOPS_LOG", "warn")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let (tx, lines) = channel();
        // Both streams, line by line (stderr has the warnings and why the agent ended).
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        forward(stdout, tx.clone());
        forward(stderr, tx);
        Agent { child, lines }
    }

    /// The status page's base URL (`http://ADDR`), once the agent says it serves it (within
    /// `wait`); the output seen so far when it does not.
    pub fn status_url(&self, wait: Duration) -> String {
        let deadline = Instant::now() + wait;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let addr = line.strip_prefix(PREFIX).map(|r| r.trim_end());
                    if let Some(addr) = addr.map(|a| a.strip_suffix(SUFFIX).unwrap_or(a)) {
                        return format!("http://{addr}");
                    }
                    seen.push(line);
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no line {PREFIX:?} within {wait:?}; output:\n{}",
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

/// Sends each line of `stream` to `tx` until either ends.
fn forward(stream: impl std::io::Read + Send + 'static, tx: Sender<String>) {
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

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

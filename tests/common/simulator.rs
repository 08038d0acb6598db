//! One `aro-gitops azure-simulator --kubeconfig KC` process (no provisioning delay) for the tests
//! that run the agent against a server reached by kubeconfig: started, waited on, stopped.

use super::running::forward;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// How long the simulator may take to start serving, or to exit.
const START: Duration = Duration::from_secs(30);

/// One `aro-gitops azure-simulator --kubeconfig KC` process; killed when dropped.
pub struct Simulator {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Simulator {
    pub fn spawn(kubeconfig: &Path) -> Simulator {
        let mut child = Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
            .args(["azure-simulator", "--sim-delay", "0s", "--kubeconfig"])
            .arg(kubeconfig)
            .env("ARO_GITOPS_LOG", "warn")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let (tx, lines) = channel();
        forward(child.stdout.take().expect("piped"), tx.clone());
        forward(child.stderr.take().expect("piped"), tx);
        Simulator {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Started, and serving: the address of its first line.
    pub fn start(kubeconfig: &Path) -> (Simulator, String) {
        let mut sim = Simulator::spawn(kubeconfig);
        let addr = sim.wait_for("azure simulator: serving on https://");
        (sim, addr)
    }

    /// Everything it printed so far.
    pub fn drain(&mut self) -> String {
        while let Ok(line) = self.lines.try_recv() {
            self.seen.push(line);
        }
        self.seen.join("\n")
    }

    /// The rest of the first line starting with `prefix`.
    pub fn wait_for(&mut self, prefix: &str) -> String {
        let deadline = Instant::now() + START;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let found = line.strip_prefix(prefix).map(str::to_string);
                    self.seen.push(line);
                    if let Some(rest) = found {
                        return rest;
                    }
                }
                Err(_) => panic!("no line {prefix:?}; output:\n{}", self.seen.join("\n")),
            }
        }
    }

    /// Waits for the process to end by itself; its exit code and everything it printed.
    pub fn wait_exit(mut self) -> (Option<i32>, String) {
        let deadline = Instant::now() + START;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("waitable") {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "the simulator did not exit; output:\n{}",
                self.seen.join("\n")
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        // Its pipes are closed: the rest of the output is there.
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(line);
        }
        (status.code(), self.seen.join("\n"))
    }

    /// SIGTERM; it must exit 0. Returns everything it printed.
    pub fn terminate(self) -> String {
        let pid = self.child.id().to_string();
        let kill = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        assert!(kill.success());
        let (code, out) = self.wait_exit();
        assert_eq!(code, Some(0), "SIGTERM: exit 0; output:\n{out}");
        out
    }
}

impl Drop for Simulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

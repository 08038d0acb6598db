//! One `aro-gitops azure-simulator --kubeconfig KC` process (no provisioning delay) for the tests
//! that run the agent against a server reached by kubeconfig: started, waited on, stopped.

use super::running::Process;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// How long the simulator may take to start serving, or to exit.
const START: Duration = Duration::from_secs(30);

/// One `aro-gitops azure-simulator --kubeconfig KC` process; killed when dropped.
pub struct Simulator(Process);

impl Simulator {
    pub fn spawn(kubeconfig: &Path) -> Simulator {
        Simulator(Process::spawn(
            Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
                .args(["azure-simulator", "--sim-delay", "0s", "--kubeconfig"])
                .arg(kubeconfig)
                .env("ARO_GITOPS_LOG", "warn")
                .env("NO_COLOR", "1"),
        ))
    }

    /// Started, and serving: the address of its first line.
    pub fn start(kubeconfig: &Path) -> (Simulator, String) {
        let mut sim = Simulator::spawn(kubeconfig);
        let addr = sim.0.after("azure simulator: serving on https://", START);
        (sim, addr)
    }

    /// Everything it printed so far.
    pub fn drain(&mut self) -> String {
        self.0.output()
    }

    /// Waits for the process to end by itself; its exit code and everything it printed.
    pub fn wait_exit(mut self) -> (Option<i32>, String) {
        let status = self.0.wait_exit(START);
        (status.code(), self.0.output())
    }

    /// SIGTERM; it must exit 0. Returns everything it printed.
    pub fn terminate(self) -> String {
        self.0.signal("TERM");
        let (code, out) = self.wait_exit();
        assert_eq!(code, Some(0), "SIGTERM: exit 0; output:\n{out}");
        out
    }
}

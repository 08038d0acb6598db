//! Test hooks that end the process at a chosen point (a crash there), for the tests of what a
//! crash may leave behind.

use crate::object::ObjectKey;

/// Test hook: with `ARO_GITOPS_FAILPOINT=exit-after-adoption-record` the process exits right after
/// a `reconcile-policy-if-exists` decision is recorded and before the create is sent (a crash there);
/// with `exit-after-owned-kinds-record` it kills itself (SIGKILL) right after a kind is recorded on
/// an ARO object and before the first resource of that kind is applied; with `slow-pass` every
/// pass waits a minute before it starts (a pass still in flight when a shutdown comes).
pub const FAILPOINT_ENV: &str = "ARO_GITOPS_FAILPOINT";

/// With [`FAILPOINT_ENV`] set to `name`: a real `kill -9` of this process, here.
pub(super) fn failpoint_kill(name: &str, object: &ObjectKey) {
    if std::env::var(FAILPOINT_ENV).as_deref() != Ok(name) {
        return;
    }
    tracing::error!(%object, failpoint = name, "failpoint: killing the process (SIGKILL)");
    let _ = std::process::Command::new("kill")
        .args(["-9", &std::process::id().to_string()])
        .status();
    loop {
        std::thread::park(); // the signal ends the process
    }
}

/// With [`FAILPOINT_ENV`] set to `slow-pass`: waits a minute (a long pass in flight).
pub(super) async fn failpoint_slow_pass() {
    if std::env::var(FAILPOINT_ENV).as_deref() == Ok("slow-pass") {
        tracing::warn!(
            failpoint = "slow-pass",
            "failpoint: this pass waits a minute"
        );
        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
    }
}

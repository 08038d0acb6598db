//! The agent end to end on a real kube-apiserver (issue 25, item 5): the binary runs with
//! `--kubeconfig` as deploy/base's ServiceAccount, held by the real RBAC authorizer to deploy/base's
//! ClusterRole and Role, so a missing permission fails the test. Azure is played by
//! `aro-gitops azure-simulator`, run against the same API server (`--use-azure-simulator`).
//!
//! Each test starts its own cluster (`scripts/real-cluster up`, about 7 s; see
//! `tests/common/real_cluster.rs`) and its own simulator. `converge` has the example fleet
//! converging to what it converges to on the embedded default, and a rerun writing nothing;
//! `day2` has plan, drift and self-heal of a `kubectl edit`, prune, and the deletion of a whole
//! cluster with and without consent; `refusals` has two units declaring one object and an
//! identity refusing a namespace.

mod common;
#[path = "real_server/converge.rs"]
mod converge;
#[path = "real_server/day2.rs"]
mod day2;
#[path = "real_server/refusals.rs"]
mod refusals;

pub use common::fleet::{DEV, Fleet, Output, PROD};
pub use common::real_examples::{EXAMPLES_FLEET, RealExamples};

/// Runs `fut` to its end on a runtime of its own (the tests are synchronous: they drive
/// processes, and [`Fleet::with_client`] makes its own runtime).
pub fn block_on<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(fut)
}

/// Asserts the run's summary gives `unit` the phase `phase`.
pub fn assert_phase(out: &Output, unit: &str, phase: &str) {
    assert_eq!(
        out.phase(unit).as_deref(),
        Some(phase),
        "{unit} {phase}:\n{}",
        out.all()
    );
}

//! Every check on both servers: one local control plane and one kube-apiserver, each shared by
//! all checks (every check in its own namespace), run side by side; one line per check with both
//! results, the figure, and the verdict against `known-differences.yaml`.

use super::CHECKS;
use super::report::{self, CheckResult, Outcome};
use super::servers::{Backend, run_check};
use crate::common::kubectl::Server;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

/// The declared table: checks that fail on a server, and why.
pub fn declared() -> BTreeMap<String, report::Declared> {
    report::load_declared(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/controlplane_kubectl/known-differences.yaml"),
    )
}

/// Runs every check on `backend`, in order; a failed check is its panic's message.
fn run_all(backend: &Backend) -> Vec<Outcome> {
    CHECKS
        .iter()
        .map(|(name, check)| {
            let started = Instant::now();
            let outcome = run_check(backend, name, *check);
            eprintln!(
                "{}: {name} took {:.1} s",
                backend.name,
                started.elapsed().as_secs_f64()
            );
            outcome
        })
        .collect()
}

#[test]
fn every_check_on_both_servers() {
    let started = Instant::now();
    let server = Server::start();
    let local = std::thread::spawn(move || {
        let outcomes = run_all(&Backend::local(&server));
        (outcomes, server.log())
    });
    let real = Backend::real();
    let kube = real.as_ref().map(|(backend, _)| run_all(backend));
    let (local, local_log) = local.join().expect("the local run");

    let results: Vec<CheckResult> = CHECKS
        .iter()
        .enumerate()
        .map(|(i, (name, _))| CheckResult {
            name: name.to_string(),
            local: local[i].clone(),
            kube: kube.as_ref().map_or(Outcome::NotRun, |k| k[i].clone()),
        })
        .collect();
    let problems = report::report("kubectl", &results, &declared(), started);
    assert!(
        problems.is_empty(),
        "{}\nthe failures in full:\n{}\nlocal server log:\n{local_log}",
        problems.join("\n"),
        failures(&results)
    );
}

/// Every failure's whole message, for the test's own failure.
fn failures(results: &[CheckResult]) -> String {
    let mut out = String::new();
    for r in results {
        for (server, outcome) in [(report::LOCAL, &r.local), (report::KUBE, &r.kube)] {
            if let Outcome::Failed(why) = outcome {
                out.push_str(&format!("--- {} on {server}:\n{why}\n", r.name));
            }
        }
    }
    out
}

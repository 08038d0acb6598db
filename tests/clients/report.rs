//! The client checks on both servers (issue 26, item 4): one line per check with both results,
//! a summary figure, and the verdict against a declared table of checks that fail on a server.
//!
//! Shared by `tests/controlplane_python.rs` and `tests/controlplane_kubectl.rs` (each includes
//! this file by path). The table is a YAML map beside the test, check name to
//! `{fails_on: local|kube-apiserver|both, reason: ...}`; the verdict wants it exact: a check
//! failing where it is not declared fails the test, and so does a declared check that passes.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The two servers' names, as printed.
pub const LOCAL: &str = "local";
pub const KUBE: &str = "kube-apiserver";

/// One check's result on one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Failed(String),
    /// The server was not run (`ARO_GITOPS_SKIP_REAL_CLUSTER`).
    NotRun,
}

impl Outcome {
    fn word(&self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed(_) => "FAILED",
            Outcome::NotRun => "not run",
        }
    }
}

/// One check's results on both servers.
#[derive(Debug, Clone)]
pub struct CheckResult {
    pub name: String,
    pub local: Outcome,
    pub kube: Outcome,
}

/// Where a declared check fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum FailsOn {
    #[serde(rename = "local")]
    Local,
    #[serde(rename = "kube-apiserver")]
    Kube,
    #[serde(rename = "both")]
    Both,
}

/// One entry of the declared table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Declared {
    pub fails_on: FailsOn,
    pub reason: String,
}

/// Reads the declared table (an empty or absent file declares nothing).
pub fn load_declared(file: &Path) -> BTreeMap<String, Declared> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return BTreeMap::new();
    };
    let value = aro_gitops::yaml::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not YAML: {e}", file.display()));
    if value.is_null() {
        return BTreeMap::new();
    }
    serde_json::from_value(value).unwrap_or_else(|e| {
        panic!(
            "{} maps check names to {{fails_on, reason}}: {e}",
            file.display()
        )
    })
}

/// `discovery: local ok, kube-apiserver ok`, then the declared reason if any, then the first
/// line of each failure.
pub fn line(r: &CheckResult, declared: &BTreeMap<String, Declared>) -> String {
    let mut out = format!(
        "{}: {LOCAL} {}, {KUBE} {}",
        r.name,
        r.local.word(),
        r.kube.word()
    );
    if let Some(d) = declared.get(&r.name) {
        out.push_str(&format!(" (declared: {})", d.reason));
    }
    for (server, outcome) in [(LOCAL, &r.local), (KUBE, &r.kube)] {
        if let Outcome::Failed(why) = outcome {
            let first = why.lines().next().unwrap_or_default();
            let short: String = first.chars().take(300).collect();
            out.push_str(&format!("\n    {server}: {short}"));
        }
    }
    out
}

/// `clients (WHO): N of M checks pass on both servers`, or on the local server alone when
/// kube-apiserver did not run.
pub fn summary(who: &str, results: &[CheckResult]) -> String {
    if results.iter().any(|r| r.kube == Outcome::NotRun) {
        let local = results.iter().filter(|r| r.local == Outcome::Ok).count();
        return format!(
            "clients ({who}): {local} of {} checks pass on the local server ({KUBE} not run)",
            results.len()
        );
    }
    let both = results
        .iter()
        .filter(|r| r.local == Outcome::Ok && r.kube == Outcome::Ok)
        .count();
    format!(
        "clients ({who}): {both} of {} checks pass on both servers",
        results.len()
    )
}

/// Prints one line per check and the summary (with the time since `started`); returns the
/// problems of the verdict against `declared`.
pub fn report(
    who: &str,
    results: &[CheckResult],
    declared: &BTreeMap<String, Declared>,
    started: std::time::Instant,
) -> Vec<String> {
    for r in results {
        println!("{}", line(r, declared));
    }
    println!(
        "{} ({:.1} s)",
        summary(who, results),
        started.elapsed().as_secs_f64()
    );
    verdict(results, declared)
}

/// Where a check failed, as the table would declare it; `None` when it failed nowhere.
fn failed_on(r: &CheckResult) -> Option<FailsOn> {
    let local = matches!(r.local, Outcome::Failed(_));
    let kube = matches!(r.kube, Outcome::Failed(_));
    match (local, kube) {
        (true, true) => Some(FailsOn::Both),
        (true, false) => Some(FailsOn::Local),
        (false, true) => Some(FailsOn::Kube),
        (false, false) => None,
    }
}

/// Whether an observed failure agrees with a declaration, given which servers ran.
fn agrees(observed: Option<FailsOn>, declared: FailsOn, kube_ran: bool) -> bool {
    if kube_ran {
        return observed == Some(declared);
    }
    // Only the local server ran: its half of the declaration is all that can be checked.
    let local_declared = matches!(declared, FailsOn::Local | FailsOn::Both);
    let local_failed = matches!(observed, Some(FailsOn::Local | FailsOn::Both));
    local_declared == local_failed
}

/// The problems with these results against the table: undeclared failures, declared failures
/// that did not happen (or happened elsewhere), and declarations naming no check.
pub fn verdict(results: &[CheckResult], declared: &BTreeMap<String, Declared>) -> Vec<String> {
    let mut problems = Vec::new();
    for name in declared.keys() {
        if !results.iter().any(|r| &r.name == name) {
            problems.push(format!("the table declares {name}, which is not a check"));
        }
    }
    for r in results {
        let kube_ran = r.kube != Outcome::NotRun;
        let observed = failed_on(r);
        match (declared.get(&r.name), observed) {
            (None, None) => {}
            (None, Some(_)) => problems.push(format!("{}: fails and is not declared", r.name)),
            (Some(d), _) if !agrees(observed, d.fails_on, kube_ran) => problems.push(format!(
                "{}: declared to fail on {:?} but failed on {}: update the table",
                r.name,
                d.fails_on,
                observed.map_or("neither server".to_string(), |o| format!("{o:?}"))
            )),
            (Some(_), _) => {}
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(name: &str, local: Outcome, kube: Outcome) -> CheckResult {
        CheckResult {
            name: name.into(),
            local,
            kube,
        }
    }

    fn declared(name: &str, fails_on: FailsOn) -> BTreeMap<String, Declared> {
        BTreeMap::from([(
            name.to_string(),
            Declared {
                fails_on,
                reason: "why".into(),
            },
        )])
    }

    #[test]
    fn the_table_must_be_exact() {
        let fail = || Outcome::Failed("boom".into());
        let passing = [result("a", Outcome::Ok, Outcome::Ok)];
        assert!(verdict(&passing, &BTreeMap::new()).is_empty());
        assert_eq!(
            verdict(&passing, &declared("a", FailsOn::Local)).len(),
            1,
            "a declared check that passes fails the verdict"
        );
        let local_only = [result("a", fail(), Outcome::Ok)];
        assert_eq!(verdict(&local_only, &BTreeMap::new()).len(), 1);
        assert!(verdict(&local_only, &declared("a", FailsOn::Local)).is_empty());
        assert_eq!(verdict(&local_only, &declared("a", FailsOn::Both)).len(), 1);
        assert_eq!(verdict(&passing, &declared("b", FailsOn::Kube)).len(), 1);
    }

    #[test]
    fn without_the_real_server_only_the_local_half_is_checked() {
        let run = [result("a", Outcome::Failed("x".into()), Outcome::NotRun)];
        assert!(verdict(&run, &declared("a", FailsOn::Both)).is_empty());
        assert_eq!(verdict(&run, &declared("a", FailsOn::Kube)).len(), 1);
        let ok = [result("a", Outcome::Ok, Outcome::NotRun)];
        assert!(verdict(&ok, &declared("a", FailsOn::Kube)).is_empty());
    }

    #[test]
    fn lines_and_summary() {
        let r = [
            result("discovery", Outcome::Ok, Outcome::Ok),
            result("leases", Outcome::Failed("one\ntwo".into()), Outcome::Ok),
        ];
        let none = BTreeMap::new();
        assert_eq!(line(&r[0], &none), "discovery: local ok, kube-apiserver ok");
        assert_eq!(
            line(&r[1], &declared("leases", FailsOn::Local)),
            "leases: local FAILED, kube-apiserver ok (declared: why)\n    local: one"
        );
        assert_eq!(
            summary("python", &r),
            "clients (python): 1 of 2 checks pass on both servers"
        );
        let alone = [result("a", Outcome::Ok, Outcome::NotRun)];
        assert_eq!(
            summary("kubectl", &alone),
            "clients (kubectl): 1 of 1 checks pass on the local server (kube-apiserver not run)"
        );
    }
}

//! kustomize's own cases (replayed with kustomize v5.5 into `../shared/conformance/kustomize`, see its
//! README) rendered with [`aro_gitops::render::render`] and compared with kustomize's output semantically:
//! same documents, same order, same values. A case whose expected output is an error passes when render
//! fails too.
//!
//! Prints a table (pass / FAIL / unsupported) and asserts the pass count never drops below
//! [`MIN_PASSING`]. Set `CONFORMANCE_CASE=<substring>` to run only matching cases and
//! `CONFORMANCE_VERBOSE=1` to see the differences of failing ones.

use aro_gitops::render::{RenderError, render};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Raised as features land; the test fails if fewer cases pass.
const MIN_PASSING: usize = 82;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Pass,
    Fail,
    Unsupported,
}

struct Outcome {
    name: String,
    status: Status,
    detail: String,
}

/// `KUSTOMIZE_CONFORMANCE_DIR`, else `../shared/conformance/kustomize` next to the crate.
fn cases_dir() -> PathBuf {
    match std::env::var_os("KUSTOMIZE_CONFORMANCE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/kustomize"),
    }
}

fn run_case(case: &Path) -> (Status, String) {
    let target = std::fs::read_to_string(case.join("target")).unwrap_or_else(|_| ".".into());
    let result = render(&case.join("tree"), Path::new(target.trim()));
    let expected = std::fs::read_to_string(case.join("expected.yaml"));
    match (result, expected) {
        (Err(e @ RenderError::UnsupportedField { .. }), _) => (Status::Unsupported, e.to_string()),
        (Err(e), Ok(_)) => (
            Status::Fail,
            format!("kustomize succeeds, render fails: {e}"),
        ),
        (Ok(_), Err(_)) => {
            let theirs = std::fs::read_to_string(case.join("expected.error")).unwrap_or_default();
            (
                Status::Fail,
                format!(
                    "kustomize fails, render succeeds; kustomize: {}",
                    theirs.trim()
                ),
            )
        }
        (Err(e), Err(_)) => (Status::Pass, format!("both fail; render: {e}")),
        (Ok(objects), Ok(expected)) => {
            let expected = match aro_gitops::yaml::from_multi_str(&expected) {
                Ok(docs) => docs
                    .into_iter()
                    .filter(|d| !d.is_null())
                    .collect::<Vec<_>>(),
                Err(e) => return (Status::Fail, format!("expected.yaml does not parse: {e}")),
            };
            let ours: Vec<Value> = objects.into_iter().map(|o| o.object).collect();
            match difference(&ours, &expected) {
                None => (Status::Pass, String::new()),
                Some(diff) => (Status::Fail, diff),
            }
        }
    }
}

/// Where `ours` first differs from `expected`, if anywhere.
fn difference(ours: &[Value], expected: &[Value]) -> Option<String> {
    let id = |v: &Value| {
        format!(
            "{}/{}",
            v.get("kind").and_then(Value::as_str).unwrap_or("?"),
            v.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("?")
        )
    };
    if ours.len() != expected.len() || ours.iter().zip(expected).any(|(a, b)| id(a) != id(b)) {
        return Some(format!(
            "documents differ:\n  ours:     {:?}\n  expected: {:?}",
            ours.iter().map(id).collect::<Vec<_>>(),
            expected.iter().map(id).collect::<Vec<_>>()
        ));
    }
    for (i, (a, b)) in ours.iter().zip(expected).enumerate() {
        if a != b {
            return Some(format!(
                "document {} ({}) differs:\n--- ours\n{}--- expected\n{}",
                i + 1,
                id(a),
                aro_gitops::yaml::to_string(a),
                aro_gitops::yaml::to_string(b)
            ));
        }
    }
    None
}

#[test]
fn kustomize_conformance_cases() {
    let dir = cases_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("skipped: {} not found", dir.display());
        return;
    };
    let filter = std::env::var("CONFORMANCE_CASE").ok();
    let verbose = std::env::var("CONFORMANCE_VERBOSE").is_ok_and(|v| !v.is_empty() && v != "0");
    let mut cases: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("tree").is_dir())
        .filter(|p| {
            filter.as_deref().is_none_or(|f| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().contains(f))
            })
        })
        .collect();
    cases.sort();

    let outcomes: Vec<Outcome> = cases
        .iter()
        .map(|case| {
            let name = case.file_name().unwrap().to_string_lossy().into_owned();
            let (status, detail) = run_case(case);
            Outcome {
                name,
                status,
                detail,
            }
        })
        .collect();

    let count = |s: Status| outcomes.iter().filter(|o| o.status == s).count();
    eprintln!("{:<12} case", "status");
    for o in &outcomes {
        let label = match o.status {
            Status::Pass => "pass",
            Status::Fail => "FAIL",
            Status::Unsupported => "unsupported",
        };
        let first_line = o.detail.lines().next().unwrap_or_default();
        eprintln!("{label:<12} {}  {first_line}", o.name);
        if verbose && o.status == Status::Fail {
            eprintln!("{}\n", o.detail);
        }
    }
    let (pass, fail, unsupported) = (
        count(Status::Pass),
        count(Status::Fail),
        count(Status::Unsupported),
    );
    eprintln!(
        "conformance: {pass}/{} pass, {fail} fail, {unsupported} unsupported",
        outcomes.len()
    );
    if filter.is_none() {
        assert!(
            pass >= MIN_PASSING,
            "only {pass} conformance cases pass; at least {MIN_PASSING} did before"
        );
    }
}

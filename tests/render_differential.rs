//! Differential test of the renderer against kustomize: the `aro-gitops render` binary and `kubectl
//! kustomize` (kustomize v5.5) build the same trees, and the outputs are compared as values (both parsed as
//! multi-document YAML: same documents, same order, same values and types; key order within a mapping
//! does not matter). Cases: the fixtures in `tests/fixtures/render/` (one per kustomize field and per
//! error the renderer must report; see `cases.rs` for their layout), every case of kustomize's own
//! suite replayed in `../shared/conformance/kustomize` (skipped when absent), and a small fleet written
//! by `aro-gitops-fleetgen` (the benchmark's input, in both its layouts). The conformance cases run
//! twice: with `--root` naming the case's tree, and copied to a folder outside any repository and
//! rendered without `--root`, as `kustomize build` would be run on them (bases may live anywhere).
//!
//! Policy, while the native renderer is being written:
//! - a case **fails the test** when the renderer produced output and it differs from kustomize's (wrong
//!   output is a bug), when it produced output where kustomize fails (an expected error must be an error
//!   here too), when it refused with an error that does not say "not supported"/"unsupported" something
//!   kustomize renders, when its error lacks what a fixture's `errorContains` asks for, or when the
//!   printed YAML reads back differently from what `render::render` returned;
//! - a case the renderer refuses as **unsupported** is counted, not failed;
//! - a fixture may declare a **deliberate** difference (`deliberate: why` in its `case.yaml`): kustomize
//!   renders it and the renderer refuses it on purpose, with an error holding the fixture's
//!   `errorContains`. It is reported as a known difference; output where an error is declared fails.
//!
//! Two pass rates are printed: over all compared cases, and over the cases the renderer did not refuse as
//! unsupported. The table and both rates are also written to `target/render-differential.txt`. Run
//! with `cargo test --test render_differential -- --nocapture` to see the table.

mod common;
mod render_differential {
    pub mod cases;
    pub mod run;
}

use render_differential::cases::{self, Case};
use render_differential::run::{self, Outcome};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Cases that fail today for a known reason, reported as "known failure" instead of failing the test.
/// Remove an entry once it passes (the table says so).
const KNOWN_FAILURES: &[(&str, &str)] = &[];

/// Clusters in the generated fleet (both layouts): enough to draw every environment.
const FLEET_CLUSTERS: usize = 6;

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/render")
}

/// `target/` (the parent of the integration tests' scratch folder).
fn report_path() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).join("render-differential.txt")
}

fn percent(n: usize, d: usize) -> String {
    if d == 0 {
        "n/a".into()
    } else {
        format!("{:.1}%", 100.0 * n as f64 / d as f64)
    }
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

struct Report {
    rows: Vec<(Case, Outcome)>,
}

impl Report {
    fn count(&self, f: impl Fn(&Outcome) -> bool) -> usize {
        self.rows.iter().filter(|(_, o)| f(o)).count()
    }

    fn render(&self, conformance: Option<&Path>, kubectl: bool) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# Render differential: aro-gitops render vs kubectl kustomize\n"
        );
        let _ = writeln!(
            out,
            "kubectl: {}; conformance cases: {}\n",
            if kubectl {
                "found"
            } else {
                "NOT on PATH (kubectl cases skipped)"
            },
            conformance.map_or_else(
                || "absent (skipped)".to_string(),
                |p| p.display().to_string()
            )
        );
        let _ = writeln!(out, "| suite | case | covers | result | detail |");
        let _ = writeln!(out, "|---|---|---|---|---|");
        for (case, outcome) in &self.rows {
            let detail = outcome.detail();
            let detail = detail.lines().next().unwrap_or("");
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                case.suite.name(),
                case.name,
                cell(&case.covers.join(", ")),
                outcome.label(),
                cell(detail)
            );
        }
        let _ = writeln!(out, "\n{}", self.summary());
        out
    }

    fn summary(&self) -> String {
        let skipped = self.count(|o| matches!(o, Outcome::Skipped(_)));
        let compared = self.rows.len() - skipped;
        let pass = self.count(|o| *o == Outcome::Pass);
        let unsupported = self.count(|o| matches!(o, Outcome::Unsupported(_)));
        let known = self.count(|o| matches!(o, Outcome::Known(_)));
        let failed = self.count(Outcome::is_failure);
        let supported = compared - unsupported;
        let mut by_suite = String::new();
        for suite in [
            cases::Suite::Fixture,
            cases::Suite::Conformance,
            cases::Suite::Fleet,
            cases::Suite::OutsideGit,
        ] {
            let rows: Vec<&Outcome> = self
                .rows
                .iter()
                .filter(|(c, o)| c.suite == suite && !matches!(o, Outcome::Skipped(_)))
                .map(|(_, o)| o)
                .collect();
            let p = rows.iter().filter(|o| ***o == Outcome::Pass).count();
            let _ = write!(by_suite, "; {} {p}/{}", suite.name(), rows.len());
        }
        format!(
            "pass rate: {pass}/{compared} = {} of all compared cases{by_suite}\n\
             pass rate where the renderer did not answer \"unsupported\": {pass}/{supported} = {}\n\
             unsupported (tolerated): {unsupported}; known failures and deliberate differences (tolerated): {known}; \
             failures: {failed}; skipped: {skipped}",
            percent(pass, compared),
            percent(pass, supported),
        )
    }
}

#[test]
fn render_matches_kubectl_kustomize() {
    let kubectl = run::kubectl_available();
    let mut all = cases::fixtures(&fixtures_dir());
    assert!(!all.is_empty(), "no fixture under tests/fixtures/render");
    let conformance = cases::conformance_dir();
    let outside = tempfile::tempdir().unwrap();
    if let Some(dir) = &conformance {
        let suite = cases::conformance(dir);
        let copies = cases::outside_git(&suite, outside.path());
        all.extend(suite);
        all.extend(copies);
    }
    let fleet = tempfile::tempdir().unwrap();
    all.extend(cases::fleet(fleet.path(), FLEET_CLUSTERS));
    let rows = all
        .into_iter()
        .map(|case| {
            let outcome = run::run(&case, kubectl);
            let known = KNOWN_FAILURES.iter().find(|(name, _)| *name == case.name);
            let outcome = match (known, outcome) {
                (Some((_, why)), o) if o.is_failure() => {
                    Outcome::Known(format!("{why} (now: {}: {})", o.label(), o.detail()))
                }
                (Some(_), Outcome::Pass) => {
                    println!(
                        "{}: listed in KNOWN_FAILURES but passes: remove it",
                        case.name
                    );
                    Outcome::Pass
                }
                (_, o) => o,
            };
            (case, outcome)
        })
        .collect();
    let report = Report { rows };
    let text = report.render(conformance.as_deref(), kubectl);
    println!("{text}");
    let path = report_path();
    if let Err(e) = std::fs::write(&path, &text) {
        eprintln!("could not write {}: {e}", path.display());
    }

    let failures: Vec<String> = report
        .rows
        .iter()
        .filter(|(_, o)| o.is_failure())
        .map(|(c, o)| {
            format!(
                "--- {} {} ({}): {}\n{}",
                c.suite.name(),
                c.name,
                c.root.join(&c.target).display(),
                o.label(),
                o.detail()
            )
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} case(s) fail (see the policy at the top of tests/render_differential.rs):\n{}\n\n{}",
        failures.len(),
        failures.join("\n"),
        report.summary()
    );
}

/// The harness itself, on a made-up conformance folder (no kubectl needed): it must tell a match, wrong
/// output, a wrongly accepted tree and an unsupported field apart.
#[test]
fn harness_classifies_outcomes() {
    let dir = tempfile::tempdir().unwrap();
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n";
    let write = |case: &str, file: &str, text: &str| {
        let path = dir.path().join(case).join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    for case in ["a-match", "b-wrong", "c-accepted", "d-unsupported"] {
        write(case, "tree/cm.yaml", cm);
        write(case, "tree/kustomization.yaml", "resources: [cm.yaml]\n");
        write(case, "target", ".\n");
    }
    write("a-match", "expected.yaml", cm);
    write("b-wrong", "expected.yaml", &cm.replace("k: v", "k: \"1\""));
    write("c-accepted", "expected.error", "kustomize said no");
    write(
        "d-unsupported",
        "tree/kustomization.yaml",
        "resources: [cm.yaml]\nhelmCharts: [{name: x}]\n",
    );
    write("d-unsupported", "expected.yaml", cm);
    let labels: Vec<&str> = cases::conformance(dir.path())
        .iter()
        .map(|case| run::run(case, false).label())
        .collect();
    assert_eq!(
        labels,
        ["pass", "FAIL wrong output", "FAIL accepted", "unsupported"]
    );
    assert!(run::says_unsupported(
        "error: k.yaml: kustomization field `patches` is not supported by render v0"
    ));
    assert!(!run::says_unsupported(
        "k.yaml: unknown kustomization field `foo`"
    ));
}

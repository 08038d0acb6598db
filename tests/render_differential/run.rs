//! Runs one case both ways (the `aro-gitops render` binary, plus the in-process `render::render` as a check
//! of the printer; and `kubectl kustomize` or the recorded answer) and classifies the outcome.

use super::cases::{Case, Reference};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// How one case came out. See the policy in `render_differential.rs`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// Same documents in the same order, or both refuse it.
    Pass,
    /// kustomize renders it (or fails it for a reason not asked for) and the renderer reports a field or
    /// feature as not supported: tolerated while the renderer is being written.
    Unsupported(String),
    /// Not compared (kubectl missing).
    Skipped(String),
    /// A failure listed in `KNOWN_FAILURES` (with its reason), or a difference a fixture declares
    /// `deliberate` (kustomize renders it, the renderer refuses it on purpose): reported, not failed.
    Known(String),
    /// The renderer printed output different from kustomize's: a bug.
    WrongOutput(String),
    /// kustomize fails, the renderer printed output: a bug.
    WronglyAccepted(String),
    /// kustomize renders it, the renderer failed with an error that is not "unsupported": a bug.
    WronglyRefused(String),
    /// Both fail, but our message lacks what the fixture asks it to name.
    BadError(String),
    /// The binary's YAML and the in-process result disagree (the printer loses something): a bug.
    PrinterMismatch(String),
    /// The test data disagrees with kubectl (fixture bug), or kubectl's output does not parse.
    Harness(String),
}

impl Outcome {
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Unsupported(_) => "unsupported",
            Outcome::Skipped(_) => "skipped",
            Outcome::Known(_) => "known failure",
            Outcome::WrongOutput(_) => "FAIL wrong output",
            Outcome::WronglyAccepted(_) => "FAIL accepted",
            Outcome::WronglyRefused(_) => "FAIL refused",
            Outcome::BadError(_) => "FAIL error message",
            Outcome::PrinterMismatch(_) => "FAIL printer",
            Outcome::Harness(_) => "FAIL harness",
        }
    }

    pub fn detail(&self) -> &str {
        match self {
            Outcome::Pass => "",
            Outcome::Unsupported(d)
            | Outcome::Skipped(d)
            | Outcome::Known(d)
            | Outcome::WrongOutput(d)
            | Outcome::WronglyAccepted(d)
            | Outcome::WronglyRefused(d)
            | Outcome::BadError(d)
            | Outcome::PrinterMismatch(d)
            | Outcome::Harness(d) => d,
        }
    }

    /// Whether this outcome fails the test.
    pub fn is_failure(&self) -> bool {
        !matches!(
            self,
            Outcome::Pass | Outcome::Unsupported(_) | Outcome::Skipped(_) | Outcome::Known(_)
        )
    }
}

/// A render result: the documents, or the error message.
type Rendered = Result<Vec<Value>, String>;

/// Whether a message says the renderer does not implement something (rather than that the input is wrong).
pub fn says_unsupported(message: &str) -> bool {
    let m = message.to_lowercase();
    m.contains("not supported") || m.contains("unsupported")
}

pub fn kubectl_available() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `kubectl kustomize dir`, parsed with the project's YAML reader.
fn kubectl_kustomize(dir: &Path) -> Result<Rendered, String> {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .map_err(|e| format!("kubectl does not run: {e}"))?;
    if !out.status.success() {
        return Ok(Err(String::from_utf8_lossy(&out.stderr).into_owned()));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    aro_gitops::yaml::from_multi_str(&text)
        .map(Ok)
        .map_err(|e| format!("kubectl's output does not parse: {e}"))
}

/// `aro-gitops render <root>/<target> --root <root>`, or without `--root` (see [`Case::with_root`]).
fn binary_render(case: &Case) -> Result<Rendered, String> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_aro-gitops"));
    command
        .args(["--log", "error", "render"])
        .arg(case.root.join(&case.target));
    if case.with_root {
        command.arg("--root").arg(&case.root);
    }
    let out = command
        .output()
        .map_err(|e| format!("aro-gitops does not run: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Ok(Err(if err.is_empty() {
            format!("exit status {} and no message", out.status)
        } else {
            err
        }));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    aro_gitops::yaml::from_multi_str(&text)
        .map(Ok)
        .map_err(|e| format!("the binary's output does not parse: {e}"))
}

/// What the binary rendered, through the library, with the root the binary uses: `--root`, else the
/// repository the folder is in, else none.
fn in_process_render(case: &Case) -> Rendered {
    let rendered = if case.with_root {
        aro_gitops::render::render(&case.root, Path::new(&case.target))
    } else {
        let path = case.root.join(&case.target);
        match aro_gitops::unit::enclosing_repository(&path) {
            Ok(Some(root)) => aro_gitops::render::render(&root, &path),
            _ => aro_gitops::render::render_anywhere(&path),
        }
    };
    rendered
        .map(|objects| objects.into_iter().map(|o| o.object).collect())
        .map_err(|e| e.to_string())
}

/// Runs and classifies one case.
pub fn run(case: &Case, kubectl: bool) -> Outcome {
    let reference: Rendered = match &case.reference {
        Reference::Output(docs) => Ok(docs.clone()),
        Reference::Error(message) => Err(message.clone()),
        Reference::Kubectl { .. } if !kubectl => {
            return Outcome::Skipped("kubectl not on PATH".into());
        }
        Reference::Kubectl { expect_error } => {
            match kubectl_kustomize(&case.root.join(&case.target)) {
                Err(harness) => return Outcome::Harness(harness),
                Ok(r) if r.is_err() != *expect_error => {
                    return Outcome::Harness(format!(
                        "case.yaml says kustomize {}, kubectl {}: {}",
                        if *expect_error { "fails" } else { "succeeds" },
                        if r.is_err() { "fails" } else { "succeeds" },
                        first_line(r.err().as_deref().unwrap_or(""))
                    ));
                }
                Ok(r) => r,
            }
        }
    };
    let ours = match binary_render(case) {
        Ok(r) => r,
        Err(harness) => return Outcome::PrinterMismatch(harness),
    };
    if let Ok(docs) = &ours {
        match in_process_render(case) {
            Ok(inner) if &inner == docs => {}
            Ok(inner) => {
                return Outcome::PrinterMismatch(format!(
                    "printed YAML reads back differently from the rendered objects:\n{}",
                    diff(&inner, docs)
                ));
            }
            Err(e) => {
                return Outcome::PrinterMismatch(format!(
                    "the binary rendered it, render::render failed: {}",
                    first_line(&e)
                ));
            }
        }
    }
    classify(case, reference, ours)
}

fn classify(case: &Case, reference: Rendered, ours: Rendered) -> Outcome {
    let missing = |e: &str| -> Vec<String> {
        let lower = e.to_lowercase();
        case.error_contains
            .iter()
            .filter(|want| !lower.contains(&want.to_lowercase()))
            .cloned()
            .collect()
    };
    if let (Some(why), Ok(_)) = (&case.deliberate, &reference) {
        return match ours {
            Err(e) if missing(&e).is_empty() => Outcome::Known(format!("deliberate: {why}")),
            Err(e) => Outcome::BadError(format!(
                "message lacks {:?}: {}",
                missing(&e),
                first_line(&e)
            )),
            Ok(docs) => Outcome::WronglyAccepted(format!(
                "the fixture says the renderer refuses this on purpose ({why}), it printed {} documents",
                docs.len()
            )),
        };
    }
    match (reference, ours) {
        (Ok(expected), Ok(docs)) if expected == docs => Outcome::Pass,
        (Ok(expected), Ok(docs)) => Outcome::WrongOutput(diff(&docs, &expected)),
        (Err(theirs), Ok(docs)) => Outcome::WronglyAccepted(format!(
            "kustomize fails ({}), render printed {} documents",
            first_line(&theirs),
            docs.len()
        )),
        (Ok(_), Err(e)) if says_unsupported(&e) => Outcome::Unsupported(first_line(&e)),
        (Ok(_), Err(e)) => Outcome::WronglyRefused(first_line(&e)),
        (Err(_), Err(e)) => {
            let missing = missing(&e);
            match (missing.is_empty(), says_unsupported(&e)) {
                // Refused as unsupported without the fixture asking for it: right answer, maybe for the
                // wrong reason; not credited.
                (true, true) if case.error_contains.is_empty() => {
                    Outcome::Unsupported(first_line(&e))
                }
                (true, _) => Outcome::Pass,
                (false, true) => Outcome::Unsupported(first_line(&e)),
                (false, false) => {
                    Outcome::BadError(format!("message lacks {missing:?}: {}", first_line(&e)))
                }
            }
        }
    }
}

fn first_line(message: &str) -> String {
    let line = message
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let line = line.strip_prefix("error: ").unwrap_or(line);
    if line.chars().count() > 160 {
        format!("{}…", line.chars().take(160).collect::<String>())
    } else {
        line.to_string()
    }
}

/// A unified diff of the two streams as YAML (ours first), cut to a readable length.
fn diff(ours: &[Value], expected: &[Value]) -> String {
    let a = aro_gitops::yaml::to_multi_string(ours);
    let b = aro_gitops::yaml::to_multi_string(expected);
    let text = similar::TextDiff::from_lines(&a, &b)
        .unified_diff()
        .context_radius(2)
        .header("render", "kustomize")
        .to_string();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = lines
        .iter()
        .take(60)
        .copied()
        .collect::<Vec<_>>()
        .join("\n");
    if lines.len() > 60 {
        out.push_str(&format!("\n… ({} more diff lines)", lines.len() - 60));
    }
    if out.is_empty() {
        // Same YAML text but unequal values: types differ in a way the printer hides.
        out = "values differ in type only (same YAML text)".into();
    }
    out
}

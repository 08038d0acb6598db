//! Where the differential cases come from: the project's own fixture trees under
//! `tests/fixtures/render/`, and kustomize's replayed conformance cases (`../shared/conformance/kustomize`,
//! or the folder `ARO_GITOPS_KUSTOMIZE_CONFORMANCE` names), rendered with `--root` and again as copies
//! outside any repository, without it (as a user runs `aro-gitops render overlay/` on a plain folder).
//!
//! A fixture is a folder holding `tree/` (the files; the render root) and `case.yaml`:
//!
//! ```yaml
//! covers: [namePrefix, nameSuffix]   # what it exercises, shown in the table
//! target: overlay                    # folder inside tree/ to build (default ".")
//! expect: output                     # or `error`: what kustomize does with it (checked against kubectl)
//! kubectl: false                     # do not run kubectl (it would reach the network); needs expect: error
//! errorContains: [remote]            # our error message must contain these (case-insensitive)
//! deliberate: "why"                  # kustomize renders it, the renderer refuses it on purpose (with
//!                                    # errorContains); shown as a known difference, never a pass
//! ```

use serde_json::Value;
use std::path::{Path, PathBuf};

/// Which set a case belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suite {
    Fixture,
    Conformance,
    /// Overlays written by `aro-gitops-fleetgen` (the benchmark's input).
    Fleet,
    /// The conformance cases copied outside any repository and rendered without `--root`.
    OutsideGit,
}

impl Suite {
    pub fn name(self) -> &'static str {
        match self {
            Suite::Fixture => "fixture",
            Suite::Conformance => "conformance",
            Suite::Fleet => "fleet",
            Suite::OutsideGit => "conformance outside git",
        }
    }
}

/// What kustomize does with a case, as far as the case itself knows.
#[derive(Debug, Clone)]
pub enum Reference {
    /// Ask `kubectl kustomize`; `expect_error` is what the fixture says kubectl does.
    Kubectl { expect_error: bool },
    /// Recorded output (conformance `expected.yaml`).
    Output(Vec<Value>),
    /// Recorded or declared failure, with kustomize's message when known.
    Error(String),
}

#[derive(Debug, Clone)]
pub struct Case {
    pub suite: Suite,
    pub name: String,
    /// The render root (`tree/`).
    pub root: PathBuf,
    /// The folder to build, relative to `root`.
    pub target: String,
    pub covers: Vec<String>,
    pub reference: Reference,
    pub error_contains: Vec<String>,
    /// Why the renderer refuses on purpose what kustomize renders (a documented difference).
    pub deliberate: Option<String>,
    /// Whether the binary is told the root (`--root`); without it, the root is what the binary finds
    /// from the folder (none, outside any repository: bases may live anywhere, as in kustomize).
    pub with_root: bool,
}

/// The fixture cases under `dir`, sorted by name. Panics on a malformed fixture: that is a bug in
/// the test data, not in the renderer.
pub fn fixtures(dir: &Path) -> Vec<Case> {
    let mut out = Vec::new();
    for case_dir in sorted_subdirs(dir) {
        let name = file_name(&case_dir);
        let text = std::fs::read_to_string(case_dir.join("case.yaml"))
            .unwrap_or_else(|e| panic!("fixture {name}: case.yaml: {e}"));
        let meta = aro_gitops::yaml::from_str(&text)
            .unwrap_or_else(|e| panic!("fixture {name}: case.yaml: {e}"));
        let strings = |field: &str| -> Vec<String> {
            match meta.get(field) {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|v| match v {
                        Value::String(s) => s.clone(),
                        other => panic!(
                            "fixture {name}: `{field}` item {other} is not a string (quote it)"
                        ),
                    })
                    .collect(),
                Some(other) => panic!("fixture {name}: `{field}` is {other}, not a list"),
            }
        };
        let expect_error = match meta.get("expect").and_then(Value::as_str) {
            Some("output") => false,
            Some("error") => true,
            other => panic!("fixture {name}: `expect` must be output or error, got {other:?}"),
        };
        let run_kubectl = meta.get("kubectl").and_then(Value::as_bool).unwrap_or(true);
        let reference = match (run_kubectl, expect_error) {
            (true, _) => Reference::Kubectl { expect_error },
            (false, true) => Reference::Error(String::from("(declared by the fixture)")),
            (false, false) => panic!("fixture {name}: `kubectl: false` needs `expect: error`"),
        };
        let root = case_dir.join("tree");
        assert!(root.is_dir(), "fixture {name}: no tree/ folder");
        let covers = strings("covers");
        let error_contains = strings("errorContains");
        let deliberate = meta
            .get("deliberate")
            .and_then(Value::as_str)
            .map(str::to_string);
        assert!(
            deliberate.is_none() || !expect_error,
            "fixture {name}: `deliberate` is for what kustomize renders (expect: output)"
        );
        out.push(Case {
            suite: Suite::Fixture,
            name,
            root,
            target: meta
                .get("target")
                .and_then(Value::as_str)
                .unwrap_or(".")
                .to_string(),
            covers,
            reference,
            error_contains,
            deliberate,
            with_root: true,
        });
    }
    out
}

/// The conformance folder, if present: `$ARO_GITOPS_KUSTOMIZE_CONFORMANCE`, else `../shared/conformance/
/// kustomize` beside the crate.
pub fn conformance_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("ARO_GITOPS_KUSTOMIZE_CONFORMANCE") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/kustomize"),
    };
    dir.is_dir().then_some(dir)
}

/// kustomize's own cases: `tree/`, `target`, and `expected.yaml` or `expected.error`.
pub fn conformance(dir: &Path) -> Vec<Case> {
    let mut out = Vec::new();
    for case_dir in sorted_subdirs(dir) {
        let root = case_dir.join("tree");
        if !root.is_dir() {
            continue;
        }
        let name = file_name(&case_dir);
        let target = std::fs::read_to_string(case_dir.join("target"))
            .map(|t| t.trim().to_string())
            .unwrap_or_else(|_| ".".to_string());
        let reference = if let Ok(text) = std::fs::read_to_string(case_dir.join("expected.yaml")) {
            match aro_gitops::yaml::from_multi_str(&text) {
                Ok(docs) => Reference::Output(docs),
                Err(e) => panic!("conformance {name}: expected.yaml does not parse: {e}"),
            }
        } else if let Ok(text) = std::fs::read_to_string(case_dir.join("expected.error")) {
            Reference::Error(text)
        } else {
            continue;
        };
        // Group cases by the kustomize test file they come from (`namereference__Test...`).
        let covers = vec![name.split("__").next().unwrap_or(&name).to_string()];
        out.push(Case {
            suite: Suite::Conformance,
            name,
            root,
            target: if target.is_empty() {
                ".".into()
            } else {
                target
            },
            covers,
            reference,
            error_contains: Vec::new(),
            deliberate: None,
            with_root: true,
        });
    }
    out
}

/// A small fleet from `aro-gitops-fleetgen` in `dir` (kustomize features, and `--plain`): each cluster
/// overlay is a case checked against kubectl.
pub fn fleet(dir: &Path, clusters: usize) -> Vec<Case> {
    let mut out = Vec::new();
    for (mode, extra) in [("kustomize", None), ("plain", Some("--plain"))] {
        let root = dir.join(mode);
        let status = std::process::Command::new(env!("CARGO_BIN_EXE_aro-gitops-fleetgen"))
            .args(["--clusters", &clusters.to_string(), "--out"])
            .arg(&root)
            .args(extra)
            .output()
            .expect("aro-gitops-fleetgen runs");
        assert!(
            status.status.success(),
            "aro-gitops-fleetgen failed: {}",
            String::from_utf8_lossy(&status.stderr)
        );
        for cluster in sorted_subdirs(&root.join("clusters")) {
            let name = file_name(&cluster);
            out.push(Case {
                suite: Suite::Fleet,
                name: format!("{mode}/{name}"),
                root: root.clone(),
                target: format!("clusters/{name}"),
                covers: vec![format!("fleetgen {mode}")],
                reference: Reference::Kubectl {
                    expect_error: false,
                },
                error_contains: Vec::new(),
                deliberate: None,
                with_root: true,
            });
        }
    }
    out
}

/// `cases` again, each tree copied under `dir` (which must be outside any git repository and any
/// fleet folder) and rendered without `--root`.
pub fn outside_git(cases: &[Case], dir: &Path) -> Vec<Case> {
    assert!(
        aro_gitops::unit::enclosing_repository(dir)
            .expect("the scratch folder exists")
            .is_none(),
        "{} is inside a repository or a fleet folder: the cases would not be outside one",
        dir.display()
    );
    cases
        .iter()
        .map(|case| {
            let root = dir.join(&case.name).join("tree");
            crate::common::git::copy_dir(&case.root, &root);
            Case {
                suite: Suite::OutsideGit,
                root,
                with_root: false,
                ..case.clone()
            }
        })
        .collect()
}

fn sorted_subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

//! The layers of the README's design section, held: a module imports only from its own layer or
//! below, two modules of one layer never import each other, and only the agent and the CLI use
//! the local control plane and the Azure simulator (beside the layers, for tests and the embedded
//! default). Read from the source as text: every `crate::<module>` a non-test file names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, bottom up, as the README lists them.
const LAYERS: &[&[&str]] = &[
    &[
        "object",
        "sym",
        "packed",
        "kinds",
        "marks",
        "yaml",
        "selector",
        "unit",
        "retry",
        "redact",
        "output",
        "identity",
        "arm",
        "machinery",
        "crds",
        "rollout",
    ],
    &["source", "secrets", "render", "decrypt"],
    &["validate", "crdschema", "plan"],
    &["apply", "azure", "keyvault"],
    &["reconcile"],
    &[
        "report",
        "statuspage",
        "metrics",
        "health",
        "serving",
        "trigger",
        "notify",
    ],
    &["agent", "cli"],
];

/// Beside the layers: used by the agent (the embedded default) and the CLI only.
const BESIDE: &[&str] = &["controlplane", "azuresim"];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Whether `file` holds only tests (its `#[cfg(test)]` module's file, or test helpers).
fn is_test_file(file: &Path) -> bool {
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name == "tests.rs" || name.ends_with("_tests.rs") || name == "testutil.rs"
}

/// The top-level modules `text` names as `crate::<module>`, outside comments and after the
/// first `#[cfg(test)]` (inline tests come last).
fn named_modules(text: &str) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let mut found = BTreeSet::new();
    for line in code.lines() {
        let line = line.split("//").next().unwrap_or("");
        for (i, _) in line.match_indices("crate::") {
            let rest = &line[i + "crate::".len()..];
            let names: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                let group = group.split('}').next().unwrap_or("");
                group.split(',').collect()
            } else {
                vec![rest]
            };
            for name in names {
                let name: String = name
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
                    .collect();
                if !name.is_empty() {
                    found.insert(name);
                }
            }
        }
    }
    found
}

/// Every non-test source file under `dir`, with the top-level module it belongs to.
fn sources(dir: &Path, top: Option<&str>, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("an entry").path();
        let name = path
            .file_stem()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        let module = top.map_or(name.clone(), str::to_string);
        if path.is_dir() {
            sources(&path, Some(&module), out);
        } else if path.extension().is_some_and(|e| e == "rs") && !is_test_file(&path) {
            out.push((
                module,
                std::fs::read_to_string(&path).expect("a source file"),
            ));
        }
    }
}

/// Who imports whom, by top-level module (the binaries and the crate root left out).
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        None,
        &mut files,
    );
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, text) in files {
        if ["main", "lib", "bin"].contains(&module.as_str()) {
            continue;
        }
        let named = named_modules(&text);
        graph
            .entry(module.clone())
            .or_default()
            .extend(named.into_iter().filter(|n| *n != module));
    }
    graph
}

#[test]
fn every_module_has_a_layer() {
    let unplaced: Vec<String> = imports()
        .into_keys()
        .filter(|m| layer(m).is_none() && !BESIDE.contains(&m.as_str()))
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules in no layer of the README: {unplaced:?}"
    );
}

#[test]
fn modules_only_look_down() {
    let graph = imports();
    // The reader sees imports at all.
    assert!(graph["agent"].contains("plan") && graph["report"].contains("reconcile"));
    let mut wrong = Vec::new();
    for (from, named) in &graph {
        for to in named {
            if BESIDE.contains(&to.as_str()) {
                if !["agent", "cli"].contains(&from.as_str()) && !BESIDE.contains(&from.as_str()) {
                    wrong.push(format!(
                        "{from} uses {to}, which only the agent and the CLI may"
                    ));
                }
                continue;
            }
            let (Some(a), Some(b)) = (layer(from), layer(to)) else {
                continue;
            };
            if b > a {
                wrong.push(format!(
                    "{from} (layer {}) imports {to} (layer {})",
                    a + 1,
                    b + 1
                ));
            }
            if a == b && graph.get(to).is_some_and(|back| back.contains(from)) {
                wrong.push(format!("{from} and {to} import each other"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_reader_finds_grouped_and_plain_paths() {
    let text = "use crate::object::ObjectKey;\nuse crate::{kinds, plan::decide};\n// crate::agent\nfn f() { crate::yaml::x(); }\n#[cfg(test)]\nmod tests { use crate::agent; }\n";
    let found: Vec<String> = named_modules(text).into_iter().collect();
    assert_eq!(found, ["kinds", "object", "plan", "yaml"]);
}

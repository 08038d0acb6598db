//! The kustomization file: finding it in a folder and reading the fields render v0 supports.
//!
//! Supported: `apiVersion`/`kind` (`kustomize.config.k8s.io/v1beta1` `Kustomization`, both optional as in
//! kustomize), `resources`, `namespace`, and `metadata` (which kustomize does not use for output). Every other
//! kustomize field is refused by name unless it is empty (`[]`, `{}`, `""` or null), which changes nothing.

use super::documents::{type_name, yaml_error};
use super::error::RenderError;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The names kustomize recognises, in the order it looks for them.
pub const KUSTOMIZATION_FILE_NAMES: [&str; 3] =
    ["kustomization.yaml", "kustomization.yml", "Kustomization"];

const API_VERSION: &str = "kustomize.config.k8s.io/v1beta1";
const KIND: &str = "Kustomization";

/// Fields of kustomize's Kustomization (v5.5) that render v0 does not implement.
const UNSUPPORTED_FIELDS: &[&str] = &[
    "openapi",
    "namePrefix",
    "nameSuffix",
    "commonLabels",
    "labels",
    "commonAnnotations",
    "patchesStrategicMerge",
    "patchesJson6902",
    "patches",
    "images",
    "imageTags",
    "replacements",
    "replicas",
    "vars",
    "sortOptions",
    "components",
    "crds",
    "bases",
    "configMapGenerator",
    "secretGenerator",
    "helmGlobals",
    "helmCharts",
    "helmChartInflationGenerator",
    "generatorOptions",
    "configurations",
    "generators",
    "transformers",
    "validators",
    "inventory",
    "buildMetadata",
];

/// What render v0 takes from a kustomization file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Kustomization {
    /// `resources` entries as written, in order.
    pub resources: Vec<String>,
    /// `namespace`, when set and not empty.
    pub namespace: Option<String>,
}

/// The kustomization file in `dir`, if there is one; two or more is an error, as in kustomize.
/// `shown` is how the folder is named in errors (repository-relative).
pub fn find(dir: &Path, shown: &Path) -> Result<Option<PathBuf>, RenderError> {
    let found: Vec<&str> = KUSTOMIZATION_FILE_NAMES
        .iter()
        .copied()
        .filter(|name| dir.join(name).is_file())
        .collect();
    match found.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(dir.join(one))),
        _ => Err(RenderError::MultipleKustomizations {
            dir: shown.to_path_buf(),
            names: found.iter().map(|s| s.to_string()).collect(),
        }),
    }
}

/// Reads the kustomization in `text`; `file` (repository-relative) is named in errors.
pub fn parse(file: &Path, text: &str) -> Result<Kustomization, RenderError> {
    let invalid = |problem: String| RenderError::InvalidKustomization {
        file: file.to_path_buf(),
        problem,
    };
    let doc = crate::yaml::from_str(text).map_err(|e| yaml_error(file, e, 1))?;
    let map = match doc {
        Value::Object(map) => map,
        Value::Null => return Err(invalid("kustomization is empty".into())),
        other => {
            return Err(invalid(format!(
                "kustomization is {}, not a mapping",
                type_name(&other)
            )));
        }
    };

    let kind = string_field(&map, "kind").map_err(&invalid)?;
    let api_version = string_field(&map, "apiVersion").map_err(&invalid)?;
    match kind {
        None | Some(KIND) => {}
        Some("Component") => {
            return Err(invalid(
                "kind Component is not supported by render v0 (only Kustomization)".into(),
            ));
        }
        Some(other) => {
            return Err(invalid(format!(
                "kind is `{other}`; a kustomization's kind is {KIND}"
            )));
        }
    }
    if let Some(v) = api_version.filter(|v| *v != API_VERSION) {
        return Err(invalid(format!(
            "apiVersion is `{v}`; a Kustomization's apiVersion is {API_VERSION}"
        )));
    }

    for (field, value) in &map {
        match field.as_str() {
            "apiVersion" | "kind" | "resources" | "namespace" | "metadata" => {}
            f if UNSUPPORTED_FIELDS.contains(&f) => {
                if !is_empty(value) {
                    return Err(RenderError::UnsupportedField {
                        file: file.to_path_buf(),
                        field: f.to_string(),
                    });
                }
            }
            f => {
                return Err(RenderError::UnknownField {
                    file: file.to_path_buf(),
                    field: f.to_string(),
                });
            }
        }
    }

    let resources = match map.get("resources") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) if !s.is_empty() => Ok(s.clone()),
                other => Err(invalid(format!(
                    "resources entry {} is {}, not a path",
                    i + 1,
                    if other.is_string() {
                        "empty"
                    } else {
                        type_name(other)
                    }
                ))),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(invalid(format!(
                "`resources` is {}, not a list",
                type_name(other)
            )));
        }
    };
    let namespace = string_field(&map, "namespace")
        .map_err(&invalid)?
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    Ok(Kustomization {
        resources,
        namespace,
    })
}

/// A string field, or `None` when absent or null.
fn string_field<'a>(
    map: &'a serde_json::Map<String, Value>,
    name: &str,
) -> Result<Option<&'a str>, String> {
    match map.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!("`{name}` is {}, not a string", type_name(other))),
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Bool(_) | Value::Number(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(text: &str) -> Kustomization {
        parse(Path::new("k/kustomization.yaml"), text).unwrap()
    }

    fn parse_err(text: &str) -> String {
        parse(Path::new("k/kustomization.yaml"), text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn reads_resources_and_namespace() {
        let k = parse_ok(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata: {name: x}\n\
             namespace: team\nresources: [a.yaml, ../base, sub/]\n",
        );
        assert_eq!(k.resources, vec!["a.yaml", "../base", "sub/"]);
        assert_eq!(k.namespace.as_deref(), Some("team"));
        assert_eq!(
            parse_ok("resources: []\nnamespace: ''\n"),
            Kustomization::default()
        );
        assert_eq!(parse_ok("resources:\n"), Kustomization::default());
    }

    #[test]
    fn unsupported_and_unknown_fields_are_named() {
        assert_eq!(
            parse_err("resources: [a.yaml]\npatches:\n- path: p.yaml\n"),
            "k/kustomization.yaml: kustomization field `patches` is not supported by render v0"
        );
        assert_eq!(
            parse_err("namePrefix: dev-\n"),
            "k/kustomization.yaml: kustomization field `namePrefix` is not supported by render v0"
        );
        assert!(
            parse_err("configMapGenerator: [{name: a}]\n")
                .contains("`configMapGenerator` is not supported")
        );
        assert!(parse_err("bases: [../b]\n").contains("`bases` is not supported"));
        assert_eq!(
            parse_err("resources: []\nfoo: bar\n"),
            "k/kustomization.yaml: unknown kustomization field `foo`"
        );
        // Empty values change nothing, in kustomize or here.
        assert_eq!(
            parse_ok("patches: []\nnamePrefix: ''\nimages: null\ncommonLabels: {}\n"),
            Kustomization::default()
        );
    }

    #[test]
    fn kind_and_api_version_are_checked() {
        assert!(
            parse_err("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n")
                .contains("kind Component is not supported")
        );
        assert!(
            parse_err("kind: Foo\n")
                .contains("kind is `Foo`; a kustomization's kind is Kustomization")
        );
        assert!(
            parse_err("apiVersion: kustomize.config.k8s.io/v2\n")
                .contains("apiVersion is `kustomize.config.k8s.io/v2`")
        );
        assert_eq!(parse_ok("kind: Kustomization\n"), Kustomization::default());
    }

    #[test]
    fn malformed_files_and_fields() {
        assert_eq!(
            parse_err(""),
            "k/kustomization.yaml: kustomization is empty"
        );
        assert_eq!(
            parse_err("# only a comment\n"),
            "k/kustomization.yaml: kustomization is empty"
        );
        assert!(parse_err("- a\n").contains("kustomization is a list, not a mapping"));
        assert!(parse_err("resources: a.yaml\n").contains("`resources` is a string, not a list"));
        assert!(
            parse_err("resources: [a.yaml, {x: 1}]\n")
                .contains("resources entry 2 is a mapping, not a path")
        );
        assert!(parse_err("resources: ['']\n").contains("resources entry 1 is empty"));
        assert!(parse_err("namespace: [a]\n").contains("`namespace` is a list, not a string"));
        let err = parse(Path::new("k/kustomization.yaml"), "resources: [a\n").unwrap_err();
        assert!(
            matches!(err, RenderError::Yaml { line: Some(1), .. }),
            "{err:?}"
        );
        assert_eq!(err.to_string().matches("line").count(), 1, "{err}");
    }

    #[test]
    fn finds_the_file_and_refuses_two() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(find(dir.path(), Path::new("x")).unwrap(), None);
        std::fs::write(dir.path().join("Kustomization"), "").unwrap();
        assert_eq!(
            find(dir.path(), Path::new("x")).unwrap(),
            Some(dir.path().join("Kustomization"))
        );
        std::fs::write(dir.path().join("kustomization.yml"), "").unwrap();
        let err = find(dir.path(), Path::new("x")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "x: found multiple kustomization files: kustomization.yml, Kustomization"
        );
    }
}

//! Generator entries and `generatorOptions` as written, read with kustomize's schema and Go's JSON rules.
//!
//! kustomize decodes a kustomization strictly (an unknown field is an error, a wrong type is an error) but
//! matches field names case-insensitively, and a `null` anywhere leaves the field at its zero value.
//! The deprecated `env` is appended to `envs`, as kustomize's `FixKustomization` does.

use super::Behavior;
use super::error::{At, GeneratorError};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Which generator list an entry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum GeneratorKind {
    ConfigMap,
    Secret,
}

impl GeneratorKind {
    /// The kustomization field listing the entries.
    pub(super) fn field(self) -> &'static str {
        match self {
            GeneratorKind::ConfigMap => "configMapGenerator",
            GeneratorKind::Secret => "secretGenerator",
        }
    }

    /// The kind of the generated objects.
    pub(super) fn kind(self) -> &'static str {
        match self {
            GeneratorKind::ConfigMap => "ConfigMap",
            GeneratorKind::Secret => "Secret",
        }
    }
}

/// `options` of an entry, or the kustomization's `generatorOptions`. A map is `None` when absent or null
/// (Go's nil map), which matters when options are merged.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Options {
    pub labels: Option<BTreeMap<String, String>>,
    pub annotations: Option<BTreeMap<String, String>>,
    pub disable_name_suffix_hash: bool,
    pub immutable: bool,
}

/// Merges the kustomization-wide options into an entry's, as kustomize's `MergeGlobalOptionsIntoLocal`:
/// labels and annotations the entry does not set are added, and either side's flags win.
pub(super) fn merge_options(local: Option<Options>, global: Option<&Options>) -> Option<Options> {
    let Some(global) = global else {
        return local;
    };
    let mut local = local.unwrap_or_default();
    merge_map(&mut local.labels, global.labels.as_ref());
    merge_map(&mut local.annotations, global.annotations.as_ref());
    local.disable_name_suffix_hash |= global.disable_name_suffix_hash;
    local.immutable |= global.immutable;
    Some(local)
}

fn merge_map(
    local: &mut Option<BTreeMap<String, String>>,
    global: Option<&BTreeMap<String, String>>,
) {
    match (local.as_mut(), global) {
        (None, Some(global)) => *local = Some(global.clone()),
        (Some(local), Some(global)) => {
            for (k, v) in global {
                local.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        (_, None) => {}
    }
}

/// One generator entry.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Args {
    pub name: String,
    pub namespace: String,
    pub behavior: Behavior,
    pub literals: Vec<String>,
    pub files: Vec<String>,
    /// `envs`, then the deprecated `env` if set.
    pub envs: Vec<String>,
    pub options: Option<Options>,
    /// Secret `type` as written (empty when absent).
    pub secret_type: String,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            name: String::new(),
            namespace: String::new(),
            behavior: Behavior::Create,
            literals: Vec::new(),
            files: Vec::new(),
            envs: Vec::new(),
            options: None,
            secret_type: String::new(),
        }
    }
}

/// An entry with where it is written.
#[derive(Debug)]
pub(super) struct Entry {
    pub at: At,
    pub args: Args,
}

/// Reads a generator list (`Null` when absent).
pub(super) fn parse_entries(
    kind: GeneratorKind,
    entries: &Value,
    file: &Path,
) -> Result<Vec<Entry>, GeneratorError> {
    let items = match entries {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => {
            return Err(GeneratorError::Schema {
                at: At {
                    file: file.to_path_buf(),
                    entry: kind.field().to_string(),
                },
                message: format!("must be a list, not {}", type_name(other)),
            });
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let at = entry_at(kind, index, item, file);
            let args = parse_args(kind, item).map_err(|message| GeneratorError::Schema {
                at: at.clone(),
                message,
            })?;
            Ok(Entry { at, args })
        })
        .collect()
}

/// Reads `generatorOptions` (`Null` when absent).
pub(super) fn parse_global_options(
    options: &Value,
    file: &Path,
) -> Result<Option<Options>, GeneratorError> {
    parse_options(options, "").map_err(|message| GeneratorError::Schema {
        at: At {
            file: file.to_path_buf(),
            entry: "generatorOptions".to_string(),
        },
        message,
    })
}

/// `configMapGenerator "name"`, or `configMapGenerator[index]` when the entry has no usable name.
fn entry_at(kind: GeneratorKind, index: usize, item: &Value, file: &Path) -> At {
    let name = item.as_object().and_then(|map| {
        map.iter()
            .filter(|(k, _)| fold(k) == fold("name"))
            .filter_map(|(_, v)| v.as_str())
            .next_back()
            .filter(|n| !n.is_empty())
    });
    let entry = match name {
        Some(name) => format!("{} {name:?}", kind.field()),
        None => format!("{}[{index}]", kind.field()),
    };
    At {
        file: file.to_path_buf(),
        entry,
    }
}

fn parse_args(kind: GeneratorKind, item: &Value) -> Result<Args, String> {
    let mut args = Args::default();
    let map = match item {
        Value::Null => return Ok(args),
        Value::Object(map) => map,
        other => return Err(format!("must be a mapping, not {}", type_name(other))),
    };
    let mut behavior = String::new();
    let mut env = String::new();
    for (key, value) in map {
        let folded = fold(key);
        let field = |name: &str| fold(name) == folded;
        if field("name") {
            set_string(&mut args.name, value, "name")?;
        } else if field("namespace") {
            set_string(&mut args.namespace, value, "namespace")?;
        } else if field("behavior") {
            set_string(&mut behavior, value, "behavior")?;
        } else if field("literals") {
            set_strings(&mut args.literals, value, "literals")?;
        } else if field("files") {
            set_strings(&mut args.files, value, "files")?;
        } else if field("envs") {
            set_strings(&mut args.envs, value, "envs")?;
        } else if field("env") {
            set_string(&mut env, value, "env")?;
        } else if field("options") {
            args.options = parse_options(value, "options.")?;
        } else if field("type") && kind == GeneratorKind::Secret {
            set_string(&mut args.secret_type, value, "type")?;
        } else {
            return Err(format!("unknown field {key:?}"));
        }
    }
    args.behavior = match behavior.as_str() {
        "merge" => Behavior::Merge,
        "replace" => Behavior::Replace,
        // kustomize treats any other value as unspecified, which acts as create.
        _ => Behavior::Create,
    };
    if !env.is_empty() {
        args.envs.push(env);
    }
    Ok(args)
}

fn parse_options(value: &Value, prefix: &str) -> Result<Option<Options>, String> {
    let map = match value {
        Value::Null => return Ok(None),
        Value::Object(map) => map,
        other => {
            let what = if prefix.is_empty() {
                "must be a mapping".to_string()
            } else {
                format!(
                    "field \"{}\" must be a mapping",
                    prefix.trim_end_matches('.')
                )
            };
            return Err(format!("{what}, not {}", type_name(other)));
        }
    };
    let mut options = Options::default();
    for (key, value) in map {
        let folded = fold(key);
        let field = |name: &str| fold(name) == folded;
        if field("labels") {
            options.labels = parse_string_map(value, &format!("{prefix}labels"))?;
        } else if field("annotations") {
            options.annotations = parse_string_map(value, &format!("{prefix}annotations"))?;
        } else if field("disableNameSuffixHash") {
            let path = format!("{prefix}disableNameSuffixHash");
            set_bool(&mut options.disable_name_suffix_hash, value, &path)?;
        } else if field("immutable") {
            set_bool(&mut options.immutable, value, &format!("{prefix}immutable"))?;
        } else {
            return Err(format!("unknown field {key:?}"));
        }
    }
    Ok(Some(options))
}

fn set_string(target: &mut String, value: &Value, path: &str) -> Result<(), String> {
    match value {
        Value::Null => Ok(()),
        Value::String(s) => {
            target.clone_from(s);
            Ok(())
        }
        other => Err(wrong_type(path, "a string", other)),
    }
}

fn set_strings(target: &mut Vec<String>, value: &Value, path: &str) -> Result<(), String> {
    match value {
        Value::Null => {
            target.clear();
            Ok(())
        }
        Value::Array(items) => {
            *target = items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::Null => Ok(String::new()),
                    Value::String(s) => Ok(s.clone()),
                    other => Err(wrong_type(&format!("{path}[{i}]"), "a string", other)),
                })
                .collect::<Result<_, _>>()?;
            Ok(())
        }
        other => Err(wrong_type(path, "a list of strings", other)),
    }
}

fn set_bool(target: &mut bool, value: &Value, path: &str) -> Result<(), String> {
    match value {
        Value::Null => Ok(()),
        Value::Bool(b) => {
            *target = *b;
            Ok(())
        }
        other => Err(wrong_type(path, "a boolean", other)),
    }
}

fn parse_string_map(value: &Value, path: &str) -> Result<Option<BTreeMap<String, String>>, String> {
    match value {
        Value::Null => Ok(None),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| match v {
                Value::Null => Ok((k.clone(), String::new())),
                Value::String(s) => Ok((k.clone(), s.clone())),
                other => Err(wrong_type(&format!("{path}.{k}"), "a string", other)),
            })
            .collect::<Result<BTreeMap<_, _>, _>>()
            .map(Some),
        other => Err(wrong_type(path, "a mapping of strings", other)),
    }
}

fn wrong_type(path: &str, expected: &str, actual: &Value) -> String {
    format!(
        "field {path:?} must be {expected}, not {}",
        type_name(actual)
    )
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Folds a field name as Go's `encoding/json` compares them: ASCII case-insensitively, with the two
/// non-ASCII letters that fold to ASCII (`ſ`, the Kelvin sign) folded too.
fn fold(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            '\u{017F}' => 'S',
            '\u{212A}' => 'K',
            c => c.to_ascii_uppercase(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(kind: GeneratorKind, v: Value) -> Result<Vec<Entry>, GeneratorError> {
        parse_entries(kind, &v, Path::new("app/kustomization.yaml"))
    }

    #[test]
    fn reads_every_field() {
        let entries = parse(
            GeneratorKind::Secret,
            json!([{"name": "s", "namespace": "ns", "behavior": "merge", "literals": ["a=1"],
                   "files": ["f"], "envs": ["e1"], "env": "e2", "type": "kubernetes.io/tls",
                   "options": {"labels": {"l": "v"}, "annotations": {"a": null},
                               "disableNameSuffixHash": true, "immutable": true}}]),
        )
        .unwrap();
        let args = &entries[0].args;
        assert_eq!(entries[0].at.entry, "secretGenerator \"s\"");
        assert_eq!(args.namespace, "ns");
        assert_eq!(args.behavior, Behavior::Merge);
        assert_eq!(args.envs, vec!["e1", "e2"]);
        assert_eq!(args.secret_type, "kubernetes.io/tls");
        let options = args.options.as_ref().unwrap();
        assert_eq!(options.annotations.as_ref().unwrap()["a"], "");
        assert!(options.disable_name_suffix_hash && options.immutable);
    }

    #[test]
    fn field_names_fold_like_go() {
        let entries = parse(
            GeneratorKind::ConfigMap,
            json!([{"NAME": "x", "Literals": ["a=1"], "OPTIONS": {"DisableNameSuffixHash": true}}]),
        )
        .unwrap();
        assert_eq!(entries[0].args.name, "x");
        assert_eq!(entries[0].args.literals, vec!["a=1"]);
        assert_eq!(fold("disableNameSuffixHaſh"), fold("disablenamesuffixhash"));
    }

    #[test]
    fn unknown_behavior_acts_as_create() {
        let entries = parse(
            GeneratorKind::ConfigMap,
            json!([{"name": "x", "behavior": "Merge"}]),
        )
        .unwrap();
        assert_eq!(entries[0].args.behavior, Behavior::Create);
    }

    #[test]
    fn schema_errors_name_the_entry() {
        let cases = [
            (
                json!([{"name": "x", "foo": 1}]),
                "configMapGenerator \"x\": unknown field \"foo\"",
            ),
            (
                json!([{"name": "x", "literals": "a=1"}]),
                "\"literals\" must be a list of strings",
            ),
            (
                json!([{"name": "x", "literals": [true]}]),
                "\"literals[0]\" must be a string",
            ),
            (
                json!([{"name": 3}]),
                "configMapGenerator[0]: field \"name\" must be a string",
            ),
            (
                json!([{"name": "x", "type": "Opaque"}]),
                "unknown field \"type\"",
            ),
            (
                json!([{"name": "x", "options": {"labels": {"a": 1}}}]),
                "\"options.labels.a\" must be a string",
            ),
            (
                json!([{"name": "x", "options": {"immutable": "true"}}]),
                "\"options.immutable\" must be a boolean",
            ),
            (json!({"name": "x"}), "configMapGenerator: must be a list"),
        ];
        for (value, expected) in cases {
            let err = parse(GeneratorKind::ConfigMap, value)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("app/kustomization.yaml: "), "{err}");
            assert!(err.contains(expected), "{err} should contain {expected}");
        }
    }

    #[test]
    fn nulls_are_zero_values() {
        let entries = parse(
            GeneratorKind::ConfigMap,
            json!([null, {"name": "x", "literals": null, "options": null}]),
        )
        .unwrap();
        assert_eq!(entries[0].args, Args::default());
        assert_eq!(entries[0].at.entry, "configMapGenerator[0]");
        assert_eq!(entries[1].args.options, None);
    }

    #[test]
    fn options_merge_like_kustomize() {
        let map = |pairs: &[(&str, &str)]| {
            Some(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        };
        let global = Options {
            labels: map(&[("l", "global"), ("g", "global")]),
            annotations: map(&[("a", "global")]),
            disable_name_suffix_hash: true,
            immutable: false,
        };
        let local = Options {
            labels: map(&[("l", "local")]),
            immutable: true,
            ..Options::default()
        };
        let merged = merge_options(Some(local), Some(&global)).unwrap();
        assert_eq!(merged.labels, map(&[("g", "global"), ("l", "local")]));
        assert_eq!(merged.annotations, map(&[("a", "global")]));
        assert!(merged.disable_name_suffix_hash && merged.immutable);
        assert_eq!(merge_options(None, None), None);
        assert_eq!(merge_options(None, Some(&global)), Some(global));
    }
}

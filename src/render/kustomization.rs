//! The kustomization file: finding it in a folder and reading it into a [`Kustomization`].
//!
//! Every field of kustomize v5.5's `Kustomization` is known. Names match case-insensitively (as kustomize's
//! JSON decoding does: `nameprefix` is `namePrefix`), an unknown field is an error, and the deprecated
//! spellings are converted as kustomize converts them (`bases` into `resources`, `imageTags` into
//! `images`, `patches` written as a list of paths into `patchesStrategicMerge`). Fields this renderer does
//! not implement (helm charts, plugin generators and transformers, validators...) are refused by name
//! unless empty (`[]`, `{}`, `""` or null change nothing).

use super::documents::{type_name, yaml_error};
use super::error::RenderError;
use super::fieldspec::{FieldSpec, list_from_value};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

/// The names kustomize recognises, in the order it looks for them.
pub const KUSTOMIZATION_FILE_NAMES: [&str; 3] =
    ["kustomization.yaml", "kustomization.yml", "Kustomization"];

const KUSTOMIZATION_VERSION: &str = "kustomize.config.k8s.io/v1beta1";
const COMPONENT_VERSION: &str = "kustomize.config.k8s.io/v1alpha1";

/// Every field of kustomize v5.5's Kustomization, as spelled there.
const FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "openapi",
    "namePrefix",
    "nameSuffix",
    "namespace",
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
    "resources",
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

/// Fields refused when not empty: this renderer does not implement them.
const UNSUPPORTED: &[&str] = &[
    "helmGlobals",
    "helmCharts",
    "helmChartInflationGenerator",
    "validators",
    "inventory",
];

/// Whether the file is a Kustomization or a Component.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kind {
    #[default]
    Kustomization,
    Component,
}

/// A patch of `patches` or `patchesJson6902`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PatchEntry {
    pub path: Option<String>,
    pub patch: Option<String>,
    pub target: Option<Selector>,
    pub allow_name_change: bool,
    pub allow_kind_change: bool,
}

/// Which objects a patch or replacement applies to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub name: String,
    pub namespace: String,
    pub label_selector: String,
    pub annotation_selector: String,
}

/// An `images` entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Image {
    pub name: String,
    pub new_name: String,
    pub new_tag: String,
    pub tag_suffix: String,
    pub digest: String,
}

/// A `labels` entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Label {
    pub pairs: Vec<(String, String)>,
    pub include_selectors: bool,
    pub include_templates: bool,
    pub fields: Vec<FieldSpec>,
}

/// A `vars` entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Var {
    pub name: String,
    pub api_version: String,
    pub kind: String,
    pub obj_name: String,
    pub namespace: String,
    pub field_path: String,
}

/// `sortOptions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SortOrder {
    Legacy {
        first: Option<Vec<String>>,
        last: Option<Vec<String>>,
    },
    Fifo,
}

/// What a kustomization file says.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Kustomization {
    pub kind: Kind,
    pub resources: Vec<String>,
    pub components: Vec<String>,
    pub namespace: Option<String>,
    pub name_prefix: String,
    pub name_suffix: String,
    pub common_labels: Vec<(String, String)>,
    pub labels: Vec<Label>,
    pub common_annotations: Vec<(String, String)>,
    pub patches_strategic_merge: Vec<String>,
    pub patches_json6902: Vec<PatchEntry>,
    pub patches: Vec<PatchEntry>,
    pub images: Vec<Image>,
    pub replicas: Vec<(String, i64)>,
    /// `replacements` entries as written (a `path` to a file, or a replacement).
    pub replacements: Vec<Value>,
    pub vars: Vec<Var>,
    pub configurations: Vec<String>,
    /// `openapi.path`: a custom OpenAPI schema file (see [`super::openapi`]).
    pub openapi_path: Option<String>,
    /// `openapi.version`: a built-in OpenAPI schema version.
    pub openapi_version: Option<String>,
    /// `crds`: files of OpenAPI definitions of custom types (see [`super::crds`]).
    pub crds: Vec<String>,
    pub sort: Option<SortOrder>,
    pub build_metadata: Vec<String>,
    /// `configMapGenerator`, `secretGenerator` and `generatorOptions` as written (null when absent), read
    /// by [`super::generators`].
    /// `generators` and `transformers` entries (built-in plugin configurations, see [`super::plugins`]).
    pub generators: Vec<String>,
    pub transformers: Vec<String>,
    pub config_map_generator: Value,
    pub secret_generator: Value,
    pub generator_options: Value,
}

/// The kustomization file in `dir`, if there is one; two or more is an error, as in kustomize.
/// `shown` is how the folder is named in errors (repository-relative).
pub fn find(
    loader: &super::inputs::Loader,
    dir: &Path,
    shown: &Path,
) -> Result<Option<PathBuf>, RenderError> {
    // Every candidate is looked at (and so noted), even after one is found.
    let found: Vec<&str> = KUSTOMIZATION_FILE_NAMES
        .iter()
        .copied()
        .filter(|name| loader.is_file(&dir.join(name)))
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
///
/// Kustomizations read are kept by text (the overlays of a fleet share their bases' kustomizations), so
/// the same text is read once; the cache is bounded like the YAML parse cache.
pub fn parse(file: &Path, text: &str) -> Result<Arc<Kustomization>, RenderError> {
    type Cache = Mutex<HashMap<Box<str>, Arc<Kustomization>>>;
    static CACHE: LazyLock<Cache> = LazyLock::new(Default::default);
    const MAX_TEXT: usize = 64 * 1024;
    const ENTRIES: usize = 1024;
    let cacheable = text.len() <= MAX_TEXT;
    if cacheable && let Some(k) = CACHE.lock().expect("kustomization cache lock").get(text) {
        return Ok(k.clone());
    }
    let k = Arc::new(parse_text(file, text)?);
    if cacheable {
        let mut cache = CACHE.lock().expect("kustomization cache lock");
        if cache.len() >= ENTRIES {
            cache.clear();
        }
        cache.insert(text.into(), k.clone());
    }
    Ok(k)
}

fn parse_text(file: &Path, text: &str) -> Result<Kustomization, RenderError> {
    let invalid = |problem: String| RenderError::InvalidKustomization {
        file: file.to_path_buf(),
        problem,
    };
    let doc = parse_yaml11(text).map_err(|e| yaml_error(file, e, 1))?;
    let raw = match doc {
        Value::Object(map) => map,
        Value::Null => return Err(invalid("kustomization is empty".into())),
        other => {
            return Err(invalid(format!(
                "kustomization is {}, not a mapping",
                type_name(&other)
            )));
        }
    };
    let mut map = Map::new();
    for (key, value) in raw {
        let canonical = match FIELDS.iter().find(|f| f.eq_ignore_ascii_case(&key)) {
            // kustomize renames this one before decoding.
            Some(&"imageTags") => "images",
            Some(f) => *f,
            None => {
                return Err(RenderError::UnknownField {
                    file: file.to_path_buf(),
                    field: key,
                });
            }
        };
        map.insert(canonical.to_string(), value);
    }
    for field in UNSUPPORTED {
        if map.get(*field).is_some_and(|v| !is_empty(v)) {
            return Err(RenderError::UnsupportedField {
                file: file.to_path_buf(),
                field: field.to_string(),
            });
        }
    }
    read(&map).map_err(invalid)
}

/// kustomize reads kustomization files as YAML 1.1 (objects it reads as YAML 1.2): `yes`, `no`, `on`,
/// `off`, `y` and `n` are booleans here, so `commonLabels: {enabled: yes}` is refused as kustomize refuses it.
fn parse_yaml11(text: &str) -> Result<Value, crate::yaml::YamlError> {
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = false;
    options.legacy_octal_numbers = true;
    serde_saphyr::from_str_with_options(text, options).map_err(crate::yaml::YamlError::from_saphyr)
}

fn read(map: &Map<String, Value>) -> Result<Kustomization, String> {
    let kind = match string(map, "kind")?.as_deref() {
        None | Some("") | Some("Kustomization") => Kind::Kustomization,
        Some("Component") => Kind::Component,
        Some(other) => {
            return Err(format!(
                "kind is `{other}`; it should be Kustomization or Component"
            ));
        }
    };
    let required = match kind {
        Kind::Kustomization => KUSTOMIZATION_VERSION,
        Kind::Component => COMPONENT_VERSION,
    };
    if let Some(v) = string(map, "apiVersion")?.filter(|v| !v.is_empty() && v != required) {
        return Err(format!(
            "apiVersion is `{v}`; the apiVersion of a {} is {required}",
            match kind {
                Kind::Kustomization => "Kustomization",
                Kind::Component => "Component",
            }
        ));
    }

    let mut k = Kustomization {
        kind,
        ..Default::default()
    };
    k.resources = strings(map, "resources")?;
    k.resources.extend(strings(map, "bases")?);
    k.components = strings(map, "components")?;
    k.namespace = string(map, "namespace")?.filter(|s| !s.is_empty());
    k.name_prefix = string(map, "namePrefix")?.unwrap_or_default();
    k.name_suffix = string(map, "nameSuffix")?.unwrap_or_default();
    k.common_labels = string_map(map, "commonLabels")?;
    k.common_annotations = string_map(map, "commonAnnotations")?;
    k.configurations = strings(map, "configurations")?;
    k.crds = strings(map, "crds")?;
    if let Some(openapi) = map.get("openapi").filter(|v| !v.is_null()) {
        // A map of strings to kustomize: other keys are ignored.
        let openapi = openapi
            .as_object()
            .ok_or_else(|| format!("`openapi` is {}, not a mapping", type_name(openapi)))?;
        let field = |name: &str| {
            string(openapi, name)
                .map(|v| v.filter(|v| !v.is_empty()))
                .map_err(|e| format!("`openapi`: {e}"))
        };
        k.openapi_path = field("path")?;
        k.openapi_version = field("version")?;
    }
    k.build_metadata = strings(map, "buildMetadata")?;
    for option in &k.build_metadata {
        match option.as_str() {
            "originAnnotations" | "transformerAnnotations" | "managedByLabel" => {}
            _ => return Err(format!("buildMetadata option `{option}` is unknown")),
        }
    }

    // `patches` written as a list with a path string in it is the old patchesStrategicMerge.
    let legacy_patches = map
        .get("patches")
        .and_then(Value::as_array)
        .is_some_and(|items| items.iter().any(Value::is_string));
    k.patches_strategic_merge = strings(map, "patchesStrategicMerge")?;
    if legacy_patches {
        k.patches_strategic_merge.extend(strings(map, "patches")?);
    } else {
        k.patches = list(map, "patches", patch_entry)?;
    }
    k.patches_json6902 = list(map, "patchesJson6902", patch_entry)?;
    k.images = list(map, "images", image)?;
    k.replicas = list(map, "replicas", replica)?;
    k.vars = list(map, "vars", var)?;
    k.labels = list(map, "labels", label)?;
    k.replacements = list(map, "replacements", |v| Ok(v.clone()))?;
    k.sort = sort_options(map.get("sortOptions"))?;
    k.generators = strings(map, "generators")?;
    k.transformers = strings(map, "transformers")?;
    let raw = |field: &str| map.get(field).cloned().unwrap_or(Value::Null);
    k.config_map_generator = raw("configMapGenerator");
    k.secret_generator = raw("secretGenerator");
    k.generator_options = raw("generatorOptions");
    Ok(k)
}

fn list<T>(
    map: &Map<String, Value>,
    field: &str,
    f: impl Fn(&Value) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| f(item).map_err(|e| format!("`{field}` entry {}: {e}", i + 1)))
            .collect(),
        Some(other) => Err(format!("`{field}` is {}, not a list", type_name(other))),
    }
}

fn mapping<'a>(v: &'a Value, allowed: &[&str]) -> Result<&'a Map<String, Value>, String> {
    let map = v
        .as_object()
        .ok_or_else(|| format!("is {}, not a mapping", type_name(v)))?;
    if let Some(unknown) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!("unknown field `{unknown}`"));
    }
    Ok(map)
}

fn string(map: &Map<String, Value>, name: &str) -> Result<Option<String>, String> {
    match map.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("`{name}` is {}, not a string", type_name(other))),
    }
}

fn bool_field(map: &Map<String, Value>, name: &str) -> Result<bool, String> {
    match map.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(format!(
            "`{name}` is {}, not true or false",
            type_name(other)
        )),
    }
}

fn strings(map: &Map<String, Value>, name: &str) -> Result<Vec<String>, String> {
    list(map, name, |item| match item {
        Value::String(s) if !s.is_empty() => Ok(s.clone()),
        Value::String(_) => Err("is empty".into()),
        other => Err(format!("is {}, not a string", type_name(other))),
    })
}

/// A mapping of strings, kept in key order (kustomize applies labels and annotations sorted by key).
fn string_map(map: &Map<String, Value>, name: &str) -> Result<Vec<(String, String)>, String> {
    let mut pairs = match map.get(name) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Null => Ok((k.clone(), String::new())),
                other => Err(format!(
                    "`{name}` value of `{k}` is {}, not a string (quote it)",
                    type_name(other)
                )),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => return Err(format!("`{name}` is {}, not a mapping", type_name(other))),
    };
    pairs.sort();
    Ok(pairs)
}

pub fn patch_entry(v: &Value) -> Result<PatchEntry, String> {
    let map = mapping(v, &["path", "patch", "target", "options"])?;
    let options = match map.get("options") {
        None | Some(Value::Null) => Map::new(),
        Some(o) => mapping(o, &["allowNameChange", "allowKindChange"])
            .map_err(|e| format!("`options` {e}"))?
            .clone(),
    };
    Ok(PatchEntry {
        path: string(map, "path")?.filter(|s| !s.is_empty()),
        patch: string(map, "patch")?,
        target: match map.get("target") {
            None | Some(Value::Null) => None,
            Some(t) => Some(selector(t).map_err(|e| format!("`target` {e}"))?),
        },
        allow_name_change: bool_field(&options, "allowNameChange")?,
        allow_kind_change: bool_field(&options, "allowKindChange")?,
    })
}

/// A target selector (`patches`, `replacements`).
pub fn selector(v: &Value) -> Result<Selector, String> {
    let map = mapping(
        v,
        &[
            "group",
            "version",
            "kind",
            "name",
            "namespace",
            "labelSelector",
            "annotationSelector",
        ],
    )?;
    let get = |k: &str| string(map, k).map(Option::unwrap_or_default);
    Ok(Selector {
        group: get("group")?,
        version: get("version")?,
        kind: get("kind")?,
        name: get("name")?,
        namespace: get("namespace")?,
        label_selector: get("labelSelector")?,
        annotation_selector: get("annotationSelector")?,
    })
}

pub fn image(v: &Value) -> Result<Image, String> {
    let map = mapping(v, &["name", "newName", "newTag", "tagSuffix", "digest"])?;
    let get = |k: &str| -> Result<String, String> {
        match map.get(k) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            // A tag written as a number (`newTag: 1.8`) is its text.
            Some(Value::Number(n)) => Ok(n.to_string()),
            Some(other) => Err(format!("`{k}` is {}, not a string", type_name(other))),
        }
    };
    Ok(Image {
        name: get("name")?,
        new_name: get("newName")?,
        new_tag: get("newTag")?,
        tag_suffix: get("tagSuffix")?,
        digest: get("digest")?,
    })
}

pub fn replica(v: &Value) -> Result<(String, i64), String> {
    let map = mapping(v, &["name", "count"])?;
    let name = string(map, "name")?.unwrap_or_default();
    let count = match map.get("count") {
        None | Some(Value::Null) => 0,
        Some(Value::Number(n)) => n
            .as_i64()
            .ok_or_else(|| "`count` is not a whole number".to_string())?,
        Some(other) => return Err(format!("`count` is {}, not a number", type_name(other))),
    };
    Ok((name, count))
}

fn var(v: &Value) -> Result<Var, String> {
    let map = mapping(v, &["name", "objref", "fieldref"])?;
    let objref = mapping(
        map.get("objref").unwrap_or(&Value::Null),
        &[
            "apiVersion",
            "group",
            "version",
            "kind",
            "name",
            "namespace",
        ],
    )
    .map_err(|e| format!("`objref` {e}"))?;
    let get = |k: &str| string(objref, k).map(Option::unwrap_or_default);
    let mut api_version = get("apiVersion")?;
    if api_version.is_empty() {
        let (group, version) = (get("group")?, get("version")?);
        api_version = crate::object::join_api_version(&group, &version);
    }
    let field_path = match map.get("fieldref") {
        None | Some(Value::Null) => String::new(),
        Some(f) => string(
            mapping(f, &["fieldpath"]).map_err(|e| format!("`fieldref` {e}"))?,
            "fieldpath",
        )?
        .unwrap_or_default(),
    };
    Ok(Var {
        name: string(map, "name")?.unwrap_or_default(),
        api_version,
        kind: get("kind")?,
        obj_name: get("name")?,
        namespace: get("namespace")?,
        field_path: if field_path.is_empty() {
            "metadata.name".into()
        } else {
            field_path
        },
    })
}

fn label(v: &Value) -> Result<Label, String> {
    let map = mapping(
        v,
        &["pairs", "includeSelectors", "includeTemplates", "fields"],
    )?;
    Ok(Label {
        pairs: string_map(map, "pairs")?,
        include_selectors: bool_field(map, "includeSelectors")?,
        include_templates: bool_field(map, "includeTemplates")?,
        fields: map
            .get("fields")
            .map(list_from_value)
            .transpose()
            .map_err(|e| format!("`fields`: {e}"))?
            .unwrap_or_default(),
    })
}

fn sort_options(v: Option<&Value>) -> Result<Option<SortOrder>, String> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let map =
        mapping(v, &["order", "legacySortOptions"]).map_err(|e| format!("`sortOptions` {e}"))?;
    match string(map, "order")?.as_deref() {
        Some("fifo") => {
            if map.get("legacySortOptions").is_some_and(|v| !v.is_null()) {
                return Err("`sortOptions`: legacySortOptions needs order legacy".into());
            }
            Ok(Some(SortOrder::Fifo))
        }
        Some("legacy") => {
            let (first, last) = match map.get("legacySortOptions") {
                None | Some(Value::Null) => (None, None),
                Some(o) => {
                    let o = mapping(o, &["orderFirst", "orderLast"])
                        .map_err(|e| format!("`legacySortOptions` {e}"))?;
                    (
                        Some(strings(o, "orderFirst")?),
                        Some(strings(o, "orderLast")?),
                    )
                }
            };
            Ok(Some(SortOrder::Legacy { first, last }))
        }
        None | Some("") => Err("`sortOptions` needs an order (legacy or fifo)".into()),
        Some(other) => Err(format!(
            "`sortOptions`: unknown order `{other}` (legacy or fifo)"
        )),
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
#[path = "kustomization_tests.rs"]
mod tests;

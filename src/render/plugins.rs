//! `generators` and `transformers` configured with kustomize's built-in plugins.
//!
//! Each entry is inline YAML, a file, or a folder with a kustomization (built, its objects taken), holding
//! plugin configurations: objects of `apiVersion: builtin` naming a built-in generator
//! (`ConfigMapGenerator`, `SecretGenerator`) or transformer (`PatchTransformer`,
//! `PatchStrategicMergeTransformer`, `PatchJson6902Transformer`, `NamespaceTransformer`,
//! `PrefixTransformer`, `SuffixTransformer`, `PrefixSuffixTransformer`, `HashTransformer`,
//! `LabelTransformer`, `AnnotationsTransformer`, `ImageTagTransformer`, `ReplicaCountTransformer`,
//! `ReplacementTransformer`). As in kustomize, inline configurations run first, then files and folders,
//! and the prefix and suffix transformers need their `fieldSpecs`. Files they name are read
//! relative to the kustomization listing them. Anything else (exec or Go plugins, KRM functions, other
//! built-ins) is refused by name: nothing is ever run.

use super::Renderer;
use super::error::RenderError;
use super::fieldspec::{FieldSpec, list_from_value};
use super::generators::{self, GeneratorContext};
use super::kustomization::{Kind, image, patch_entry, replica};
use super::namespace::{Options as NamespaceOptions, Subjects};
use super::resources::{Generated, ResMap, Resource, Transformation};
use super::target::{Accumulator, Target, build_error};
use super::{images, labels, names, patches, replacements};
use serde_json::{Map, Value};
use std::path::Path;

/// The plugin configurations listed in `entries` (`field` names the list in errors).
pub fn load_configs(
    r: &mut Renderer,
    t: &Target,
    entries: &[String],
    field: &str,
) -> Result<Vec<Resource>, RenderError> {
    let mut configs = Vec::new();
    // As in kustomize, every inline configuration comes first, then the files and folders, each in order.
    let (inline, paths): (Vec<&String>, Vec<&String>) = entries.iter().partition(|entry| {
        crate::yaml::from_multi_str(entry)
            .ok()
            .is_some_and(|docs| !docs.is_empty() && docs.iter().all(Value::is_object))
    });
    for entry in inline {
        configs.extend(
            super::documents::parse_objects(t.file, entry)?
                .into_iter()
                .map(Resource::loaded),
        );
    }
    for entry in paths {
        if super::is_remote(entry) {
            return Err(RenderError::RemoteResource {
                file: t.file.to_path_buf(),
                entry: entry.clone(),
            });
        }
        let path = r.resolve(t.dir, t.file, entry)?;
        if r.loader.is_dir(&path) {
            r.check_cycle(&path, t.file, entry)?;
            let kfile = r.kustomization_file(&path, t.file, entry)?;
            let acc = r.accumulate_kustomization(
                &path,
                &kfile,
                Kind::Kustomization,
                Accumulator::default(),
            )?;
            configs.extend(acc.resources.into_vec());
        } else {
            r.check_in_dir(t.dir, &path, t.file, entry)?;
            configs.extend(r.file(&path)?);
        }
    }
    for config in &configs {
        let api_version = config
            .object()
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if api_version != "builtin" {
            return Err(build_error(
                t.file,
                format!(
                    "{field}: {} {} is a plugin ({}): only kustomize's built-in generators and transformers \
                     (apiVersion: builtin) are supported",
                    config.kind(),
                    config.name(),
                    config.sourced.origin
                ),
            ));
        }
    }
    Ok(configs)
}

/// The built-in transformers run here (others, such as `ValueAddTransformer`, are refused as unsupported).
const TRANSFORMERS: &[&str] = &[
    "PatchTransformer",
    "PatchJson6902Transformer",
    "PatchStrategicMergeTransformer",
    "NamespaceTransformer",
    "PrefixTransformer",
    "SuffixTransformer",
    "PrefixSuffixTransformer",
    "HashTransformer",
    "LabelTransformer",
    "AnnotationsTransformer",
    "ImageTagTransformer",
    "ReplicaCountTransformer",
    "ReplacementTransformer",
];

/// The configuration's own fields (without `apiVersion`, `kind`, `metadata`).
fn fields(config: &Resource) -> Map<String, Value> {
    let mut map = config.object().as_object().cloned().unwrap_or_default();
    for k in ["apiVersion", "kind", "metadata"] {
        map.shift_remove(k);
    }
    map
}

/// Runs built-in generator configurations.
pub fn generate(
    r: &Renderer,
    t: &Target,
    acc: &mut Accumulator,
    configs: Vec<Resource>,
) -> Result<(), RenderError> {
    let ctx = GeneratorContext {
        loader: &r.loader,
        dir: t.dir,
        file: t.file,
    };
    for config in configs {
        let mut args = fields(&config);
        for (field, meta) in [("name", config.name()), ("namespace", config.namespace())] {
            if args
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .is_empty()
                && !meta.is_empty()
            {
                args.insert(field.into(), Value::String(meta.to_string()));
            }
        }
        let list = Value::Array(vec![Value::Object(args)]);
        let gen_err = |problem| RenderError::Generator {
            file: t.file.to_path_buf(),
            problem,
        };
        let generated = match config.kind() {
            "ConfigMapGenerator" => {
                generators::config_maps(&list, &Value::Null, &ctx).map_err(gen_err)?
            }
            "SecretGenerator" => generators::secrets(&list, &Value::Null, &ctx).map_err(gen_err)?,
            other if TRANSFORMERS.contains(&other) => {
                return Err(build_error(
                    t.file,
                    format!(
                        "generators: {other} {} is a transformer, not a generator: list it under `transformers`",
                        config.name()
                    ),
                ));
            }
            other => {
                return Err(build_error(
                    t.file,
                    format!("generators: built-in generator {other} is not supported"),
                ));
            }
        };
        for g in generated {
            let mut res = Resource::loaded(crate::object::SourcedObject {
                object: g.object,
                origin: config.sourced.origin.clone(),
            });
            res.generated = Some(Generated {
                behavior: g.behavior,
                hash_suffix: g.hash,
                configured_by: Some(config.name().to_string()),
            });
            acc.resources.absorb(res).map_err(|problem| {
                build_error(t.file, format!("merging generated objects: {problem}"))
            })?;
        }
    }
    Ok(())
}

/// Runs built-in transformer configurations, in order.
pub fn transform(
    r: &Renderer,
    t: &Target,
    resources: &mut ResMap,
    configs: Vec<Resource>,
) -> Result<(), RenderError> {
    for config in configs {
        let plugin = Plugin::new(&config, t.file);
        run_transformer(r, t, resources, &plugin)?;
        if r.transformations {
            let noted = Transformation {
                configured_in: config.sourced.origin.file.clone(),
                api_version: "builtin".into(),
                kind: plugin.kind.clone(),
                name: config.name().to_string(),
                namespace: config.namespace().to_string(),
            };
            super::buildmeta::record(resources, &noted, 1);
        }
    }
    Ok(())
}

/// One transformer configuration as read: its kind, how errors name it, and its own fields.
struct Plugin<'a> {
    config: &'a Resource,
    kind: String,
    /// `transformers: <kind> <name>`, the start of its errors.
    what: String,
    fields: Map<String, Value>,
    /// The kustomization listing it.
    file: &'a Path,
}

impl<'a> Plugin<'a> {
    fn new(config: &'a Resource, file: &'a Path) -> Self {
        let kind = config.kind().to_string();
        Plugin {
            what: format!("transformers: {kind} {}", config.name()),
            kind,
            fields: fields(config),
            config,
            file,
        }
    }

    fn err(&self, problem: String) -> RenderError {
        build_error(self.file, format!("{}: {problem}", self.what))
    }

    /// Its `fieldSpecs` (none when it has none).
    fn specs(&self) -> Result<Vec<FieldSpec>, RenderError> {
        match self.fields.get("fieldSpecs") {
            Some(v) => list_from_value(v).map_err(|e| self.err(format!("fieldSpecs: {e}"))),
            None => Ok(Vec::new()),
        }
    }

    /// The string field `key` (empty when absent or not a string).
    fn string(&self, key: &str) -> String {
        self.fields
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    }

    /// The map field `key` as sorted pairs of strings.
    fn pairs(&self, key: &str) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = self
            .fields
            .get(key)
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }
}

/// Runs one transformer configuration over `resources`.
fn run_transformer(
    r: &Renderer,
    t: &Target,
    resources: &mut ResMap,
    p: &Plugin<'_>,
) -> Result<(), RenderError> {
    match p.kind.as_str() {
        "PatchTransformer" | "PatchJson6902Transformer" | "PatchStrategicMergeTransformer" => {
            patch(r, t, resources, p)
        }
        "NamespaceTransformer" => namespace(resources, p),
        "PrefixTransformer" | "SuffixTransformer" | "PrefixSuffixTransformer" => {
            affix(resources, p)
        }
        // Content-hash suffixes now, on top of the one every build adds at its end.
        "HashTransformer" => super::add_hash_suffixes(resources),
        "LabelTransformer"
        | "AnnotationsTransformer"
        | "ImageTagTransformer"
        | "ReplicaCountTransformer" => set_values(resources, p),
        "ReplacementTransformer" => {
            let list: Vec<Value> = p
                .fields
                .get("replacements")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            replacements::apply_entries(r, t, resources, &list, &p.what)
        }
        "ConfigMapGenerator" | "SecretGenerator" => Err(p.err(format!(
            "{} is a generator, not a transformer: list it under `generators`",
            p.kind
        ))),
        other => Err(p.err(format!("built-in transformer {other} is not supported"))),
    }
}

/// The patch transformers: a patch entry (strategic merge or JSON 6902), or a list of strategic
/// merge patches (files and inline).
fn patch(
    r: &Renderer,
    t: &Target,
    resources: &mut ResMap,
    p: &Plugin<'_>,
) -> Result<(), RenderError> {
    match p.kind.as_str() {
        "PatchStrategicMergeTransformer" => {
            let mut list: Vec<String> = p
                .fields
                .get("paths")
                .map(|v| crate::object::strings_at(v, ""))
                .unwrap_or_default();
            let inline = p.string("patches");
            if !inline.is_empty() {
                list.push(inline);
            }
            patches::strategic_merge_list(r, t, resources, &list, &p.what)
        }
        kind => {
            let json6902 = kind == "PatchJson6902Transformer";
            let mut m = p.fields.clone();
            if json6902 && let Some(op) = m.shift_remove("jsonOp") {
                m.insert("patch".into(), op);
            }
            let entry = patch_entry(&Value::Object(m)).map_err(|e| p.err(e))?;
            patches::apply_patch_entry(r, t, resources, &entry, &p.what, json6902)
        }
    }
}

/// `NamespaceTransformer`: the namespace its metadata names, with its options.
fn namespace(resources: &mut ResMap, p: &Plugin<'_>) -> Result<(), RenderError> {
    let unset_only = match p.fields.get("unsetOnly") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(p.err(format!("unsetOnly is {other}, not true or false")));
        }
    };
    let options = NamespaceOptions {
        unset_only,
        subjects: Subjects::parse(&p.string("setRoleBindingSubjects")).map_err(|e| p.err(e))?,
        ..NamespaceOptions::default()
    };
    let ns = p.config.namespace().to_string();
    if ns.is_empty() {
        return Ok(());
    }
    names::set_namespace_with(resources, &ns, &p.specs()?, p.file, &options)
}

/// The prefix and suffix transformers. kustomize gives them no default field specs: a
/// configuration without any is refused.
fn affix(resources: &mut ResMap, p: &Plugin<'_>) -> Result<(), RenderError> {
    if p.fields.get("fieldSpecs").is_none_or(Value::is_null) {
        return Err(p.err("`fieldSpecs` is required (kustomize has no default for it)".into()));
    }
    let specs = p.specs()?;
    if p.kind != "SuffixTransformer" {
        names::add_prefix(resources, &p.string("prefix"), &specs).map_err(|e| p.err(e))?;
    }
    if p.kind != "PrefixTransformer" {
        names::add_suffix(resources, &p.string("suffix"), &specs).map_err(|e| p.err(e))?;
    }
    Ok(())
}

/// The transformers that set values at their field specs: labels, annotations, an image, a replica
/// count.
fn set_values(resources: &mut ResMap, p: &Plugin<'_>) -> Result<(), RenderError> {
    let field = |key: &str| p.fields.get(key).unwrap_or(&Value::Null);
    // The value is read before the field specs, so a bad value is the error reported.
    match p.kind.as_str() {
        "LabelTransformer" => labels::set_labels(resources, &p.pairs("labels"), &p.specs()?),
        "AnnotationsTransformer" => {
            labels::set_annotations(resources, &p.pairs("annotations"), &p.specs()?)
        }
        "ImageTagTransformer" => {
            let img = image(field("imageTag")).map_err(|e| p.err(e))?;
            images::set_image(resources, &img, &p.specs()?)
        }
        _ => {
            let (name, count) = replica(field("replica")).map_err(|e| p.err(e))?;
            images::set_replicas(resources, &name, count, &p.specs()?)
        }
    }
    .map_err(|e| p.err(e))
}

#[cfg(test)]
#[path = "plugins_tests.rs"]
mod tests;

//! `buildMetadata`: what kustomize adds to every object about how it was built, when the kustomization
//! built asks (its choice applies to the whole build, bases and components included).
//!
//! - `originAnnotations`: `config.kubernetes.io/origin`, the file an object was loaded from, or the
//!   kustomization or plugin configuration that generated it;
//! - `transformerAnnotations`: `alpha.config.kubernetes.io/transformations`, every transformer that ran
//!   over the object, in order. As in kustomize, a transformer is listed on every object of the kustomization
//!   it ran in, whether it changed the object or not: one entry per `patches`, `patchesJson6902`, `images`
//!   and `replicas` entry, one per `labels` entry plus one for `commonLabels` (when either is set), one for
//!   each other field set, one per `transformers` configuration;
//! - `managedByLabel`: the label `app.kubernetes.io/managed-by`, valued as `kubectl kustomize` values it.
//!
//! Paths are relative to the folder built, as kustomize writes them.

use super::error::RenderError;
use super::resources::{ResMap, Resource, Transformation};
use serde_json::{Map, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const ORIGIN: &str = "config.kubernetes.io/origin";
const TRANSFORMATIONS: &str = "alpha.config.kubernetes.io/transformations";
const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// kustomize values the label `kustomize-<its version>`; the kustomize built into kubectl reports its
/// version as `(devel)`, and `kubectl kustomize` is the renderer's reference.
const MANAGED_BY_VALUE: &str = "kustomize-(devel)";

/// What the kustomization built asks for (`None`: nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildMetadata {
    /// The folder built (repository-relative): paths are written relative to it.
    pub top: PathBuf,
    pub origins: bool,
    pub transformations: bool,
    pub managed_by: bool,
}

impl BuildMetadata {
    /// From a `buildMetadata` list (already checked to hold only known options).
    pub fn from_options(options: &[String], top: PathBuf) -> Option<Self> {
        if options.is_empty() {
            return None;
        }
        let has = |o: &str| options.iter().any(|x| x == o);
        Some(BuildMetadata {
            top,
            origins: has("originAnnotations"),
            transformations: has("transformerAnnotations"),
            managed_by: has("managedByLabel"),
        })
    }

    /// Adds what was asked for to one output object.
    pub fn apply(&self, res: &mut Resource) -> Result<(), RenderError> {
        if self.origins {
            let text = origin_text(res, &self.top);
            set_string(res, "annotations", ORIGIN, text)?;
        }
        if self.transformations && !res.transformations.is_empty() {
            let text = transformations_text(&res.transformations, &self.top);
            set_string(res, "annotations", TRANSFORMATIONS, text)?;
        }
        if self.managed_by {
            set_string(res, "labels", MANAGED_BY, MANAGED_BY_VALUE.to_string())?;
        }
        Ok(())
    }
}

/// Notes that a transformer ran over every object of `resources`, `times` times (one per instance).
pub fn record(resources: &mut ResMap, t: &Transformation, times: usize) {
    for res in resources.resources_mut() {
        for _ in 0..times {
            res.transformations.push(t.clone());
        }
    }
}

/// A transformer configured by a field of the kustomization file `file`.
pub fn builtin(file: &Path, kind: &str) -> Transformation {
    Transformation {
        configured_in: file.to_path_buf(),
        api_version: "builtin".into(),
        kind: kind.into(),
        name: String::new(),
        namespace: String::new(),
    }
}

/// The origin annotation's text: `path` for a loaded object, `configuredIn`/`configuredBy` for a
/// generated one.
fn origin_text(res: &Resource, top: &Path) -> String {
    let file = super::relative_to(&res.sourced.origin.file, top);
    match &res.generated {
        Some(g) => {
            let name = g
                .configured_by
                .as_ref()
                .map(|n| format!("  name: {n}\n"))
                .unwrap_or_default();
            format!(
                "configuredIn: {}\nconfiguredBy:\n  apiVersion: builtin\n  kind: {}Generator\n{name}",
                file.display(),
                res.kind()
            )
        }
        None => format!("path: {}\n", file.display()),
    }
}

/// The transformations annotation's text: a YAML list, laid out as kustomize writes it.
fn transformations_text(list: &[Transformation], top: &Path) -> String {
    let mut out = String::new();
    for t in list {
        let _ = write!(
            out,
            "- configuredIn: {}\n  configuredBy:\n    apiVersion: {}\n    kind: {}\n",
            super::relative_to(&t.configured_in, top).display(),
            t.api_version,
            t.kind
        );
        if !t.name.is_empty() {
            let _ = writeln!(out, "    name: {}", t.name);
        }
        if !t.namespace.is_empty() {
            let _ = writeln!(out, "    namespace: {}", t.namespace);
        }
    }
    out
}

/// Sets `metadata.<field>.<key>` to `value`, creating the map.
fn set_string(
    res: &mut Resource,
    field: &str,
    key: &str,
    value: String,
) -> Result<(), RenderError> {
    let id = res.cur_id().to_string();
    let file = res.sourced.origin.file.clone();
    let meta = super::resources::metadata(res.object_mut());
    let map = meta
        .entry(field)
        .or_insert_with(|| Value::Object(Map::new()));
    if map.is_null() {
        *map = Value::Object(Map::new());
    }
    match map.as_object_mut() {
        Some(map) => {
            map.insert(key.into(), Value::String(value));
            Ok(())
        }
        None => Err(RenderError::Build {
            file,
            problem: format!("{id}: metadata.{field} is not a mapping"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transformations_are_listed_like_kustomize() {
        let mut plugin = builtin(Path::new("app/overlay/prefix.yaml"), "PrefixTransformer");
        plugin.name = "p".into();
        plugin.namespace = "ns".into();
        let list = [
            builtin(Path::new("app/base/kustomization.yaml"), "LabelTransformer"),
            plugin,
        ];
        assert_eq!(
            transformations_text(&list, Path::new("app/overlay")),
            "- configuredIn: ../base/kustomization.yaml\n  configuredBy:\n    apiVersion: builtin\n    \
             kind: LabelTransformer\n- configuredIn: prefix.yaml\n  configuredBy:\n    apiVersion: builtin\n    \
             kind: PrefixTransformer\n    name: p\n    namespace: ns\n"
        );
    }

    #[test]
    fn options_decide_what_is_added() {
        assert_eq!(BuildMetadata::from_options(&[], PathBuf::new()), None);
        let meta =
            BuildMetadata::from_options(&["managedByLabel".into()], PathBuf::from("x")).unwrap();
        assert!(meta.managed_by && !meta.origins && !meta.transformations);
    }
}

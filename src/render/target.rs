//! One kustomization built as kustomize builds it (its `KustTarget`): resources, then generators, then
//! components, then the built-in transformers in kustomize's order, then its `vars` are recorded.
//!
//! The transformer order is kustomize v5.5's: `patchesStrategicMerge`, `patches`, `namespace`,
//! `namePrefix`, `nameSuffix`, `labels` then `commonLabels`, `commonAnnotations`, `patchesJson6902`,
//! `replicas`, `images`, `replacements`. A component runs over everything its parent has accumulated so far.
//! Name references, hash suffixes and vars are resolved once, by the caller, for the whole build, and local
//! configuration objects (`config.kubernetes.io/local-config: "true"`) dropped only then, so they can still
//! be the source of references.

use super::Renderer;
use super::config::TransformerConfig;
use super::error::RenderError;
use super::generators::{self, GeneratorContext};
use super::kustomization::{self, Kind, Kustomization};
use super::resources::{Generated, ResMap, Resource};
use super::{buildmeta, images, labels, names, patches, plugins, replacements};
use crate::object::{Origin, SourcedObject};
use std::path::{Path, PathBuf};

/// What a build has accumulated: objects, the transformer configuration, and `vars` to resolve.
#[derive(Debug, Default, Clone)]
pub struct Accumulator {
    pub resources: ResMap,
    pub config: TransformerConfig,
    /// Each var with the kustomization file declaring it.
    pub vars: Vec<(kustomization::Var, PathBuf)>,
}

impl Accumulator {
    /// Takes in what a sub-kustomization accumulated.
    fn merge(&mut self, other: Accumulator, file: &Path) -> Result<(), RenderError> {
        self.resources.append_all(other.resources)?;
        self.config.merge(&other.config).map_err(|problem| {
            build_error(
                file,
                format!("merging transformer configurations: {problem}"),
            )
        })?;
        self.merge_vars(other.vars)
    }

    fn merge_vars(&mut self, vars: Vec<(kustomization::Var, PathBuf)>) -> Result<(), RenderError> {
        for (var, file) in vars {
            if let Some((_, first)) = self.vars.iter().find(|(v, _)| v.name == var.name) {
                return Err(build_error(
                    &file,
                    format!(
                        "var `{}` is already declared in {}",
                        var.name,
                        first.display()
                    ),
                ));
            }
            self.vars.push((var, file));
        }
        Ok(())
    }
}

pub fn build_error(file: &Path, problem: String) -> RenderError {
    RenderError::Build {
        file: file.to_path_buf(),
        problem,
    }
}

/// A kustomization being built: its folder (canonical), its file (as shown) and what it says.
pub struct Target<'a> {
    pub dir: &'a Path,
    pub file: &'a Path,
    pub k: &'a Kustomization,
}

impl Renderer {
    /// Builds the kustomization in the canonical folder `dir` whose file is `kfile`, into `acc`.
    pub(super) fn accumulate_kustomization(
        &mut self,
        dir: &Path,
        kfile: &Path,
        expect: Kind,
        acc: Accumulator,
    ) -> Result<Accumulator, RenderError> {
        let shown = self.shown(kfile);
        let text = self
            .loader
            .read_to_string(kfile)
            .map_err(|source| RenderError::Read {
                path: shown.clone(),
                source,
            })?;
        let k = kustomization::parse(&shown, &text)?;
        match (expect, k.kind) {
            (Kind::Component, Kind::Kustomization) => {
                return Err(build_error(
                    &shown,
                    "is listed under `components` but is not a Component (kind: Component)".into(),
                ));
            }
            (Kind::Kustomization, Kind::Component) => {
                return Err(build_error(
                    &shown,
                    "is a Component; list it under `components`, not `resources`".into(),
                ));
            }
            _ => {}
        }
        let target = Target {
            dir,
            file: &shown,
            k: &k,
        };
        self.within(dir, |r| r.accumulate_target(&target, acc))
    }

    fn accumulate_target(
        &mut self,
        t: &Target,
        mut acc: Accumulator,
    ) -> Result<Accumulator, RenderError> {
        self.take_openapi(t)?;
        for entry in &t.k.resources {
            self.accumulate_resource(t, entry, &mut acc)?;
        }
        let mut config = TransformerConfig::builtin();
        for entry in &t.k.configurations {
            let (_, text, shown) = self.read_in(t.dir, t.file, entry)?;
            let value = crate::yaml::from_str(&text)
                .map_err(|e| super::documents::yaml_error(&shown, e, 1))?;
            let custom = TransformerConfig::from_value(&value)
                .map_err(|problem| build_error(&shown, problem))?;
            config
                .merge(&custom)
                .map_err(|problem| build_error(&shown, problem))?;
        }
        acc.config.merge(&config).map_err(|problem| {
            build_error(
                t.file,
                format!("merging transformer configurations: {problem}"),
            )
        })?;
        for entry in &t.k.crds {
            let (_, text, shown) = self.read_in(t.dir, t.file, entry)?;
            let value = crate::yaml::from_str(&text)
                .map_err(|e| super::documents::yaml_error(&shown, e, 1))?;
            let found = super::crds::config_from_definitions(&value)
                .map_err(|problem| build_error(&shown, problem))?;
            acc.config
                .merge(&found)
                .map_err(|problem| build_error(&shown, problem))?;
        }

        self.run_generators(t, &mut acc)?;
        // Components come after the generators, before the transformers (kustomize v5).
        for entry in &t.k.components {
            if super::is_remote(entry) {
                return Err(RenderError::RemoteResource {
                    file: t.file.to_path_buf(),
                    entry: entry.to_string(),
                });
            }
            let dir = self.resolve(t.dir, t.file, entry)?;
            if !self.loader.is_dir(&dir) {
                return Err(build_error(
                    t.file,
                    format!("component `{entry}` is not a folder with a kustomization"),
                ));
            }
            self.check_cycle(&dir, t.file, entry)?;
            let kfile = self.kustomization_file(&dir, t.file, entry)?;
            acc = self.accumulate_kustomization(&dir, &kfile, Kind::Component, acc)?;
        }
        self.run_transformers(t, &mut acc)?;

        for var in &t.k.vars {
            super::vars::bind(&mut acc.resources, var).map_err(|p| build_error(t.file, p))?;
        }
        let vars = t.k.vars.iter().map(|v| (v.clone(), t.file.to_path_buf()));
        acc.merge_vars(vars.collect())?;
        Ok(acc)
    }

    /// The kustomization's `openapi`, taken in before its resources are (see [`super::openapi`]): the schema
    /// file is read even when an earlier kustomization has already decided.
    fn take_openapi(&mut self, t: &Target) -> Result<(), RenderError> {
        let schema = match &t.k.openapi_path {
            Some(entry) => {
                let (_, text, shown) = self.read_in(t.dir, t.file, entry)?;
                let value = crate::yaml::from_str(&text)
                    .map_err(|e| super::documents::yaml_error(&shown, e, 1))?;
                Some(
                    super::openapi::Schema::from_value(&value)
                        .map_err(|problem| build_error(&shown, problem))?,
                )
            }
            None => None,
        };
        self.openapi
            .offer(t.k.openapi_version.as_deref(), schema)
            .map_err(|problem| build_error(t.file, problem))?;
        if let Some(schema) = self.custom_schema() {
            super::namespace::ScopeGuard::set(schema.cluster_scoped());
        }
        Ok(())
    }

    /// `configMapGenerator` then `secretGenerator`: each object added, or merged into or replacing the one
    /// it names.
    fn run_generators(&mut self, t: &Target, acc: &mut Accumulator) -> Result<(), RenderError> {
        let ctx = GeneratorContext {
            loader: &self.loader,
            dir: t.dir,
            file: t.file,
        };
        let gen_err = |problem| RenderError::Generator {
            file: t.file.to_path_buf(),
            problem,
        };
        let mut generated =
            generators::config_maps(&t.k.config_map_generator, &t.k.generator_options, &ctx)
                .map_err(gen_err)?;
        generated.extend(
            generators::secrets(&t.k.secret_generator, &t.k.generator_options, &ctx)
                .map_err(gen_err)?,
        );
        for g in generated {
            let mut res = Resource::loaded(SourcedObject {
                object: g.object,
                origin: Origin {
                    file: t.file.to_path_buf(),
                    document: 0,
                },
            });
            res.generated = Some(Generated {
                behavior: g.behavior,
                hash_suffix: g.hash,
                configured_by: None,
            });
            acc.resources.absorb(res).map_err(|problem| {
                build_error(t.file, format!("merging generated objects: {problem}"))
            })?;
        }
        let configs = plugins::load_configs(self, t, &t.k.generators, "generators")?;
        plugins::generate(self, t, acc, configs)
    }

    fn run_transformers(&mut self, t: &Target, acc: &mut Accumulator) -> Result<(), RenderError> {
        let file = t.file;
        let k = t.k;
        // Each transformer run is noted on every object (`transformerAnnotations`), once per instance
        // kustomize makes of it.
        let track = self.transformations;
        let note = |resources: &mut ResMap, kind: &str, times: usize| {
            if track {
                buildmeta::record(resources, &buildmeta::builtin(file, kind), times);
            }
        };
        patches::strategic_merge_patches(self, t, &mut acc.resources)?;
        let psm = usize::from(!k.patches_strategic_merge.is_empty());
        note(&mut acc.resources, "PatchStrategicMergeTransformer", psm);
        patches::patches(self, t, &mut acc.resources)?;
        note(&mut acc.resources, "PatchTransformer", k.patches.len());
        if let Some(ns) = &k.namespace {
            names::set_namespace(&mut acc.resources, ns, &acc.config.namespace, file)?;
            note(
                &mut acc.resources,
                "NamespaceTransformer",
                usize::from(!ns.is_empty()),
            );
        }
        names::add_prefix(&mut acc.resources, &k.name_prefix, &acc.config.name_prefix)
            .map_err(|p| build_error(file, format!("namePrefix: {p}")))?;
        let prefixed = usize::from(!k.name_prefix.is_empty());
        note(&mut acc.resources, "PrefixTransformer", prefixed);
        names::add_suffix(&mut acc.resources, &k.name_suffix, &acc.config.name_suffix)
            .map_err(|p| build_error(file, format!("nameSuffix: {p}")))?;
        let suffixed = usize::from(!k.name_suffix.is_empty());
        note(&mut acc.resources, "SuffixTransformer", suffixed);
        for (i, label) in k.labels.iter().enumerate() {
            labels::apply_label_entry(&mut acc.resources, label, &acc.config)
                .map_err(|p| build_error(file, format!("labels entry {}: {p}", i + 1)))?;
        }
        labels::set_labels(
            &mut acc.resources,
            &k.common_labels,
            &acc.config.common_labels,
        )
        .map_err(|p| build_error(file, format!("commonLabels: {p}")))?;
        // One per `labels` entry, and one for `commonLabels` (even empty) when either is set.
        let labelled = if k.labels.is_empty() && k.common_labels.is_empty() {
            0
        } else {
            k.labels.len() + 1
        };
        note(&mut acc.resources, "LabelTransformer", labelled);
        labels::set_annotations(
            &mut acc.resources,
            &k.common_annotations,
            &acc.config.common_annotations,
        )
        .map_err(|p| build_error(file, format!("commonAnnotations: {p}")))?;
        let annotated = usize::from(!k.common_annotations.is_empty());
        note(&mut acc.resources, "AnnotationsTransformer", annotated);
        patches::json6902_patches(self, t, &mut acc.resources)?;
        let json = k.patches_json6902.len();
        note(&mut acc.resources, "PatchJson6902Transformer", json);
        for (name, count) in &k.replicas {
            images::set_replicas(&mut acc.resources, name, *count, &acc.config.replicas)
                .map_err(|p| build_error(file, format!("replicas: {p}")))?;
        }
        note(
            &mut acc.resources,
            "ReplicaCountTransformer",
            k.replicas.len(),
        );
        for (i, image) in k.images.iter().enumerate() {
            images::set_image(&mut acc.resources, image, &acc.config.images)
                .map_err(|p| build_error(file, format!("images entry {}: {p}", i + 1)))?;
        }
        note(&mut acc.resources, "ImageTagTransformer", k.images.len());
        replacements::apply_all(self, t, &mut acc.resources)?;
        let replaced = usize::from(!k.replacements.is_empty());
        note(&mut acc.resources, "ReplacementTransformer", replaced);
        let configs = plugins::load_configs(self, t, &t.k.transformers, "transformers")?;
        plugins::transform(self, t, &mut acc.resources, configs)
    }

    /// One `resources` entry: a file of objects, or a folder with a kustomization.
    fn accumulate_resource(
        &mut self,
        t: &Target,
        entry: &str,
        acc: &mut Accumulator,
    ) -> Result<(), RenderError> {
        if super::is_remote(entry) {
            return Err(RenderError::RemoteResource {
                file: t.file.to_path_buf(),
                entry: entry.to_string(),
            });
        }
        let path = self.resolve(t.dir, t.file, entry)?;
        if !self.loader.is_dir(&path) {
            self.check_in_dir(t.dir, &path, t.file, entry)?;
            for res in self.file(&path)? {
                acc.resources.append(res)?;
            }
            return Ok(());
        }
        self.check_cycle(&path, t.file, entry)?;
        let kfile = self.kustomization_file(&path, t.file, entry)?;
        let sub = self.accumulate_kustomization(
            &path,
            &kfile,
            Kind::Kustomization,
            Accumulator::default(),
        )?;
        acc.merge(sub, t.file)
    }

    /// The kustomization file of a folder named by `entry` in `file`.
    pub(super) fn kustomization_file(
        &self,
        dir: &Path,
        file: &Path,
        entry: &str,
    ) -> Result<PathBuf, RenderError> {
        match kustomization::find(&self.loader, dir, &self.shown(dir))? {
            Some(kfile) => Ok(kfile),
            None => Err(RenderError::NotAKustomization {
                file: file.to_path_buf(),
                entry: entry.to_string(),
                dir: self.shown(dir),
            }),
        }
    }

    /// Reads a file a kustomization names (`entry`, relative to its folder `dir`): it must be inside that
    /// folder, as kustomize's load restrictor requires. Returns the canonical path, the text and the path
    /// as shown.
    pub(super) fn read_in(
        &self,
        dir: &Path,
        file: &Path,
        entry: &str,
    ) -> Result<(PathBuf, String, PathBuf), RenderError> {
        if super::is_remote(entry) {
            return Err(RenderError::RemoteResource {
                file: file.to_path_buf(),
                entry: entry.to_string(),
            });
        }
        let path = self.resolve(dir, file, entry)?;
        self.check_in_dir(dir, &path, file, entry)?;
        let shown = self.shown(&path);
        let text = self
            .loader
            .read_to_string(&path)
            .map_err(|source| RenderError::Read {
                path: shown.clone(),
                source,
            })?;
        Ok((path, text, shown))
    }

    /// kustomize reads files only in or below the kustomization's folder.
    pub(super) fn check_in_dir(
        &self,
        dir: &Path,
        path: &Path,
        file: &Path,
        entry: &str,
    ) -> Result<(), RenderError> {
        if path.starts_with(dir) {
            return Ok(());
        }
        Err(RenderError::OutsideKustomization {
            file: file.to_path_buf(),
            entry: entry.to_string(),
            dir: self.shown(dir),
        })
    }
}

//! Render: turns a folder of the repository into the Kubernetes objects it declares, each with its origin.
//!
//! A native implementation of kustomize v5.5 (`kubectl kustomize`): kustomizations with resources,
//! components, namespace, name prefixes and suffixes, labels and annotations, strategic-merge and JSON 6902
//! patches, images, replicas, replacements and vars, with references to renamed objects fixed as kustomize
//! fixes them, kustomize's built-in generator and transformer configurations (`generators`, `transformers`)
//! and `buildMetadata`. Nothing is fetched and nothing is run: remote bases, other plugins and helm charts
//! are refused by name, and every path must resolve (after `..` and symlinks) inside the repository root
//! (files a kustomization reads, inside its own folder, as kustomize requires). [`render_anywhere`] has no
//! repository root, as `kustomize build`: bases and components anywhere, files still in their own
//! kustomization's folder.
//!
//! - A folder with a kustomization file renders as `kubectl kustomize` would.
//! - A plain folder renders as if it had a kustomization listing its `.yaml`/`.yml` files and subfolders
//!   in lexical order (hidden entries skipped): a subfolder with a kustomization file renders as one, a plain
//!   one recursively the same way.
//! - A single file renders its documents.
//!
//! Objects come out in kustomize's default ("legacy") order (see [`order`]) unless the kustomization asks
//! for another with `sortOptions`.

mod buildmeta;
mod config;
mod config_tables;
mod crds;
mod documents;
mod error;
mod fieldpath;
mod fieldspec;
pub mod generators;
mod images;
pub mod inputs;
mod kustomization;
mod labels;
mod locate;
mod namereference;
mod names;
mod namespace;
mod openapi;
mod order;
mod patches;
mod plugins;
mod replacements;
mod resid;
mod resources;
mod scalar;
mod selector;
mod smp;
mod target;
mod vars;

#[cfg(test)]
mod differential;

pub use error::RenderError;
pub use inputs::Inputs;
pub use locate::field_position;

use crate::object::SourcedObject;
use kustomization::{Kind, SortOrder};
use resources::{ResMap, Resource};
use std::path::{Component, Path, PathBuf};
use target::Accumulator;

/// Renders `dir` (a folder with a kustomization, or a folder of plain YAML files, or one YAML file) inside the
/// repository `root`. `dir` may be absolute or relative to `root`. Objects come out in the order `kubectl
/// kustomize` prints them, each with its origin (repository-relative file and document).
pub fn render(root: &Path, dir: &Path) -> Result<Vec<SourcedObject>, RenderError> {
    render_traced(root, dir).0
}

/// [`render`], and the render's input closure: every repository path it read or looked for (see
/// [`Inputs`]), whether it succeeded or not.
pub fn render_traced(root: &Path, dir: &Path) -> (Result<Vec<SourcedObject>, RenderError>, Inputs) {
    match canonical(root) {
        Ok(root) => Renderer::new(inputs::Loader::new(root)).run(dir),
        // Nothing was read: any change may matter.
        Err(error) => (
            Err(error),
            Inputs {
                folders: [PathBuf::new()].into(),
                ..Inputs::default()
            },
        ),
    }
}

/// Renders `path` (a folder or a file) as `kustomize build` does outside a repository: there is no
/// containment root, so a base or a component may live anywhere, while the files a kustomization
/// reads (resources that are files, patches, generator inputs...) stay in or below its own folder,
/// as kustomize's default load restrictor (`LoadRestrictionsRootOnly`) rules. Origins and errors
/// name paths relative to `path`'s folder, with `..` for what lies outside it.
pub fn render_anywhere(path: &Path) -> Result<Vec<SourcedObject>, RenderError> {
    let path = canonical(path)?;
    let base = if path.is_dir() {
        path.clone()
    } else {
        path.parent()
            .map_or_else(|| path.clone(), Path::to_path_buf)
    };
    Renderer::new(inputs::Loader::anywhere(base)).run(&path).0
}

/// `path` canonical, or the error naming it as given.
fn canonical(path: &Path) -> Result<PathBuf, RenderError> {
    std::fs::canonicalize(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => RenderError::NotFound {
            path: path.to_path_buf(),
        },
        _ => RenderError::Read {
            path: path.to_path_buf(),
            source,
        },
    })
}

/// The documents of the file `file` (repository-relative) as written, before any transformation,
/// each with its index (as [`crate::object::Origin::document`] counts): what SOPS's MAC covers
/// (see [`crate::decrypt`]).
pub fn source_documents(
    root: &Path,
    file: &Path,
) -> Result<Vec<(usize, serde_json::Value)>, String> {
    let text = std::fs::read_to_string(root.join(file))
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    Ok(documents::parse_objects(file, &text)
        .map_err(|e| e.detail())?
        .into_iter()
        .map(|s| (s.origin.document, s.object))
        .collect())
}

impl Renderer {
    /// A renderer reading through `loader`, rooted where it is.
    fn new(loader: inputs::Loader) -> Self {
        Renderer {
            root: loader.root().to_path_buf(),
            loader,
            stack: Vec::new(),
            openapi: openapi::Choice::Unset,
            transformations: false,
        }
    }

    /// The whole build of `dir`, and what it read.
    fn run(mut self, dir: &Path) -> (Result<Vec<SourcedObject>, RenderError>, Inputs) {
        let _scope = namespace::ScopeGuard::new();
        let rendered = self.render(dir);
        (rendered, self.loader.into_inputs())
    }

    /// The whole build of `dir`.
    fn render(&mut self, dir: &Path) -> Result<Vec<SourcedObject>, RenderError> {
        let target = self.root.join(dir);
        let shown = match normalize(dir) {
            p if p.as_os_str().is_empty() => PathBuf::from("."),
            p => p,
        };
        // Containment first: a path outside says so whether or not it exists.
        let path = match self.loader.within(self.loader.bound(), &target) {
            Ok(Within::Found(path)) => path,
            Ok(Within::Missing(_)) => return Err(RenderError::NotFound { path: shown }),
            Ok(Within::Outside) => {
                return Err(RenderError::OutsideRoot {
                    at: PathBuf::from("."),
                    entry: dir.display().to_string(),
                });
            }
            Err(source) => {
                return Err(RenderError::Read {
                    path: shown,
                    source,
                });
            }
        };

        let folder = if self.loader.is_dir(&path) {
            Some(path.clone())
        } else {
            let named_as_kustomization = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| kustomization::KUSTOMIZATION_FILE_NAMES.contains(&n));
            path.parent()
                .filter(|_| named_as_kustomization)
                .map(Path::to_path_buf)
        };
        let (acc, sort, build_metadata) = match folder {
            Some(folder) => self.top_folder(&folder)?,
            None => {
                let mut acc = Accumulator::default();
                for res in self.file(&path)? {
                    acc.resources.append(res)?;
                }
                acc.config = config::TransformerConfig::builtin();
                (acc, None, None)
            }
        };
        let mut resources = finish(acc, sort.as_ref())?;
        if let Some(meta) = build_metadata {
            for res in &mut resources {
                meta.apply(res)?;
            }
        }
        tracing::debug!(dir = %self.shown(&path).display(), objects = resources.len(), "rendered");
        Ok(resources.into_iter().map(|r| r.sourced).collect())
    }
}

/// What is done once for the whole build: hash suffixes on generated names, references to renamed objects,
/// vars, dropping local configuration, and the output order.
fn finish(acc: Accumulator, sort: Option<&SortOrder>) -> Result<Vec<Resource>, RenderError> {
    let Accumulator {
        mut resources,
        config,
        vars,
    } = acc;
    add_hash_suffixes(&mut resources)?;
    namereference::fix(&mut resources, &config.name_reference)?;
    vars::resolve(&mut resources, &vars, &config.var_reference)?;
    resources.retain(|r| !r.is_local_config());
    // kustomize rewrites every non-empty annotation map as strings at the end of a build, so a value a
    // transformer wrote as a number (a replacement creating the field) comes out as text.
    for res in resources.resources_mut() {
        let annotated = res
            .object()
            .pointer("/metadata/annotations")
            .and_then(serde_json::Value::as_object)
            .is_some_and(|a| !a.is_empty());
        if annotated {
            documents::stringify_annotations(res.object_mut());
        }
    }
    let mut objects = resources.into_vec();
    check_cluster_identities(&objects)?;
    match sort {
        Some(SortOrder::Fifo) => {}
        Some(SortOrder::Legacy { first, last }) => {
            let mut order = order::LegacyOrder::default();
            if let Some(first) = first {
                order.first = first.clone();
            }
            if let Some(last) = last {
                order.last = last.clone();
            }
            order::sort_legacy(&mut objects, &order);
        }
        None => order::sort_like_kustomize(&mut objects),
    }
    Ok(objects)
}

/// Appends its content hash to the name of every generated object that asks for one (kustomize's
/// `HashTransformer`).
fn add_hash_suffixes(resources: &mut ResMap) -> Result<(), RenderError> {
    for res in resources.resources_mut() {
        if !res.generated.as_ref().is_some_and(|g| g.hash_suffix) {
            continue;
        }
        let hash =
            generators::content_hash(res.object()).map_err(|problem| RenderError::Generator {
                file: res.sourced.origin.file.clone(),
                problem,
            })?;
        res.store_previous_id();
        let name = format!("{}-{hash}", res.name());
        res.set_name(&name);
    }
    Ok(())
}

/// `path` relative to the folder `base` (both repository-relative, or both absolute), with `..` as
/// needed.
fn relative_to(path: &Path, base: &Path) -> PathBuf {
    let norm = |p: &Path| -> Vec<String> {
        normalize(p)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .filter(|c| c != ".")
            .collect()
    };
    let (path, base) = (norm(path), norm(base));
    let common = path.iter().zip(&base).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..base.len() {
        out.push("..");
    }
    for part in &path[common..] {
        out.push(part);
    }
    out
}

/// No two output objects may be the same object on a cluster: same group, kind, namespace and name (kustomize
/// would also let two versions of one object through).
fn check_cluster_identities(objects: &[Resource]) -> Result<(), RenderError> {
    let mut seen: std::collections::HashMap<(String, String, String, String), usize> =
        std::collections::HashMap::new();
    for (i, res) in objects.iter().enumerate() {
        let id = res.cur_id();
        let key = (
            id.gvk.group.clone(),
            id.gvk.kind.clone(),
            id.effective_namespace().to_string(),
            id.name.clone(),
        );
        if let Some(&first) = seen.get(&key) {
            return Err(RenderError::Duplicate {
                id: id.to_string(),
                first: objects[first].sourced.origin.clone(),
                second: res.sourced.origin.clone(),
            });
        }
        seen.insert(key, i);
    }
    Ok(())
}

/// What the folder asked for builds into: the objects accumulated, the output order it asks for, and the
/// build metadata it asks for.
type TopBuild = (
    Accumulator,
    Option<SortOrder>,
    Option<buildmeta::BuildMetadata>,
);

struct Renderer {
    /// The canonical repository root.
    root: PathBuf,
    /// Every read of the filesystem, noted as the render's input closure.
    loader: inputs::Loader,
    /// Canonical folders being rendered, outermost first (for cycle detection).
    stack: Vec<PathBuf>,
    /// The OpenAPI schema strategic merge patches merge with (one for the whole build, as in kustomize).
    openapi: openapi::Choice,
    /// Whether transformers are recorded on the objects they run over (`transformerAnnotations`).
    transformations: bool,
}

impl Renderer {
    /// The build's custom OpenAPI schema, once a kustomization has named one.
    fn custom_schema(&self) -> Option<&openapi::Schema> {
        self.openapi.custom()
    }

    /// How a canonical path is named in origins and errors: relative to the root.
    fn shown(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => PathBuf::from("."),
            Ok(rel) => rel.to_path_buf(),
            // A render that may reach anywhere (the command line's, outside a repository) names
            // what lies outside its folder as the kustomization would reach it.
            Err(_) if self.loader.reaches_anywhere() => relative_to(path, &self.root),
            // Never a host path (the agent's checkout or state directory) in a message.
            Err(_) => PathBuf::from("(outside the repository)"),
        }
    }

    /// The folder asked for: its kustomization if it has one (with its sort options), else its plain files
    /// and subfolders.
    fn top_folder(&mut self, dir: &Path) -> Result<TopBuild, RenderError> {
        match kustomization::find(&self.loader, dir, &self.shown(dir))? {
            Some(file) => {
                let shown = self.shown(&file);
                let text =
                    self.loader
                        .read_to_string(&file)
                        .map_err(|source| RenderError::Read {
                            path: shown.clone(),
                            source,
                        })?;
                let k = kustomization::parse(&shown, &text)?;
                if k.kind == Kind::Component {
                    return Err(target::build_error(
                        &shown,
                        "is a Component: it can only be built as part of a kustomization".into(),
                    ));
                }
                // `buildMetadata` of the kustomization built applies to the whole build.
                let meta =
                    buildmeta::BuildMetadata::from_options(&k.build_metadata, self.shown(dir));
                self.transformations = meta.as_ref().is_some_and(|m| m.transformations);
                let acc = self.accumulate_kustomization(
                    dir,
                    &file,
                    Kind::Kustomization,
                    Accumulator::default(),
                )?;
                Ok((acc, k.sort.clone(), meta))
            }
            None => {
                let acc = self.within(dir, |r| r.plain_folder(dir))?;
                Ok((acc, None, None))
            }
        }
    }

    /// A folder inside a plain folder: its kustomization if it has one, else its plain files and subfolders.
    fn folder(&mut self, dir: &Path) -> Result<Accumulator, RenderError> {
        match kustomization::find(&self.loader, dir, &self.shown(dir))? {
            Some(file) => self.accumulate_kustomization(
                dir,
                &file,
                Kind::Kustomization,
                Accumulator::default(),
            ),
            None => self.within(dir, |r| r.plain_folder(dir)),
        }
    }

    fn within<T>(&mut self, dir: &Path, f: impl FnOnce(&mut Self) -> T) -> T {
        self.stack.push(dir.to_path_buf());
        let out = f(self);
        self.stack.pop();
        out
    }

    /// The objects of one YAML file (canonical path).
    fn file(&self, path: &Path) -> Result<Vec<Resource>, RenderError> {
        let shown = self.shown(path);
        let text = self
            .loader
            .read_to_string(path)
            .map_err(|source| RenderError::Read {
                path: shown.clone(),
                source,
            })?;
        Ok(documents::parse_objects(&shown, &text)?
            .into_iter()
            .map(Resource::loaded)
            .collect())
    }

    /// A folder without a kustomization: its YAML files and subfolders, in lexical order. A subfolder
    /// renders as a kustomization if it has one, else as a plain folder in turn.
    fn plain_folder(&mut self, dir: &Path) -> Result<Accumulator, RenderError> {
        let shown = self.shown(dir);
        let read_err = |source| RenderError::Read {
            path: shown.clone(),
            source,
        };
        let mut entries = self.loader.read_dir_names(dir).map_err(read_err)?;
        entries.sort();

        let mut acc = Accumulator {
            resources: ResMap::default(),
            config: config::TransformerConfig::builtin(),
            vars: Vec::new(),
        };
        for name in entries {
            let Some(name) = name.to_str().filter(|n| !n.starts_with('.')) else {
                continue;
            };
            if self.loader.is_dir(&dir.join(name)) {
                let path = self.resolve(dir, &shown, name)?;
                self.check_cycle(&path, &shown, name)?;
                let sub = self.folder(&path)?;
                acc.resources.append_all(sub.resources)?;
                acc.config
                    .merge(&sub.config)
                    .map_err(|p| target::build_error(&shown, p))?;
                acc.vars.extend(sub.vars);
            } else if name.ends_with(".yaml") || name.ends_with(".yml") {
                let path = self.resolve(dir, &shown, name)?;
                for res in self.file(&path)? {
                    acc.resources.append(res)?;
                }
            }
        }
        Ok(acc)
    }

    /// The canonical path of `entry` (relative to the canonical folder `dir`), as referenced from `at`;
    /// it must exist and lie inside the root (the load restrictor).
    fn resolve(&self, dir: &Path, at: &Path, entry: &str) -> Result<PathBuf, RenderError> {
        let target = dir.join(entry);
        match self.loader.within(self.loader.bound(), &target) {
            Ok(Within::Found(path)) => Ok(path),
            Ok(Within::Missing(path)) => Err(RenderError::MissingResource {
                file: at.to_path_buf(),
                entry: entry.to_string(),
                path: self.shown(&path),
            }),
            Ok(Within::Outside) => Err(RenderError::OutsideRoot {
                at: at.to_path_buf(),
                entry: entry.to_string(),
            }),
            Err(source) => Err(RenderError::Read {
                path: self.shown(&normalize(&target)),
                source,
            }),
        }
    }

    /// Refuses a folder that contains one being rendered (kustomize's "cycle detected").
    fn check_cycle(&self, path: &Path, at: &Path, entry: &str) -> Result<(), RenderError> {
        match self.stack.iter().rev().find(|v| v.starts_with(path)) {
            Some(visited) => Err(RenderError::Cycle {
                file: at.to_path_buf(),
                entry: entry.to_string(),
                dir: self.shown(path),
                visited: self.shown(visited),
            }),
            None => Ok(()),
        }
    }
}

/// Where a path leads, as the load restrictor sees it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Within {
    /// It exists inside the folder: its canonical path.
    Found(PathBuf),
    /// It would be inside the folder but does not exist: its path, `..` resolved.
    Missing(PathBuf),
    /// It is outside the folder, whether it exists or not.
    Outside,
}

/// Where `target` leads relative to the canonical folder `folder`. Containment is decided before
/// existence, so a path outside says "outside" whether or not it exists (a render must not tell
/// anyone which files exist on the agent's host): first `..` is resolved as written, then symlinks
/// (of the path, or of its deepest existing folder when it does not exist).
pub(crate) fn within(folder: &Path, target: &Path) -> std::io::Result<Within> {
    let written = normalize(target);
    if !written.starts_with(folder) {
        return Ok(Within::Outside);
    }
    match std::fs::canonicalize(target) {
        Ok(path) if path.starts_with(folder) => Ok(Within::Found(path)),
        Ok(_) => Ok(Within::Outside),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut ancestor = written.parent();
            while let Some(a) = ancestor {
                if let Ok(real) = std::fs::canonicalize(a) {
                    return Ok(if real.starts_with(folder) {
                        Within::Missing(written)
                    } else {
                        Within::Outside
                    });
                }
                ancestor = a.parent();
            }
            Ok(Within::Outside)
        }
        Err(e) => Err(e),
    }
}

/// Whether a `resources` entry names something to fetch rather than a path in the repository.
fn is_remote(entry: &str) -> bool {
    entry.contains("://")
        || entry.starts_with("git@")
        || entry.starts_with("git::")
        || entry.contains("github.com/")
}

/// `path` with `.` and `..` resolved lexically (for naming paths that do not exist). Leading `..`
/// of a relative path are kept (`../../base`); `..` above `/` is `/`.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                Some(Component::ParentDir | Component::CurDir) | None => out.push(".."),
            },
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod anywhere_tests;
#[cfg(test)]
mod tests;

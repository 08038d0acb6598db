//! Render: turns a folder of the repository into the Kubernetes objects it declares, each with its origin.
//!
//! Render v0 reads plain YAML files and kustomizations that use `resources` and `namespace` only; a later
//! native kustomize implementation replaces the internals behind the same [`render`] and [`RenderError`].
//! Nothing is fetched and nothing is run: remote bases are refused, and every path must resolve (after `..`
//! and symlinks) inside the repository root.
//!
//! - A folder with a kustomization file renders as `kubectl kustomize` would (for the supported fields).
//! - A plain folder renders as if it had a kustomization listing its `.yaml`/`.yml` files and subfolders
//!   in lexical order (hidden entries skipped): a subfolder with a kustomization file renders as one, a plain
//!   one recursively the same way.
//! - A single file renders its documents.
//!
//! Whatever the input, references to moved objects are then fixed as kustomize does (see [`references`]) and
//! objects come out in kustomize's default ("legacy") order (see [`resources`]).

mod documents;
mod error;
pub mod generators;
mod kustomization;
mod namespace;
mod references;
mod resources;

#[cfg(test)]
mod differential;

pub use error::RenderError;

use crate::object::SourcedObject;
use resources::{Resource, ResourceSet};
use std::path::{Component, Path, PathBuf};

/// Renders `dir` (a folder with a kustomization, or a folder of plain YAML files, or one YAML file) inside the
/// repository `root`. `dir` may be absolute or relative to `root`. Objects come out in the order `kubectl
/// kustomize` prints them, each with its origin (repository-relative file and document).
pub fn render(root: &Path, dir: &Path) -> Result<Vec<SourcedObject>, RenderError> {
    let root = std::fs::canonicalize(root).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => RenderError::NotFound {
            path: root.to_path_buf(),
        },
        _ => RenderError::Read {
            path: root.to_path_buf(),
            source,
        },
    })?;
    let mut renderer = Renderer {
        root,
        stack: Vec::new(),
    };
    let target = renderer.root.join(dir);
    let shown = match normalize(dir) {
        p if p.as_os_str().is_empty() => PathBuf::from("."),
        p => p,
    };
    let path = std::fs::canonicalize(&target).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => RenderError::NotFound {
            path: shown.clone(),
        },
        _ => RenderError::Read {
            path: shown.clone(),
            source,
        },
    })?;
    if !path.starts_with(&renderer.root) {
        return Err(RenderError::OutsideRoot {
            at: PathBuf::from("."),
            entry: dir.display().to_string(),
        });
    }

    let mut resources = if path.is_dir() {
        renderer.folder(&path)?
    } else {
        let named_as_kustomization = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| kustomization::KUSTOMIZATION_FILE_NAMES.contains(&n));
        match path.parent() {
            Some(parent) if named_as_kustomization => renderer.folder(parent)?,
            _ => renderer.file(&path)?,
        }
    };
    references::follow_moved_references(&mut resources)?;
    resources::sort_like_kustomize(&mut resources);
    tracing::debug!(dir = %renderer.shown(&path).display(), objects = resources.len(), "rendered");
    Ok(resources.into_iter().map(|r| r.sourced).collect())
}

struct Renderer {
    /// The canonical repository root.
    root: PathBuf,
    /// Canonical folders being rendered, outermost first (for cycle detection).
    stack: Vec<PathBuf>,
}

impl Renderer {
    /// How a canonical path inside the root is named in origins and errors.
    fn shown(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => PathBuf::from("."),
            Ok(rel) => rel.to_path_buf(),
            Err(_) => path.to_path_buf(),
        }
    }

    /// A canonical folder: its kustomization if it has one, else its plain files and subfolders.
    fn folder(&mut self, dir: &Path) -> Result<Vec<Resource>, RenderError> {
        match kustomization::find(dir, &self.shown(dir))? {
            Some(file) => self.within(dir, |r| r.kustomization(dir, &file)),
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
        let text = std::fs::read_to_string(path).map_err(|source| RenderError::Read {
            path: shown.clone(),
            source,
        })?;
        Ok(documents::parse_objects(&shown, &text)?
            .into_iter()
            .map(Resource::loaded)
            .collect())
    }

    fn kustomization(&mut self, dir: &Path, file: &Path) -> Result<Vec<Resource>, RenderError> {
        let file_shown = self.shown(file);
        let text = std::fs::read_to_string(file).map_err(|source| RenderError::Read {
            path: file_shown.clone(),
            source,
        })?;
        let k = kustomization::parse(&file_shown, &text)?;

        let mut set = ResourceSet::default();
        for entry in &k.resources {
            for obj in self.resource(dir, &file_shown, entry)? {
                set.add(obj)?;
            }
        }
        let mut objects = set.into_vec();
        let Some(ns) = &k.namespace else {
            return Ok(objects);
        };
        for res in &mut objects {
            namespace::set_namespace(&mut res.sourced.object, ns);
            res.moved = true;
        }
        let mut set = ResourceSet::default();
        for obj in objects {
            set.add(obj).map_err(|e| match e {
                RenderError::Duplicate { id, first, second } => RenderError::NamespaceConflict {
                    file: file_shown.clone(),
                    id,
                    first,
                    second,
                },
                other => other,
            })?;
        }
        Ok(set.into_vec())
    }

    /// One `resources` entry of the kustomization `file` in `dir`: a file, or a folder with a kustomization.
    fn resource(
        &mut self,
        dir: &Path,
        file: &Path,
        entry: &str,
    ) -> Result<Vec<Resource>, RenderError> {
        if is_remote(entry) {
            return Err(RenderError::RemoteResource {
                file: file.to_path_buf(),
                entry: entry.to_string(),
            });
        }
        let path = self.resolve(dir, file, entry)?;
        if !path.is_dir() {
            return self.file(&path);
        }
        self.check_cycle(&path, file, entry)?;
        match kustomization::find(&path, &self.shown(&path))? {
            Some(kfile) => self.within(&path, |r| r.kustomization(&path, &kfile)),
            None => Err(RenderError::NotAKustomization {
                file: file.to_path_buf(),
                entry: entry.to_string(),
                dir: self.shown(&path),
            }),
        }
    }

    /// A folder without a kustomization: its YAML files and subfolders, in lexical order. A subfolder
    /// renders as a kustomization if it has one, else as a plain folder in turn.
    fn plain_folder(&mut self, dir: &Path) -> Result<Vec<Resource>, RenderError> {
        let shown = self.shown(dir);
        let read_err = |source| RenderError::Read {
            path: shown.clone(),
            source,
        };
        let mut entries = std::fs::read_dir(dir)
            .map_err(read_err)?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(read_err)?;
        entries.sort();

        let mut set = ResourceSet::default();
        for name in entries {
            let Some(name) = name.to_str().filter(|n| !n.starts_with('.')) else {
                continue;
            };
            let objects = if dir.join(name).is_dir() {
                let path = self.resolve(dir, &shown, name)?;
                self.check_cycle(&path, &shown, name)?;
                self.folder(&path)?
            } else if name.ends_with(".yaml") || name.ends_with(".yml") {
                let path = self.resolve(dir, &shown, name)?;
                self.file(&path)?
            } else {
                continue;
            };
            for obj in objects {
                set.add(obj)?;
            }
        }
        Ok(set.into_vec())
    }

    /// The canonical path of `entry` (relative to the canonical folder `dir`), as referenced from `at`;
    /// it must exist and lie inside the root (the load restrictor).
    fn resolve(&self, dir: &Path, at: &Path, entry: &str) -> Result<PathBuf, RenderError> {
        let target = dir.join(entry);
        let path = std::fs::canonicalize(&target).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => RenderError::MissingResource {
                file: at.to_path_buf(),
                entry: entry.to_string(),
                path: self.shown(&normalize(&target)),
            },
            _ => RenderError::Read {
                path: self.shown(&normalize(&target)),
                source,
            },
        })?;
        if !path.starts_with(&self.root) {
            return Err(RenderError::OutsideRoot {
                at: at.to_path_buf(),
                entry: entry.to_string(),
            });
        }
        Ok(path)
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

/// Whether a `resources` entry names something to fetch rather than a path in the repository.
fn is_remote(entry: &str) -> bool {
    entry.contains("://")
        || entry.starts_with("git@")
        || entry.starts_with("git::")
        || entry.contains("github.com/")
}

/// `path` with `.` and `..` resolved lexically (for naming paths that do not exist).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests;

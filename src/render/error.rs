//! What can go wrong while rendering, each case naming the file (relative to the repository root).
//!
//! Messages name files, documents, lines, fields and object identities (Kind/namespace/name), never a value
//! taken from an object, so no Secret data can leak through an error.

use crate::object::Origin;
use std::path::{Path, PathBuf};

/// A render that could not be completed. Every variant names the repository-relative file it is about.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The folder or file asked for does not exist.
    #[error("{}: not found", path.display())]
    NotFound { path: PathBuf },

    /// A path resolves (after `..` and symlinks) outside the repository: the load restrictor refuses it.
    #[error("{}: `{entry}` resolves outside the repository; renders may only read files inside it", at.display())]
    OutsideRoot {
        /// The file whose reference points outside (`.`, the root, when it is the path asked for).
        at: PathBuf,
        /// The reference as written.
        entry: String,
    },

    /// A file or folder exists but could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A YAML syntax error; `line` and `column` are 1-based and count from the start of the file.
    #[error("{}: invalid YAML{}: {message}", file.display(), location(*line, *column))]
    Yaml {
        file: PathBuf,
        line: Option<usize>,
        column: Option<usize>,
        message: String,
    },

    /// A document that is not a usable Kubernetes object.
    #[error("{}: document {}{} (line {line}): {problem}", origin.file.display(), origin.document + 1, item_suffix(*item))]
    InvalidObject {
        /// The file and the (0-based) document index; displayed 1-based.
        origin: Origin,
        /// 1-based line where the document starts.
        line: usize,
        /// 1-based position in a `List`'s items (nested lists: the innermost), when the object came from one.
        item: Option<usize>,
        problem: String,
    },

    /// More than one kustomization file in one folder.
    #[error("{}: found multiple kustomization files: {}", dir.display(), names.join(", "))]
    MultipleKustomizations { dir: PathBuf, names: Vec<String> },

    /// A kustomization file that is empty, not a mapping, or has a malformed supported field.
    #[error("{}: {problem}", file.display())]
    InvalidKustomization { file: PathBuf, problem: String },

    /// A kustomize field this renderer does not implement.
    #[error("{}: kustomization field `{field}` is not supported", file.display())]
    UnsupportedField { file: PathBuf, field: String },

    /// A field kustomize itself does not know.
    #[error("{}: unknown kustomization field `{field}`", file.display())]
    UnknownField { file: PathBuf, field: String },

    /// A `resources` entry naming a remote base.
    #[error(
        "{}: resource `{entry}`: remote bases are not supported: the agent never fetches during a render",
        file.display()
    )]
    RemoteResource { file: PathBuf, entry: String },

    /// A file a kustomization names outside its own folder (kustomize's load restrictor refuses it).
    #[error(
        "{}: `{entry}` is not in or below the kustomization folder {}: a kustomization may only read files in its own folder (bases and components may be elsewhere)",
        file.display(),
        dir.display()
    )]
    OutsideKustomization {
        file: PathBuf,
        entry: String,
        dir: PathBuf,
    },

    /// A kustomization that cannot be built as written: a patch target that matches nothing, a generator
    /// colliding with an object, a transformer that cannot apply... `problem` says what and where.
    #[error("{}: {problem}", file.display())]
    Build { file: PathBuf, problem: String },

    /// A `configMapGenerator` or `secretGenerator` entry that cannot be expanded or merged.
    /// The message already holds the generator's error, so it is not also chained as a source (a
    /// `{:#}` print would show it twice).
    #[error("{}", generator_message(file, problem))]
    Generator {
        /// The kustomization file of the generator.
        file: PathBuf,
        problem: super::generators::GeneratorError,
    },

    /// A `resources` entry naming nothing.
    #[error("{}: resource `{entry}`: {} does not exist", file.display(), path.display())]
    MissingResource {
        file: PathBuf,
        entry: String,
        path: PathBuf,
    },

    /// A `resources` entry naming a folder without a kustomization file.
    #[error(
        "{}: resource `{entry}`: must build at directory: {} has no kustomization file (kustomization.yaml, kustomization.yml or Kustomization)",
        file.display(),
        dir.display()
    )]
    NotAKustomization {
        file: PathBuf,
        entry: String,
        dir: PathBuf,
    },

    /// A folder that includes itself, directly or through others.
    #[error(
        "{}: resource `{entry}`: cycle detected: {} contains {}, which is already being rendered",
        file.display(),
        dir.display(),
        visited.display()
    )]
    Cycle {
        file: PathBuf,
        entry: String,
        dir: PathBuf,
        visited: PathBuf,
    },

    /// Two objects with the same identity (group, kind, namespace, name).
    #[error(
        "{id}: may not add resource with an already registered id: defined in {first} and again in {second}"
    )]
    Duplicate {
        id: String,
        first: Origin,
        second: Origin,
    },

    /// A reference kustomize would rewrite but cannot resolve (no name, or several possible targets).
    #[error("{origin}: {id}: {problem}")]
    Reference {
        origin: Origin,
        id: String,
        problem: String,
    },

    /// The `namespace` of a kustomization moved two objects onto the same identity.
    #[error(
        "{}: `namespace` produces an id conflict: {id} would come from both {first} and {second}",
        file.display()
    )]
    NamespaceConflict {
        file: PathBuf,
        id: String,
        first: Origin,
        second: Origin,
    },
}

impl RenderError {
    /// The repository-relative file (or folder) the error is about.
    pub fn file(&self) -> &Path {
        match self {
            RenderError::NotFound { path } | RenderError::Read { path, .. } => path,
            RenderError::OutsideRoot { at, .. } => at,
            RenderError::InvalidObject { origin, .. } | RenderError::Reference { origin, .. } => {
                &origin.file
            }
            RenderError::MultipleKustomizations { dir, .. } => dir,
            RenderError::Duplicate { second, .. } => &second.file,
            RenderError::Yaml { file, .. }
            | RenderError::InvalidKustomization { file, .. }
            | RenderError::UnsupportedField { file, .. }
            | RenderError::UnknownField { file, .. }
            | RenderError::RemoteResource { file, .. }
            | RenderError::MissingResource { file, .. }
            | RenderError::NotAKustomization { file, .. }
            | RenderError::OutsideKustomization { file, .. }
            | RenderError::Build { file, .. }
            | RenderError::Generator { file, .. }
            | RenderError::Cycle { file, .. }
            | RenderError::NamespaceConflict { file, .. } => file,
        }
    }
}

impl RenderError {
    /// The 1-based line and column in [`RenderError::file`] the error is at, where known.
    pub fn position(&self) -> (Option<usize>, Option<usize>) {
        match self {
            RenderError::Yaml { line, column, .. } => (*line, *column),
            RenderError::InvalidObject { line, .. } => (Some(*line), None),
            _ => (None, None),
        }
    }

    /// What is wrong, without the file the message starts with (it is [`RenderError::file`]) nor
    /// the position (it is [`RenderError::position`]).
    pub fn detail(&self) -> String {
        match self {
            RenderError::Yaml { message, .. } => format!("invalid YAML: {message}"),
            RenderError::InvalidObject {
                origin,
                item,
                problem,
                ..
            } => format!(
                "document {}{}: {problem}",
                origin.document + 1,
                item_suffix(*item)
            ),
            other => {
                let text = other.to_string();
                let file = format!("{}: ", self.file().display());
                match text.strip_prefix(&file) {
                    Some(rest) => rest.to_string(),
                    None => text,
                }
            }
        }
    }
}

/// A generator error names its file, unless it is about an object (then the file is added).
fn generator_message(file: &Path, source: &super::generators::GeneratorError) -> String {
    let text = source.to_string();
    let prefix = format!("{}: ", file.display());
    if text.starts_with(&prefix) {
        text
    } else {
        format!("{prefix}{text}")
    }
}

fn location(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(" at line {l} column {c}"),
        (Some(l), None) => format!(" at line {l}"),
        _ => String::new(),
    }
}

fn item_suffix(item: Option<usize>) -> String {
    item.map(|i| format!(", list item {i}")).unwrap_or_default()
}

//! Errors of the generators: each names the kustomization file and the generator entry, never a value.

use std::fmt;
use std::path::PathBuf;

/// Where an error is: the kustomization file and the generator entry in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct At {
    /// The kustomization file, repository-relative.
    pub file: PathBuf,
    /// The entry, e.g. `configMapGenerator "app-config"`, or `secretGenerator[2]` when it has no name, or
    /// `generatorOptions`.
    pub entry: String,
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.entry)
    }
}

/// A generator that cannot be expanded, or a generated object that cannot be merged or hashed.
#[derive(Debug, thiserror::Error)]
pub enum GeneratorError {
    /// The kustomization does not have kustomize's schema here (wrong type, unknown field).
    #[error("{at}: {message}")]
    Schema { at: At, message: String },
    #[error("{at}: has no name")]
    MissingName { at: At },
    /// A `literals` item without `=` or with an empty key. Its text is not shown: it may be a secret.
    #[error("{at}: literals[{index}] is not KEY=VALUE")]
    InvalidLiteral { at: At, index: usize },
    /// A `files` item that is not `PATH` or `KEY=PATH`.
    #[error("{at}: files entry {entry:?}: {problem}")]
    InvalidFileSource {
        at: At,
        entry: String,
        problem: &'static str,
    },
    #[error(
        "{at}: {path:?} is a remote file; only files inside the kustomization folder can be read"
    )]
    RemoteFile { at: At, path: String },
    #[error("{at}: {path:?} is not in or below the kustomization folder (after `..` and symlinks)")]
    OutsideKustomization { at: At, path: String },
    #[error("{at}: {path:?} does not exist")]
    FileNotFound { at: At, path: String },
    #[error("{at}: {path:?} is not a file")]
    NotAFile { at: At, path: String },
    #[error("{at}: cannot read {path:?}: {source}")]
    Read {
        at: At,
        path: String,
        source: std::io::Error,
    },
    /// A SOPS-encrypted input where it cannot be used (a ConfigMap, or `envs` of a non-dotenv file).
    #[error("{at}: {path:?} is encrypted with SOPS: {problem}")]
    SopsInput {
        at: At,
        path: String,
        problem: &'static str,
    },
    #[error("{at}: env file {path:?} line {line}: {problem}")]
    EnvFile {
        at: At,
        path: String,
        line: usize,
        problem: &'static str,
    },
    /// A key the API server would refuse (kustomize passes it through).
    #[error("{at}: {key:?} is not a valid key: {reason}")]
    InvalidKey {
        at: At,
        key: String,
        reason: &'static str,
    },
    #[error("{at}: the key {key:?} is given more than once")]
    DuplicateKey { at: At, key: String },
    /// A generated object that cannot be merged into, or replace, an existing one.
    #[error("{object}: cannot {action}: {reason}")]
    Merge {
        object: String,
        action: &'static str,
        reason: String,
    },
    /// An object whose content hash cannot be computed.
    #[error("{object}: cannot compute a name suffix hash: {reason}")]
    Hash { object: String, reason: String },
}

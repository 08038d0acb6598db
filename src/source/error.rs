//! The one error type of the source stage.
//!
//! Every message names the repository (its URL with credentials stripped, or the plain directory) and the
//! reference or branch involved. Messages coming from libgit2 pass through [`super::remote::RemoteUrl::redact`]
//! before they land here, so no password or token ever reaches a message or a log.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A reference given on the command line or in configuration is not a valid branch, tag or commit.
    #[error("invalid git reference {input:?}: {reason}")]
    InvalidRef { input: String, reason: &'static str },

    /// `--repo` names a local path that does not exist.
    #[error("repository path {} does not exist", path.display())]
    MissingPath { path: PathBuf },

    /// The remote could not be reached or read (network, authentication, missing repository).
    #[error("{url} at {reference}: fetch failed: {message}")]
    Fetch {
        url: String,
        reference: String,
        message: String,
    },

    /// The remote answered but has no such branch, tag or commit.
    #[error("{url}: {reference} not found: the repository has no such branch, tag or revision")]
    RefNotFound { url: String, reference: String },

    /// A revision (`HEAD~1`, a short id, `refs/pull/1/merge`) names nothing in the repository.
    #[error("{url}: unknown revision {revision:?}: {reason}")]
    UnknownRevision {
        url: String,
        revision: String,
        reason: String,
    },

    /// A revision needs a commit a shallow clone lacks, and it could not be fetched.
    #[error("{url}: revision {revision:?}: {detail}; run: {command}")]
    MissingCommit {
        url: String,
        revision: String,
        detail: String,
        command: String,
    },

    /// A plain directory could not be imported into its local origin.
    #[error("plain directory {dir}: import failed: {message}")]
    Import { dir: PathBuf, message: String },

    /// A report path is absolute, empty, not UTF-8 or climbs out with `..`.
    #[error("{url}: invalid report path {path} for branch {branch}")]
    InvalidReportPath {
        url: String,
        branch: String,
        path: PathBuf,
    },

    /// The push could not be done (network, authentication, a server-side hook's own error).
    #[error("{url}: push to branch {branch} failed: {message}")]
    Push {
        url: String,
        branch: String,
        message: String,
    },

    /// The push was refused every time, even after fetching and re-applying the change.
    #[error("{url}: push to branch {branch} rejected after {attempts} attempts: {message}")]
    PushRejected {
        url: String,
        branch: String,
        attempts: u32,
        message: String,
    },

    /// A local repository operation (resolve, commit, diff, checkout) failed.
    #[error("{url} at {reference}: {op} failed: {message}")]
    Git {
        url: String,
        reference: String,
        op: &'static str,
        message: String,
    },

    /// `--verify-signatures` refused the revision: a commit is unsigned, untrusted or invalid.
    #[error("{url}: {refusal}")]
    Refused {
        url: String,
        refusal: Box<super::signature::Refusal>,
    },

    /// Reading or writing the state directory failed.
    #[error("{path}: {op} failed: {source}")]
    Io {
        path: PathBuf,
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
}

impl SourceError {
    /// True when this refuses the revision `commit` itself (so it cannot serve as the fallback).
    pub fn refuses(&self, commit: &str) -> bool {
        matches!(self, SourceError::Refused { refusal, .. } if refusal.tip == commit)
    }

    /// The refusal, when signature verification refused the revision.
    pub fn refusal(&self) -> Option<&super::signature::Refusal> {
        match self {
            SourceError::Refused { refusal, .. } => Some(refusal),
            _ => None,
        }
    }

    pub(super) fn io(
        path: impl Into<PathBuf>,
        op: &'static str,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| SourceError::Io { path, op, source }
    }
}

//! The source stage: the agent's only contact with git.
//!
//! [`Source`] fetches a repository (https, ssh, git, file URL or a local path) at a branch, tag or commit,
//! checks the commit's files out under the state directory and remembers the last good revision across
//! restarts; when the remote cannot be reached it keeps serving that revision and says so
//! ([`SyncOutcome::Stale`]). It also commits reports back ([`Source::publish`]) as a bot, only when their
//! content changed, retrying when a concurrent push wins the race.
//!
//! A plain directory (not a git repository) is imported into a bare origin under the state directory on
//! every sync, so the same fetch, commit and push path runs against it as against a real remote.
//!
//! State directory layout: `mirror.git` (bare repository the remote is fetched into), `checkout/<sha>`
//! (the files of the current revision), `last-good` (the last good revision), and `origin.git` for a
//! plain directory.

mod checkout;
mod error;
mod origin;
mod remote;
mod reports;
mod revision;
pub mod signature;
mod sync;
#[cfg(test)]
pub(crate) mod testutil;
mod verify;

pub use error::SourceError;
pub use remote::TOKEN_ENV;
pub use reports::MAX_PUSH_ATTEMPTS;

use git2::Repository;
use remote::RemoteUrl;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Mutex;

/// What to check out.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum GitRef {
    Branch(String),
    Tag(String),
    /// A full or abbreviated (at least 4 hex digits) commit id.
    Commit(String),
    /// Whatever the remote's HEAD points to (a local repository's HEAD, detached or not).
    RemoteHead,
    /// Anything else `git rev-parse` reads: `HEAD~1`, `main^2`, a short id, `refs/pull/1/merge`.
    /// Read in a local repository itself; for a remote, in what was fetched of it.
    Revision(String),
}

impl FromStr for GitRef {
    type Err = SourceError;

    /// Accepts `branch:NAME`, `tag:NAME`, `commit:SHA`, `rev:EXPR`, `refs/heads/NAME`, `refs/tags/NAME`,
    /// `HEAD` (or an empty string), a full 40-digit commit id, any other `refs/...`, a short commit
    /// id or an expression with `~`, `^`, `@` or `:` (a [`GitRef::Revision`]), and otherwise a
    /// branch name (looked up as a revision when the remote has no such branch).
    fn from_str(input: &str) -> Result<Self, SourceError> {
        let invalid = |reason| SourceError::InvalidRef {
            input: input.to_string(),
            reason,
        };
        let parsed = if input.is_empty() || input == "HEAD" {
            GitRef::RemoteHead
        } else if let Some(name) = input
            .strip_prefix("branch:")
            .or_else(|| input.strip_prefix("refs/heads/"))
        {
            GitRef::Branch(name.to_string())
        } else if let Some(name) = input
            .strip_prefix("tag:")
            .or_else(|| input.strip_prefix("refs/tags/"))
        {
            GitRef::Tag(name.to_string())
        } else if let Some(sha) = input.strip_prefix("commit:") {
            GitRef::Commit(sha.to_ascii_lowercase())
        } else if let Some(expr) = input.strip_prefix("rev:") {
            GitRef::Revision(expr.to_string())
        } else if input.len() == 40 && input.bytes().all(|b| b.is_ascii_hexdigit()) {
            GitRef::Commit(input.to_ascii_lowercase())
        } else if input.starts_with("refs/")
            || input.contains(['~', '^', '@', ':'])
            || ((7..40).contains(&input.len()) && input.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            GitRef::Revision(input.to_string())
        } else {
            GitRef::Branch(input.to_string())
        };
        match &parsed {
            GitRef::Branch(name)
                if !git2::Reference::is_valid_name(&format!("refs/heads/{name}")) =>
            {
                Err(invalid("not a valid branch name"))
            }
            GitRef::Tag(name) if !git2::Reference::is_valid_name(&format!("refs/tags/{name}")) => {
                Err(invalid("not a valid tag name"))
            }
            GitRef::Commit(sha)
                if !(4..=40).contains(&sha.len())
                    || !sha.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                Err(invalid("a commit is 4 to 40 hex digits"))
            }
            GitRef::Revision(expr)
                if expr.is_empty() || expr.chars().any(|c| c.is_whitespace() || c.is_control()) =>
            {
                Err(invalid("a revision is not empty and has no spaces"))
            }
            _ => Ok(parsed),
        }
    }
}

impl fmt::Display for GitRef {
    /// The form [`GitRef::from_str`] reads back: `branch:main`, `tag:v1`, `commit:SHA` or `HEAD`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GitRef::Branch(name) => write!(f, "branch:{name}"),
            GitRef::Tag(name) => write!(f, "tag:{name}"),
            GitRef::Commit(sha) => write!(f, "commit:{sha}"),
            GitRef::RemoteHead => f.write_str("HEAD"),
            GitRef::Revision(expr) => write!(f, "rev:{expr}"),
        }
    }
}

/// Where the source is and where its state lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceConfig {
    /// A URL (https, ssh, git, file, scp-like `user@host:path`) or a local path to a git repository or a
    /// plain directory. Credentials in it are used but never shown.
    pub url: String,
    pub reference: GitRef,
    pub state_dir: PathBuf,
}

/// A commit and the directory holding its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revision {
    /// Full commit id.
    pub commit: String,
    /// `state_dir/checkout/<commit>`: the commit's files (no `.git`). Only the latest checkout is kept.
    pub checkout: PathBuf,
}

/// The result of [`Source::sync`].
#[derive(Debug)]
pub enum SyncOutcome {
    /// A revision other than the last good one.
    Fresh(Revision),
    /// The same revision as the last good one (also right after a restart).
    Unchanged(Revision),
    /// The remote could not be fetched or the reference resolved: the last good revision is kept.
    Stale {
        last_good: Revision,
        error: SourceError,
    },
}

impl SyncOutcome {
    /// The revision to work from, whatever happened.
    pub fn revision(&self) -> &Revision {
        match self {
            SyncOutcome::Fresh(r)
            | SyncOutcome::Unchanged(r)
            | SyncOutcome::Stale { last_good: r, .. } => r,
        }
    }
}

/// Where reports are committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportTarget {
    /// A branch of their own (created as an orphan branch holding only reports), files at its root.
    StatusBranch { branch: String },
    /// The source branch itself, files under `prefix`.
    SourceBranch { branch: String, prefix: PathBuf },
}

impl Default for ReportTarget {
    fn default() -> Self {
        ReportTarget::StatusBranch {
            branch: "aro-gitops/status".to_string(),
        }
    }
}

impl ReportTarget {
    pub fn branch(&self) -> &str {
        match self {
            ReportTarget::StatusBranch { branch } | ReportTarget::SourceBranch { branch, .. } => {
                branch
            }
        }
    }

    /// Where a report file lands in the repository.
    pub fn repo_path(&self, file: &Path) -> PathBuf {
        match self {
            ReportTarget::StatusBranch { .. } => file.to_path_buf(),
            ReportTarget::SourceBranch { prefix, .. } => prefix.join(file),
        }
    }

    /// True when every changed path is a report, so the change needs no reconcile (see
    /// [`Source::changed_paths`]). Reports on a status branch never share a branch with sources.
    pub fn only_reports(&self, changed: &[PathBuf]) -> bool {
        match self {
            ReportTarget::StatusBranch { .. } => changed.is_empty(),
            ReportTarget::SourceBranch { prefix, .. } => {
                changed.iter().all(|path| path.starts_with(prefix))
            }
        }
    }
}

/// Who commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub name: String,
    pub email: String,
}

impl Default for Identity {
    /// The agent's bot identity.
    fn default() -> Self {
        Identity {
            name: "aro-gitops".to_string(),
            email: "aro-gitops@users.noreply.local".to_string(),
        }
    }
}

/// A git source: see the module documentation.
#[derive(Debug)]
pub struct Source {
    reference: GitRef,
    state_dir: PathBuf,
    /// What is fetched from and pushed to (the local origin for a plain directory).
    remote: RemoteUrl,
    /// A plain directory imported into `state_dir/origin.git` before each sync.
    plain_dir: Option<PathBuf>,
    /// A local git repository (work tree or bare): revisions are read in it.
    local: Option<PathBuf>,
    last_good: Option<Revision>,
    /// Serialises publishes sharing this source across threads.
    publishing: Mutex<()>,
    /// `--verify-signatures`: revisions are checked before they are checked out.
    verification: Option<std::sync::Arc<signature::Verification>>,
    /// What the last sync's verification said, if it verified.
    verification_result: Option<Result<signature::Verdict, signature::Refusal>>,
    /// The state directory of another source of the same repository whose checkouts a new
    /// checkout is linked from (see [`Source::seed_checkouts_from`]).
    seed: Option<PathBuf>,
}

impl Source {
    /// Prepares the state directory and reads the last good revision left by a previous run. Does not
    /// touch the network.
    pub fn open(config: SourceConfig) -> Result<Source, SourceError> {
        let SourceConfig {
            url,
            reference,
            state_dir,
        } = config;
        std::fs::create_dir_all(&state_dir)
            .map_err(SourceError::io(&state_dir, "create state directory"))?;
        let state_dir =
            std::path::absolute(&state_dir).map_err(SourceError::io(&state_dir, "resolve"))?;
        let plain_dir = origin::plain_directory(&url);
        let local = match plain_dir {
            Some(_) => None,
            None => origin::local_repository(&url),
        };
        let remote = match &plain_dir {
            Some(dir) => {
                let origin = state_dir.join(origin::ORIGIN_DIR);
                RemoteUrl::new(&origin.to_string_lossy(), Some(dir.display().to_string()))
            }
            None => RemoteUrl::new(&url, None),
        };
        let last_good =
            checkout::load_last_good(&state_dir, remote.shown(), &reference).map(|commit| {
                Revision {
                    checkout: checkout::checkout_dir(&state_dir, &commit),
                    commit,
                }
            });
        // A local path that does not exist, and nothing synced before: a typo, said plainly (a
        // path that vanished after a sync is an unreachable source: the last good revision serves).
        if last_good.is_none()
            && let Some(path) = origin::missing_local_path(&url)
        {
            return Err(SourceError::MissingPath { path });
        }
        tracing::info!(
            url = remote.shown(),
            reference = %reference,
            plain_directory = plain_dir.is_some(),
            last_good = last_good.as_ref().map(|r| r.commit.as_str()),
            "git source opened"
        );
        Ok(Source {
            reference,
            state_dir,
            remote,
            plain_dir,
            local,
            last_good,
            publishing: Mutex::new(()),
            verification: None,
            verification_result: None,
            seed: None,
        })
    }

    /// Verifies the signatures of every revision from now on (see [`signature`]).
    pub fn verify_signatures(&mut self, verification: std::sync::Arc<signature::Verification>) {
        self.verification = Some(verification);
    }

    /// Checks a new revision out from a checkout of the source whose state directory is `other`
    /// (hard links, and the files that differ written anew) rather than writing the whole tree,
    /// when this source has no checkout of its own to start from. `other`'s mirror must be readable
    /// from this one ([`share_objects`]), and its checkouts are never written to.
    pub fn seed_checkouts_from(&mut self, other: PathBuf) {
        self.seed = Some(other);
    }

    /// What the last [`Source::sync`] verified: the tip's verdict or the refusal (`None` without
    /// verification, or when the source could not be read).
    pub fn verification_result(&self) -> Option<&Result<signature::Verdict, signature::Refusal>> {
        self.verification_result.as_ref()
    }

    /// The source URL as it may be shown (credentials stripped), or the plain directory.
    pub fn url(&self) -> &str {
        self.remote.shown()
    }

    pub fn reference(&self) -> &GitRef {
        &self.reference
    }

    /// The last revision that was fetched and checked out, if any (kept across restarts).
    pub fn last_good(&self) -> Option<&Revision> {
        self.last_good.as_ref()
    }

    /// Paths (repository-relative) that differ between two commits known locally (in the mirror,
    /// or in the local repository itself), sorted. A rename shows as both its old and new path.
    pub fn changed_paths(&self, from: &str, to: &str) -> Result<Vec<PathBuf>, SourceError> {
        let range = format!("{from}..{to}");
        let error = self.remote.git_error(&range, "diff");
        let mirror = self.mirror()?;
        let local = self.local.as_ref().and_then(|p| Repository::open(p).ok());
        let tree = |repo: &Repository, rev: &str| {
            repo.revparse_single(rev)
                .and_then(|object| object.peel_to_tree())
                .map(|tree| tree.id())
        };
        let holding_both = local
            .iter()
            .chain(std::iter::once(&mirror))
            .find(|repo| tree(repo, from).is_ok() && tree(repo, to).is_ok())
            .unwrap_or(&mirror);
        let repo = holding_both;
        let (old, new) = (
            tree(repo, from).map_err(&error)?,
            tree(repo, to).map_err(&error)?,
        );
        let (old, new) = (
            repo.find_tree(old).map_err(&error)?,
            repo.find_tree(new).map_err(&error)?,
        );
        let diff = repo
            .diff_tree_to_tree(Some(&old), Some(&new), None)
            .map_err(&error)?;
        let paths: BTreeSet<PathBuf> = diff
            .deltas()
            .flat_map(|delta| [delta.old_file().path(), delta.new_file().path()])
            .flatten()
            .map(Path::to_path_buf)
            .collect();
        Ok(paths.into_iter().collect())
    }

    /// Commits `files` (report-relative path → content) onto `target` as `identity` and pushes, only when
    /// some content differs from the branch tip. Returns the new commit, or `None` when nothing changed.
    /// Files already on the branch and not named are kept. When a concurrent push wins, fetches, rebuilds
    /// the commit on the new tip and retries, up to [`MAX_PUSH_ATTEMPTS`] times.
    pub fn publish(
        &self,
        target: &ReportTarget,
        files: &BTreeMap<PathBuf, Vec<u8>>,
        message: &str,
        identity: &Identity,
    ) -> Result<Option<String>, SourceError> {
        self.publish_with(target, files, message, identity, &mut |_| {})
    }

    /// What `target`'s branch holds at `files` (report-relative), after fetching it: the reports an
    /// earlier run published, those that exist.
    pub fn published(
        &self,
        target: &ReportTarget,
        files: &[PathBuf],
    ) -> Result<BTreeMap<PathBuf, Vec<u8>>, SourceError> {
        let repo = self.mirror()?;
        reports::read_published(&repo, &self.remote, target, files)
    }

    fn publish_with(
        &self,
        target: &ReportTarget,
        files: &BTreeMap<PathBuf, Vec<u8>>,
        message: &str,
        identity: &Identity,
        before_push: &mut dyn FnMut(u32),
    ) -> Result<Option<String>, SourceError> {
        let _guard = self
            .publishing
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let repo = self.mirror()?;
        let publish = reports::Publish {
            repo: &repo,
            remote: &self.remote,
            target,
            files,
            message,
            identity,
        };
        publish.run(before_push)
    }

    /// Checks out `commit` under `into` (not this source's own checkouts, which a running agent
    /// uses), from the local mirror, fetching first when the mirror does not have it yet. For
    /// looking at a revision applied earlier (drift), whatever the reference says now.
    pub fn materialize_commit(&self, commit: &str, into: &Path) -> Result<PathBuf, SourceError> {
        self.materialize_seeded(commit, into, None)
    }

    /// Checks out `commit` for a rollout that keeps units on it (see
    /// [`crate::agent::controller`]'s rollout), under `state_dir/rollout`, to render them there
    /// again; [`Source::remove_kept`] removes it once they are. With `seed` (the checkout of
    /// another commit: the newest revision's), its files are hard-linked and only those the two
    /// commits differ in are written.
    pub fn materialize_kept(
        &self,
        commit: &str,
        seed: Option<(&Path, &str)>,
    ) -> Result<PathBuf, SourceError> {
        self.materialize_seeded(commit, &self.state_dir.join(KEPT_DIR), seed)
    }

    /// `commit` checked out under `into` (fetched first when the mirror lacks it), from `seed`'s
    /// files when one is given (see [`checkout::materialize_seeded`]).
    fn materialize_seeded(
        &self,
        commit: &str,
        into: &Path,
        seed: Option<(&Path, &str)>,
    ) -> Result<PathBuf, SourceError> {
        let git_error = self.remote.git_error(commit, "check out");
        let repo = self.mirror()?;
        let oid = git2::Oid::from_str(commit).map_err(&git_error)?;
        if repo.find_commit(oid).is_err() {
            remote::fetch(
                &repo,
                &self.remote,
                &["+refs/heads/*:refs/remotes/origin/*"],
            )
            .map_err(|e| SourceError::Fetch {
                url: self.remote.shown().to_string(),
                reference: commit.to_string(),
                message: self.remote.redact(e.message()),
            })?;
        }
        std::fs::create_dir_all(into).map_err(SourceError::io(into, "create directory"))?;
        let seed = seed.and_then(|(dir, c)| Some((dir, git2::Oid::from_str(c).ok()?)));
        checkout::materialize_seeded(&repo, oid, seed, into, &git_error)
    }

    /// Removes every checkout [`Source::materialize_kept`] made (best effort): a unit kept on a
    /// revision holds its rendering in memory, so its checkout is needed only while rendering.
    pub fn remove_kept(&self) {
        checkout::remove_other_checkouts(&self.state_dir.join(KEPT_DIR), "");
    }

    /// The local bare repository the remote is fetched into.
    fn mirror(&self) -> Result<Repository, SourceError> {
        let path = mirror_path(&self.state_dir);
        Repository::open_bare(&path)
            .or_else(|_| Repository::init_bare(&path))
            .map_err(
                self.remote
                    .git_error(&self.reference.to_string(), "open mirror"),
            )
    }
}

/// Where the checkouts of revisions a rollout keeps units on are made, in the state directory.
const KEPT_DIR: &str = "rollout";

/// The local bare repository of the source whose state directory is `state_dir`.
pub fn mirror_path(state_dir: &Path) -> PathBuf {
    state_dir.join("mirror.git")
}

/// Lets the mirror under `state_dir` read the objects of the mirror under `other` (a git
/// alternate), so that its fetches download only what `other` lacks: two sources of one
/// repository (a plan's base and head) then fetch its history once. Creates the mirror if need be;
/// the alternate is added once.
pub fn share_objects(state_dir: &Path, other: &Path) -> Result<(), SourceError> {
    let path = mirror_path(state_dir);
    let theirs = std::path::absolute(mirror_path(other).join("objects"))
        .map_err(SourceError::io(other, "resolve"))?;
    let failed = |e: git2::Error| SourceError::Io {
        path: path.clone(),
        op: "open mirror",
        source: std::io::Error::other(e.message().to_string()),
    };
    Repository::open_bare(&path)
        .or_else(|_| Repository::init_bare(&path))
        .map_err(failed)?;
    let file = path.join("objects/info/alternates");
    let mut text = std::fs::read_to_string(&file).unwrap_or_default();
    let line = theirs.to_string_lossy();
    if !text.lines().any(|l| l == line) {
        text.push_str(&line);
        text.push('\n');
        std::fs::create_dir_all(path.join("objects/info"))
            .map_err(SourceError::io(&file, "create directory"))?;
        std::fs::write(&file, text).map_err(SourceError::io(&file, "write"))?;
    }
    Ok(())
}

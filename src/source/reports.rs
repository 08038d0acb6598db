//! Committing reports back to the source repository.
//!
//! Each attempt fetches the target branch, lays the report files over its tip (files not named are kept;
//! a status branch that does not exist yet starts as an orphan holding only reports), commits as the bot
//! identity only when the tree changed, and pushes without force. A push that loses a race (the branch
//! moved since the fetch) starts over on the new tip, a bounded number of times, after a jittered
//! backoff (several agents, one per shard, publish to one branch: each lays only its own units'
//! files, so starting over on the other's tip keeps both).

use super::remote::{self, PushOutcome, RemoteUrl};
use super::{Identity, ReportTarget, SourceError};
use git2::{ObjectType, Oid, Repository, Signature, Tree};
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// How many times [`super::Source::publish`] pushes before giving up on a branch that keeps moving.
pub const MAX_PUSH_ATTEMPTS: u32 = crate::retry::REPORT_PUSH.max_retries + 1;

/// A report's path in the repository (components) and its content.
type ReportFile<'a> = (Vec<String>, &'a [u8]);

/// One publish: what to write where, and as whom.
pub(super) struct Publish<'a> {
    pub repo: &'a Repository,
    pub remote: &'a RemoteUrl,
    pub target: &'a ReportTarget,
    pub files: &'a BTreeMap<PathBuf, Vec<u8>>,
    pub message: &'a str,
    pub identity: &'a Identity,
}

impl Publish<'_> {
    /// Publishes; `before_push(attempt)` runs between building the commit and pushing it (tests use it to
    /// push a competing commit).
    pub fn run(&self, before_push: &mut dyn FnMut(u32)) -> Result<Option<String>, SourceError> {
        let branch = self.target.branch();
        let files = self.repo_files()?;
        let local_ref = format!("refs/aro-gitops/publish/{branch}");
        let mut last_rejection = String::new();
        for attempt in 1..=MAX_PUSH_ATTEMPTS {
            let tip = self.fetch_tip()?;
            let commit = self
                .commit_over(tip, &files, &local_ref)
                .map_err(self.remote.git_error(branch, "commit reports"))?;
            let Some(commit) = commit else {
                tracing::debug!(url = self.remote.shown(), %branch, "reports unchanged; nothing to publish");
                return Ok(None);
            };
            before_push(attempt);
            let refspec = format!("{local_ref}:refs/heads/{branch}");
            let pushed =
                remote::push(self.repo, self.remote, &refspec).map_err(|e| SourceError::Push {
                    url: self.remote.shown().to_string(),
                    branch: branch.to_string(),
                    message: self.remote.redact(e.message()),
                })?;
            match pushed {
                PushOutcome::Pushed => {
                    tracing::info!(url = self.remote.shown(), %branch, %commit, attempt, "published reports");
                    return Ok(Some(commit.to_string()));
                }
                PushOutcome::Rejected(reason) => {
                    last_rejection = self.remote.redact(&reason);
                    if attempt < MAX_PUSH_ATTEMPTS {
                        let wait =
                            crate::retry::REPORT_PUSH.delay(attempt, None, crate::retry::jitter());
                        tracing::warn!(url = self.remote.shown(), %branch, attempt, reason = %last_rejection,
                            wait_ms = wait.as_millis() as u64, "push lost a race; fetching and retrying");
                        std::thread::sleep(wait);
                    }
                }
            }
        }
        Err(SourceError::PushRejected {
            url: self.remote.shown().to_string(),
            branch: branch.to_string(),
            attempts: MAX_PUSH_ATTEMPTS,
            message: last_rejection,
        })
    }

    /// The branch tip on the remote after fetching it, or `None` when the branch does not exist yet.
    fn fetch_tip(&self) -> Result<Option<Oid>, SourceError> {
        let branch = self.target.branch();
        let refspec = format!("+refs/heads/{branch}:refs/remotes/origin/{branch}");
        let advertised =
            remote::fetch(self.repo, self.remote, &[&refspec]).map_err(|e| SourceError::Fetch {
                url: self.remote.shown().to_string(),
                reference: format!("branch:{branch}"),
                message: self.remote.redact(e.message()),
            })?;
        Ok(advertised.get(&format!("refs/heads/{branch}")).copied())
    }

    /// Each file's path in the repository, split into components, after checking it stays relative.
    fn repo_files(&self) -> Result<Vec<ReportFile<'_>>, SourceError> {
        self.files
            .iter()
            .map(|(file, bytes)| {
                let path = self.target.repo_path(file);
                match components(&path) {
                    Some(parts) => Ok((parts, bytes.as_slice())),
                    None => Err(SourceError::InvalidReportPath {
                        url: self.remote.shown().to_string(),
                        branch: self.target.branch().to_string(),
                        path,
                    }),
                }
            })
            .collect()
    }

    /// Commits the files written over `tip` (or over nothing: an orphan) and points `local_ref` at the
    /// commit; `None` when that changes no file.
    fn commit_over(
        &self,
        tip: Option<Oid>,
        files: &[ReportFile<'_>],
        local_ref: &str,
    ) -> Result<Option<Oid>, git2::Error> {
        let repo = self.repo;
        let tip = tip.map(|oid| repo.find_commit(oid)).transpose()?;
        let base = match &tip {
            Some(commit) => commit.tree_id(),
            None => empty_tree(repo)?,
        };
        let mut tree = base;
        for (parts, bytes) in files {
            // Redacted as every other output: a report in git history stays there.
            let blob = repo.blob(&crate::redact::scrub_bytes(bytes))?;
            tree = upsert(repo, Some(&repo.find_tree(tree)?), parts, blob)?;
        }
        if tree == base {
            return Ok(None);
        }
        let signature = Signature::now(&self.identity.name, &self.identity.email)?;
        let parents: Vec<_> = tip.iter().collect();
        let commit = repo.commit(
            None,
            &signature,
            &signature,
            self.message,
            &repo.find_tree(tree)?,
            &parents,
        )?;
        repo.reference(local_ref, commit, true, "publish reports")?;
        Ok(Some(commit))
    }
}

/// What the branch of `target` holds at `files` (report-relative) on the remote, those that exist.
pub(super) fn read_published(
    repo: &Repository,
    remote: &RemoteUrl,
    target: &ReportTarget,
    files: &[PathBuf],
) -> Result<BTreeMap<PathBuf, Vec<u8>>, SourceError> {
    let publish = Publish {
        repo,
        remote,
        target,
        files: &BTreeMap::new(),
        message: "",
        identity: &Identity::default(),
    };
    let mut found = BTreeMap::new();
    let Some(tip) = publish.fetch_tip()? else {
        return Ok(found);
    };
    let tree = repo
        .find_commit(tip)
        .and_then(|c| c.tree())
        .map_err(remote.git_error(target.branch(), "read reports"))?;
    for file in files {
        if let Ok(entry) = tree.get_path(&target.repo_path(file))
            && let Ok(blob) = repo.find_blob(entry.id())
        {
            found.insert(file.clone(), blob.content().to_vec());
        }
    }
    Ok(found)
}

fn empty_tree(repo: &Repository) -> Result<Oid, git2::Error> {
    repo.treebuilder(None)?.write()
}

/// `tree` with the blob at `path`, creating or replacing intermediate trees.
fn upsert(
    repo: &Repository,
    tree: Option<&Tree<'_>>,
    path: &[String],
    blob: Oid,
) -> Result<Oid, git2::Error> {
    let mut builder = repo.treebuilder(tree)?;
    match path {
        [name] => builder.insert(name, blob, 0o100644)?,
        [name, rest @ ..] => {
            let subtree = tree
                .and_then(|t| t.get_name(name))
                .filter(|entry| entry.kind() == Some(ObjectType::Tree))
                .map(|entry| repo.find_tree(entry.id()))
                .transpose()?;
            let subtree = upsert(repo, subtree.as_ref(), rest, blob)?;
            builder.insert(name, subtree, 0o040000)?
        }
        [] => return tree.map_or_else(|| empty_tree(repo), |t| Ok(t.id())),
    };
    builder.write()
}

/// The UTF-8 components of a relative path (`.` dropped); `None` for an absolute path, `..` or `.git`.
fn components(path: &Path) -> Option<Vec<String>> {
    let parts: Option<Vec<String>> = path
        .components()
        .filter(|c| *c != Component::CurDir)
        .map(|c| match c {
            Component::Normal(name) if name != ".git" => name.to_str().map(str::to_string),
            _ => None,
        })
        .collect();
    parts.filter(|p| !p.is_empty())
}

#[cfg(test)]
#[path = "reports_tests.rs"]
mod tests;

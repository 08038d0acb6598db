//! A revision's files on disk, and the last good revision remembered across restarts.
//!
//! A commit is written to `state_dir/checkout/<sha>`: built in a temporary directory and renamed into
//! place, so a directory under that name is always complete. Symbolic links whose target leaves the
//! checkout are dropped (a repository must not make the agent read files outside it); submodules are
//! skipped. `state_dir/last-good` records the last revision fetched, resolved and checked out for a given
//! URL and reference.

use super::{GitRef, SourceError};
use git2::{ObjectType, Oid, Repository, Tree};
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const CHECKOUT_DIR: &str = "checkout";
const LAST_GOOD_FILE: &str = "last-good";

/// Where the files of `commit` live.
pub(super) fn checkout_dir(state_dir: &Path, commit: &str) -> PathBuf {
    state_dir.join(CHECKOUT_DIR).join(commit)
}

/// Makes sure the files of `commit` are in [`checkout_dir`]; writes them from `repo` when they are not.
pub(super) fn materialize(
    repo: &Repository,
    commit: Oid,
    state_dir: &Path,
    git_error: impl Fn(git2::Error) -> SourceError,
) -> Result<PathBuf, SourceError> {
    let target = checkout_dir(state_dir, &commit.to_string());
    if target.is_dir() {
        return Ok(target);
    }
    let tree = repo
        .find_commit(commit)
        .and_then(|c| c.tree())
        .map_err(&git_error)?;
    let partial = state_dir
        .join(CHECKOUT_DIR)
        .join(format!(".partial-{commit}"));
    if partial.exists() {
        fs::remove_dir_all(&partial)
            .map_err(SourceError::io(&partial, "remove partial checkout"))?;
    }
    let mut links = Vec::new();
    write_tree(repo, &tree, &partial, &mut links).map_err(|e| match e {
        WriteError::Git(e) => git_error(e),
        WriteError::Io(path, source) => SourceError::Io {
            path,
            op: "write checkout",
            source,
        },
    })?;
    drop_escaping_links(&partial, &links)?;
    fs::rename(&partial, &target).map_err(SourceError::io(&target, "move checkout into place"))?;
    tracing::debug!(commit = %commit, checkout = %target.display(), "checked out");
    Ok(target)
}

/// Makes sure the files of `commit` are in [`checkout_dir`], reusing the checkout of `previous`
/// when there is one: it is moved into place and only the files the two commits differ in are
/// written or removed (a new commit of a 10,000-file repository that changes one file writes one
/// file, not 10,000). A difference the fast path does not take (a symbolic link, a submodule, an
/// unsafe name) or any error falls back to [`materialize_seeded`] from `seed`.
pub(super) fn materialize_from(
    repo: &Repository,
    commit: Oid,
    previous: Option<Oid>,
    seed: Option<(&Path, Oid)>,
    state_dir: &Path,
    git_error: impl Fn(git2::Error) -> SourceError,
) -> Result<PathBuf, SourceError> {
    let target = checkout_dir(state_dir, &commit.to_string());
    if let Some(previous) = previous.filter(|p| *p != commit)
        && !target.is_dir()
    {
        let old = checkout_dir(state_dir, &previous.to_string());
        if old.is_dir() {
            let partial = fresh_partial(state_dir, commit);
            if fs::rename(&old, &partial).is_ok() {
                let done = apply_difference(repo, previous, commit, &partial);
                if finish_partial(&partial, &target, done, "difference")? {
                    tracing::debug!(commit = %commit, from = %previous, "checked out by difference");
                    return Ok(target);
                }
            }
        }
    }
    materialize_seeded(repo, commit, seed, state_dir, git_error)
}

/// Makes sure the files of `commit` are in [`checkout_dir`], made from `seed` (the checkout of
/// another commit, by another source of the same repository, say a plan's head for its base) when
/// there is one: its files are hard-linked (no content written) and only the files the two commits
/// differ in are written anew or removed. `seed` is left as it was: a file that differs is replaced
/// by a new one, never written through its link. Anything the fast path does not take (a symbolic
/// link in the difference, a seed on another filesystem) writes the whole tree.
pub(super) fn materialize_seeded(
    repo: &Repository,
    commit: Oid,
    seed: Option<(&Path, Oid)>,
    state_dir: &Path,
    git_error: impl Fn(git2::Error) -> SourceError,
) -> Result<PathBuf, SourceError> {
    let target = checkout_dir(state_dir, &commit.to_string());
    if let Some((seed_dir, seed_commit)) = seed
        && !target.is_dir()
    {
        let partial = fresh_partial(state_dir, commit);
        let linked =
            link_tree(seed_dir, &partial).map_err(|e| git2::Error::from_str(&e.to_string()));
        let done = linked.and_then(|()| apply_difference(repo, seed_commit, commit, &partial));
        if finish_partial(&partial, &target, done, "links")? {
            tracing::debug!(commit = %commit, seed = %seed_commit, "checked out by links");
            return Ok(target);
        }
    }
    materialize(repo, commit, state_dir, git_error)
}

/// The folder a checkout of `commit` is prepared in before it is moved into place, emptied of
/// anything an interrupted earlier attempt left.
fn fresh_partial(state_dir: &Path, commit: Oid) -> PathBuf {
    let partial = state_dir
        .join(CHECKOUT_DIR)
        .join(format!(".partial-{commit}"));
    if partial.exists() {
        let _ = fs::remove_dir_all(&partial);
    }
    partial
}

/// Moves the prepared `partial` into place at `target` when its fast path (`how`) took the
/// difference (`Ok(true)`); otherwise removes it, and the caller writes the whole tree.
fn finish_partial(
    partial: &Path,
    target: &Path,
    done: Result<bool, git2::Error>,
    how: &str,
) -> Result<bool, SourceError> {
    match done {
        Ok(true) => {
            fs::rename(partial, target)
                .map_err(SourceError::io(target, "move checkout into place"))?;
            return Ok(true);
        }
        Ok(false) => {}
        Err(e) => {
            tracing::debug!(error = %e, how, "checkout by the fast path failed: writing the whole tree")
        }
    }
    let _ = fs::remove_dir_all(partial);
    Ok(false)
}

/// A copy of the folder `from` at `to` whose files are hard links to `from`'s (symbolic links are
/// made again: a checkout's links stay inside it, so they point the same way at `to`).
fn link_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let (source, dest) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            link_tree(&source, &dest)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&source)?, &dest)?;
        } else {
            fs::hard_link(&source, &dest)?;
        }
    }
    Ok(())
}

/// A complete checkout under `state_dir` (another source's), and its commit: what
/// [`materialize_seeded`] starts from.
pub(super) fn any_checkout(state_dir: &Path) -> Option<(PathBuf, Oid)> {
    fs::read_dir(state_dir.join(CHECKOUT_DIR))
        .ok()?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .find_map(|e| {
            let name = e.file_name();
            let name = name.to_str().filter(|n| n.len() == 40)?;
            let commit = Oid::from_str(name).ok()?;
            Some((e.path(), commit))
        })
}

/// Turns the checkout of `from` in `dir` into one of `to`: writes the files added or changed,
/// removes those deleted (and the folders left empty). `false`: a difference this does not take
/// (the caller writes the whole tree).
fn apply_difference(
    repo: &Repository,
    from: Oid,
    to: Oid,
    dir: &Path,
) -> Result<bool, git2::Error> {
    use git2::Delta;
    let old = repo.find_commit(from)?.tree()?;
    let new = repo.find_commit(to)?.tree()?;
    let diff = repo.diff_tree_to_tree(Some(&old), Some(&new), None)?;
    let safe = |p: &Path| {
        p.components().all(|c| match c {
            std::path::Component::Normal(n) => !n.is_empty() && !n.eq_ignore_ascii_case(".git"),
            _ => false,
        })
    };
    let plain = |mode: git2::FileMode| {
        matches!(
            mode,
            git2::FileMode::Blob | git2::FileMode::BlobExecutable | git2::FileMode::Unreadable
        )
    };
    // Check every delta first, so nothing is written unless all of them can be.
    let mut work = Vec::new();
    for delta in diff.deltas() {
        let (old_file, new_file) = (delta.old_file(), delta.new_file());
        match delta.status() {
            Delta::Added | Delta::Modified | Delta::Deleted => {}
            _ => return Ok(false),
        }
        for f in [&old_file, &new_file] {
            if f.exists() && !plain(f.mode()) {
                return Ok(false);
            }
            if let Some(p) = f.path()
                && f.exists()
                && !safe(p)
            {
                return Ok(false);
            }
        }
        work.push((
            delta.status(),
            old_file.path().map(Path::to_path_buf),
            new_file.path().map(Path::to_path_buf),
            new_file.id(),
            new_file.mode(),
        ));
    }
    for (status, old_path, new_path, id, mode) in work {
        let io = |e: std::io::Error| git2::Error::from_str(&e.to_string());
        match (status, old_path, new_path) {
            (Delta::Deleted, Some(p), _) => {
                let path = dir.join(&p);
                fs::remove_file(&path).map_err(io)?;
                let mut parent = path.parent();
                while let Some(d) = parent.filter(|d| *d != dir) {
                    if fs::remove_dir(d).is_err() {
                        break; // not empty
                    }
                    parent = d.parent();
                }
            }
            (_, _, Some(p)) => {
                let path = dir.join(&p);
                if let Some(parent) = path.parent() {
                    fs::create_dir_all(parent).map_err(io)?;
                }
                let blob = repo.find_blob(id)?;
                // A new file, not the old one written over: the old one may be a hard link
                // shared with another checkout ([`materialize_seeded`]).
                match fs::remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
                    _ => {}
                }
                fs::write(&path, blob.content()).map_err(io)?;
                let exec = mode == git2::FileMode::BlobExecutable;
                fs::set_permissions(
                    &path,
                    fs::Permissions::from_mode(if exec { 0o755 } else { 0o644 }),
                )
                .map_err(io)?;
            }
            _ => return Ok(false),
        }
    }
    Ok(true)
}

/// Removes every checkout but `keep` (best effort: a failure is logged, not returned).
pub(super) fn remove_other_checkouts(state_dir: &Path, keep: &str) {
    let Ok(entries) = fs::read_dir(state_dir.join(CHECKOUT_DIR)) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name() != OsStr::new(keep)
            && let Err(error) = fs::remove_dir_all(entry.path())
        {
            tracing::warn!(path = %entry.path().display(), %error, "cannot remove old checkout");
        }
    }
}

enum WriteError {
    Git(git2::Error),
    Io(PathBuf, std::io::Error),
}

impl From<git2::Error> for WriteError {
    fn from(e: git2::Error) -> Self {
        WriteError::Git(e)
    }
}

fn write_tree(
    repo: &Repository,
    tree: &Tree<'_>,
    dir: &Path,
    links: &mut Vec<PathBuf>,
) -> Result<(), WriteError> {
    fs::create_dir_all(dir).map_err(|e| WriteError::Io(dir.to_path_buf(), e))?;
    for entry in tree.iter() {
        let name = OsStr::from_bytes(entry.name_bytes());
        if name.is_empty()
            || name == "."
            || name == ".."
            || name.eq_ignore_ascii_case(".git")
            || name.as_bytes().contains(&b'/')
        {
            tracing::warn!(dir = %dir.display(), name = %name.display(), "skipping unsafe tree entry");
            continue;
        }
        let path = dir.join(name);
        let io = |e| WriteError::Io(path.clone(), e);
        match entry.kind() {
            Some(ObjectType::Tree) => write_tree(repo, &repo.find_tree(entry.id())?, &path, links)?,
            Some(ObjectType::Blob) => {
                let blob = repo.find_blob(entry.id())?;
                match entry.filemode() {
                    0o120000 => {
                        std::os::unix::fs::symlink(OsStr::from_bytes(blob.content()), &path)
                            .map_err(io)?;
                        links.push(path);
                    }
                    mode => {
                        fs::write(&path, blob.content()).map_err(io)?;
                        if mode == 0o100755 {
                            fs::set_permissions(&path, fs::Permissions::from_mode(0o755))
                                .map_err(io)?;
                        }
                    }
                }
            }
            _ => tracing::warn!(path = %path.display(), "skipping submodule"),
        }
    }
    Ok(())
}

/// Removes links that resolve outside `root` or to nothing (checked after all files exist, so chains of
/// links are followed as the reader would follow them).
fn drop_escaping_links(root: &Path, links: &[PathBuf]) -> Result<(), SourceError> {
    let root = fs::canonicalize(root).map_err(SourceError::io(root, "resolve checkout"))?;
    for link in links {
        let inside = fs::canonicalize(link).is_ok_and(|resolved| resolved.starts_with(&root));
        if !inside {
            tracing::warn!(link = %link.display(), "dropping symbolic link that leaves the checkout");
            fs::remove_file(link).map_err(SourceError::io(link, "remove symbolic link"))?;
        }
    }
    Ok(())
}

/// What `last-good` holds: the revision, and which source and reference it was for.
#[derive(Debug, serde::Serialize, serde::Deserialize, PartialEq)]
struct LastGood {
    url: String,
    reference: String,
    commit: String,
}

/// The last good commit recorded for this URL (as shown) and reference, if any.
pub(super) fn load_last_good(state_dir: &Path, url: &str, reference: &GitRef) -> Option<String> {
    let path = state_dir.join(LAST_GOOD_FILE);
    let text = fs::read_to_string(&path).ok()?;
    match serde_json::from_str::<LastGood>(&text) {
        Ok(last) if last.url == url && last.reference == reference.to_string() => Some(last.commit),
        Ok(last) => {
            tracing::info!(path = %path.display(), url = %last.url, reference = %last.reference, "ignoring last good revision of another source");
            None
        }
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "ignoring unreadable last good revision");
            None
        }
    }
}

/// Records `commit` as the last good revision (written to a temporary file, then renamed).
pub(super) fn store_last_good(
    state_dir: &Path,
    url: &str,
    reference: &GitRef,
    commit: &str,
) -> Result<(), SourceError> {
    let path = state_dir.join(LAST_GOOD_FILE);
    let record = LastGood {
        url: url.to_string(),
        reference: reference.to_string(),
        commit: commit.to_string(),
    };
    let text = serde_json::to_string_pretty(&record).expect("a record of strings serialises");
    let temporary = state_dir.join(format!("{LAST_GOOD_FILE}.tmp"));
    fs::write(&temporary, text).map_err(SourceError::io(&temporary, "write last good revision"))?;
    fs::rename(&temporary, &path).map_err(SourceError::io(&path, "write last good revision"))
}

#[cfg(test)]
#[path = "checkout_tests.rs"]
mod tests;

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
mod tests {
    use super::*;

    fn git_error(e: git2::Error) -> SourceError {
        SourceError::Git {
            url: "test".into(),
            reference: "test".into(),
            op: "checkout",
            message: e.message().into(),
        }
    }

    /// A commit with a file, an executable, a link inside, a link out and a chain that ends outside.
    fn commit_with_links(repo: &Repository) -> Oid {
        let blob = |bytes: &[u8]| repo.blob(bytes).unwrap();
        let mut sub = repo.treebuilder(None).unwrap();
        sub.insert("b.yaml", blob(b"b: 1\n"), 0o100644).unwrap();
        sub.insert("up", blob(b"../.."), 0o120000).unwrap();
        let sub = sub.write().unwrap();
        let mut root = repo.treebuilder(None).unwrap();
        root.insert("a.yaml", blob(b"a: 1\n"), 0o100644).unwrap();
        root.insert("run.sh", blob(b"#!/bin/sh\n"), 0o100755)
            .unwrap();
        root.insert("dir", sub, 0o040000).unwrap();
        root.insert("inside", blob(b"dir/b.yaml"), 0o120000)
            .unwrap();
        root.insert("outside", blob(b"/etc/hostname"), 0o120000)
            .unwrap();
        root.insert("chain", blob(b"dir/up/etc"), 0o120000).unwrap();
        let tree = repo.find_tree(root.write().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        repo.commit(None, &sig, &sig, "files", &tree, &[]).unwrap()
    }

    #[test]
    fn writes_files_modes_and_only_links_that_stay_inside() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = Repository::init_bare(tmp.path().join("repo.git")).unwrap();
        let commit = commit_with_links(&repo);
        let dir = materialize(&repo, commit, tmp.path(), git_error).unwrap();
        assert_eq!(dir, checkout_dir(tmp.path(), &commit.to_string()));
        assert_eq!(fs::read_to_string(dir.join("a.yaml")).unwrap(), "a: 1\n");
        assert_eq!(fs::read_to_string(dir.join("inside")).unwrap(), "b: 1\n");
        assert_eq!(
            fs::metadata(dir.join("run.sh"))
                .unwrap()
                .permissions()
                .mode()
                & 0o111,
            0o111
        );
        for dropped in ["outside", "chain", "dir/up"] {
            assert!(
                fs::symlink_metadata(dir.join(dropped)).is_err(),
                "{dropped} should be dropped"
            );
        }
        let names: Vec<_> = fs::read_dir(tmp.path().join(CHECKOUT_DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            names,
            vec![OsStr::new(&commit.to_string()).to_owned()],
            "no partial directory left"
        );
    }

    #[test]
    fn last_good_round_trips_only_for_the_same_source() {
        let tmp = tempfile::tempdir().unwrap();
        let main = GitRef::Branch("main".into());
        assert_eq!(load_last_good(tmp.path(), "u", &main), None);
        store_last_good(tmp.path(), "u", &main, "abc").unwrap();
        assert_eq!(
            load_last_good(tmp.path(), "u", &main).as_deref(),
            Some("abc")
        );
        assert_eq!(load_last_good(tmp.path(), "other", &main), None);
        assert_eq!(
            load_last_good(tmp.path(), "u", &GitRef::Tag("v1".into())),
            None
        );
        fs::write(tmp.path().join(LAST_GOOD_FILE), "not json").unwrap();
        assert_eq!(load_last_good(tmp.path(), "u", &main), None);
    }
}

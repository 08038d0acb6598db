//! A plain directory as a git origin.
//!
//! A directory that is not a git repository (such as `examples-repo/`) is imported into a bare repository,
//! `state_dir/origin.git`, as a commit on `main` whenever its contents differ from the last import, so
//! editing the folder behaves like a push and the rest of the stage fetches and pushes as with any remote.
//! Commits pushed to `main` meanwhile (reports on the source branch) are kept: the import is a three-way
//! merge of the previous import, the branch tip and the directory, where the directory wins conflicts.

use super::{Identity, SourceError};
use git2::{FileFavor, MergeOptions, Oid, Repository, RepositoryInitOptions, Signature, Tree};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The bare origin's directory under the state directory.
pub(super) const ORIGIN_DIR: &str = "origin.git";
/// The branch imports are committed to (and the origin's HEAD).
pub(super) const IMPORT_BRANCH: &str = "main";
/// Points at the tree of the last import (outside `refs/heads`, so it is never fetched).
const IMPORTED_REF: &str = "refs/aro-gitops/imported";

/// The directory `url` names when it is a local path (or `file://` URL) to a directory that is not a git
/// repository; `None` for URLs and git repositories.
pub(super) fn plain_directory(url: &str) -> Option<PathBuf> {
    let path = match url.strip_prefix("file://") {
        Some(path) => path,
        None if url.contains("://") => return None,
        None => url,
    };
    let path = Path::new(path);
    let plain = path.is_dir() && Repository::open(path).is_err();
    plain.then(|| std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()))
}

/// The git repository `url` names when it is a local path (or `file://` URL) to one (its top
/// level, a work tree or a bare repository), absolute; `None` otherwise.
pub(super) fn local_repository(url: &str) -> Option<PathBuf> {
    let path = match url.strip_prefix("file://") {
        Some(path) => path,
        None if url.contains("://") => return None,
        None => url,
    };
    let path = Path::new(path);
    Repository::open(path).ok()?;
    std::path::absolute(path).ok()
}

/// The path `url` names when it is a local path (or `file://` URL) that does not exist; `None` for
/// URLs (`scheme://`, scp-like `host:path`) and existing paths.
pub(super) fn missing_local_path(url: &str) -> Option<PathBuf> {
    let path = match url.strip_prefix("file://") {
        Some(path) => path,
        None if url.contains("://") => return None,
        // `git@host:org/repo`: a colon before any slash.
        None if url
            .split('/')
            .next()
            .is_some_and(|first| first.contains(':')) =>
        {
            return None;
        }
        None => url,
    };
    let path = Path::new(path);
    (!path.exists()).then(|| path.to_path_buf())
}

/// Imports `dir` into the bare repository at `origin` (created on first use); returns the new commit, or
/// `None` when the directory is unchanged since the last import.
pub(super) fn import(dir: &Path, origin: &Path) -> Result<Option<Oid>, SourceError> {
    let failed = |e: git2::Error| SourceError::Import {
        dir: dir.to_path_buf(),
        message: e.message().to_string(),
    };
    let repo = match Repository::open_bare(origin) {
        Ok(repo) => repo,
        Err(_) => Repository::init_opts(
            origin,
            RepositoryInitOptions::new()
                .bare(true)
                .initial_head(IMPORT_BRANCH),
        )
        .map_err(failed)?,
    };
    if !dir.is_dir() {
        return Err(SourceError::Import {
            dir: dir.to_path_buf(),
            message: "not a directory".to_string(),
        });
    }
    let contents = repo.find_tree(tree_from_dir(&repo, dir)?).map_err(failed)?;
    let previous = repo
        .find_reference(IMPORTED_REF)
        .and_then(|r| r.peel_to_tree())
        .ok();
    if previous
        .as_ref()
        .is_some_and(|tree| tree.id() == contents.id())
    {
        return Ok(None);
    }
    let branch = format!("refs/heads/{IMPORT_BRANCH}");
    let tip = repo
        .find_reference(&branch)
        .and_then(|r| r.peel_to_commit())
        .ok();
    let tree = match (&tip, &previous) {
        (Some(tip), Some(previous)) => {
            merge(&repo, previous, &tip.tree().map_err(failed)?, &contents).map_err(failed)?
        }
        _ => contents.id(),
    };
    repo.reference(IMPORTED_REF, contents.id(), true, "import")
        .map_err(failed)?;
    if tip.as_ref().is_some_and(|tip| tip.tree_id() == tree) {
        return Ok(None);
    }
    let identity = Identity::default();
    let signature = Signature::now(&identity.name, &identity.email).map_err(failed)?;
    let tree = repo.find_tree(tree).map_err(failed)?;
    let parents: Vec<_> = tip.iter().collect();
    let message = format!("Import {}\n", dir.display());
    let commit = repo
        .commit(
            Some(&branch),
            &signature,
            &signature,
            &message,
            &tree,
            &parents,
        )
        .map_err(failed)?;
    tracing::info!(dir = %dir.display(), commit = %commit, "imported plain directory");
    Ok(Some(commit))
}

/// The tip with the directory's changes since the previous import applied; the directory wins conflicts.
fn merge(
    repo: &Repository,
    previous: &Tree<'_>,
    tip: &Tree<'_>,
    contents: &Tree<'_>,
) -> Result<Oid, git2::Error> {
    let mut options = MergeOptions::new();
    options.file_favor(FileFavor::Theirs);
    let mut index = repo.merge_trees(previous, tip, contents, Some(&options))?;
    if index.has_conflicts() {
        tracing::warn!("import conflicts with commits on the origin; the directory wins");
        return Ok(contents.id());
    }
    index.write_tree_to(repo)
}

/// A folder whose `.gitignore` ignores everything in it (`*`), as an aro-gitops state directory's
/// does: git leaves it out, and so does the import.
fn ignores_itself(dir: &Path) -> bool {
    fs::read_to_string(dir.join(".gitignore"))
        .is_ok_and(|text| text.lines().any(|line| line.trim() == "*"))
}

/// Writes the directory's files as blobs and returns the tree (empty directories, `.git` and folders
/// that ignore themselves are left out; symbolic links are stored as links).
fn tree_from_dir(repo: &Repository, dir: &Path) -> Result<Oid, SourceError> {
    let failed = |e: git2::Error| SourceError::Import {
        dir: dir.to_path_buf(),
        message: e.message().to_string(),
    };
    let mut builder = repo.treebuilder(None).map_err(failed)?;
    for entry in fs::read_dir(dir).map_err(SourceError::io(dir, "read directory"))? {
        let entry = entry.map_err(SourceError::io(dir, "read directory"))?;
        let (name, path) = (entry.file_name(), entry.path());
        if name == ".git" {
            continue;
        }
        let file_type = entry.file_type().map_err(SourceError::io(&path, "stat"))?;
        let (oid, mode) = if file_type.is_symlink() {
            let target = fs::read_link(&path).map_err(SourceError::io(&path, "read link"))?;
            (
                repo.blob(target.as_os_str().as_bytes()).map_err(failed)?,
                0o120000,
            )
        } else if file_type.is_dir() {
            if ignores_itself(&path) {
                continue;
            }
            let tree = tree_from_dir(repo, &path)?;
            if repo.find_tree(tree).map_err(failed)?.is_empty() {
                continue;
            }
            (tree, 0o040000)
        } else if file_type.is_file() {
            let bytes = fs::read(&path).map_err(SourceError::io(&path, "read"))?;
            let executable = entry
                .metadata()
                .map_err(SourceError::io(&path, "stat"))?
                .permissions()
                .mode()
                & 0o111
                != 0;
            (
                repo.blob(&bytes).map_err(failed)?,
                if executable { 0o100755 } else { 0o100644 },
            )
        } else {
            continue;
        };
        builder.insert(name.as_bytes(), oid, mode).map_err(failed)?;
    }
    builder.write().map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::testutil::{git, show};

    #[test]
    fn only_plain_directories_are_imported() {
        let tmp = tempfile::tempdir().unwrap();
        let plain = tmp.path().join("plain");
        fs::create_dir(&plain).unwrap();
        let repo = tmp.path().join("repo");
        git(tmp.path(), &["init", "-q", "repo"]);
        let inside_repo = repo.join("examples");
        fs::create_dir(&inside_repo).unwrap();

        assert_eq!(
            plain_directory(plain.to_str().unwrap()),
            Some(plain.clone())
        );
        assert_eq!(
            plain_directory(&format!("file://{}", plain.display())),
            Some(plain.clone())
        );
        assert_eq!(
            plain_directory(inside_repo.to_str().unwrap()),
            Some(inside_repo),
            "a folder inside a repo"
        );
        assert_eq!(plain_directory(repo.to_str().unwrap()), None);
        assert_eq!(
            plain_directory(tmp.path().join("missing").to_str().unwrap()),
            None
        );
        assert_eq!(plain_directory("https://example.com/repo.git"), None);
        let missing = tmp.path().join("missing");
        assert_eq!(
            missing_local_path(missing.to_str().unwrap()),
            Some(missing.clone())
        );
        assert_eq!(
            missing_local_path(&format!("file://{}", missing.display())),
            Some(missing)
        );
        assert_eq!(missing_local_path(repo.to_str().unwrap()), None);
        assert_eq!(missing_local_path("https://example.com/repo.git"), None);
        assert_eq!(missing_local_path("git@example.com:org/repo.git"), None);
    }

    #[test]
    fn imports_on_change_only_and_keeps_commits_pushed_to_main() {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, origin) = (tmp.path().join("dir"), tmp.path().join(ORIGIN_DIR));
        fs::create_dir_all(dir.join("apps/empty")).unwrap();
        fs::write(dir.join("apps/a.yaml"), "a: 1\n").unwrap();

        let first = import(&dir, &origin)
            .unwrap()
            .expect("first import commits");
        assert_eq!(
            show(&origin, "main", "apps/a.yaml").as_deref(),
            Some("a: 1\n")
        );
        assert_eq!(import(&dir, &origin).unwrap(), None, "unchanged directory");

        // Someone (the report publisher) pushes a file to main; then the folder is edited.
        let clone = tmp.path().join("clone");
        git(
            tmp.path(),
            &["clone", "-q", origin.to_str().unwrap(), "clone"],
        );
        fs::create_dir_all(clone.join("reports")).unwrap();
        fs::write(clone.join("reports/status.yaml"), "ok\n").unwrap();
        git(&clone, &["add", "."]);
        git(&clone, &["commit", "-qm", "reports"]);
        git(&clone, &["push", "-q", "origin", "main"]);
        assert_eq!(
            import(&dir, &origin).unwrap(),
            None,
            "a push to main alone is no directory change"
        );

        fs::write(dir.join("apps/a.yaml"), "a: 2\n").unwrap();
        let second = import(&dir, &origin).unwrap().expect("edit commits");
        assert_ne!(first, second);
        assert_eq!(
            show(&origin, "main", "apps/a.yaml").as_deref(),
            Some("a: 2\n")
        );
        assert_eq!(
            show(&origin, "main", "reports/status.yaml").as_deref(),
            Some("ok\n"),
            "pushed file kept"
        );
    }
}

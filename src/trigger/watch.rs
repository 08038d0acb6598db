//! Watching a local `--repo` (a path, not a URL) so that a commit there is fetched at once.
//!
//! A git repository (a work tree or bare) is watched where a commit shows: `HEAD`, `packed-refs`
//! and `refs/`; uncommitted edits are not fetched, so they do not count. A plain folder is imported
//! whole on every fetch (see `source::origin`), so any change to its files counts (not under a
//! `.git` folder, which the import leaves out, nor under the agent's own state directory). Events
//! are debounced: the first starts a [`DEBOUNCE`] wait, what follows within it joins the same
//! fetch. The report branch's own ref is left out, so publishing reports does not trigger a fetch.

use super::FetchSignal;
use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long after the first change the fetch is requested (a commit writes several files).
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// What to watch in a local repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Watched {
    /// A folder that is not a git repository: all its files.
    Plain(PathBuf),
    /// A git repository: its git directory (`HEAD`) and the common directory holding the refs
    /// (the same but for a linked work tree).
    Git { git_dir: PathBuf, common: PathBuf },
}

#[derive(Debug, thiserror::Error)]
#[error("watching {path} for changes failed: {message}")]
pub struct WatchError {
    path: PathBuf,
    message: String,
}

/// What `repo` (the `--repo` value) asks to watch: `None` for a URL (`scheme://`, `file://`
/// included, or `user@host:path`) and for a path that is not a directory.
pub fn watched(repo: &str) -> Option<Watched> {
    if repo.contains("://") {
        return None;
    }
    let first = repo.split('/').next().unwrap_or_default();
    if first.contains(':') {
        return None;
    }
    let path = std::fs::canonicalize(repo).ok()?;
    if !path.is_dir() {
        return None;
    }
    match git2::Repository::open(&path) {
        Ok(git) => Some(Watched::Git {
            git_dir: canonical(git.path()),
            common: canonical(git.commondir()),
        }),
        Err(_) => Some(Watched::Plain(path)),
    }
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

impl Watched {
    /// Whether a change to `path` may change what a fetch gives. `ignored` are paths whose changes
    /// never count (the state directory, the report branch's ref), with what is under them.
    pub fn counts(&self, path: &Path, ignored: &[PathBuf]) -> bool {
        // An ignored path, what is under it, its lock file, and the folders above it (git makes
        // `refs/heads/aro-gitops/` when it first writes the report branch's ref).
        let under_ignored = |p: &Path| {
            ignored.iter().any(|i| {
                p.starts_with(i)
                    || i.starts_with(p)
                    || p.with_extension("") == *i && p.extension() == Some("lock".as_ref())
            })
        };
        if under_ignored(path) {
            return false;
        }
        match self {
            Watched::Plain(dir) => match path.strip_prefix(dir) {
                Ok(rel) => !rel.components().any(|c| c.as_os_str() == ".git"),
                Err(_) => false,
            },
            Watched::Git { git_dir, common } => {
                path == git_dir.join("HEAD")
                    || path == common.join("packed-refs")
                    || path.starts_with(common.join("refs"))
            }
        }
    }

    /// The refs a branch `name` is written to (to ignore the report branch).
    pub fn branch_ref(&self, name: &str) -> Option<PathBuf> {
        match self {
            Watched::Plain(_) => None,
            Watched::Git { common, .. } => Some(common.join("refs/heads").join(name)),
        }
    }

    /// The directories to watch, and how.
    fn roots(&self) -> Vec<(PathBuf, RecursiveMode)> {
        match self {
            Watched::Plain(dir) => vec![(dir.clone(), RecursiveMode::Recursive)],
            Watched::Git { git_dir, common } => {
                let mut roots = vec![
                    (git_dir.clone(), RecursiveMode::NonRecursive),
                    (common.join("refs"), RecursiveMode::Recursive),
                ];
                if common != git_dir {
                    roots.push((common.clone(), RecursiveMode::NonRecursive));
                }
                roots
            }
        }
    }
}

/// Whether an event kind can be a change (reading files, as every import does, is not).
fn is_change(kind: &EventKind) -> bool {
    match kind {
        EventKind::Create(_) | EventKind::Remove(_) => true,
        EventKind::Modify(ModifyKind::Metadata(_)) => false,
        EventKind::Modify(_) => true,
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) | EventKind::Any | EventKind::Other => false,
    }
}

/// Watches a local directory while alive; requests a fetch after each debounced change.
pub struct LocalWatcher {
    _watcher: RecommendedWatcher,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for LocalWatcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl std::fmt::Debug for LocalWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LocalWatcher")
    }
}

/// Starts watching `what`; changes (but those under `ignored`) raise `signal`, debounced.
pub fn watch(
    what: Watched,
    ignored: Vec<PathBuf>,
    signal: FetchSignal,
) -> Result<LocalWatcher, WatchError> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let roots = what.roots();
    let watched = what.clone();
    let handler = move |event: notify::Result<notify::Event>| match event {
        Ok(event) => {
            if is_change(&event.kind) && event.paths.iter().any(|p| watched.counts(p, &ignored)) {
                let _ = tx.send(());
            }
        }
        Err(e) => tracing::warn!(error = %e, "watching the local repository"),
    };
    let failed = |path: &Path, e: notify::Error| WatchError {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let first = roots.first().map(|(p, _)| p.clone()).unwrap_or_default();
    let mut watcher = notify::recommended_watcher(handler).map_err(|e| failed(&first, e))?;
    for (path, mode) in &roots {
        watcher.watch(path, *mode).map_err(|e| failed(path, e))?;
    }
    let task = tokio::spawn(async move {
        while rx.recv().await.is_some() {
            tokio::time::sleep(DEBOUNCE).await;
            while rx.try_recv().is_ok() {}
            tracing::info!("local repository changed: fetch requested");
            signal.request();
        }
    });
    Ok(LocalWatcher {
        _watcher: watcher,
        task,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::testutil::git;

    #[test]
    fn urls_are_not_watched_and_repositories_are_told_from_plain_folders() {
        for url in [
            "https://github.com/Azure/aro-fleet.git",
            "git@github.com:Azure/aro-fleet.git",
            "file:///tmp",
            "ssh://git@host/repo",
        ] {
            assert_eq!(watched(url), None, "{url}");
        }
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        assert_eq!(watched(root.join("missing").to_str().unwrap()), None);
        std::fs::create_dir(root.join("plain")).unwrap();
        assert_eq!(
            watched(root.join("plain").to_str().unwrap()),
            Some(Watched::Plain(root.join("plain")))
        );
        git(&root, &["init", "-q", "repo"]);
        git(&root, &["init", "-q", "--bare", "bare.git"]);
        assert_eq!(
            watched(root.join("repo").to_str().unwrap()),
            Some(Watched::Git {
                git_dir: root.join("repo/.git"),
                common: root.join("repo/.git"),
            })
        );
        assert_eq!(
            watched(root.join("bare.git").to_str().unwrap()),
            Some(Watched::Git {
                git_dir: root.join("bare.git"),
                common: root.join("bare.git"),
            })
        );
    }

    #[test]
    fn what_counts_as_a_change() {
        let repo = Watched::Git {
            git_dir: "/r/.git".into(),
            common: "/r/.git".into(),
        };
        let status = repo.branch_ref("aro-gitops/status").unwrap();
        let ignored = vec![status];
        for counted in [
            "/r/.git/HEAD",
            "/r/.git/packed-refs",
            "/r/.git/refs/heads/main",
            "/r/.git/refs/heads/main.lock",
            "/r/.git/refs/tags/v1",
        ] {
            assert!(repo.counts(Path::new(counted), &ignored), "{counted}");
        }
        for not in [
            "/r/.git/index",
            "/r/.git/logs/HEAD",
            "/r/.git/objects/ab/cdef",
            "/r/.git/FETCH_HEAD",
            "/r/cluster.yaml",
            "/r/.git/refs/heads/aro-gitops/status",
            "/r/.git/refs/heads/aro-gitops/status.lock",
            "/r/.git/refs/heads/aro-gitops",
        ] {
            assert!(!repo.counts(Path::new(not), &ignored), "{not}");
        }
        let plain = Watched::Plain("/p".into());
        let ignored = vec![PathBuf::from("/p/.aro-gitops")];
        assert!(plain.counts(Path::new("/p/clusters/dev/kustomization.yaml"), &ignored));
        assert!(!plain.counts(Path::new("/p/.aro-gitops/source/origin.git/HEAD"), &ignored));
        assert!(!plain.counts(Path::new("/p/sub/.git/HEAD"), &ignored));
        assert!(!plain.counts(Path::new("/elsewhere/x"), &ignored));
        assert_eq!(plain.branch_ref("x"), None);
    }

    #[test]
    fn reading_is_not_a_change() {
        use notify::event::{CreateKind, DataChange, MetadataKind, RenameMode};
        assert!(is_change(&EventKind::Create(CreateKind::File)));
        assert!(is_change(&EventKind::Modify(ModifyKind::Data(
            DataChange::Any
        ))));
        assert!(is_change(&EventKind::Modify(ModifyKind::Name(
            RenameMode::To
        ))));
        assert!(is_change(&EventKind::Access(AccessKind::Close(
            AccessMode::Write
        ))));
        assert!(!is_change(&EventKind::Access(AccessKind::Open(
            AccessMode::Any
        ))));
        assert!(!is_change(&EventKind::Access(AccessKind::Close(
            AccessMode::Read
        ))));
        assert!(!is_change(&EventKind::Modify(ModifyKind::Metadata(
            MetadataKind::AccessTime
        ))));
    }

    #[tokio::test]
    async fn a_commit_in_a_watched_repository_requests_a_fetch() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        git(tmp.path(), &["init", "-q", "-b", "main", "repo"]);
        std::fs::write(repo.join("a.yaml"), "a: 1\n").unwrap();
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-q", "-m", "one"]);
        let what = watched(repo.to_str().unwrap()).unwrap();
        let signal = FetchSignal::default();
        let _watcher = watch(what, vec![], signal.clone()).unwrap();
        // An uncommitted edit is no change of the repository.
        std::fs::write(repo.join("a.yaml"), "a: 2\n").unwrap();
        tokio::time::sleep(DEBOUNCE * 3).await;
        assert!(!signal.take(), "an uncommitted edit requested a fetch");
        git(&repo, &["commit", "-q", "-am", "two"]);
        tokio::time::timeout(Duration::from_secs(10), signal.wanted())
            .await
            .expect("the commit requested a fetch");
    }
}

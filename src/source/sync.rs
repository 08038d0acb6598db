//! Syncing: import a plain directory, fetch, resolve the reference, check out, remember the last good
//! revision, and fall back to it when any of the remote side fails.

use super::checkout;
use super::origin;
use super::remote::{self, Advertised};
use super::revision;
use super::{GitRef, Revision, Source, SourceError, SyncOutcome};
use git2::{Oid, Repository};
use std::path::Path;

/// Every branch (under `refs/remotes/origin/`) and every tag; references are resolved against what the
/// remote advertised, so nothing stale left in the mirror is ever used.
const SYNC_REFSPECS: [&str; 2] = [
    "+refs/heads/*:refs/remotes/origin/*",
    "+refs/tags/*:refs/tags/*",
];

impl Source {
    /// Fetches and resolves the reference, checks the commit out under the state directory and records it
    /// as the last good revision. When the remote cannot be fetched or the reference is gone, returns
    /// [`SyncOutcome::Stale`] with the last good revision (its files restored if they were removed), or the
    /// error itself when there never was a good revision.
    pub fn sync(&mut self) -> Result<SyncOutcome, SourceError> {
        let reference = self.reference.to_string();
        let started = std::time::Instant::now();
        let repo = self.mirror()?;
        self.verification_result = None;
        let resolved = match self.fetch_and_resolve(&repo) {
            Ok(commit) => self.verify_revision(&repo, commit).map(|()| commit),
            Err(error) => Err(error),
        };
        let git_error = self.remote.git_error(&reference, "check out");
        let commit = match resolved {
            Ok(commit) => commit,
            Err(error) => {
                // A refused revision falls back like an unreachable one, but never onto itself.
                let Some(last_good) = self
                    .last_good
                    .clone()
                    .filter(|last| !error.refuses(&last.commit))
                else {
                    if error.refusal().is_some() {
                        tracing::warn!(url = self.remote.shown(), %reference, %error, "revision refused and no verified revision to keep");
                    } else {
                        tracing::warn!(url = self.remote.shown(), %reference, %error, "source unavailable and never synced");
                    }
                    return Err(error);
                };
                let commit = Oid::from_str(&last_good.commit).map_err(&git_error)?;
                checkout::materialize(&repo, commit, &self.state_dir, &git_error)?;
                if error.refusal().is_some() {
                    tracing::warn!(url = self.remote.shown(), %reference, last_good = %last_good.commit, %error, "revision refused; keeping the last applied revision");
                } else {
                    tracing::warn!(url = self.remote.shown(), %reference, last_good = %last_good.commit, %error, "source unavailable; keeping the last good revision");
                }
                return Ok(SyncOutcome::Stale { last_good, error });
            }
        };
        let fetched_ms = started.elapsed().as_millis() as u64;
        let previous = self
            .last_good
            .as_ref()
            .and_then(|r| Oid::from_str(&r.commit).ok());
        let seed = self.seed.as_deref().and_then(checkout::any_checkout);
        let checkout = checkout::materialize_from(
            &repo,
            commit,
            previous,
            seed.as_ref().map(|(dir, commit)| (dir.as_path(), *commit)),
            &self.state_dir,
            &git_error,
        )?;
        tracing::debug!(
            fetched_ms,
            checked_out_ms = started.elapsed().as_millis() as u64,
            "source fetched and checked out"
        );
        let revision = Revision {
            commit: commit.to_string(),
            checkout,
        };
        if self
            .last_good
            .as_ref()
            .is_some_and(|last| last.commit == revision.commit)
        {
            tracing::debug!(url = self.remote.shown(), %reference, commit = %revision.commit, "source unchanged");
            return Ok(SyncOutcome::Unchanged(revision));
        }
        checkout::store_last_good(
            &self.state_dir,
            self.remote.shown(),
            &self.reference,
            &revision.commit,
        )?;
        checkout::remove_other_checkouts(&self.state_dir, &revision.commit);
        tracing::info!(url = self.remote.shown(), %reference, commit = %revision.commit, "new revision");
        self.last_good = Some(revision.clone());
        Ok(SyncOutcome::Fresh(revision))
    }

    /// Imports the plain directory (if any), fetches and resolves the reference to a commit in `repo`.
    fn fetch_and_resolve(&self, repo: &Repository) -> Result<Oid, SourceError> {
        if let Some(dir) = &self.plain_dir {
            origin::import(dir, &self.state_dir.join(origin::ORIGIN_DIR))?;
        }
        // A local repository's revisions (its HEAD too, which may be detached) are read in it.
        if let (Some(path), Some(expr)) = (&self.local, self.revision_expr()) {
            return self.resolve_local(repo, path, &expr);
        }
        // A ref outside branches and tags (`refs/pull/1/merge`) is fetched by name as well.
        let named = match &self.reference {
            GitRef::Revision(expr) if expr.starts_with("refs/") => {
                let (name, _) = revision::split_ancestry(expr);
                Some(format!("+{name}:{name}"))
            }
            _ => None,
        };
        let mut refspecs: Vec<&str> = SYNC_REFSPECS.to_vec();
        refspecs.extend(named.as_deref());
        let advertised =
            remote::fetch(repo, &self.remote, &refspecs).map_err(|e| SourceError::Fetch {
                url: self.remote.shown().to_string(),
                reference: self.reference.to_string(),
                message: self.remote.redact(e.message()),
            })?;
        if let Some(oid) = resolve(repo, &advertised, &self.reference) {
            return Ok(oid);
        }
        // A name that is no branch of the remote may still be a revision (`origin/main`, a tag).
        let expr = match &self.reference {
            GitRef::Branch(name) | GitRef::Commit(name) | GitRef::Revision(name) => name,
            GitRef::Tag(_) | GitRef::RemoteHead => {
                return Err(SourceError::RefNotFound {
                    url: self.remote.shown().to_string(),
                    reference: self.reference.to_string(),
                });
            }
        };
        if let Some(path) = &self.local {
            return self.resolve_local(repo, path, expr);
        }
        let names = revision::Names {
            refs: repo,
            head: advertised.get("HEAD").copied(),
            prefixes: match &self.reference {
                GitRef::Revision(_) => &["refs/remotes/origin/"],
                _ => &[],
            },
            origin: Some(self.remote.clone()),
            local: None,
        };
        revision::resolve(expr, &names, repo).map_err(|e| self.unresolved(expr, e))
    }

    /// The error for a revision that did not resolve; a branch the remote does not have is
    /// [`SourceError::RefNotFound`].
    fn unresolved(&self, expr: &str, e: revision::Unresolved) -> SourceError {
        match (&self.reference, e) {
            (GitRef::Branch(_), revision::Unresolved::Unknown(_)) => SourceError::RefNotFound {
                url: self.remote.shown().to_string(),
                reference: self.reference.to_string(),
            },
            (_, e) => e.into_error(self.remote.shown(), expr),
        }
    }

    /// What `git rev-parse` is asked for a local repository: a commit, a revision or HEAD (branches
    /// and tags are read from what the repository advertises, as for any remote).
    fn revision_expr(&self) -> Option<String> {
        match &self.reference {
            GitRef::Commit(sha) => Some(sha.clone()),
            GitRef::Revision(expr) => Some(expr.clone()),
            GitRef::RemoteHead => Some("HEAD".to_string()),
            GitRef::Branch(_) | GitRef::Tag(_) => None,
        }
    }

    /// Resolves `expr` in the local repository at `path` and packs the commit with its tree into
    /// the mirror (fetching from the repository's `origin` what a shallow clone lacks).
    fn resolve_local(
        &self,
        repo: &Repository,
        path: &Path,
        expr: &str,
    ) -> Result<Oid, SourceError> {
        let git_error = self.remote.git_error(expr, "read the local repository");
        let local = Repository::open(path).map_err(&git_error)?;
        let origin = local
            .find_remote("origin")
            .ok()
            .and_then(|r| r.url().map(|u| remote::RemoteUrl::new(u, None)).ok());
        let names = revision::Names {
            refs: &local,
            head: None,
            prefixes: &[],
            origin,
            local: Some(path),
        };
        let oid = revision::resolve(expr, &names, repo).map_err(|e| self.unresolved(expr, e))?;
        if local.find_commit(oid).is_ok() {
            revision::copy_commit(&local, repo, oid).map_err(&git_error)?;
        }
        Ok(oid)
    }
}

/// The commit `reference` names: branches, tags and HEAD as the remote advertised them (tags peeled), a
/// commit id among the fetched objects. Revisions go through [`revision::resolve`].
fn resolve(repo: &Repository, advertised: &Advertised, reference: &GitRef) -> Option<Oid> {
    let oid = match reference {
        GitRef::Branch(name) => *advertised.get(&format!("refs/heads/{name}"))?,
        GitRef::Tag(name) => *advertised.get(&format!("refs/tags/{name}"))?,
        GitRef::RemoteHead => *advertised.get("HEAD")?,
        GitRef::Commit(sha) => repo.find_commit_by_prefix(sha).ok()?.id(),
        GitRef::Revision(_) => return None,
    };
    Some(
        repo.find_object(oid, None)
            .ok()?
            .peel_to_commit()
            .ok()?
            .id(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::testutil::{GitDaemon, Upstream, closed_port, git};
    use crate::source::{SourceConfig, TOKEN_ENV};
    use std::fs;

    fn open(url: &str, reference: GitRef, state_dir: &Path) -> Source {
        Source::open(SourceConfig {
            url: url.to_string(),
            reference,
            state_dir: state_dir.to_path_buf(),
        })
        .unwrap()
    }

    fn fresh(outcome: SyncOutcome) -> Revision {
        match outcome {
            SyncOutcome::Fresh(revision) => revision,
            other => panic!("expected Fresh, got {other:?}"),
        }
    }

    fn read(revision: &Revision, path: &str) -> String {
        fs::read_to_string(revision.checkout.join(path)).unwrap()
    }

    #[test]
    fn checks_out_branch_tag_commit_and_remote_head() {
        let tmp = tempfile::tempdir().unwrap();
        let up = Upstream::new(tmp.path());
        let first = up.commit(&[("app/a.yaml", "a: 1\n")], "first");
        git(&up.work, &["tag", "-a", "v1", "-m", "release 1"]);
        git(&up.work, &["push", "-q", "origin", "v1"]);
        let second = up.commit(&[("app/a.yaml", "a: 2\n")], "second");
        git(&up.work, &["checkout", "-q", "-b", "dev"]);
        let on_dev = up.commit(&[("app/a.yaml", "a: dev\n")], "dev");

        let cases = [
            ("branch:main", &second, "a: 2\n"),
            ("dev", &on_dev, "a: dev\n"),
            ("tag:v1", &first, "a: 1\n"),
            (first.as_str(), &first, "a: 1\n"),
            (&format!("commit:{}", &first[..8]), &first, "a: 1\n"),
            ("HEAD", &second, "a: 2\n"),
        ];
        for (i, (reference, commit, content)) in cases.into_iter().enumerate() {
            let state = tmp.path().join(format!("state-{i}"));
            let revision = fresh(
                open(&up.url(), reference.parse().unwrap(), &state)
                    .sync()
                    .unwrap(),
            );
            assert_eq!(&revision.commit, commit, "{reference}");
            assert_eq!(read(&revision, "app/a.yaml"), content, "{reference}");
            assert!(!revision.checkout.join(".git").exists());
        }
    }

    #[test]
    fn revisions_resolve_as_git_rev_parse_reads_them_locally_and_remotely() {
        let tmp = tempfile::tempdir().unwrap();
        let up = Upstream::new(tmp.path());
        let first = up.commit(&[("a.yaml", "a: 1\n")], "first");
        let second = up.commit(&[("a.yaml", "a: 2\n")], "second");
        git(&up.bare, &["update-ref", "refs/pull/7/merge", &second]);
        let daemon = GitDaemon::start(tmp.path());
        let remote = daemon.url("remote.git");
        // The work tree (local: its own HEAD and refs) and the same repository over the network.
        let local = up.work.to_str().unwrap().to_string();
        for (i, url) in [local, remote].iter().enumerate() {
            let cases = [
                ("HEAD~1", &first),
                ("HEAD^", &first),
                ("rev:HEAD^0", &second),
                (&first[..9], &first),
                ("main~1", &first),
            ];
            for (j, (reference, commit)) in cases.into_iter().enumerate() {
                let state = tmp.path().join(format!("state-{i}-{j}"));
                let revision = fresh(
                    open(url, reference.parse().unwrap(), &state)
                        .sync()
                        .unwrap_or_else(|e| panic!("{url} {reference}: {e}")),
                );
                assert_eq!(&revision.commit, commit, "{url} {reference}");
            }
            let error = open(
                url,
                "HEAD~5".parse().unwrap(),
                &tmp.path().join(format!("x-{i}")),
            )
            .sync()
            .unwrap_err();
            assert!(
                matches!(error, SourceError::UnknownRevision { .. })
                    && error.to_string().contains("HEAD~5"),
                "{error}"
            );
        }
        // A ref outside branches and tags is fetched by name from a remote.
        let pull = fresh(
            open(
                &daemon.url("remote.git"),
                "refs/pull/7/merge".parse().unwrap(),
                &tmp.path().join("pull"),
            )
            .sync()
            .unwrap(),
        );
        assert_eq!(pull.commit, second);
    }

    #[test]
    fn fetch_picks_up_a_new_commit_and_replaces_the_checkout() {
        let tmp = tempfile::tempdir().unwrap();
        let up = Upstream::new(tmp.path());
        let first = up.commit(&[("a.yaml", "a: 1\n"), ("gone.yaml", "x\n")], "first");
        let mut source = open(
            &up.url(),
            GitRef::Branch("main".into()),
            &tmp.path().join("state"),
        );
        let old = fresh(source.sync().unwrap());
        assert_eq!(old.commit, first);
        assert!(matches!(source.sync().unwrap(), SyncOutcome::Unchanged(r) if r == old));

        fs::remove_file(up.work.join("gone.yaml")).unwrap();
        let second = up.commit(&[("a.yaml", "a: 2\n")], "second");
        let new = fresh(source.sync().unwrap());
        assert_eq!(new.commit, second);
        assert_eq!(read(&new, "a.yaml"), "a: 2\n");
        assert!(!new.checkout.join("gone.yaml").exists());
        assert!(!old.checkout.exists(), "the previous checkout is removed");
        assert_eq!(
            source.changed_paths(&first, &second).unwrap(),
            vec![Path::new("a.yaml"), Path::new("gone.yaml")]
        );
    }

    #[test]
    fn plain_directory_is_imported_and_only_commits_on_change() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("examples-repo");
        fs::create_dir_all(dir.join("clusters")).unwrap();
        fs::write(dir.join("clusters/dev.yaml"), "kind: AROCluster\n").unwrap();
        let mut source = open(
            dir.to_str().unwrap(),
            GitRef::RemoteHead,
            &tmp.path().join("state"),
        );
        assert_eq!(source.url(), dir.to_str().unwrap());

        let first = fresh(source.sync().unwrap());
        assert_eq!(read(&first, "clusters/dev.yaml"), "kind: AROCluster\n");
        assert!(matches!(source.sync().unwrap(), SyncOutcome::Unchanged(_)));
        let origin = tmp.path().join("state/origin.git");
        assert_eq!(
            git(&origin, &["rev-list", "--count", "main"]),
            "1",
            "no commit when unchanged"
        );

        fs::write(dir.join("clusters/dev.yaml"), "kind: AROCluster # edited\n").unwrap();
        let second = fresh(source.sync().unwrap());
        assert_eq!(
            read(&second, "clusters/dev.yaml"),
            "kind: AROCluster # edited\n"
        );
        assert_eq!(git(&origin, &["rev-list", "--count", "main"]), "2");
    }

    #[test]
    fn unreachable_remote_keeps_the_last_good_revision_across_restarts() {
        let tmp = tempfile::tempdir().unwrap();
        let up = Upstream::new(tmp.path());
        let commit = up.commit(&[("a.yaml", "a: 1\n")], "first");
        let state = tmp.path().join("state");
        let good = fresh(
            open(&up.url(), GitRef::Branch("main".into()), &state)
                .sync()
                .unwrap(),
        );

        let moved = tmp.path().join("moved.git");
        fs::rename(&up.bare, &moved).unwrap();
        fs::remove_dir_all(&good.checkout).unwrap();
        let mut restarted = open(&up.url(), GitRef::Branch("main".into()), &state);
        assert_eq!(restarted.last_good(), Some(&good));
        match restarted.sync().unwrap() {
            SyncOutcome::Stale { last_good, error } => {
                assert_eq!(last_good.commit, commit);
                assert_eq!(
                    read(&last_good, "a.yaml"),
                    "a: 1\n",
                    "files restored from the mirror"
                );
                assert!(matches!(error, SourceError::Fetch { .. }), "{error}");
                assert!(error.to_string().contains(&up.url()), "{error}");
            }
            other => panic!("expected Stale, got {other:?}"),
        }

        fs::rename(&moved, &up.bare).unwrap();
        assert!(matches!(restarted.sync().unwrap(), SyncOutcome::Unchanged(r) if r == good));

        git(&up.bare, &["update-ref", "-d", "refs/heads/main"]);
        match restarted.sync().unwrap() {
            SyncOutcome::Stale {
                error: SourceError::RefNotFound { reference, .. },
                ..
            } => assert_eq!(reference, "branch:main"),
            other => panic!("expected Stale with RefNotFound, got {other:?}"),
        }
    }

    #[test]
    fn never_synced_and_unreachable_is_an_error_without_credentials() {
        let tmp = tempfile::tempdir().unwrap();
        let port = closed_port();
        let url = format!("git://127.0.0.1:{port}/repo.git");
        let error = open(&url, GitRef::RemoteHead, &tmp.path().join("a"))
            .sync()
            .unwrap_err();
        assert!(
            matches!(error, SourceError::Fetch { .. }) && error.to_string().contains(&url),
            "{error}"
        );

        let secret_url = format!("https://bot:s3cret-token@127.0.0.1:{port}/repo.git");
        let error = open(&secret_url, GitRef::RemoteHead, &tmp.path().join("b"))
            .sync()
            .unwrap_err()
            .to_string();
        assert!(!error.contains("s3cret-token"), "{error}");
        assert!(
            error.contains(&format!("https://bot:***@127.0.0.1:{port}/repo.git")),
            "{error}"
        );
        assert!(
            std::env::var(TOKEN_ENV).is_err()
                || !error.contains(&std::env::var(TOKEN_ENV).unwrap())
        );
    }

    #[test]
    fn network_remote_over_git_daemon_then_stale_when_it_stops() {
        let tmp = tempfile::tempdir().unwrap();
        let up = Upstream::new(tmp.path());
        let commit = up.commit(&[("a.yaml", "a: 1\n")], "first");
        let daemon = GitDaemon::start(tmp.path());
        let url = daemon.url("remote.git");
        let mut source = open(
            &url,
            GitRef::Branch("main".into()),
            &tmp.path().join("state"),
        );
        assert_eq!(fresh(source.sync().unwrap()).commit, commit);

        drop(daemon);
        match source.sync().unwrap() {
            SyncOutcome::Stale { last_good, error } => {
                assert_eq!(last_good.commit, commit);
                assert!(error.to_string().contains(&url), "{error}");
            }
            other => panic!("expected Stale, got {other:?}"),
        }
    }

    #[test]
    fn a_refused_revision_never_falls_back_onto_itself() {
        use crate::source::signature::{Mode, Verification, trust};
        let tmp = tempfile::tempdir().unwrap();
        let up = Upstream::new(tmp.path());
        let unsigned = up.commit(&[("a.yaml", "a: 1\n")], "unsigned");
        let mut source = open(
            &up.url(),
            GitRef::Branch("main".into()),
            &tmp.path().join("state"),
        );
        assert_eq!(fresh(source.sync().unwrap()).commit, unsigned);
        // Verification turned on over a state whose last good revision was never verified.
        let key =
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA1E6hDOTJHIbZsW8z26BgGuLYlEePw6rQSLmicpUB2h";
        let store = trust::parse(Path::new("trusted"), &format!("a@x {key}\n")).unwrap();
        source.verify_signatures(std::sync::Arc::new(Verification {
            mode: Mode::All,
            trust: store,
        }));
        let error = source.sync().unwrap_err();
        assert!(error.refuses(&unsigned), "{error}");
        assert!(error.to_string().contains("is not signed"), "{error}");
        assert!(matches!(
            source.verification_result(),
            Some(Err(r)) if r.verdict.result() == "unsigned"
        ));
    }

    #[test]
    fn parses_references_from_the_command_line() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let cases = [
            ("main", GitRef::Branch("main".into())),
            ("refs/heads/team/a", GitRef::Branch("team/a".into())),
            ("branch:release", GitRef::Branch("release".into())),
            ("tag:v1.2", GitRef::Tag("v1.2".into())),
            ("refs/tags/v1", GitRef::Tag("v1".into())),
            (sha, GitRef::Commit(sha.into())),
            ("commit:ABCD123", GitRef::Commit("abcd123".into())),
            ("HEAD", GitRef::RemoteHead),
            ("", GitRef::RemoteHead),
            ("origin/main", GitRef::Branch("origin/main".into())),
            ("HEAD~1", GitRef::Revision("HEAD~1".into())),
            ("main^2", GitRef::Revision("main^2".into())),
            (
                "refs/pull/1/merge",
                GitRef::Revision("refs/pull/1/merge".into()),
            ),
            ("abc1234", GitRef::Revision("abc1234".into())),
            ("rev:v1", GitRef::Revision("v1".into())),
        ];
        for (input, expected) in cases {
            let parsed: GitRef = input.parse().unwrap();
            assert_eq!(parsed, expected, "{input}");
            assert_eq!(
                parsed.to_string().parse::<GitRef>().unwrap(),
                expected,
                "round trip of {input}"
            );
        }
        for bad in [
            "commit:xyz",
            "commit:abc",
            "branch:a..b",
            "tag:",
            "bad name",
            "rev:",
            "HEAD~1 x",
        ] {
            assert!(
                matches!(bad.parse::<GitRef>(), Err(SourceError::InvalidRef { .. })),
                "{bad}"
            );
        }
    }
}

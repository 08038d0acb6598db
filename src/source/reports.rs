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
pub const MAX_PUSH_ATTEMPTS: u32 = 8;

/// The wait before the first retry of a lost race; doubled for each next one, up to [`MAX_RETRY_DELAY`].
const FIRST_RETRY_DELAY: std::time::Duration = std::time::Duration::from_millis(25);
const MAX_RETRY_DELAY: std::time::Duration = std::time::Duration::from_secs(1);

/// How long to wait after losing the race of push `attempt` (from 1): exponential, capped, and
/// scaled by `jitter` (in `[0, 1)`) to between half and one and a half times that, so that agents
/// that lost to each other do not fetch and push in step again.
pub fn retry_delay(attempt: u32, jitter: f64) -> std::time::Duration {
    let exponential = FIRST_RETRY_DELAY.saturating_mul(1 << attempt.clamp(1, 16).saturating_sub(1));
    exponential
        .min(MAX_RETRY_DELAY)
        .mul_f64(0.5 + jitter.clamp(0.0, 1.0))
}

/// A random number in `[0, 1)`, for [`retry_delay`].
fn jitter() -> f64 {
    // The low 62 bits of a v4 UUID are random (the version and variant bits are above them).
    let bits = (uuid::Uuid::new_v4().as_u128() as u64) & ((1 << 53) - 1);
    bits as f64 / (1u64 << 53) as f64
}

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
                        let wait = retry_delay(attempt, jitter());
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
mod tests {
    use super::*;
    use crate::source::testutil::{GitDaemon, Upstream, git, read_at};
    use crate::source::{GitRef, Source, SourceConfig, SyncOutcome};

    const STATUS: &str = "aro-gitops/status";

    fn open(url: &str, state_dir: &Path) -> Source {
        let config = SourceConfig {
            url: url.to_string(),
            reference: GitRef::Branch("main".into()),
            state_dir: state_dir.to_path_buf(),
        };
        Source::open(config).unwrap()
    }

    fn files(entries: &[(&str, &str)]) -> BTreeMap<PathBuf, Vec<u8>> {
        entries
            .iter()
            .map(|(path, content)| (PathBuf::from(path), content.as_bytes().to_vec()))
            .collect()
    }

    /// Pushes a commit adding `file` to `branch` from the developer's clone, as a competing agent would.
    fn push_competing(up: &Upstream, branch: &str, file: &str) {
        git(&up.work, &["fetch", "-q", "origin", branch]);
        git(
            &up.work,
            &["checkout", "-q", "-B", "competing", "FETCH_HEAD"],
        );
        up.commit(&[(file, "competing\n")], "competing push");
        git(
            &up.work,
            &["push", "-q", "origin", &format!("HEAD:{branch}")],
        );
    }

    #[test]
    fn status_branch_starts_as_orphan_commits_only_on_change_and_keeps_files() {
        let tmp = tempfile::tempdir().unwrap();
        let up = Upstream::new(tmp.path());
        let main = up.commit(&[("app.yaml", "a: 1\n")], "app");
        let source = open(&up.url(), &tmp.path().join("state"));
        let target = ReportTarget::default();
        let bot = Identity::default();

        let first = source
            .publish(
                &target,
                &files(&[("clusters/dev.yaml", "ready\n")]),
                "reports",
                &bot,
            )
            .unwrap()
            .unwrap();
        assert_eq!(git(&up.bare, &["rev-parse", STATUS]), first);
        assert_eq!(
            git(&up.bare, &["rev-list", "--parents", STATUS]),
            first,
            "orphan: one commit, no parent"
        );
        assert_eq!(
            git(&up.bare, &["ls-tree", "-r", "--name-only", STATUS]),
            "clusters/dev.yaml"
        );
        assert_eq!(
            git(&up.bare, &["log", "-1", "--format=%an <%ae>|%cn", STATUS]),
            "aro-gitops <aro-gitops@users.noreply.local>|aro-gitops"
        );
        assert_eq!(
            git(&up.bare, &["rev-parse", "main"]),
            main,
            "source branch untouched"
        );

        let unchanged = source
            .publish(
                &target,
                &files(&[("clusters/dev.yaml", "ready\n")]),
                "reports",
                &bot,
            )
            .unwrap();
        assert_eq!(unchanged, None);

        let second = source
            .publish(
                &target,
                &files(&[("clusters/prod.yaml", "failed\n")]),
                "reports",
                &bot,
            )
            .unwrap()
            .unwrap();
        assert_eq!(git(&up.bare, &["rev-parse", &format!("{second}^")]), first);
        assert_eq!(
            read_at(&up.bare, STATUS, "clusters/dev.yaml").as_deref(),
            Some("ready\n"),
            "earlier file kept"
        );
        assert_eq!(
            read_at(&up.bare, STATUS, "clusters/prod.yaml").as_deref(),
            Some("failed\n")
        );
    }

    /// libgit2 cannot push into a repository with a work tree; reports still land there, and a
    /// concurrent commit to the status branch is a lost race that is retried, as over the wire.
    #[test]
    fn publish_into_a_local_work_tree_repository() {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("fleet");
        std::fs::create_dir_all(&work).unwrap();
        git(&work, &["init", "-q", "-b", "main"]);
        std::fs::write(work.join("app.yaml"), "a: 1\n").unwrap();
        git(&work, &["add", "-A"]);
        git(
            &work,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@e",
                "commit",
                "-qm",
                "app",
            ],
        );
        let source = open(work.to_str().unwrap(), &tmp.path().join("state"));
        let (target, bot) = (ReportTarget::default(), Identity::default());
        let mut competed = false;
        let first = source
            .publish_with(
                &target,
                &files(&[("r.yaml", "1\n")]),
                "reports",
                &bot,
                &mut |_| {},
            )
            .unwrap()
            .unwrap();
        assert_eq!(git(&work, &["rev-parse", STATUS]), first);
        let second = source
            .publish_with(
                &target,
                &files(&[("r.yaml", "2\n")]),
                "reports",
                &bot,
                &mut |attempt| {
                    if attempt == 1 {
                        // Someone else moves the branch between our fetch and our push.
                        let tree = git(&work, &["rev-parse", &format!("{STATUS}^{{tree}}")]);
                        let other = git(
                            &work,
                            &[
                                "-c",
                                "user.name=t",
                                "-c",
                                "user.email=t@e",
                                "commit-tree",
                                &tree,
                                "-p",
                                STATUS,
                                "-m",
                                "other",
                            ],
                        );
                        git(
                            &work,
                            &["update-ref", &format!("refs/heads/{STATUS}"), &other],
                        );
                        competed = true;
                    }
                },
            )
            .unwrap()
            .unwrap();
        assert!(competed);
        assert_eq!(git(&work, &["rev-parse", STATUS]), second);
        assert_eq!(
            git(&work, &["log", "--format=%s", STATUS]),
            "reports\nother\nreports",
            "both changes kept"
        );
        assert_eq!(read_at(&work, STATUS, "r.yaml").as_deref(), Some("2\n"));
        assert_eq!(
            git(&work, &["status", "--porcelain"]),
            "",
            "the work tree is untouched"
        );
    }

    #[test]
    fn publish_over_git_daemon_wins_a_race_and_keeps_both_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let up = Upstream::new(tmp.path());
        up.commit(&[("app.yaml", "a: 1\n")], "app");
        let daemon = GitDaemon::start(tmp.path());
        let source = open(&daemon.url("remote.git"), &tmp.path().join("state"));
        let (target, bot) = (ReportTarget::default(), Identity::default());
        source
            .publish(&target, &files(&[("first.yaml", "1\n")]), "reports", &bot)
            .unwrap()
            .unwrap();

        let mut attempts = Vec::new();
        let mut race = |attempt| {
            attempts.push(attempt);
            if attempt == 1 {
                push_competing(&up, STATUS, "competing.yaml");
            }
        };
        let published = source
            .publish_with(
                &target,
                &files(&[("mine.yaml", "2\n")]),
                "reports",
                &bot,
                &mut race,
            )
            .unwrap()
            .unwrap();
        assert_eq!(attempts, vec![1, 2], "lost once, then retried");
        assert_eq!(git(&up.bare, &["rev-parse", STATUS]), published);
        let names = git(&up.bare, &["ls-tree", "-r", "--name-only", STATUS]);
        assert_eq!(
            names.lines().collect::<Vec<_>>(),
            vec!["competing.yaml", "first.yaml", "mine.yaml"]
        );
    }

    /// Two agents (shards) publish their own units' reports to one status branch at once: the
    /// one that loses the race starts over on the winner's tip and both sets of files stay.
    #[test]
    fn two_shards_racing_keep_each_others_reports() {
        let tmp = tempfile::tempdir().unwrap();
        let up = Upstream::new(tmp.path());
        up.commit(&[("app.yaml", "a: 1\n")], "app");
        let zero = open(&up.url(), &tmp.path().join("state-0"));
        let one = open(&up.url(), &tmp.path().join("state-1"));
        let (target, bot) = (ReportTarget::default(), Identity::default());
        let mine = files(&[("clusters/a.yaml", "a\n"), ("clusters/a.md", "a\n")]);
        let theirs = files(&[("clusters/b.yaml", "b\n"), ("clusters/b.md", "b\n")]);
        let mut attempts = Vec::new();
        let mut race = |attempt| {
            attempts.push(attempt);
            if attempt == 1 {
                one.publish(&target, &theirs, "shard 1", &bot)
                    .unwrap()
                    .unwrap();
            }
        };
        zero.publish_with(&target, &mine, "shard 0", &bot, &mut race)
            .unwrap()
            .unwrap();
        assert_eq!(
            attempts,
            vec![1, 2],
            "lost once to the other shard, then retried"
        );
        let names = |rev: &str| git(&up.bare, &["ls-tree", "-r", "--name-only", rev]);
        assert_eq!(
            names(STATUS).lines().collect::<Vec<_>>(),
            vec![
                "clusters/a.md",
                "clusters/a.yaml",
                "clusters/b.md",
                "clusters/b.yaml"
            ]
        );
        assert_eq!(
            git(&up.bare, &["log", "--format=%s", STATUS]),
            "shard 0\nshard 1",
            "the other shard's commit is the parent: nothing forced"
        );

        // Later rounds of each write over their own files only.
        let mine = files(&[("clusters/a.yaml", "a2\n"), ("clusters/a.md", "a\n")]);
        zero.publish(&target, &mine, "shard 0", &bot)
            .unwrap()
            .unwrap();
        let theirs = files(&[("clusters/b.yaml", "b2\n"), ("clusters/b.md", "b\n")]);
        one.publish(&target, &theirs, "shard 1", &bot)
            .unwrap()
            .unwrap();
        assert_eq!(
            read_at(&up.bare, STATUS, "clusters/a.yaml").as_deref(),
            Some("a2\n")
        );
        assert_eq!(
            read_at(&up.bare, STATUS, "clusters/b.yaml").as_deref(),
            Some("b2\n")
        );
        assert_eq!(names(STATUS).lines().count(), 4);
    }

    /// Three shards publish round after round at the same time into one local bare remote (no
    /// hook between them): every push either wins or loses a race, none overwrites another's
    /// commit, so each shard's last reports are on the branch.
    #[test]
    fn shards_publishing_at_once_into_a_local_bare_remote_never_overwrite_each_other() {
        let tmp = tempfile::tempdir().unwrap();
        let up = Upstream::new(tmp.path());
        up.commit(&[("app.yaml", "a: 1\n")], "app");
        const ROUNDS: usize = 6;
        std::thread::scope(|scope| {
            for shard in 0..3 {
                let (url, state) = (up.url(), tmp.path().join(format!("state-{shard}")));
                scope.spawn(move || {
                    let source = open(&url, &state);
                    for round in 0..ROUNDS {
                        let content = format!("{round}\n");
                        let mine = files(&[
                            (&format!("shard-{shard}/a.yaml"), content.as_str()),
                            (&format!("shard-{shard}/b.yaml"), content.as_str()),
                        ]);
                        source
                            .publish(&ReportTarget::default(), &mine, "r", &Identity::default())
                            .unwrap();
                    }
                });
            }
        });
        let last = format!("{}\n", ROUNDS - 1);
        for shard in 0..3 {
            for file in ["a", "b"] {
                let path = format!("shard-{shard}/{file}.yaml");
                assert_eq!(
                    read_at(&up.bare, STATUS, &path).as_deref(),
                    Some(last.as_str()),
                    "{path}"
                );
            }
        }
        assert_eq!(
            git(&up.bare, &["rev-list", "--count", STATUS]),
            (3 * ROUNDS).to_string(),
            "one commit per publish, none lost"
        );
    }

    #[test]
    fn retries_back_off_exponentially_with_jitter_and_a_cap() {
        use std::time::Duration;
        assert_eq!(retry_delay(1, 0.5), Duration::from_millis(25));
        assert_eq!(retry_delay(2, 0.5), Duration::from_millis(50));
        assert_eq!(retry_delay(3, 0.0), Duration::from_millis(50));
        assert_eq!(retry_delay(3, 1.0), Duration::from_millis(150));
        assert_eq!(retry_delay(20, 0.5), Duration::from_secs(1), "capped");
        assert_eq!(retry_delay(u32::MAX, 1.0), Duration::from_millis(1500));
        for _ in 0..100 {
            let j = jitter();
            assert!((0.0..1.0).contains(&j), "{j}");
        }
        // Two agents that lost to each other wait different times (almost always).
        let waits: std::collections::BTreeSet<_> =
            (0..10).map(|_| retry_delay(2, jitter())).collect();
        assert!(waits.len() > 1, "{waits:?}");
    }

    #[test]
    fn gives_up_after_the_bounded_number_of_lost_races() {
        let tmp = tempfile::tempdir().unwrap();
        let up = Upstream::new(tmp.path());
        up.commit(&[("app.yaml", "a: 1\n")], "app");
        let source = open(&up.url(), &tmp.path().join("state"));
        let (target, bot) = (ReportTarget::default(), Identity::default());
        source
            .publish(&target, &files(&[("first.yaml", "1\n")]), "reports", &bot)
            .unwrap();
        let mut always =
            |attempt: u32| push_competing(&up, STATUS, &format!("competing-{attempt}.yaml"));
        let error = source
            .publish_with(
                &target,
                &files(&[("mine.yaml", "2\n")]),
                "m",
                &bot,
                &mut always,
            )
            .unwrap_err();
        assert!(
            matches!(
                error,
                SourceError::PushRejected {
                    attempts: MAX_PUSH_ATTEMPTS,
                    ..
                }
            ),
            "{error}"
        );
        assert!(
            error.to_string().contains(STATUS) && error.to_string().contains(&up.url()),
            "{error}"
        );
    }

    #[test]
    fn source_branch_reports_live_under_the_prefix_and_need_no_reconcile() {
        let tmp = tempfile::tempdir().unwrap();
        let up = Upstream::new(tmp.path());
        up.commit(&[("app.yaml", "a: 1\n")], "app");
        let mut source = open(&up.url(), &tmp.path().join("state"));
        let target = ReportTarget::SourceBranch {
            branch: "main".into(),
            prefix: PathBuf::from(".aro-gitops/reports"),
        };
        let before = source.sync().unwrap().revision().commit.clone();

        let report = files(&[("clusters/dev.yaml", "ready\n")]);
        let published = source
            .publish(&target, &report, "reports", &Identity::default())
            .unwrap()
            .unwrap();
        assert_eq!(
            read_at(&up.bare, "main", ".aro-gitops/reports/clusters/dev.yaml").as_deref(),
            Some("ready\n")
        );
        assert_eq!(
            read_at(&up.bare, "main", "app.yaml").as_deref(),
            Some("a: 1\n")
        );

        let after = match source.sync().unwrap() {
            SyncOutcome::Fresh(revision) => revision.commit,
            other => panic!("expected Fresh, got {other:?}"),
        };
        assert_eq!(after, published);
        let changed = source.changed_paths(&before, &after).unwrap();
        assert_eq!(
            changed,
            vec![PathBuf::from(".aro-gitops/reports/clusters/dev.yaml")]
        );
        assert!(
            target.only_reports(&changed),
            "a reports-only commit needs no reconcile"
        );

        git(&up.work, &["pull", "-q", "origin", "main"]);
        let edited = up.commit(&[("app.yaml", "a: 2\n")], "edit");
        source.sync().unwrap();
        let changed = source.changed_paths(&after, &edited).unwrap();
        assert!(!target.only_reports(&changed), "{changed:?}");
        assert!(!ReportTarget::default().only_reports(&changed));
    }

    #[test]
    fn report_paths_must_stay_relative() {
        assert_eq!(
            components(Path::new("./a/b.yaml")),
            Some(vec!["a".into(), "b.yaml".into()])
        );
        for bad in ["", ".", "/etc/passwd", "../x", "a/../../x", ".git/config"] {
            assert_eq!(components(Path::new(bad)), None, "{bad}");
        }
    }
}

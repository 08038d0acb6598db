//! Tests of [`super`]: publishing reports to real repositories.

use super::*;
use crate::source::testutil::{GitDaemon, Upstream, git, show};
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
        show(&up.bare, STATUS, "clusters/dev.yaml").as_deref(),
        Some("ready\n"),
        "earlier file kept"
    );
    assert_eq!(
        show(&up.bare, STATUS, "clusters/prod.yaml").as_deref(),
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
    assert_eq!(show(&work, STATUS, "r.yaml").as_deref(), Some("2\n"));
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
        show(&up.bare, STATUS, "clusters/a.yaml").as_deref(),
        Some("a2\n")
    );
    assert_eq!(
        show(&up.bare, STATUS, "clusters/b.yaml").as_deref(),
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
                show(&up.bare, STATUS, &path).as_deref(),
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
        show(&up.bare, "main", ".aro-gitops/reports/clusters/dev.yaml").as_deref(),
        Some("ready\n")
    );
    assert_eq!(
        show(&up.bare, "main", "app.yaml").as_deref(),
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

//! Paths: `render`, `validate`, `plan` and `run` find the repository from the path they are given,
//! whatever the working directory (inside an unrelated git repository, or a subfolder of the
//! fleet); the state directory never dirties the user's repository; a rerun with nothing changed
//! commits no report.

use super::common::fleet::{Fleet, aro_gitops_in};
use super::common::git::{commits, git};
use std::path::Path;

/// `git status --porcelain` of `repo` (ignored files are not listed).
fn status(repo: &Path) -> String {
    git(repo, &["status", "--porcelain"])
}

#[test]
fn render_and_validate_find_the_root_from_their_path_not_the_working_directory() {
    // A plain fleet folder, run on from inside an unrelated git repository.
    let fleet = Fleet::plain();
    let elsewhere = tempfile::tempdir().expect("tempdir");
    git(elsewhere.path(), &["init", "-q"]);
    let dev = fleet.repo.join("clusters/dev");
    let from_other_repo = aro_gitops_in(elsewhere.path(), &["render", dev.to_str().unwrap()]);
    from_other_repo.expect_code(0);
    assert!(
        from_other_repo.stdout.contains("kind: AROCluster"),
        "{}",
        from_other_repo.all()
    );
    // From a subfolder of the fleet, with a relative path.
    let from_clusters = aro_gitops_in(&fleet.repo.join("clusters"), &["render", "dev"]);
    from_clusters.expect_code(0);
    assert_eq!(from_clusters.stdout, from_other_repo.stdout);
    let validate = aro_gitops_in(
        elsewhere.path(),
        &["validate", fleet.repo.to_str().unwrap()],
    );
    validate.expect_code(0);
    assert!(
        validate.stdout.contains("clusters/dev: ok")
            && validate.stdout.contains("clusters/prod: ok"),
        "{}",
        validate.all()
    );
    aro_gitops_in(&fleet.repo.join("clusters"), &["validate", "prod"]).expect_code(0);

    // The same fleet as a git repository: its top level is the root.
    git(&fleet.repo, &["init", "-q"]);
    let in_git = aro_gitops_in(elsewhere.path(), &["render", dev.to_str().unwrap()]);
    in_git.expect_code(0);
    assert_eq!(in_git.stdout, from_other_repo.stdout);
    assert_eq!(status(elsewhere.path()), "", "nothing written where it ran");
}

#[test]
fn plan_and_run_leave_the_repository_clean_and_a_rerun_commits_nothing() {
    let (fleet, _) = Fleet::git();
    let sub = fleet.repo.join("clusters");
    // Default state directory (`.aro-gitops` in the working directory: here inside the fleet).
    fleet.write(
        "clusters/dev/probe.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe\n",
    );
    fleet.add_resource("clusters/dev", "probe.yaml");
    fleet.commit("a probe");
    let repo = fleet.repo.to_str().unwrap();
    let plan = aro_gitops_in(
        &sub,
        &["plan", "--repo", repo, "--base", "HEAD~1", "--head", "HEAD"],
    );
    plan.expect_code(2);
    assert!(sub.join(".aro-gitops").is_dir(), "{}", plan.all());
    assert_eq!(status(&fleet.repo), "", "plan leaves the repository clean");

    let run = [
        "run",
        "--repo",
        repo,
        "--once",
        "--sim-delay",
        "0s",
        "--timeout",
        "90s",
    ];
    let first = aro_gitops_in(&fleet.repo, &run);
    first.expect_code(0);
    assert!(
        first.stdout.contains("reports committed: "),
        "{}",
        first.all()
    );
    let published = fleet.status_commits();
    assert_eq!(published.len(), 1, "{}", first.all());
    assert_eq!(status(&fleet.repo), "", "run leaves the work tree clean");

    let second = aro_gitops_in(&fleet.repo, &run);
    second.expect_code(0);
    assert!(
        second
            .stdout
            .contains("reports unchanged: nothing committed"),
        "{}",
        second.all()
    );
    assert_eq!(
        fleet.status_commits(),
        published,
        "a rerun with nothing changed adds no commit"
    );
    assert_eq!(status(&fleet.repo), "");
}

#[test]
fn a_state_directory_inside_a_plain_folder_is_not_imported() {
    let fleet = Fleet::plain();
    let run = [
        "run",
        "--repo",
        ".",
        "--once",
        "--sim-delay",
        "0s",
        "--timeout",
        "90s",
    ];
    let first = aro_gitops_in(&fleet.repo, &run);
    first.expect_code(0);
    let origin = fleet.repo.join(".aro-gitops/source/origin.git");
    let files = git(&origin, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(
        !files.contains(".aro-gitops"),
        "the state directory was imported:\n{files}"
    );
    let second = aro_gitops_in(&fleet.repo, &run);
    second.expect_code(0);
    assert!(
        second
            .stdout
            .contains("reports unchanged: nothing committed"),
        "{}",
        second.all()
    );
    assert_eq!(commits(&origin, "main").len(), 1, "no second import");
}

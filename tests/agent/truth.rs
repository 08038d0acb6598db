//! `run --once` tells the truth about what it did not do: units its deadline never reached are
//! `NotStarted` (summary, reports, exit code 1), never `Converged`; a refused revision, or a
//! source that cannot be fetched, fails the run (exit code 1) while the last good revision serves.

use super::*;

/// The phase and pass lines of every report on the status branch of `f`, by path.
fn reported_phases(f: &Fleet) -> Vec<(String, String)> {
    let listed = git::git(
        &f.origin(),
        &["ls-tree", "-r", "--name-only", STATUS_BRANCH, "reports/"],
    );
    listed
        .lines()
        .filter(|p| p.ends_with(".yaml"))
        .map(|p| {
            let yaml = f.report(p).expect("listed");
            let phase = yaml
                .lines()
                .find_map(|l| l.strip_prefix("phase: "))
                .expect("a phase")
                .to_string();
            (p.to_string(), phase)
        })
        .collect()
}

#[test]
fn units_the_deadline_never_reached_are_not_started_and_fail_the_run() {
    let f = Fleet::generated(&["--clusters", "5"]);
    // A deadline already past: no pass starts.
    let out = f.aro_gitops(&["run", "--once", "--sim-delay", "0s", "--timeout", "0s"]);
    assert_eq!(out.code, 1, "{}", out.all());
    let rows: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("clusters/"))
        .collect();
    assert_eq!(rows.len(), 5, "{}", out.all());
    for row in &rows {
        let cells: Vec<&str> = row.split_whitespace().collect();
        // UNIT CLUSTER PHASE ... CHAIN: nothing created, no step claimed.
        assert_eq!(cells[2], "NotStarted", "{}", out.all());
        assert_eq!(cells[3], "0", "{}", out.all());
        assert_eq!(cells.last(), Some(&"-"), "{}", out.all());
    }
    assert_eq!(
        out.stdout
            .matches("not settled before the deadline: ")
            .count(),
        5,
        "{}",
        out.all()
    );
    let reports = reported_phases(&f);
    assert_eq!(reports.len(), 5, "{reports:?}");
    for (path, phase) in &reports {
        assert_eq!(phase, "NotStarted", "{path}");
        let yaml = f.report(path).expect("listed");
        assert!(
            yaml.contains("pass: 'not started: the run's deadline (--timeout) passed")
                || yaml.contains("pass: \"not started: the run's deadline (--timeout) passed")
                || yaml.contains("pass: not started: the run's deadline (--timeout) passed"),
            "{yaml}"
        );
        let md = f.report(&path.replace(".yaml", ".md")).expect("markdown");
        assert!(md.contains("**Not started.**"), "{md}");
    }
    // Given the time, the same fleet converges, and the reports say so.
    let out = f.aro_gitops(&["run", "--once", "--sim-delay", "0s", "--timeout", "120s"]);
    assert_eq!(out.code, 0, "{}", out.all());
    for (path, phase) in reported_phases(&f) {
        assert_eq!(phase, "Converged", "{path}");
    }
}

/// `aro-gitops run --once` of `f`, verifying signatures against `trust` when given.
fn run_once(f: &Fleet, trust: Option<&Path>) -> common::fleet::Output {
    let mut args = vec!["run", "--once", "--sim-delay", "0s", "--timeout", "120s"];
    if let Some(file) = trust {
        args.extend([
            "--verify-signatures",
            "--trusted-keys",
            file.to_str().unwrap(),
        ]);
    }
    f.aro_gitops(&args)
}

#[test]
fn a_refused_revision_fails_the_run_while_the_verified_one_serves() {
    let f = Fleet::with_remote();
    let (key, public, _) = git::ssh_key(f.dir(), "alice", "ed25519");
    let file = f.dir().join("trusted-keys");
    std::fs::write(&file, format!("alice@example.com {public}\n")).unwrap();
    let signed = git::commit_all_ssh_signed(&f.repo, &key, "signed");
    git::git(&f.repo, &["push", "-q", "origin", "main"]);
    run_once(&f, Some(&file)).expect_code(0);
    // An unsigned commit on top: refused, the signed revision stays in force, the run fails.
    git::git(
        &f.repo,
        &["commit", "-q", "--allow-empty", "-m", "unsigned"],
    );
    git::git(&f.repo, &["push", "-q", "origin", "main"]);
    let out = run_once(&f, Some(&file));
    assert_eq!(out.code, 1, "{}", out.all());
    let refused = out
        .stdout
        .lines()
        .find(|l| l.starts_with("refused: "))
        .unwrap_or_else(|| panic!("a refused: line\n{}", out.all()));
    assert!(
        refused.contains(&format!("revision {signed} stays in force")),
        "{refused}"
    );
    let failed = out
        .stdout
        .lines()
        .find(|l| l.starts_with("failed: "))
        .unwrap_or_else(|| panic!("a failed: line\n{}", out.all()));
    assert!(
        failed.starts_with("failed: the revision was refused: nothing of it was applied")
            && failed.contains("not signed"),
        "{failed}"
    );
}

#[test]
fn a_source_that_cannot_be_fetched_fails_the_run_while_the_last_good_revision_serves() {
    let f = Fleet::with_remote();
    run_once(&f, None).expect_code(0);
    let moved = f.dir().join("moved.git");
    std::fs::rename(&f.url, &moved).expect("the remote moves away");
    let out = run_once(&f, None);
    std::fs::rename(&moved, &f.url).expect("the remote moves back");
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("failed: the source could not be fetched")),
        "{}",
        out.all()
    );
    // Reachable again: the run succeeds.
    run_once(&f, None).expect_code(0);
}

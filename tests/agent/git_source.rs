//! The agent and its git remote: reports published over a status branch that moved since the
//! last run, and a remote that cannot be reached (the last good revision is kept, and said so).

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_are_published_over_a_status_branch_that_moved() {
    let f = Fleet::plain();
    let first = f.run().await;
    let first_commit = first.report_commit.clone().expect("first reports");

    // Someone else pushes to the status branch from their own clone.
    let origin = f.origin();
    git::git(
        f.dir(),
        &[
            "clone",
            "-q",
            "--branch",
            STATUS_BRANCH,
            origin.to_str().unwrap(),
            "other",
        ],
    );
    let other = f.dir().join("other");
    std::fs::write(other.join("NOTES.md"), "maintenance window on Friday\n").unwrap();
    let competing = git::commit_all(&other, "a note beside the reports");
    git::git(
        &other,
        &["push", "-q", "origin", &format!("HEAD:{STATUS_BRANCH}")],
    );
    assert_eq!(f.status_commits()[0], competing);

    // The next run has report changes (a new revision, adding a ConfigMap to dev): it fetches
    // the moved branch and commits on top of it.
    f.write(
        "clusters/dev/probe.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe\n",
    );
    f.add_resource(DEV, "probe.yaml");
    let second = f.run().await;
    let published = second
        .report_commit
        .clone()
        .expect("the second run publishes its reports");
    let history = f.status_commits();
    assert_eq!(history, vec![published.clone(), competing, first_commit]);
    assert_eq!(
        git::show(&origin, STATUS_BRANCH, "NOTES.md").as_deref(),
        Some("maintenance window on Friday\n"),
        "the other commit's file is kept"
    );
    let dev = f.report("reports/aro-dev/dev.yaml").expect("dev's report");
    assert!(dev.contains("action: unchanged"), "{dev}");
    assert!(
        dev.contains(&format!("revision: {}", outcome(&second, DEV).revision)),
        "{dev}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_remote_keeps_the_last_good_revision() {
    let f = Fleet::with_remote();
    let first = f.run().await;
    assert!(!first.failed());
    let revision = outcome(&first, DEV).revision.clone();
    let first_reports = f.status_commits();
    assert_eq!(first_reports.len(), 1);

    let moved = f.dir().join("moved.git");
    std::fs::rename(&f.url, &moved).unwrap();
    let second = f.run().await;
    // The revision asked for could not be fetched: the run serves the last good one, and fails.
    assert!(second.failed());
    assert_eq!(second.writes, 0);
    for unit in [DEV, PROD] {
        let o = outcome(&second, unit);
        assert_converged(o);
        assert_eq!(o.revision, revision, "the last good revision");
        let stale = o
            .stale_source
            .as_deref()
            .unwrap_or_else(|| panic!("{unit} says the source is stale"));
        assert!(
            stale.contains(f.url.to_str().unwrap()),
            "the reason names the remote: {stale}"
        );
    }
    assert_eq!(second.report_commit, None, "nowhere to publish to");
    assert_eq!(git::commits(&moved, STATUS_BRANCH), first_reports);

    // Reachable again: fresh; the reports, without a stale note, are those the first run
    // published (the same revision), so nothing is committed.
    std::fs::rename(&moved, &f.url).unwrap();
    let third = f.run().await;
    for unit in [DEV, PROD] {
        let o = outcome(&third, unit);
        assert_converged(o);
        assert_eq!(o.stale_source, None);
    }
    assert_eq!(third.report_commit, None);
    assert_eq!(f.status_commits(), first_reports);
    let dev = f.report("reports/aro-dev/dev.yaml").expect("dev's report");
    assert!(!dev.contains("staleSource"), "{dev}");
}

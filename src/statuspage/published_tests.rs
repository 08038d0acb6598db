use super::*;
use crate::object::ObjectKey;
use crate::report::{ObjectAction, ObjectOutcome, UnitError};
use crate::source::ReportTarget;
use crate::statuspage::feed::tests::outcome;

/// A unit's outcome with an object of each kind of action the page shows, an error and a chain.
fn rich_outcome() -> crate::report::UnitOutcome {
    let mut o = outcome("clusters/dev", "dev", &["the subnet overlaps"]);
    let key = |kind: &str, name: &str| ObjectKey {
        group: "infrastructure.cluster.x-k8s.io".into(),
        version: "v1beta2".into(),
        kind: kind.into(),
        namespace: Some("aro-dev".into()),
        name: name.into(),
    };
    o.objects = vec![
        ObjectOutcome {
            key: key("AROCluster", "dev"),
            action: ObjectAction::Drifted,
            ready: false,
            reason: Some("Drifted".into()),
            message: Some("spec changed".into()),
        },
        ObjectOutcome {
            key: key("AROControlPlane", "dev"),
            action: ObjectAction::Created,
            ready: true,
            reason: None,
            message: None,
        },
    ];
    o.errors.push(
        UnitError::new(
            Some(key("AROCluster", "dev")),
            Some("clusters/dev/aro.yaml".into()),
            "spec.location: not an ARO HCP location".into(),
        )
        .at(Some(3), Some(5)),
    );
    o
}

#[test]
fn a_report_reads_back_as_the_one_written() {
    for o in [
        rich_outcome(),
        outcome("clusters/prod", "prod", &[]),
        crate::report::UnitOutcome {
            held: None,
            cluster: None,
            ..outcome("clusters/broken", "broken", &["bad YAML"])
        },
    ] {
        let written = crate::report::build(&o);
        let yaml = crate::report::to_yaml(&written);
        let value = crate::yaml::from_str(&yaml).expect("YAML");
        assert_eq!(report_of(&value), Some(written), "{yaml}");
    }
}

#[test]
fn what_this_version_does_not_read_is_left_out() {
    let written = crate::report::build(&rich_outcome());
    let value = serde_json::to_value(&written).expect("JSON");
    let mut other = value.clone();
    other["apiVersion"] = "aro-gitops.dev/v9".into();
    assert_eq!(report_of(&other), None, "another apiVersion");
    let mut phase = value.clone();
    phase["phase"] = "Sleeping".into();
    assert_eq!(report_of(&phase), None, "an unknown phase");
    let mut action = value.clone();
    action["objects"][0]["action"] = "teleported".into();
    assert_eq!(report_of(&action), None, "an unknown action");
    assert_eq!(report_of(&serde_json::json!({"phase": "Failed"})), None);
}

/// Commits `files` onto the mirror's remote-tracking status branch.
fn commit(repo: &git2::Repository, files: &[(&str, &str)]) -> git2::Oid {
    let refname = "refs/remotes/origin/aro-gitops/status";
    let parent = repo
        .refname_to_id(refname)
        .ok()
        .map(|o| repo.find_commit(o).unwrap());
    let mut tree = repo
        .treebuilder(parent.as_ref().map(|p| p.tree().unwrap()).as_ref())
        .unwrap();
    // Two levels (`reports/<dir>/<file>`) are enough here.
    let mut dirs: BTreeMap<&str, Vec<(&str, git2::Oid)>> = BTreeMap::new();
    for (path, text) in files {
        let (dir, file) = path
            .strip_prefix("reports/")
            .and_then(|p| p.split_once('/'))
            .unwrap();
        dirs.entry(dir)
            .or_default()
            .push((file, repo.blob(text.as_bytes()).unwrap()));
    }
    let mut reports = repo.treebuilder(None).unwrap();
    for (dir, blobs) in dirs {
        let mut sub = repo.treebuilder(None).unwrap();
        for (file, blob) in blobs {
            sub.insert(file, blob, 0o100644).unwrap();
        }
        reports.insert(dir, sub.write().unwrap(), 0o040000).unwrap();
    }
    tree.insert("reports", reports.write().unwrap(), 0o040000)
        .unwrap();
    let tree = repo.find_tree(tree.write().unwrap()).unwrap();
    let sig =
        git2::Signature::new("t", "t@example.com", &git2::Time::new(1_700_000_000, 0)).unwrap();
    let parents: Vec<_> = parent.iter().collect();
    let oid = repo
        .commit(None, &sig, &sig, "reports", &tree, &parents)
        .unwrap();
    repo.reference(refname, oid, true, "").unwrap();
    oid
}

use std::collections::BTreeMap;

#[test]
fn the_status_branch_is_read_whole_at_its_tip() {
    let dir = tempfile::tempdir().unwrap();
    let repo = git2::Repository::init_bare(dir.path()).unwrap();
    let history = History::new(dir.path().to_path_buf(), ReportTarget::default());
    assert_eq!(history.tip().unwrap(), None, "nothing published yet");
    assert_eq!(history.published().unwrap(), None);
    let dev = crate::report::to_yaml(&crate::report::build(&rich_outcome()));
    let broken = crate::report::build(&crate::report::UnitOutcome {
        held: None,
        cluster: None,
        ..outcome("clusters/broken", "broken", &["bad YAML"])
    });
    let tip = commit(
        &repo,
        &[
            ("reports/aro-dev/dev.yaml", &dev),
            ("reports/aro-dev/dev.md", "# not read"),
            (
                "reports/_units/clusters_broken.yaml",
                &crate::report::to_yaml(&broken),
            ),
            (
                "reports/aro-x/x.yaml",
                "apiVersion: other/v1\nkind: Thing\n",
            ),
        ],
    );
    assert_eq!(history.tip().unwrap(), Some(tip.to_string()));
    let published = history.published().unwrap().expect("published");
    assert_eq!(published.commit, tip.to_string());
    assert_eq!(published.time, 1_700_000_000);
    let units: Vec<(&str, &str)> = published
        .reports
        .iter()
        .map(|r| (r.unit.as_str(), r.phase.as_str()))
        .collect();
    assert_eq!(
        units,
        vec![("clusters/broken", "Failed"), ("clusters/dev", "Failed")]
    );
}

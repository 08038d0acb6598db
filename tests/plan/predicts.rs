//! A plan shows what the run then does (issue 27: both decide through `plan::decide`). A fleet is
//! planned against the embedded control plane, then run once to convergence; every object the
//! run's report lists must have done what the plan said: created, updated, adopted, skipped or
//! left unchanged, deleted, and an object the plan failed must fail in the run. The examples on an
//! empty cluster, then after changes in git and live (an update of an ARO object and what it
//! embeds, a new object adopted from someone else, a `skip`), then after that object left git; and
//! a fleetgen fleet.

use super::live::{CONTACTS_YAML, apply_as_kubectl, contacts};
use super::*;
use std::collections::BTreeMap;
use std::process::Command;

/// What an object does: `created`, `updated`, `unchanged`, `adopted`, `skipped` or `failed`.
type Actions = BTreeMap<String, String>;

/// What the plan (`-o json`, against live) says each object of `unit` does. Unchanged objects are
/// only counted in a plan: they are the rest, checked by number.
fn predicted(plan: &Value, unit: &str) -> (Actions, u64) {
    let c = cluster(plan, unit);
    let mut actions: Actions = changes(c)
        .into_iter()
        .map(|(action, object)| (object, format!("{action}d")))
        .collect();
    for adopted in names_in(c, "adopted") {
        actions.insert(adopted, "adopted".into());
    }
    for effect in entries(c, "policyEffects")
        .iter()
        .filter(|e| e["policy"] == "skip")
    {
        actions.insert(name(&effect["object"]), "skipped".into());
    }
    for error in entries(c, "errors") {
        if let Some(object) = error.get("object") {
            actions.insert(name(object), "failed".into());
        }
    }
    (actions, count(c, "unchanged"))
}

/// `git -C ORIGIN ARGS` on the fleet's origin (where the status branch is), its output.
fn origin_git(f: &Fleet, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(f.state.join("source/origin.git"))
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What the run's reports on the status branch say each object of each unit did.
fn reported(f: &Fleet) -> BTreeMap<String, Actions> {
    let files = origin_git(
        f,
        &[
            "ls-tree",
            "-r",
            "--name-only",
            "aro-gitops/status",
            "reports/",
        ],
    );
    files
        .lines()
        .filter(|path| path.ends_with(".yaml"))
        .map(|path| {
            let text = origin_git(f, &["show", &format!("aro-gitops/status:{path}")]);
            let report: Value = serde_saphyr::from_str(&text).expect("a YAML report");
            let actions = entries(&report, "objects")
                .iter()
                .map(|o| {
                    let kind = o["kind"].as_str().expect("a kind");
                    let name = o["name"].as_str().expect("a name");
                    let action = o["action"].as_str().expect("an action");
                    (format!("{kind}/{name}"), action.to_string())
                })
                .collect();
            (
                report["unit"].as_str().expect("a unit").to_string(),
                actions,
            )
        })
        .collect()
}

/// Plans `f` against its embedded control plane, runs it once, and holds the two together for
/// every unit of `units`.
fn plan_then_run(f: &Fleet, units: &[&str]) -> BTreeMap<String, Actions> {
    let out = f.plan(&["-o", "json"]);
    assert!(out.code == 0 || out.code == 2, "{}", out.all());
    let plan = out.json();
    // Generous: on a loaded machine a fleet takes a while to converge.
    let run = f.aro_gitops(&["run", "--once", "--sim-delay", "0s", "--timeout", "300s"]);
    assert_eq!(run.code, 0, "the run did not converge:\n{}", run.all());
    let reports = reported(f);
    for unit in units {
        let (mut predicted, unchanged) = predicted(&plan, unit);
        let mut left_unchanged = 0;
        for (object, did) in &reports[*unit] {
            let said = predicted.remove(object);
            if said.is_none() && did == "unchanged" {
                left_unchanged += 1;
                continue;
            }
            assert_eq!(
                said.as_deref(),
                Some(did.as_str()),
                "{unit}: {object}: the plan said {said:?}, the run {did}"
            );
        }
        assert!(
            predicted.is_empty(),
            "{unit}: planned, not run: {predicted:?}"
        );
        assert_eq!(left_unchanged, unchanged, "{unit}: unchanged objects");
    }
    reports
}

#[test]
fn a_plan_shows_what_the_run_then_does() {
    let f = Fleet::plain();
    let reports = plan_then_run(&f, &[DEV, PROD]);
    assert_eq!(reports[DEV]["AROCluster/dev"], "created");

    // Changed in git: an ARO object and the ResourceGroup it embeds, a VirtualNetwork put under
    // `skip`, and a new ConfigMap someone created live first.
    f.add_patches(
        DEV,
        "  - target:\n      kind: AROCluster\n    patch: |-\n      - op: add\n        path: /spec/resources/0/spec/tags\n        value: {team: platform}\n      - op: add\n        path: /spec/resources/1/metadata/annotations\n        value: {serviceoperator.azure.com/reconcile-policy: skip}\n",
    );
    f.write("clusters/dev/contacts.yaml", CONTACTS_YAML);
    f.add_resource(DEV, "contacts.yaml");
    apply_as_kubectl(&f, &contacts());
    let reports = plan_then_run(&f, &[DEV, PROD]);
    assert_eq!(reports[DEV]["ConfigMap/fleet-contacts"], "adopted");
    assert_eq!(reports[DEV]["AROCluster/dev"], "updated");

    // Left git: the ConfigMap is deleted (`plan::prune::deletions`, the same for both).
    f.replace(
        &format!("{DEV}/kustomization.yaml"),
        "  - contacts.yaml\n",
        "",
    );
    let reports = plan_then_run(&f, &[DEV, PROD]);
    assert_eq!(reports[DEV]["ConfigMap/fleet-contacts"], "deleted");
}

#[test]
fn a_plan_of_a_generated_fleet_shows_what_the_run_then_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    common::fleet::fleetgen(&repo, &["--clusters", "2", "--seed", "5"]);
    let f = Fleet::at(repo, dir.path().join("state"));
    let units: Vec<String> = std::fs::read_dir(f.repo.join("clusters"))
        .expect("clusters")
        .map(|e| {
            format!(
                "clusters/{}",
                e.expect("an entry").file_name().to_string_lossy()
            )
        })
        .collect();
    let units: Vec<&str> = units.iter().map(String::as_str).collect();
    assert_eq!(units.len(), 2, "{units:?}");
    let reports = plan_then_run(&f, &units);
    assert!(
        reports[units[0]].values().all(|a| a == "created"),
        "{reports:?}"
    );
}

//! The rollout a pull request would take (`plan --base/--head` with head's `rollout:`): the waves
//! with the clusters each changes through what they share, and the clusters whose maintenance
//! window is closed, in the text and in the JSON.

use super::*;

/// Waves `canary` (c00001 by path) then `prod` (by the Cluster's label), and a deny window always
/// in force (two hours from every hour) over c00002 and c00003.
const ROLLOUT: &str = r#"rollout:
  waves:
    - name: canary
      units: ["clusters/c00001"]
    - name: prod
      selector: {matchLabels: {environment: production}}
  maxUnavailable: 1
  windows:
    - kind: deny
      schedule: "0 * * * *"
      duration: 2h
      timeZone: UTC
      units: ["clusters/c00002", "clusters/c00003"]
"#;

/// Four generated clusters (c00001 and c00003 production, c00002 and c00004 staging) with
/// `settings` as `aro-gitops.yaml` at base; head changes the production component (shared by
/// c00001 and c00003) and c00002's own folder. Returns the fleet, base and head.
fn fleet_with_change(settings: &str) -> (Fleet, String, String) {
    let f = Fleet::generated(&["--clusters", "4"]);
    f.write("aro-gitops.yaml", settings);
    let base = f.commit("rollout settings");
    f.replace(
        "components/prod/kustomization.yaml",
        "value: Private",
        "value: Public",
    );
    f.replace(
        "clusters/c00002/kustomization.yaml",
        "clusterName=c00002",
        "clusterName=c00002\n  - note=own-change",
    );
    let head = f.commit("public API for production; a note on c00002");
    (f, base, head)
}

fn units(v: &Value) -> Vec<&str> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|u| u.as_str().expect("a unit"))
        .collect()
}

#[test]
fn a_shared_change_shows_its_waves_and_the_closed_windows() {
    let (f, base, head) = fleet_with_change(ROLLOUT);

    let (code, plan) = f.plan_json(&base, &head, &[]);
    assert_eq!(code, 2, "{plan:#}");
    let rollout = &plan["rollout"];
    let waves = rollout["waves"].as_array().expect("waves");
    let names: Vec<&str> = waves.iter().map(|w| w["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["canary", "prod"], "{rollout:#}");
    assert_eq!(units(&waves[0]["units"]), ["clusters/c00001"]);
    // c00002's change is its own: no wave holds it; c00004 does not change.
    assert_eq!(units(&waves[1]["units"]), ["clusters/c00003"]);
    let waiting: Vec<&str> = rollout["waitingForWindow"]
        .as_array()
        .expect("waitingForWindow")
        .iter()
        .map(|w| {
            assert!(w.get("opensAt").is_none(), "{w:#}");
            w["unit"].as_str().unwrap()
        })
        .collect();
    assert_eq!(waiting, ["clusters/c00002", "clusters/c00003"]);

    let out = f.plan_revs(&base, &head, &[]);
    out.expect_code(2);
    let expected = "rollout: 2 waves\n  wave 1 canary: clusters/c00001\n  wave 2 prod: clusters/c00003\n  \
                    waiting for the maintenance window (no opening within a year): clusters/c00002, clusters/c00003\n";
    assert!(out.stdout.contains(expected), "{}", out.all());

    let md = f.plan_revs(&base, &head, &["--output", "markdown"]);
    assert!(
        md.stdout
            .contains("**Rollout:** 2 waves: 1. `canary` (1 cluster), 2. `prod` (1 cluster)."),
        "{}",
        md.all()
    );
}

#[test]
fn without_rollout_settings_no_rollout_is_shown() {
    let (f, base, head) = fleet_with_change("fleet: rollouts\n");
    let (code, plan) = f.plan_json(&base, &head, &[]);
    assert_eq!(code, 2, "{plan:#}");
    assert!(plan.get("rollout").is_none(), "{plan:#}");
    let out = f.plan_revs(&base, &head, &[]);
    assert!(!out.stdout.contains("rollout:"), "{}", out.all());
}

#[test]
fn a_bad_rollout_at_head_is_an_error_of_the_plan() {
    let (f, base, _) = fleet_with_change(ROLLOUT);
    f.replace("aro-gitops.yaml", "maxUnavailable: 1", "maxUnavailable: 0");
    let head = f.commit("no cluster may apply at once");
    let (code, plan) = f.plan_json(&base, &head, &[]);
    assert_eq!(code, 1, "{plan:#}");
    let message = plan["errors"][0]["message"].as_str().expect("an error");
    assert!(
        message.contains("aro-gitops.yaml") && message.contains("rollout.maxUnavailable"),
        "{message}"
    );
}

#[test]
fn a_change_to_what_every_cluster_shares_goes_through_every_wave() {
    let f = Fleet::generated(&["--clusters", "4"]);
    f.write("aro-gitops.yaml", ROLLOUT);
    let base = f.commit("rollout settings");
    f.replace(
        "cluster-template/cluster.yaml",
        "10.128.0.0/14",
        "10.132.0.0/14",
    );
    let head = f.commit("another pod network for every cluster");

    let (code, plan) = f.plan_json(&base, &head, &[]);
    assert_eq!(code, 2, "{plan:#}");
    let waves: Vec<(&str, Vec<&str>)> = plan["rollout"]["waves"]
        .as_array()
        .expect("waves")
        .iter()
        .map(|w| (w["name"].as_str().unwrap(), units(&w["units"])))
        .collect();
    // The staging clusters are in no wave: they go last, in `rest`.
    assert_eq!(
        waves,
        [
            ("canary", vec!["clusters/c00001"]),
            ("prod", vec!["clusters/c00003"]),
            ("rest", vec!["clusters/c00002", "clusters/c00004"]),
        ]
    );
    let out = f.plan_revs(&base, &head, &[]);
    assert!(
        out.stdout
            .contains("rollout: 3 waves\n  wave 1 canary: clusters/c00001\n  wave 2 prod: clusters/c00003\n  wave 3 rest: clusters/c00002, clusters/c00004\n"),
        "{}",
        out.all()
    );
}

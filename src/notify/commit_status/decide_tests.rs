use super::*;
use crate::object::ObjectKey;
use crate::report::{AzureMode, ObjectAction, ObjectOutcome, Standing, UnitError};

const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

fn outcome(unit: &str, action: ObjectAction, ready: bool) -> UnitOutcome {
    UnitOutcome {
        rendered_at: None,
        held: None,
        unit: unit.into(),
        cluster: None,
        revision: SHA.into(),
        stale_source: None,
        azure: AzureMode::Simulated,
        objects: vec![ObjectOutcome {
            key: ObjectKey {
                group: Default::default(),
                version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: Some("default".into()),
                name: "settings".into(),
            },
            action,
            ready,
            reason: None,
            message: None,
        }],
        errors: vec![],
        standing: Standing::unknown(None),
    }
}

fn converged(unit: &str) -> UnitOutcome {
    outcome(unit, ObjectAction::Created, true)
}

fn progressing(unit: &str) -> UnitOutcome {
    outcome(unit, ObjectAction::Created, false)
}

fn failed(unit: &str, message: &str) -> UnitOutcome {
    let mut o = converged(unit);
    o.errors.push(UnitError::new(
        None,
        Some("clusters/dev/cluster.yaml".into()),
        message.into(),
    ));
    o
}

fn said(statuses: &[Status]) -> Vec<(String, &'static str, String)> {
    statuses
        .iter()
        .map(|s| {
            (
                s.context.clone(),
                s.state.as_str(Host::GitHub),
                s.description.clone(),
            )
        })
        .collect()
}

#[test]
fn a_unit_is_pending_while_it_progresses_success_when_converged_failure_with_its_first_error() {
    assert_eq!(
        unit_state(&progressing("clusters/dev"), false),
        (State::Pending, "reconciling".into())
    );
    assert_eq!(
        unit_state(&converged("clusters/dev"), false),
        (State::Success, "converged".into())
    );
    let (state, text) = unit_state(&failed("clusters/dev", "bad CIDR 10.0.0.0/33"), false);
    assert_eq!(state, State::Failure);
    assert_eq!(
        text,
        "failed: clusters/dev/cluster.yaml: bad CIDR 10.0.0.0/33"
    );
    // The end of a run: what has not converged did not.
    let (state, text) = unit_state(&progressing("clusters/dev"), true);
    assert_eq!(state, State::Failure);
    assert!(text.starts_with("did not converge"), "{text}");
    let mut cut = converged("clusters/dev");
    cut.standing.pass = crate::report::PassState::Interrupted("interrupted: shutdown".into());
    assert_eq!(unit_state(&cut, false).0, State::Error);
    let mut never = converged("clusters/dev");
    never.objects.clear();
    never.standing = Standing::not_started("not started: the deadline passed".into());
    assert_eq!(
        unit_state(&never, false),
        (State::Pending, "reconciling".into())
    );
    assert_eq!(unit_state(&never, true).0, State::Failure);
}

#[test]
fn a_failed_object_speaks_when_the_unit_has_no_error() {
    let mut o = outcome("clusters/dev", ObjectAction::Failed, false);
    o.objects[0].message = Some("admission webhook denied it".into());
    assert_eq!(
        unit_state(&o, false),
        (
            State::Failure,
            "failed: ConfigMap/default/settings: admission webhook denied it".into()
        )
    );
}

#[test]
fn descriptions_are_one_short_redacted_line() {
    let long = "x ".repeat(200);
    let d = description(&long);
    assert_eq!(d.chars().count(), DESCRIPTION_MAX);
    assert!(d.ends_with('…'));
    assert_eq!(description("a\n  b\tc"), "a b c");
    assert_eq!(
        description(r#"clientSecret: "hunter2-value""#),
        r#"clientSecret: "[redacted]""#
    );
}

#[test]
fn the_fleet_fails_with_its_first_failed_unit_and_succeeds_when_all_converged() {
    let mut units = BTreeMap::new();
    units.insert(
        "clusters/a".to_string(),
        (State::Success, "converged".into()),
    );
    units.insert(
        "clusters/b".to_string(),
        (State::Pending, "reconciling".into()),
    );
    assert_eq!(
        fleet_state(&units),
        (State::Pending, "reconciling 2 units".into())
    );
    units.insert(
        "clusters/b".to_string(),
        (State::Success, "converged".into()),
    );
    assert_eq!(
        fleet_state(&units),
        (State::Success, "2 units converged".into())
    );
    units.insert(
        "clusters/c".to_string(),
        (State::Failure, "failed: bad".into()),
    );
    assert_eq!(
        fleet_state(&units),
        (
            State::Failure,
            "1 of 3 failed; clusters/c: failed: bad".into()
        )
    );
}

#[test]
fn per_unit_contexts_go_pending_then_settle_and_nothing_unchanged_is_posted_again() {
    let mut t = Tracker::new(
        Host::GitHub,
        Contexts::Unit,
        Some("https://status.example/"),
    );
    let units = || {
        [
            ("clusters/a".to_string(), None),
            ("clusters/b".to_string(), None),
        ]
    };
    let begun = t.begin(SHA, units());
    assert_eq!(
        said(&begun),
        [
            (
                "aro-gitops/clusters/a".into(),
                "pending",
                "reconciling".into()
            ),
            (
                "aro-gitops/clusters/b".into(),
                "pending",
                "reconciling".into()
            ),
        ]
    );
    assert_eq!(begun[0].sha, SHA);
    assert_eq!(
        begun[0].target_url.as_deref(),
        Some("https://status.example/")
    );
    let done = t.unit(&converged("clusters/a"), false);
    assert_eq!(
        said(&done),
        [(
            "aro-gitops/clusters/a".into(),
            "success",
            "converged".into()
        )]
    );
    assert!(t.unit(&converged("clusters/a"), false).is_empty(), "same");
    // A drift check over the same commit: a settled unit is not turned pending.
    assert!(t.begin(SHA, units()).is_empty());
    assert!(t.unit(&converged("clusters/a"), false).is_empty());
    let f = t.unit(&failed("clusters/b", "boom"), false);
    assert_eq!(f[0].state, State::Failure);
    // A new commit: every unit is pending on it.
    let next = "fedcba9876543210fedcba9876543210fedcba98";
    let begun = t.begin(next, units());
    assert_eq!(begun.len(), 2);
    assert!(
        begun
            .iter()
            .all(|s| s.sha == next && s.state == State::Pending)
    );
}

#[test]
fn one_fleet_context_says_the_aggregate_once_per_change() {
    let mut t = Tracker::new(Host::GitHub, Contexts::Fleet, None);
    let units = || {
        [
            ("clusters/a".to_string(), None),
            ("clusters/b".to_string(), None),
        ]
    };
    assert_eq!(
        said(&t.begin(SHA, units())),
        [("aro-gitops".into(), "pending", "reconciling 2 units".into())]
    );
    assert!(
        t.unit(&converged("clusters/a"), false).is_empty(),
        "no post per unit while the fleet is on its way"
    );
    assert_eq!(
        said(&t.unit(&converged("clusters/b"), false)),
        [("aro-gitops".into(), "success", "2 units converged".into())]
    );
    assert!(t.unit(&converged("clusters/b"), false).is_empty());
    assert!(t.begin(SHA, units()).is_empty());
}

#[test]
fn gitlab_gets_no_second_status_of_the_same_state() {
    let mut t = Tracker::new(Host::GitLab, Contexts::Unit, None);
    t.begin(SHA, [("clusters/a".to_string(), None)]);
    // Pending already: another description of the same state is not posted (GitLab refuses a
    // transition from running to running).
    t.unit(&progressing("clusters/a"), false);
    let mut later = progressing("clusters/a");
    later.objects[0].reason = Some("Waiting".into());
    assert!(t.unit(&later, false).is_empty());
    let done = t.unit(&converged("clusters/a"), false);
    assert_eq!(done[0].state.as_str(Host::GitLab), "success");
    assert_eq!(State::Failure.as_str(Host::GitLab), "failed");
    assert_eq!(State::Pending.as_str(Host::GitLab), "running");
}

#[test]
fn a_commit_failing_before_its_units_fails_on_the_fleet_context() {
    let mut t = Tracker::new(Host::GitHub, Contexts::Unit, None);
    let s = t
        .revision_failed("abc", "failed: aro-gitops.yaml: `fleet` must be a name")
        .expect("a status");
    assert_eq!(
        (s.context.as_str(), s.state, s.description.as_str()),
        (
            "aro-gitops",
            State::Failure,
            "failed: aro-gitops.yaml: `fleet` must be a name"
        )
    );
    assert!(
        t.revision_failed("abc", "failed: aro-gitops.yaml: `fleet` must be a name")
            .is_none()
    );
}

#[test]
fn a_refused_commit_fails_on_the_fleet_context_once() {
    let mut t = Tracker::new(Host::GitHub, Contexts::Unit, Some("https://s.example"));
    let s = t
        .refused("abc", "the commit is not signed")
        .expect("a status");
    assert_eq!(
        (s.context.as_str(), s.state, s.description.as_str()),
        (
            "aro-gitops",
            State::Failure,
            "refused: the commit is not signed"
        )
    );
    assert_eq!(s.target_url.as_deref(), Some("https://s.example/"));
    assert!(t.refused("abc", "the commit is not signed").is_none());
    // One not queued may go again.
    t.forget(&s);
    assert!(t.refused("abc", "the commit is not signed").is_some());
}

#[test]
fn a_unit_links_to_its_clusters_page_from_its_first_status() {
    let mut t = Tracker::new(Host::GitHub, Contexts::Unit, Some("https://s.example"));
    let cluster = ObjectKey {
        group: "cluster.x-k8s.io".into(),
        version: "v1beta1".into(),
        kind: "Cluster".into(),
        namespace: Some("aro-dev".into()),
        name: "dev".into(),
    };
    let begun = t.begin(SHA, [("clusters/dev".to_string(), Some(cluster.clone()))]);
    let page = Some("https://s.example/clusters/aro-dev/dev".to_string());
    assert_eq!(begun[0].target_url, page);
    // Its pass says the same: nothing new to post.
    let mut o = progressing("clusters/dev");
    o.cluster = Some(cluster);
    assert!(t.unit(&o, false).is_empty());
}

//! Tests of [`super`]: a converge's moving state (outcomes, what is settled, wakes, what is kept).

use super::*;
use crate::agent::controller::cache::Change;
use crate::apply::inventory::Identity;
use crate::report::{ObjectOutcome, Standing};
use std::sync::Arc;

fn revision(units: &[&str]) -> Revision {
    let units: Vec<crate::agent::pass::prepare::PreparedUnit> = units
        .iter()
        .map(|u| {
            let unit = crate::unit::Unit { path: u.into() };
            (unit, Err(vec![]))
        })
        .collect();
    Revision::of_units(units)
}

fn round<'r>(rev: &'r Revision, removals: &[&str]) -> Round<'r> {
    let n = rev.units.len();
    let mut queue = WorkQueue::new(crate::retry::UNIT_QUEUE, 1);
    for i in 0..n {
        queue.add(Job::Unit(i));
    }
    Round {
        rev,
        azure: AzureMode::Simulated,
        outcomes: (rev.units.iter())
            .map(|(u, p)| first_outcome(rev, u, p, AzureMode::Simulated))
            .collect(),
        held: vec![false; n],
        done: vec![false; n],
        pending: n,
        ran: vec![false; n],
        inventories: BTreeMap::new(),
        removals: removals.iter().map(|u| u.to_string()).collect(),
        removed_outcomes: BTreeMap::new(),
        queue,
        during_pass: DuringPass::default(),
        began: vec![None; n],
        touched: vec![false; n],
        passes: 0,
        quiet_since: Instant::now(),
    }
}

/// The ConfigMap `default/settings` the tests' units own.
fn settings() -> Identity {
    Identity {
        group: Default::default(),
        kind: "ConfigMap".into(),
        namespace: Some("default".into()),
        name: "settings".into(),
    }
}

/// A preparation of `unit` with no objects.
fn prepared(unit: &crate::unit::Unit) -> Arc<crate::agent::pass::prepare::Prepared> {
    Arc::new(crate::agent::pass::prepare::Prepared {
        unit: unit.clone(),
        objects: vec![],
        deps: vec![],
        order: vec![],
        cluster: None,
        rollout: Default::default(),
    })
}

fn outcome(unit: &str, action: ObjectAction, ready: bool) -> UnitOutcome {
    UnitOutcome {
        rendered_at: None,
        held: None,
        unit: unit.into(),
        cluster: None,
        revision: "0123456789abcdef".into(),
        stale_source: None,
        azure: AzureMode::Simulated,
        objects: vec![ObjectOutcome {
            key: crate::object::ObjectKey {
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

#[test]
fn the_loop_waits_for_the_nearest_of_the_deadline_and_the_next_retry() {
    let now = Instant::now();
    let (s, interval) = (Duration::from_secs(1), Duration::from_secs(30));
    let wait =
        |deadline, past, due, stopping| wait_for(now, deadline, past, due, interval, stopping);
    assert_eq!(
        wait(Some(now + 5 * s), false, Some(now + 2 * s), None),
        2 * s
    );
    assert_eq!(wait(Some(now + 5 * s), false, None, None), 5 * s);
    assert_eq!(wait(None, false, Some(now + 3 * s), None), 3 * s);
    // A retry already due waits for a pass to end: it does not set the wait.
    assert_eq!(wait(None, false, Some(now), None), interval);
    // Past the deadline, only the passes in flight are waited for.
    assert_eq!(wait(Some(now), true, None, None), Duration::from_secs(3600));
    // A stop bounds every wait by its drain deadline.
    let stop = Some((Stop::Shutdown, now + s));
    assert_eq!(wait(None, false, None, stop), s);
}

#[test]
fn a_pass_that_settles_a_unit_takes_it_out_of_the_pending_and_one_that_unsettles_it_puts_it_back() {
    let rev = revision(&["clusters/dev"]);
    let mut round = round(&rev, &[]);
    let job = round.queue.pop(Instant::now()).expect("a unit queued");
    assert_eq!(job, Job::Unit(0));
    let converged = outcome("clusters/dev", ObjectAction::Created, true);
    let inv = Inventory::new("clusters/dev");
    assert_eq!(round.pass_ended(&job, converged, inv), Some(0));
    assert_eq!(
        (round.pending, round.done[0], round.ran[0], round.passes),
        (0, true, true, 1)
    );
    assert!(
        round.inventories.contains_key("clusters/dev"),
        "the inventory is given back"
    );
    assert!(round.all_settled());
    let progressing = outcome("clusters/dev", ObjectAction::Updated, false);
    let inv = Inventory::new("clusters/dev");
    round.pass_ended(&job, progressing, inv);
    assert_eq!((round.pending, round.done[0], round.passes), (1, false, 2));
    assert!(!round.all_settled());
}

#[test]
fn a_change_wakes_the_unit_it_concerns_or_is_held_while_its_pass_runs_and_a_deleting_removal_runs_again()
 {
    let rev = revision(&["clusters/dev"]);
    let mut round = round(&rev, &["clusters/gone"]);
    let id = settings();
    let index = Wakes::new([(0, vec![super::super::wakes::WakeKey::from(&id)])]);
    let changed: BTreeSet<Change> = [Change::Object(id, Some("7".into()))].into();
    // The unit's pass runs: the change is held for when it ends.
    let job = round.queue.pop(Instant::now()).expect("a unit queued");
    round.wake(&changed, &index, &Echoes::default());
    assert!(round.queue.is_active(&job));
    // The removal had no pass yet: any change runs it again.
    assert!(
        round
            .queue
            .has_ready(Instant::now() + Duration::from_secs(1))
    );
    let removal = Job::Removed("clusters/gone".into());
    let deleting = outcome("clusters/gone", ObjectAction::Deleting, false);
    round.queue.pop(Instant::now() + Duration::from_secs(1));
    assert_eq!(
        round.pass_ended(&removal, deleting, Inventory::new("clusters/gone")),
        None
    );
    assert!(round.removed_outcomes.contains_key("clusters/gone"));
    assert!(
        !round.all_settled(),
        "a removal still deleting is not settled"
    );
}

#[test]
fn a_change_to_a_settled_unit_marks_it_touched_unless_it_is_the_agents_own_write() {
    let rev = revision(&["clusters/dev"]);
    let mut round = round(&rev, &[]);
    round.done[0] = true;
    let id = settings();
    let index = Wakes::new([(0, vec![super::super::wakes::WakeKey::from(&id)])]);
    let echoes = Echoes::default();
    echoes.record(&serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "default", "resourceVersion": "7"}}));
    let seen = |rv: &str| [Change::Object(id.clone(), Some(rv.into()))].into();
    round.wake(&seen("7"), &index, &echoes);
    assert!(!round.touched[0], "the echo of its own write");
    round.wake(&seen("8"), &index, &echoes);
    assert!(round.touched[0], "someone else's change");
}

#[test]
fn a_unit_no_pass_reached_is_not_started_not_converged() {
    let rev = revision(&["clusters/dev"]);
    let unit = crate::unit::Unit {
        path: "clusters/dev".into(),
    };
    let prepared = Ok(prepared(&unit));
    let o = first_outcome(&rev, &unit, &prepared, AzureMode::Simulated);
    assert_eq!(report::phase(&o), report::Phase::NotStarted);
    assert_eq!(o.standing.pass.why(), Some(NOT_STARTED));
    // A unit that could not be prepared failed: that is what it says.
    let failed = Err(vec![report::UnitError::new(None, None, "bad".into())]);
    let o = first_outcome(&rev, &unit, &failed, AzureMode::Simulated);
    assert_eq!(report::phase(&o), report::Phase::Failed);
    // A pass that ends replaces it.
    let mut round = round(&rev, &[]);
    let job = round.queue.pop(Instant::now()).expect("a unit queued");
    let converged = outcome("clusters/dev", ObjectAction::Created, true);
    round.pass_ended(&job, converged, Inventory::new("clusters/dev"));
    assert_eq!(report::phase(&round.outcomes[0]), report::Phase::Converged);
}

#[test]
fn an_earlier_outcome_is_kept_while_no_change_touched_its_unit_and_its_judgement_stands() {
    let unit = crate::unit::Unit {
        path: "clusters/dev".into(),
    };

    let mut rev = revision(&[]);
    rev.units = Arc::new(vec![(unit.clone(), Ok(prepared(&unit)))]);
    rev.fleet_units = rev.units.clone();
    let earlier = outcome("clusters/dev", ObjectAction::Created, true);
    assert_eq!(report::phase(&earlier), report::Phase::Converged);
    let kept = |rev: &Revision, earlier: &UnitOutcome, judged: &Judged, touched: bool| {
        let first = first_outcome(rev, &unit, &rev.units[0].1, AzureMode::Simulated);
        let (mut outcomes, mut held) = (vec![first], vec![false]);
        let mut before = vec![earlier.clone()];
        let index = super::super::wakes::Wakes::default();
        keep_earlier(
            rev,
            Some(&mut before),
            (judged, &[touched]),
            &index,
            &mut outcomes,
            &mut held,
        );
        if held[0] {
            // Moved, not copied: the earlier outcome is the unit's now, its place given the
            // first outcome.
            assert_eq!(outcomes[0].objects, earlier.objects);
            assert!(before[0].objects.is_empty());
        }
        held[0]
    };

    // The same commit (a drift check): kept while its last pass is recent and untouched.
    let mut judged = Judged::default();
    assert!(!kept(&rev, &earlier, &judged, false), "never judged here");
    let dev = || "clusters/dev".to_string();
    judged.record([(dev(), Some(Instant::now()), false)]);
    assert!(kept(&rev, &earlier, &judged, false));
    assert!(!kept(&rev, &earlier, &judged, true), "a change touched it");
    let long_ago = Instant::now().checked_sub(super::super::judged::RESYNC);
    if let Some(at) = long_ago {
        judged.record([(dev(), Some(at), false)]);
        assert!(!kept(&rev, &earlier, &judged, false), "its resync came due");
    }

    // A new commit: kept unless rendered again (or touched), however long ago it passed.
    let mut before = earlier.clone();
    before.revision = "fedcba9876543210".into();
    assert!(kept(&rev, &before, &judged, false));
    assert!(!kept(&rev, &before, &judged, true));
    rev.rendered = Arc::new(["clusters/dev".to_string()].into());
    assert!(!kept(&rev, &before, &judged, false), "rendered again");
}

#[test]
fn a_stop_reports_the_units_that_got_no_pass_and_those_cut_short() {
    let rev = revision(&["clusters/dev", "clusters/prod", "clusters/test"]);
    let mut round = round(&rev, &[]);
    round.held[2] = true;
    let mut progress = Progress::new(false, rev.units.iter().map(|(u, _)| u.name()));
    let first = round.queue.pop(Instant::now()).expect("a unit queued");
    assert_eq!(first, Job::Unit(0));
    round.interrupt(Stop::Shutdown, &mut progress);
    let why = |o: &UnitOutcome| o.standing.pass.why().unwrap_or_default().to_string();
    assert!(why(&round.outcomes[0]).starts_with("interrupted: "));
    assert_eq!(
        report::phase(&round.outcomes[0]),
        report::Phase::Interrupted
    );
    let unreconciled = round.not_reconciled(Stop::Shutdown);
    assert_eq!(unreconciled, ["clusters/prod".to_string()].into());
    assert!(why(&round.outcomes[1]).starts_with("not started: "));
    assert_eq!(report::phase(&round.outcomes[1]), report::Phase::NotStarted);
    // Neither is an error: nothing failed, it was not done.
    assert!(round.outcomes[0].errors.is_empty() && round.outcomes[1].errors.is_empty());
    assert!(
        round.outcomes[2].errors.is_empty(),
        "a held unit keeps its outcome"
    );
}

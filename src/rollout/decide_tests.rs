//! The rollout decision, rule by rule, on rollouts built by hand.

use super::*;
use crate::rollout::select::Select;
use crate::rollout::settings::{Budget, Wave, Window, WindowKind};
use chrono::TimeZone;
use std::time::Duration;

const REV: &str = "abc1234def5678";

fn at(h: u32, m: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 29, h, m, 0).unwrap()
}

fn rollout(waves: &[(&str, &str)]) -> Rollout {
    Rollout {
        waves: waves
            .iter()
            .map(|(name, glob)| Wave {
                name: name.to_string(),
                select: Select::Units(vec![glob.to_string()]),
            })
            .collect(),
        max_unavailable: None,
        soak: Duration::ZERO,
        failure_threshold: 0,
        windows: vec![],
        scope: Scope::Shared,
    }
}

/// A deny window over `glob` from midnight UTC for a day.
fn deny_all_day(glob: &str) -> Window {
    Window {
        kind: WindowKind::Deny,
        schedule: "0 0 * * *".into(),
        cron: "0 0 * * *".parse().unwrap(),
        duration: Duration::from_secs(24 * 3600 - 60),
        time_zone: chrono_tz::UTC,
        select: Select::Units(vec![glob.to_string()]),
        self_heal: false,
    }
}

fn unit(path: &str, change: UnitChange, newest: Option<State>) -> UnitInput {
    UnitInput {
        unit: path.into(),
        labels: BTreeMap::new(),
        on: Some("base".into()),
        change,
        newest,
        apply_now: None,
    }
}

fn shared(path: &str) -> UnitInput {
    unit(path, UnitChange::Shared, None)
}

fn converged(path: &str, since: DateTime<Utc>) -> UnitInput {
    unit(path, UnitChange::Shared, Some(State::Converged { since }))
}

fn failed(path: &str) -> UnitInput {
    unit(
        path,
        UnitChange::Shared,
        Some(State::Failed {
            errors: vec!["quota exceeded".into()],
        }),
    )
}

fn verdict<'a>(d: &'a Decision, unit: &str) -> &'a Verdict {
    &d.verdicts[unit]
}

fn wave_hold(wave: &str, after: &str) -> Verdict {
    Verdict::Hold(Hold::Wave {
        wave: wave.into(),
        after: after.into(),
    })
}

fn two_waves() -> Rollout {
    rollout(&[("dev", "clusters/dev*"), ("prod", "clusters/prod*")])
}

#[test]
fn without_settings_every_unit_takes() {
    let units = [shared("clusters/a"), failed("clusters/b")];
    let d = decide(REV, None, &units, None, at(12, 0));
    assert!(d.verdicts.values().all(|v| *v == Verdict::Take));
    assert_eq!((d.view, d.next_check), (None, None));
}

#[test]
fn a_unit_rendering_the_same_takes_and_is_in_no_wave() {
    let units = [
        unit("clusters/dev-1", UnitChange::None, None),
        shared("clusters/prod-1"),
    ];
    let d = decide(REV, Some(&two_waves()), &units, None, at(12, 0));
    assert_eq!(*verdict(&d, "clusters/dev-1"), Verdict::Take);
    let view = d.view.clone().unwrap();
    assert!(view.waves[0].units.is_empty());
    assert_eq!(view.waves[0].state, WaveState::Done);
    assert_eq!(view.current, Some(1));
    assert_eq!(*verdict(&d, "clusters/prod-1"), Verdict::Take);
}

#[test]
fn the_first_wave_rolls_and_the_later_ones_wait() {
    let units = [
        shared("clusters/prod-1"),
        shared("clusters/dev-2"),
        shared("clusters/dev-1"),
    ];
    let d = decide(REV, Some(&two_waves()), &units, None, at(12, 0));
    assert_eq!(*verdict(&d, "clusters/dev-1"), Verdict::Take);
    assert_eq!(*verdict(&d, "clusters/dev-2"), Verdict::Take);
    assert_eq!(*verdict(&d, "clusters/prod-1"), wave_hold("prod", "dev"));
    let view = d.view.clone().unwrap();
    assert_eq!(view.waves[0].units, ["clusters/dev-1", "clusters/dev-2"]);
    assert_eq!(view.waves[0].state, WaveState::Rolling);
    assert_eq!(view.waves[1].state, WaveState::Waiting);
    assert_eq!(view.current, Some(0));
    assert_eq!(view.paused, None);
}

#[test]
fn a_unit_in_no_wave_goes_last_in_rest() {
    let units = [shared("clusters/dev-1"), shared("clusters/edge-1")];
    let d = decide(REV, Some(&two_waves()), &units, None, at(12, 0));
    let view = d.view.clone().unwrap();
    let names: Vec<&str> = view.waves.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["dev", "prod", REST_WAVE]);
    assert_eq!(view.waves[2].units, ["clusters/edge-1"]);
    assert_eq!(*verdict(&d, "clusters/edge-1"), wave_hold(REST_WAVE, "dev"));
}

#[test]
fn no_rest_wave_without_units_in_no_wave() {
    let d = decide(
        REV,
        Some(&two_waves()),
        &[shared("clusters/dev-1")],
        None,
        at(12, 0),
    );
    assert_eq!(d.view.unwrap().waves.len(), 2);
}

#[test]
fn a_unit_goes_in_the_first_wave_selecting_it() {
    let settings = rollout(&[("canary", "clusters/dev-1"), ("dev", "clusters/dev*")]);
    let units = [shared("clusters/dev-1"), shared("clusters/dev-2")];
    let d = decide(REV, Some(&settings), &units, None, at(12, 0));
    let view = d.view.clone().unwrap();
    assert_eq!(view.waves[0].units, ["clusters/dev-1"]);
    assert_eq!(view.waves[1].units, ["clusters/dev-2"]);
}

#[test]
fn a_wave_converged_lets_the_next_start() {
    let units = [
        converged("clusters/dev-1", at(11, 0)),
        shared("clusters/prod-1"),
    ];
    let d = decide(REV, Some(&two_waves()), &units, None, at(12, 0));
    assert_eq!(*verdict(&d, "clusters/dev-1"), Verdict::Take);
    assert_eq!(*verdict(&d, "clusters/prod-1"), Verdict::Take);
    let view = d.view.clone().unwrap();
    assert_eq!(view.waves[0].state, WaveState::Done);
    assert_eq!(view.current, Some(1));
}

#[test]
fn a_progressing_unit_holds_the_next_wave() {
    let units = [
        converged("clusters/dev-1", at(11, 0)),
        unit(
            "clusters/dev-2",
            UnitChange::Shared,
            Some(State::Progressing),
        ),
        shared("clusters/prod-1"),
    ];
    let d = decide(REV, Some(&two_waves()), &units, None, at(12, 0));
    assert_eq!(*verdict(&d, "clusters/dev-2"), Verdict::Take);
    assert_eq!(*verdict(&d, "clusters/prod-1"), wave_hold("prod", "dev"));
}

#[test]
fn a_converged_wave_soaks_before_the_next() {
    let mut settings = two_waves();
    settings.soak = Duration::from_secs(30 * 60);
    let units = [
        converged("clusters/dev-1", at(11, 50)),
        converged("clusters/dev-2", at(11, 40)),
        shared("clusters/prod-1"),
    ];
    let d = decide(REV, Some(&settings), &units, None, at(12, 0));
    assert_eq!(*verdict(&d, "clusters/prod-1"), wave_hold("prod", "dev"));
    let view = d.view.clone().unwrap();
    assert_eq!(
        view.waves[0].state,
        WaveState::Soaking { until: at(12, 20) }
    );
    assert_eq!(view.current, Some(0));
    assert_eq!(d.next_check, Some(at(12, 20)));
    // Once soaked, the next wave starts.
    let d = decide(REV, Some(&settings), &units, None, at(12, 20));
    assert_eq!(*verdict(&d, "clusters/prod-1"), Verdict::Take);
    assert_eq!(d.next_check, None);
}

#[test]
fn max_unavailable_admits_in_path_order() {
    let mut settings = rollout(&[("dev", "clusters/dev*")]);
    settings.max_unavailable = Some(Budget::Count(2));
    let units = [
        shared("clusters/dev-4"),
        unit(
            "clusters/dev-1",
            UnitChange::Shared,
            Some(State::Progressing),
        ),
        shared("clusters/dev-3"),
        shared("clusters/dev-2"),
        converged("clusters/dev-5", at(11, 0)),
    ];
    let d = decide(REV, Some(&settings), &units, None, at(12, 0));
    assert_eq!(*verdict(&d, "clusters/dev-2"), Verdict::Take);
    let budget = Verdict::Hold(Hold::Budget {
        wave: "dev".into(),
        max: 2,
    });
    assert_eq!(*verdict(&d, "clusters/dev-3"), budget);
    assert_eq!(*verdict(&d, "clusters/dev-4"), budget);
    assert_eq!(*verdict(&d, "clusters/dev-5"), Verdict::Take);
}

#[test]
fn a_percentage_budget_counts_the_waves_changed_units() {
    let mut settings = rollout(&[]);
    settings.max_unavailable = Some(Budget::Percent(50));
    let units: Vec<UnitInput> = (1..=4)
        .map(|i| shared(&format!("clusters/c-{i}")))
        .collect();
    let d = decide(REV, Some(&settings), &units, None, at(12, 0));
    let taking = d.verdicts.values().filter(|v| **v == Verdict::Take).count();
    assert_eq!(taking, 2);
}

#[test]
fn a_failure_pauses_the_rollout() {
    let units = [
        failed("clusters/dev-1"),
        shared("clusters/dev-2"),
        converged("clusters/dev-3", at(11, 0)),
        shared("clusters/prod-1"),
        unit("clusters/prod-2", UnitChange::Own, None),
    ];
    let d = decide(REV, Some(&two_waves()), &units, None, at(12, 0));
    let paused = Verdict::Hold(Hold::Paused {
        revision: REV.into(),
        wave: "dev".into(),
    });
    assert_eq!(*verdict(&d, "clusters/dev-1"), Verdict::Take);
    assert_eq!(*verdict(&d, "clusters/dev-2"), paused);
    assert_eq!(*verdict(&d, "clusters/dev-3"), Verdict::Take);
    assert_eq!(*verdict(&d, "clusters/prod-1"), paused);
    // A change of its own does not pass a pause either.
    assert_eq!(*verdict(&d, "clusters/prod-2"), paused);
    let view = d.view.clone().unwrap();
    assert_eq!(view.waves[0].state, WaveState::Paused);
    assert_eq!(view.waves[1].state, WaveState::Waiting);
    assert_eq!(view.current, Some(0));
    assert_eq!(
        view.paused,
        Some(Paused {
            wave: "dev".into(),
            failing: vec![("clusters/dev-1".into(), vec!["quota exceeded".into()])],
        })
    );
}

#[test]
fn failures_up_to_the_threshold_do_not_pause() {
    let mut settings = two_waves();
    settings.failure_threshold = 1;
    let units = [failed("clusters/dev-1"), shared("clusters/dev-2")];
    let d = decide(REV, Some(&settings), &units, None, at(12, 0));
    assert_eq!(*verdict(&d, "clusters/dev-2"), Verdict::Take);
    assert_eq!(d.view.unwrap().paused, None);
    let units = [
        failed("clusters/dev-1"),
        failed("clusters/dev-2"),
        shared("clusters/dev-3"),
    ];
    let d = decide(REV, Some(&settings), &units, None, at(12, 0));
    assert!(matches!(
        d.verdicts["clusters/dev-3"],
        Verdict::Hold(Hold::Paused { .. })
    ));
}

#[test]
fn a_failed_unit_uses_the_budget() {
    let mut settings = rollout(&[("dev", "clusters/dev*")]);
    settings.max_unavailable = Some(Budget::Count(1));
    settings.failure_threshold = 1;
    let units = [failed("clusters/dev-1"), shared("clusters/dev-2")];
    let d = decide(REV, Some(&settings), &units, None, at(12, 0));
    assert!(matches!(
        d.verdicts["clusters/dev-2"],
        Verdict::Hold(Hold::Budget { .. })
    ));
}

#[test]
fn a_resume_of_the_revision_forgives_its_failures() {
    let units = [
        failed("clusters/dev-1"),
        converged("clusters/dev-2", at(11, 0)),
        shared("clusters/prod-1"),
    ];
    let resume = Resume {
        revision: REV.into(),
        forgiven: ["clusters/dev-1".to_string()].into(),
    };
    let d = decide(REV, Some(&two_waves()), &units, Some(&resume), at(12, 0));
    assert_eq!(*verdict(&d, "clusters/prod-1"), Verdict::Take);
    let view = d.view.clone().unwrap();
    assert_eq!((view.paused, view.waves[0].state), (None, WaveState::Done));
    // A resume of another revision does not.
    let other = Resume {
        revision: "fff0000".into(),
        ..resume
    };
    let d = decide(REV, Some(&two_waves()), &units, Some(&other), at(12, 0));
    assert!(d.view.unwrap().paused.is_some());
}

#[test]
fn a_new_failure_after_a_resume_pauses_again() {
    let units = [failed("clusters/dev-1"), failed("clusters/dev-2")];
    let resume = Resume {
        revision: REV.into(),
        forgiven: ["clusters/dev-1".to_string()].into(),
    };
    let d = decide(REV, Some(&two_waves()), &units, Some(&resume), at(12, 0));
    let failing = d.view.unwrap().paused.unwrap().failing;
    assert_eq!(failing.len(), 1);
    assert_eq!(failing[0].0, "clusters/dev-2");
}

#[test]
fn own_changes_pass_waves_but_all_scope_holds_them() {
    let units = [
        shared("clusters/dev-1"),
        unit("clusters/prod-1", UnitChange::Own, None),
    ];
    let d = decide(REV, Some(&two_waves()), &units, None, at(12, 0));
    assert_eq!(*verdict(&d, "clusters/prod-1"), Verdict::Take);
    assert!(d.view.unwrap().waves[1].units.is_empty());
    let mut all = two_waves();
    all.scope = Scope::All;
    let d = decide(REV, Some(&all), &units, None, at(12, 0));
    assert_eq!(*verdict(&d, "clusters/prod-1"), wave_hold("prod", "dev"));
}

#[test]
fn only_own_changes_show_no_rollout() {
    let units = [unit("clusters/prod-1", UnitChange::Own, None)];
    let d = decide(REV, Some(&two_waves()), &units, None, at(12, 0));
    assert_eq!(*verdict(&d, "clusters/prod-1"), Verdict::Take);
    assert_eq!(d.view, None);
}

#[test]
fn a_closed_window_holds_a_unit_about_to_take_a_change() {
    let mut settings = two_waves();
    settings.windows = vec![deny_all_day("clusters/dev-1")];
    let units = [
        shared("clusters/dev-1"),
        shared("clusters/dev-2"),
        unit("clusters/dev-3", UnitChange::Own, None),
    ];
    settings.windows.push(deny_all_day("clusters/dev-3"));
    let d = decide(REV, Some(&settings), &units, None, at(12, 0));
    let opens = Utc.with_ymd_and_hms(2026, 11, 29, 23, 59, 0).unwrap();
    let window = Verdict::Hold(Hold::Window {
        opens_at: Some(opens),
    });
    assert_eq!(*verdict(&d, "clusters/dev-1"), window);
    assert_eq!(*verdict(&d, "clusters/dev-2"), Verdict::Take);
    assert_eq!(*verdict(&d, "clusters/dev-3"), window);
    assert_eq!(d.next_check, Some(opens));
    let view = d.view.clone().unwrap();
    assert_eq!(
        view.waiting_for_window,
        [
            ("clusters/dev-1".to_string(), Some(opens)),
            ("clusters/dev-3".to_string(), Some(opens))
        ]
    );
}

#[test]
fn a_unit_held_by_a_window_leaves_the_budget_to_others() {
    let mut settings = rollout(&[("dev", "clusters/dev*")]);
    settings.max_unavailable = Some(Budget::Count(1));
    settings.windows = vec![deny_all_day("clusters/dev-1")];
    let units = [shared("clusters/dev-1"), shared("clusters/dev-2")];
    let d = decide(REV, Some(&settings), &units, None, at(12, 0));
    assert!(matches!(
        d.verdicts["clusters/dev-1"],
        Verdict::Hold(Hold::Window { .. })
    ));
    assert_eq!(*verdict(&d, "clusters/dev-2"), Verdict::Take);
}

#[test]
fn apply_now_naming_the_revision_passes_the_window() {
    let mut settings = two_waves();
    settings.windows = vec![deny_all_day("clusters/*")];
    let mut u = shared("clusters/dev-1");
    u.apply_now = Some("abc1234".into());
    let mut other = shared("clusters/dev-2");
    other.apply_now = Some("0001111".into());
    let d = decide(REV, Some(&settings), &[u, other], None, at(12, 0));
    assert_eq!(*verdict(&d, "clusters/dev-1"), Verdict::Take);
    assert!(matches!(
        d.verdicts["clusters/dev-2"],
        Verdict::Hold(Hold::Window { .. })
    ));
}

#[test]
fn units_of_a_waiting_wave_show_their_closed_window() {
    let mut settings = two_waves();
    settings.windows = vec![deny_all_day("clusters/prod*")];
    let units = [shared("clusters/dev-1"), shared("clusters/prod-1")];
    let d = decide(REV, Some(&settings), &units, None, at(12, 0));
    // Held by its wave first.
    assert_eq!(*verdict(&d, "clusters/prod-1"), wave_hold("prod", "dev"));
    let view = d.view.clone().unwrap();
    assert_eq!(view.waiting_for_window.len(), 1);
    assert_eq!(view.waiting_for_window[0].0, "clusters/prod-1");
    // Not a reason to decide again: the wave is.
    assert_eq!(d.next_check, None);
}

#[test]
fn a_unit_on_the_revision_keeps_it_even_in_a_closed_window() {
    let mut settings = two_waves();
    settings.windows = vec![deny_all_day("clusters/*")];
    let units = [unit(
        "clusters/prod-1",
        UnitChange::Shared,
        Some(State::Progressing),
    )];
    let d = decide(REV, Some(&settings), &units, None, at(12, 0));
    assert_eq!(*verdict(&d, "clusters/prod-1"), Verdict::Take);
}

#[test]
fn every_wave_done_has_no_current_wave() {
    let units = [
        converged("clusters/dev-1", at(11, 0)),
        converged("clusters/prod-1", at(11, 0)),
    ];
    let d = decide(REV, Some(&two_waves()), &units, None, at(12, 0));
    let view = d.view.clone().unwrap();
    assert_eq!(view.current, None);
    assert!(view.waves.iter().all(|w| w.state == WaveState::Done));
}

#[test]
fn holds_say_why_in_the_users_words() {
    let cases = [
        (
            Hold::Wave {
                wave: "prod".into(),
                after: "dev".into(),
            },
            "waiting for wave dev to converge",
        ),
        (
            Hold::Budget {
                wave: "dev".into(),
                max: 2,
            },
            "waiting: 2 of wave dev already applying (maxUnavailable 2)",
        ),
        (
            Hold::Paused {
                revision: REV.into(),
                wave: "dev".into(),
            },
            "rollout paused at wave dev (revision abc1234)",
        ),
        (
            Hold::Window {
                opens_at: Some(Utc.with_ymd_and_hms(2026, 11, 30, 0, 0, 0).unwrap()),
            },
            "waiting for the maintenance window (opens at 2026-11-30 00:00 UTC)",
        ),
        (
            Hold::Window { opens_at: None },
            "waiting for the maintenance window (no opening within a year)",
        ),
    ];
    for (hold, message) in cases {
        assert_eq!(hold.message(), message);
    }
}

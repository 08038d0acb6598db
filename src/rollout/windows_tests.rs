use super::*;
use crate::rollout::Rollout;
use chrono::TimeZone;

/// The windows of a `rollout.windows` list written in YAML flow style, one per entry.
fn windows(entries: &[&str]) -> Vec<Window> {
    let yaml = format!(
        "rollout:\n  windows:\n{}",
        entries
            .iter()
            .map(|e| format!("    - {e}\n"))
            .collect::<String>()
    );
    let doc = crate::yaml::from_str(&yaml).unwrap();
    Rollout::parse(doc.get("rollout"))
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap()
        .windows
}

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn at(w: &[Window], path: &str, now: &str) -> Gate {
    gate(w, path, &BTreeMap::new(), utc(now), false)
}

fn opens(s: &str) -> Gate {
    Gate::Closed {
        opens_at: Some(utc(s)),
    }
}

#[test]
fn no_window_is_open() {
    assert_eq!(at(&[], "clusters/a", "2026-11-29T12:00:00Z"), Gate::Open);
}

#[test]
fn a_daily_24h_deny_window_holds_what_it_selects_for_good() {
    let w = windows(&[
        "{kind: deny, schedule: '0 0 * * *', duration: 24h, timeZone: UTC, units: ['clusters/prod*']}",
    ]);
    let closed = Gate::Closed { opens_at: None };
    assert_eq!(at(&w, "clusters/prod-1", "2026-11-29T00:00:00Z"), closed);
    assert_eq!(at(&w, "clusters/prod-1", "2026-11-29T23:59:59Z"), closed);
    assert_eq!(at(&w, "clusters/dev-1", "2026-11-29T12:00:00Z"), Gate::Open);
}

#[test]
fn an_allow_window_opens_and_closes_on_schedule() {
    let w = windows(&["{kind: allow, schedule: '0 2 * * *', duration: 2h}"]);
    assert_eq!(
        at(&w, "clusters/a", "2026-11-29T01:00:00Z"),
        opens("2026-11-29T02:00:00Z")
    );
    assert_eq!(at(&w, "clusters/a", "2026-11-29T02:00:00Z"), Gate::Open);
    assert_eq!(at(&w, "clusters/a", "2026-11-29T03:59:59Z"), Gate::Open);
    // The end is not in the window.
    assert_eq!(
        at(&w, "clusters/a", "2026-11-29T04:00:00Z"),
        opens("2026-11-30T02:00:00Z")
    );
}

#[test]
fn a_window_longer_than_its_period_looks_back_far_enough() {
    // Every Saturday for two days: Sunday noon is still inside.
    let w = windows(&["{kind: deny, schedule: '0 0 * * 6', duration: 48h}"]);
    // 2026-11-29 is a Sunday.
    assert_eq!(
        at(&w, "clusters/a", "2026-11-29T12:00:00Z"),
        opens("2026-11-30T00:00:00Z")
    );
    assert_eq!(at(&w, "clusters/a", "2026-11-30T00:00:00Z"), Gate::Open);
    // Daily for 36h: openings overlap into one that never ends.
    let w = windows(&["{kind: deny, schedule: '0 0 * * *', duration: 36h}"]);
    assert_eq!(
        at(&w, "clusters/a", "2026-11-29T12:00:00Z"),
        Gate::Closed { opens_at: None }
    );
}

#[test]
fn deny_wins_and_the_gate_opens_when_the_deny_ends_inside_an_allow() {
    let w = windows(&[
        "{kind: allow, schedule: '0 0 * * *', duration: 6h}",
        "{kind: deny, schedule: '0 2 * * *', duration: 2h}",
    ]);
    assert_eq!(at(&w, "clusters/a", "2026-11-29T01:00:00Z"), Gate::Open);
    assert_eq!(
        at(&w, "clusters/a", "2026-11-29T02:30:00Z"),
        opens("2026-11-29T04:00:00Z")
    );
    assert_eq!(at(&w, "clusters/a", "2026-11-29T05:00:00Z"), Gate::Open);
    assert_eq!(
        at(&w, "clusters/a", "2026-11-29T07:00:00Z"),
        opens("2026-11-30T00:00:00Z")
    );
    // A deny reaching past the allow: the next allow without a deny in force.
    let w = windows(&[
        "{kind: allow, schedule: '0 0 * * *', duration: 2h}",
        "{kind: deny, schedule: '0 1 * * 0', duration: 50h}",
    ]);
    // Sunday 01:30: the deny runs to Tuesday 03:00, past Monday's and Tuesday's allows.
    assert_eq!(
        at(&w, "clusters/a", "2026-11-29T01:30:00Z"),
        opens("2026-12-02T00:00:00Z")
    );
}

#[test]
fn allow_windows_of_other_units_do_not_close_this_one() {
    let w = windows(&[
        "{kind: allow, schedule: '0 2 * * *', duration: 1h, selector: {matchLabels: {env: prod}}}",
    ]);
    assert_eq!(at(&w, "clusters/dev", "2026-11-29T12:00:00Z"), Gate::Open);
    let prod: BTreeMap<String, String> = [("env".into(), "prod".into())].into();
    assert_eq!(
        gate(&w, "clusters/x", &prod, utc("2026-11-29T12:00:00Z"), false),
        opens("2026-11-30T02:00:00Z")
    );
}

#[test]
fn drift_passes_self_healing_windows() {
    let w = windows(&[
        "{kind: deny, schedule: '0 0 * * *', duration: 12h, selfHeal: true}",
        "{kind: allow, schedule: '0 20 * * *', duration: 1h, selfHeal: true}",
    ]);
    let now = utc("2026-11-29T06:00:00Z");
    let none = BTreeMap::new();
    assert_eq!(
        gate(&w, "clusters/a", &none, now, false),
        opens("2026-11-29T20:00:00Z")
    );
    assert_eq!(gate(&w, "clusters/a", &none, now, true), Gate::Open);
    let strict = windows(&["{kind: deny, schedule: '0 0 * * *', duration: 12h}"]);
    assert_eq!(
        gate(&strict, "clusters/a", &none, now, true),
        opens("2026-11-29T12:00:00Z")
    );
}

#[test]
fn windows_follow_their_time_zone_across_daylight_saving() {
    let w =
        windows(&["{kind: allow, schedule: '0 1 * * *', duration: 2h, timeZone: Europe/Berlin}"]);
    // Winter (CET, UTC+1): 01:00 local is 00:00 UTC.
    assert_eq!(
        at(&w, "clusters/a", "2026-01-10T23:30:00Z"),
        opens("2026-01-11T00:00:00Z")
    );
    // The night the clocks go forward (2026-03-29 02:00 CET): 01:00 is still CET.
    assert_eq!(
        at(&w, "clusters/a", "2026-03-28T23:30:00Z"),
        opens("2026-03-29T00:00:00Z")
    );
    // The night after, 01:00 CEST is 23:00 UTC the day before.
    assert_eq!(at(&w, "clusters/a", "2026-03-29T23:30:00Z"), Gate::Open);
    assert_eq!(
        at(&w, "clusters/a", "2026-03-29T22:30:00Z"),
        opens("2026-03-29T23:00:00Z")
    );
    // And back in autumn (2026-10-25 03:00 CEST becomes 02:00 CET).
    assert_eq!(
        at(&w, "clusters/a", "2026-10-24T22:30:00Z"),
        opens("2026-10-24T23:00:00Z")
    );
    // 02:30 CET, after the repeated hour: closed until 01:00 CET, 00:00 UTC.
    assert_eq!(
        at(&w, "clusters/a", "2026-10-25T01:30:00Z"),
        opens("2026-10-26T00:00:00Z")
    );
    assert_eq!(at(&w, "clusters/a", "2026-10-26T00:30:00Z"), Gate::Open);
}

#[test]
fn a_24h_deny_in_a_time_zone_ends_at_local_midnight() {
    // Sundays, all day in Berlin.
    let w =
        windows(&["{kind: deny, schedule: '0 0 * * 0', duration: 24h, timeZone: Europe/Berlin}"]);
    // Sunday 2026-11-29 noon in Berlin (CET): held until Monday 00:00 CET, Sunday 23:00 UTC.
    let noon = chrono_tz::Europe::Berlin
        .with_ymd_and_hms(2026, 11, 29, 12, 0, 0)
        .unwrap()
        .with_timezone(&Utc);
    assert_eq!(
        gate(&w, "clusters/a", &BTreeMap::new(), noon, false),
        opens("2026-11-29T23:00:00Z")
    );
    // Saturday 23:30 UTC is already Sunday 00:30 in Berlin.
    assert_eq!(
        at(&w, "clusters/a", "2026-11-28T23:30:00Z"),
        opens("2026-11-29T23:00:00Z")
    );
    assert_eq!(at(&w, "clusters/a", "2026-11-28T22:30:00Z"), Gate::Open);
}

#[test]
fn minute_schedules_stay_correct_and_bounded() {
    // Open 30 s of every minute's start denied.
    let w = windows(&["{kind: deny, schedule: '* * * * *', duration: 30s}"]);
    assert_eq!(
        at(&w, "clusters/a", "2026-11-29T12:00:10Z"),
        opens("2026-11-29T12:00:30Z")
    );
    // Denied always: no opening within the year, found without visiting every minute.
    let w = windows(&["{kind: deny, schedule: '* * * * *', duration: 1h}"]);
    assert_eq!(
        at(&w, "clusters/a", "2026-11-29T12:00:10Z"),
        Gate::Closed { opens_at: None }
    );
    let w = windows(&["{kind: allow, schedule: '* * * * *', duration: 1m}"]);
    assert_eq!(at(&w, "clusters/a", "2026-11-29T12:00:10Z"), Gate::Open);
}

#[test]
fn a_yearly_window_is_found_within_the_year() {
    let w = windows(&["{kind: allow, schedule: '0 0 1 1 *', duration: 24h}"]);
    assert_eq!(
        at(&w, "clusters/a", "2026-01-02T00:00:00Z"),
        opens("2027-01-01T00:00:00Z")
    );
}

#[test]
fn the_next_transition_is_when_a_window_starts_or_ends() {
    let w = windows(&["{kind: allow, schedule: '0 2 * * *', duration: 2h}"]);
    let none = BTreeMap::new();
    let next = |now: &str| next_transition(&w, "clusters/a", &none, utc(now), false);
    assert_eq!(
        next("2026-11-29T03:00:00Z"),
        Some(utc("2026-11-29T04:00:00Z"))
    );
    assert_eq!(
        next("2026-11-29T05:00:00Z"),
        Some(utc("2026-11-30T02:00:00Z"))
    );
    assert_eq!(
        next_transition(&[], "clusters/a", &none, utc("2026-11-29T05:00:00Z"), false),
        None
    );
}

/// A start in the hour the clocks skip opens when the clocks reach it; a start in the hour they
/// repeat opens once, the first time.
#[test]
fn starts_in_skipped_or_repeated_hours_open_once() {
    let w =
        windows(&["{kind: allow, schedule: '30 2 * * *', duration: 1h, timeZone: Europe/Berlin}"]);
    // 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00 UTC).
    assert_eq!(
        at(&w, "clusters/a", "2026-03-28T23:00:00Z"),
        opens("2026-03-29T01:00:00Z")
    );
    assert_eq!(at(&w, "clusters/a", "2026-03-29T01:30:00Z"), Gate::Open);
    // 2026-10-25: 03:00 CEST goes back to 02:00 CET; 02:30 CEST is 00:30 UTC.
    assert_eq!(
        at(&w, "clusters/a", "2026-10-24T23:00:00Z"),
        opens("2026-10-25T00:30:00Z")
    );
    assert_eq!(at(&w, "clusters/a", "2026-10-25T00:45:00Z"), Gate::Open);
    // 02:45 CET, the second time round: the opening of 02:30 CEST has ended.
    assert_eq!(
        at(&w, "clusters/a", "2026-10-25T01:45:00Z"),
        opens("2026-10-26T01:30:00Z")
    );
}

use super::super::{Budget, Rollout, Scope, SettingsError, WindowKind};
use super::one_edit_apart;
use crate::rollout::Select;
use std::collections::BTreeMap;
use std::time::Duration;

fn parse(yaml: &str) -> Result<Option<Rollout>, SettingsError> {
    let doc = crate::yaml::from_str(yaml).expect("YAML");
    Rollout::parse(doc.get("rollout"))
}

fn rollout(yaml: &str) -> Rollout {
    parse(yaml)
        .unwrap_or_else(|e| panic!("{e}"))
        .expect("a rollout")
}

/// The error of a `rollout:` section written under `rollout:` (indented by the caller).
fn fails(body: &str) -> SettingsError {
    match parse(&format!("rollout:\n{body}")) {
        Err(e) => e,
        Ok(_) => panic!("parsed:\n{body}"),
    }
}

#[test]
fn the_issue_example_parses() {
    let r = rollout(
        r#"
units: [clusters/dev]
rollout:
  waves:
    - name: dev
      units: ["clusters/dev*"]
    - name: prod
      selector: {matchLabels: {env: prod}}
  maxUnavailable: 25%
  soak: 0s
  failureThreshold: 0
  windows:
    - kind: deny
      schedule: "0 0 * * *"
      duration: 24h
      timeZone: UTC
      units: ["clusters/prod*"]
"#,
    );
    assert_eq!(
        r.waves.iter().map(|w| w.name.as_str()).collect::<Vec<_>>(),
        ["dev", "prod"]
    );
    assert_eq!(
        r.waves[0].select,
        Select::Units(vec!["clusters/dev*".into()])
    );
    let prod: BTreeMap<String, String> = [("env".into(), "prod".into())].into();
    assert!(r.waves[1].select.selects("clusters/x", &prod));
    assert!(!r.waves[1].select.selects("clusters/x", &BTreeMap::new()));
    assert_eq!(r.max_unavailable, Some(Budget::Percent(25)));
    assert_eq!(r.soak, Duration::ZERO);
    assert_eq!(r.failure_threshold, 0);
    assert_eq!(r.scope, Scope::Shared);
    let w = &r.windows[0];
    assert_eq!(w.kind, WindowKind::Deny);
    assert_eq!(w.schedule, "0 0 * * *");
    assert_eq!(w.duration, Duration::from_secs(24 * 3600));
    assert_eq!(w.time_zone, chrono_tz::UTC);
    assert!(!w.self_heal);
    assert!(w.select.selects("clusters/prod-1", &BTreeMap::new()));
}

#[test]
fn absent_or_null_is_none_and_defaults_fill_in() {
    assert!(parse("units: [a]\n").unwrap().is_none());
    assert!(parse("rollout:\n").unwrap().is_none());
    let r = rollout("rollout: {}\n");
    assert!(r.waves.is_empty() && r.windows.is_empty());
    assert_eq!(r.max_unavailable, None);
    assert_eq!(r.soak, Duration::ZERO);
    assert_eq!(r.failure_threshold, 0);
    assert_eq!(r.scope, Scope::Shared);
}

#[test]
fn budgets_durations_counts_and_scope() {
    for (text, want) in [
        ("3", Budget::Count(3)),
        ("\"2\"", Budget::Count(2)),
        ("100%", Budget::Percent(100)),
        ("1%", Budget::Percent(1)),
    ] {
        let r = rollout(&format!("rollout:\n  maxUnavailable: {text}\n"));
        assert_eq!(r.max_unavailable, Some(want), "{text}");
    }
    for (text, want) in [
        ("0s", 0),
        ("0", 0),
        ("90s", 90),
        ("10m", 600),
        ("1h30m", 5400),
        ("24h", 86400),
    ] {
        let r = rollout(&format!("rollout:\n  soak: {text}\n"));
        assert_eq!(r.soak, Duration::from_secs(want), "{text}");
    }
    let r = rollout("rollout:\n  failureThreshold: 2\n  scope: all\n");
    assert_eq!((r.failure_threshold, r.scope), (2, Scope::All));
}

#[test]
fn bad_values_name_the_field_and_say_what_is_wrong() {
    for (body, field, says) in [
        (
            "  maxUnavailable: 0\n",
            "rollout.maxUnavailable",
            "1 or more",
        ),
        (
            "  maxUnavailable: 0%\n",
            "rollout.maxUnavailable",
            "1% to 100%",
        ),
        (
            "  maxUnavailable: 101%\n",
            "rollout.maxUnavailable",
            "\"101%\"",
        ),
        ("  maxUnavailable: -1\n", "rollout.maxUnavailable", "not -1"),
        (
            "  maxUnavailable: lots\n",
            "rollout.maxUnavailable",
            "\"lots\"",
        ),
        ("  soak: 10\n", "rollout.soak", "with its unit"),
        ("  soak: soon\n", "rollout.soak", "not a duration"),
        (
            "  failureThreshold: -1\n",
            "rollout.failureThreshold",
            "0 or more",
        ),
        (
            "  failureThreshold: 1.5\n",
            "rollout.failureThreshold",
            "whole number",
        ),
        ("  scope: some\n", "rollout.scope", "shared"),
        ("  waves: {}\n", "rollout.waves", "list of waves"),
        ("  windows: daily\n", "rollout.windows", "list of windows"),
    ] {
        let e = fails(body);
        assert_eq!(e.field, field, "{body}: {e}");
        assert!(e.message.contains(says), "{body}: {e}");
    }
    assert!(
        parse("rollout: [a]\n")
            .unwrap_err()
            .to_string()
            .starts_with("rollout: must be a mapping")
    );
}

#[test]
fn waves_need_a_unique_name_and_one_selection() {
    for (body, field, says) in [
        (
            "  waves: [{units: [a]}]\n",
            "rollout.waves[0].name",
            "is missing",
        ),
        (
            "  waves: [{name: '', units: [a]}]\n",
            "rollout.waves[0].name",
            "non-empty",
        ),
        (
            "  waves: [{name: a, units: [a]}, {name: a, units: [b]}]\n",
            "rollout.waves[1].name",
            "named twice",
        ),
        (
            "  waves: [{name: rest, units: [a]}]\n",
            "rollout.waves[0].name",
            "implicit last wave",
        ),
        (
            "  waves: [{name: a}]\n",
            "rollout.waves[0]",
            "selects no units",
        ),
        (
            "  waves: [{name: a, units: [a], selector: {matchLabels: {a: b}}}]\n",
            "rollout.waves[0]",
            "both units and selector",
        ),
        (
            "  waves: [{name: a, units: []}]\n",
            "rollout.waves[0].units",
            "lists no globs",
        ),
        (
            "  waves: [{name: a, units: clusters/a}]\n",
            "rollout.waves[0].units",
            "list of path globs",
        ),
        (
            "  waves: [{name: a, units: [1]}]\n",
            "rollout.waves[0].units[0]",
            "path glob",
        ),
        (
            "  waves: [{name: a, units: [/abs]}]\n",
            "rollout.waves[0].units[0]",
            "absolute",
        ),
        (
            "  waves: [{name: a, units: ['a/[0-9]']}]\n",
            "rollout.waves[0].units[0]",
            "do not support",
        ),
        (
            "  waves: [{name: a, unit: [a]}]\n",
            "rollout.waves[0].unit",
            "did you mean units?",
        ),
        ("  waves: [a]\n", "rollout.waves[0]", "must be a mapping"),
    ] {
        let e = fails(body);
        assert_eq!(e.field, field, "{body}: {e}");
        assert!(e.message.contains(says), "{body}: {e}");
    }
}

#[test]
fn selectors_are_checked_key_by_key() {
    let w = |sel: &str| fails(&format!("  waves: [{{name: a, selector: {sel}}}]\n"));
    for (sel, field, says) in [
        (
            "{matchLabel: {a: b}}",
            "rollout.waves[0].selector.matchLabel",
            "did you mean matchLabels?",
        ),
        (
            "{matchLabels: [a]}",
            "rollout.waves[0].selector.matchLabels",
            "mapping of label",
        ),
        (
            "{matchLabels: {tier: 1}}",
            "rollout.waves[0].selector.matchLabels.tier",
            "quote it",
        ),
        (
            "{matchLabels: {'a b': c}}",
            "rollout.waves[0].selector",
            "invalid label key",
        ),
        (
            "{matchExpressions: [{key: env, operator: Near}]}",
            "rollout.waves[0].selector.matchExpressions[0].operator",
            "\"Near\" is not an operator",
        ),
        (
            "{matchExpressions: [{key: env, operator: In}]}",
            "rollout.waves[0].selector.matchExpressions[0].values",
            "non-empty list",
        ),
        (
            "{matchExpressions: [{key: env, operator: Exists, values: [a]}]}",
            "rollout.waves[0].selector.matchExpressions[0].values",
            "takes no values",
        ),
        (
            "{matchExpressions: [{operator: Exists}]}",
            "rollout.waves[0].selector.matchExpressions[0].key",
            "label key",
        ),
        (
            "{matchExpressions: [{key: a, operator: Exists, value: x}]}",
            "rollout.waves[0].selector.matchExpressions[0].value",
            "did you mean values?",
        ),
    ] {
        let e = w(sel);
        assert_eq!(e.field, field, "{sel}: {e}");
        assert!(e.message.contains(says), "{sel}: {e}");
    }
    let r = rollout(
        "rollout:\n  waves: [{name: a, selector: {matchExpressions: [{key: env, operator: NotIn, values: [prod]}]}}]\n",
    );
    assert!(r.waves[0].select.selects("x", &BTreeMap::new()));
}

#[test]
fn windows_parse_with_defaults() {
    let r = rollout(
        r#"
rollout:
  windows:
    - kind: allow
      schedule: "30 1 * * 6"
      duration: 3h
      timeZone: Europe/Berlin
      selector: {matchLabels: {env: prod}}
      selfHeal: true
    - kind: deny
      schedule: "@daily"
      duration: 1h
"#,
    );
    let (a, d) = (&r.windows[0], &r.windows[1]);
    assert_eq!(a.kind, WindowKind::Allow);
    assert_eq!(a.time_zone, chrono_tz::Europe::Berlin);
    assert_eq!(a.duration, Duration::from_secs(3 * 3600));
    assert!(a.self_heal);
    assert!(matches!(a.select, Select::Labels(_)));
    assert_eq!(d.time_zone, chrono_tz::UTC);
    assert_eq!(d.select, Select::All);
    assert!(!d.self_heal);
}

#[test]
fn bad_windows_name_the_field() {
    let ok = "schedule: '0 0 * * *', duration: 1h";
    for (body, field, says) in [
        (format!("{{{ok}}}"), "rollout.windows[0].kind", "is missing"),
        (
            format!("{{kind: maybe, {ok}}}"),
            "rollout.windows[0].kind",
            "allow or deny",
        ),
        (
            "{kind: deny, duration: 1h}".into(),
            "rollout.windows[0].schedule",
            "is missing",
        ),
        (
            format!("{{kind: [deny], {ok}}}"),
            "rollout.windows[0].kind",
            "not a list",
        ),
        (
            "{kind: deny, schedule: [0], duration: 1h}".into(),
            "rollout.windows[0].schedule",
            "in quotes",
        ),
        (
            "{kind: deny, schedule: '0 0 * *', duration: 1h}".into(),
            "rollout.windows[0].schedule",
            "has 4 fields",
        ),
        (
            "{kind: deny, schedule: '0 0 0 * * *', duration: 1h}".into(),
            "rollout.windows[0].schedule",
            "has 6 fields",
        ),
        (
            "{kind: deny, schedule: '61 0 * * *', duration: 1h}".into(),
            "rollout.windows[0].schedule",
            "not a cron schedule",
        ),
        (
            "{kind: deny, schedule: '0 0 31 2 *', duration: 1h}".into(),
            "rollout.windows[0].schedule",
            "never fires",
        ),
        (
            "{kind: deny, schedule: '0 0 * * *'}".into(),
            "rollout.windows[0].duration",
            "is missing or zero",
        ),
        (
            "{kind: deny, schedule: '0 0 * * *', duration: 0s}".into(),
            "rollout.windows[0].duration",
            "is missing or zero",
        ),
        (
            format!("{{kind: deny, {ok}, timeZone: Mars/Olympus}}"),
            "rollout.windows[0].timeZone",
            "IANA",
        ),
        (
            format!("{{kind: deny, {ok}, timezone: UTC}}"),
            "rollout.windows[0].timezone",
            "did you mean timeZone?",
        ),
        (
            format!("{{kind: deny, {ok}, selfHeal: yes}}"),
            "rollout.windows[0].selfHeal",
            "true or false",
        ),
        (
            format!("{{kind: deny, {ok}, units: [a], selector: {{}}}}"),
            "rollout.windows[0]",
            "both units and selector",
        ),
    ] {
        let e = fails(&format!(
            "  windows:\n    - {{kind: allow, {ok}}}\n    - {body}\n"
        ))
        .to_string()
        .replace("windows[1]", "windows[0]");
        assert!(e.starts_with(&format!("{field}: ")), "{body}: {e}");
        assert!(e.contains(says), "{body}: {e}");
    }
}

#[test]
fn typos_are_caught_with_a_hint() {
    let e = fails("  wave: []\n");
    assert_eq!(
        e.to_string(),
        "rollout.wave: unknown field; did you mean waves?"
    );
    let e = fails("  max_unavailable: 1\n");
    assert!(e.message.contains("did you mean maxUnavailable?"), "{e}");
    let e = fails("  parallelism: 1\n");
    assert!(e.message.contains("(known: waves, maxUnavailable"), "{e}");
    assert!(one_edit_apart("waves", "wave"));
    assert!(one_edit_apart("soak", "soaq"));
    assert!(one_edit_apart("soak", "sxoak"));
    assert!(one_edit_apart("maxunavailable", "maxunavailabel"));
    assert!(one_edit_apart("soak", "osak"));
    assert!(!one_edit_apart("soak", "oska"));
    assert!(!one_edit_apart("soak", "sooak2"));
    assert!(!one_edit_apart("soak", "soak"));
    assert!(!one_edit_apart("scope", "slope1"));
}

#[test]
fn globs_that_select_no_unit_are_named() {
    let r = rollout(
        "rollout:\n  waves: [{name: dev, units: ['clusters/dev*', 'clusters/dve*']}]\n  windows: [{kind: deny, schedule: '0 0 * * *', duration: 1h, units: ['clusters/prod']}, {kind: deny, schedule: '0 0 * * *', duration: 1h}]\n",
    );
    let units = ["clusters/dev-1".to_string(), "clusters/prod-1".to_string()];
    assert_eq!(
        r.unused_globs(&units),
        [
            (
                "rollout.waves[0].units[1]".to_string(),
                "clusters/dve*".to_string()
            ),
            (
                "rollout.windows[0].units[0]".to_string(),
                "clusters/prod".to_string()
            ),
        ]
    );
}

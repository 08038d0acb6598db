//! Reading `rollout:` from the settings file's YAML (as JSON values): every field checked, every
//! error naming the field's path and what is wrong.

use super::super::select::{Select, glob_problem};
use super::{Budget, Rollout, Scope, SettingsError, Wave, Window, WindowKind};
use crate::selector::LabelSelector;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::time::Duration;

const ROLLOUT_KEYS: &[&str] = &[
    "waves",
    "maxUnavailable",
    "soak",
    "failureThreshold",
    "windows",
    "scope",
];
const WAVE_KEYS: &[&str] = &["name", "units", "selector"];
const WINDOW_KEYS: &[&str] = &[
    "kind", "schedule", "duration", "timeZone", "units", "selector", "selfHeal",
];
const SELECTOR_KEYS: &[&str] = &["matchLabels", "matchExpressions"];
const EXPRESSION_KEYS: &[&str] = &["key", "operator", "values"];

/// The name of the implicit last wave (units in no wave).
pub(crate) const REST: &str = "rest";

fn error(field: &str, message: impl Into<String>) -> SettingsError {
    SettingsError {
        field: field.to_string(),
        message: message.into(),
    }
}

/// What a value is, in the user's words, for "must be X, not Y".
fn what(v: &Value) -> &'static str {
    match v {
        Value::Null => "empty",
        Value::Bool(_) => "true/false",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// `v` as a mapping whose keys are all in `known`; an unknown key is named, with the known key
/// it most likely means.
fn mapping<'a>(
    v: &'a Value,
    field: &str,
    known: &[&str],
) -> Result<&'a Map<String, Value>, SettingsError> {
    let map = v.as_object().ok_or_else(|| {
        error(
            field,
            format!("must be a mapping of {}, not {}", known.join(", "), what(v)),
        )
    })?;
    if let Some(key) = map.keys().find(|k| !known.contains(&k.as_str())) {
        let hint = match nearest(key, known) {
            Some(k) => format!("; did you mean {k}?"),
            None => format!(" (known: {})", known.join(", ")),
        };
        return Err(error(
            &format!("{field}.{key}"),
            format!("unknown field{hint}"),
        ));
    }
    Ok(map)
}

/// The known key `key` most likely misspells: the same but for case, `-` and `_`, or one typo
/// off.
fn nearest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    let fold = |s: &str| -> String {
        s.chars()
            .filter(|c| *c != '_' && *c != '-')
            .flat_map(char::to_lowercase)
            .collect()
    };
    let k = fold(key);
    known.iter().copied().find(|c| {
        let c = fold(c);
        c == k || one_edit_apart(&c, &k)
    })
}

/// Whether one insertion, deletion, substitution or swap of neighbours turns `a` into `b`.
fn one_edit_apart(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let i = short.iter().zip(&long).take_while(|(x, y)| x == y).count();
    match long.len() - short.len() {
        0 if i < short.len() => {
            let swapped = i + 1 < short.len()
                && short[i] == long[i + 1]
                && short[i + 1] == long[i]
                && short[i + 2..] == long[i + 2..];
            swapped || short[i + 1..] == long[i + 1..]
        }
        1 => short[i..] == long[i + 1..],
        _ => false,
    }
}

pub(super) fn rollout(v: &Value) -> Result<Rollout, SettingsError> {
    let map = mapping(v, "rollout", ROLLOUT_KEYS)?;
    let waves = match map.get("waves") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => waves(list)?,
        Some(other) => {
            return Err(error(
                "rollout.waves",
                format!("must be a list of waves, not {}", what(other)),
            ));
        }
    };
    let windows = match map.get("windows") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(i, w)| window(w, &format!("rollout.windows[{i}]")))
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(error(
                "rollout.windows",
                format!("must be a list of windows, not {}", what(other)),
            ));
        }
    };
    Ok(Rollout {
        waves,
        max_unavailable: budget(map.get("maxUnavailable"))?,
        soak: duration(map.get("soak"), "rollout.soak")?.unwrap_or(Duration::ZERO),
        failure_threshold: count(map.get("failureThreshold"), "rollout.failureThreshold")?
            .unwrap_or(0),
        windows,
        scope: scope(map.get("scope"))?,
    })
}

fn waves(list: &[Value]) -> Result<Vec<Wave>, SettingsError> {
    let mut names = BTreeSet::new();
    let mut out = Vec::new();
    for (i, w) in list.iter().enumerate() {
        let field = format!("rollout.waves[{i}]");
        let map = mapping(w, &field, WAVE_KEYS)?;
        let name = match map.get("name") {
            Some(Value::String(n)) if !n.trim().is_empty() => n.trim().to_string(),
            None | Some(Value::Null) => {
                return Err(error(
                    &format!("{field}.name"),
                    "is missing: every wave has a name (dev, canary, prod)",
                ));
            }
            Some(other) => {
                return Err(error(
                    &format!("{field}.name"),
                    format!("must be a non-empty name, not {}", what(other)),
                ));
            }
        };
        if name == REST {
            return Err(error(
                &format!("{field}.name"),
                format!("{REST:?} names the implicit last wave (units in no wave); choose another"),
            ));
        }
        if !names.insert(name.clone()) {
            return Err(error(
                &format!("{field}.name"),
                format!("wave {name:?} is named twice; wave names are unique"),
            ));
        }
        let select = selection(map, &field)?.ok_or_else(|| {
            error(
                &field,
                "selects no units: give units (path globs) or selector (Cluster labels)",
            )
        })?;
        out.push(Wave { name, select });
    }
    Ok(out)
}

/// `units` or `selector` of a wave or window; `None` when it has neither.
fn selection(map: &Map<String, Value>, field: &str) -> Result<Option<Select>, SettingsError> {
    let units = map.get("units").filter(|v| !v.is_null());
    let selector = map.get("selector").filter(|v| !v.is_null());
    match (units, selector) {
        (Some(_), Some(_)) => Err(error(
            field,
            "has both units and selector; give one of them",
        )),
        (Some(units), None) => globs(units, &format!("{field}.units")).map(Some),
        (None, Some(selector)) => labels(selector, &format!("{field}.selector")).map(Some),
        (None, None) => Ok(None),
    }
}

fn globs(v: &Value, field: &str) -> Result<Select, SettingsError> {
    let list = v.as_array().ok_or_else(|| {
        error(
            field,
            format!(
                "must be a list of path globs (like [\"clusters/dev*\"]), not {}",
                what(v)
            ),
        )
    })?;
    if list.is_empty() {
        return Err(error(field, "lists no globs"));
    }
    let mut out = Vec::new();
    for (i, g) in list.iter().enumerate() {
        let f = format!("{field}[{i}]");
        let g = g.as_str().ok_or_else(|| {
            error(
                &f,
                format!("must be a path glob (clusters/dev*), not {}", what(g)),
            )
        })?;
        if let Some(problem) = glob_problem(g) {
            return Err(error(&f, problem));
        }
        out.push(g.trim().to_string());
    }
    Ok(Select::Units(out))
}

fn labels(v: &Value, field: &str) -> Result<Select, SettingsError> {
    let map = mapping(v, field, SELECTOR_KEYS)?;
    if let Some(m) = map.get("matchLabels").filter(|v| !v.is_null()) {
        let labels = m.as_object().ok_or_else(|| {
            error(
                &format!("{field}.matchLabels"),
                format!("must be a mapping of label to value, not {}", what(m)),
            )
        })?;
        if let Some((k, v)) = labels.iter().find(|(_, v)| !v.is_string()) {
            return Err(error(
                &format!("{field}.matchLabels.{k}"),
                format!(
                    "must be a string (quote it: \"{}\"), not {}",
                    v.to_string().trim_matches('"'),
                    what(v)
                ),
            ));
        }
    }
    if let Some(e) = map.get("matchExpressions").filter(|v| !v.is_null()) {
        let list = e.as_array().ok_or_else(|| {
            error(
                &format!("{field}.matchExpressions"),
                format!(
                    "must be a list of {{key, operator, values}}, not {}",
                    what(e)
                ),
            )
        })?;
        for (i, x) in list.iter().enumerate() {
            let f = format!("{field}.matchExpressions[{i}]");
            let x = mapping(x, &f, EXPRESSION_KEYS)?;
            if !x.get("key").is_some_and(Value::is_string) {
                return Err(error(&format!("{f}.key"), "must be a label key"));
            }
            let op = x.get("operator").and_then(Value::as_str).unwrap_or("");
            if !["In", "NotIn", "Exists", "DoesNotExist"].contains(&op) {
                return Err(error(
                    &format!("{f}.operator"),
                    format!("{op:?} is not an operator: In, NotIn, Exists or DoesNotExist"),
                ));
            }
            let values = x.get("values").filter(|v| !v.is_null());
            match (op, values) {
                ("In" | "NotIn", Some(Value::Array(vs)))
                    if !vs.is_empty() && vs.iter().all(Value::is_string) => {}
                ("In" | "NotIn", _) => {
                    return Err(error(
                        &format!("{f}.values"),
                        format!("operator {op} needs a non-empty list of strings"),
                    ));
                }
                (_, Some(_)) => {
                    return Err(error(
                        &format!("{f}.values"),
                        format!("operator {op} takes no values"),
                    ));
                }
                _ => {}
            }
        }
    }
    LabelSelector::from_json(v)
        .map(Select::Labels)
        .map_err(|e| error(field, e.why))
}

fn window(v: &Value, field: &str) -> Result<Window, SettingsError> {
    let map = mapping(v, field, WINDOW_KEYS)?;
    let kind = match map.get("kind") {
        Some(Value::String(k)) if k == "allow" => WindowKind::Allow,
        Some(Value::String(k)) if k == "deny" => WindowKind::Deny,
        Some(Value::String(other)) => {
            return Err(error(
                &format!("{field}.kind"),
                format!("{other:?} is not a kind of window: allow or deny"),
            ));
        }
        Some(other) if !other.is_null() => {
            return Err(error(
                &format!("{field}.kind"),
                format!("must be allow or deny, not {}", what(other)),
            ));
        }
        _ => {
            return Err(error(&format!("{field}.kind"), "is missing: allow or deny"));
        }
    };
    let schedule = match map.get("schedule") {
        Some(Value::String(s)) => s.trim().to_string(),
        Some(other) if !other.is_null() => {
            return Err(error(
                &format!("{field}.schedule"),
                format!(
                    "must be a cron schedule in quotes (like \"0 2 * * 6\"), not {}",
                    what(other)
                ),
            ));
        }
        _ => {
            return Err(error(
                &format!("{field}.schedule"),
                "is missing: a cron schedule of five fields (minute hour day-of-month month day-of-week), like \"0 2 * * 6\"",
            ));
        }
    };
    let cron = cron(&schedule).map_err(|m| error(&format!("{field}.schedule"), m))?;
    let duration = duration(map.get("duration"), &format!("{field}.duration"))?
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            error(
                &format!("{field}.duration"),
                "is missing or zero: how long the window stays open from each time it starts (1h, 24h)",
            )
        })?;
    let time_zone = match map.get("timeZone") {
        None | Some(Value::Null) => chrono_tz::UTC,
        Some(Value::String(tz)) => tz.trim().parse::<chrono_tz::Tz>().map_err(|_| {
            error(
                &format!("{field}.timeZone"),
                format!("{tz:?} is not an IANA time zone name (like UTC or Europe/Berlin)"),
            )
        })?,
        Some(other) => {
            return Err(error(
                &format!("{field}.timeZone"),
                format!(
                    "must be an IANA time zone name (like Europe/Berlin), not {}",
                    what(other)
                ),
            ));
        }
    };
    let self_heal = match map.get("selfHeal") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(error(
                &format!("{field}.selfHeal"),
                format!("must be true or false, not {}", what(other)),
            ));
        }
    };
    Ok(Window {
        kind,
        schedule,
        cron,
        duration,
        time_zone,
        select: selection(map, field)?.unwrap_or(Select::All),
        self_heal,
    })
}

/// A standard cron schedule (five fields, or a nickname like `@daily`) that fires.
fn cron(schedule: &str) -> Result<croner::Cron, String> {
    let fields = schedule.split_whitespace().count();
    if !schedule.starts_with('@') && fields != 5 {
        return Err(format!(
            "{schedule:?} has {fields} fields; a cron schedule has five (minute hour day-of-month month day-of-week)"
        ));
    }
    let cron = croner::parser::CronParser::builder()
        .seconds(croner::parser::Seconds::Disallowed)
        .year(croner::parser::Year::Disallowed)
        .build()
        .parse(schedule)
        .map_err(|e| format!("{schedule:?} is not a cron schedule: {e}"))?;
    // A schedule that never fires (`0 0 31 2 *`) is a mistake, not a window.
    let start = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH + chrono::TimeDelta::days(56 * 365);
    let ahead = cron
        .find_next_occurrence(&start, false)
        .ok()
        .filter(|t| *t - start < chrono::TimeDelta::days(8 * 366));
    if ahead.is_none() {
        return Err(format!("{schedule:?} never fires"));
    }
    Ok(cron)
}

/// A duration with its unit (`0s`, `90s`, `10m`, `1h30m`, `24h`); a bare `0` is zero too.
fn duration(v: Option<&Value>, field: &str) -> Result<Option<Duration>, SettingsError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.as_u64() == Some(0) => Ok(Some(Duration::ZERO)),
        Some(Value::String(s)) => humantime::parse_duration(s.trim()).map(Some).map_err(|e| {
            error(
                field,
                format!("{s:?} is not a duration like 90s, 10m or 1h30m: {e}"),
            )
        }),
        Some(other) => Err(error(
            field,
            format!(
                "must be a duration with its unit, like 90s, 10m or 1h30m, not {} {other}",
                what(other)
            ),
        )),
    }
}

/// A non-negative whole number.
fn count(v: Option<&Value>, field: &str) -> Result<Option<usize>, SettingsError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.as_u64().is_some() => {
            Ok(n.as_u64().map(|n| usize::try_from(n).unwrap_or(usize::MAX)))
        }
        Some(other) => Err(error(
            field,
            format!("must be a whole number, 0 or more, not {other}"),
        )),
    }
}

fn budget(v: Option<&Value>) -> Result<Option<Budget>, SettingsError> {
    const FIELD: &str = "rollout.maxUnavailable";
    let bad = |shown: &str| {
        error(
            FIELD,
            format!(
                "must be a count of clusters (1 or more) or a percentage (1% to 100%), not {shown}"
            ),
        )
    };
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(c) if c >= 1 => Ok(Some(Budget::Count(
                usize::try_from(c).unwrap_or(usize::MAX),
            ))),
            _ => Err(bad(&n.to_string())),
        },
        Some(Value::String(s)) => {
            let t = s.trim();
            if let Some(p) = t.strip_suffix('%') {
                match p.trim().parse::<u32>() {
                    Ok(p) if (1..=100).contains(&p) => Ok(Some(Budget::Percent(p))),
                    _ => Err(bad(&format!("{s:?}"))),
                }
            } else {
                match t.parse::<usize>() {
                    Ok(c) if c >= 1 => Ok(Some(Budget::Count(c))),
                    _ => Err(bad(&format!("{s:?}"))),
                }
            }
        }
        Some(other) => Err(bad(what(other))),
    }
}

fn scope(v: Option<&Value>) -> Result<Scope, SettingsError> {
    match v {
        None | Some(Value::Null) => Ok(Scope::Shared),
        Some(Value::String(s)) if s == "shared" => Ok(Scope::Shared),
        Some(Value::String(s)) if s == "all" => Ok(Scope::All),
        Some(other) => Err(error(
            "rollout.scope",
            format!(
                "must be shared (waves hold changes to what units share; the default) or all (every change), not {other}"
            ),
        )),
    }
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;

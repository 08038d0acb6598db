//! kube-apiserver's validation of Events, core `v1` and `events.k8s.io/v1` alike: both are one
//! stored kind, validated in the core shape (so a refusal names the core field, `message` where
//! the request said `note`). Every write passes the legacy rules (the namespace of the object an
//! Event is about; for an Event with an `eventTime`, its reporting fields); a write through
//! `events.k8s.io` is also held to the newer rules: on create the deprecated fields unset and an
//! `eventTime`, on update almost every field immutable.

use super::label_key_messages;
use crate::machinery::field::FieldError;
use serde_json::{Value, json};

/// Core field name and events.k8s.io field name, for the fields the two APIs name differently.
pub const RENAMED: &[(&str, &str)] = &[
    ("message", "note"),
    ("involvedObject", "regarding"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];

/// The API a write came through: its rules differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventApi {
    /// Core `v1`: the legacy rules only.
    Core,
    /// `events.k8s.io/v1`: the newer rules too.
    Events,
}

const MAX_REPORTING_INSTANCE: usize = 128;
const MAX_ACTION: usize = 128;
const MAX_REASON: usize = 128;
const MAX_NOTE: usize = 1024;

/// An events.k8s.io Event's fields under their core names (the rest as they are).
pub fn as_core(obj: &Value) -> Value {
    let Some(map) = obj.as_object() else {
        return obj.clone();
    };
    let core = map
        .iter()
        .map(|(k, v)| {
            let name = RENAMED
                .iter()
                .find(|(_, events)| events == k)
                .map_or(k.as_str(), |(core, _)| core);
            (name.to_string(), v.clone())
        })
        .collect();
    Value::Object(core)
}

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Whether a timestamp is Go's zero time: unset, or January 1 of year 1 at midnight UTC.
fn is_zero_time(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.strip_prefix("0001-01-01T00:00:00").is_some_and(|rest| {
            let rest = rest.strip_suffix('Z').unwrap_or("x");
            rest.is_empty()
                || rest
                    .strip_prefix('.')
                    .is_some_and(|f| f.bytes().all(|b| b == b'0'))
        }),
        Some(_) => false,
    }
}

/// What a create refuses in `event` (core shape), written through `api`.
pub fn create_errors(event: &Value, api: EventApi) -> Vec<FieldError> {
    let mut errors = legacy_errors(event, api);
    if api == EventApi::Core {
        return errors;
    }
    errors.extend(series_errors(event));
    if is_zero_time(event.get("eventTime")) {
        errors.push(FieldError::required("eventTime", ""));
    }
    let kind = text(event, "/type");
    if kind != "Normal" && kind != "Warning" {
        errors.push(FieldError::invalid(
            "type",
            "",
            &format!("has invalid value: {kind}"),
        ));
    }
    let unset = |field: &str| FieldError::invalid(field, "", "needs to be unset");
    for field in ["firstTimestamp", "lastTimestamp"] {
        if !is_zero_time(event.get(field)) {
            errors.push(unset(field));
        }
    }
    if count(event) != 0 {
        errors.push(unset("count"));
    }
    if !text(event, "/source/component").is_empty() || !text(event, "/source/host").is_empty() {
        errors.push(unset("source"));
    }
    errors
}

/// What an update from `old` to `event` (both in the core shape) refuses, written through `api`.
pub fn update_errors(event: &Value, old: &Value, api: EventApi) -> Vec<FieldError> {
    let mut errors = legacy_errors(event, api);
    if api == EventApi::Core {
        return errors;
    }
    if event.get("series") != old.get("series") {
        errors.extend(series_errors(event));
    }
    for (field, path) in IMMUTABLE {
        let (new, was) = (shown(event, field), shown(old, field));
        if !same(field, &new, &was) {
            errors.push(FieldError::invalid_raw(path, &new, "field is immutable"));
        }
    }
    errors
}

/// The fields an update through events.k8s.io may not change, in the order kube checks them,
/// and the name its message gives each.
const IMMUTABLE: &[(&str, &str)] = &[
    ("involvedObject", "involvedObject"),
    ("reason", "reason"),
    ("message", "message"),
    ("source", "source"),
    ("firstTimestamp", "firstTimestamp"),
    ("lastTimestamp", "lastTimestamp"),
    ("count", "count"),
    ("type", "type"),
    ("eventTime", "eventTime"),
    ("action", "action"),
    ("related", "related"),
    ("reportingComponent", "reportingController"),
    ("reportingInstance", "reportingInstance"),
];

/// The name kube's messages give a field: the events.k8s.io name of the reporting controller
/// unless the write came through core v1.
fn reporting_field(api: EventApi) -> &'static str {
    match api {
        EventApi::Core => "reportingComponent",
        EventApi::Events => "reportingController",
    }
}

fn count(event: &Value) -> i64 {
    event.get("count").and_then(Value::as_i64).unwrap_or(0)
}

/// The rules every Event is held to: a namespace that matches the object it is about (unless
/// it has an `eventTime`: then the reporting fields, action and reason are required).
fn legacy_errors(event: &Value, api: EventApi) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let ns = text(event, "/metadata/namespace");
    let about_ns = text(event, "/involvedObject/namespace");
    let mismatch = || {
        FieldError::invalid(
            "involvedObject.namespace",
            about_ns,
            "does not match event.namespace",
        )
    };
    if is_zero_time(event.get("eventTime")) {
        let matches = if about_ns.is_empty() {
            ns.is_empty() || ns == "default"
        } else {
            ns == about_ns
        };
        if !matches {
            errors.push(mismatch());
        }
        return errors;
    }
    if about_ns.is_empty() && ns != "default" && ns != "kube-system" {
        errors.push(mismatch());
    }
    let reporting = text(event, "/reportingComponent");
    let field = reporting_field(api);
    if reporting.is_empty() {
        errors.push(FieldError::required(field, ""));
    }
    for m in label_key_messages(reporting) {
        errors.push(FieldError::invalid(field, reporting, &m));
    }
    let mut bounded = |field: &str, max: usize, required: bool| {
        let value = text(event, &format!("/{field}"));
        if required && value.is_empty() {
            errors.push(FieldError::required(field, ""));
        }
        if value.len() > max {
            errors.push(FieldError::invalid(
                field,
                "",
                &format!("can have at most {max} characters"),
            ));
        }
    };
    bounded("reportingInstance", MAX_REPORTING_INSTANCE, true);
    bounded("action", MAX_ACTION, true);
    bounded("reason", MAX_REASON, true);
    bounded("message", MAX_NOTE, false);
    errors
}

fn series_errors(event: &Value) -> Vec<FieldError> {
    let Some(series) = event.get("series").filter(|s| !s.is_null()) else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
        errors.push(FieldError::invalid(
            "series.count",
            "",
            "should be at least 2",
        ));
    }
    if is_zero_time(series.get("lastObservedTime")) {
        errors.push(FieldError::required("series.lastObservedTime", ""));
    }
    errors
}

/// An object reference as kube's message shows it: Go's JSON of the internal type, whose field
/// names are Go's.
fn reference(r: &Value) -> String {
    const FIELDS: &[(&str, &str)] = &[
        ("Kind", "kind"),
        ("Namespace", "namespace"),
        ("Name", "name"),
        ("UID", "uid"),
        ("APIVersion", "apiVersion"),
        ("ResourceVersion", "resourceVersion"),
        ("FieldPath", "fieldPath"),
    ];
    go_struct(r, FIELDS)
}

fn go_struct(v: &Value, fields: &[(&str, &str)]) -> String {
    let each: Vec<String> = fields
        .iter()
        .map(|(go, json)| {
            let s = v.get(*json).and_then(Value::as_str).unwrap_or("");
            format!("{}:{}", go_json(go), go_json(s))
        })
        .collect();
    format!("{{{}}}", each.join(","))
}

/// A string as Go's `json.Marshal` writes it (HTML characters escaped).
fn go_json(s: &str) -> String {
    json!(s)
        .to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// A field's value as kube's message shows it.
fn shown(event: &Value, field: &str) -> String {
    let v = event.get(field).filter(|v| !v.is_null());
    match field {
        "involvedObject" => reference(v.unwrap_or(&Value::Null)),
        "related" => v.map_or_else(|| "null".to_string(), reference),
        "source" => go_struct(
            v.unwrap_or(&Value::Null),
            &[("Component", "component"), ("Host", "host")],
        ),
        "count" => count(event).to_string(),
        // A zero time is written `null`.
        "firstTimestamp" | "lastTimestamp" | "eventTime" => match v.and_then(Value::as_str) {
            Some(t) if !is_zero_time(v) => go_json(t),
            _ => "null".to_string(),
        },
        _ => go_json(v.and_then(Value::as_str).unwrap_or("")),
    }
}

/// Whether two shown values are the same: times compare as instants.
fn same(field: &str, new: &str, old: &str) -> bool {
    if new == old {
        return true;
    }
    let instant = |s: &str| {
        serde_json::from_str::<String>(s)
            .ok()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(&t).ok())
    };
    matches!(field, "firstTimestamp" | "lastTimestamp" | "eventTime")
        && instant(new).is_some()
        && instant(new) == instant(old)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(ToString::to_string).collect()
    }

    fn core(ns: &str, about_ns: &str) -> Value {
        json!({"metadata": {"name": "e", "namespace": ns},
               "involvedObject": {"kind": "Pod", "name": "p", "namespace": about_ns},
               "reason": "R", "message": "m", "type": "Normal", "source": {"component": "c"}})
    }

    #[test]
    fn an_event_about_an_object_of_another_namespace_is_refused() {
        assert!(create_errors(&core("a", "a"), EventApi::Core).is_empty());
        assert_eq!(
            messages(&create_errors(&core("a", "other"), EventApi::Core)),
            ["involvedObject.namespace: Invalid value: \"other\": does not match event.namespace"]
        );
        assert!(create_errors(&core("default", ""), EventApi::Core).is_empty());
    }

    #[test]
    fn an_event_with_an_event_time_needs_its_reporting_fields() {
        let mut e = core("a", "a");
        e["eventTime"] = json!("2024-01-01T00:00:00.000000Z");
        assert_eq!(
            messages(&create_errors(&e, EventApi::Core)),
            [
                "reportingComponent: Required value",
                "reportingComponent: Invalid value: \"\": name part must be non-empty",
                "reportingComponent: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "reportingInstance: Required value",
                "action: Required value",
            ]
        );
    }

    #[test]
    fn events_k8s_io_creates_need_an_event_time_and_no_deprecated_fields() {
        let body = json!({"metadata": {"name": "e", "namespace": "a"}, "action": "Create",
                          "reason": "Created", "type": "Normal",
                          "regarding": {"kind": "ConfigMap", "name": "x", "namespace": "a"}});
        assert_eq!(
            messages(&create_errors(&as_core(&body), EventApi::Events)),
            ["eventTime: Required value"]
        );
        let mut old_style = core("a", "a");
        old_style["count"] = json!(2);
        old_style["type"] = json!("Odd");
        assert_eq!(
            messages(&create_errors(&old_style, EventApi::Events)),
            [
                "eventTime: Required value",
                "type: Invalid value: \"\": has invalid value: Odd",
                "count: Invalid value: \"\": needs to be unset",
                "source: Invalid value: \"\": needs to be unset",
            ]
        );
    }

    #[test]
    fn updates_through_events_k8s_io_may_not_change_the_note_or_the_subject() {
        let old = core("a", "a");
        let mut new = old.clone();
        new["message"] = json!("two");
        assert!(update_errors(&new, &old, EventApi::Core).is_empty());
        assert_eq!(
            messages(&update_errors(&new, &old, EventApi::Events)),
            ["message: Invalid value: \"two\": field is immutable"]
        );
        let mut moved = old.clone();
        moved["involvedObject"]["name"] = json!("q");
        moved["count"] = json!(3);
        assert_eq!(
            messages(&update_errors(&moved, &old, EventApi::Events)),
            [
                "involvedObject: Invalid value: {\"Kind\":\"Pod\",\"Namespace\":\"a\",\"Name\":\"q\",\"UID\":\"\",\"APIVersion\":\"\",\"ResourceVersion\":\"\",\"FieldPath\":\"\"}: field is immutable",
                "count: Invalid value: 3: field is immutable",
            ]
        );
    }

    #[test]
    fn times_compare_as_instants_and_zero_is_unset() {
        let mut old = core("a", "a");
        old["firstTimestamp"] = json!("2024-01-01T00:00:00Z");
        let mut new = old.clone();
        new["firstTimestamp"] = json!("2024-01-01T01:00:00+01:00");
        assert!(update_errors(&new, &old, EventApi::Events).is_empty());
        assert!(is_zero_time(Some(&json!("0001-01-01T00:00:00Z"))));
        assert!(is_zero_time(Some(&json!("0001-01-01T00:00:00.000000Z"))));
        assert!(!is_zero_time(Some(&json!("0001-01-01T00:00:00+01:00"))));
    }
}

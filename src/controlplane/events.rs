//! Events are one kind served under two APIs, as upstream: core `v1` Events and
//! `events.k8s.io/v1` Events are the same stored objects. They are stored in the core shape; a
//! request through `events.k8s.io` reads and writes the events shape, converted field by field
//! (`message` is `note`, `involvedObject` is `regarding`, `source` is `deprecatedSource`, ...).
//!
//! Both shapes are also written as upstream's typed encoding writes them: some fields are always
//! present, `null` or empty when unset (e.g. a core Event's `firstTimestamp: null`).

use crate::validate::builtin::events::RENAMED;
use serde_json::{Map, Value, json};

/// A field an encoding always writes, and its value when unset.
type AlwaysWritten = (&'static str, fn() -> Value);

/// Fields the core encoding always writes, with their value when unset.
const CORE_ALWAYS: &[AlwaysWritten] = &[
    ("involvedObject", || json!({})),
    ("source", || json!({})),
    ("firstTimestamp", || Value::Null),
    ("lastTimestamp", || Value::Null),
    ("eventTime", || Value::Null),
    ("reportingComponent", || json!("")),
    ("reportingInstance", || json!("")),
];

/// Fields the events.k8s.io encoding always writes, with their value when unset.
const EVENTS_ALWAYS: &[AlwaysWritten] = &[
    ("eventTime", || Value::Null),
    ("regarding", || json!({})),
    ("deprecatedSource", || json!({})),
    ("deprecatedFirstTimestamp", || Value::Null),
    ("deprecatedLastTimestamp", || Value::Null),
];

/// Fields the events.k8s.io encoding leaves out when empty (`omitempty` on a string or number).
const EVENTS_OMIT_EMPTY: &[&str] = &[
    "reportingController",
    "reportingInstance",
    "deprecatedCount",
];

fn rename(obj: &Value, from_core: bool) -> Value {
    let Some(map) = obj.as_object() else {
        return obj.clone();
    };
    let mut out = Map::new();
    for (k, v) in map {
        let renamed = RENAMED.iter().find_map(|(core, events)| {
            if from_core && k == core {
                Some(*events)
            } else if !from_core && k == events {
                Some(*core)
            } else {
                None
            }
        });
        out.insert(renamed.unwrap_or(k).to_string(), v.clone());
    }
    Value::Object(out)
}

fn fill(obj: &mut Value, always: &[AlwaysWritten]) {
    if let Some(map) = obj.as_object_mut() {
        for (field, unset) in always {
            if !map.contains_key(*field) {
                map.insert((*field).to_string(), unset());
            }
        }
    }
}

/// A core Event as the core encoding writes it (what is stored).
pub fn core_encoded(obj: &Value) -> Value {
    let mut out = obj.clone();
    fill(&mut out, CORE_ALWAYS);
    out
}

/// An events.k8s.io Event (a request body) in the core shape it is stored in.
pub fn to_core(obj: &Value) -> Value {
    let mut out = rename(obj, false);
    out["apiVersion"] = json!("v1");
    core_encoded(&out)
}

/// A stored core Event as events.k8s.io serves it.
pub fn from_core(obj: &Value) -> Value {
    let mut out = rename(obj, true);
    if let Some(map) = out.as_object_mut() {
        for field in EVENTS_OMIT_EMPTY {
            if matches!(map.get(*field), Some(v) if v == "" || v == 0 || v.is_null()) {
                map.remove(*field);
            }
        }
    }
    fill(&mut out, EVENTS_ALWAYS);
    out["apiVersion"] = json!("events.k8s.io/v1");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_core_event_reads_through_events_k8s_io_with_renamed_fields() {
        let stored = core_encoded(&json!({
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
            "involvedObject": {"kind": "Pod", "name": "p"}, "message": "hello", "count": 2,
            "source": {"component": "c"}, "reason": "R", "type": "Normal",
        }));
        assert_eq!(stored["firstTimestamp"], Value::Null);
        assert_eq!(stored["reportingComponent"], "");
        let served = from_core(&stored);
        assert_eq!(
            served,
            json!({
                "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
                "regarding": {"kind": "Pod", "name": "p"}, "note": "hello", "deprecatedCount": 2,
                "deprecatedSource": {"component": "c"}, "reason": "R", "type": "Normal",
                "eventTime": null, "deprecatedFirstTimestamp": null, "deprecatedLastTimestamp": null,
            })
        );
    }

    #[test]
    fn an_events_k8s_io_event_is_stored_in_the_core_shape_and_reads_back_the_same() {
        let body = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
            "regarding": {"kind": "Pod", "name": "p"}, "note": "hi", "action": "A",
            "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "x/y",
            "reportingInstance": "i", "reason": "R", "type": "Normal",
        });
        let stored = to_core(&body);
        assert_eq!(stored["apiVersion"], "v1");
        assert_eq!(stored["message"], "hi");
        assert_eq!(stored["reportingComponent"], "x/y");
        assert_eq!(stored["source"], json!({}));
        let mut back = from_core(&stored);
        for f in [
            "deprecatedSource",
            "deprecatedFirstTimestamp",
            "deprecatedLastTimestamp",
        ] {
            back.as_object_mut().unwrap().remove(f);
        }
        assert_eq!(back, body);
    }
}

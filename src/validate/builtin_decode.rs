//! What kube-apiserver cannot even decode into a built-in kind's Go type: a string map that is
//! not a map of strings, a Secret's or ConfigMap's binary data that is not base64, a Lease's or
//! Event's number that is not a number, a timestamp that is not a time. kube-apiserver answers these 400 BadRequest before any
//! validation, naming the Go field (`json: cannot unmarshal number into Go struct field
//! ConfigMap.data of type string`, `illegal base64 data at input byte 3`); the agent reports them
//! in its own words. Values are never shown.

use super::super::gotime::{self, Layout};
use crate::machinery::gojson;
use serde_json::{Map, Value};
use std::fmt;

/// One value kube-apiserver cannot decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeProblem {
    /// The field as a validation message names it (`data[k]`, `metadata.labels`).
    pub field: String,
    pub what: Undecodable,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undecodable {
    /// A JSON value of the wrong type: Go's type name of what was found, the Go field
    /// (`ConfigMap.data`) and the Go type expected there (`string`, `map[string]string`).
    Type {
        found: &'static str,
        go_field: &'static str,
        go_type: &'static str,
    },
    /// Not base64: the byte at which Go's decoder stops.
    Base64 { byte: usize },
    /// A string that is not a time of the layout: Go's `time.Parse` error.
    Time { error: String },
}

impl DecodeProblem {
    /// Go's error, as kube-apiserver quotes it after `X in version "v1" cannot be handled as a X: `.
    pub fn go_error(&self) -> String {
        match &self.what {
            Undecodable::Type {
                found,
                go_field,
                go_type,
            } => format!(
                "json: cannot unmarshal {found} into Go struct field {go_field} of type {go_type}"
            ),
            Undecodable::Base64 { byte } => format!("illegal base64 data at input byte {byte}"),
            Undecodable::Time { error } => error.clone(),
        }
    }
}

/// The agent's wording.
impl fmt::Display for DecodeProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.what {
            Undecodable::Type { found, go_type, .. } if go_type.starts_with("map") => write!(
                f,
                "{}: Invalid value: must be a map of strings, not {}",
                self.field,
                agent_kind(found)
            ),
            Undecodable::Type { found, go_type, .. } if go_type.starts_with("int") => write!(
                f,
                "{}: Invalid value: must be an integer, not {}",
                self.field,
                agent_kind(found)
            ),
            Undecodable::Type { found, .. } => write!(
                f,
                "{}: Invalid value: must be a string, not {}",
                self.field,
                agent_kind(found)
            ),
            Undecodable::Base64 { .. } => write!(
                f,
                "{}: Invalid value: not valid base64 (the value is not shown)",
                self.field
            ),
            Undecodable::Time { error } => write!(f, "{}: Invalid value: {error}", self.field),
        }
    }
}

fn agent_kind(go: &str) -> &'static str {
    match go {
        "bool" => "a boolean",
        "number" => "a number",
        "string" => "a string",
        "array" => "a list",
        _ => "a map",
    }
}

/// How one field decodes.
#[derive(Clone, Copy)]
enum Shape {
    /// `map[string]string`
    Strings,
    /// `map[string][]byte`: base64 strings.
    Bytes,
    /// `int32`
    Int32,
    /// A timestamp string (`metav1.Time` or `metav1.MicroTime`).
    Time(Layout),
}

const TIME: Shape = Shape::Time(Layout::Rfc3339);
const MICRO_TIME: Shape = Shape::Time(Layout::Rfc3339Micro);

/// The fields of `group`/`kind` whose decoding is checked, in the object: (path of the JSON
/// object holding it, key, Go field, shape).
fn fields(group: &str, kind: &str) -> &'static [(&'static str, &'static str, &'static str, Shape)] {
    match (group, kind) {
        ("", "ConfigMap") => &[
            ("", "data", "ConfigMap.data", Shape::Strings),
            ("", "binaryData", "ConfigMap.binaryData", Shape::Bytes),
        ],
        ("", "Secret") => &[
            ("", "data", "Secret.data", Shape::Bytes),
            ("", "stringData", "Secret.stringData", Shape::Strings),
        ],
        ("coordination.k8s.io", "Lease") => &[
            (
                "/spec",
                "leaseDurationSeconds",
                "LeaseSpec.spec.leaseDurationSeconds",
                Shape::Int32,
            ),
            (
                "/spec",
                "leaseTransitions",
                "LeaseSpec.spec.leaseTransitions",
                Shape::Int32,
            ),
            (
                "/spec",
                "acquireTime",
                "LeaseSpec.spec.acquireTime",
                MICRO_TIME,
            ),
            ("/spec", "renewTime", "LeaseSpec.spec.renewTime", MICRO_TIME),
        ],
        ("", "Event") => &[
            ("", "firstTimestamp", "Event.firstTimestamp", TIME),
            ("", "lastTimestamp", "Event.lastTimestamp", TIME),
            ("", "count", "Event.count", Shape::Int32),
            ("", "eventTime", "Event.eventTime", MICRO_TIME),
            ("/series", "count", "EventSeries.series.count", Shape::Int32),
            (
                "/series",
                "lastObservedTime",
                "EventSeries.series.lastObservedTime",
                MICRO_TIME,
            ),
        ],
        ("events.k8s.io", "Event") => &[
            ("", "eventTime", "Event.eventTime", MICRO_TIME),
            (
                "",
                "deprecatedFirstTimestamp",
                "Event.deprecatedFirstTimestamp",
                TIME,
            ),
            (
                "",
                "deprecatedLastTimestamp",
                "Event.deprecatedLastTimestamp",
                TIME,
            ),
            ("", "deprecatedCount", "Event.deprecatedCount", Shape::Int32),
            ("/series", "count", "EventSeries.series.count", Shape::Int32),
            (
                "/series",
                "lastObservedTime",
                "EventSeries.series.lastObservedTime",
                MICRO_TIME,
            ),
        ],
        _ => &[],
    }
}

const METADATA: &[(&str, &str, &str, Shape)] = &[
    (
        "/metadata",
        "labels",
        "ObjectMeta.metadata.labels",
        Shape::Strings,
    ),
    (
        "/metadata",
        "annotations",
        "ObjectMeta.metadata.annotations",
        Shape::Strings,
    ),
];

/// Every value of `obj` that `group`/`kind`'s Go type cannot hold, in the order Go's decoder
/// meets them (the order of the body); with `metadata`, labels and annotations too.
pub fn decode_problems(group: &str, kind: &str, obj: &Value, metadata: bool) -> Vec<DecodeProblem> {
    let mut checked: Vec<_> = fields(group, kind).to_vec();
    if metadata {
        checked.extend_from_slice(METADATA);
    }
    let mut problems = Vec::new();
    let Some(top) = obj.as_object() else {
        return problems;
    };
    // Walk the body's own order: each parent object in the order its key appears.
    let position = |parent: &str, key: &str| -> (usize, usize) {
        let parent_key = parent.trim_start_matches('/');
        let outer = if parent_key.is_empty() {
            key
        } else {
            parent_key
        };
        let outer_at = top.keys().position(|k| k == outer).unwrap_or(usize::MAX);
        let inner_at = obj
            .pointer(parent)
            .and_then(Value::as_object)
            .and_then(|m| m.keys().position(|k| k == key))
            .unwrap_or(0);
        (outer_at, if parent_key.is_empty() { 0 } else { inner_at })
    };
    checked.sort_by_key(|(parent, key, _, _)| position(parent, key));
    for (parent, key, go_field, shape) in checked {
        let Some(value) = obj.pointer(parent).and_then(|p| p.get(key)) else {
            continue;
        };
        let field = if parent.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", parent.trim_start_matches('/').replace('/', "."))
        };
        check(&field, go_field, shape, value, &mut problems);
    }
    problems
}

fn check(
    field: &str,
    go_field: &'static str,
    shape: Shape,
    value: &Value,
    out: &mut Vec<DecodeProblem>,
) {
    let type_problem = |field: String, found: &Value, go_type: &'static str| DecodeProblem {
        field,
        what: Undecodable::Type {
            found: gojson::type_name(found),
            go_field,
            go_type,
        },
    };
    match (shape, value) {
        (_, Value::Null) => {}
        (Shape::Int32, Value::Number(_)) => {}
        (Shape::Int32, other) => out.push(type_problem(field.into(), other, "int32")),
        (Shape::Time(layout), Value::String(t)) => {
            if let Some(error) = gotime::parse_error(layout, t) {
                out.push(DecodeProblem {
                    field: field.into(),
                    what: Undecodable::Time { error },
                });
            }
        }
        (Shape::Time(_), other) => out.push(type_problem(field.into(), other, "string")),
        (Shape::Strings, Value::Object(m)) => each(
            m,
            |k, v| {
                (!v.is_string() && !v.is_null())
                    .then(|| type_problem(format!("{field}[{k}]"), v, "string"))
            },
            out,
        ),
        (Shape::Bytes, Value::Object(m)) => each(
            m,
            |k, v| match v {
                Value::String(s) => go_base64_error(s.as_bytes()).map(|byte| DecodeProblem {
                    field: format!("{field}[{k}]"),
                    what: Undecodable::Base64 { byte },
                }),
                Value::Null => None,
                other => Some(type_problem(format!("{field}[{k}]"), other, "[]uint8")),
            },
            out,
        ),
        (Shape::Strings, other) => out.push(type_problem(field.into(), other, "map[string]string")),
        (Shape::Bytes, other) => out.push(type_problem(field.into(), other, "map[string][]uint8")),
    }
}

fn each(
    m: &Map<String, Value>,
    f: impl Fn(&str, &Value) -> Option<DecodeProblem>,
    out: &mut Vec<DecodeProblem>,
) {
    out.extend(m.iter().filter_map(|(k, v)| f(k, v)));
}

/// Where Go's standard base64 decoder (padded, `\r` and `\n` skipped) stops on `src`, or `None`
/// when it decodes.
pub fn go_base64_error(src: &[u8]) -> Option<usize> {
    let valid = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
    let newline = |b: u8| b == b'\n' || b == b'\r';
    let mut si = 0;
    while si < src.len() {
        // One quantum of four characters.
        let mut j = 0;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return None;
                }
                return Some(si - j);
            }
            let b = src[si];
            si += 1;
            if valid(b) {
                j += 1;
                continue;
            }
            if newline(b) {
                continue;
            }
            if b != b'=' || j < 2 {
                return Some(si - 1);
            }
            // Padding: "==" after two characters, "=" after three, then only newlines.
            if j == 2 {
                while si < src.len() && newline(src[si]) {
                    si += 1;
                }
                if si == src.len() {
                    return Some(src.len());
                }
                if src[si] != b'=' {
                    return Some(si - 1);
                }
                si += 1;
            }
            while si < src.len() && newline(src[si]) {
                si += 1;
            }
            return (si < src.len()).then_some(si);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn base64_stops_where_go_stops() {
        // Positions checked against Go's encoding/base64.
        let cases: &[(&str, Option<usize>)] = &[
            ("YWJj", None),
            ("YWJj\n", None),
            ("YW\nJj", None),
            ("YQ==", None),
            ("", None),
            ("not base64!", Some(3)),
            ("YQ=", Some(3)),
            ("YQ", Some(0)),
            ("YQ==YQ==", Some(4)),
            ("!!", Some(0)),
            ("YQ=x", Some(2)),
            ("Y===", Some(1)),
            ("YWJjZA=", Some(7)),
            ("YWJjZGVmZ2g!", Some(11)),
        ];
        for (input, expected) in cases {
            assert_eq!(go_base64_error(input.as_bytes()), *expected, "{input:?}");
        }
    }

    #[test]
    fn problems_name_the_go_field_in_body_order() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "labels": {"x": 1}}, "data": {"k": 1}, "binaryData": {"b": "!!"}});
        let problems = decode_problems("", "ConfigMap", &cm, true);
        let errors: Vec<String> = problems.iter().map(DecodeProblem::go_error).collect();
        assert_eq!(
            errors,
            [
                "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string",
                "json: cannot unmarshal number into Go struct field ConfigMap.data of type string",
                "illegal base64 data at input byte 0",
            ]
        );
        assert_eq!(
            problems[1].to_string(),
            "data[k]: Invalid value: must be a string, not a number"
        );
        let secret = json!({"kind": "Secret", "data": [1], "stringData": {"k": {"n": 1}}});
        let errors: Vec<String> = decode_problems("", "Secret", &secret, false)
            .iter()
            .map(DecodeProblem::go_error)
            .collect();
        assert_eq!(
            errors,
            [
                "json: cannot unmarshal array into Go struct field Secret.data of type map[string][]uint8",
                "json: cannot unmarshal object into Go struct field Secret.stringData of type string",
            ]
        );
        let lease = json!({"spec": {"leaseDurationSeconds": "x"}});
        assert_eq!(
            decode_problems("coordination.k8s.io", "Lease", &lease, false)[0].go_error(),
            "json: cannot unmarshal string into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32"
        );
        assert!(decode_problems("", "ConfigMap", &json!({"data": {"k": null}}), true).is_empty());
    }
}

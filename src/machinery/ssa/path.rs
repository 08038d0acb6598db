//! Path elements and field paths, ordered and printed the way Kubernetes does.
//!
//! A path element names a map field (`f:name`), an associative-list item by its key fields
//! (`k:{"port":80,"protocol":"TCP"}`), a set item by its value (`v:"x"`), or a list item by
//! position (`i:0`). Elements sort as structured-merge-diff sorts them (fields, then keys, then
//! values, then indexes), which fixes the key order of the FieldsV1 encoding.

use crate::machinery::field::go_quote;
use serde_json::Value;
use std::cmp::Ordering;
use std::fmt;

/// One step into a value.
#[derive(Debug, Clone)]
pub enum PathElement {
    /// A key of a map (declared field or free-form key).
    Field(String),
    /// An item of an associative list, by its key fields (sorted by name).
    Key(Vec<(String, Value)>),
    /// An item of a set, by its value.
    Value(Value),
    /// An item of a list, by position.
    Index(usize),
}

impl PathElement {
    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The FieldsV1 key for this element: `f:name`, `k:{...}`, `v:...` or `i:N`.
    pub fn to_fields_v1_key(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let mut s = String::from("k:{");
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    crate::machinery::gojson::write_string(&mut s, name);
                    s.push(':');
                    write_json(&mut s, value);
                }
                s.push('}');
                s
            }
            PathElement::Value(v) => {
                let mut s = String::from("v:");
                write_json(&mut s, v);
                s
            }
            PathElement::Index(i) => format!("i:{i}"),
        }
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => {
                for ((an, av), (bn, bv)) in a.iter().zip(b.iter()) {
                    let c = an.cmp(bn).then_with(|| compare_values(av, bv));
                    if c != Ordering::Equal {
                        return c;
                    }
                }
                a.len().cmp(&b.len())
            }
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                f.write_str("[")?;
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{name}={}", value_to_string(value))?;
                }
                f.write_str("]")
            }
            PathElement::Value(v) => write!(f, "[={}]", value_to_string(v)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path from the root of an object to one field.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FieldPath(pub Vec<PathElement>);

impl fmt::Display for FieldPath {
    /// Like Kubernetes: `.spec.ports[port=80,protocol="TCP"].targetPort`,
    /// `.metadata.finalizers[="x"]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for pe in &self.0 {
            write!(f, "{pe}")?;
        }
        Ok(())
    }
}

/// Type rank of a value in structured-merge-diff's total order: numbers, strings, booleans,
/// lists, maps, null.
fn value_rank(v: &Value) -> u8 {
    match v {
        Value::Number(_) => 0,
        Value::String(_) => 1,
        Value::Bool(_) => 2,
        Value::Array(_) => 3,
        Value::Object(_) => 4,
        Value::Null => 5,
    }
}

/// Compares numbers by value (an integer and an equal float are equal).
fn compare_numbers(a: &serde_json::Number, b: &serde_json::Number) -> Ordering {
    let int = |n: &serde_json::Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (int(a), int(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => {
            let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
    }
}

/// A total order over JSON values, as structured-merge-diff orders them.
pub(crate) fn compare_values(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y.iter()) {
                let c = compare_values(p, q);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut xs: Vec<_> = x.iter().collect();
            let mut ys: Vec<_> = y.iter().collect();
            xs.sort_by(|p, q| p.0.cmp(q.0));
            ys.sort_by(|p, q| p.0.cmp(q.0));
            for ((xk, xv), (yk, yv)) in xs.iter().zip(ys.iter()) {
                let c = xk.cmp(yk).then_with(|| compare_values(xv, yv));
                if c != Ordering::Equal {
                    return c;
                }
            }
            xs.len().cmp(&ys.len())
        }
        (Value::Null, Value::Null) => Ordering::Equal,
        _ => value_rank(a).cmp(&value_rank(b)),
    }
}

/// Deep equality where numbers compare by value and map key order does not matter.
pub(crate) fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| values_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        _ => compare_values(a, b) == Ordering::Equal && value_rank(a) == value_rank(b),
    }
}

/// JSON as Go's encoding/json writes it: map keys sorted, `<`, `>`, `&`, U+2028 and U+2029
/// escaped, no spaces.
pub(crate) fn write_json(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => crate::machinery::gojson::write_string(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, item);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut entries: Vec<_> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                crate::machinery::gojson::write_string(out, k);
                out.push(':');
                write_json(out, item);
            }
            out.push('}');
        }
    }
}

/// A value as structured-merge-diff prints it inside a path: strings quoted like Go's `%q`,
/// others as JSON.
fn value_to_string(v: &Value) -> String {
    match v {
        Value::String(s) => go_quote(s),
        _ => {
            let mut s = String::new();
            write_json(&mut s, v);
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn displays_like_kubernetes() {
        let p = FieldPath(vec![
            PathElement::Field("spec".into()),
            PathElement::Field("ports".into()),
            PathElement::Key(vec![
                ("port".into(), json!(80)),
                ("protocol".into(), json!("TCP")),
            ]),
            PathElement::Field("targetPort".into()),
        ]);
        assert_eq!(
            p.to_string(),
            r#".spec.ports[port=80,protocol="TCP"].targetPort"#
        );
        let f = FieldPath(vec![
            PathElement::Field("metadata".into()),
            PathElement::Field("finalizers".into()),
            PathElement::Value(json!("x")),
        ]);
        assert_eq!(f.to_string(), r#".metadata.finalizers[="x"]"#);
        assert_eq!(PathElement::Index(3).to_string(), "[3]");
    }

    #[test]
    fn fields_v1_keys() {
        let k = PathElement::Key(vec![
            ("port".into(), json!(80)),
            ("protocol".into(), json!("TCP")),
        ]);
        assert_eq!(k.to_fields_v1_key(), r#"k:{"port":80,"protocol":"TCP"}"#);
        assert_eq!(
            PathElement::Value(json!("a&b")).to_fields_v1_key(),
            r#"v:"a\u0026b""#
        );
        assert_eq!(PathElement::Index(2).to_fields_v1_key(), "i:2");
    }

    #[test]
    fn ordering_fields_keys_values_indexes() {
        let mut v = [
            PathElement::Index(0),
            PathElement::Value(json!("a")),
            PathElement::Key(vec![("name".into(), json!("a"))]),
            PathElement::Field("z".into()),
            PathElement::Field("a".into()),
        ];
        v.sort();
        assert_eq!(v[0], PathElement::Field("a".into()));
        assert_eq!(v[1], PathElement::Field("z".into()));
        assert!(matches!(v[2], PathElement::Key(_)));
        assert!(matches!(v[3], PathElement::Value(_)));
        assert_eq!(PathElement::Value(json!(1)), PathElement::Value(json!(1.0)));
        assert!(values_equal(
            &json!({"a": 1, "b": [1.0]}),
            &json!({"b": [1], "a": 1})
        ));
        assert!(!values_equal(&json!(null), &json!(false)));
    }
}

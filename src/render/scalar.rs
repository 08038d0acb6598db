//! YAML scalars as kustomize (kyaml on go-yaml v3) sees them inside a JSON object: the text of a scalar,
//! the type an untagged plain scalar resolves to, and writing new text into a scalar that keeps its type.
//!
//! In kustomize a replacement copies only the *text* of a value into an existing scalar; the scalar keeps
//! its YAML tag, and the document is decoded again later. A string field takes any text; an integer field
//! given `abc` fails with go-yaml's "cannot decode !!str `abc` as a !!int". Scalars that a replacement
//! creates have no tag, so their text is typed afresh (`8080` becomes a number).

use serde_json::{Number, Value};

/// The YAML tag a JSON value stands for.
pub fn tag_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "!!null",
        Value::Bool(_) => "!!bool",
        Value::Number(n) if n.is_f64() => "!!float",
        Value::Number(_) => "!!int",
        Value::String(_) => "!!str",
        Value::Array(_) => "!!seq",
        Value::Object(_) => "!!map",
    }
}

/// Whether the value is a YAML scalar (not a mapping or sequence).
pub fn is_scalar(value: &Value) -> bool {
    !matches!(value, Value::Array(_) | Value::Object(_))
}

/// kyaml's node kind name, as its errors spell it.
pub fn kind_name(value: &Value) -> &'static str {
    match value {
        Value::Array(_) => "SequenceNode",
        Value::Object(_) => "MappingNode",
        _ => "ScalarNode",
    }
}

/// The text of a node (`yaml.Node.Value`): a scalar's text, empty for a mapping or sequence.
pub fn text_of(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(_) | Value::Object(_) => String::new(),
    }
}

/// The text kyaml matches a `[field=regex]` list selector against: a scalar's text, or the YAML of a
/// mapping or sequence.
pub fn match_text(value: &Value) -> String {
    if is_scalar(value) {
        text_of(value)
    } else {
        crate::yaml::to_string(value).trim().to_string()
    }
}

/// What go-yaml v3 makes of an untagged plain scalar: null, a YAML 1.2 boolean, an integer (decimal,
/// `0x`, `0o`, `0b`, legacy leading-zero octal, `_` separators), a float, or else a string.
pub fn resolve_plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    let first = text.as_bytes()[0];
    if !(first.is_ascii_digit() || first == b'-' || first == b'+' || first == b'.') {
        return Value::String(text.to_string());
    }
    let plain = text.replace('_', "");
    if let Some(i) = parse_go_int(&plain) {
        return Value::Number(i);
    }
    if is_yaml_float(&plain)
        && let Ok(f) = plain.parse::<f64>()
        && let Some(n) = Number::from_f64(f)
    {
        return Value::Number(n);
    }
    Value::String(text.to_string())
}

/// Go's `strconv.ParseInt(s, 0, 64)` (falling back to `ParseUint`): sign, then `0x`/`0o`/`0b`/`0` prefix.
fn parse_go_int(s: &str) -> Option<Number> {
    let (negative, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = u64::from_str_radix(digits, radix).ok()?;
    if negative {
        if magnitude <= i64::MAX as u64 + 1 {
            Some(Number::from((magnitude as i128).wrapping_neg() as i64))
        } else {
            None
        }
    } else {
        Some(Number::from(magnitude))
    }
}

/// go-yaml's float syntax: `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`.
fn is_yaml_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            digits(&mut i);
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// A scalar's new text could not be read with the scalar's tag (go-yaml's decode error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// The tag the text resolves to.
    pub resolved: &'static str,
    /// The scalar's tag.
    pub tag: &'static str,
}

/// Gives an existing scalar of `tag` (see [`tag_of`]) the text `text`, as go-yaml would decode it.
pub fn decode_as(tag: &'static str, text: &str) -> Result<Value, DecodeError> {
    if tag == "!!str" {
        return Ok(Value::String(text.to_string()));
    }
    let resolved = resolve_plain(text);
    let resolved_tag = tag_of(&resolved);
    if resolved_tag == tag || (tag == "!!float" && resolved_tag == "!!int") {
        return Ok(resolved);
    }
    Err(DecodeError {
        resolved: resolved_tag,
        tag,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resolves_plain_scalars_like_go_yaml() {
        assert_eq!(resolve_plain("8080"), json!(8080));
        assert_eq!(resolve_plain("-12"), json!(-12));
        assert_eq!(resolve_plain("0x1F"), json!(31));
        assert_eq!(resolve_plain("0o17"), json!(15));
        assert_eq!(resolve_plain("017"), json!(15));
        assert_eq!(resolve_plain("1_000"), json!(1000));
        assert_eq!(resolve_plain("1.5"), json!(1.5));
        assert_eq!(resolve_plain("1e3"), json!(1000.0));
        assert_eq!(resolve_plain(".5"), json!(0.5));
        assert_eq!(resolve_plain("true"), json!(true));
        assert_eq!(resolve_plain("yes"), json!("yes"));
        assert_eq!(resolve_plain("~"), Value::Null);
        assert_eq!(resolve_plain(""), Value::Null);
        assert_eq!(resolve_plain("a.b.c"), json!("a.b.c"));
        assert_eq!(resolve_plain("1.2.3"), json!("1.2.3"));
        assert_eq!(resolve_plain("-"), json!("-"));
        assert_eq!(resolve_plain("2024-01-01"), json!("2024-01-01"));
    }

    #[test]
    fn decodes_with_the_target_tag() {
        assert_eq!(decode_as("!!str", "8080"), Ok(json!("8080")));
        assert_eq!(decode_as("!!int", "8080"), Ok(json!(8080)));
        assert_eq!(decode_as("!!float", "3"), Ok(json!(3)));
        assert_eq!(
            decode_as("!!int", "a.b.c"),
            Err(DecodeError {
                resolved: "!!str",
                tag: "!!int"
            })
        );
        assert_eq!(
            decode_as("!!bool", "8080"),
            Err(DecodeError {
                resolved: "!!int",
                tag: "!!bool"
            })
        );
        assert_eq!(decode_as("!!null", "8080").unwrap_err().resolved, "!!int");
        assert_eq!(decode_as("!!int", "").unwrap_err().resolved, "!!null");
    }

    #[test]
    fn texts() {
        assert_eq!(text_of(&json!(3)), "3");
        assert_eq!(text_of(&json!({"a": 1})), "");
        assert_eq!(match_text(&json!({"a": 1})), "a: 1");
    }
}

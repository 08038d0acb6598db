//! kustomize's content hash of a ConfigMap or Secret, the suffix it appends to generated names.
//!
//! kustomize encodes the object as Go's `encoding/json` encodes a map (keys sorted, `<`, `>`, `&`,
//! U+2028 and U+2029 escaped): for a ConfigMap `kind`, `name`, `data` and `binaryData` (when a mapping),
//! for a Secret `kind`, `name`, `type`, `data` and `stringData` (when a mapping). It takes the SHA-256 of
//! that, the first ten hex digits, and swaps `0 1 3 a e` for `g h k m t` (no vowels, no look-alikes).
//!
//! kustomize looks the name up as the single field `metadata/name`, which no object has, so the name is
//! always the empty string: the hash depends on the data (and type) only. An absent field is the empty
//! string, a scalar its text, a mapping the mapping.

use super::error::GeneratorError;
use serde_json::Value;

/// The hash kustomize appends (as `-<hash>`) to the name of a generated ConfigMap or Secret, computed on the
/// object as it is once merged and transformed, e.g. `"7c8bdk29mt"`.
pub fn content_hash(obj: &Value) -> Result<String, GeneratorError> {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    let mut fields: Vec<(&str, Value)> = vec![
        ("kind", Value::String(kind.to_string())),
        ("name", node_value(obj.get("metadata/name"))),
        ("data", node_value(obj.get("data"))),
    ];
    let optional = match kind {
        "ConfigMap" => "binaryData",
        "Secret" => {
            fields.push(("type", node_value(obj.get("type"))));
            "stringData"
        }
        other => {
            return Err(GeneratorError::Hash {
                object: describe(obj),
                reason: format!("only a ConfigMap or a Secret has one, not {other:?}"),
            });
        }
    };
    if let Some(map @ Value::Object(_)) = obj.get(optional).map(|v| node_value(Some(v))) {
        fields.push((optional, map));
    }
    fields.sort_by(|a, b| a.0.cmp(b.0));

    let mut encoded = String::from("{");
    for (i, (key, value)) in fields.iter().enumerate() {
        if i > 0 {
            encoded.push(',');
        }
        go_json::string(&mut encoded, key);
        encoded.push(':');
        go_json::value(&mut encoded, value);
    }
    encoded.push('}');
    Ok(encode(&sha256::hex(encoded.as_bytes())))
}

/// What kustomize's `getNodeValues` makes of a field: absent (or null) is `""`, a scalar its text, a
/// mapping itself, a list null (it fails to decode as a mapping).
fn node_value(value: Option<&Value>) -> Value {
    match value {
        None | Some(Value::Null) => Value::String(String::new()),
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(Value::Bool(b)) => Value::String(b.to_string()),
        Some(Value::Number(n)) => Value::String(n.to_string()),
        Some(Value::Array(_)) => Value::Null,
        Some(map @ Value::Object(_)) => map.clone(),
    }
}

/// The first ten hex digits, with `0 1 3 a e` swapped for `g h k m t`.
fn encode(hex: &str) -> String {
    hex.chars()
        .take(10)
        .map(|c| match c {
            '0' => 'g',
            '1' => 'h',
            '3' => 'k',
            'a' => 'm',
            'e' => 't',
            c => c,
        })
        .collect()
}

fn describe(obj: &Value) -> String {
    crate::object::ObjectKey::from_object(obj)
        .map(|key| key.to_string())
        .unwrap_or_else(|_| "object".to_string())
}

/// JSON as Go's `encoding/json` writes a decoded `interface{}`: maps with sorted keys, numbers as float64,
/// HTML-safe string escapes.
mod go_json {
    use serde_json::Value;
    use std::fmt::Write as _;

    pub(super) fn value(out: &mut String, value: &Value) {
        match value {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => number(out, n.as_f64().unwrap_or_default()),
            Value::String(s) => string(out, s),
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    self::value(out, item);
                }
                out.push(']');
            }
            Value::Object(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                out.push('{');
                for (i, (key, item)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    string(out, key);
                    out.push(':');
                    self::value(out, item);
                }
                out.push('}');
            }
        }
    }

    /// A float64 as Go formats it: shortest decimal, exponent form below 1e-6 and from 1e21 on.
    fn number(out: &mut String, f: f64) {
        let abs = f.abs();
        if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
            let text = format!("{f:e}");
            match text.split_once('e') {
                Some((mantissa, exp)) if !exp.starts_with('-') => {
                    let _ = write!(out, "{mantissa}e+{exp}");
                }
                _ => out.push_str(&text),
            }
        } else {
            let _ = write!(out, "{f}");
        }
    }

    pub(super) fn string(out: &mut String, s: &str) {
        crate::machinery::gojson::write_string(out, s);
    }
}

/// SHA-256, through `ring` (already a dependency of the Kubernetes client).
mod sha256 {
    pub(super) fn hex(data: &[u8]) -> String {
        let digest = ring::digest::digest(&ring::digest::SHA256, data);
        digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn encoded(value: &Value) -> String {
        let mut out = String::new();
        go_json::value(&mut out, value);
        out
    }

    #[test]
    fn known_hashes() {
        // An empty ConfigMap hashes the same whatever its name (kustomize's name lookup finds nothing).
        for name in ["empty", "a-example-configmap", "b-example-configmap"] {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
            assert_eq!(content_hash(&cm).unwrap(), "6ct58987ht");
        }
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                            "type": "Opaque", "data": {}});
        assert_eq!(content_hash(&secret).unwrap(), "46f8b28mk5");
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                        "data": {"a": "1"}});
        assert_eq!(content_hash(&cm).unwrap(), "h29d89cmmt");
        let cm = json!({"kind": "ConfigMap", "data": {"VAR1": "100", "VAR2": "200"}});
        assert_eq!(content_hash(&cm).unwrap(), "hdghb5ddkg");
    }

    #[test]
    fn go_string_escapes() {
        assert_eq!(
            encoded(&json!("a<b>&\"\\\n\r\t\u{8}\u{c}\u{1}\u{7f}\u{2028}é😀")),
            "\"a\\u003cb\\u003e\\u0026\\\"\\\\\\n\\r\\t\\b\\f\\u0001\u{7f}\\u2028é😀\""
        );
    }

    #[test]
    fn go_numbers_and_sorted_maps() {
        assert_eq!(
            encoded(&json!({"b": [1, 1.5, -0.25, 1e21, 1.5e-7, 2020, true, null], "a": {}})),
            "{\"a\":{},\"b\":[1,1.5,-0.25,1e+21,1.5e-7,2020,true,null]}"
        );
    }

    #[test]
    fn other_kinds_are_refused() {
        let err = content_hash(
            &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}),
        )
        .unwrap_err();
        assert!(err.to_string().contains("Service/s"), "{err}");
    }
}

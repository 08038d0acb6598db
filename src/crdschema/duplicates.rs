//! Duplicate fields of a request body, which kube-apiserver's strict decoding reports where a
//! plain decode silently keeps the last: in JSON as `duplicate field "spec.a"`, in YAML as
//! `line 7: key "a" already set in map` (the YAML library's wording, with the key's line).

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

struct Walk<'a> {
    path: String,
    /// Strict decoding errors so far, in order: `duplicate field "a"`, `unknown field "b"`.
    found: &'a RefCell<Vec<String>>,
    /// The paths of fields the decoded type does not declare (their values are not walked).
    unknown: &'a [String],
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq
            .next_element_seed(Walk {
                path: format!("{}[{i}]", self.path),
                found: self.found,
                unknown: self.unknown,
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(k) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                k.clone()
            } else {
                format!("{}.{k}", self.path)
            };
            let repeated = !seen.insert(k);
            let error = if self.unknown.contains(&path) {
                Some(format!("unknown field \"{path}\""))
            } else if repeated {
                Some(format!("duplicate field \"{path}\""))
            } else {
                None
            };
            if let Some(e) = error {
                let mut found = self.found.borrow_mut();
                // Each error once, as Go's decoder dedupes them.
                if !found.contains(&e) {
                    found.push(e);
                }
            }
            if self.unknown.contains(&path) {
                map.next_value::<serde::de::IgnoredAny>()?;
                continue;
            }
            map.next_value_seed(Walk {
                path,
                found: self.found,
                unknown: self.unknown,
            })?;
        }
        Ok(())
    }
}

/// The paths of the fields a JSON document sets twice (`spec.a`, `spec.items[0].b`), in order;
/// empty when it has none or is not JSON (decoding reports that).
pub fn duplicate_fields(json: &[u8]) -> Vec<String> {
    strict_json_errors(json, &[])
        .into_iter()
        .filter_map(|e| {
            e.strip_prefix("duplicate field \"")
                .and_then(|p| p.strip_suffix('"'))
                .map(str::to_string)
        })
        .collect()
}

/// The errors Go's strict decoding of a JSON document into a typed object reports, in the order
/// it meets them: `duplicate field "spec.a"` for a key set twice, `unknown field "b"` for a key
/// at one of the `unknown` paths (whose value it then skips), each error once. Empty when the document is not JSON.
pub fn strict_json_errors(json: &[u8], unknown: &[String]) -> Vec<String> {
    let found = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(json);
    let walk = Walk {
        path: String::new(),
        found: &found,
        unknown,
    };
    if walk.deserialize(&mut de).is_err() {
        return Vec::new();
    }
    found.into_inner()
}

/// The keys a YAML document sets twice in one mapping, as `line N: key "k" already set in map`
/// (N the 1-based line of the repeated key), in order; empty when it has none or is not YAML.
pub fn yaml_duplicate_keys(text: &str) -> Vec<String> {
    use granit_parser::{Event, Parser};
    /// An open mapping (its keys so far, and whether the next node is a key) or sequence.
    enum Open {
        Map(HashSet<String>, bool),
        Seq,
    }
    /// A node just ended inside `stack`'s top: a key or a value of a mapping.
    fn ended(stack: &mut [Open]) {
        if let Some(Open::Map(_, expecting_key)) = stack.last_mut() {
            *expecting_key = !*expecting_key;
        }
    }
    let mut found = Vec::new();
    let mut stack: Vec<Open> = Vec::new();
    for event in Parser::new_from_str(text) {
        let Ok((event, span)) = event else {
            return Vec::new();
        };
        match event {
            Event::Scalar(value, ..) => {
                if let Some(Open::Map(keys, true)) = stack.last_mut()
                    && !keys.insert(value.to_string())
                {
                    found.push(format!(
                        "line {}: key {value:?} already set in map",
                        span.start.line()
                    ));
                }
                ended(&mut stack);
            }
            Event::Alias(_) => ended(&mut stack),
            Event::MappingStart(..) => stack.push(Open::Map(HashSet::new(), true)),
            Event::SequenceStart(..) => stack.push(Open::Seq),
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
                ended(&mut stack);
            }
            _ => {}
        }
    }
    found
}

/// A YAML document read with the last of each repeated key winning, as kube-apiserver reads a
/// body outside strict decoding; `None` when it is not YAML.
pub fn yaml_last_wins(text: &str) -> Option<serde_json::Value> {
    let mut options = serde_saphyr::Options::default();
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::LastWins;
    options.strict_booleans = true;
    options.legacy_octal_numbers = true;
    serde_saphyr::from_str_with_options(text, options).ok()
}

#[cfg(test)]
mod tests {
    use super::{duplicate_fields, strict_json_errors, yaml_duplicate_keys, yaml_last_wins};
    use serde_json::json;

    #[test]
    fn yaml_duplicates_are_found_with_their_lines() {
        let text =
            "kind: X\nspec:\n  a: 1\n  b: [1, 1]\n  a: 2\n  items:\n  - k: 1\n    k: 2\nkind: Y\n";
        assert_eq!(
            yaml_duplicate_keys(text),
            vec![
                "line 5: key \"a\" already set in map",
                "line 8: key \"k\" already set in map",
                "line 9: key \"kind\" already set in map"
            ]
        );
        assert!(yaml_duplicate_keys("a: {a: 1}\nb: [a, a]\n").is_empty());
        assert_eq!(
            yaml_last_wins(text).unwrap(),
            json!({"kind": "Y", "spec": {"a": 2, "b": [1, 1], "items": [{"k": 2}]}})
        );
    }

    #[test]
    fn duplicates_are_found_with_their_paths() {
        let body = br#"{"spec": {"a": 1, "a": 2, "items": [{"b": 1, "b": {"c": 1}}]}, "kind": "X", "kind": "X"}"#;
        assert_eq!(
            duplicate_fields(body),
            vec!["spec.a", "spec.items[0].b", "kind"]
        );
        assert!(duplicate_fields(br#"{"a": {"a": 1}}"#).is_empty());
        assert!(duplicate_fields(b"not json").is_empty());
    }

    #[test]
    fn strict_errors_interleave_duplicates_and_unknown_fields_in_document_order() {
        let body = br#"{"metadata": {"name": "b", "zz": 1}, "data": {"x": "1", "x": "2"}, "bogus": {"a": 1, "a": 2}, "bogus": 1}"#;
        let unknown = vec!["metadata.zz".to_string(), "bogus".to_string()];
        assert_eq!(
            strict_json_errors(body, &unknown),
            vec![
                "unknown field \"metadata.zz\"",
                "duplicate field \"data.x\"",
                "unknown field \"bogus\""
            ]
        );
    }
}

//! Duplicate fields of a JSON body, which kube-apiserver's strict decoding reports
//! (`duplicate field "spec.a"`) where a plain decode silently keeps the last.

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

struct Walk<'a> {
    path: String,
    found: &'a RefCell<Vec<String>>,
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
            if !seen.insert(k) {
                self.found.borrow_mut().push(path.clone());
            }
            map.next_value_seed(Walk {
                path,
                found: self.found,
            })?;
        }
        Ok(())
    }
}

/// The paths of the fields a JSON document sets twice (`spec.a`, `spec.items[0].b`), in order;
/// empty when it has none or is not JSON (decoding reports that).
pub fn duplicate_fields(json: &[u8]) -> Vec<String> {
    let found = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(json);
    let walk = Walk {
        path: String::new(),
        found: &found,
    };
    if walk.deserialize(&mut de).is_err() {
        return Vec::new();
    }
    found.into_inner()
}

#[cfg(test)]
mod tests {
    use super::duplicate_fields;

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
}

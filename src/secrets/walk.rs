//! Walking a document's values in order, as SOPS does: each scalar is encrypted or decrypted at
//! its path (the mapping keys leading to it; sequence positions do not count) and hashed into the
//! MAC (SHA-512 over the plain values in document order, upper-case hex).

use serde_json::{Map, Value};

use super::SopsError;
use super::cipher::{self, CipherError};
use super::rules::Rule;

/// The 32 bytes a `mac_only_encrypted` MAC starts from (SHA-256 of `sops`), so that it never
/// equals a MAC over every value.
const MAC_ONLY_ENCRYPTED_INIT: [u8; 32] = [
    0x8a, 0x3f, 0xd2, 0xad, 0x54, 0xce, 0x66, 0x52, 0x7b, 0x10, 0x34, 0xf3, 0xd1, 0x47, 0xbe, 0x0b,
    0x0b, 0x97, 0x5b, 0x3b, 0xf4, 0x4f, 0x72, 0xc6, 0xfd, 0xad, 0xec, 0x81, 0x76, 0xf2, 0x7d, 0x69,
];

/// Encrypting or decrypting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Encrypt,
    Decrypt,
}

/// One walk over one or more documents (a multi-document file has one MAC).
pub(crate) struct Walk<'a> {
    key: &'a [u8; 32],
    rule: &'a Rule,
    mac_only_encrypted: bool,
    direction: Direction,
    mac: ring::digest::Context,
    /// JSON pointers of the values that are encrypted in the file, per document.
    pub pointers: Vec<String>,
}

/// Where the walk is: the keys (for the rule and the additional data), the JSON pointer (for the
/// mask) and the path in the user's words (for errors).
struct At<'p> {
    keys: &'p [String],
    pointer: &'p str,
    shown: &'p str,
}

impl<'a> Walk<'a> {
    pub(crate) fn new(
        key: &'a [u8; 32],
        rule: &'a Rule,
        mac_only_encrypted: bool,
        direction: Direction,
    ) -> Walk<'a> {
        let mut mac = ring::digest::Context::new(&ring::digest::SHA512);
        if mac_only_encrypted {
            mac.update(&MAC_ONLY_ENCRYPTED_INIT);
        }
        Walk {
            key,
            rule,
            mac_only_encrypted,
            direction,
            mac,
            pointers: Vec::new(),
        }
    }

    /// Walks one document's top-level mapping (without its `sops` block); returns the document
    /// with every value the rule covers encrypted or decrypted.
    pub(crate) fn document(&mut self, doc: &Map<String, Value>) -> Result<Value, SopsError> {
        self.mapping(doc, &mut Vec::new(), "", "")
    }

    /// The MAC over every value walked so far (upper-case hex, as SOPS writes it).
    pub(crate) fn mac_hex(self) -> String {
        self.mac
            .finish()
            .as_ref()
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect()
    }

    fn mapping(
        &mut self,
        map: &Map<String, Value>,
        keys: &mut Vec<String>,
        pointer: &str,
        shown: &str,
    ) -> Result<Value, SopsError> {
        let mut out = Map::with_capacity(map.len());
        for (k, v) in map {
            keys.push(k.clone());
            let pointer = format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1"));
            let shown = if shown.is_empty() {
                k.clone()
            } else {
                format!("{shown}.{k}")
            };
            let walked = self.value(v, keys, &pointer, &shown);
            keys.pop();
            out.insert(k.clone(), walked?);
        }
        Ok(Value::Object(out))
    }

    fn value(
        &mut self,
        v: &Value,
        keys: &mut Vec<String>,
        pointer: &str,
        shown: &str,
    ) -> Result<Value, SopsError> {
        match v {
            Value::Object(map) => self.mapping(map, keys, pointer, shown),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    self.value(
                        item,
                        keys,
                        &format!("{pointer}/{i}"),
                        &format!("{shown}[{i}]"),
                    )
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            Value::Null => Ok(Value::Null),
            scalar => self.leaf(
                scalar,
                At {
                    keys,
                    pointer,
                    shown,
                },
            ),
        }
    }

    fn hash(&mut self, plain: &Value, encrypted: bool) {
        if (!self.mac_only_encrypted || encrypted)
            && let Some((bytes, _)) = cipher::plain_bytes(plain)
        {
            self.mac.update(&bytes);
        }
    }

    fn leaf(&mut self, v: &Value, at: At<'_>) -> Result<Value, SopsError> {
        let key_refs: Vec<&str> = at.keys.iter().map(String::as_str).collect();
        let encrypted = match self.rule.encrypts(&key_refs) {
            Some(e) => e,
            // Comment rules: the value's own form says whether it is encrypted.
            None => match self.direction {
                Direction::Decrypt => v.as_str().is_some_and(cipher::looks_encrypted),
                Direction::Encrypt => false,
            },
        };
        if !encrypted {
            self.hash(v, false);
            return Ok(v.clone());
        }
        self.pointers.push(at.pointer.to_string());
        let aad = format!("{}:", at.keys.join(":"));
        match self.direction {
            Direction::Encrypt => {
                self.hash(v, true);
                let text = cipher::encrypt_value(v, self.key, &aad)
                    .expect("a scalar always has a plain text");
                Ok(Value::String(text))
            }
            Direction::Decrypt => {
                let Value::String(text) = v else {
                    return Err(SopsError::NotEncrypted {
                        path: at.shown.to_string(),
                    });
                };
                if text.is_empty() {
                    return Ok(Value::String(String::new()));
                }
                let plain = cipher::decrypt_value(text, self.key, &aad)
                    .map_err(|e| value_error(e, at.shown))?;
                self.hash(&plain, true);
                Ok(plain)
            }
        }
    }
}

/// A value that could not be decrypted, in the user's words (never with the value).
fn value_error(e: CipherError, shown: &str) -> SopsError {
    let path = shown.to_string();
    match e {
        CipherError::NotEncrypted => SopsError::NotEncrypted { path },
        CipherError::Malformed(part) => SopsError::Invalid(format!(
            "the encrypted value at `{path}` is malformed (its {part} part)"
        )),
        CipherError::Authentication => SopsError::ValueTampered { path },
        CipherError::BadType(kind) => SopsError::Invalid(format!(
            "the value at `{path}` decrypts to text that is not of its type `{kind}`"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::EncryptionRules;
    use serde_json::json;

    const KEY: [u8; 32] = [3u8; 32];

    fn rule() -> Rule {
        Rule::from_settings(&EncryptionRules::default(), false, "test").unwrap()
    }

    fn round_trip(doc: Value) -> (Value, Value, String, String, Vec<String>) {
        let rule = rule();
        let mut enc = Walk::new(&KEY, &rule, false, Direction::Encrypt);
        let encrypted = enc.document(doc.as_object().unwrap()).unwrap();
        let enc_mac = enc.mac_hex();
        let mut dec = Walk::new(&KEY, &rule, false, Direction::Decrypt);
        let decrypted = dec.document(encrypted.as_object().unwrap()).unwrap();
        let pointers = dec.pointers.clone();
        (encrypted, decrypted, enc_mac, dec.mac_hex(), pointers)
    }

    #[test]
    fn encrypts_every_scalar_at_its_key_path_and_macs_match() {
        let doc = json!({"a": {"b": "x", "n": 1, "f": 1.5, "t": true, "z": null},
                         "list": ["p", "q"], "name_unencrypted": "plain", "e": ""});
        let (enc, dec, m1, m2, pointers) = round_trip(doc.clone());
        assert_eq!(dec, doc);
        assert_eq!(m1, m2);
        assert_eq!(m1.len(), 128);
        assert!(
            enc["a"]["b"]
                .as_str()
                .unwrap()
                .starts_with("ENC[AES256_GCM,")
        );
        assert_eq!(enc["a"]["z"], Value::Null);
        assert_eq!(enc["name_unencrypted"], "plain");
        assert_eq!(enc["e"], "");
        // A sequence item's additional data is its parent's keys: it decrypts under `list:`.
        let item = enc["list"][1].as_str().unwrap();
        assert_eq!(cipher::decrypt_value(item, &KEY, "list:").unwrap(), "q");
        assert_eq!(
            pointers,
            vec!["/a/b", "/a/n", "/a/f", "/a/t", "/list/0", "/list/1", "/e"]
        );
    }

    #[test]
    fn the_mac_is_sha512_over_the_plain_values_in_order() {
        let rule = rule();
        let mut w = Walk::new(&KEY, &rule, false, Direction::Encrypt);
        w.document(json!({"a": "x", "b": 2, "c": false}).as_object().unwrap())
            .unwrap();
        let expected: String = ring::digest::digest(&ring::digest::SHA512, b"x2False")
            .as_ref()
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect();
        assert_eq!(w.mac_hex(), expected);
    }

    #[test]
    fn a_plain_value_where_the_rule_wants_ciphertext_is_named() {
        let rule = rule();
        let mut w = Walk::new(&KEY, &rule, false, Direction::Decrypt);
        let err = w
            .document(
                json!({"data": {"password": "hunter2"}})
                    .as_object()
                    .unwrap(),
            )
            .unwrap_err()
            .to_string();
        assert!(err.contains("`data.password` is not encrypted"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
    }

    #[test]
    fn a_moved_value_does_not_decrypt() {
        let (enc, ..) = round_trip(json!({"a": "x", "b": "y"}));
        let swapped = json!({"a": enc["b"], "b": enc["a"]});
        let rule = rule();
        let mut w = Walk::new(&KEY, &rule, false, Direction::Decrypt);
        let err = w
            .document(swapped.as_object().unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("`a`"), "{err}");
    }
}

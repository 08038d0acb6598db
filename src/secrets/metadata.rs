//! The `sops` metadata block of an encrypted document: the age recipients with the wrapped data
//! key, the MAC, when it was last modified, and which values the file encrypts.

use serde_json::{Map, Value};

use super::rules::Rule;
use super::{EncryptionRules, SopsError};

/// The SOPS version written into files the project encrypts (the format it follows).
pub(crate) const WRITTEN_VERSION: &str = "3.9.0";

/// One `sops.age[]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AgeStanza {
    pub recipient: String,
    /// The data key, age-encrypted and ASCII-armored.
    pub enc: String,
}

/// What decryption needs from the `sops` block.
#[derive(Debug, Clone)]
pub(crate) struct Metadata {
    pub age: Vec<AgeStanza>,
    /// Other key services the file is also encrypted for (`pgp`, `kms`...), for the error text.
    pub other_key_kinds: Vec<String>,
    pub lastmodified: String,
    pub mac: String,
    pub mac_only_encrypted: bool,
    pub rule: Rule,
}

fn invalid(what: impl std::fmt::Display) -> SopsError {
    SopsError::Invalid(format!("the sops metadata is malformed: {what}"))
}

fn string_field(block: &Map<String, Value>, name: &str) -> Result<Option<String>, SopsError> {
    match block.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(format!("`sops.{name}` is not a string"))),
    }
}

fn age_stanzas(list: &Value, at: &str) -> Result<Vec<AgeStanza>, SopsError> {
    let Value::Array(items) = list else {
        return Err(invalid(format!("`{at}` is not a list")));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let get = |field: &str| {
                item.get(field)
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .ok_or_else(|| invalid(format!("`{at}[{i}].{field}` is missing")))
            };
            Ok(AgeStanza {
                recipient: get("recipient")?,
                enc: get("enc")?,
            })
        })
        .collect()
}

const KEY_SERVICES: [&str; 6] = ["pgp", "kms", "gcp_kms", "azure_kv", "hc_vault", "hckms"];

fn has_entries(block: &Map<String, Value>, name: &str) -> bool {
    block
        .get(name)
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
}

impl Metadata {
    /// Reads the `sops` mapping of a document.
    pub(crate) fn parse(block: &Value) -> Result<Metadata, SopsError> {
        let Value::Object(block) = block else {
            return Err(invalid("`sops` is not a mapping"));
        };
        let mut age = match block.get("age") {
            None | Some(Value::Null) => vec![],
            Some(list) => age_stanzas(list, "sops.age")?,
        };
        let mut other_key_kinds: Vec<String> = KEY_SERVICES
            .iter()
            .filter(|k| has_entries(block, k))
            .map(|k| k.to_string())
            .collect();
        if let Some(groups) = block.get("key_groups").and_then(Value::as_array) {
            let threshold = block
                .get("shamir_threshold")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            if groups.len() > 1 && threshold != 1 {
                return Err(SopsError::Invalid(
                    "the file splits its data key across key groups (Shamir); aro-gitops \
                     decrypts files whose data key one age identity can unwrap"
                        .to_string(),
                ));
            }
            for (g, group) in groups.iter().enumerate() {
                if let Some(list) = group.get("age").filter(|v| !v.is_null()) {
                    age.extend(age_stanzas(list, &format!("sops.key_groups[{g}].age"))?);
                }
                if let Value::Object(group) = group {
                    other_key_kinds.extend(
                        KEY_SERVICES
                            .iter()
                            .filter(|k| has_entries(group, k))
                            .map(|k| k.to_string()),
                    );
                }
            }
        }
        let lastmodified = string_field(block, "lastmodified")?
            .ok_or_else(|| invalid("`sops.lastmodified` is missing"))?;
        let mac = string_field(block, "mac")?
            .ok_or_else(|| invalid("`sops.mac` is missing: the file cannot be checked"))?;
        let mac_only_encrypted = match block.get("mac_only_encrypted") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(invalid("`sops.mac_only_encrypted` is not true or false")),
        };
        let settings = EncryptionRules {
            encrypted_regex: string_field(block, "encrypted_regex")?,
            unencrypted_regex: string_field(block, "unencrypted_regex")?,
            encrypted_suffix: string_field(block, "encrypted_suffix")?,
            unencrypted_suffix: string_field(block, "unencrypted_suffix")?,
        };
        let comment_rule = string_field(block, "encrypted_comment_regex")?.is_some()
            || string_field(block, "unencrypted_comment_regex")?.is_some();
        let rule = Rule::from_settings(&settings, comment_rule, "the file's sops metadata")?;
        Ok(Metadata {
            age,
            other_key_kinds,
            lastmodified,
            mac,
            mac_only_encrypted,
            rule,
        })
    }

    /// The additional data the MAC is encrypted with: `lastmodified` as Go's RFC 3339 formatting
    /// writes it (whole seconds, `Z` for UTC), which is what SOPS authenticates.
    pub(crate) fn mac_aad(&self) -> Result<String, SopsError> {
        rfc3339_as_go_writes(&self.lastmodified)
            .ok_or_else(|| invalid("`sops.lastmodified` is not an RFC 3339 time"))
    }
}

/// `text` (RFC 3339) re-written as Go's `time.Format(time.RFC3339)` writes it.
pub(crate) fn rfc3339_as_go_writes(text: &str) -> Option<String> {
    let t = chrono::DateTime::parse_from_rfc3339(text).ok()?;
    let zone = if t.offset().local_minus_utc() == 0 {
        "Z".to_string()
    } else {
        t.format("%:z").to_string()
    };
    Some(format!("{}{zone}", t.format("%Y-%m-%dT%H:%M:%S")))
}

/// The `sops` block the project writes (keys in the order SOPS writes them).
pub(crate) fn write(age: &[AgeStanza], lastmodified: &str, mac: &str, rule: &Rule) -> Value {
    let mut block = Map::new();
    block.insert(
        "age".into(),
        Value::Array(
            age.iter()
                .map(|s| {
                    let mut m = Map::new();
                    m.insert("recipient".into(), Value::String(s.recipient.clone()));
                    m.insert("enc".into(), Value::String(s.enc.clone()));
                    Value::Object(m)
                })
                .collect(),
        ),
    );
    block.insert(
        "lastmodified".into(),
        Value::String(lastmodified.to_string()),
    );
    block.insert("mac".into(), Value::String(mac.to_string()));
    if let Some((name, value)) = rule.metadata_entry() {
        block.insert(name.into(), Value::String(value));
    }
    block.insert("version".into(), Value::String(WRITTEN_VERSION.into()));
    Value::Object(block)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn block() -> Value {
        json!({
            "age": [{"recipient": "age1abc", "enc": "-----BEGIN AGE ENCRYPTED FILE-----\nx\n-----END AGE ENCRYPTED FILE-----\n"}],
            "lastmodified": "2024-05-01T10:00:00Z",
            "mac": "ENC[AES256_GCM,data:x,iv:y,tag:z,type:str]",
            "pgp": [],
            "encrypted_regex": "^data$",
            "version": "3.8.1"
        })
    }

    #[test]
    fn reads_age_stanzas_mac_and_rule() {
        let m = Metadata::parse(&block()).unwrap();
        assert_eq!(m.age.len(), 1);
        assert_eq!(m.age[0].recipient, "age1abc");
        assert!(m.other_key_kinds.is_empty());
        assert_eq!(m.rule.encrypts(&["data"]), Some(true));
        assert_eq!(m.rule.encrypts(&["kind"]), Some(false));
        assert!(!m.mac_only_encrypted);
    }

    #[test]
    fn missing_mac_or_recipient_is_malformed() {
        let mut b = block();
        b.as_object_mut().unwrap().remove("mac");
        let err = Metadata::parse(&b).unwrap_err().to_string();
        assert!(err.contains("`sops.mac` is missing"), "{err}");
        let mut b = block();
        b["age"][0].as_object_mut().unwrap().remove("recipient");
        let err = Metadata::parse(&b).unwrap_err().to_string();
        assert!(err.contains("`sops.age[0].recipient` is missing"), "{err}");
        let err = Metadata::parse(&json!("x")).unwrap_err().to_string();
        assert!(err.contains("not a mapping"), "{err}");
    }

    #[test]
    fn lastmodified_is_authenticated_as_go_writes_it() {
        assert_eq!(
            rfc3339_as_go_writes("2024-05-01T10:00:00Z").unwrap(),
            "2024-05-01T10:00:00Z"
        );
        assert_eq!(
            rfc3339_as_go_writes("2024-05-01T10:00:00.123+00:00").unwrap(),
            "2024-05-01T10:00:00Z"
        );
        assert_eq!(
            rfc3339_as_go_writes("2024-05-01T10:00:00+02:00").unwrap(),
            "2024-05-01T10:00:00+02:00"
        );
        assert!(rfc3339_as_go_writes("yesterday").is_none());
    }

    #[test]
    fn key_groups_age_entries_are_read_and_other_services_named() {
        let b = json!({
            "key_groups": [{"age": [{"recipient": "age1g", "enc": "e"}], "pgp": [{"fp": "F"}]}],
            "lastmodified": "2024-05-01T10:00:00Z",
            "mac": "m"
        });
        let m = Metadata::parse(&b).unwrap();
        assert_eq!(m.age[0].recipient, "age1g");
        assert_eq!(m.other_key_kinds, vec!["pgp"]);
        assert_eq!(m.rule.encrypts(&["x_unencrypted"]), Some(false));
    }
}

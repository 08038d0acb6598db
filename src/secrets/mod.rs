//! Secrets kept in git as SOPS files (age recipients): finding them, decrypting them in memory,
//! and encrypting them (`aro-gitops secrets encrypt`).
//!
//! The signatures below are the contract between the SOPS core (this module and its files:
//! `cipher` for one `ENC[...]` value, `rules` for which values are encrypted, `metadata` for the
//! `sops` block, `age_key` for the data key, `walk` for the values and the MAC) and the pipeline that
//! uses it (agent, plan, reports). `formats` reads and writes the dotenv and binary forms SOPS
//! gives files that are not YAML or JSON documents (a `secretGenerator`'s inputs).

mod age_key;
mod cipher;
mod file;
pub mod formats;
mod metadata;
mod rules;
mod walk;

use std::str::FromStr;

use serde_json::{Map, Value};

pub use file::{SOPS_CONFIG_FILE, encrypt_file};
use metadata::Metadata;
use rules::Rule;
use walk::{Direction, Walk};

/// Why a SOPS document could not be decrypted or encrypted, in the user's words (the caller adds
/// the file and the object).
#[derive(Debug, thiserror::Error)]
pub enum SopsError {
    #[error("{0}")]
    Invalid(String),
    /// No identity of the keyring opens the data key.
    #[error(
        "none of the {identities} age identities can decrypt the data key; the file is encrypted for {recipients}"
    )]
    NoMatchingIdentity {
        identities: usize,
        recipients: String,
    },
    /// The keyring is empty.
    #[error("no age identity to decrypt with; the file is encrypted for {recipients}")]
    NoIdentity { recipients: String },
    /// The file has no age recipient at all.
    #[error(
        "the file is not encrypted for any age recipient (only for {others}); aro-gitops decrypts with age identities"
    )]
    NoAgeRecipient { others: String },
    /// The MAC over the values does not match the one stored (encrypted) in the file.
    #[error("the MAC does not match: the file was changed after it was encrypted")]
    MacMismatch,
    /// A value the file's rules say is encrypted is in plain text.
    #[error("the value at `{path}` is not encrypted, but the file's rules say it should be")]
    NotEncrypted { path: String },
    /// A value's authentication tag fails: it was changed, or moved to another key.
    #[error(
        "the value at `{path}` does not decrypt with the file's data key: it was changed or moved after it was encrypted"
    )]
    ValueTampered { path: String },
}

/// Fills `buf` from the system's secure random source.
pub(crate) fn random_fill(buf: &mut [u8]) {
    use ring::rand::SecureRandom;
    ring::rand::SystemRandom::new()
        .fill(buf)
        .expect("the system's random source is available");
}

/// The age identities the agent decrypts with (from `--decryption-key-file` or the Secret named by
/// `--decryption-secret`). Never printed: its `Debug` names only how many identities it holds.
pub struct Keyring {
    identities: Vec<age::x25519::Identity>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Keyring({} age identities)", self.identities.len())
    }
}

impl Keyring {
    /// Reads an age identity file's text (`AGE-SECRET-KEY-1...` lines, `#` comments, blank lines).
    /// A bad line is named by its number, never by its text (it may hold a key).
    pub fn parse(text: &str) -> Result<Keyring, SopsError> {
        let mut identities = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if line.starts_with("AGE-PLUGIN-") {
                return Err(SopsError::Invalid(format!(
                    "line {} holds an age plugin identity; aro-gitops reads native age identities (AGE-SECRET-KEY-1...)",
                    n + 1
                )));
            }
            let identity = age::x25519::Identity::from_str(line).map_err(|_| {
                SopsError::Invalid(format!(
                    "line {} is not an age identity (AGE-SECRET-KEY-1...)",
                    n + 1
                ))
            })?;
            identities.push(identity);
        }
        if identities.is_empty() {
            return Err(SopsError::Invalid(
                "it holds no age identity (AGE-SECRET-KEY-1... lines)".to_string(),
            ));
        }
        Ok(Keyring { identities })
    }

    /// The public recipients (`age1...`) of the identities, to say which files it can open.
    pub fn recipients(&self) -> Vec<String> {
        self.identities
            .iter()
            .map(|i| i.to_public().to_string())
            .collect()
    }

    /// How many identities it holds.
    pub fn len(&self) -> usize {
        self.identities.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.identities.is_empty()
    }
}

/// Whether `document` is in SOPS format (it carries a top-level `sops` metadata mapping).
pub fn is_encrypted(document: &Value) -> bool {
    document
        .as_object()
        .and_then(|m| m.get("sops"))
        .is_some_and(Value::is_object)
}

/// A decrypted document: the plaintext (without the `sops` block) and the JSON pointers (RFC 6901)
/// of the values that were encrypted, which every output must mask.
/// Its `Debug` shows the pointers only, never the plaintext.
pub struct Decrypted {
    pub document: Value,
    pub encrypted_pointers: Vec<String>,
}

impl std::fmt::Debug for Decrypted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decrypted")
            .field("document", &"<decrypted, not shown>")
            .field("encrypted_pointers", &self.encrypted_pointers)
            .finish()
    }
}

/// Decrypts a SOPS `document` with `keyring`: unwraps the data key with an age identity, decrypts
/// every `ENC[AES256_GCM,...]` value, and checks the MAC. All or nothing.
pub fn decrypt(document: &Value, keyring: &Keyring) -> Result<Decrypted, SopsError> {
    let mut all = decrypt_documents(std::slice::from_ref(document), keyring)?;
    Ok(all.pop().expect("one document in, one out"))
}

/// Decrypts the documents of one multi-document SOPS file (every document carries the same
/// `sops` block; the first one's counts, and one MAC covers them all, in order). All or nothing.
pub fn decrypt_documents(
    documents: &[Value],
    keyring: &Keyring,
) -> Result<Vec<Decrypted>, SopsError> {
    let first = documents
        .first()
        .ok_or_else(|| SopsError::Invalid("the file holds no document".to_string()))?;
    let block = first.get("sops").ok_or_else(|| {
        SopsError::Invalid("the first document has no `sops` metadata block".to_string())
    })?;
    let meta = Metadata::parse(block)?;
    let key = age_key::unwrap_data_key(&meta.age, &keyring.identities, &meta.other_key_kinds)?;
    let mut walk = Walk::new(
        &key,
        &meta.rule,
        meta.mac_only_encrypted,
        Direction::Decrypt,
    );
    let mut out = Vec::with_capacity(documents.len());
    for (i, doc) in documents.iter().enumerate() {
        let map = without_sops(doc, i)?;
        let before = walk.pointers.len();
        let document = walk.document(&map)?;
        let encrypted_pointers = walk.pointers.split_off(before);
        out.push(Decrypted {
            document,
            encrypted_pointers,
        });
    }
    let computed = walk.mac_hex();
    let stored = match cipher::decrypt_value(&meta.mac, &key, &meta.mac_aad()?) {
        Ok(Value::String(mac)) => mac,
        _ => return Err(SopsError::MacMismatch),
    };
    if !stored.eq_ignore_ascii_case(&computed) {
        return Err(SopsError::MacMismatch);
    }
    Ok(out)
}

/// Document `i`'s top-level mapping without its `sops` block.
fn without_sops(doc: &Value, i: usize) -> Result<Map<String, Value>, SopsError> {
    let Value::Object(map) = doc else {
        return Err(SopsError::Invalid(format!(
            "document {} of the file is not a mapping",
            i + 1
        )));
    };
    let mut map = map.clone();
    map.shift_remove("sops");
    Ok(map)
}

/// Which values [`encrypt`] encrypts (SOPS's rules; at most one of the four may be set; none set
/// means every value).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EncryptionRules {
    pub encrypted_regex: Option<String>,
    pub unencrypted_regex: Option<String>,
    pub encrypted_suffix: Option<String>,
    pub unencrypted_suffix: Option<String>,
}

/// Encrypts `document` for the age `recipients` (`age1...`), as SOPS writes it.
/// Each recipient entry may hold several, comma-separated.
pub fn encrypt(
    document: &Value,
    recipients: &[String],
    rules: &EncryptionRules,
) -> Result<Value, SopsError> {
    let mut all = encrypt_documents(std::slice::from_ref(document), recipients, rules)?;
    Ok(all.pop().expect("one document in, one out"))
}

/// Encrypts the documents of one multi-document file with one data key and one MAC; each
/// document gets the same `sops` block, as SOPS writes them.
pub fn encrypt_documents(
    documents: &[Value],
    recipients: &[String],
    rules: &EncryptionRules,
) -> Result<Vec<Value>, SopsError> {
    let recipients = age_key::parse_recipients(recipients)?;
    let rule = Rule::from_settings(rules, false, "the encryption rules")?;
    if documents.is_empty() {
        return Err(SopsError::Invalid("the file holds no document".to_string()));
    }
    let mut key = [0u8; 32];
    random_fill(&mut key);
    let stanzas = age_key::wrap_data_key(&key, &recipients)?;
    let mut walk = Walk::new(&key, &rule, false, Direction::Encrypt);
    let mut encrypted = Vec::with_capacity(documents.len());
    for (i, doc) in documents.iter().enumerate() {
        if is_encrypted(doc) {
            return Err(SopsError::Invalid(format!(
                "document {} already has a `sops` block: it is already encrypted",
                i + 1
            )));
        }
        let map = without_sops(doc, i)?;
        encrypted.push(walk.document(&map)?);
    }
    let lastmodified = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let mac = cipher::encrypt_value(&Value::String(walk.mac_hex()), &key, &lastmodified)
        .expect("a MAC is a non-empty string");
    let block = metadata::write(&stanzas, &lastmodified, &mac, &rule);
    Ok(encrypted
        .into_iter()
        .map(|mut doc| {
            if let Value::Object(map) = &mut doc {
                map.insert("sops".into(), block.clone());
            }
            doc
        })
        .collect())
}

#[cfg(test)]
mod tests;

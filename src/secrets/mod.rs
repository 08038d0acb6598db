//! Secrets kept in git as SOPS files (age recipients): finding them, decrypting them in memory,
//! and encrypting them (`aro-gitops secrets encrypt`).
//!
//! SKELETON (issue 16, being filled): the signatures below are the contract between the SOPS
//! core (this module's bodies) and the pipeline that uses it (agent, plan, reports).

use serde_json::Value;

/// Why a SOPS document could not be decrypted or encrypted, in the user's words (the caller adds
/// the file and the object).
#[derive(Debug, thiserror::Error)]
pub enum SopsError {
    #[error("{0}")]
    Invalid(String),
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
    pub fn parse(_text: &str) -> Result<Keyring, SopsError> {
        unimplemented!("issue 16: SOPS core")
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
pub fn is_encrypted(_document: &Value) -> bool {
    unimplemented!("issue 16: SOPS core")
}

/// A decrypted document: the plaintext (without the `sops` block) and the JSON pointers (RFC 6901)
/// of the values that were encrypted, which every output must mask.
#[derive(Debug)]
pub struct Decrypted {
    pub document: Value,
    pub encrypted_pointers: Vec<String>,
}

/// Decrypts a SOPS `document` with `keyring`: unwraps the data key with an age identity, decrypts
/// every `ENC[AES256_GCM,...]` value, and checks the MAC. All or nothing.
pub fn decrypt(_document: &Value, _keyring: &Keyring) -> Result<Decrypted, SopsError> {
    unimplemented!("issue 16: SOPS core")
}

/// Which values [`encrypt`] encrypts (SOPS's rules; at most one of the four may be set; none set
/// means every value).
#[derive(Debug, Clone, Default)]
pub struct EncryptionRules {
    pub encrypted_regex: Option<String>,
    pub unencrypted_regex: Option<String>,
    pub encrypted_suffix: Option<String>,
    pub unencrypted_suffix: Option<String>,
}

/// Encrypts `document` for the age `recipients` (`age1...`), as SOPS writes it.
pub fn encrypt(
    _document: &Value,
    _recipients: &[String],
    _rules: &EncryptionRules,
) -> Result<Value, SopsError> {
    unimplemented!("issue 16: SOPS core")
}

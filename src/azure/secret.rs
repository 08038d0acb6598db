//! Secret material (a client secret, a certificate's PEM with its key) in a type that never shows
//! it: Debug and Display print `[redacted]`, and only [`SecretMaterial::expose`] reads it.

use std::fmt;

/// Bytes that must never reach a log, error, report or panic message.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretMaterial(Vec<u8>);

impl SecretMaterial {
    pub fn new(bytes: impl Into<Vec<u8>>) -> SecretMaterial {
        SecretMaterial(bytes.into())
    }

    /// The secret itself: only for the request that sends it or the check that compares it.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }

    /// The secret as text, when it is UTF-8.
    pub fn expose_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// SHA-256 of the material: what the credential cache keys on, so that a rotated secret
    /// makes a new credential without the cache holding the secret in its key.
    pub fn sha256(&self) -> [u8; 32] {
        let digest = ring::digest::digest(&ring::digest::SHA256, &self.0);
        let mut out = [0u8; 32];
        out.copy_from_slice(digest.as_ref());
        out
    }

    /// Compares in time independent of where the two differ.
    pub fn constant_time_eq(&self, other: &[u8]) -> bool {
        if self.0.len() != other.len() {
            return false;
        }
        self.0
            .iter()
            .zip(other)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

impl fmt::Debug for SecretMaterial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(crate::redact::REDACTED)
    }
}

impl fmt::Display for SecretMaterial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(crate::redact::REDACTED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_shows_itself() {
        let s = SecretMaterial::new("hunter2-very-secret");
        assert_eq!(format!("{s:?}"), "[redacted]");
        assert_eq!(format!("{s}"), "[redacted]");
        assert_eq!(format!("{:?}", Some(&s)), "Some([redacted])");
    }

    #[test]
    fn hash_and_compare() {
        let a = SecretMaterial::new("one");
        assert_eq!(a.sha256(), SecretMaterial::new("one").sha256());
        assert_ne!(a.sha256(), SecretMaterial::new("two").sha256());
        assert!(a.constant_time_eq(b"one"));
        assert!(!a.constant_time_eq(b"onf"));
        assert!(!a.constant_time_eq(b"on"));
    }
}

//! Who may trigger a fetch: the shared webhook secret, and the checks of GitHub's signature and
//! GitLab's token against it (both constant-time).

use std::path::{Path, PathBuf};

/// The environment variable the webhook secret may come from (when no `--webhook-secret-file`).
pub const SECRET_ENV: &str = "ARO_GITOPS_WEBHOOK_SECRET";

/// The shared webhook secret. Never shown: its `Debug` says only that it is there.
#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("the webhook secret file {path} could not be read: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the webhook secret file {path} is empty")]
    EmptyFile { path: PathBuf },
    #[error("the environment variable {SECRET_ENV} is set but empty")]
    EmptyEnv,
}

impl Secret {
    /// A secret from its bytes; `None` when empty (an empty key would accept anyone's signature).
    pub fn new(bytes: impl Into<Vec<u8>>) -> Option<Secret> {
        let bytes = bytes.into();
        (!bytes.is_empty()).then_some(Secret(bytes))
    }

    /// The secret of `--webhook-secret-file` (its trailing line break removed) or else of
    /// [`SECRET_ENV`]; `None` when neither is given.
    pub fn load(file: Option<&Path>) -> Result<Option<Secret>, SecretError> {
        if let Some(path) = file {
            let bytes = std::fs::read(path).map_err(|source| SecretError::Read {
                path: path.to_path_buf(),
                source,
            })?;
            let secret = Secret::new(trim_line_break(&bytes)).ok_or(SecretError::EmptyFile {
                path: path.to_path_buf(),
            })?;
            return Ok(Some(secret));
        }
        match std::env::var_os(SECRET_ENV) {
            None => Ok(None),
            Some(value) => {
                use std::os::unix::ffi::OsStrExt;
                let secret = Secret::new(trim_line_break(value.as_bytes()));
                secret.map(Some).ok_or(SecretError::EmptyEnv)
            }
        }
    }

    /// Teaches the redaction layer the secret's value, so that no output can show it even by
    /// accident (see [`crate::redact`]).
    pub fn teach_redaction(&self) {
        let text = String::from_utf8_lossy(&self.0);
        crate::redact::learn([&serde_json::json!({ "webhookSecret": text })]);
    }
}

/// `bytes` without one trailing `\n` or `\r\n` (what an editor or `echo` leaves in a file).
fn trim_line_break(bytes: &[u8]) -> &[u8] {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    bytes.strip_suffix(b"\r").unwrap_or(bytes)
}

/// Why a request is refused (401).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The agent has no webhook secret: it accepts no webhook.
    NoSecret,
    /// The signature or token header is absent.
    Missing,
    /// The signature is not `sha256=` and 64 hex digits.
    Malformed,
    /// The signature or token does not match.
    Mismatch,
}

impl Refused {
    /// In the user's words, for the response body and the log (never the secret).
    pub fn reason(self) -> &'static str {
        match self {
            Refused::NoSecret => "no webhook secret is configured: webhooks are refused",
            Refused::Missing => "the signature or token header is missing",
            Refused::Malformed => "the signature is not of the form sha256=<64 hex digits>",
            Refused::Mismatch => "the signature or token does not match the webhook secret",
        }
    }
}

/// Checks GitHub's `X-Hub-Signature-256` header (`sha256=` and the hex HMAC-SHA256 of `body` with
/// the secret), in constant time. Only the `sha256=` scheme is accepted.
pub fn verify_github(
    secret: Option<&Secret>,
    header: Option<&[u8]>,
    body: &[u8],
) -> Result<(), Refused> {
    let secret = secret.ok_or(Refused::NoSecret)?;
    let header = header.ok_or(Refused::Missing)?;
    let hex = header.strip_prefix(b"sha256=").ok_or(Refused::Malformed)?;
    let tag = decode_hex(hex).ok_or(Refused::Malformed)?;
    if tag.len() != 32 {
        return Err(Refused::Malformed);
    }
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &secret.0);
    ring::hmac::verify(&key, body, &tag).map_err(|_| Refused::Mismatch)
}

/// Checks GitLab's `X-Gitlab-Token` header against the secret, in constant time.
pub fn verify_gitlab(secret: Option<&Secret>, header: Option<&[u8]>) -> Result<(), Refused> {
    let secret = secret.ok_or(Refused::NoSecret)?;
    let token = header.ok_or(Refused::Missing)?;
    // Comparing HMACs of both sides keys the comparison on fixed-length values: neither the
    // content nor the length of the secret shows in the time taken.
    let key = ring::hmac::Key::generate(ring::hmac::HMAC_SHA256, &ring::rand::SystemRandom::new())
        .map_err(|_| Refused::Mismatch)?;
    let expected = ring::hmac::sign(&key, &secret.0);
    ring::hmac::verify(&key, token, expected.as_ref()).map_err(|_| Refused::Mismatch)
}

/// Hex digits (either case) to bytes; `None` when not an even number of hex digits.
fn decode_hex(hex: &[u8]) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    hex.chunks(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

/// `sha256=` and the hex HMAC-SHA256 of `body` under `secret`: what GitHub sends (for tests and
/// tools that sign requests).
pub fn github_signature(secret: &[u8], body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
    let tag = ring::hmac::sign(&key, body);
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret() -> Secret {
        Secret::new("It's a Secret to Everybody").unwrap()
    }

    #[test]
    fn github_signature_matches_the_documented_example() {
        // GitHub's documentation gives this pair for the secret above and the body "Hello, World!".
        assert_eq!(
            github_signature(b"It's a Secret to Everybody", b"Hello, World!"),
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
        );
    }

    #[test]
    fn a_good_github_signature_passes_in_either_case() {
        let body = b"Hello, World!";
        let good = github_signature(b"It's a Secret to Everybody", body);
        assert_eq!(
            verify_github(Some(&secret()), Some(good.as_bytes()), body),
            Ok(())
        );
        let upper = format!("sha256={}", good["sha256=".len()..].to_ascii_uppercase());
        assert_eq!(
            verify_github(Some(&secret()), Some(upper.as_bytes()), body),
            Ok(())
        );
    }

    #[test]
    fn bad_missing_sha1_and_unconfigured_github_signatures_are_refused() {
        let body = b"Hello, World!";
        let good = github_signature(b"It's a Secret to Everybody", body);
        let s = Some(&secret());
        // Another body, another secret.
        assert_eq!(
            verify_github(s, Some(good.as_bytes()), b"Hello, World?"),
            Err(Refused::Mismatch)
        );
        let other = github_signature(b"another secret", body);
        assert_eq!(
            verify_github(s, Some(other.as_bytes()), body),
            Err(Refused::Mismatch)
        );
        assert_eq!(verify_github(s, None, body), Err(Refused::Missing));
        // The old SHA-1 scheme, a truncated tag, no hex at all.
        let sha1 = format!("sha1={}", &good["sha256=".len()..][..40]);
        assert_eq!(
            verify_github(s, Some(sha1.as_bytes()), body),
            Err(Refused::Malformed)
        );
        assert_eq!(
            verify_github(s, Some(&good.as_bytes()[..good.len() - 2]), body),
            Err(Refused::Malformed)
        );
        assert_eq!(
            verify_github(s, Some(b"sha256=not-hex"), body),
            Err(Refused::Malformed)
        );
        assert_eq!(
            verify_github(None, Some(good.as_bytes()), body),
            Err(Refused::NoSecret)
        );
    }

    #[test]
    fn gitlab_tokens_must_equal_the_secret() {
        let s = Some(&secret());
        assert_eq!(
            verify_gitlab(s, Some(b"It's a Secret to Everybody")),
            Ok(())
        );
        for bad in [
            &b"It's a Secret to Everybody "[..],
            b"It's a Secret",
            b"",
            b"it's a secret to everybody",
        ] {
            assert_eq!(
                verify_gitlab(s, Some(bad)),
                Err(Refused::Mismatch),
                "{bad:?}"
            );
        }
        assert_eq!(verify_gitlab(s, None), Err(Refused::Missing));
        assert_eq!(
            verify_gitlab(None, Some(b"It's a Secret to Everybody")),
            Err(Refused::NoSecret)
        );
    }

    #[test]
    fn the_secret_file_loses_its_line_break_and_is_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secret");
        std::fs::write(&file, "s3cr3t-value\r\n").unwrap();
        let secret = Secret::load(Some(&file)).unwrap().unwrap();
        assert_eq!(secret.0, b"s3cr3t-value");
        assert_eq!(format!("{secret:?}"), "Secret([redacted])");
        std::fs::write(&file, "\n").unwrap();
        let empty = Secret::load(Some(&file)).unwrap_err().to_string();
        assert!(empty.contains("is empty"), "{empty}");
        let missing = Secret::load(Some(&dir.path().join("missing")))
            .unwrap_err()
            .to_string();
        assert!(missing.contains("could not be read"), "{missing}");
        assert!(Secret::new("").is_none());
        secret.teach_redaction();
        assert_eq!(crate::redact::scrub("sent s3cr3t-value"), "sent [redacted]");
    }
}

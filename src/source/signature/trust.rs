//! The trust file of `--trusted-keys`: SSH `allowed_signers` lines and ASCII-armored OpenPGP
//! public keys, in any order, in one file.
//!
//! An `allowed_signers` line is `PRINCIPALS [OPTIONS] KEYTYPE BASE64 [COMMENT]`, as `ssh-keygen -Y
//! verify` reads it: principals are comma-separated; the options understood are
//! `namespaces="git,..."` (the key signs commits only when `git` is among them),
//! `valid-after="YYYYMMDD[HHMM[SS]][Z]"` and `valid-before=...` (read as UTC), checked against
//! the commit's committer time. `cert-authority` and any other option are refused with the line
//! number. Blank lines and lines starting with `#` are skipped. Each OpenPGP key is one block
//! from `-----BEGIN PGP PUBLIC KEY BLOCK-----` to its END line; a file may hold several.

use super::TrustError;
use pgp::composed::{Deserializable, SignedPublicKey};
use std::path::{Path, PathBuf};

/// One `allowed_signers` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedSigner {
    /// As written (comma-separated), shown as the signer once a signature verifies.
    pub principals: String,
    /// `None`: any namespace; else those listed.
    pub namespaces: Option<Vec<String>>,
    /// Unix seconds, inclusive bounds.
    pub valid_after: Option<i64>,
    pub valid_before: Option<i64>,
    pub key: ssh_key::public::KeyData,
    /// The line in the trust file.
    pub line: usize,
}

/// What the trust file holds.
#[derive(Debug, Clone, Default)]
pub struct TrustStore {
    pub file: PathBuf,
    pub ssh: Vec<AllowedSigner>,
    pub openpgp: Vec<SignedPublicKey>,
}

impl TrustStore {
    /// Reads and parses `file`.
    pub fn load(file: &Path) -> Result<TrustStore, TrustError> {
        let text = std::fs::read_to_string(file).map_err(|source| TrustError::Read {
            file: file.to_path_buf(),
            source,
        })?;
        parse(file, &text)
    }
}

const PGP_BEGIN: &str = "-----BEGIN PGP PUBLIC KEY BLOCK-----";
const PGP_END: &str = "-----END PGP PUBLIC KEY BLOCK-----";

/// Parses the trust file's text (`file` names it in errors). An empty file is an error: it would
/// refuse every revision.
pub fn parse(file: &Path, text: &str) -> Result<TrustStore, TrustError> {
    let bad = |line: usize, reason: String| TrustError::Line {
        file: file.to_path_buf(),
        line,
        reason,
    };
    let mut store = TrustStore {
        file: file.to_path_buf(),
        ..TrustStore::default()
    };
    let mut block: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if let Some((start, armored)) = &mut block {
            armored.push_str(line);
            armored.push('\n');
            if line == PGP_END {
                let (key, _) = SignedPublicKey::from_string(armored).map_err(|e| {
                    bad(
                        *start,
                        format!("OpenPGP public key block: cannot be read: {e}"),
                    )
                })?;
                key.verify_bindings().map_err(|e| {
                    bad(
                        *start,
                        format!("OpenPGP public key block: its self-signatures do not verify: {e}"),
                    )
                })?;
                store.openpgp.push(key);
                block = None;
            }
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line == PGP_BEGIN {
            block = Some((n, format!("{line}\n")));
            continue;
        }
        if line.starts_with("-----BEGIN") {
            return Err(bad(
                n,
                format!(
                    "{line}: only OpenPGP public key blocks and allowed_signers lines are read"
                ),
            ));
        }
        store
            .ssh
            .push(allowed_signer(line, n).map_err(|r| bad(n, r))?);
    }
    if let Some((start, _)) = block {
        return Err(bad(
            start,
            format!("OpenPGP public key block without its {PGP_END} line"),
        ));
    }
    if store.ssh.is_empty() && store.openpgp.is_empty() {
        return Err(TrustError::Empty {
            file: file.to_path_buf(),
        });
    }
    Ok(store)
}

/// Key types an `allowed_signers` key may have: what follows the principals is the options
/// unless it is one of these.
fn is_key_type(word: &str) -> bool {
    word.starts_with("ssh-")
        || word.starts_with("ecdsa-sha2-")
        || word.starts_with("sk-ssh-")
        || word.starts_with("sk-ecdsa-")
}

/// Splits at spaces outside double quotes.
fn words(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = None;
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => {
                quoted = !quoted;
                start.get_or_insert(i);
            }
            c if c.is_whitespace() && !quoted => {
                if let Some(s) = start.take() {
                    out.push(&line[s..i]);
                }
            }
            _ => {
                start.get_or_insert(i);
            }
        }
    }
    if let Some(s) = start {
        out.push(&line[s..]);
    }
    out
}

/// Splits options at commas outside double quotes.
fn options(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

fn allowed_signer(line: &str, n: usize) -> Result<AllowedSigner, String> {
    let words = words(line);
    let Some((&principals, rest)) = words.split_first() else {
        return Err("empty line".into());
    };
    let (opts, rest) = match rest.first() {
        Some(w) if !is_key_type(w) => (Some(*w), &rest[1..]),
        _ => (None, rest),
    };
    let (Some(kind), Some(blob)) = (rest.first(), rest.get(1)) else {
        return Err("expected `PRINCIPALS [OPTIONS] KEYTYPE BASE64-KEY [COMMENT]`".into());
    };
    let key = ssh_key::PublicKey::from_openssh(&format!("{kind} {blob}"))
        .map_err(|e| format!("the {kind} key cannot be read: {e}"))?;
    let mut signer = AllowedSigner {
        principals: principals.to_string(),
        namespaces: None,
        valid_after: None,
        valid_before: None,
        key: key.key_data().clone(),
        line: n,
    };
    for opt in opts.map(options).unwrap_or_default() {
        let (name, value) = match opt.split_once('=') {
            Some((name, value)) => (name, Some(value.trim_matches('"'))),
            None => (opt, None),
        };
        match (name.to_ascii_lowercase().as_str(), value) {
            ("namespaces", Some(v)) => {
                signer.namespaces = Some(v.split(',').map(|s| s.trim().to_string()).collect())
            }
            ("valid-after", Some(v)) => signer.valid_after = Some(time(v)?),
            ("valid-before", Some(v)) => signer.valid_before = Some(time(v)?),
            ("cert-authority", _) => {
                return Err(
                    "cert-authority is not supported: list the signing keys themselves".into(),
                );
            }
            _ => {
                return Err(format!(
                    "option {opt:?} is not supported (namespaces, valid-after and valid-before are)"
                ));
            }
        }
    }
    Ok(signer)
}

/// `YYYYMMDD[HHMM[SS]][Z]` as Unix seconds (UTC).
fn time(value: &str) -> Result<i64, String> {
    let digits = value.strip_suffix(['Z', 'z']).unwrap_or(value);
    let format = match digits.len() {
        8 => "%Y%m%d%H%M%S",
        12 => "%Y%m%d%H%M%S",
        14 => "%Y%m%d%H%M%S",
        _ => return Err(format!("time {value:?} is not YYYYMMDD[HHMM[SS]][Z]")),
    };
    let padded = format!("{digits:0<14}");
    chrono::NaiveDateTime::parse_from_str(&padded, format)
        .map(|t| t.and_utc().timestamp())
        .map_err(|_| format!("time {value:?} is not YYYYMMDD[HHMM[SS]][Z]"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ED25519: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA1E6hDOTJHIbZsW8z26BgGuLYlEePw6rQSLmicpUB2h";

    fn one(line: &str) -> Result<AllowedSigner, TrustError> {
        parse(Path::new("trust"), line).map(|s| s.ssh[0].clone())
    }

    #[test]
    fn reads_principals_options_and_key() {
        let s = one(&format!(
            "alice@example.com,bob@example.com namespaces=\"git,file\",valid-after=\"20240101\",valid-before=\"202501021230Z\" {ED25519} alice's laptop"
        ))
        .unwrap();
        assert_eq!(s.principals, "alice@example.com,bob@example.com");
        assert_eq!(s.namespaces, Some(vec!["git".into(), "file".into()]));
        assert_eq!(s.valid_after, Some(1_704_067_200));
        assert_eq!(s.valid_before, Some(1_735_821_000));
        let plain = one(&format!("# a comment\n\n* {ED25519}\n")).unwrap();
        assert_eq!((plain.namespaces, plain.line), (None, 3));
    }

    #[test]
    fn refuses_what_it_does_not_support_naming_the_line() {
        for (text, words) in [
            (
                format!("ca@x cert-authority {ED25519}"),
                "cert-authority is not supported",
            ),
            (format!("a@x no-touch-required {ED25519}"), "not supported"),
            ("a@x ssh-ed25519 AAAAnotakey".to_string(), "cannot be read"),
            ("a@x".to_string(), "expected"),
            (format!("a@x valid-after=\"2024\" {ED25519}"), "YYYYMMDD"),
            (format!("\n{PGP_BEGIN}\nxx\n"), "without its"),
        ] {
            let e = parse(Path::new("keys/trust"), &text)
                .unwrap_err()
                .to_string();
            assert!(e.contains("keys/trust") && e.contains(words), "{e}");
        }
        let e = parse(Path::new("t"), "# nothing\n").unwrap_err();
        assert!(matches!(e, TrustError::Empty { .. }), "{e}");
    }
}

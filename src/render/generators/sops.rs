//! SOPS-encrypted generator inputs (ksops, kustomize-sops): a `secretGenerator` may read a SOPS
//! dotenv file through `envs:` and any SOPS file (YAML, JSON, dotenv, binary) through `files:`.
//!
//! The renderer holds no key: it writes a **stand-in** for each value such a file gives (the file,
//! which value, and the digest of the file as read), and [`crate::decrypt`] puts the decrypted
//! value in its place after rendering, from the same file, checking the digest. So the renderer
//! stays pure, the keys stay at the edge, and the name suffix hash is over stand-ins: a plan
//! without the key names the Secret as the run does, and a re-encrypted file rolls the name.

use super::error::{At, GeneratorError};
use std::path::Path;

/// What every stand-in starts with (21 bytes: its base64 form is a fixed prefix, see
/// [`encoded_prefix`]).
pub const PREFIX: &str = "aro-gitops-sops-file:";

/// Which value of a SOPS file a stand-in is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// The whole file, decrypted (a `files:` entry).
    Whole,
    /// The value of `KEY` in the decrypted dotenv file (an `envs:` entry).
    Env(String),
}

/// A value a SOPS file gives a generated Secret, before decryption.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandIn {
    /// Repository-relative (absolute when the file is outside the repository).
    pub path: String,
    pub selector: Selector,
    /// Hex SHA-256 of the file's bytes as the render read them.
    pub digest: String,
}

impl StandIn {
    /// `PREFIX<digest>:<* or env=KEY>:<path>`.
    pub fn text(&self) -> String {
        let selector = match &self.selector {
            Selector::Whole => "*".to_string(),
            Selector::Env(k) => format!("env={k}"),
        };
        format!("{PREFIX}{}:{selector}:{}", self.digest, self.path)
    }

    /// Reads a stand-in's text back; `None` when `text` is not one.
    pub fn parse(text: &str) -> Option<StandIn> {
        let rest = text.strip_prefix(PREFIX)?;
        let (digest, rest) = rest.split_once(':')?;
        let (selector, path) = rest.split_once(':')?;
        let selector = match selector {
            "*" => Selector::Whole,
            s => Selector::Env(s.strip_prefix("env=")?.to_string()),
        };
        (digest.len() == 64 && !path.is_empty()).then(|| StandIn {
            path: path.to_string(),
            selector,
            digest: digest.to_string(),
        })
    }
}

/// The base64 prefix every encoded stand-in starts with.
pub fn encoded_prefix() -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(PREFIX)
}

/// How a file read for a generator is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Use {
    File,
    Env,
}

/// When `content` (read from `resolved`, named `written` in the kustomization) is a SOPS file:
/// the stand-in to use in place of its plain content (for an env file, the caller makes one per
/// key), or why it cannot be used so. `None` for a plain file.
pub(super) fn stand_in(
    at: &At,
    secret: bool,
    use_: Use,
    written: &str,
    resolved: &Path,
    root: &Path,
    content: &[u8],
) -> Result<Option<StandIn>, GeneratorError> {
    let Some(format) = crate::secrets::formats::detect(written, content) else {
        return Ok(None);
    };
    let refuse = |problem: &'static str| GeneratorError::SopsInput {
        at: at.clone(),
        path: written.to_string(),
        problem,
    };
    if !secret {
        return Err(refuse(
            "a ConfigMap would hold it in plain text; generate a Secret (secretGenerator) from it",
        ));
    }
    if use_ == Use::Env && format != crate::secrets::formats::Format::Dotenv {
        return Err(refuse(
            "envs takes a SOPS dotenv file (KEY=VALUE lines); give a YAML, JSON or binary SOPS file under files",
        ));
    }
    let path = resolved.strip_prefix(root).unwrap_or(resolved);
    Ok(Some(StandIn {
        path: path.to_string_lossy().into_owned(),
        selector: Selector::Whole,
        digest: crate::object::sha256_hex(content),
    }))
}

/// Whether an env-file key holds SOPS metadata (a SOPS dotenv file's `sops_...` lines).
pub(super) fn is_metadata_key(key: &str) -> bool {
    key.starts_with("sops_")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn a_stand_in_reads_back_and_its_base64_has_a_fixed_prefix() {
        let s = StandIn {
            path: "clusters/dev/a:b.env".into(),
            selector: Selector::Env("DB_PASSWORD".into()),
            digest: "ab".repeat(32),
        };
        assert_eq!(StandIn::parse(&s.text()), Some(s.clone()));
        let whole = StandIn {
            selector: Selector::Whole,
            ..s
        };
        assert_eq!(StandIn::parse(&whole.text()), Some(whole.clone()));
        assert_eq!(StandIn::parse("plain value"), None);
        assert_eq!(PREFIX.len() % 3, 0);
        use base64::Engine;
        let encoded = base64::engine::general_purpose::STANDARD.encode(whole.text());
        assert!(encoded.starts_with(&encoded_prefix()));
    }

    #[test]
    fn a_sops_file_is_refused_where_it_would_show_or_not_parse() {
        let at = At {
            file: PathBuf::from("k/kustomization.yaml"),
            entry: "secretGenerator \"s\"".into(),
        };
        let binary =
            br#"{"data": "ENC[AES256_GCM,data:x,iv:y,tag:z,type:str]", "sops": {"mac": "m"}}"#;
        let root = Path::new("/repo");
        let file = Path::new("/repo/k/cert.pem");
        let s = stand_in(&at, true, Use::File, "cert.pem", file, root, binary)
            .unwrap()
            .unwrap();
        assert_eq!(s.path, "k/cert.pem");
        assert_eq!(s.digest, crate::object::sha256_hex(binary));
        let e = stand_in(&at, false, Use::File, "cert.pem", file, root, binary).unwrap_err();
        assert!(e.to_string().contains("generate a Secret"), "{e}");
        let e = stand_in(&at, true, Use::Env, "cert.pem", file, root, binary).unwrap_err();
        assert!(
            e.to_string().contains("envs takes a SOPS dotenv file"),
            "{e}"
        );
        assert_eq!(
            stand_in(&at, true, Use::File, "a.txt", file, root, b"plain").unwrap(),
            None
        );
    }
}

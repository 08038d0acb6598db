//! Where the agent's age identities come from: a file (`--decryption-key-file`) or a Secret in the
//! agent's namespace (`--decryption-secret [NAMESPACE/]NAME`) whose data keys ending `.agekey`
//! hold identity files, as Flux reads them. Errors name the file or the Secret, never a key.

use crate::object::ObjectKey;
use crate::secrets::Keyring;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The namespace a `--decryption-secret` without one is read from when `POD_NAMESPACE` is unset.
pub const DEFAULT_NAMESPACE: &str = "aro-gitops-system";

/// The suffix of a Secret's data keys that hold age identities.
pub const KEY_SUFFIX: &str = ".agekey";

/// Where to read the age identities from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    File(PathBuf),
    Secret { namespace: String, name: String },
}

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("decryption key file {}: {message}", path.display())]
    File { path: PathBuf, message: String },
    #[error("decryption Secret {namespace}/{name}: {message}")]
    Secret {
        namespace: String,
        name: String,
        message: String,
    },
}

impl KeySource {
    /// `--decryption-secret`'s value: `NAME` (in `pod_namespace`, else [`DEFAULT_NAMESPACE`]) or
    /// `NAMESPACE/NAME`.
    pub fn secret(value: &str, pod_namespace: Option<&str>) -> KeySource {
        let (namespace, name) = match value.split_once('/') {
            Some((ns, name)) => (ns.to_string(), name.to_string()),
            None => (
                pod_namespace
                    .filter(|n| !n.is_empty())
                    .unwrap_or(DEFAULT_NAMESPACE)
                    .to_string(),
                value.to_string(),
            ),
        };
        KeySource::Secret { namespace, name }
    }

    /// From the flags (at most one is given: clap refuses both).
    pub fn from_flags(file: Option<&Path>, secret: Option<&str>) -> Option<KeySource> {
        let pod_namespace = std::env::var("POD_NAMESPACE").ok();
        file.map(|f| KeySource::File(f.to_path_buf()))
            .or_else(|| secret.map(|s| KeySource::secret(s, pod_namespace.as_deref())))
    }

    /// The Secret's key, for a Secret source.
    pub fn secret_key(&self) -> Option<ObjectKey> {
        match self {
            KeySource::File(_) => None,
            KeySource::Secret { namespace, name } => Some(ObjectKey {
                group: Default::default(),
                version: "v1".into(),
                kind: "Secret".into(),
                namespace: Some(crate::object::Sym::new(namespace)),
                name: name.clone(),
            }),
        }
    }

    fn error(&self, message: String) -> KeyError {
        match self {
            KeySource::File(path) => KeyError::File {
                path: path.clone(),
                message,
            },
            KeySource::Secret { namespace, name } => KeyError::Secret {
                namespace: namespace.clone(),
                name: name.clone(),
                message,
            },
        }
    }

    /// Reads the identities: the file, or the Secret at [`KeySource::secret_key`], which the
    /// caller read from the cluster (`secret`: what the read found, or why it failed).
    pub fn load(&self, secret: Result<Option<Value>, String>) -> Result<Keyring, KeyError> {
        let text = match self {
            KeySource::File(path) => return from_file(path),
            KeySource::Secret { .. } => {
                let secret = secret
                    .map_err(|e| self.error(format!("cannot read it: {e}")))?
                    .ok_or_else(|| self.error("not found".into()))?;
                identities_of_secret(&secret).map_err(|m| self.error(m))?
            }
        };
        parse(&text).map_err(|m| self.error(m))
    }
}

/// The identities of the age identity file at `path` (`--decryption-key-file`).
pub fn from_file(path: &Path) -> Result<Keyring, KeyError> {
    let error = |message: String| KeyError::File {
        path: path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| error(format!("cannot read it: {e}")))?;
    parse(&text).map_err(error)
}

fn parse(text: &str) -> Result<Keyring, String> {
    // The identities are secrets too: no output may show them, even in a library's message.
    crate::redact::learn_values(
        text.lines()
            .map(str::trim)
            .filter(|l| l.starts_with("AGE-SECRET-KEY-")),
    );
    let keyring = Keyring::parse(text).map_err(|e| e.to_string())?;
    if keyring.is_empty() {
        return Err("holds no age identity (AGE-SECRET-KEY-1...)".into());
    }
    Ok(keyring)
}

/// The identity files a Secret holds: the values of its `data` keys ending [`KEY_SUFFIX`]
/// (base64-decoded) and of its `stringData` keys ending so, one after the other.
pub fn identities_of_secret(secret: &Value) -> Result<String, String> {
    use base64::Engine;
    let mut text = String::new();
    let mut found = 0;
    if let Some(Value::Object(data)) = secret.get("data") {
        for (k, v) in data.iter().filter(|(k, _)| k.ends_with(KEY_SUFFIX)) {
            let bytes = v
                .as_str()
                .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
                .ok_or_else(|| format!("data key {k} is not base64"))?;
            let t = String::from_utf8(bytes).map_err(|_| format!("data key {k} is not text"))?;
            text.push_str(&t);
            text.push('\n');
            found += 1;
        }
    }
    if let Some(Value::Object(data)) = secret.get("stringData") {
        for v in data
            .iter()
            .filter(|(k, _)| k.ends_with(KEY_SUFFIX))
            .filter_map(|(_, v)| v.as_str())
        {
            text.push_str(v);
            text.push('\n');
            found += 1;
        }
    }
    if found == 0 {
        return Err(format!("has no data key ending {KEY_SUFFIX}"));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_reference_defaults_to_the_agent_namespace() {
        assert_eq!(
            KeySource::secret("sops-age", Some("ops")),
            KeySource::Secret {
                namespace: "ops".into(),
                name: "sops-age".into()
            }
        );
        assert_eq!(
            KeySource::secret("sops-age", None),
            KeySource::Secret {
                namespace: DEFAULT_NAMESPACE.into(),
                name: "sops-age".into()
            }
        );
        assert_eq!(
            KeySource::secret("other/sops-age", Some("ops")),
            KeySource::Secret {
                namespace: "other".into(),
                name: "sops-age".into()
            }
        );
    }

    #[test]
    fn identities_are_the_agekey_entries() {
        use base64::Engine;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let s = json!({"data": {"a.agekey": b64("# one\nAGE-SECRET-KEY-1AAA"),
            "readme": b64("not a key")}, "stringData": {"b.agekey": "AGE-SECRET-KEY-1BBB"}});
        let text = identities_of_secret(&s).unwrap();
        assert!(text.contains("AGE-SECRET-KEY-1AAA") && text.contains("AGE-SECRET-KEY-1BBB"));
        assert!(!text.contains("not a key"));
        let e = identities_of_secret(&json!({"data": {"x": "eA=="}})).unwrap_err();
        assert_eq!(e, "has no data key ending .agekey");
    }
}

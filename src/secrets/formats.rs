//! SOPS files as a kustomize generator reads them (ksops, kustomize-sops): a YAML or JSON
//! document, a dotenv file, or a binary (text) file, each in the form `sops` writes it, told
//! apart by content, and decrypted back to the bytes the file held before it was encrypted.
//!
//! - dotenv: `KEY=ENC[...]` lines (a newline in a value written `\n`), then the `sops` block
//!   flattened into `sops_...=` lines (`__map_` between mapping keys, `__list_N__` for list items).
//! - binary: a JSON document `{"data": "ENC[...]", "sops": {...}}`; the plain file is `data`.

use serde_json::{Map, Value};

use super::{Decrypted, EncryptionRules, Keyring, SopsError, decrypt_documents, is_encrypted};

/// How a SOPS file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One or more YAML documents.
    Yaml,
    /// A JSON document.
    Json,
    /// `KEY=VALUE` lines.
    Dotenv,
    /// Any file, its content under `data`.
    Binary,
}

/// The prefix of the dotenv lines that hold the flattened `sops` block.
const DOTENV_PREFIX: &str = "sops_";

/// The SOPS format of the file `name` holding `bytes`, or `None` when it is not a SOPS file.
pub fn detect(name: &str, bytes: &[u8]) -> Option<Format> {
    let text = std::str::from_utf8(bytes).ok()?;
    if text
        .lines()
        .any(|l| l.starts_with("sops_mac=") || l.starts_with("sops_version="))
    {
        return Some(Format::Dotenv);
    }
    if !text.contains("sops") {
        return None;
    }
    let docs = crate::yaml::from_multi_str(text).ok()?;
    let first = docs.first().filter(|d| is_encrypted(d))?;
    let lower = name.to_ascii_lowercase();
    let binary_shape = first.as_object().is_some_and(|m| {
        m.len() == 2 && m.get("data").is_some_and(Value::is_string) && docs.len() == 1
    });
    Some(if lower.ends_with(".yaml") || lower.ends_with(".yml") {
        Format::Yaml
    } else if lower.ends_with(".json") {
        Format::Json
    } else if binary_shape {
        Format::Binary
    } else if text.trim_start().starts_with('{') {
        Format::Json
    } else {
        Format::Yaml
    })
}

/// A decrypted file: its plain bytes, and each value that was encrypted (for redaction).
pub struct PlainFile {
    pub bytes: Vec<u8>,
    pub values: Vec<String>,
}

impl std::fmt::Debug for PlainFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PlainFile({} bytes, not shown)", self.bytes.len())
    }
}

/// Decrypts a SOPS file of `format` (all or nothing: one MAC covers the file).
pub fn decrypt_file(
    format: Format,
    bytes: &[u8],
    keyring: &Keyring,
) -> Result<PlainFile, SopsError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| SopsError::Invalid("the file is not UTF-8 text".to_string()))?;
    let documents = match format {
        Format::Dotenv => vec![dotenv_document(text)?],
        _ => crate::yaml::from_multi_str(text).map_err(|e| SopsError::Invalid(e.to_string()))?,
    };
    let plain = decrypt_documents(&documents, keyring)?;
    let values = plain.iter().flat_map(encrypted_values).collect();
    let bytes = match format {
        Format::Yaml => {
            let docs: Vec<Value> = plain.into_iter().map(|d| d.document).collect();
            crate::yaml::to_multi_string(&docs).into_bytes()
        }
        Format::Json => {
            let doc = &plain[0].document;
            let mut text = serde_json::to_string_pretty(doc).expect("JSON serialises");
            text.push('\n');
            text.into_bytes()
        }
        Format::Dotenv => dotenv_text(&plain[0].document).into_bytes(),
        Format::Binary => match plain[0].document.get("data") {
            Some(Value::String(s)) => s.clone().into_bytes(),
            _ => {
                return Err(SopsError::Invalid(
                    "a binary SOPS file has no `data`".into(),
                ));
            }
        },
    };
    Ok(PlainFile { bytes, values })
}

/// The text of each encrypted value of a decrypted document.
fn encrypted_values(d: &Decrypted) -> Vec<String> {
    d.encrypted_pointers
        .iter()
        .filter_map(|p| match d.document.pointer(p)? {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        })
        .filter(|v| !v.is_empty())
        .collect()
}

/// The `KEY=VALUE` lines of a dotenv text, with their line numbers (from 1) and values unescaped
/// (`\n` is a newline); blank lines and comments skipped.
fn dotenv_pairs(text: &str) -> impl Iterator<Item = Result<(usize, &str, String), SopsError>> {
    text.lines().enumerate().filter_map(|(n, line)| {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() || line.starts_with('#') {
            return None;
        }
        Some(match line.split_once('=') {
            Some((key, value)) => Ok((n + 1, key, value.replace("\\n", "\n"))),
            None => Err(SopsError::Invalid(format!(
                "line {} of the dotenv file has no '='",
                n + 1
            ))),
        })
    })
}

/// A SOPS dotenv file as a document: its `KEY=VALUE` pairs in order, and the `sops` block the
/// `sops_` lines flatten. Comments (encrypted or not) are not values: SOPS leaves them out of the
/// MAC.
fn dotenv_document(text: &str) -> Result<Value, SopsError> {
    let mut doc = Map::new();
    let mut flat = Vec::new();
    for pair in dotenv_pairs(text) {
        let (_, key, value) = pair?;
        match key.strip_prefix(DOTENV_PREFIX) {
            Some(meta) => flat.push((meta.to_string(), value)),
            None => {
                doc.insert(key.to_string(), Value::String(value));
            }
        }
    }
    if flat.is_empty() {
        return Err(SopsError::Invalid(
            "the dotenv file has no sops_ metadata lines".to_string(),
        ));
    }
    doc.insert("sops".into(), unflatten(&flat)?);
    Ok(Value::Object(doc))
}

/// A decrypted dotenv document back as the file's text (newlines in values written `\n`).
fn dotenv_text(doc: &Value) -> String {
    let mut out = String::new();
    for (k, v) in doc.as_object().into_iter().flatten() {
        let v = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.push_str(&format!("{k}={}\n", v.replace('\n', "\\n")));
    }
    out
}

/// The `sops` block from its flattened `(path, value)` lines.
fn unflatten(flat: &[(String, String)]) -> Result<Value, SopsError> {
    let mut root = Value::Object(Map::new());
    for (path, value) in flat {
        let value = match path.as_str() {
            "mac_only_encrypted" => Value::Bool(value == "true"),
            "shamir_threshold" => value
                .parse::<u64>()
                .map(Value::from)
                .unwrap_or(Value::String(value.clone())),
            _ => Value::String(value.clone()),
        };
        insert_flat(&mut root, path, value)?;
    }
    Ok(root)
}

/// One step of a flattened path: a mapping key or a list index.
enum Step {
    Key(String),
    Index(usize),
}

/// Splits `age__list_0__map_enc` into `age`, `0`, `enc`.
fn steps(path: &str) -> Result<Vec<Step>, SopsError> {
    let bad = || SopsError::Invalid(format!("the dotenv metadata key sops_{path} is malformed"));
    let mut out = Vec::new();
    let mut rest = path;
    let first_end = rest.find("__").unwrap_or(rest.len());
    out.push(Step::Key(rest[..first_end].to_string()));
    rest = &rest[first_end..];
    while !rest.is_empty() {
        let end = |s: &str| s.find("__").unwrap_or(s.len());
        if let Some(r) = rest.strip_prefix("__map_") {
            let e = end(r);
            out.push(Step::Key(r[..e].to_string()));
            rest = &r[e..];
        } else if let Some(r) = rest.strip_prefix("__list_") {
            let e = end(r);
            out.push(Step::Index(r[..e].parse().map_err(|_| bad())?));
            rest = &r[e..];
        } else {
            return Err(bad());
        }
    }
    Ok(out)
}

fn insert_flat(root: &mut Value, path: &str, value: Value) -> Result<(), SopsError> {
    let bad = || SopsError::Invalid(format!("the dotenv metadata key sops_{path} is malformed"));
    let steps = steps(path)?;
    let mut at = root;
    for (i, step) in steps.iter().enumerate() {
        let last = i + 1 == steps.len();
        let next = || match steps.get(i + 1) {
            Some(Step::Index(_)) => Value::Array(vec![]),
            _ => Value::Object(Map::new()),
        };
        at = match step {
            Step::Key(k) => {
                let map = at.as_object_mut().ok_or_else(bad)?;
                if last {
                    map.insert(k.clone(), value);
                    return Ok(());
                }
                map.entry(k.clone()).or_insert_with(next)
            }
            Step::Index(n) => {
                let list = at.as_array_mut().ok_or_else(bad)?;
                while list.len() <= *n {
                    list.push(next());
                }
                if last {
                    list[*n] = value;
                    return Ok(());
                }
                &mut list[*n]
            }
        };
    }
    Ok(())
}

/// The `sops` block flattened into dotenv lines, as SOPS writes them.
fn flatten(prefix: &str, value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}__map_{k}")
                };
                flatten(&p, v, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                flatten(&format!("{prefix}__list_{i}"), v, out);
            }
        }
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

/// Encrypts a dotenv file's text for the age `recipients`, as `sops` writes a dotenv file.
pub fn encrypt_dotenv(
    text: &str,
    recipients: &[String],
    rules: &EncryptionRules,
) -> Result<String, SopsError> {
    let mut doc = Map::new();
    for pair in dotenv_pairs(text) {
        let (line, key, value) = pair?;
        if key.starts_with(DOTENV_PREFIX) {
            return Err(SopsError::Invalid(format!(
                "line {line}: a key may not start with {DOTENV_PREFIX} (SOPS keeps its metadata there)"
            )));
        }
        doc.insert(key.to_string(), Value::String(value));
    }
    let encrypted = super::encrypt(&Value::Object(doc), recipients, rules)?;
    let mut out = dotenv_text(&Value::Object(
        encrypted
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| *k != "sops")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    ));
    let mut flat = Vec::new();
    flatten("", &encrypted["sops"], &mut flat);
    for (k, v) in flat {
        out.push_str(&format!("{DOTENV_PREFIX}{k}={}\n", v.replace('\n', "\\n")));
    }
    Ok(out)
}

/// Encrypts any text file for the age `recipients`, as `sops` writes a binary file.
pub fn encrypt_binary(text: &str, recipients: &[String]) -> Result<String, SopsError> {
    let doc = serde_json::json!({ "data": text });
    let encrypted = super::encrypt(&doc, recipients, &EncryptionRules::default())?;
    let mut out = serde_json::to_string_pretty(&encrypted).expect("JSON serialises");
    out.push('\n');
    Ok(out)
}

#[cfg(test)]
#[path = "formats_tests.rs"]
mod tests;

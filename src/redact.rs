//! Redaction: the one layer every output passes through, so that no secret value reaches a person.
//!
//! Two guards, both applied by [`scrub`]:
//! - **Known values.** While preparing a unit the agent [`learn`]s the secret values of its rendered
//!   objects: every value of a Secret's `data` (and its decoded text) and `stringData` (which covers
//!   `secretGenerator`s), and every string held by a field whose name says secret, password, token,
//!   credential or key (see [`is_sensitive_name`]), at any depth, so an identity's credential fields
//!   too. Any occurrence of a known value in an output becomes [`REDACTED`].
//! - **Shapes.** A sensitive field name followed by a quoted value (`clientSecret: "v"`,
//!   `"password": "v"`) or by `=value` (`password=v`, a generator literal) has its value replaced,
//!   even when the value was never learnt (a file that did not parse, a library's message).
//!
//! The sinks call [`scrub`]: standard output and the log ([`crate::output`]), the reports committed
//! to git (`source::reports`) and the terminal's progress lines. Values shorter than
//! [`MIN_KNOWN_LEN`] characters are not learnt (they would blank common words), nor are YAML's and
//! JSON's keywords (`true`, `false`, `null`: a flag kept in a Secret); the shape guard still covers
//! them next to their field's name.

use regex::Regex;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::{LazyLock, RwLock};

/// What a redacted value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// The shortest value [`learn`] remembers.
pub const MIN_KNOWN_LEN: usize = 4;

/// Values never learnt, whatever their source: blanking them would rewrite every boolean and null in
/// every output, and `[redacted]` in place of `true` reads back from YAML as a list, which turns a
/// committed report invalid.
const KEYWORDS: &[&str] = &["true", "false", "null"];

fn is_keyword(value: &str) -> bool {
    KEYWORDS
        .iter()
        .any(|k| value.trim().eq_ignore_ascii_case(k))
}

/// Words that make a field name sensitive wherever they appear in it.
const SENSITIVE_WORDS: &[&str] = &[
    "secret",
    "secrets",
    "password",
    "passwords",
    "passwd",
    "passphrase",
    "token",
    "tokens",
    "credential",
    "credentials",
    "apikey",
    "privatekey",
];

/// Last words that make a name a reference to a secret, or a property of one, not a secret value
/// (`secretName`, `tokenRef`, `passwordType`, `keyVaultName`...).
const REFERENCE_WORDS: &[&str] = &[
    "name",
    "names",
    "ref",
    "refs",
    "namespace",
    "kind",
    "type",
    "version",
    "id",
    "path",
    "file",
    "policy",
    "selector",
    "seconds",
    "length",
    "enabled",
    "mode",
];

/// Whether a field called `name` holds a secret value: one of its words (split at case changes,
/// `_`, `-` and `.`) says secret, password, token or credential, or it ends in `key` after
/// another word (`apiKey`, `accessKey`, `ssh-key`); but not a bare `key` (the key of a Secret
/// reference or a selector) nor a name ending in a reference word (`secretName`, `tokenRef`).
pub fn is_sensitive_name(name: &str) -> bool {
    let words = words(name);
    let Some(last) = words.last() else {
        return false;
    };
    if REFERENCE_WORDS.contains(&last.as_str()) {
        return false;
    }
    words.iter().any(|w| SENSITIVE_WORDS.contains(&w.as_str()))
        || (last == "key" && words.len() > 1)
}

/// `clientSecretRef` → `client`, `secret`, `ref`; `API_TOKEN` → `api`, `token`.
fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// The secret values found in `object` (see the module documentation), deduplicated.
pub fn secret_values(object: &Value) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    if crate::kinds::is_secret(object) {
        if let Some(Value::Object(data)) = object.get("data") {
            for v in data.values().filter_map(Value::as_str) {
                found.insert(v.to_string());
                if let Some(text) = decode_base64(v) {
                    found.insert(text);
                }
            }
        }
        if let Some(Value::Object(data)) = object.get("stringData") {
            found.extend(data.values().filter_map(Value::as_str).map(str::to_string));
        }
    }
    sensitive_strings(object, false, &mut found);
    found.retain(|v| v.chars().count() >= MIN_KNOWN_LEN && !is_keyword(v));
    found
}

/// Every string held by a sensitive field name, directly or in a list (`under`: the field's
/// name is sensitive). An object under a sensitive name is a reference or a structure (`activeKey:
/// {name, vaultName, version}`): its own fields decide for themselves.
fn sensitive_strings(value: &Value, under: bool, found: &mut BTreeSet<String>) {
    match value {
        Value::String(s) if under => {
            found.insert(s.clone());
        }
        Value::Object(map) => {
            for (k, v) in map {
                sensitive_strings(v, is_sensitive_name(k), found);
            }
        }
        Value::Array(items) => {
            for v in items {
                sensitive_strings(v, under && !v.is_object(), found);
            }
        }
        _ => {}
    }
}

fn decode_base64(text: &str) -> Option<String> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// The values learnt so far, and the pattern matching any of them (built on the first
/// [`scrub`] after they change, so learning a fleet's units costs one build).
#[derive(Default)]
struct Known {
    values: BTreeSet<String>,
    pattern: Option<Regex>,
    stale: bool,
}

impl Known {
    fn rebuild(&mut self) {
        // Longest first, so a value containing another is replaced whole.
        let mut values: Vec<&String> = self.values.iter().collect();
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        let alternation: Vec<String> = values.iter().map(|v| regex::escape(v)).collect();
        self.pattern = regex::RegexBuilder::new(&alternation.join("|"))
            .size_limit(256 << 20)
            .build()
            .ok();
        self.stale = false;
    }

    fn replace(&self, text: &str) -> Option<String> {
        match &self.pattern {
            Some(p) => p
                .is_match(text)
                .then(|| p.replace_all(text, REDACTED).into_owned()),
            // Too many values for one pattern: one at a time, longest first.
            None => {
                let mut values: Vec<&String> = self.values.iter().collect();
                values.sort_by_key(|v| std::cmp::Reverse(v.len()));
                let mut out: Option<String> = None;
                for v in values {
                    let current = out.as_deref().unwrap_or(text);
                    if current.contains(v.as_str()) {
                        out = Some(current.replace(v.as_str(), REDACTED));
                    }
                }
                out
            }
        }
    }
}

static KNOWN: LazyLock<RwLock<Known>> = LazyLock::new(Default::default);

/// Remembers the secret values of `objects` for every later [`scrub`] in this process.
pub fn learn<'a>(objects: impl IntoIterator<Item = &'a Value>) {
    learn_values(objects.into_iter().flat_map(secret_values));
}

/// Remembers `values` (decrypted from SOPS files) for every later [`scrub`] in this process,
/// whatever their length ([`MIN_KNOWN_LEN`] does not apply: these are secrets by declaration), but
/// not YAML's keywords.
pub fn learn_values<S: AsRef<str>>(values: impl IntoIterator<Item = S>) {
    let mut new: BTreeSet<String> = values
        .into_iter()
        .map(|v| v.as_ref().to_string())
        .filter(|v| !v.is_empty() && !is_keyword(v))
        .collect();
    if new.is_empty() {
        return;
    }
    {
        let known = KNOWN.read().expect("redaction lock");
        new.retain(|v| !known.values.contains(v));
    }
    if new.is_empty() {
        return;
    }
    let mut known = KNOWN.write().expect("redaction lock");
    known.values.extend(new);
    known.stale = true;
}

/// A sensitive-looking field name, then `: "value"`, `: 'value'` or `=value`.
static SHAPE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"([A-Za-z0-9_.\-]+)("?\s*:\s*|=)("(?:[^"\\]|\\.)*"|'[^']*'|[^\s"',;}\]]+)"#)
        .expect("valid pattern")
});

/// `text` with every known secret value and every value next to a sensitive field name replaced by
/// [`REDACTED`]. Borrowed when nothing was found.
pub fn scrub(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    if KNOWN.read().expect("redaction lock").stale {
        let mut known = KNOWN.write().expect("redaction lock");
        if known.stale {
            known.rebuild();
        }
    }
    if let Some(replaced) = KNOWN.read().expect("redaction lock").replace(text) {
        out = Cow::Owned(replaced);
    }
    if SHAPE.captures_iter(&out).any(|c| shape_is_sensitive(&c)) {
        let replaced = SHAPE
            .replace_all(&out, |c: &regex::Captures<'_>| {
                if !shape_is_sensitive(c) {
                    return c[0].to_string();
                }
                let value = &c[3];
                let shown = match value.chars().next() {
                    Some(q @ ('"' | '\'')) => format!("{q}{REDACTED}{q}"),
                    _ => REDACTED.to_string(),
                };
                format!("{}{}{shown}", &c[1], &c[2])
            })
            .into_owned();
        out = Cow::Owned(replaced);
    }
    out
}

/// A `name: value` shape is redacted when the name is sensitive and the value is quoted or comes
/// after `=` (a bare word after `:` is prose: "clientSecret: expected an object").
fn shape_is_sensitive(c: &regex::Captures<'_>) -> bool {
    let quoted = c[3].starts_with('"') || c[3].starts_with('\'');
    let assigned = c[2].trim() == "=";
    (quoted || assigned) && c[3] != *REDACTED && is_sensitive_name(&c[1])
}

/// [`scrub`] for bytes: UTF-8 text is scrubbed, anything else passes as it is.
pub fn scrub_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    match std::str::from_utf8(bytes) {
        Ok(text) => match scrub(text) {
            Cow::Borrowed(_) => Cow::Borrowed(bytes),
            Cow::Owned(s) => Cow::Owned(s.into_bytes()),
        },
        Err(_) => Cow::Borrowed(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sensitive_names() {
        for name in [
            "clientSecret",
            "password",
            "API_TOKEN",
            "apiKey",
            "ssh-key",
            "credentials",
            "bearerToken",
            "privatekey",
        ] {
            assert!(is_sensitive_name(name), "{name}");
        }
        for name in [
            "key",
            "secretName",
            "clientSecretRef",
            "keyVaultName",
            "etcdKeyVersion",
            "clientID",
            "name",
            "tokenExpirationSeconds",
            "",
        ] {
            assert!(!is_sensitive_name(name), "{name}");
        }
    }

    #[test]
    fn keywords_are_never_learnt_so_booleans_stay_booleans() {
        // "dHJ1ZQ==" is base64 for "true": the encoded text is learnt, its decoded keyword is not.
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "flags"},
            "data": {"enabled": "dHJ1ZQ=="}, "stringData": {"debug": "FALSE", "none": "null"}});
        let values = secret_values(&secret);
        assert!(values.contains("dHJ1ZQ=="), "{values:?}");
        for keyword in ["true", "FALSE", "null"] {
            assert!(!values.contains(keyword), "{values:?}");
        }
        learn([&secret]);
        learn_values(["true", " false "]);
        let report = "done: true\nready: false\nreason: null\n";
        assert_eq!(scrub(report), report);
    }

    #[test]
    fn secret_values_of_secrets_and_sensitive_fields() {
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "data": {"a": "aHVudGVyMg=="}, "stringData": {"b": "opensesame", "short": "x"}});
        let values = secret_values(&secret);
        assert!(values.contains("aHVudGVyMg=="));
        assert!(values.contains("hunter2"));
        assert!(values.contains("opensesame"));
        assert!(!values.contains("x"), "too short to learn");
        let identity = json!({"kind": "AzureClusterIdentity", "spec": {"clientSecret": "s3cr3t-value",
            "clientID": "id-1234", "list": [{"token": "tok-1234"}],
            "clientSecretRef": {"name": "not-secret", "key": "k"},
            "activeKey": {"name": "kv-key-name", "vaultName": "kv-name", "version": "v123"},
            "tokens": ["tok-5678"]}});
        let values = secret_values(&identity);
        assert_eq!(
            values,
            BTreeSet::from([
                "s3cr3t-value".to_string(),
                "tok-1234".to_string(),
                "tok-5678".to_string()
            ])
        );
    }

    #[test]
    fn decrypted_values_are_learnt_whatever_their_length() {
        learn_values(["q~Z", ""]);
        assert_eq!(scrub("got q~Z here"), format!("got {REDACTED} here"));
        assert!(matches!(scrub("nothing"), Cow::Borrowed(_)));
    }

    #[test]
    fn scrub_replaces_learnt_values_and_shapes() {
        learn([&json!({"spec": {"password": "learnt-pass-123"}})]);
        assert_eq!(
            scrub("failed near learnt-pass-123!"),
            format!("failed near {REDACTED}!")
        );
        assert_eq!(
            scrub(r#"/spec/clientSecret: "unlearnt-1" is not of type "object""#),
            format!(r#"/spec/clientSecret: "{REDACTED}" is not of type "object""#)
        );
        assert_eq!(
            scrub(r#"{"token": "abc"}"#),
            format!(r#"{{"token": "{REDACTED}"}}"#)
        );
        assert_eq!(
            scrub("literal password=abc is bad"),
            format!("literal password={REDACTED} is bad")
        );
        let prose = "/spec/clientSecret: expected an object (a Secret reference), got a string";
        assert!(matches!(scrub(prose), Cow::Borrowed(_)));
        let names = r#"secretName: "kubeconfig", key=value"#;
        assert_eq!(scrub(names), names);
    }
}

#[cfg(test)]
mod example_tests {
    /// The example fleet holds no secret value: nothing of its outputs is redacted (a name that
    /// merely mentions a key, such as a Key Vault's, is not taken for a secret).
    #[test]
    fn the_example_fleet_learns_nothing() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples-repo");
        for unit in ["clusters/dev", "clusters/prod"] {
            let objects = crate::render::render(&root, std::path::Path::new(unit)).unwrap();
            for o in &objects {
                let values = super::secret_values(&o.object);
                assert!(values.is_empty(), "{unit}: {values:?} in {}", o.object);
            }
        }
    }
}

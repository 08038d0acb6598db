//! Secrets a `secretGenerator` made from SOPS files: the renderer wrote a stand-in for each value
//! such a file gives ([`crate::render::generators::sops`]); here each stand-in is replaced by its
//! decrypted value, read from the same file (its digest must match what the render read), and the
//! fields are marked in [`super::fields::ENCRYPTED_FIELDS`] so every output masks them, as for a
//! decrypted SOPS manifest.

use super::Decryption;
use crate::render::generators::sops::{Selector, StandIn, encoded_prefix};
use crate::secrets::Keyring;
use base64::Engine as _;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// The `data` fields of a Secret that hold stand-ins: pointer and stand-in, in key order.
pub fn stand_ins(object: &Value) -> Vec<(String, StandIn)> {
    if !crate::kinds::is_secret(object) {
        return Vec::new();
    }
    let Some(Value::Object(data)) = object.get("data") else {
        return Vec::new();
    };
    let prefix = encoded_prefix();
    data.iter()
        .filter_map(|(k, v)| {
            let text: String = v.as_str()?.split_whitespace().collect();
            if !text.starts_with(&prefix) {
                return None;
            }
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .ok()?;
            let s = StandIn::parse(std::str::from_utf8(&bytes).ok()?)?;
            Some((
                format!("/data/{}", k.replace('~', "~0").replace('/', "~1")),
                s,
            ))
        })
        .collect()
}

/// The value `selector` picks from a decrypted file: the whole file, or the value of a key of a
/// dotenv file as kustomize reads it (after the first `=`, as written).
pub fn select(plain: &[u8], selector: &Selector) -> Result<Vec<u8>, String> {
    let Selector::Env(key) = selector else {
        return Ok(plain.to_vec());
    };
    let text =
        std::str::from_utf8(plain).map_err(|_| "the decrypted file is not UTF-8".to_string())?;
    text.lines()
        .find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim_start() == key).then(|| v.as_bytes().to_vec())
        })
        .ok_or_else(|| format!("the decrypted file has no key {key}"))
}

/// A SOPS file decrypted once per unit: its digest and plain bytes, or why it failed.
pub(super) type Files = HashMap<String, Result<(String, Vec<u8>), String>>;

/// Replaces the stand-ins `found` of `object` (from the checkout at `root`) as `mode` says: the
/// decrypted values (with keys), or left as they are and marked (digests: no key), or an error.
pub(super) fn decrypt(
    root: &Path,
    object: &mut Value,
    found: &[(String, StandIn)],
    mode: Option<&Decryption>,
    files: &mut Files,
) -> Result<(), String> {
    let first = &found[0].1.path;
    let keyring = match mode {
        None => {
            return Err(format!(
                "is generated from the SOPS file {first} and the agent has no decryption key \
                 (give --decryption-key-file or --decryption-secret)"
            ));
        }
        Some(Decryption::Unavailable(why)) => {
            return Err(format!(
                "is generated from the SOPS file {first} and the decryption key could not be \
                 loaded: {why}"
            ));
        }
        Some(Decryption::Digests { used }) => {
            used.store(true, std::sync::atomic::Ordering::Relaxed);
            let pointers: Vec<String> = found.iter().map(|(p, _)| p.clone()).collect();
            return super::fields::mark(object, &pointers);
        }
        Some(Decryption::Keys(keyring)) => keyring,
    };
    for (pointer, stand_in) in found {
        let file = files
            .entry(stand_in.path.clone())
            .or_insert_with(|| decrypt_file(root, &stand_in.path, keyring));
        let (digest, plain) = file
            .as_ref()
            .map_err(|e| format!("{}: {e}", stand_in.path))?;
        if *digest != stand_in.digest {
            return Err(format!(
                "{}: changed since the render read it; render again",
                stand_in.path
            ));
        }
        let value =
            select(plain, &stand_in.selector).map_err(|e| format!("{}: {e}", stand_in.path))?;
        if let Ok(text) = std::str::from_utf8(&value) {
            crate::redact::learn_values([text]);
        }
        if let Some(slot) = object.pointer_mut(pointer) {
            *slot = Value::String(base64::engine::general_purpose::STANDARD.encode(&value));
        }
    }
    let pointers: Vec<String> = found.iter().map(|(p, _)| p.clone()).collect();
    crate::redact::learn_values(super::fields::plaintexts(object, &pointers));
    super::fields::mark(object, &pointers)
}

/// Reads and decrypts the SOPS file at `path` (relative to `root`, or absolute), learning its
/// values for redaction.
fn decrypt_file(root: &Path, path: &str, keyring: &Keyring) -> Result<(String, Vec<u8>), String> {
    let bytes = std::fs::read(root.join(path)).map_err(|e| format!("cannot read it: {e}"))?;
    let digest = crate::object::sha256_hex(&bytes);
    let format = crate::secrets::formats::detect(path, &bytes)
        .ok_or_else(|| "is no longer a SOPS file".to_string())?;
    let plain = crate::secrets::formats::decrypt_file(format, &bytes, keyring)
        .map_err(|e| format!("cannot decrypt: {e}"))?;
    crate::redact::learn_values(&plain.values);
    Ok((digest, plain.bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stand_in(selector: Selector) -> StandIn {
        StandIn {
            path: "app/app.env".into(),
            selector,
            digest: "0".repeat(64),
        }
    }

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn stand_ins_are_found_in_secret_data_only() {
        let s = stand_in(Selector::Env("DB/PASS".into()));
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"},
            "data": {"DB/PASS": b64(&s.text()), "plain": b64("hello")}});
        assert_eq!(
            stand_ins(&secret),
            vec![("/data/DB~1PASS".to_string(), s.clone())]
        );
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": b64(&s.text())}});
        assert!(stand_ins(&cm).is_empty());
    }

    #[test]
    fn an_env_key_is_picked_as_kustomize_reads_it() {
        let plain = b"A=1\nB=x=y\nMULTI=one\\ntwo\n";
        assert_eq!(select(plain, &Selector::Env("B".into())).unwrap(), b"x=y");
        assert_eq!(
            select(plain, &Selector::Env("MULTI".into())).unwrap(),
            b"one\\ntwo"
        );
        assert_eq!(select(plain, &Selector::Whole).unwrap(), plain);
        assert!(
            select(plain, &Selector::Env("C".into()))
                .unwrap_err()
                .contains("no key C")
        );
    }

    #[test]
    fn without_a_key_the_unit_fails_and_with_digests_the_fields_are_marked() {
        let s = stand_in(Selector::Whole);
        let mut secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"},
            "data": {"f": b64(&s.text())}});
        let found = stand_ins(&secret);
        let err = decrypt(
            Path::new("/nowhere"),
            &mut secret,
            &found,
            None,
            &mut Files::new(),
        )
        .unwrap_err();
        assert!(
            err.contains("app/app.env and the agent has no decryption key"),
            "{err}"
        );
        let digests = Decryption::digests();
        decrypt(
            Path::new("/nowhere"),
            &mut secret,
            &found,
            Some(&digests),
            &mut Files::new(),
        )
        .unwrap();
        assert_eq!(
            super::super::fields::encrypted_pointers(&secret),
            vec!["/data/f"]
        );
    }
}

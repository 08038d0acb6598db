//! The pure decisions of decryption: carrying a SOPS document's decrypted values into the object
//! kustomize rendered from it, standing ciphertext digests in for them when there is no key, and
//! marking which fields were encrypted so every output can mask them.

use crate::secrets::Decrypted;
use serde_json::Value;

/// The annotation an object decrypted from a SOPS file carries: the JSON pointers (RFC 6901) of
/// its encrypted fields, as a JSON list. Plans, previews and drift reports mask those fields; it
/// is applied with the object, so the live object says which of its fields came encrypted.
pub const ENCRYPTED_FIELDS: &str = "aro-gitops.dev/encrypted-fields";

/// The prefix of a SOPS encrypted value (`ENC[AES256_GCM,data:...,iv:...,tag:...,type:str]`).
const CIPHERTEXT_PREFIX: &str = "ENC[AES256_GCM,";

/// Whether `value` is a SOPS ciphertext.
pub fn is_ciphertext(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|s| s.starts_with(CIPHERTEXT_PREFIX) && s.ends_with(']'))
}

/// The pointers of the encrypted fields of `object`, from its [`ENCRYPTED_FIELDS`] annotation
/// (empty when it has none or it is unreadable).
pub fn encrypted_pointers(object: &Value) -> Vec<String> {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(ENCRYPTED_FIELDS))
        .and_then(Value::as_str)
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default()
}

/// Puts the decrypted values of `decrypted` (from `source`, the SOPS document as written in its
/// file) into `rendered` (the object kustomize made of it) at the same pointers, drops the `sops`
/// block and records the pointers in [`ENCRYPTED_FIELDS`]. Refuses (nothing changed in
/// `rendered` that matters: the caller drops it) when the rendered object no longer holds the
/// file's ciphertext at a pointer, or holds ciphertext anywhere else: a half-decrypted object is
/// never applied.
pub fn carry(rendered: &mut Value, source: &Value, decrypted: &Decrypted) -> Result<(), String> {
    for p in &decrypted.encrypted_pointers {
        let written = source.pointer(p);
        if written.is_none() || rendered.pointer(p) != written {
            return Err(format!(
                "{p}: the rendered object no longer holds the encrypted value the file has there \
                 (a kustomize transformation changed or removed it); leave the fields kustomize \
                 sets unencrypted, e.g. with encrypted_regex: ^(data|stringData)$"
            ));
        }
        let plain = decrypted.document.pointer(p).cloned().ok_or_else(|| {
            format!("{p}: the decrypted document has no value there (SOPS metadata inconsistent)")
        })?;
        if let Some(slot) = rendered.pointer_mut(p) {
            *slot = plain;
        }
    }
    finish(rendered, &decrypted.encrypted_pointers)
}

/// Without a key (a plan on a pull request): replaces every ciphertext of `rendered` by a digest
/// of it (`sha256:<hex>`; base64 of that in a Secret's `data`, which must be base64), so two
/// revisions compare by ciphertext: a value re-encrypted shows as changed even when its plaintext
/// is not. Drops the `sops` block and records the pointers. Returns the pointers.
pub fn stand_in_digests(rendered: &mut Value) -> Result<Vec<String>, String> {
    let mut pointers = Vec::new();
    let mut found = Vec::new();
    collect_ciphertexts(rendered, &mut String::new(), &mut found);
    let secret = crate::kinds::is_secret(rendered);
    for (p, text) in found {
        let mut digest = format!("sha256:{}", sha256_hex(text.as_bytes()));
        if secret && p.starts_with("/data/") {
            use base64::Engine;
            digest = base64::engine::general_purpose::STANDARD.encode(digest);
        }
        if let Some(slot) = rendered.pointer_mut(&p) {
            *slot = Value::String(digest);
        }
        pointers.push(p);
    }
    finish(rendered, &pointers)?;
    Ok(pointers)
}

/// Marks `pointers` of `rendered` as encrypted fields (drops a `sops` block, refuses ciphertext
/// left anywhere).
pub(super) fn mark(rendered: &mut Value, pointers: &[String]) -> Result<(), String> {
    finish(rendered, pointers)
}

/// Drops the `sops` block, checks no ciphertext is left, annotates the pointers.
fn finish(rendered: &mut Value, pointers: &[String]) -> Result<(), String> {
    if let Some(map) = rendered.as_object_mut() {
        map.remove("sops");
    }
    let mut left = Vec::new();
    collect_ciphertexts(rendered, &mut String::new(), &mut left);
    if let Some((p, _)) = left.first() {
        return Err(format!(
            "{p}: an encrypted value is left that the file's SOPS metadata does not cover \
             (copied there by a kustomize transformation?); refusing to apply a half-decrypted object"
        ));
    }
    if pointers.is_empty() {
        return Ok(());
    }
    let list = serde_json::to_string(pointers).expect("a list of strings serialises");
    let Some(map) = rendered.as_object_mut() else {
        return Ok(());
    };
    let metadata = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(m) = metadata.as_object_mut() {
        let annotations = m
            .entry("annotations")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(a) = annotations.as_object_mut() {
            a.insert(ENCRYPTED_FIELDS.to_string(), Value::String(list));
        }
    }
    Ok(())
}

/// The pointers of every SOPS ciphertext in `object` (outside its `sops` block).
pub fn ciphertext_pointers(object: &Value) -> Vec<String> {
    let mut found = Vec::new();
    collect_ciphertexts(object, &mut String::new(), &mut found);
    found.into_iter().map(|(p, _)| p).collect()
}

/// The pointer and text of every ciphertext in `value` (outside the `sops` block).
fn collect_ciphertexts(value: &Value, path: &mut String, out: &mut Vec<(String, String)>) {
    match value {
        Value::String(s) if is_ciphertext(value) => out.push((path.clone(), s.clone())),
        Value::Object(map) => {
            for (k, v) in map {
                if path.is_empty() && k == "sops" {
                    continue;
                }
                let len = path.len();
                path.push('/');
                path.push_str(&k.replace('~', "~0").replace('/', "~1"));
                collect_ciphertexts(v, path, out);
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                collect_ciphertexts(v, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

fn sha256_hex(data: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, data);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The decrypted values of `object` at `pointers`, as text, for redaction: strings as they are,
/// numbers as written, and a Secret's `data` values decoded too.
pub fn plaintexts(object: &Value, pointers: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let secret = crate::kinds::is_secret(object);
    for p in pointers {
        match object.pointer(p) {
            Some(Value::String(s)) => {
                out.push(s.clone());
                if secret && p.starts_with("/data/") {
                    use base64::Engine;
                    if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(s.trim())
                        && let Ok(text) = String::from_utf8(bytes)
                    {
                        out.push(text);
                    }
                }
            }
            Some(Value::Number(n)) => out.push(n.to_string()),
            _ => {}
        }
    }
    out.retain(|v| !v.is_empty());
    out
}

/// The pointers either side of a diff marks as encrypted, deduplicated.
pub fn pointers_of(old: Option<&Value>, new: Option<&Value>) -> Vec<String> {
    let mut all: Vec<String> = old
        .into_iter()
        .chain(new)
        .flat_map(encrypted_pointers)
        .collect();
    all.sort();
    all.dedup();
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const C1: &str = "ENC[AES256_GCM,data:abc=,iv:x,tag:y,type:str]";
    const C2: &str = "ENC[AES256_GCM,data:def=,iv:x,tag:y,type:str]";

    fn source() -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "stringData": {"password": C1}, "sops": {"mac": "m"}})
    }

    fn decrypted() -> Decrypted {
        Decrypted {
            document: json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                "stringData": {"password": "hunter2-long"}}),
            encrypted_pointers: vec!["/stringData/password".into()],
        }
    }

    #[test]
    fn carry_puts_plaintext_at_the_pointers_of_the_rendered_object() {
        let mut rendered = source();
        rendered["metadata"]["namespace"] = json!("set-by-kustomize");
        carry(&mut rendered, &source(), &decrypted()).unwrap();
        assert_eq!(rendered["stringData"]["password"], "hunter2-long");
        assert_eq!(rendered["metadata"]["namespace"], "set-by-kustomize");
        assert!(rendered.get("sops").is_none());
        assert_eq!(
            encrypted_pointers(&rendered),
            vec!["/stringData/password".to_string()]
        );
    }

    #[test]
    fn carry_refuses_a_changed_or_leftover_ciphertext() {
        let mut changed = source();
        changed["stringData"]["password"] = json!(C2);
        let e = carry(&mut changed, &source(), &decrypted()).unwrap_err();
        assert!(e.starts_with("/stringData/password: "), "{e}");
        let mut copied = source();
        copied["stringData"]["copy"] = json!(C2);
        let e = carry(&mut copied, &source(), &decrypted()).unwrap_err();
        assert!(e.starts_with("/stringData/copy: "), "{e}");
        assert!(!e.contains(C2));
    }

    #[test]
    fn digests_stand_in_for_ciphertext_without_a_key() {
        let mut a = source();
        a["data"] = json!({"token": C1});
        let pointers = stand_in_digests(&mut a).unwrap();
        assert_eq!(pointers, vec!["/stringData/password", "/data/token"]);
        let token = a["data"]["token"].as_str().unwrap();
        use base64::Engine;
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(token)
            .unwrap();
        assert!(String::from_utf8(decoded).unwrap().starts_with("sha256:"));
        assert!(
            a["stringData"]["password"]
                .as_str()
                .unwrap()
                .starts_with("sha256:")
        );
        let mut b = source();
        b["data"] = json!({"token": C1});
        stand_in_digests(&mut b).unwrap();
        assert_eq!(a, b, "the same ciphertext gives the same digest");
        let mut c = source();
        c["stringData"]["password"] = json!(C2);
        stand_in_digests(&mut c).unwrap();
        assert_ne!(a["stringData"], c["stringData"]);
    }

    #[test]
    fn plaintexts_include_decoded_secret_data() {
        let s = json!({"apiVersion": "v1", "kind": "Secret", "data": {"a": "aHVudGVyMg=="}});
        let p = vec!["/data/a".to_string()];
        assert_eq!(plaintexts(&s, &p), vec!["aHVudGVyMg==", "hunter2"]);
    }
}

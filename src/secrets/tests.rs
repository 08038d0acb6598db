//! The module's contract: keyring, detection, decrypt/encrypt round trips and their errors.

use super::*;
use serde_json::json;

fn identity() -> (String, String) {
    use age::secrecy::ExposeSecret;
    let id = age::x25519::Identity::generate();
    (
        id.to_string().expose_secret().to_string(),
        id.to_public().to_string(),
    )
}

fn secret() -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": "pull", "namespace": "aro-dev"},
           "stringData": {"password": "hunter2", "port": 5432}})
}

fn data_only() -> EncryptionRules {
    EncryptionRules {
        encrypted_regex: Some("^(data|stringData)$".into()),
        ..Default::default()
    }
}

#[test]
fn keyring_reads_identity_files_and_names_bad_lines_by_number() {
    let (a, _) = identity();
    let (b, _) = identity();
    let k = Keyring::parse(&format!(
        "# created: now\n# public key: age1...\n{a}\n\n{b}\n"
    ))
    .unwrap();
    assert_eq!(k.len(), 2);
    assert_eq!(format!("{k:?}"), "Keyring(2 age identities)");
    let err = Keyring::parse(&format!("{a}\nAGE-SECRET-KEY-1NOTAKEY\n"))
        .unwrap_err()
        .to_string();
    assert_eq!(err, "line 2 is not an age identity (AGE-SECRET-KEY-1...)");
    assert!(Keyring::parse("# nothing\n").is_err());
}

#[test]
fn detects_the_sops_block() {
    assert!(!is_encrypted(&secret()));
    assert!(!is_encrypted(&json!({"sops": "x"})));
    assert!(!is_encrypted(&json!(["sops"])));
    let (_, r) = identity();
    assert!(is_encrypted(
        &encrypt(&secret(), &[r], &EncryptionRules::default()).unwrap()
    ));
}

#[test]
fn round_trip_with_encrypted_regex_keeps_the_rest_plain() {
    let (id, r) = identity();
    let enc = encrypt(&secret(), std::slice::from_ref(&r), &data_only()).unwrap();
    assert_eq!(enc["metadata"]["name"], "pull");
    assert_eq!(enc["sops"]["encrypted_regex"], "^(data|stringData)$");
    assert_eq!(enc["sops"]["age"][0]["recipient"], r.as_str());
    assert!(
        enc["stringData"]["password"]
            .as_str()
            .unwrap()
            .starts_with("ENC[AES256_GCM,")
    );
    let dec = decrypt(&enc, &Keyring::parse(&id).unwrap()).unwrap();
    assert_eq!(dec.document, secret());
    assert!(!format!("{dec:?}").contains("hunter2"));
    assert_eq!(
        dec.encrypted_pointers,
        vec!["/stringData/password", "/stringData/port"]
    );
}

#[test]
fn wrong_key_names_the_recipients_and_counts_identities() {
    let (_, r) = identity();
    let (other, _) = identity();
    let enc = encrypt(
        &secret(),
        std::slice::from_ref(&r),
        &EncryptionRules::default(),
    )
    .unwrap();
    let err = decrypt(&enc, &Keyring::parse(&other).unwrap())
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!(
            "none of the 1 age identities can decrypt the data key; the file is encrypted for {r}"
        )
    );
}

#[test]
fn tampering_fails_without_showing_values() {
    let (id, r) = identity();
    let keys = Keyring::parse(&id).unwrap();
    let enc = encrypt(&secret(), &[r], &data_only()).unwrap();
    // A plain value changed: the MAC catches it.
    let mut t = enc.clone();
    t["metadata"]["name"] = json!("evil");
    let err = decrypt(&t, &keys).unwrap_err();
    assert!(matches!(err, SopsError::MacMismatch), "{err}");
    // An encrypted value replaced by plain text where the rule wants ciphertext.
    let mut t = enc.clone();
    t["stringData"]["password"] = json!("hunter3");
    let err = decrypt(&t, &keys).unwrap_err().to_string();
    assert!(
        err.contains("`stringData.password` is not encrypted"),
        "{err}"
    );
    assert!(!err.contains("hunter"), "{err}");
    // A value removed changes the MAC.
    let mut t = enc.clone();
    t["stringData"].as_object_mut().unwrap().remove("port");
    assert!(matches!(decrypt(&t, &keys), Err(SopsError::MacMismatch)));
    // lastmodified changed: the stored MAC no longer authenticates.
    let mut t = enc;
    t["sops"]["lastmodified"] = json!("2020-01-01T00:00:00Z");
    assert!(matches!(decrypt(&t, &keys), Err(SopsError::MacMismatch)));
}

#[test]
fn multi_document_files_share_one_mac() {
    let (id, r) = identity();
    let keys = Keyring::parse(&id).unwrap();
    let docs = vec![secret(), json!({"kind": "ConfigMap", "data": {"a": "b"}})];
    let enc = encrypt_documents(&docs, &[r], &EncryptionRules::default()).unwrap();
    assert_eq!(enc[0]["sops"], enc[1]["sops"]);
    let dec = decrypt_documents(&enc, &keys).unwrap();
    assert_eq!(dec[1].document, docs[1]);
    assert_eq!(dec[1].encrypted_pointers, vec!["/kind", "/data/a"]);
    // One document alone does not match the file's MAC.
    assert!(matches!(
        decrypt(&enc[0], &keys),
        Err(SopsError::MacMismatch)
    ));
}

#[test]
fn encrypt_refuses_encrypted_input_and_conflicting_rules() {
    let (_, r) = identity();
    let enc = encrypt(
        &secret(),
        std::slice::from_ref(&r),
        &EncryptionRules::default(),
    )
    .unwrap();
    let err = encrypt(&enc, std::slice::from_ref(&r), &EncryptionRules::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("already encrypted"), "{err}");
    let both = EncryptionRules {
        encrypted_regex: Some("x".into()),
        unencrypted_suffix: Some("_u".into()),
        ..Default::default()
    };
    assert!(encrypt(&secret(), &[r], &both).is_err());
    assert!(encrypt(&secret(), &[], &EncryptionRules::default()).is_err());
}

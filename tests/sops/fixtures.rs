//! Files the reference `sops` made once (`tests/fixtures/sops/`, see its README), decrypted by the
//! project; then copies tampered with, which must fail without showing a value.

use super::*;

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sops")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn fixture_keys() -> Keyring {
    Keyring::parse(&fixture("key.txt")).expect("the fixtures' key parses")
}

fn decrypts_to_its_plain_file(name: &str) {
    let decrypted = decrypt_text(&fixture(&format!("{name}.sops.yaml")), &fixture_keys())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        decrypted,
        plain_docs(&fixture(&format!("{name}.plain.yaml"))),
        "{name}"
    );
}

#[test]
fn a_secret_with_encrypted_regex_decrypts() {
    decrypts_to_its_plain_file("secret");
    let doc = decrypt_text(&fixture("secret.sops.yaml"), &fixture_keys()).unwrap();
    assert_eq!(doc[0]["stringData"]["clientSecret"], "s3cr3t-v@lue");
}

#[test]
fn every_value_type_comments_and_the_unencrypted_suffix_decrypt() {
    decrypts_to_its_plain_file("values");
    let docs = plain_docs(&fixture("values.sops.yaml"));
    let d = secrets::decrypt(&docs[0], &fixture_keys()).unwrap();
    assert!(
        d.encrypted_pointers
            .contains(&"/cluster/hosts/2/nested/deep".to_string())
    );
    assert!(
        !d.encrypted_pointers
            .iter()
            .any(|p| p.contains("owner_unencrypted"))
    );
}

#[test]
fn a_multi_document_file_decrypts() {
    decrypts_to_its_plain_file("multi");
}

#[test]
fn mac_only_encrypted_with_encrypted_suffix_decrypts() {
    decrypts_to_its_plain_file("mac-only");
    // Plain values are outside a mac_only_encrypted MAC: changing one is not a MAC failure.
    let text = fixture("mac-only.sops.yaml").replace("replicas: 2", "replicas: 3");
    let docs = decrypt_text(&text, &fixture_keys()).unwrap();
    assert_eq!(docs[0]["replicas"], 3);
}

#[test]
fn a_changed_plain_value_fails_the_mac() {
    let text = fixture("secret.sops.yaml").replace("namespace: aro-dev", "namespace: aro-prod");
    let err = decrypt_text(&text, &fixture_keys()).unwrap_err();
    assert!(matches!(err, secrets::SopsError::MacMismatch), "{err}");
    assert_eq!(
        err.to_string(),
        "the MAC does not match: the file was changed after it was encrypted"
    );
    // An unencrypted-suffix value is plain but still in the MAC.
    let text = fixture("values.sops.yaml").replace("platform-team", "someone-else");
    let err = decrypt_text(&text, &fixture_keys()).unwrap_err();
    assert!(matches!(err, secrets::SopsError::MacMismatch), "{err}");
}

#[test]
fn a_removed_value_or_a_replaced_mac_fails() {
    let text: String = fixture("secret.sops.yaml")
        .lines()
        .filter(|l| !l.contains("clientSecret"))
        .map(|l| format!("{l}\n"))
        .collect();
    let err = decrypt_text(&text, &fixture_keys()).unwrap_err();
    assert!(matches!(err, secrets::SopsError::MacMismatch), "{err}");
    // Another file's MAC (same key, other values) does not authenticate this one.
    let other_mac = plain_docs(&fixture("values.sops.yaml"))[0]["sops"]["mac"].clone();
    let mut doc = plain_docs(&fixture("secret.sops.yaml")).remove(0);
    doc["sops"]["mac"] = other_mac;
    let err = secrets::decrypt(&doc, &fixture_keys()).unwrap_err();
    assert!(matches!(err, secrets::SopsError::MacMismatch), "{err}");
}

#[test]
fn a_value_left_plain_where_the_rule_wants_ciphertext_is_named() {
    let mut doc = plain_docs(&fixture("secret.sops.yaml")).remove(0);
    doc["stringData"]["clientSecret"] = Value::String("typed-in-plain".into());
    let err = secrets::decrypt(&doc, &fixture_keys())
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "the value at `stringData.clientSecret` is not encrypted, but the file's rules say it should be"
    );
    // A number where ciphertext belongs (default rule: every value).
    let mut doc = plain_docs(&fixture("values.sops.yaml")).remove(0);
    doc["cluster"]["replicas"] = Value::from(5);
    let err = secrets::decrypt(&doc, &fixture_keys())
        .unwrap_err()
        .to_string();
    assert!(err.contains("`cluster.replicas` is not encrypted"), "{err}");
    assert!(!err.contains('5'), "{err}");
}

#[test]
fn a_value_moved_to_another_key_does_not_decrypt() {
    let mut doc = plain_docs(&fixture("values.sops.yaml")).remove(0);
    let name = doc["cluster"]["name"].clone();
    doc["cluster"]["unicode"] = name;
    let err = secrets::decrypt(&doc, &fixture_keys())
        .unwrap_err()
        .to_string();
    assert!(err.contains("`cluster.unicode` does not decrypt"), "{err}");
}

#[test]
fn the_wrong_key_is_told_with_the_files_recipient() {
    let stranger = Key::generate();
    let err = decrypt_text(&fixture("secret.sops.yaml"), &stranger.keyring())
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "none of the 1 age identities can decrypt the data key; the file is encrypted for \
         age1dkq2k0ajr3nngwg0tuzcz6q2sqzphcvtq53nn53ey2vtn202csas5tmfms"
    );
}

#[test]
fn an_encrypted_comment_regex_file_decrypts_by_the_values_form() {
    // Comments are not kept here: under a comment rule a value is encrypted when it reads as
    // `ENC[...]`, and the MAC still covers every value.
    decrypts_to_its_plain_file("comment-rule");
    let text = fixture("comment-rule.sops.yaml").replace("replicas: 2", "replicas: 3");
    let err = decrypt_text(&text, &fixture_keys()).unwrap_err();
    assert!(matches!(err, secrets::SopsError::MacMismatch), "{err}");
}

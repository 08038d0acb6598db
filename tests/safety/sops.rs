//! See `tests/safety.rs`: SOPS-encrypted files in the fleet (issue 16). A Secret encrypted with
//! the project's own SOPS writer for a fresh age key is decrypted in memory and applied; its value
//! reaches no output (plans, reports, logs, git history); the key comes from a file or a Secret
//! (`--decryption-secret`); a plan on a pull request works without
//! the key (ciphertext digests, and says so); a unit whose SOPS file cannot be decrypted (wrong
//! key, tampered MAC, no key) fails alone, deletes nothing, and the other unit goes on.

use super::{DEV, Fleet, PROD, git};
use base64::Engine as _;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const FILE: &str = "clusters/dev/pull-secret.yaml";

/// A value unique to this test run.
fn unique(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("sops-{what}-{nanos:x}-{}", std::process::id())
}

/// A fresh age identity written to a file beside the fleet (never in it); its recipient.
fn age_key(fleet: &Fleet, name: &str) -> (PathBuf, String) {
    let dir = fleet.repo.parent().expect("the fleet's tempdir");
    super::common::sops::age_key(dir, name)
}

/// The Secret `pull-secret` holding `token`, SOPS-encrypted for `recipient` (data only).
fn encrypted_secret(token: &str, recipient: &str) -> String {
    super::common::sops::encrypted_secret(json!({"name": "pull-secret"}), token, recipient)
}

/// `git log -p` of every ref of `repo` but `main`: what the agent wrote.
fn agent_history(repo: &Path) -> String {
    let refs = git::git(repo, &["for-each-ref", "--format=%(refname)"]);
    refs.lines()
        .filter(|r| *r != "refs/heads/main")
        .map(|r| git::git(repo, &["log", "-p", r, "--not", "refs/heads/main"]))
        .collect()
}

fn run_once(fleet: &Fleet, extra: &[&str]) -> super::Output {
    let mut args = vec!["run", "--once", "--sim-delay", "0s", "--timeout", "300s"];
    args.extend_from_slice(extra);
    fleet.aro_gitops(&args)
}

fn live_token(fleet: &Fleet) -> Option<String> {
    let s = fleet.get("v1", "Secret", Some("aro-dev"), "pull-secret")?;
    if let Some(t) = s.pointer("/data/token").and_then(Value::as_str) {
        let bytes = base64::engine::general_purpose::STANDARD.decode(t).ok()?;
        return String::from_utf8(bytes).ok();
    }
    s.pointer("/stringData/token")
        .and_then(Value::as_str)
        .map(str::to_string)
}

#[test]
fn case_16_sops_secret_decrypted_in_memory_applied_and_never_shown() {
    let (fleet, _) = Fleet::git();
    let (key, recipient) = age_key(&fleet, "age.key");
    let key_arg = key.to_str().unwrap();
    let first = unique("first");
    fleet.write(FILE, &encrypted_secret(&first, &recipient));
    fleet.add_resource(DEV, "pull-secret.yaml");
    fleet.commit("an encrypted pull secret");

    // Without the key: the unit with the SOPS file fails, naming it; the other converges.
    let out = run_once(&fleet, &[]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.stdout
            .contains("pull-secret.yaml: Secret/aro-dev/pull-secret: is encrypted with SOPS and the agent has no decryption key"),
        "{}",
        out.all()
    );
    assert!(
        live_token(&fleet).is_none(),
        "nothing applied without the key"
    );

    // `validate` needs no key: ciphertext digests stand in for the values.
    let out = super::common::fleet::aro_gitops_in(
        Path::new("."),
        &["validate", fleet.repo.to_str().unwrap()],
    );
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(out.stdout.contains("clusters/dev: ok"), "{}", out.all());

    // The key in a Secret of the agent's namespace (`--decryption-secret`), as in a cluster.
    let identity = std::fs::read_to_string(&key).expect("key");
    fleet.with_client(async move |client| {
        use kube::api::{Api, PostParams};
        let api: Api<k8s_openapi::api::core::v1::Secret> =
            Api::namespaced(client, "aro-gitops-system");
        let secret = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "sops-age"}, "stringData": {"identity.agekey": identity}}))
        .expect("a Secret");
        api.create(&PostParams::default(), &secret)
            .await
            .expect("create the key Secret");
    });
    let out = run_once(
        &fleet,
        &[
            "--decryption-secret",
            "aro-gitops-system/sops-age",
            "--log",
            "debug",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(!out.all().contains(&first), "{}", out.all());
    assert!(!out.all().contains("AGE-SECRET-KEY-"), "{}", out.all());
    assert_eq!(live_token(&fleet).as_deref(), Some(first.as_str()));
    let live = fleet
        .get("v1", "Secret", Some("aro-dev"), "pull-secret")
        .expect("the Secret");
    assert!(live.get("sops").is_none(), "{live}");
    assert_eq!(
        live.pointer("/metadata/annotations/aro-gitops.dev~1encrypted-fields"),
        Some(&json!("[\"/stringData/token\"]")),
        "{live}"
    );

    // A new value: the pull-request plan, without the key, compares ciphertext and says so.
    let second = unique("second");
    fleet.write(FILE, &encrypted_secret(&second, &recipient));
    fleet.commit("the pull secret rotated");
    let out = fleet.plan_revs("HEAD~1", "HEAD", &[]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(
        out.stdout.contains(aro_gitops::decrypt::DIGESTS_NOTE),
        "{}",
        out.all()
    );
    assert!(
        out.stdout.contains(aro_gitops::plan::diff::HIDDEN_CHANGED),
        "{}",
        out.all()
    );
    for format in ["markdown", "json"] {
        let out = fleet.plan_revs("HEAD~1", "HEAD", &["-o", format]);
        assert_eq!(out.code, 2, "{}", out.all());
        assert!(out.stdout.contains(aro_gitops::decrypt::DIGESTS_NOTE));
    }

    // Against live state, with the key: the value changed, and that is all it says.
    let out = fleet.plan(&["--decryption-key-file", key_arg]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(out.stdout.contains("(value hidden, "), "{}", out.all());
    let out2 = fleet.aro_gitops(&["drift", "--decryption-key-file", key_arg]);
    for o in [&out, &out2] {
        assert!(
            !o.all().contains(&first) && !o.all().contains(&second),
            "{}",
            o.all()
        );
    }

    let out = run_once(&fleet, &["--decryption-key-file", key_arg]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert_eq!(live_token(&fleet).as_deref(), Some(second.as_str()));
    // Only in memory: no file of the state directory holds a decrypted value, but the embedded
    // API server's store (the cluster's etcd, which holds the Secret itself).
    let mut stack = vec![fleet.state.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("state folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                if path != fleet.state.join("control-plane") {
                    stack.push(path);
                }
            } else if let Ok(bytes) = std::fs::read(&path) {
                let text = String::from_utf8_lossy(&bytes);
                assert!(
                    !text.contains(&first) && !text.contains(&second),
                    "{} holds a decrypted value",
                    path.display()
                );
            }
        }
    }
    let history = agent_history(&fleet.repo);
    let b64 = base64::engine::general_purpose::STANDARD;
    for needle in [&first, &second, &b64.encode(&first), &b64.encode(&second)] {
        assert!(!out.all().contains(needle.as_str()), "{}", out.all());
        assert!(
            !history.contains(needle.as_str()),
            "the agent's commits hold {needle}"
        );
    }
}

#[test]
fn case_16_undecryptable_sops_file_fails_its_unit_alone_and_deletes_nothing() {
    let (fleet, _) = Fleet::git();
    let (key, recipient) = age_key(&fleet, "age.key");
    let (_, stranger) = age_key(&fleet, "other.key");
    let key_arg = key.to_str().unwrap();
    // dev has a ConfigMap the agent applied.
    fleet.write(
        "clusters/dev/extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  a: b\n",
    );
    fleet.add_resource(DEV, "extra.yaml");
    fleet.commit("an extra ConfigMap");
    let out = run_once(&fleet, &["--decryption-key-file", key_arg]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        fleet
            .get("v1", "ConfigMap", Some("aro-dev"), "extra")
            .is_some()
    );

    // Wrong key, then a tampered MAC, then a value left in clear: each time dev removes its
    // ConfigMap (a prune) and adds the SOPS file; prod adds a ConfigMap of its own.
    let tampered = {
        let text = encrypted_secret(&unique("tampered"), &recipient);
        let mut doc = aro_gitops::yaml::from_str(&text).unwrap();
        let mac = doc["sops"]["mac"].as_str().unwrap().to_string();
        let flipped = mac.replacen("data:", "data:AA", 1);
        doc["sops"]["mac"] = json!(flipped);
        aro_gitops::yaml::to_string(&doc)
    };
    let cleartext = {
        let text = encrypted_secret(&unique("clear"), &recipient);
        let mut doc = aro_gitops::yaml::from_str(&text).unwrap();
        doc["stringData"]["added"] = json!("left-in-clear");
        aro_gitops::yaml::to_string(&doc)
    };
    let cases = [
        ("wrong key", encrypted_secret(&unique("wrong"), &stranger)),
        ("tampered MAC", tampered),
        ("a value left in clear", cleartext),
    ];
    fleet.replace(
        &format!("{DEV}/kustomization.yaml"),
        "  - extra.yaml\n",
        "  - pull-secret.yaml\n",
    );
    for (i, (case, file)) in cases.iter().enumerate() {
        fleet.write(FILE, file);
        fleet.write(
            &format!("clusters/prod/more-{i}.yaml"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: more-{i}\ndata:\n  a: b\n"
            ),
        );
        fleet.add_resource(PROD, &format!("more-{i}.yaml"));
        fleet.commit(case);
        let out = run_once(&fleet, &["--decryption-key-file", key_arg]);
        assert_eq!(out.code, 1, "{case}: {}", out.all());
        assert!(
            out.stdout.contains("error: clusters/dev failed")
                && out
                    .stdout
                    .contains("pull-secret.yaml: Secret/aro-dev/pull-secret: cannot decrypt: "),
            "{case}: {}",
            out.all()
        );
        assert!(
            !out.stdout.contains("error: clusters/prod failed"),
            "{case}: {}",
            out.all()
        );
        assert!(
            fleet
                .get("v1", "ConfigMap", Some("aro-dev"), "extra")
                .is_some(),
            "{case}: dev's ConfigMap was deleted by a unit that failed"
        );
        assert!(
            live_token(&fleet).is_none(),
            "{case}: a half-decrypted Secret was applied"
        );
        assert!(
            fleet
                .get("v1", "ConfigMap", Some("aro-prod"), &format!("more-{i}"))
                .is_some(),
            "{case}: prod did not go on"
        );
    }
}

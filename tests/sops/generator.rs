//! SOPS files as ksops and kustomize-sops users feed them to a `secretGenerator` (issue 28): a
//! SOPS dotenv file under `envs:`, SOPS YAML and binary files under `files:`, decrypted in memory
//! and applied; their values in no output. And the `--decryption-secret` Secret followed by a
//! long-running `run`: a rotated key is used for the next revision without a restart, and a
//! deleted Secret keeps the last good keys, with a warning.

use super::common::fleet::{Fleet, aro_gitops_in};
use super::common::kubectl::Server;
use super::common::running::Running;
use aro_gitops::secrets::{self, EncryptionRules, formats};
use base64::Engine as _;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// A value unique to this run.
fn unique(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_nanos();
    format!("gen-{what}-{nanos:x}")
}

/// A SOPS dotenv file holding `DB_USER=app` and `DB_PASSWORD=password`, for `recipient`.
fn env_file(password: &str, recipient: &str) -> String {
    formats::encrypt_dotenv(
        &format!("DB_USER=app\nDB_PASSWORD={password}\n"),
        &[recipient.to_string()],
        &EncryptionRules::default(),
    )
    .expect("encrypt the env file")
}

/// `data.KEY` of a live Secret, decoded.
fn decoded(secret: &Value, key: &str) -> Option<String> {
    let b64 = secret.pointer(&format!("/data/{key}"))?.as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.split_whitespace().collect::<String>())
        .ok()?;
    String::from_utf8(bytes).ok()
}

const GENERATOR: &str = "
secretGenerator:
  - name: app-credentials
    envs: [secrets/app.env]
    files: [ca.pem=secrets/ca.pem, settings.yaml=secrets/settings.yaml]
    options:
      disableNameSuffixHash: true
";

#[test]
fn a_secret_generator_over_sops_files_applies_decrypted_values_and_shows_none() {
    let (fleet, _) = Fleet::git();
    let (key, recipient) = super::common::sops::age_key(fleet.dir(), "age.key");
    let key = key.to_str().expect("UTF-8 path");
    let password = unique("password");
    let cert_body = unique("cert");
    let cert = format!("-----BEGIN CERTIFICATE-----\n{cert_body}\n-----END CERTIFICATE-----\n");
    let api_key = unique("api-key");
    fleet.write(
        "clusters/dev/secrets/app.env",
        &env_file(&password, &recipient),
    );
    fleet.write(
        "clusters/dev/secrets/ca.pem",
        &formats::encrypt_binary(&cert, std::slice::from_ref(&recipient)).expect("encrypt"),
    );
    let settings = secrets::encrypt(
        &json!({"endpoint": "https://api.example.com", "apiKey": api_key}),
        std::slice::from_ref(&recipient),
        &EncryptionRules::default(),
    )
    .expect("encrypt");
    fleet.write(
        "clusters/dev/secrets/settings.yaml",
        &aro_gitops::yaml::to_string(&settings),
    );
    let kustomization = fleet.read("clusters/dev/kustomization.yaml") + GENERATOR;
    fleet.write("clusters/dev/kustomization.yaml", &kustomization);
    fleet.commit("a Secret generated from SOPS files");
    let secrets_shown = |text: &str| {
        [
            password.as_str(),
            api_key.as_str(),
            cert_body.as_str(),
            "AGE-SECRET-KEY-",
        ]
        .iter()
        .find(|v| text.contains(*v))
        .map(|v| v.to_string())
    };

    // `render` holds no key: stand-ins, never a value.
    let out = aro_gitops_in(&fleet.repo, &["render", "clusters/dev"]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stdout.contains("name: app-credentials"),
        "{}",
        out.all()
    );
    assert_eq!(secrets_shown(&out.all()), None, "{}", out.all());

    // Without the key the unit fails, naming the file; the other unit goes on.
    let run = ["run", "--once", "--sim-delay", "0s", "--timeout", "60s"];
    let out = fleet.aro_gitops(&run);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.stdout.contains("Secret/aro-dev/app-credentials: is generated from the SOPS file clusters/dev/secrets/app.env and the agent has no decryption key"),
        "{}",
        out.all()
    );
    assert!(
        fleet
            .get("v1", "Secret", Some("aro-dev"), "app-credentials")
            .is_none()
    );

    // With the key: decrypted in memory and applied, masked everywhere.
    let mut with_key = run.to_vec();
    with_key.extend(["--decryption-key-file", key, "--log", "debug"]);
    let out = fleet.aro_gitops(&with_key);
    assert_eq!(out.code, 0, "{}", out.all());
    assert_eq!(secrets_shown(&out.all()), None, "{}", out.all());
    let live = fleet
        .get("v1", "Secret", Some("aro-dev"), "app-credentials")
        .expect("the generated Secret");
    assert_eq!(decoded(&live, "DB_USER").as_deref(), Some("app"));
    assert_eq!(decoded(&live, "DB_PASSWORD"), Some(password.clone()));
    assert_eq!(decoded(&live, "ca.pem"), Some(cert.clone()));
    let yaml = decoded(&live, "settings.yaml").expect("settings.yaml");
    assert_eq!(
        aro_gitops::yaml::from_str(&yaml).expect("YAML"),
        json!({"endpoint": "https://api.example.com", "apiKey": api_key})
    );
    let fields: Vec<String> = serde_json::from_str(
        live.pointer("/metadata/annotations/aro-gitops.dev~1encrypted-fields")
            .and_then(Value::as_str)
            .expect("the encrypted-fields annotation"),
    )
    .expect("a JSON list");
    assert_eq!(
        fields,
        [
            "/data/DB_PASSWORD",
            "/data/DB_USER",
            "/data/ca.pem",
            "/data/settings.yaml"
        ]
    );

    // A new password: the preview masks it, the run applies it.
    let second = unique("second");
    fleet.write(
        "clusters/dev/secrets/app.env",
        &env_file(&second, &recipient),
    );
    fleet.commit("the password rotated");
    let out = fleet.aro_gitops(&["drift", "--decryption-key-file", key]);
    assert!(!out.all().contains(&second), "{}", out.all());
    let out = fleet.aro_gitops(&with_key);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        !out.all().contains(&second) && secrets_shown(&out.all()).is_none(),
        "{}",
        out.all()
    );
    let live = fleet
        .get("v1", "Secret", Some("aro-dev"), "app-credentials")
        .expect("the generated Secret");
    assert_eq!(decoded(&live, "DB_PASSWORD"), Some(second));
}

/// A fleet of one application unit `app` whose Secret `app-credentials` is generated from a SOPS
/// env file, in a git repository of its own.
fn app_fleet(dir: &Path, password: &str, recipient: &str) -> Fleet {
    let repo = dir.join("repo");
    let write = |rel: &str, text: &str| {
        let path = repo.join(rel);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("folders");
        std::fs::write(path, text).expect("write");
    };
    write(
        "clusters/app/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: app\n\
         resources: [namespace.yaml]\nsecretGenerator:\n  - name: app-credentials\n    \
         envs: [app.env]\n    options:\n      disableNameSuffixHash: true\n",
    );
    write(
        "clusters/app/namespace.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: app\n",
    );
    write("clusters/app/app.env", &env_file(password, recipient));
    super::common::git::init_and_commit(&repo, "the fleet");
    Fleet::at(repo, dir.join("state"))
}

/// The age identity file at `key` as a Secret `aro-gitops-system/sops-age` (YAML, for `kubectl
/// apply -f -`).
fn key_secret(key: &Path) -> String {
    let identity = std::fs::read_to_string(key).expect("the key file");
    aro_gitops::yaml::to_string(&json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "sops-age", "namespace": "aro-gitops-system"},
        "stringData": {"identity.agekey": identity}}))
}

/// Polls the live `app/app-credentials` until its password is `want` (deadline: 90 s).
fn wait_for_password(server: &Server, agent: &Running, seen: &mut Vec<String>, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        while let Ok(line) = agent.lines.try_recv() {
            seen.push(line);
        }
        let live = server
            .kubectl()
            .get_json(&["-n", "app", "secret", "app-credentials"]);
        if live
            .as_ref()
            .and_then(|s| decoded(s, "DB_PASSWORD"))
            .as_deref()
            == Some(want)
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the password was not applied within 90 s; the agent said:\n{}",
            seen.join("\n")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_rotated_decryption_key_is_used_for_the_next_revision_without_a_restart() {
    let server = Server::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let (first_key, first_recipient) = super::common::sops::age_key(dir.path(), "first.key");
    let (second_key, second_recipient) = super::common::sops::age_key(dir.path(), "second.key");
    let first = unique("first");
    let fleet = app_fleet(dir.path(), &first, &first_recipient);
    let kubectl = server.kubectl();
    let _ = kubectl.run(&["create", "namespace", "aro-gitops-system"]);
    kubectl.ok_stdin(&["apply", "-f", "-"], &key_secret(&first_key));

    let kubeconfig = server.kubeconfig.to_str().expect("UTF-8 path");
    let agent = Running::start(
        &fleet.repo,
        &fleet.state,
        &[
            "--kubeconfig",
            kubeconfig,
            "--decryption-secret",
            "aro-gitops-system/sops-age",
            "--interval",
            "1s",
        ],
        true,
    );
    let mut seen = Vec::new();
    wait_for_password(&server, &agent, &mut seen, &first);

    // The key rotated: the Secret holds the new identity, the repository is re-encrypted to it.
    kubectl.ok_stdin(&["apply", "-f", "-"], &key_secret(&second_key));
    let second = unique("second");
    fleet.write(
        "clusters/app/app.env",
        &env_file(&second, &second_recipient),
    );
    fleet.commit("re-encrypted to the new key");
    wait_for_password(&server, &agent, &mut seen, &second);

    // The Secret deleted: the last good keys stay in force, and the agent says so.
    kubectl.ok(&["-n", "aro-gitops-system", "delete", "secret", "sops-age"]);
    let third = unique("third");
    fleet.write("clusters/app/app.env", &env_file(&third, &second_recipient));
    fleet.commit("a new password, the key Secret gone");
    wait_for_password(&server, &agent, &mut seen, &third);
    let deadline = Instant::now() + Duration::from_secs(30);
    let warning = "decryption Secret aro-gitops-system/sops-age: not found; keeping the decryption keys last loaded from it";
    while !seen.iter().any(|l| l.contains(warning)) {
        assert!(
            Instant::now() < deadline,
            "no warning:\n{}",
            seen.join("\n")
        );
        if let Ok(line) = agent.lines.recv_timeout(Duration::from_millis(200)) {
            seen.push(line);
        }
    }
    let all = seen.join("\n");
    for value in [&first, &second, &third] {
        assert!(
            !all.contains(value.as_str()),
            "a value in the output:\n{all}"
        );
    }
    assert!(!all.contains("AGE-SECRET-KEY-"), "{all}");
}

//! No secret value anywhere (issue 13, part 8): known values are planted (a ServicePrincipal's
//! client secret, a certificate identity's private key, a workload identity's federated token),
//! each used by a cluster whose etcd key the agent makes through the real SDK against the
//! simulator, and the agent runs at `--log trace`, then `plan` and `drift`. None of the values,
//! nor any token the simulated Entra ID issued (`simulated-entra-token.`), may be found in:
//! - stdout and stderr of every command (every log line);
//! - every git object of the fleet's repository, reports included, and of the agent's mirrors
//!   (`git cat-file --batch-all-objects --batch`);
//! - every file under the state directory except `control-plane/` (the embedded API server's
//!   durable store: it holds the Secret objects themselves, the planted ones and the ASO credential
//!   Secrets, as a real cluster's etcd does);
//! - every live object of every kind the control plane serves except Secrets (Events, and the
//!   conditions and annotations of every object included).
//!
//! The Secrets are created in the control plane directly, never in git, as in a real fleet.

use super::{DEV, Fleet, git};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const CERT: &str = "clusters/cert";

/// A value unique to this test run.
fn unique(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("planted-{what}-{nanos:x}-{}", std::process::id())
}

/// A fresh RSA 2048 private key in PEM (ring cannot generate RSA keys): `openssl genpkey` when
/// it is installed, else `None`.
fn fresh_rsa_key() -> Option<String> {
    let out = Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
        ])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8(out.stdout).ok())?
}

/// The certificate identity's Secret value: a self-signed certificate and its key, in PEM. The key
/// is fresh when `openssl` is there; otherwise the committed test-only key (its body is in no
/// output the agent writes either, and the fleet repository holds no copy of it).
fn certificate_and_key() -> (String, String) {
    let key_pem = fresh_rsa_key().unwrap_or_else(|| {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/azure/test-only-rsa-key.pem"),
        )
        .expect("the test-only key")
    });
    let key = rcgen::KeyPair::from_pem(&key_pem).expect("an RSA key");
    let cert = rcgen::CertificateParams::new(vec!["planted-cert".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap()
        .pem();
    (format!("{cert}{key_pem}"), key_pem)
}

/// What must never be found: each planted value, in full and base64-encoded, and the lines of the
/// private key's body (a part of a key is a leak too).
fn needles(planted: &[&str], key_pem: &str) -> Vec<String> {
    let mut out = Vec::new();
    for p in planted {
        out.push(p.to_string());
        out.push(STANDARD.encode(p));
    }
    out.extend(
        key_pem
            .lines()
            .filter(|l| !l.starts_with("-----") && l.len() >= 40)
            .map(str::to_string),
    );
    out.push("simulated-entra-token.".into());
    out
}

fn identity(name: &str, type_: &str, client_id: &str, secret: Option<&str>, ns: &str) -> String {
    let secret = secret
        .map(|s| format!("  clientSecret: {{name: {s}}}\n"))
        .unwrap_or_default();
    format!(
        "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: AzureClusterIdentity\n\
         metadata: {{name: {name}}}\nspec:\n  type: {type_}\n  clientID: {client_id}\n  \
         tenantID: 3e5a7c9d-1b2f-4a6c-8d0e-2f4a6c8e0b13\n{secret}  allowedNamespaces: {{list: [{ns}]}}\n"
    )
}

/// The unit's AROControlPlane names `identity` and has an agent-managed key in `vault`.
fn managed_key(f: &Fleet, unit: &str, cluster: &str, identity: &str, vault: &str) {
    f.add_patches(
        unit,
        &format!(
            "  - target: {{kind: AROControlPlane, name: {cluster}}}\n    patch: |-\n      \
             - op: replace\n        path: /spec/identityRef\n        value: {{kind: AzureClusterIdentity, name: {identity}}}\n      \
             - op: add\n        path: /spec/resources/0/spec/properties/etcd\n        \
             value: {{dataEncryption: {{keyManagementMode: CustomerManaged, customerManaged: {{encryptionType: KMS, kms: {{activeKey: {{name: etcd-key, vaultName: {vault}}}}}}}}}}}\n"
        ),
    );
}

/// The binary on `f` with the federated token file `token_file`, logging everything.
fn aro_gitops(f: &Fleet, token_file: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
        .args(args)
        .arg("--repo")
        .arg(&f.repo)
        .arg("--state")
        .arg(&f.state)
        .args(["--log", "trace"])
        .env("AZURE_FEDERATED_TOKEN_FILE", token_file)
        .env("NO_COLOR", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("ARO_GITOPS_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("aro-gitops runs");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// Every git directory to search: the fleet's repository and the agent's mirrors.
fn git_dirs(f: &Fleet) -> Vec<PathBuf> {
    let mut out = vec![f.repo.clone()];
    let mut stack = vec![f.state.join("source")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        if dir.join("objects").is_dir() && dir.join("HEAD").is_file() {
            out.push(dir.clone());
            continue;
        }
        stack.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    }
    out
}

/// Every file under `dir` but those under `skip`, as (path, bytes).
fn files(dir: &Path, skip: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.starts_with(skip) {
            continue;
        }
        if p.is_dir() {
            files(&p, skip, out);
        } else if let Ok(bytes) = std::fs::read(&p) {
            out.push((p, bytes));
        }
    }
}

/// Every live object of every listable kind but Secrets, as JSON.
fn live_objects(f: &Fleet) -> Vec<(String, String)> {
    f.with_client(async move |client| {
        use kube::api::{Api, DynamicObject, ListParams};
        use kube::discovery::{Discovery, verbs};
        let discovery = Discovery::new(client.clone())
            .run()
            .await
            .expect("discovery");
        let mut out = Vec::new();
        for group in discovery.groups() {
            for (resource, caps) in group.recommended_resources() {
                if resource.kind == "Secret" || !caps.supports_operation(verbs::LIST) {
                    continue;
                }
                let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
                let Ok(list) = api.list(&ListParams::default()).await else {
                    continue;
                };
                for o in list {
                    let name = format!(
                        "{}/{}",
                        resource.kind,
                        o.metadata.name.clone().unwrap_or_default()
                    );
                    out.push((name, serde_json::to_string(&o).unwrap()));
                }
            }
        }
        out
    })
}

/// Creates `objects` in the embedded control plane before the first run.
fn create(f: &Fleet, objects: Vec<Value>) {
    f.with_client(async move |client| {
        use kube::api::{Api, DynamicObject, PostParams};
        for o in objects {
            let resource = super::common::fleet::api_resource(
                o["apiVersion"].as_str().unwrap(),
                o["kind"].as_str().unwrap(),
            );
            let api: Api<DynamicObject> = match o["metadata"]["namespace"].as_str() {
                Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
                None => Api::all_with(client.clone(), &resource),
            };
            let obj: DynamicObject = serde_json::from_value(o).unwrap();
            api.create(&PostParams::default(), &obj)
                .await
                .expect("create");
        }
    })
}

fn secret(ns: &str, name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns},
        "type": "Opaque", "data": {"clientSecret": STANDARD.encode(value)}})
}

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name,
        "labels": {"app.kubernetes.io/part-of": "aro-fleet"}}})
}

#[test]
fn no_planted_secret_reaches_any_output_git_object_state_file_event_or_condition() {
    let (f, _) = Fleet::git();
    // A third cluster, `cert`, in its own namespace: a copy of dev.
    git::copy_dir(&f.repo.join(DEV), &f.repo.join(CERT));
    f.replace(
        &format!("{CERT}/cluster-params.yaml"),
        "  name: dev\n",
        "  name: cert\n",
    );
    f.replace(
        &format!("{CERT}/kustomization.yaml"),
        "namespace: aro-dev",
        "namespace: aro-cert",
    );
    // dev: a ServicePrincipal; cert: a certificate; prod: the example's workload identity.
    f.write(
        &format!("{DEV}/planted-identity.yaml"),
        &identity(
            "sp-identity",
            "ServicePrincipal",
            "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
            Some("sp-secret"),
            "aro-dev",
        ),
    );
    f.add_resource(DEV, "planted-identity.yaml");
    f.write(
        &format!("{CERT}/planted-identity.yaml"),
        &identity(
            "cert-identity",
            "ServicePrincipalCertificate",
            "1b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e",
            Some("cert-secret"),
            "aro-cert",
        ),
    );
    f.add_resource(CERT, "planted-identity.yaml");
    managed_key(&f, DEV, "dev", "sp-identity", "arogitops-dev-kv");
    managed_key(&f, CERT, "cert", "cert-identity", "arogitops-cert-kv");
    f.commit("three clusters, three identities, three agent-managed keys");

    let client_secret = unique("client-secret");
    let (cert_and_key, key_pem) = certificate_and_key();
    let token = format!(
        "{}.{}.{}",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"RS256","typ":"JWT"}"#),
        URL_SAFE_NO_PAD.encode(
            json!({"sub": unique("service-account"), "aud": "api://AzureADTokenExchange"})
                .to_string()
        ),
        URL_SAFE_NO_PAD.encode(unique("signature")),
    );
    let token_dir = tempfile::tempdir().unwrap();
    let token_file = token_dir.path().join("token");
    std::fs::write(&token_file, &token).unwrap();
    // The Secrets live in the control plane only, never in git.
    create(
        &f,
        vec![
            namespace("aro-dev"),
            namespace("aro-cert"),
            secret("aro-dev", "sp-secret", &client_secret),
            secret("aro-cert", "cert-secret", &cert_and_key),
        ],
    );

    let mut outputs = Vec::new();
    let (code, run) = aro_gitops(
        &f,
        &token_file,
        &["run", "--once", "--sim-delay", "0s", "--timeout", "300s"],
    );
    assert_eq!(code, 0, "the run converges:\n{run}");
    for line in [
        "azure: 3 token requests, 6 key vault requests (simulated)",
        "EncryptionKeyReady True KeyReady",
    ] {
        assert!(run.contains(line), "{line}:\n{run}");
    }
    assert!(
        run.contains(" TRACE "),
        "every log line is captured:\n{run}"
    );
    outputs.push(("run --once".to_string(), run));
    for args in [
        &["plan", "--color", "never"][..],
        &["plan", "-o", "json"],
        &["drift"],
    ] {
        let (code, out) = aro_gitops(&f, &token_file, args);
        assert_eq!(code, 0, "{args:?} finds nothing to change:\n{out}");
        outputs.push((format!("{args:?}"), out));
    }

    let needles = needles(&[&client_secret, &cert_and_key, &key_pem, &token], &key_pem);
    let mut found = Vec::new();
    let mut search = |place: &str, text: &[u8]| {
        let text = String::from_utf8_lossy(text);
        for n in &needles {
            if text.contains(n.as_str()) {
                found.push(format!("{place}: {}", &n[..n.len().min(24)]));
            }
        }
    };
    for (what, out) in &outputs {
        search(&format!("output of {what}"), out.as_bytes());
    }
    let mut reports = false;
    for dir in git_dirs(&f) {
        let out = git::command(&dir)
            .args(["cat-file", "--batch-all-objects", "--batch"])
            .env(
                "GIT_DIR",
                if dir == f.repo {
                    dir.join(".git")
                } else {
                    dir.clone()
                },
            )
            .output()
            .expect("git cat-file");
        assert!(out.status.success(), "git cat-file in {}", dir.display());
        assert!(out.stdout.len() > 1000, "objects in {}", dir.display());
        reports |= String::from_utf8_lossy(&out.stdout).contains("EncryptionKeyReady");
        search(&format!("git objects of {}", dir.display()), &out.stdout);
    }
    assert!(reports, "the reports are among the git objects searched");
    let mut state = Vec::new();
    files(&f.state, &f.state.join("control-plane"), &mut state);
    assert!(!state.is_empty());
    for (path, bytes) in &state {
        search(&path.display().to_string(), bytes);
    }
    let objects = live_objects(&f);
    assert!(
        objects
            .iter()
            .any(|(n, _)| n.starts_with("AROControlPlane/")),
        "objects were listed"
    );
    for (name, json) in &objects {
        search(&format!("live {name}"), json.as_bytes());
    }
    assert!(
        found.is_empty(),
        "planted secrets found:\n{}",
        found.join("\n")
    );
}

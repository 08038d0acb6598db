//! Signed commits (`--verify-signatures`, `--trusted-keys`): commits signed with the real `git`,
//! keys made by `ssh-keygen` (ed25519, ECDSA, RSA) and `gpg` (skipped only where gpg is missing).
//! A trusted signature applies; an unsigned, untrusted or tampered revision is refused: nothing of
//! it is applied and the last verified revision stays in force, and the report names the commit
//! and the signer.

use super::*;
use aro_gitops::source::signature::{Mode, TrustStore, Verification};
use std::process::Command;
use std::sync::Arc;

use crate::common::git::git_with as git_signing;

/// How a commit is signed.
enum Signer<'a> {
    /// An SSH private key file.
    Ssh(&'a Path),
    /// A gpg home and the key's fingerprint.
    Gpg(&'a Path, &'a str),
}

/// Commits every change of the work tree (or an empty commit) signed as asked, and pushes
/// (unsigned commits are the fixture's own).
fn commit(f: &Fleet, signer: &Signer, message: &str) -> String {
    git::git(&f.repo, &["add", "-A"]);
    let (config, env): (Vec<String>, Vec<(&str, &Path)>) = match signer {
        Signer::Ssh(key) => (
            vec![
                "gpg.format=ssh".into(),
                format!("user.signingkey={}", key.display()),
            ],
            vec![],
        ),
        Signer::Gpg(home, fpr) => (
            vec![
                "gpg.format=openpgp".into(),
                format!("user.signingkey={fpr}"),
            ],
            vec![("GNUPGHOME", *home)],
        ),
    };
    let args = ["commit", "-q", "--allow-empty", "-S", "-m", message];
    git_signing(&f.repo, &config, &env, &args);
    git::git(&f.repo, &["push", "-q", "origin", "main"]);
    git::git(&f.repo, &["rev-parse", "HEAD"])
}

/// A new SSH key of `kind` in the fixture's tempdir: its private key file, its public line and
/// its SHA256 fingerprint.
fn ssh_key(f: &Fleet, name: &str, kind: &str) -> (PathBuf, String, String) {
    git::ssh_key(f.dir(), name, kind)
}

fn trust(f: &Fleet, text: &str, mode: Mode) -> Arc<Verification> {
    let file = f.dir().join("trusted-keys");
    std::fs::write(&file, text).unwrap();
    Arc::new(Verification {
        mode,
        trust: TrustStore::load(&file).expect("the trust file reads"),
    })
}

async fn run_verified(
    f: &Fleet,
    verification: &Arc<Verification>,
) -> Result<RunSummary, agent::AgentError> {
    f.wait_store_free().await;
    let mut config = f.config();
    config.verify_signatures = Some(verification.clone());
    agent::run(config).await
}

/// Every object of every unit is unchanged: nothing was applied.
fn nothing_applied(summary: &RunSummary) {
    for o in &summary.outcomes {
        for object in &o.objects {
            assert_eq!(
                object.action,
                ObjectAction::Unchanged,
                "{}: {:?}",
                o.unit,
                object.key
            );
        }
    }
}

const PROBE: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssh_signed_revisions_apply_and_unsigned_or_untrusted_ones_are_refused() {
    let f = Fleet::with_remote();
    let (alice, alice_pub, _) = ssh_key(&f, "alice", "ed25519");
    let (mallory, _, mallory_fpr) = ssh_key(&f, "mallory", "ecdsa");
    let (ops, ops_pub, _) = ssh_key(&f, "ops", "rsa");
    let verification = trust(
        &f,
        &format!(
            "# who may change the fleet\nalice@example.com namespaces=\"git\" {alice_pub}\nops@example.com {ops_pub}\n"
        ),
        Mode::Tip,
    );
    let signed = commit(&f, &Signer::Ssh(&alice), "signed by alice");
    let first = run_verified(&f, &verification)
        .await
        .expect("a signed revision runs");
    assert!(!first.failed(), "{:?}", first.outcomes);
    assert_eq!(outcome(&first, DEV).revision, signed);
    assert!(outcome(&first, DEV).stale_source.is_none());

    // An unsigned change: refused, nothing of it applied, the signed revision stays.
    std::fs::write(f.repo.join("clusters/dev/probe.yaml"), PROBE).unwrap();
    f.add_resource(DEV, "probe.yaml");
    let unsigned = git::git(&f.repo, &["rev-parse", "HEAD"]);
    let second = run_verified(&f, &verification)
        .await
        .expect("runs on the last verified revision");
    nothing_applied(&second);
    let dev = outcome(&second, DEV);
    assert_eq!(
        dev.revision, signed,
        "the last verified revision stays in force"
    );
    let why = dev.stale_source.clone().expect("the refusal is reported");
    assert!(
        why.contains(&unsigned) && why.contains("is not signed"),
        "{why}"
    );
    let report = f.report("reports/aro-dev/dev.md").expect("dev's report");
    assert!(
        report.contains("Revision refused") && report.contains(&unsigned),
        "{report}"
    );

    // Signed by a key the trust file does not hold: refused, naming the key.
    let untrusted = commit(&f, &Signer::Ssh(&mallory), "signed by mallory");
    let third = run_verified(&f, &verification).await.expect("runs");
    nothing_applied(&third);
    let why = outcome(&third, DEV).stale_source.clone().expect("refused");
    assert!(
        why.contains(&untrusted)
            && why.contains(&mallory_fpr)
            && why.contains("not in the trust file"),
        "{why}"
    );
    assert!(
        f.report("reports/aro-dev/dev.md")
            .unwrap()
            .contains(&mallory_fpr)
    );

    // Signed again by a trusted (RSA) key: the change applies.
    let trusted = commit(&f, &Signer::Ssh(&ops), "signed by ops");
    let fourth = run_verified(&f, &verification).await.expect("runs");
    let dev = outcome(&fourth, DEV);
    assert_eq!(dev.revision, trusted);
    assert!(dev.stale_source.is_none());
    assert!(
        dev.objects
            .iter()
            .any(|o| o.key.name == "probe" && o.action == ObjectAction::Created),
        "{:?}",
        dev.objects
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_refuses_an_unsigned_commit_in_the_middle_that_tip_lets_through() {
    let f = Fleet::with_remote();
    let (alice, alice_pub, _) = ssh_key(&f, "alice", "ed25519");
    let all = trust(&f, &format!("alice@example.com {alice_pub}\n"), Mode::All);
    let base = commit(&f, &Signer::Ssh(&alice), "signed base");
    assert_eq!(
        outcome(&run_verified(&f, &all).await.unwrap(), DEV).revision,
        base
    );

    std::fs::write(f.repo.join("clusters/dev/probe.yaml"), PROBE).unwrap();
    f.add_resource(DEV, "probe.yaml");
    let middle = git::git(&f.repo, &["rev-parse", "HEAD"]);
    let tip = commit(&f, &Signer::Ssh(&alice), "signed on top of an unsigned one");
    let refused = run_verified(&f, &all).await.unwrap();
    nothing_applied(&refused);
    let dev = outcome(&refused, DEV);
    assert_eq!(dev.revision, base);
    let why = dev.stale_source.clone().expect("refused");
    assert!(
        why.contains(&format!("revision {tip}: its commit {middle}")) && why.contains("not signed"),
        "{why}"
    );

    // The tip alone is signed: `--verify-signatures` (tip) applies it.
    let tip_only = trust(&f, &format!("alice@example.com {alice_pub}\n"), Mode::Tip);
    let applied = run_verified(&f, &tip_only).await.unwrap();
    assert_eq!(outcome(&applied, DEV).revision, tip);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_signature_is_invalid_and_with_nothing_verified_the_run_stops() {
    let f = Fleet::with_remote();
    let (alice, alice_pub, _) = ssh_key(&f, "alice", "ed25519");
    let verification = trust(&f, &format!("alice@example.com {alice_pub}\n"), Mode::Tip);
    commit(&f, &Signer::Ssh(&alice), "the real message");
    // The same commit with another message and alice's signature: what a forger could push.
    let raw = git::git(&f.repo, &["cat-file", "commit", "HEAD"]);
    let forged = raw.replace("the real message", "a forged message") + "\n";
    std::fs::write(f.dir().join("forged"), forged).unwrap();
    let forged_path = f.dir().join("forged");
    let id = git::git(
        &f.repo,
        &[
            "hash-object",
            "-t",
            "commit",
            "-w",
            forged_path.to_str().unwrap(),
        ],
    );
    git::git(&f.repo, &["update-ref", "refs/heads/main", &id]);
    git::git(&f.repo, &["push", "-q", "-f", "origin", "main"]);

    let error = run_verified(&f, &verification)
        .await
        .expect_err("nothing to apply");
    let text = error.to_string();
    assert!(
        text.contains(&id) && text.contains("does not verify") && text.contains("SSH key SHA256:"),
        "{text}"
    );
    assert!(
        f.status_commits().is_empty(),
        "no report: nothing was applied"
    );
}

/// A gpg home with one new ed25519 key for `uid`: (home, fingerprint, armored public key).
fn gpg_key(f: &Fleet, name: &str, uid: &str) -> (PathBuf, String, String) {
    let home = f.dir().join(name);
    std::fs::create_dir_all(&home).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let gpg = |args: &[&str]| {
        let out = Command::new("gpg")
            .args(["--batch", "--passphrase", "", "--pinentry-mode", "loopback"])
            .args(args)
            .env("GNUPGHOME", &home)
            .output()
            .expect("gpg runs");
        assert!(
            out.status.success(),
            "gpg {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    gpg(&["--quick-gen-key", uid, "ed25519", "sign", "never"]);
    let listed = gpg(&["--with-colons", "--list-keys", uid]);
    let fpr = listed
        .lines()
        .find_map(|l| l.strip_prefix("fpr:"))
        .and_then(|l| l.split(':').find(|s| s.len() == 40))
        .expect("a fingerprint")
        .to_string();
    let armored = gpg(&["--armor", "--export", &fpr]);
    (home, fpr, armored)
}

fn stop_gpg_agent(home: &Path) {
    let _ = Command::new("gpgconf")
        .args(["--kill", "gpg-agent"])
        .env("GNUPGHOME", home)
        .status();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gpg_signed_revisions_verify_against_openpgp_keys() {
    if Command::new("gpg").arg("--version").output().is_err() {
        eprintln!("gpg is not installed: skipped");
        return;
    }
    let f = Fleet::with_remote();
    let (dev_home, dev_fpr, dev_key) = gpg_key(&f, "gpg-dev", "Dev <dev@example.com>");
    let (eve_home, eve_fpr, _) = gpg_key(&f, "gpg-eve", "Eve <eve@example.com>");
    let (_, ssh_pub, _) = ssh_key(&f, "alice", "ed25519");
    // SSH lines and OpenPGP blocks share the file.
    let verification = trust(
        &f,
        &format!("alice@example.com {ssh_pub}\n{dev_key}"),
        Mode::Tip,
    );
    let signed = commit(&f, &Signer::Gpg(&dev_home, &dev_fpr), "signed with gpg");
    let first = run_verified(&f, &verification).await.expect("runs");
    assert!(!first.failed());
    assert_eq!(outcome(&first, DEV).revision, signed);

    let untrusted = commit(&f, &Signer::Gpg(&eve_home, &eve_fpr), "signed by eve");
    stop_gpg_agent(&dev_home);
    stop_gpg_agent(&eve_home);
    let second = run_verified(&f, &verification).await.expect("runs");
    nothing_applied(&second);
    let why = outcome(&second, DEV).stale_source.clone().expect("refused");
    assert!(
        why.contains(&untrusted) && why.contains(&format!("OpenPGP key {eve_fpr}")),
        "{why}"
    );
}

#[test]
fn the_binary_refuses_an_unsigned_revision_and_says_why() {
    let f = Fleet::with_remote();
    let (_, alice_pub, _) = ssh_key(&f, "alice", "ed25519");
    let file = f.dir().join("trusted-keys");
    std::fs::write(&file, format!("alice@example.com {alice_pub}\n")).unwrap();
    let head = git::git(&f.repo, &["rev-parse", "HEAD"]);
    let out = Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
        .args([
            "run",
            "--once",
            "--sim-delay",
            "0s",
            "--verify-signatures=all",
        ])
        .args(["--repo", f.url.to_str().unwrap()])
        .args(["--state", f.state.to_str().unwrap()])
        .args(["--trusted-keys", file.to_str().unwrap()])
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("signature check refused revision {head}"))
            && stderr.contains("not signed"),
        "{stderr}"
    );
    assert!(
        git::commits(&f.url, STATUS_BRANCH).is_empty(),
        "nothing reported: nothing applied"
    );
}

/// The first line of `agent` containing `text`, within `wait`.
fn line_with(agent: &super::resync::Running, text: &str, wait: Duration) -> String {
    let deadline = Instant::now() + wait;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match agent.lines.recv_timeout(left) {
            Ok(line) if line.contains(text) => return line,
            Ok(line) => seen.push(line),
            Err(e) => panic!("no line with {text:?} ({e}); output:\n{}", seen.join("\n")),
        }
    }
}

/// Polls `/metrics` until `series` has `value`, within `wait`.
fn metric_reaches(addr: &str, series: &str, value: f64, wait: Duration) -> String {
    let deadline = Instant::now() + wait;
    loop {
        let (_, body) = super::resync::http_get(addr, "/metrics").expect("/metrics answers");
        if super::metrics::sample(&body, series) == Some(value) {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "{series} is not {value}:\n{body}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn the_running_controller_keeps_the_verified_revision_and_says_why_until_a_signed_one_comes() {
    let wait = Duration::from_secs(180);
    let f = Fleet::with_remote();
    let (alice, alice_pub, _) = ssh_key(&f, "alice", "ed25519");
    let file = f.dir().join("trusted-keys");
    std::fs::write(&file, format!("alice@example.com {alice_pub}\n")).unwrap();
    let signed = commit(&f, &Signer::Ssh(&alice), "signed by alice");
    let agent = super::resync::Running::start_with(
        &f,
        &[
            "--interval",
            "1s",
            "--verify-signatures",
            "--trusted-keys",
            file.to_str().unwrap(),
            "--metrics-bind-address",
            "127.0.0.1:0",
        ],
    );
    let addr = agent.served_address("metrics: serving on http://", "/metrics", wait);
    agent.next_cycle();
    let verified = r#"aro_gitops_revision_verification_total{result="verified"}"#;
    let body = metric_reaches(&addr, "aro_gitops_revision_refused", 0.0, wait);
    assert!(
        super::metrics::sample(&body, verified).is_some_and(|n| n >= 1.0),
        "{body}"
    );

    // An unsigned commit lands: refused, said once, counted, and the reports say why.
    std::fs::write(f.repo.join("clusters/dev/probe.yaml"), PROBE).unwrap();
    f.add_resource(DEV, "probe.yaml");
    let unsigned = git::git(&f.repo, &["rev-parse", "HEAD"]);
    let line = line_with(&agent, "refused: ", wait);
    assert!(
        line.contains(&unsigned) && line.contains("not signed") && line.contains(&signed),
        "{line}"
    );
    let body = metric_reaches(&addr, "aro_gitops_revision_refused", 1.0, wait);
    let unsigned_count = r#"aro_gitops_revision_verification_total{result="unsigned"}"#;
    assert!(
        super::metrics::sample(&body, unsigned_count).is_some_and(|n| n >= 1.0),
        "{body}"
    );
    let deadline = Instant::now() + wait;
    loop {
        let report = f.report("reports/aro-dev/dev.md").unwrap_or_default();
        if report.contains("Revision refused") && report.contains(&unsigned) {
            assert!(
                report.contains(&signed),
                "the report names the revision in force:\n{report}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no refusal in the report:\n{report}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // A signed commit on top: verified, applied, the refusal is over.
    let next = commit(&f, &Signer::Ssh(&alice), "signed again");
    let line = line_with(&agent, "verified: ", wait);
    assert!(line.contains(&next), "{line}");
    metric_reaches(&addr, "aro_gitops_revision_refused", 0.0, wait);
}

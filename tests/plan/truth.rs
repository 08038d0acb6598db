//! A plan tells what the run would do, refusals included: a cluster its AzureClusterIdentity
//! refuses previews as refused, with the reason and no creates (the run applies none of it); with
//! `--verify-signatures`, a head no trusted key signed previews as refused, exit code 1, as the run
//! refuses it.

use super::*;
use crate::common::git;

/// Dev's identity allows only `aro-prod`: dev is refused, prod is planned as before.
#[test]
fn a_cluster_its_identity_refuses_previews_as_refused_with_no_creates() {
    let f = Fleet::plain();
    f.add_patch(
        DEV,
        "AzureClusterIdentity",
        "aro-identity",
        "- op: replace\n  path: /spec/allowedNamespaces/list\n  value: [aro-prod]",
    );
    let out = f.plan(&["-o", "json"]);
    out.expect_code(1);
    let plan = out.json();
    let dev = cluster(&plan, DEV);
    let errors = entries(dev, "errors");
    assert!(
        errors
            .iter()
            .any(|e| e["message"].as_str().unwrap_or_default().contains(
                "AzureClusterIdentity aro-dev/aro-identity does not allow namespace aro-dev"
            )),
        "{dev:#}"
    );
    assert_eq!(count(dev, "create"), 0, "{dev:#}");
    assert!(entries(dev, "changes").is_empty(), "{dev:#}");
    let prod = cluster(&plan, PROD);
    assert!(entries(prod, "errors").is_empty(), "{prod:#}");
    assert!(count(prod, "create") > 0, "{prod:#}");
    // The terminal says it too.
    let text = f.plan(&[]);
    text.expect_code(1);
    assert!(
        text.stdout.contains("does not allow namespace aro-dev"),
        "{}",
        text.all()
    );
}

/// A trust file naming a new SSH key, and the key.
fn trusted(f: &Fleet) -> (std::path::PathBuf, std::path::PathBuf) {
    let (key, public, _) = git::ssh_key(f.dir(), "alice", "ed25519");
    let file = f.dir().join("trusted-keys");
    std::fs::write(&file, format!("alice@example.com {public}\n")).expect("trust file");
    (file, key)
}

#[test]
fn verify_signatures_refuses_an_unsigned_head_and_plans_a_signed_one() {
    let (f, unsigned) = Fleet::git();
    let (file, key) = trusted(&f);
    let trust = [
        "--verify-signatures",
        "--trusted-keys",
        file.to_str().unwrap(),
    ];
    let mut args = vec!["-o", "json"];
    args.extend(trust);
    let out = f.plan(&args);
    out.expect_code(1);
    let plan = out.json();
    assert!(
        plan["clusters"].as_array().expect("clusters").is_empty(),
        "{plan:#}"
    );
    let message = plan["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(&format!(
            "refused: signature check refused revision {unsigned}"
        )) && message.contains("not signed"),
        "{plan:#}"
    );
    assert_eq!(plan["head"]["commit"], unsigned.as_str());
    // On the terminal.
    let mut args = vec![];
    args.extend(trust);
    let text = f.plan(&args);
    text.expect_code(1);
    assert!(
        text.stdout
            .contains("refused: signature check refused revision"),
        "{}",
        text.all()
    );
    // Signed by the trusted key: planned as without the flag (changes: exit code 2).
    let signed = git::commit_all_ssh_signed(&f.repo, &key, "signed");
    let out = f.plan(&trust);
    out.expect_code(2);
    assert!(out.stdout.contains(&signed[..12]), "{}", out.all());
}

#[test]
fn verify_signatures_all_refuses_an_unsigned_commit_since_base_under_a_signed_head() {
    let (f, base) = Fleet::git();
    let (file, key) = trusted(&f);
    git::git(
        &f.repo,
        &["commit", "-q", "--allow-empty", "-m", "unsigned"],
    );
    let middle = git::git(&f.repo, &["rev-parse", "HEAD"]);
    let head = git::commit_all_ssh_signed(&f.repo, &key, "signed on top");
    let keys = file.to_str().unwrap();
    // Head alone is signed: `--verify-signatures` lets it through (nothing changes: exit code 0).
    let (code, plan) = f.plan_json(
        &base,
        &head,
        &["--verify-signatures", "--trusted-keys", keys],
    );
    assert_eq!(code, 0, "{plan:#}");
    // `=all`: the unsigned commit between base and head refuses it.
    let (code, plan) = f.plan_json(
        &base,
        &head,
        &["--verify-signatures=all", "--trusted-keys", keys],
    );
    assert_eq!(code, 1, "{plan:#}");
    let message = plan["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("its commit {middle}")) && message.contains("not signed"),
        "{plan:#}"
    );
    assert!(plan["clusters"].as_array().expect("clusters").is_empty());
}

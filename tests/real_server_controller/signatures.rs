//! Verified commits on the real server (`--verify-signatures --trusted-keys`): an unsigned head
//! with nothing verified yet stops the run before any write; a signed one applies; an unsigned
//! change on top is refused and the signed revision stays in force on the cluster; signed again,
//! it applies.

use super::*;
use common::git;

#[test]
fn an_unsigned_head_is_refused_and_a_signed_one_applies() {
    let Some(f) = RealFleet::start(&[APP]) else {
        return;
    };
    let (alice, alice_pub, _) = git::ssh_key(f.dir.path(), "alice", "ed25519");
    let trusted = f.dir.path().join("trusted-keys");
    std::fs::write(&trusted, format!("alice@example.com {alice_pub}\n")).expect("trust file");
    let trusted = trusted.to_str().expect("UTF-8 path");
    let verify = ["--verify-signatures", "--trusted-keys", trusted];

    // The fleet's first commit is unsigned: refused, nothing written to the cluster.
    let unsigned = git::git(&f.repo, &["rev-parse", "HEAD"]);
    let out = f.run_once("a", &verify);
    let text = all_output(&out);
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains(&format!("signature check refused revision {unsigned}"))
            && text.contains("is not signed"),
        "{text}"
    );
    assert!(f.get_json(&["namespace", APP]).is_none(), "{text}");

    // Signed by a trusted key: applied.
    let signed = f.commit_signed(&alice, "signed by alice");
    let out = f.run_once("a", &verify);
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(
        f.configmap(APP, "settings", "greeting").as_deref(),
        Some("hello")
    );

    // An unsigned change: refused, said once, and the signed revision stays in force.
    f.set_greeting(APP, "unsigned");
    let change = f.commit("an unsigned change");
    let out = f.run_once("a", &verify);
    let text = all_output(&out);
    let refusal = text
        .lines()
        .find(|l| l.starts_with("refused: "))
        .unwrap_or_else(|| panic!("no refusal line:\n{text}"));
    assert!(
        refusal.contains(&change)
            && refusal.contains("is not signed")
            && refusal.contains(&format!("revision {signed} stays in force")),
        "{refusal}"
    );
    assert_eq!(
        f.configmap(APP, "settings", "greeting").as_deref(),
        Some("hello"),
        "{text}"
    );

    // Signed again on top (the tip is checked): the change applies.
    f.commit_signed(&alice, "signed on top");
    let out = f.run_once("a", &verify);
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(
        f.configmap(APP, "settings", "greeting").as_deref(),
        Some("unsigned")
    );
}

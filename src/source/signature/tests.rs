//! Unit tests of the verdicts, on fixtures made with `ssh-keygen -Y sign` (the keys are
//! throwaway test keys; the payload is a commit without its `gpgsig` header).

use super::*;
use std::path::Path;

const KEY_A: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIScvQzbCuOPNGxqAvHeOk72DeIvKtnTGNHFsogGOz2W";
const KEY_B: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIN74sQXcMfiP60DmzSU8dheaHyz9hLboQd+2x6tmcbqw";
const PAYLOAD: &str = "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@x> 1700000000 +0000\ncommitter A <a@x> 1700000000 +0000\n\nsigned\n";
const SIG_A: &str = "-----BEGIN SSH SIGNATURE-----
U1NIU0lHAAAAAQAAADMAAAALc3NoLWVkMjU1MTkAAAAghJy9DNsK4480bGoC8d46TvYN4i
8q2dMY0cWyiAY7PZYAAAADZ2l0AAAAAAAAAAZzaGE1MTIAAABTAAAAC3NzaC1lZDI1NTE5
AAAAQKfsVT8EKDSGQu4UQR33dUcfH+OyxCXyyy+OnaAFCL09NJTfJNpbtQW90mKY4jMGGY
5Jw5m9f16rP5g+ENVK2QM=
-----END SSH SIGNATURE-----";
/// The same payload signed by key A in namespace `file`.
const SIG_A_FILE: &str = "-----BEGIN SSH SIGNATURE-----
U1NIU0lHAAAAAQAAADMAAAALc3NoLWVkMjU1MTkAAAAghJy9DNsK4480bGoC8d46TvYN4i
8q2dMY0cWyiAY7PZYAAAAEZmlsZQAAAAAAAAAGc2hhNTEyAAAAUwAAAAtzc2gtZWQyNTUx
OQAAAEACzlOeInBV2Yq3tD8Ug+XZakymdRwH6WJsUibncsNL9D7ZZG5So6rOfEMQldVhbF
2QpDULIuLg17pyt8BZPGcM
-----END SSH SIGNATURE-----";
/// The payload's committer time.
const TIME: i64 = 1_700_000_000;

fn trust(text: &str) -> TrustStore {
    trust::parse(Path::new("trusted"), text).unwrap()
}

fn commit(signature: Option<&str>, payload: &str) -> SignedCommit {
    SignedCommit {
        id: "c0ffee".into(),
        author: "A <a@x>".into(),
        time: TIME,
        signature: signature.map(|s| (s.to_string(), payload.as_bytes().to_vec())),
    }
}

#[test]
fn a_trusted_ssh_key_verifies_and_names_the_principal() {
    let store = trust(&format!("alice@example.com namespaces=\"git\" {KEY_A}\n"));
    let v = verify(&commit(Some(SIG_A), PAYLOAD), &store);
    assert!(v.verified(), "{v}");
    assert!(
        v.to_string().contains("alice@example.com (SSH key SHA256:"),
        "{v}"
    );
}

#[test]
fn unsigned_untrusted_and_altered_commits_are_refused_with_the_signer() {
    let only_b = trust(&format!("bob@example.com {KEY_B}\n"));
    assert_eq!(verify(&commit(None, PAYLOAD), &only_b), Verdict::Unsigned);
    let v = verify(&commit(Some(SIG_A), PAYLOAD), &only_b);
    assert_eq!(v.result(), "untrusted", "{v}");
    assert!(
        v.to_string().contains("SSH key SHA256:")
            && v.to_string().contains("not in the trust file"),
        "{v}"
    );
    let a = trust(&format!("alice@example.com {KEY_A}\n"));
    let v = verify(
        &commit(Some(SIG_A), &PAYLOAD.replace("signed", "forged")),
        &a,
    );
    assert_eq!(v.result(), "invalid", "{v}");
    let v = verify(&commit(Some(SIG_A_FILE), PAYLOAD), &a);
    assert!(
        v.result() == "invalid" && v.to_string().contains("namespace \"file\""),
        "{v}"
    );
    let v = verify(
        &commit(
            Some("-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----"),
            PAYLOAD,
        ),
        &a,
    );
    assert_eq!(v.result(), "invalid", "{v}");
    let v = verify(
        &commit(Some("-----BEGIN SIGNED MESSAGE-----\n"), PAYLOAD),
        &a,
    );
    assert!(
        v.result() == "invalid" && v.to_string().contains("X.509"),
        "{v}"
    );
}

#[test]
fn namespaces_and_validity_windows_limit_a_trusted_key() {
    for line in [
        format!("a@x namespaces=\"file\" {KEY_A}"),
        format!("a@x valid-after=\"20240101\" {KEY_A}"),
        format!("a@x valid-before=\"20200101Z\" {KEY_A}"),
    ] {
        let v = verify(&commit(Some(SIG_A), PAYLOAD), &trust(&line));
        assert!(
            v.result() == "untrusted" && v.to_string().contains("line 1"),
            "{line}: {v}"
        );
    }
    let window = format!("a@x valid-after=\"20230101\",valid-before=\"20240101\" {KEY_A}");
    assert!(verify(&commit(Some(SIG_A), PAYLOAD), &trust(&window)).verified());
}

#[test]
fn judging_stops_at_the_first_refused_commit_and_names_it() {
    let store = trust(&format!("a@x {KEY_A}"));
    let good = commit(Some(SIG_A), PAYLOAD);
    let mut middle = commit(None, PAYLOAD);
    middle.id = "bad".into();
    let (verdicts, result) = judge("c0ffee", &[good.clone(), middle, good.clone()], &store);
    assert_eq!(verdicts.len(), 2);
    let refusal = result.unwrap_err();
    assert_eq!(
        (refusal.commit.as_str(), refusal.verdict.result()),
        ("bad", "unsigned")
    );
    assert_eq!(
        refusal.to_string(),
        "signature check refused revision c0ffee: its commit bad (author A <a@x>) is not signed"
    );
    assert!(judge("c0ffee", &[good], &store).1.unwrap().verified());
}

#[test]
fn modes_read_from_the_flag() {
    assert_eq!("".parse::<Mode>(), Ok(Mode::Tip));
    assert_eq!("all".parse::<Mode>(), Ok(Mode::All));
    assert!("some".parse::<Mode>().is_err());
}

/// A gpg key (`Dev <dev@example.com>`, primary AACE36DF...) whose ed25519 signing subkey
/// (1919B4F3...) signed [`PAYLOAD`]: made with `gpg --quick-gen-key`, `--quick-add-key ... sign`,
/// `--armor --detach-sign`.
const PGP_KEY: &str = "-----BEGIN PGP PUBLIC KEY BLOCK-----

mDMEawiAXRYJKwYBBAHaRw8BAQdAQbiGzfPOm/HjpFbb3tN1nTSBC523UqQW5Uev
sZ2bq/i0FURldiA8ZGV2QGV4YW1wbGUuY29tPoiQBBMWCAA4FiEEqs4235bqiDBu
2yHpoct9S4qwpBsFAmsIgF0CGwEFCwkIBwIGFQoJCAsCBBYCAwECHgECF4AACgkQ
oct9S4qwpBuxhwEA7fD6aIqMFw3qUnIkjf+NFTjas3fzVX6lW/BI6sFU07IBAIys
S0av6DVjTgl2yFvuTxj2NQX67VCmpBCo+0cgfBUOuDMEawiAXRYJKwYBBAHaRw8B
AQdArwQ2KyjqzjzxJhq50JAtmc0iWreTsHOUxxr2TiBqQYyI7wQYFggAIBYhBKrO
Nt+W6ogwbtsh6aHLfUuKsKQbBQJrCIBdAhsCAIEJEKHLfUuKsKQbdiAEGRYIAB0W
IQQZGbTzgFLhYSVE9SAn3M1IrDetUAUCawiAXQAKCRAn3M1IrDetUN4nAQCfIA9f
diXdFPHqyeEbLdYsTlfUBSMi1t2e53sj6WFUbgD/TU5A+36kBGnphh//w9rn+Ba5
j4WzCoJkXl3T7W4s7QKezQD/XDN4AZLvneqRUoWJ6HdVhkOB9wy6IOueCtIDcphF
sfIA/3HRcsZLr53aLf9CnZbJcWgEUOs5hjxUHsQ2Ml/16LkJ
=oPpG
-----END PGP PUBLIC KEY BLOCK-----";
const PGP_SIG: &str = "-----BEGIN PGP SIGNATURE-----

iHUEABYIAB0WIQQZGbTzgFLhYSVE9SAn3M1IrDetUAUCawiAXgAKCRAn3M1IrDet
UABtAQC5fIjzOGUM5Ko4zY60db6pw85GrGEg7lxFK8acgS4nZQEApVgRUAI8gWv8
WrjmK41cOZBn4+opnc+3s7qoOAwPMQM=
=cLH5
-----END PGP SIGNATURE-----";

#[test]
fn openpgp_signatures_by_a_trusted_subkey_verify_and_others_do_not() {
    let store = trust(&format!(
        "# OpenPGP and SSH in one file\nb@x {KEY_B}\n{PGP_KEY}\n"
    ));
    assert_eq!((store.ssh.len(), store.openpgp.len()), (1, 1));
    let v = verify(&commit(Some(PGP_SIG), PAYLOAD), &store);
    assert!(v.verified(), "{v}");
    assert!(
        v.to_string().contains(
            "Dev <dev@example.com> (OpenPGP key AACE36DF96EA88306EDB21E9A1CB7D4B8AB0A41B)"
        ),
        "{v}"
    );
    let v = verify(
        &commit(Some(PGP_SIG), &PAYLOAD.replace("signed", "forged")),
        &store,
    );
    assert_eq!(v.result(), "invalid", "{v}");
    let v = verify(
        &commit(Some(PGP_SIG), PAYLOAD),
        &trust(&format!("b@x {KEY_B}")),
    );
    assert!(
        v.result() == "untrusted"
            && v.to_string()
                .contains("OpenPGP key 1919B4F38052E1612544F52027DCCD48AC37AD50"),
        "{v}"
    );
}

//! SSH signatures (`git config gpg.format ssh`): an SSHSIG in namespace `git` over the commit
//! without its `gpgsig` header, judged against the trust file's `allowed_signers` lines.

use super::Verdict;
use super::trust::AllowedSigner;
use ssh_key::{HashAlg, PublicKey, SshSig};

/// The namespace git signs commits in.
const NAMESPACE: &str = "git";

pub fn verify(armored: &str, payload: &[u8], time: i64, allowed: &[AllowedSigner]) -> Verdict {
    let sig = match SshSig::from_pem(armored.trim()) {
        Ok(sig) => sig,
        Err(e) => {
            return Verdict::Invalid {
                signer: "an unreadable SSH signature".into(),
                why: e.to_string(),
            };
        }
    };
    let key = sig.public_key().clone();
    let fingerprint = key.fingerprint(HashAlg::Sha256);
    let signer = format!("SSH key {fingerprint}");
    if sig.namespace() != NAMESPACE {
        return Verdict::Invalid {
            signer,
            why: format!("made for namespace {:?}, not \"git\"", sig.namespace()),
        };
    }
    if let Err(e) = PublicKey::new(key.clone(), "").verify(NAMESPACE, payload, &sig) {
        return Verdict::Invalid {
            signer,
            why: format!("{e} (the commit or its signature was altered)"),
        };
    }
    let mut excluded = Vec::new();
    for a in allowed.iter().filter(|a| a.key == key) {
        if let Some(ns) = &a.namespaces
            && !ns.iter().any(|n| n == NAMESPACE)
        {
            excluded.push(format!("line {}: namespaces exclude \"git\"", a.line));
        } else if a.valid_after.is_some_and(|t| time < t) {
            excluded.push(format!("line {}: the commit predates valid-after", a.line));
        } else if a.valid_before.is_some_and(|t| time > t) {
            excluded.push(format!(
                "line {}: the commit postdates valid-before",
                a.line
            ));
        } else {
            return Verdict::Verified {
                signer: format!("{} ({signer})", a.principals),
            };
        }
    }
    Verdict::Untrusted {
        signer,
        why: if excluded.is_empty() {
            "a key not in the trust file".into()
        } else {
            format!(
                "a key the trust file does not allow here ({})",
                excluded.join("; ")
            )
        },
    }
}

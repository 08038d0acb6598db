//! OpenPGP signatures (`git commit -S` with gpg): a detached signature over the commit without
//! its `gpgsig` header, judged against the trust file's public keys (primary keys and subkeys).

use super::Verdict;
use pgp::composed::{Deserializable, DetachedSignature, SignedPublicKey};
use pgp::types::KeyDetails;

pub fn verify(armored: &str, payload: &[u8], keys: &[SignedPublicKey]) -> Verdict {
    let sig = match DetachedSignature::from_string(armored.trim()) {
        Ok((sig, _)) => sig,
        Err(e) => {
            return Verdict::Invalid {
                signer: "an unreadable OpenPGP signature".into(),
                why: e.to_string(),
            };
        }
    };
    let issuer = sig
        .signature
        .issuer_fingerprint()
        .first()
        .map(|f| format!("{f:X}"))
        .or_else(|| {
            sig.signature
                .issuer_key_id()
                .first()
                .map(|k| hex_upper(k.as_ref()))
        })
        .unwrap_or_else(|| "an unnamed key".into());
    let signer = format!("OpenPGP key {issuer}");
    for key in keys {
        let primary = format!("{:X}", key.fingerprint());
        let user = key
            .details
            .users
            .first()
            .and_then(|u| u.id.as_str().map(str::to_string))
            .unwrap_or_default();
        let named = |fp: String, id: Vec<u8>| {
            issuer == fp || issuer == hex_upper(&id) || fp.ends_with(&issuer)
        };
        let mut issued_by_this = named(primary.clone(), key.legacy_key_id().as_ref().to_vec());
        let mut ok = issued_by_this && sig.verify(key, payload).is_ok();
        for sub in &key.public_subkeys {
            if ok {
                break;
            }
            if named(
                format!("{:X}", sub.fingerprint()),
                sub.legacy_key_id().as_ref().to_vec(),
            ) {
                issued_by_this = true;
                ok = sig.verify(sub, payload).is_ok();
            }
        }
        if ok {
            return Verdict::Verified {
                signer: format!("{user} (OpenPGP key {primary})")
                    .trim_start()
                    .to_string(),
            };
        }
        if issued_by_this {
            return Verdict::Invalid {
                signer: format!("{user} (OpenPGP key {primary})").trim_start().to_string(),
                why: "the signature does not match the commit (the commit or its signature was altered)".into(),
            };
        }
    }
    Verdict::Untrusted {
        signer,
        why: "a key not in the trust file".into(),
    }
}

fn hex_upper(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

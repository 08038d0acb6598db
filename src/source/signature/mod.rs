//! Commit signature verification (`run --verify-signatures`, `--trusted-keys`).
//!
//! A revision is applied only when its commit (the tip, or with [`Mode::All`] every commit since
//! the last applied revision) carries a signature that verifies against a key of the trust file
//! ([`trust`]). The decisions are pure: [`verify`] judges one commit from its `gpgsig` header and
//! signed payload; [`commits`] reads those from git (the only IO here).
//!
//! SSH signatures (`-----BEGIN SSH SIGNATURE-----`, namespace `git`) are checked with the
//! `ssh-key` crate, OpenPGP ones (`-----BEGIN PGP SIGNATURE-----`) with `pgp` (rpgp); X.509
//! signatures are judged invalid (not supported).

pub mod commits;
mod openpgp;
mod ssh;
pub mod trust;

pub use trust::TrustStore;

use std::fmt;
use std::path::PathBuf;

/// Which commits must be signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The revision's commit only (`--verify-signatures`).
    Tip,
    /// Every commit reachable from the tip and not from the last applied revision, merged
    /// branches' commits included (`--verify-signatures=all`). With no revision applied yet, the
    /// tip only: the first verified revision is the baseline.
    All,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "" | "tip" => Ok(Mode::Tip),
            "all" => Ok(Mode::All),
            _ => Err(format!("{s:?}: expected `tip` or `all`")),
        }
    }
}

/// What `run` verifies revisions with.
#[derive(Debug, Clone)]
pub struct Verification {
    pub mode: Mode,
    pub trust: TrustStore,
}

/// The verdict on one commit; the `result` label of `aro_gitops_revision_verification_total`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Signed by a trusted key: `signer` names the principal or user id and the key.
    Verified { signer: String },
    /// No signature at all.
    Unsigned,
    /// A signature that verifies, by a key the trust file does not trust (for `why`).
    Untrusted { signer: String, why: String },
    /// A signature that does not verify (tampered commit or signature, unreadable, unsupported).
    Invalid { signer: String, why: String },
}

/// The results, in the order of [`Verdict::result`]'s labels.
pub const RESULTS: [&str; 4] = ["verified", "unsigned", "untrusted", "invalid"];

impl Verdict {
    pub fn result(&self) -> &'static str {
        match self {
            Verdict::Verified { .. } => RESULTS[0],
            Verdict::Unsigned => RESULTS[1],
            Verdict::Untrusted { .. } => RESULTS[2],
            Verdict::Invalid { .. } => RESULTS[3],
        }
    }

    pub fn verified(&self) -> bool {
        matches!(self, Verdict::Verified { .. })
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Verified { signer } => write!(f, "signed by {signer}"),
            Verdict::Unsigned => f.write_str("not signed"),
            Verdict::Untrusted { signer, why } => write!(f, "signed by {signer}, {why}"),
            Verdict::Invalid { signer, why } => {
                write!(
                    f,
                    "signed by {signer}, but the signature does not verify: {why}"
                )
            }
        }
    }
}

/// One commit as the verifier sees it.
#[derive(Debug, Clone)]
pub struct SignedCommit {
    pub id: String,
    /// `Name <email>` of the author, to name who made an unsigned commit.
    pub author: String,
    /// The committer time (Unix seconds): `valid-after`/`valid-before` are checked against it.
    pub time: i64,
    /// The `gpgsig` header and the bytes it signs, when signed.
    pub signature: Option<(String, Vec<u8>)>,
}

/// Why a revision was refused: the first commit of it that is not verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The revision asked for (the reference's commit).
    pub tip: String,
    /// The commit refused (the tip itself, or one since the last applied revision).
    pub commit: String,
    pub author: String,
    pub verdict: Verdict,
}

/// How every refusal's message starts (reports tell a refusal from an unreachable source by it).
pub const REFUSED: &str = "signature check refused revision";

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{REFUSED} {}: ", self.tip)?;
        if self.commit == self.tip {
            f.write_str("the commit ")?;
        } else {
            write!(f, "its commit {} ", self.commit)?;
        }
        write!(f, "(author {}) is {}", self.author, self.verdict)
    }
}

/// The trust file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("trust file {}: {source}", file.display())]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("trust file {} line {line}: {reason}", file.display())]
    Line {
        file: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("trust file {}: no allowed_signers line and no OpenPGP public key: every revision would be refused", file.display())]
    Empty { file: PathBuf },
}

/// Judges one commit against the trust file.
pub fn verify(commit: &SignedCommit, trust: &TrustStore) -> Verdict {
    let Some((signature, payload)) = &commit.signature else {
        return Verdict::Unsigned;
    };
    let armored = signature.trim_start();
    if armored.starts_with("-----BEGIN SSH SIGNATURE-----") {
        ssh::verify(armored, payload, commit.time, &trust.ssh)
    } else if armored.starts_with("-----BEGIN PGP SIGNATURE-----") {
        openpgp::verify(armored, payload, &trust.openpgp)
    } else {
        Verdict::Invalid {
            signer: "an unknown signer".into(),
            why: "only SSH and OpenPGP signatures are supported (X.509 is not)".into(),
        }
    }
}

/// The verdicts on `commits` (newest first, the tip first), stopping at the first refused one:
/// `Ok` with the tip's verdict when every one verifies, else the refusal.
pub fn judge(
    tip: &str,
    commits: &[SignedCommit],
    trust: &TrustStore,
) -> (Vec<Verdict>, Result<Verdict, Refusal>) {
    let mut verdicts = Vec::new();
    for c in commits {
        let verdict = verify(c, trust);
        verdicts.push(verdict.clone());
        if !verdict.verified() {
            return (
                verdicts,
                Err(Refusal {
                    tip: tip.to_string(),
                    commit: c.id.clone(),
                    author: c.author.clone(),
                    verdict,
                }),
            );
        }
    }
    let tip_verdict = verdicts.first().cloned().unwrap_or(Verdict::Unsigned);
    (verdicts, Ok(tip_verdict))
}

#[cfg(test)]
mod tests;

//! Reading what the verifier judges from git: which commits a revision brings, and each one's
//! signature, signed payload, author and time.

use super::{Mode, SignedCommit};
use git2::{Oid, Repository, Sort};

/// The commits to verify for `tip`, the tip first: the tip alone with [`Mode::Tip`] or when no
/// revision was applied before; with [`Mode::All`], every commit reachable from the tip and not
/// from `applied` (the commits of merged branches too).
pub fn to_check(
    repo: &Repository,
    tip: Oid,
    mode: Mode,
    applied: Option<Oid>,
) -> Result<Vec<Oid>, git2::Error> {
    let applied = match (mode, applied) {
        (Mode::All, Some(a)) if a != tip && repo.find_commit(a).is_ok() => a,
        _ => return Ok(vec![tip]),
    };
    let mut walk = repo.revwalk()?;
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME)?;
    walk.push(tip)?;
    walk.hide(applied)?;
    let mut out = vec![tip];
    for oid in walk {
        let oid = oid?;
        if oid != tip {
            out.push(oid);
        }
    }
    Ok(out)
}

/// One commit with its signature, if it has one.
pub fn read(repo: &Repository, oid: Oid) -> Result<SignedCommit, git2::Error> {
    let commit = repo.find_commit(oid)?;
    let author = commit.author();
    let author = format!(
        "{} <{}>",
        String::from_utf8_lossy(author.name_bytes()),
        String::from_utf8_lossy(author.email_bytes())
    );
    let signature = match repo.extract_signature(&oid, None) {
        Ok((sig, payload)) => Some((String::from_utf8_lossy(&sig).into_owned(), payload.to_vec())),
        Err(e) if e.code() == git2::ErrorCode::NotFound => None,
        Err(e) => return Err(e),
    };
    Ok(SignedCommit {
        id: oid.to_string(),
        author,
        time: commit.committer().when().seconds(),
        signature,
    })
}

//! `plan --verify-signatures`: head verified as `run --verify-signatures` verifies a revision
//! (the source's own check of the tip, before anything of it is rendered), and with `all` every
//! commit since `--base` too. A refused head previews as refused: no cluster planned, the refusal
//! as the plan's error (exit code 1).

use crate::agent::AgentError;
use crate::plan::preview::{Problem, Revision as PreviewRevision};
use crate::source::signature::{self, Mode, Refusal, Verification};
use std::path::Path;
use std::sync::Arc;

/// What the source checks of head: the tip alone (the commits since base are checked apart,
/// [`since_base`]: the plan's mirror has no applied revision to count from).
pub(super) fn of_tip(v: &Verification) -> Arc<Verification> {
    Arc::new(Verification {
        mode: Mode::Tip,
        trust: v.trust.clone(),
    })
}

/// The refusal an error of head's checkout is, if it is one.
pub(super) fn refusal(e: &AgentError) -> Option<&Refusal> {
    match e {
        AgentError::Source(s) => s.refusal(),
        _ => None,
    }
}

/// The plan's error for a refused head.
pub(super) fn refused_problem(refusal: &Refusal) -> Problem {
    Problem {
        message: format!("refused: {refusal}; nothing of it would be applied"),
        ..Default::default()
    }
}

/// The revision a refused head names (it was never checked out).
pub(super) fn refused_revision(reference: String, refusal: &Refusal) -> PreviewRevision {
    PreviewRevision {
        reference,
        commit: refusal.tip.clone(),
    }
}

/// With `all`: every commit of head since `base` verified (a pull request's commits), read from
/// head's mirror under `state_dir`, or from the repository itself when it is a local one holding
/// head. The refusal, if one commit is not verified (none when head alone was to be checked).
pub(super) fn since_base(
    v: &Verification,
    repo: &str,
    state_dir: &Path,
    head: &str,
    base: &str,
) -> Option<Refusal> {
    if v.mode != Mode::All {
        return None;
    }
    let tip = git2::Oid::from_str(head).ok()?;
    let mirror = std::path::absolute(crate::source::mirror_path(state_dir))
        .ok()
        .and_then(|p| git2::Repository::open_bare(p).ok());
    let local = git2::Repository::open(repo).ok();
    let git = local
        .into_iter()
        .chain(mirror)
        .find(|r| r.find_commit(tip).is_ok())?;
    let applied = git2::Oid::from_str(base).ok();
    let commits = signature::commits::to_check(&git, tip, Mode::All, applied)
        .and_then(|oids| {
            oids.iter()
                .map(|oid| signature::commits::read(&git, *oid))
                .collect::<Result<Vec<_>, _>>()
        })
        .unwrap_or_default();
    signature::judge(head, &commits, &v.trust).1.err()
}

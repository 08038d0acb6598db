//! Revisions as `git rev-parse` reads them: `HEAD~1`, `origin/main`, short ids, tags,
//! `refs/pull/N/merge`, full ids.
//!
//! For a local repository the revision is read in that repository itself (its HEAD, detached or
//! not, its remote-tracking branches, any ref), and the commit with its tree (not its history) is
//! packed into the mirror: nothing else is copied. For a remote, the mirror holds what was fetched
//! (branches under `refs/remotes/origin/`, tags, and a `refs/...` the revision names), and `HEAD`
//! is the remote's HEAD.
//!
//! A shallow clone (a CI checkout: `git clone --depth 1`, `actions/checkout`'s default) hides the
//! parents of its oldest commits. Ancestry (`~N`, `^N`) is therefore followed through the commits'
//! own parent lines, and a commit the clone lacks is fetched by id from its `origin` remote into
//! the mirror; when that fails too the error says which `git` command fetches it.

use super::SourceError;
use super::remote::{self, RemoteUrl};
use git2::{Oid, Repository};
use std::path::Path;

/// Where a revision's names are read, and where commits the clone lacks come from.
pub(super) struct Names<'a> {
    /// The repository whose refs the revision names (the local repository, or the mirror).
    pub refs: &'a Repository,
    /// The remote's HEAD, for a mirror (whose own HEAD means nothing).
    pub head: Option<Oid>,
    /// Tried after the name itself (a mirror's `refs/remotes/origin/`).
    pub prefixes: &'a [&'a str],
    /// What missing commits are fetched from, if anything.
    pub origin: Option<RemoteUrl>,
    /// The local repository's path, for the `git -C` command an error suggests.
    pub local: Option<&'a Path>,
}

/// Why a revision did not resolve, in the user's words.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Unresolved {
    /// Nothing by that name.
    Unknown(String),
    /// A commit it needs is not here and could not be fetched: what to run.
    Missing { detail: String, command: String },
}

/// Splits the trailing ancestry operators off `expr`: `HEAD~2^2` is `HEAD` and the parents 1, 1, 2
/// (`^0` is the commit itself and adds nothing). Other suffixes (`^{tree}`, `@{u}`) stay in the name.
pub(super) fn split_ancestry(expr: &str) -> (&str, Vec<usize>) {
    let bytes = expr.as_bytes();
    let operators = |from: usize| {
        bytes[from..]
            .iter()
            .all(|b| matches!(b, b'~' | b'^') || b.is_ascii_digit())
    };
    let Some(start) = (1..bytes.len()).find(|&i| matches!(bytes[i], b'~' | b'^') && operators(i))
    else {
        return (expr, Vec::new());
    };
    let mut steps = Vec::new();
    let mut rest = &expr[start..];
    while let Some(op) = rest.chars().next() {
        let digits: String = rest[1..].chars().take_while(char::is_ascii_digit).collect();
        let n: usize = if digits.is_empty() {
            1
        } else {
            digits.parse().unwrap_or(usize::MAX)
        };
        match op {
            '~' => steps.extend(std::iter::repeat_n(1, n)),
            _ if n > 0 => steps.push(n),
            _ => {}
        }
        rest = &rest[1 + digits.len()..];
    }
    (&expr[..start], steps)
}

/// Whether `repo` has no reference at all (nothing was ever committed or fetched).
fn has_no_refs(repo: &Repository) -> bool {
    repo.head().is_err() && repo.references().is_ok_and(|mut r| r.next().is_none())
}

/// The parents a commit names in its own header (a shallow clone's grafts do not hide them).
pub(super) fn raw_parents(header: &[u8]) -> Vec<Oid> {
    header
        .split(|b| *b == b'\n')
        .take_while(|line| !line.is_empty())
        .filter_map(|line| line.strip_prefix(b"parent "))
        .filter_map(|hex| std::str::from_utf8(hex).ok())
        .filter_map(|hex| Oid::from_str(hex.trim()).ok())
        .collect()
}

/// Resolves `expr` to a commit that `mirror` holds (with its tree). See the module documentation.
pub(super) fn resolve(
    expr: &str,
    names: &Names<'_>,
    mirror: &Repository,
) -> Result<Oid, Unresolved> {
    let (base, steps) = split_ancestry(expr);
    let mut oid = match name(base, names) {
        Some(oid) => oid,
        None if base.starts_with("refs/") && names.origin.is_some() => {
            fetch_ref(base, names, mirror)?
        }
        None if is_full_id(base) => {
            let oid = Oid::from_str(base).expect("40 hex digits");
            fetch_missing(oid, names, mirror, &format!("commit {base}"), 1)?;
            oid
        }
        None if base == "HEAD" && names.head.is_none() && has_no_refs(names.refs) => {
            return Err(Unresolved::Unknown(
                "the repository has no commit yet (its HEAD names a branch nothing was committed to)".into(),
            ));
        }
        None => {
            return Err(Unresolved::Unknown(format!(
                "no branch, tag, ref or commit is called {base:?}"
            )));
        }
    };
    for (i, parent) in steps.iter().enumerate() {
        let header = header(oid, names.refs, mirror).ok_or_else(|| Unresolved::Missing {
            detail: format!("commit {oid} is not in the repository"),
            command: fetch_command(names, &oid.to_string(), 1),
        })?;
        let parents = raw_parents(&header);
        let Some(next) = parents.get(parent - 1).copied() else {
            return Err(Unresolved::Unknown(match parents.len() {
                0 => format!(
                    "it goes back further than the history: commit {} has no parent",
                    short(oid)
                ),
                n => format!(
                    "commit {} has {n} parent(s), not a parent {parent}",
                    short(oid)
                ),
            }));
        };
        if header_of(next, names.refs).is_none() && header_of(next, mirror).is_none() {
            let depth = (steps.len() - i) as u32;
            fetch_missing(
                next,
                names,
                mirror,
                &format!("commit {next} (parent {parent} of {})", short(oid)),
                depth,
            )?;
        }
        oid = next;
    }
    Ok(oid)
}

fn short(oid: Oid) -> String {
    oid.to_string()[..12].to_string()
}

fn is_full_id(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The commit `name` names where the refs are: the name itself (a ref, a short id, `HEAD` of a
/// local repository, a rev-parse expression), the remote's HEAD, then under each prefix.
fn name(name: &str, names: &Names<'_>) -> Option<Oid> {
    if name == "HEAD"
        && let Some(head) = names.head
    {
        return Some(head);
    }
    let peel = |spec: &str| {
        let object = names.refs.revparse_single(spec).ok()?;
        match object.peel_to_commit() {
            Ok(c) => Some(c.id()),
            // A shallow clone's id of a commit it lacks: the id is all that is known.
            Err(_) => Some(object.id()).filter(|_| object.kind() == Some(git2::ObjectType::Commit)),
        }
    };
    if let Some(oid) = peel(name) {
        return Some(oid);
    }
    // A reference whose commit the shallow clone lacks: its id is known from the ref itself.
    if let Ok(r) = names.refs.resolve_reference_from_short_name(name)
        && let Some(target) = r.resolve().ok().and_then(|r| r.target())
    {
        return Some(target);
    }
    names
        .prefixes
        .iter()
        .find_map(|prefix| peel(&format!("{prefix}{name}")))
}

fn header(oid: Oid, refs: &Repository, mirror: &Repository) -> Option<Vec<u8>> {
    header_of(oid, refs).or_else(|| header_of(oid, mirror))
}

fn header_of(oid: Oid, repo: &Repository) -> Option<Vec<u8>> {
    let odb = repo.odb().ok()?;
    let object = odb.read(oid).ok()?;
    (object.kind() == git2::ObjectType::Commit).then(|| object.data().to_vec())
}

/// Fetches `oid` (and `depth` commits of history) from the origin into the mirror.
fn fetch_missing(
    oid: Oid,
    names: &Names<'_>,
    mirror: &Repository,
    what: &str,
    depth: u32,
) -> Result<(), Unresolved> {
    if header_of(oid, names.refs).is_some() || header_of(oid, mirror).is_some() {
        return Ok(());
    }
    let command = fetch_command(names, &oid.to_string(), depth);
    let Some(origin) = &names.origin else {
        return Err(Unresolved::Missing {
            detail: format!(
                "{what} is not in the repository, which has no remote `origin` to fetch it from"
            ),
            command,
        });
    };
    let refspec = format!("+{oid}:refs/aro-gitops/fetched/{oid}");
    match remote::fetch(mirror, origin, &[refspec.as_str()]) {
        Ok(_) if header_of(oid, mirror).is_some() => {
            tracing::info!(commit = %oid, from = origin.shown(), "fetched a commit the clone lacks");
            Ok(())
        }
        Ok(_) => Err(Unresolved::Missing {
            detail: format!(
                "{what} is not in the shallow clone, and {} did not send it",
                origin.shown()
            ),
            command,
        }),
        Err(e) => Err(Unresolved::Missing {
            detail: format!(
                "{what} is not in the shallow clone, and fetching it from {} failed: {}",
                origin.shown(),
                origin.redact(e.message())
            ),
            command,
        }),
    }
}

/// Fetches the ref `name` (`refs/pull/1/merge`) from the origin into the mirror.
fn fetch_ref(name: &str, names: &Names<'_>, mirror: &Repository) -> Result<Oid, Unresolved> {
    let origin = names.origin.as_ref().expect("checked by the caller");
    let refspec = format!("+{name}:{name}");
    match remote::fetch(mirror, origin, &[refspec.as_str()]) {
        Ok(_) => mirror
            .refname_to_id(name)
            .ok()
            .and_then(|oid| mirror.find_object(oid, None).ok()?.peel_to_commit().ok())
            .map(|c| c.id())
            .ok_or_else(|| {
                Unresolved::Unknown(format!(
                    "neither the repository nor {} has a ref {name}",
                    origin.shown()
                ))
            }),
        Err(e) => Err(Unresolved::Unknown(format!(
            "the repository has no ref {name}, and fetching it from {} failed: {}",
            origin.shown(),
            origin.redact(e.message())
        ))),
    }
}

fn fetch_command(names: &Names<'_>, what: &str, depth: u32) -> String {
    match names.local {
        Some(path) => format!(
            "git -C {} fetch --depth={depth} origin {what} (or check out with full history: `fetch-depth: 0`)",
            path.display()
        ),
        None => format!("git fetch origin {what}"),
    }
}

/// Copies `commit` and its tree from `from` into `to` (not its history): what a checkout and a
/// diff need. `from`'s packs are linked first (on one filesystem), so only what they lack is
/// copied; nothing when `to` has the commit already.
pub(super) fn copy_commit(
    from: &Repository,
    to: &Repository,
    commit: Oid,
) -> Result<(), git2::Error> {
    if header_of(commit, to).is_some() {
        return Ok(());
    }
    super::remote::link_packs(from, to);
    super::remote::copy_objects(from, to, commit, false)
}

impl Unresolved {
    pub(super) fn into_error(self, url: &str, revision: &str) -> SourceError {
        match self {
            Unresolved::Unknown(reason) => SourceError::UnknownRevision {
                url: url.to_string(),
                revision: revision.to_string(),
                reason,
            },
            Unresolved::Missing { detail, command } => SourceError::MissingCommit {
                url: url.to_string(),
                revision: revision.to_string(),
                detail,
                command,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_trailing_ancestry_operators() {
        let cases: [(&str, &str, &[usize]); 9] = [
            ("HEAD", "HEAD", &[]),
            ("HEAD~1", "HEAD", &[1]),
            ("HEAD~", "HEAD", &[1]),
            ("main~3", "main", &[1, 1, 1]),
            ("HEAD^2", "HEAD", &[2]),
            ("HEAD^2~1^", "HEAD", &[2, 1, 1]),
            ("v1^0", "v1", &[]),
            ("refs/pull/1/merge^1", "refs/pull/1/merge", &[1]),
            ("v1^{commit}", "v1^{commit}", &[]),
        ];
        for (expr, base, steps) in cases {
            assert_eq!(split_ancestry(expr), (base, steps.to_vec()), "{expr}");
        }
    }

    #[test]
    fn reads_parents_from_the_commit_header() {
        let a = "0123456789abcdef0123456789abcdef01234567";
        let b = "89abcdef0123456789abcdef0123456789abcdef";
        let header = format!("tree {a}\nparent {a}\nparent {b}\nauthor x <x> 0 +0000\n");
        assert_eq!(
            raw_parents(header.as_bytes()),
            vec![Oid::from_str(a).unwrap(), Oid::from_str(b).unwrap()]
        );
    }
}

//! Talking to the remote repository: credentials, fetch and push through libgit2.
//!
//! Remotes are always anonymous (`git_remote_create_anonymous`), so a URL carrying a token is never written
//! to the local repository's config. [`RemoteUrl`] keeps the raw URL for libgit2 and a redacted form for
//! messages and logs; every libgit2 message is passed through [`RemoteUrl::redact`] before it is shown.

use super::SourceError;
use git2::{
    AutotagOption, Cred, CredentialType, ErrorCode, FetchOptions, Oid, PushOptions,
    RemoteCallbacks, Repository,
};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Environment variable holding an https token (used as the password; the user defaults to `x-access-token`).
pub const TOKEN_ENV: &str = "GIT_TOKEN";

/// A remote URL with its credentials kept apart from what is shown (`Debug` shows only the redacted URL).
#[derive(Clone)]
pub(super) struct RemoteUrl {
    raw: String,
    shown: String,
    secrets: Vec<String>,
}

impl RemoteUrl {
    /// `raw` is handed to libgit2; `shown` (when given) replaces the redacted URL in messages.
    pub fn new(raw: &str, shown: Option<String>) -> Self {
        let (redacted, mut secrets) = redact_url(raw);
        if let Ok(token) = std::env::var(TOKEN_ENV)
            && !token.is_empty()
        {
            secrets.push(token);
        }
        RemoteUrl {
            raw: raw.to_string(),
            shown: shown.unwrap_or(redacted),
            secrets,
        }
    }

    /// The URL as it may appear in messages and logs.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Turns a libgit2 error from a local operation into a [`SourceError::Git`] naming this URL.
    pub fn git_error(
        &self,
        reference: &str,
        op: &'static str,
    ) -> impl Fn(git2::Error) -> SourceError + '_ {
        let reference = reference.to_string();
        move |e| SourceError::Git {
            url: self.shown.clone(),
            reference: reference.clone(),
            op,
            message: self.redact(e.message()),
        }
    }

    /// `text` with the raw URL and every known secret replaced.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.replace(&self.raw, &self.shown);
        for secret in &self.secrets {
            out = out.replace(secret.as_str(), "***");
        }
        out
    }
}

impl std::fmt::Debug for RemoteUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RemoteUrl").field(&self.shown).finish()
    }
}

/// Splits credentials out of a URL: the redacted URL and the secret strings it contained.
///
/// A password is replaced by `***`; for http(s) a lone user part is taken to be a token and replaced too;
/// a query string is dropped. An ssh user name (`ssh://git@host`) is not a secret and stays.
pub(super) fn redact_url(url: &str) -> (String, Vec<String>) {
    let mut secrets = Vec::new();
    let Some((scheme, rest)) = url.split_once("://") else {
        return (url.to_string(), secrets);
    };
    let (rest, query) = match rest.split_once('?') {
        Some((before, query)) => {
            secrets.push(query.to_string());
            (before, Some("***"))
        }
        None => (rest, None),
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let userinfo = match userinfo.split_once(':') {
                Some((user, password)) => {
                    secrets.push(password.to_string());
                    format!("{user}:***")
                }
                None if scheme.starts_with("http") => {
                    secrets.push(userinfo.to_string());
                    "***".to_string()
                }
                None => userinfo.to_string(),
            };
            format!("{userinfo}@{host}")
        }
        None => authority.to_string(),
    };
    secrets.retain(|s| !s.is_empty());
    let query = query.map(|q| format!("?{q}")).unwrap_or_default();
    (format!("{scheme}://{authority}{path}{query}"), secrets)
}

/// What the remote advertised during a fetch: every ref name (including `HEAD`) with its object.
pub(super) type Advertised = BTreeMap<String, Oid>;

/// Fetches `refspecs` from `url` into `repo` and returns the remote's advertisement.
pub(super) fn fetch(
    repo: &Repository,
    url: &RemoteUrl,
    refspecs: &[&str],
) -> Result<Advertised, git2::Error> {
    if let Some(target) = local_repository(&url.raw) {
        match fetch_local(repo, &target, refspecs) {
            Ok(advertised) => return Ok(advertised),
            Err(e) => {
                tracing::debug!(error = %e, "a local fetch by links failed: fetching through libgit2")
            }
        }
    }
    let mut remote = repo.remote_anonymous(&url.raw)?;
    let tried = RefCell::new(Tried::default());
    let mut options = FetchOptions::new();
    options.remote_callbacks(callbacks(&tried));
    options.download_tags(AutotagOption::None);
    remote.fetch(refspecs, Some(&mut options), None)?;
    Ok(remote
        .list()?
        .iter()
        .map(|head| (head.name().to_string(), head.oid()))
        .collect())
}

/// The fetch from a repository on this machine (a path or a `file://` URL): its pack files
/// hard-linked into `repo` (as `git clone --local` does: a pack never changes once written), the
/// objects the fetched tips reach that `repo` still lacks copied, and the refs set as `refspecs`
/// say (every refspec the sources use is forced). libgit2's local transport packs everything it
/// sends anew: seconds for one new commit of a 10,000-file repository, where this takes
/// milliseconds. Returns the repository's refs (and `HEAD`) as an advertisement.
fn fetch_local(
    repo: &Repository,
    target: &Repository,
    refspecs: &[&str],
) -> Result<Advertised, git2::Error> {
    let mut advertised = Advertised::new();
    for r in target.references()? {
        let r = r?;
        if let (Ok(name), Some(oid)) = (r.name(), r.target()) {
            advertised.insert(name.to_string(), oid);
        }
    }
    if let Some(oid) = target.head().ok().and_then(|h| h.target()) {
        advertised.insert("HEAD".to_string(), oid);
    }
    link_packs(target, repo);
    let mut wanted: Vec<(String, Oid)> = Vec::new();
    for spec in refspecs {
        let (src, dst) = spec
            .trim_start_matches('+')
            .split_once(':')
            .ok_or_else(|| git2::Error::from_str("refspec without ':'"))?;
        match src.split_once('*') {
            Some((prefix, suffix)) => wanted.extend(advertised.iter().filter_map(|(name, oid)| {
                let middle = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
                Some((dst.replacen('*', middle, 1), *oid))
            })),
            None => match advertised.get(src) {
                Some(oid) => wanted.push((dst.to_string(), *oid)),
                None if src.len() == 40 => wanted.push((dst.to_string(), Oid::from_str(src)?)),
                None => {}
            },
        }
    }
    for (name, oid) in wanted {
        copy_objects(target, repo, oid, true)?;
        repo.reference(&name, oid, true, "aro-gitops: fetch (local)")?;
    }
    Ok(advertised)
}

/// Hard-links `from`'s pack files that `to` lacks into `to` (each pack before its index, so a
/// reader never finds an index without its pack). Nothing is linked across filesystems: the
/// objects are then copied one by one.
pub(super) fn link_packs(from: &Repository, to: &Repository) {
    let (src, dst) = (
        from.commondir().join("objects/pack"),
        to.commondir().join("objects/pack"),
    );
    let Ok(entries) = std::fs::read_dir(&src) else {
        return;
    };
    let mut packs: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".idx")
                .map(str::to_string)
        })
        .collect();
    packs.sort();
    let mut linked = false;
    for pack in packs {
        let files = [format!("{pack}.pack"), format!("{pack}.idx")];
        if dst.join(&files[1]).exists() {
            continue;
        }
        let ok = files
            .iter()
            .all(|f| dst.join(f).exists() || std::fs::hard_link(src.join(f), dst.join(f)).is_ok());
        linked |= ok;
        if !ok {
            files
                .iter()
                .for_each(|f| drop(std::fs::remove_file(dst.join(f))));
            return;
        }
    }
    if linked && let Ok(odb) = to.odb() {
        let _ = odb.refresh();
    }
}

/// The result of a push the remote answered.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum PushOutcome {
    Pushed,
    /// Not a fast-forward, or the ref moved while pushing: fetch and try again.
    Rejected(String),
}

/// Pushes `refspec` (`<local ref>:<remote ref>`, never forced) to `url`.
pub(super) fn push(
    repo: &Repository,
    url: &RemoteUrl,
    refspec: &str,
) -> Result<PushOutcome, git2::Error> {
    if let Some(target) = local_repository(&url.raw) {
        return push_to_local(repo, &target, refspec);
    }
    let mut remote = repo.remote_anonymous(&url.raw)?;
    let tried = RefCell::new(Tried::default());
    let rejected = RefCell::new(None::<String>);
    let mut cbs = callbacks(&tried);
    cbs.push_update_reference(|refname, status| {
        if let Some(status) = status {
            *rejected.borrow_mut() = Some(format!("{refname}: {status}"));
        }
        Ok(())
    });
    let mut options = PushOptions::new();
    options.remote_callbacks(cbs);
    match remote.push(&[refspec], Some(&mut options)) {
        Err(e) if e.code() == ErrorCode::NotFastForward => {
            return Ok(PushOutcome::Rejected(e.message().to_string()));
        }
        Err(e) => return Err(e),
        Ok(()) => {}
    }
    Ok(match rejected.take() {
        Some(message) => PushOutcome::Rejected(message),
        None => PushOutcome::Pushed,
    })
}

/// A local path (or `file://` URL) naming a repository, bare or with a work tree. libgit2 cannot
/// push into a work tree, and its push into a local bare repository checks for a fast-forward
/// against the branch as it was when the push connected, then moves it unconditionally: a
/// concurrent writer (another shard) in between would be overwritten. So local pushes are done
/// here, with a compare-and-swap.
fn local_repository(raw: &str) -> Option<Repository> {
    let path = raw.strip_prefix("file://").unwrap_or(raw);
    if path.contains("://") {
        return None;
    }
    Repository::open(path).ok()
}

/// The push into a local repository. Copies the objects the new commit needs into it, then moves
/// the branch only if it still points where our commit was built (compare-and-swap), so a
/// concurrent writer makes this a lost race, as a push over the wire would.
fn push_to_local(
    repo: &Repository,
    target: &Repository,
    refspec: &str,
) -> Result<PushOutcome, git2::Error> {
    let (local_ref, remote_ref) = refspec
        .split_once(':')
        .ok_or_else(|| git2::Error::from_str("refspec without ':'"))?;
    if !target.is_bare()
        && target
            .head()
            .ok()
            .and_then(|h| h.name().ok().map(str::to_string))
            .as_deref()
            == Some(remote_ref)
    {
        return Err(git2::Error::from_str(&format!(
            "{remote_ref} is checked out in the target work tree; publish to another branch"
        )));
    }
    let commit = repo.find_reference(local_ref)?.peel_to_commit()?;
    copy_objects(repo, target, commit.id(), true)?;
    // The branch as the commit was built over it; the zero id: the branch did not exist. libgit2
    // compares under the ref's lock either way (a plain create-if-absent checks before locking,
    // so two first publishes at once could both win).
    let expected = commit.parent_ids().next().unwrap_or(git2::Oid::ZERO_SHA1);
    let message = "aro-gitops: publish reports";
    let moved = target
        .reference_matching(remote_ref, commit.id(), true, expected, message)
        .map(|_| ());
    match moved {
        Ok(()) => Ok(PushOutcome::Pushed),
        // Moved meanwhile, created meanwhile, or being moved right now (its lock file is held).
        Err(e)
            if matches!(
                e.code(),
                ErrorCode::Modified | ErrorCode::Exists | ErrorCode::Locked
            ) =>
        {
            Ok(PushOutcome::Rejected(e.message().to_string()))
        }
        Err(e) => Err(e),
    }
}

/// Copies `oid` and everything it reaches that `to` lacks from `from`'s object database (with
/// `history`, a commit's parents too; without, a commit and its tree: what a checkout needs).
/// Objects are written children first, so an object `to` has always comes with what it reaches
/// (a copy cut short leaves nothing that a later copy would take as complete).
pub(super) fn copy_objects(
    from: &Repository,
    to: &Repository,
    oid: git2::Oid,
    history: bool,
) -> Result<(), git2::Error> {
    let (src, dst) = (from.odb()?, to.odb()?);
    let mut todo = vec![oid];
    let mut seen = std::collections::HashSet::new();
    let mut order = Vec::new();
    while let Some(id) = todo.pop() {
        if !seen.insert(id) || dst.exists(id) {
            continue;
        }
        let (_, kind) = src.read_header(id)?;
        match kind {
            git2::ObjectType::Commit => {
                let c = from.find_commit(id)?;
                todo.push(c.tree_id());
                if history {
                    todo.extend(c.parent_ids());
                }
            }
            git2::ObjectType::Tag => todo.push(from.find_tag(id)?.target_id()),
            git2::ObjectType::Tree => {
                let t = from.find_tree(id)?;
                // Gitlinks (submodule commits) live in another repository.
                todo.extend(
                    t.iter()
                        .filter(|e| e.kind() != Some(git2::ObjectType::Commit))
                        .map(|e| e.id()),
                );
            }
            _ => {}
        }
        order.push(id);
    }
    for id in order.into_iter().rev() {
        let object = src.read(id)?;
        dst.write(object.kind(), object.data())?;
    }
    Ok(())
}

/// Which credentials were already offered during one connection (libgit2 asks again after each failure).
#[derive(Debug, Default)]
struct Tried {
    username: bool,
    agent: bool,
    keys: usize,
    token: bool,
    helper: bool,
    default: bool,
}

fn callbacks(tried: &RefCell<Tried>) -> RemoteCallbacks<'_> {
    let mut cbs = RemoteCallbacks::new();
    cbs.credentials(move |url, user, allowed| {
        credentials(&mut tried.borrow_mut(), url, user, allowed)
    });
    cbs
}

/// Offers, in order and each once: the ssh agent, the default ssh keys, `GIT_TOKEN`, the git credential
/// helper, then the platform default. Only the method's name is logged, never the credential.
fn credentials(
    tried: &mut Tried,
    url: &str,
    user_from_url: Option<&str>,
    allowed: CredentialType,
) -> Result<Cred, git2::Error> {
    if allowed.contains(CredentialType::USERNAME) && !tried.username {
        tried.username = true;
        return Cred::username(user_from_url.unwrap_or("git"));
    }
    if allowed.contains(CredentialType::SSH_KEY) {
        let user = user_from_url.unwrap_or("git");
        if !tried.agent {
            tried.agent = true;
            tracing::debug!(method = "ssh-agent", "offering credentials");
            return Cred::ssh_key_from_agent(user);
        }
        let keys = default_ssh_keys();
        while tried.keys < keys.len() {
            let key = &keys[tried.keys];
            tried.keys += 1;
            if key.exists() {
                tracing::debug!(method = "ssh-key", key = %key.display(), "offering credentials");
                return Cred::ssh_key(user, None, key, None);
            }
        }
    }
    if allowed.contains(CredentialType::USER_PASS_PLAINTEXT) {
        if !tried.token {
            tried.token = true;
            if let Ok(token) = std::env::var(TOKEN_ENV)
                && !token.is_empty()
            {
                tracing::debug!(method = TOKEN_ENV, "offering credentials");
                return Cred::userpass_plaintext(user_from_url.unwrap_or("x-access-token"), &token);
            }
        }
        if !tried.helper {
            tried.helper = true;
            if let Ok(config) = git2::Config::open_default()
                && let Ok(cred) = Cred::credential_helper(&config, url, user_from_url)
            {
                tracing::debug!(method = "credential-helper", "offering credentials");
                return Ok(cred);
            }
        }
    }
    if allowed.contains(CredentialType::DEFAULT) && !tried.default {
        tried.default = true;
        return Cred::default();
    }
    Err(git2::Error::from_str(
        "authentication failed: tried ssh-agent, ~/.ssh keys, GIT_TOKEN and the git credential helper",
    ))
}

fn default_ssh_keys() -> Vec<PathBuf> {
    let Some(home) = std::env::var_os("HOME") else {
        return Vec::new();
    };
    let ssh = PathBuf::from(home).join(".ssh");
    ["id_ed25519", "id_ecdsa", "id_rsa"]
        .iter()
        .map(|name| ssh.join(name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A local repository fetched by links: its branches and an annotated tag land where the
    /// refspecs say, with every object they reach, and a later commit copies only what is new.
    #[test]
    fn a_local_repository_is_fetched_by_its_packs_and_what_they_lack() {
        use crate::source::testutil::{Upstream, git};
        use std::path::Path;
        let d = tempfile::tempdir().unwrap();
        let up = Upstream::new(d.path());
        up.commit(&[("a/one.yaml", "1"), ("b/two.yaml", "2")], "first");
        git(&up.work, &["tag", "-a", "-m", "v1", "v1"]);
        git(&up.work, &["push", "-q", "origin", "v1"]);
        git(&up.bare, &["gc", "-q"]);
        let second = up.commit(&[("a/one.yaml", "1b")], "second");
        let mirror = Repository::init_bare(d.path().join("mirror.git")).unwrap();
        let url = RemoteUrl::new(&up.url(), None);
        let spec = [
            "+refs/heads/*:refs/remotes/origin/*",
            "+refs/tags/*:refs/tags/*",
        ];
        let advertised = fetch(&mirror, &url, &spec).unwrap();
        let branch = git(&up.bare, &["symbolic-ref", "HEAD"]);
        let tip = advertised[&branch];
        assert_eq!(tip.to_string(), second);
        assert_eq!(advertised["HEAD"], tip);
        let name = format!(
            "refs/remotes/origin/{}",
            branch.trim_start_matches("refs/heads/")
        );
        assert_eq!(mirror.refname_to_id(&name).unwrap(), tip);
        // The pack was linked (the same file), not sent anew; the second commit (loose upstream)
        // was copied with its tree.
        let packs = |repo: &Path| -> Vec<String> {
            let mut names: Vec<String> = std::fs::read_dir(repo.join("objects/pack"))
                .unwrap()
                .filter_map(|e| e.unwrap().file_name().into_string().ok())
                .filter(|n| n.ends_with(".pack"))
                .collect();
            names.sort();
            names
        };
        assert_eq!(packs(&up.bare), packs(mirror.path()));
        let tree = mirror.find_commit(tip).unwrap().tree().unwrap();
        let blob = tree.get_path(Path::new("a/one.yaml")).unwrap().id();
        assert_eq!(mirror.find_blob(blob).unwrap().content(), b"1b");
        let tag = mirror.revparse_single("refs/tags/v1").unwrap();
        assert_eq!(tag.kind(), Some(git2::ObjectType::Tag));
        assert!(tag.peel_to_commit().is_ok());
        // A third commit copies only what the mirror lacks.
        let third = up.commit(&[("b/two.yaml", "2c")], "third");
        let advertised = fetch(&mirror, &url, &spec).unwrap();
        assert_eq!(advertised[&branch].to_string(), third);
        let tree = mirror
            .find_commit(advertised[&branch])
            .unwrap()
            .tree()
            .unwrap();
        let blob = tree.get_path(Path::new("b/two.yaml")).unwrap().id();
        assert_eq!(mirror.find_blob(blob).unwrap().content(), b"2c");
    }

    #[test]
    fn strips_passwords_and_https_tokens_but_keeps_ssh_users() {
        let cases = [
            (
                "https://user:s3cret@example.com/org/repo.git",
                "https://user:***@example.com/org/repo.git",
                vec!["s3cret"],
            ),
            (
                "https://ghp_token@github.com/org/repo",
                "https://***@github.com/org/repo",
                vec!["ghp_token"],
            ),
            (
                "ssh://git@example.com/repo.git",
                "ssh://git@example.com/repo.git",
                vec![],
            ),
            (
                "https://example.com/repo?access_token=abc",
                "https://example.com/repo?***",
                vec!["access_token=abc"],
            ),
            (
                "git@example.com:org/repo.git",
                "git@example.com:org/repo.git",
                vec![],
            ),
            ("/srv/git/repo.git", "/srv/git/repo.git", vec![]),
        ];
        for (url, shown, secrets) in cases {
            assert_eq!(
                redact_url(url),
                (
                    shown.to_string(),
                    secrets.iter().map(|s| s.to_string()).collect()
                ),
                "{url}"
            );
        }
    }

    #[test]
    fn redacts_raw_url_and_secrets_in_messages() {
        let url = RemoteUrl::new("https://bot:hunter2@example.com/r.git", None);
        let message =
            url.redact("failed to fetch https://bot:hunter2@example.com/r.git (password hunter2)");
        assert_eq!(
            message,
            "failed to fetch https://bot:***@example.com/r.git (password ***)"
        );
        assert_eq!(url.shown(), "https://bot:***@example.com/r.git");
        assert!(!format!("{url:?}").contains("hunter2"));
    }
}

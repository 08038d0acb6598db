//! Commit statuses on GitHub or GitLab (`run --commit-status github|gitlab`), as Flux's
//! notification-controller and Argo CD Notifications post them: the person who pushed sees on the
//! commit (and its pull request) how applying it went.
//!
//! - [`decide`]: what each context says from the run's outcomes (pending while passes run,
//!   success when converged, failure with the first error), and only what changed;
//! - [`repo`]: the repository a URL names, and the status's API path;
//! - [`request`]: a status as each host's API takes it, and what its answer means;
//! - [`sender`]: the bounded queue and the background task that posts, retrying rate limits and
//!   server errors with backoff. Reconciling never waits on it.
//!
//! The token comes from a file or [`TOKEN_ENV`], never from a flag's value; it is taught to the
//! redaction layer, sent only in the request's header, and in no log or error.

pub mod decide;
pub mod repo;
pub mod request;
pub mod sender;

pub use decide::{State, Status, Tracker};
pub use sender::CommitStatuses;

use std::path::{Path, PathBuf};

/// The environment variable the token may come from (when no `--commit-status-token-file`).
pub const TOKEN_ENV: &str = "ARO_GITOPS_COMMIT_STATUS_TOKEN";

/// GitHub's public API.
pub const GITHUB_API: &str = "https://api.github.com";
/// GitLab's public API.
pub const GITLAB_API: &str = "https://gitlab.com/api/v4";

/// Where the statuses go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Host {
    GitHub,
    GitLab,
}

/// One context per unit (`aro-gitops/<unit>`), or one for the fleet (`aro-gitops`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contexts {
    Unit,
    Fleet,
}

/// The API token. Never shown: its `Debug` says only that it is there.
#[derive(Clone)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token([redacted])")
    }
}

impl Token {
    /// The token of `file` (its trailing line break removed), else of [`TOKEN_ENV`]; taught to
    /// the redaction layer.
    pub fn load(file: Option<&Path>) -> Result<Token, ConfigError> {
        let text = match file {
            Some(path) => std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.to_path_buf(),
                source,
            })?,
            None => std::env::var(TOKEN_ENV).map_err(|_| ConfigError::NoToken)?,
        };
        let token = text.trim_end_matches(['\n', '\r']).to_string();
        if token.trim().is_empty() {
            return Err(match file {
                Some(path) => ConfigError::EmptyFile {
                    path: path.to_path_buf(),
                },
                None => ConfigError::NoToken,
            });
        }
        crate::redact::learn_values([token.as_str()]);
        Ok(Token(token))
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

/// Why commit statuses cannot be posted as asked (said at start; never with the token).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "--commit-status needs a token: --commit-status-token-file PATH or the environment variable {TOKEN_ENV}"
    )]
    NoToken,
    #[error("the commit status token file {} could not be read: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the commit status token file {} is empty", path.display())]
    EmptyFile { path: PathBuf },
    #[error(
        "the repository URL {url} names no hosted repository: give --commit-status-repo OWNER/NAME"
    )]
    NoRepo { url: String },
    #[error("--commit-status-repo {0}")]
    BadRepo(String),
    #[error("--commit-status-api {api}: {why}")]
    BadApi { api: String, why: String },
    #[error("--status-page-url {url}: {why}")]
    BadPage { url: String, why: String },
    #[error("commit statuses: {0}")]
    Transport(#[from] crate::azure::transport::TransportError),
}

/// What `run` was asked to post.
#[derive(Debug, Clone)]
pub struct Config {
    pub host: Host,
    /// The API base, e.g. `https://api.github.com` or `https://gitlab.example/api/v4`.
    pub api: url::Url,
    /// `owner/name`, or a GitLab project's path or id.
    pub repo: String,
    pub token: Token,
    pub contexts: Contexts,
    /// The status page's public address, linked from each status.
    pub page: Option<String>,
}

/// The flags' values, before defaults and checks.
#[derive(Debug, Clone)]
pub struct Flags<'a> {
    pub host: Host,
    pub api: Option<&'a str>,
    pub repo: Option<&'a str>,
    /// The repository URL the agent follows (the default `repo`).
    pub repo_url: &'a str,
    pub contexts: Contexts,
    pub page: Option<&'a str>,
}

impl Config {
    /// The configuration the flags ask for: the host's public API by default, the repository the
    /// URL names by default; checked.
    pub fn new(flags: Flags<'_>, token: Token) -> Result<Config, ConfigError> {
        let api_text = flags.api.unwrap_or(match flags.host {
            Host::GitHub => GITHUB_API,
            Host::GitLab => GITLAB_API,
        });
        let api = http_url(api_text).map_err(|why| ConfigError::BadApi {
            api: api_text.to_string(),
            why,
        })?;
        let repo = match flags.repo {
            Some(r) => r.trim_matches('/').to_string(),
            None => repo::from_url(flags.repo_url).ok_or_else(|| ConfigError::NoRepo {
                url: flags.repo_url.to_string(),
            })?,
        };
        repo::check(flags.host, &repo).map_err(ConfigError::BadRepo)?;
        if let Some(page) = flags.page {
            http_url(page).map_err(|why| ConfigError::BadPage {
                url: page.to_string(),
                why,
            })?;
        }
        Ok(Config {
            host: flags.host,
            api,
            repo,
            token,
            contexts: flags.contexts,
            page: flags.page.map(str::to_string),
        })
    }
}

/// `text` as an http(s) URL.
fn http_url(text: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(text).map_err(|e| e.to_string())?;
    if !["http", "https"].contains(&url.scheme()) || url.cannot_be_a_base() {
        return Err("not an http(s) URL".to_string());
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(host: Host, repo_url: &str) -> Flags<'_> {
        Flags {
            host,
            api: None,
            repo: None,
            repo_url,
            contexts: Contexts::Unit,
            page: None,
        }
    }

    #[test]
    fn defaults_are_the_public_api_and_the_repository_the_url_names() {
        let token = Token("t".into());
        let c = Config::new(
            flags(Host::GitHub, "git@github.com:Azure/fleet.git"),
            token.clone(),
        )
        .expect("valid");
        assert_eq!(
            (c.api.as_str(), c.repo.as_str()),
            ("https://api.github.com/", "Azure/fleet")
        );
        let c = Config::new(
            flags(Host::GitLab, "https://gitlab.com/a/b/c"),
            token.clone(),
        )
        .expect("valid");
        assert_eq!(
            (c.api.as_str(), c.repo.as_str()),
            ("https://gitlab.com/api/v4", "a/b/c")
        );
        let local = Config::new(flags(Host::GitHub, "/srv/fleet"), token.clone());
        assert!(matches!(local, Err(ConfigError::NoRepo { .. })));
        let mut f = flags(Host::GitHub, "/srv/fleet");
        f.repo = Some("acme/fleet");
        f.api = Some("ftp://example");
        assert!(matches!(
            Config::new(f, token),
            Err(ConfigError::BadApi { .. })
        ));
    }

    #[test]
    fn the_token_is_never_shown() {
        let token = Token("ghp_secretvalue".into());
        assert_eq!(format!("{token:?}"), "Token([redacted])");
        for e in [
            ConfigError::NoToken,
            ConfigError::EmptyFile { path: "/t".into() },
        ] {
            assert!(!e.to_string().contains("ghp_"));
        }
    }
}

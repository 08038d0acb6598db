//! One status as each host's API takes it (headers and JSON body), and what its answer means:
//! done, retried (rate limits and server errors, after how long) or given up. No IO.

use super::Host;
use super::decide::Status;
use serde_json::{Value, json};
use std::time::Duration;

/// The REST API version asked of GitHub.
pub const GITHUB_API_VERSION: &str = "2022-11-28";

/// The `User-Agent` every request carries (GitHub refuses requests without one).
pub const USER_AGENT: &str = concat!("aro-gitops/", env!("CARGO_PKG_VERSION"));

/// The JSON body of `status` for `host`.
pub fn body(host: Host, status: &Status) -> Value {
    let mut body = json!({
        "state": status.state.as_str(host),
        "description": status.description,
    });
    let name = match host {
        Host::GitHub => "context",
        Host::GitLab => "name",
    };
    body[name] = json!(status.context);
    if let Some(url) = &status.target_url {
        body["target_url"] = json!(url);
    }
    body
}

/// The headers of a request to `host` with `token` (never logged: the caller puts them on the
/// request only).
pub fn headers(host: Host, token: &str) -> Vec<(&'static str, String)> {
    let mut headers = vec![
        ("content-type", "application/json".to_string()),
        ("user-agent", USER_AGENT.to_string()),
    ];
    match host {
        Host::GitHub => headers.extend([
            ("accept", "application/vnd.github+json".to_string()),
            ("x-github-api-version", GITHUB_API_VERSION.to_string()),
            ("authorization", format!("Bearer {token}")),
        ]),
        Host::GitLab => headers.extend([
            ("accept", "application/json".to_string()),
            ("private-token", token.to_string()),
        ]),
    }
    headers
}

/// What an answer means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Posted,
    /// Try again, after the server's wait when it said one.
    Retry(Option<Duration>),
    /// Not something a retry mends (a bad token, an unknown commit...).
    Refused,
}

/// What HTTP `status` with `header` (a response header's value by lower-case name) means;
/// `now`: seconds since the epoch (GitHub's `x-ratelimit-reset` is a time). Rate limits are 429,
/// or GitHub's 403 with `x-ratelimit-remaining: 0` or a `Retry-After`.
pub fn answer(status: u16, header: impl Fn(&str) -> Option<String>, now: u64) -> Answer {
    let retry_after = || {
        let seconds = header("retry-after")?.trim().parse::<u64>().ok()?;
        Some(Duration::from_secs(seconds))
    };
    let reset = || {
        let at = header("x-ratelimit-reset")?.trim().parse::<u64>().ok()?;
        Some(Duration::from_secs(at.saturating_sub(now)))
    };
    let exhausted = header("x-ratelimit-remaining").is_some_and(|r| r.trim() == "0");
    match status {
        200..=299 => Answer::Posted,
        429 | 500..=599 => Answer::Retry(retry_after().or_else(|| exhausted.then(reset).flatten())),
        403 if exhausted || retry_after().is_some() => Answer::Retry(retry_after().or_else(reset)),
        _ => Answer::Refused,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::commit_status::decide::State;

    fn status(target: Option<&str>) -> Status {
        Status {
            sha: "abc".into(),
            context: "aro-gitops/clusters/dev".into(),
            state: State::Failure,
            description: "failed: bad".into(),
            target_url: target.map(str::to_string),
        }
    }

    #[test]
    fn each_host_gets_its_own_field_names_and_states() {
        assert_eq!(
            body(Host::GitHub, &status(Some("https://s.example/"))),
            json!({"state": "failure", "description": "failed: bad",
                   "context": "aro-gitops/clusters/dev", "target_url": "https://s.example/"})
        );
        assert_eq!(
            body(Host::GitLab, &status(None)),
            json!({"state": "failed", "description": "failed: bad",
                   "name": "aro-gitops/clusters/dev"})
        );
    }

    #[test]
    fn each_host_gets_its_own_authentication() {
        let github = headers(Host::GitHub, "t0ken");
        assert!(github.contains(&("authorization", "Bearer t0ken".into())));
        assert!(github.contains(&("accept", "application/vnd.github+json".into())));
        assert!(github.contains(&("x-github-api-version", GITHUB_API_VERSION.into())));
        assert!(github.iter().any(|(n, _)| *n == "user-agent"));
        let gitlab = headers(Host::GitLab, "t0ken");
        assert!(gitlab.contains(&("private-token", "t0ken".into())));
        assert!(!gitlab.iter().any(|(n, _)| *n == "authorization"));
    }

    #[test]
    fn rate_limits_and_server_errors_are_retried_after_what_the_server_says() {
        let none = |_: &str| None;
        assert_eq!(answer(201, none, 0), Answer::Posted);
        assert_eq!(answer(500, none, 0), Answer::Retry(None));
        assert_eq!(answer(502, none, 0), Answer::Retry(None));
        let after = |n: &str| (n == "retry-after").then(|| "7".to_string());
        assert_eq!(
            answer(429, after, 0),
            Answer::Retry(Some(Duration::from_secs(7)))
        );
        // GitHub's primary rate limit: 403, nothing remaining, a reset time.
        let primary = |n: &str| match n {
            "x-ratelimit-remaining" => Some("0".to_string()),
            "x-ratelimit-reset" => Some("1030".to_string()),
            _ => None,
        };
        assert_eq!(
            answer(403, primary, 1000),
            Answer::Retry(Some(Duration::from_secs(30)))
        );
        assert_eq!(
            answer(403, after, 0),
            Answer::Retry(Some(Duration::from_secs(7)))
        );
        // A 403 that is not a rate limit, a 401, a 404, a 422: no retry mends them.
        for code in [401, 403, 404, 422] {
            assert_eq!(answer(code, none, 0), Answer::Refused, "{code}");
        }
    }
}

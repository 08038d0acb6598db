//! What a push webhook says, and whether it concerns what the agent follows: the repository
//! (URLs compared as Argo CD does: scheme, credentials, case, a trailing `.git` or `/` ignored)
//! and the branch or tag.

use crate::source::GitRef;
use serde_json::Value;

/// A push, as GitHub or GitLab describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Push {
    /// The ref pushed: `refs/heads/<branch>` or `refs/tags/<tag>`.
    pub reference: String,
    /// Every URL the payload gives for the repository (clone, web, ssh, git).
    pub urls: Vec<String>,
    /// The repository's default branch, when the payload says.
    pub default_branch: Option<String>,
    /// The commit the ref points at after the push (`after`, both providers), when it names
    /// one (not a deleted ref).
    pub after: Option<String>,
}

/// What a valid request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A push: fetch if it is to what the agent follows.
    Push(Push),
    /// GitHub's `ping` when a hook is created: nothing to fetch.
    Ping,
    /// Another event (an issue, a merge request...): acknowledged, nothing to fetch.
    Other(String),
}

/// Why a signed payload could not be read (400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    #[error("the request has no {0} header")]
    NoEvent(&'static str),
    #[error("the payload is not JSON: {0}")]
    Json(String),
    #[error("the push payload has no {0}")]
    Missing(&'static str),
}

/// Reads a GitHub delivery: the `X-GitHub-Event` header and the body, JSON or (a hook whose
/// content type is `application/x-www-form-urlencoded`) a form whose `payload` field is the JSON.
pub fn parse_github(
    event: Option<&str>,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Event, Malformed> {
    let event = event.ok_or(Malformed::NoEvent("X-GitHub-Event"))?;
    let form = content_type.is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    let payload;
    let body = if form {
        payload = url::form_urlencoded::parse(body)
            .find(|(name, _)| name == "payload")
            .map(|(_, value)| value.into_owned())
            .ok_or(Malformed::Missing("payload field"))?;
        payload.as_bytes()
    } else {
        body
    };
    match event {
        "ping" => Ok(Event::Ping),
        "push" => {
            let json = json(body)?;
            let repository = &json["repository"];
            let urls = strings(repository, &["clone_url", "html_url", "ssh_url", "git_url"]);
            push(&json, urls, text(&repository["default_branch"]))
        }
        other => Ok(Event::Other(other.to_string())),
    }
}

/// Reads a GitLab delivery: `object_kind` of the JSON body (else the `X-Gitlab-Event` header).
pub fn parse_gitlab(event: Option<&str>, body: &[u8]) -> Result<Event, Malformed> {
    let json = json(body)?;
    let kind = match text(&json["object_kind"]) {
        Some(kind) => kind,
        None => match event {
            Some("Push Hook") => "push".to_string(),
            Some("Tag Push Hook") => "tag_push".to_string(),
            Some(other) => other.to_string(),
            None => return Err(Malformed::NoEvent("X-Gitlab-Event")),
        },
    };
    if kind != "push" && kind != "tag_push" {
        return Ok(Event::Other(kind));
    }
    let mut urls = strings(
        &json["project"],
        &[
            "git_http_url",
            "git_ssh_url",
            "web_url",
            "http_url",
            "ssh_url",
        ],
    );
    urls.extend(strings(
        &json["repository"],
        &["url", "git_http_url", "git_ssh_url", "homepage"],
    ));
    push(&json, urls, text(&json["project"]["default_branch"]))
}

fn json(body: &[u8]) -> Result<Value, Malformed> {
    let value: Value = serde_json::from_slice(body).map_err(|e| Malformed::Json(e.to_string()))?;
    if !value.is_object() {
        return Err(Malformed::Json("not a JSON object".into()));
    }
    Ok(value)
}

fn push(
    json: &Value,
    urls: Vec<String>,
    default_branch: Option<String>,
) -> Result<Event, Malformed> {
    let reference = text(&json["ref"]).ok_or(Malformed::Missing("ref"))?;
    if urls.is_empty() {
        return Err(Malformed::Missing("repository URL"));
    }
    let after = text(&json["after"]).filter(|c| {
        c.len() == 40 && c.bytes().all(|b| b.is_ascii_hexdigit()) && c.bytes().any(|b| b != b'0')
    });
    Ok(Event::Push(Push {
        reference,
        urls,
        default_branch,
        after: after.map(|c| c.to_ascii_lowercase()),
    }))
}

fn text(value: &Value) -> Option<String> {
    value.as_str().filter(|s| !s.is_empty()).map(str::to_string)
}

fn strings(object: &Value, fields: &[&str]) -> Vec<String> {
    fields.iter().filter_map(|f| text(&object[f])).collect()
}

/// Why a push is acknowledged without a fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ignored {
    OtherRepository,
    OtherRef,
}

impl Ignored {
    pub fn reason(&self) -> &'static str {
        match self {
            Ignored::OtherRepository => "a push to another repository",
            Ignored::OtherRef => "a push to a branch or tag the agent does not follow",
        }
    }
}

/// Whether `push` concerns the repository `repo` at `reference`.
pub fn concerns(push: &Push, repo: &str, reference: &GitRef) -> Result<(), Ignored> {
    let ours = normalize_url(repo);
    if !push.urls.iter().any(|u| normalize_url(u) == ours) {
        return Err(Ignored::OtherRepository);
    }
    if follows(reference, &push.reference, push.default_branch.as_deref()) {
        Ok(())
    } else {
        Err(Ignored::OtherRef)
    }
}

/// Whether a push of `pushed` (`refs/heads/x`, `refs/tags/y`) moves what `reference` names. The
/// remote HEAD is the default branch (any branch when the payload does not say which it is); a
/// pinned commit never moves; a revision expression may move with any push.
pub fn follows(reference: &GitRef, pushed: &str, default_branch: Option<&str>) -> bool {
    let branch = pushed.strip_prefix("refs/heads/");
    match reference {
        GitRef::Branch(b) => branch == Some(b.as_str()),
        GitRef::Tag(t) => pushed.strip_prefix("refs/tags/") == Some(t.as_str()),
        GitRef::RemoteHead => match (branch, default_branch) {
            (Some(b), Some(default)) => b == default,
            (Some(_), None) => true,
            (None, _) => false,
        },
        GitRef::Commit(_) => false,
        // `HEAD~1`, `refs/pull/1/merge`: whatever moved may move it; fetching tells.
        GitRef::Revision(_) => true,
    }
}

/// A repository URL reduced to what identifies the repository: host (without credentials or a
/// default port) and path, lower case, without the scheme, a trailing `/` or `.git`. The https,
/// ssh, scp-like (`git@host:org/repo`) and git forms of one repository give the same text; a
/// local path or `file://` URL gives its path.
pub fn normalize_url(url: &str) -> String {
    let url = url.trim().to_ascii_lowercase();
    let (host, path) = match url.split_once("://") {
        Some(("file", path)) => (String::new(), path.to_string()),
        Some((_, rest)) => {
            let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
            (host_of(authority), path.to_string())
        }
        None => match scp_like(&url) {
            Some((authority, path)) => (host_of(authority), path.to_string()),
            None => (String::new(), url.clone()),
        },
    };
    let mut path = path.trim_end_matches('/');
    path = path.strip_suffix(".git").unwrap_or(path);
    let path = path.trim_end_matches('/');
    if host.is_empty() {
        path.to_string()
    } else {
        format!("{host}/{}", path.trim_start_matches('/'))
    }
}

/// `user@host:path` (a colon before any slash), as `git@github.com:org/repo.git`.
fn scp_like(url: &str) -> Option<(&str, &str)> {
    let (authority, path) = url.split_once(':')?;
    (!authority.contains('/') && !authority.is_empty()).then_some((authority, path))
}

/// The host of `user:password@host:port`, without the credentials and a default port.
fn host_of(authority: &str) -> String {
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    match host.rsplit_once(':') {
        Some((h, "22" | "80" | "443" | "9418")) => h.to_string(),
        _ => host.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_one_repository_normalizes_alike() {
        let same = [
            "https://github.com/Azure/aro-fleet.git",
            "https://github.com/azure/aro-fleet",
            "https://github.com/Azure/aro-fleet/",
            "https://x-access-token:abc@github.com/Azure/aro-fleet.git",
            "http://github.com/Azure/aro-fleet",
            "https://github.com:443/Azure/aro-fleet.git",
            "git@github.com:Azure/aro-fleet.git",
            "git@github.com:Azure/aro-fleet",
            "ssh://git@github.com/Azure/aro-fleet.git",
            "ssh://git@github.com:22/Azure/aro-fleet.git",
            "git://github.com/Azure/aro-fleet.git",
            "  GITHUB.COM:azure/aro-fleet.git/ ",
        ];
        for url in same {
            assert_eq!(normalize_url(url), "github.com/azure/aro-fleet", "{url}");
        }
    }

    #[test]
    fn other_repositories_hosts_and_ports_stay_apart() {
        let ours = normalize_url("https://github.com/Azure/aro-fleet.git");
        for other in [
            "https://github.com/Azure/aro-fleet-staging.git",
            "https://github.com/other/aro-fleet.git",
            "https://gitlab.com/Azure/aro-fleet.git",
            "https://github.com:8443/Azure/aro-fleet.git",
            "https://github.com/Azure/aro-fleet/wiki",
            "/srv/git/Azure/aro-fleet.git",
        ] {
            assert_ne!(normalize_url(other), ours, "{other}");
        }
    }

    #[test]
    fn local_paths_and_file_urls_compare_by_path() {
        assert_eq!(normalize_url("/tmp/x/remote.git"), "/tmp/x/remote");
        assert_eq!(normalize_url("file:///tmp/x/remote.git/"), "/tmp/x/remote");
        assert_eq!(normalize_url("/tmp/X/Remote"), "/tmp/x/remote");
    }

    #[test]
    fn branches_tags_and_the_remote_head() {
        let main = GitRef::Branch("main".into());
        assert!(follows(&main, "refs/heads/main", None));
        assert!(!follows(&main, "refs/heads/main2", None));
        assert!(!follows(&main, "refs/heads/feature/main", None));
        assert!(!follows(&main, "refs/tags/main", None));
        assert!(!follows(&main, "main", None));
        let tag = GitRef::Tag("v1".into());
        assert!(follows(&tag, "refs/tags/v1", None));
        assert!(!follows(&tag, "refs/heads/v1", None));
        let head = GitRef::RemoteHead;
        assert!(follows(&head, "refs/heads/main", Some("main")));
        assert!(!follows(&head, "refs/heads/dev", Some("main")));
        assert!(follows(&head, "refs/heads/dev", None));
        assert!(!follows(&head, "refs/tags/v1", None));
        assert!(!follows(
            &GitRef::Commit("abcd".into()),
            "refs/heads/main",
            None
        ));
    }

    fn github_push(reference: &str, clone_url: &str) -> Vec<u8> {
        serde_json::json!({
            "ref": reference,
            "after": "0123456789abcdef0123456789abcdef01234567",
            "repository": {
                "full_name": "Azure/aro-fleet",
                "clone_url": clone_url,
                "html_url": "https://github.com/Azure/aro-fleet",
                "ssh_url": "git@github.com:Azure/aro-fleet.git",
                "git_url": "git://github.com/Azure/aro-fleet.git",
                "default_branch": "main"
            }
        })
        .to_string()
        .into_bytes()
    }

    #[test]
    fn github_pushes_pings_and_other_events() {
        let body = github_push("refs/heads/main", "https://github.com/Azure/aro-fleet.git");
        let Event::Push(push) = parse_github(Some("push"), None, &body).unwrap() else {
            panic!("a push")
        };
        assert_eq!(push.reference, "refs/heads/main");
        assert_eq!(push.urls.len(), 4);
        assert_eq!(push.default_branch.as_deref(), Some("main"));
        let main = GitRef::Branch("main".into());
        assert_eq!(
            concerns(&push, "git@github.com:azure/aro-fleet", &main),
            Ok(())
        );
        assert_eq!(
            concerns(&push, "https://github.com/Azure/other.git", &main),
            Err(Ignored::OtherRepository)
        );
        assert_eq!(
            concerns(
                &push,
                "https://github.com/Azure/aro-fleet",
                &GitRef::Branch("dev".into())
            ),
            Err(Ignored::OtherRef)
        );
        assert_eq!(
            parse_github(Some("ping"), None, b"{\"zen\":\"x\"}"),
            Ok(Event::Ping)
        );
        assert_eq!(
            parse_github(Some("issues"), None, b"{}"),
            Ok(Event::Other("issues".into()))
        );
    }

    #[test]
    fn github_form_encoded_deliveries_carry_the_json_in_payload() {
        let json = github_push("refs/heads/main", "https://github.com/Azure/aro-fleet.git");
        let form: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("payload", std::str::from_utf8(&json).unwrap())
            .finish();
        let form_type = Some("application/x-www-form-urlencoded");
        let Event::Push(push) = parse_github(Some("push"), form_type, form.as_bytes()).unwrap()
        else {
            panic!("a push")
        };
        assert_eq!(push.reference, "refs/heads/main");
        assert_eq!(
            parse_github(Some("push"), form_type, b"other=1"),
            Err(Malformed::Missing("payload field"))
        );
    }

    #[test]
    fn malformed_github_payloads() {
        assert_eq!(
            parse_github(None, None, b"{}"),
            Err(Malformed::NoEvent("X-GitHub-Event"))
        );
        assert!(matches!(
            parse_github(Some("push"), None, b"{not json"),
            Err(Malformed::Json(_))
        ));
        assert!(matches!(
            parse_github(Some("push"), None, b"[1]"),
            Err(Malformed::Json(_))
        ));
        assert_eq!(
            parse_github(
                Some("push"),
                None,
                br#"{"repository":{"clone_url":"https://h/r"}}"#
            ),
            Err(Malformed::Missing("ref"))
        );
        assert_eq!(
            parse_github(
                Some("push"),
                None,
                br#"{"ref":"refs/heads/main","repository":{}}"#
            ),
            Err(Malformed::Missing("repository URL"))
        );
    }

    #[test]
    fn gitlab_pushes_by_object_kind_or_header() {
        let body = serde_json::json!({
            "object_kind": "push",
            "ref": "refs/heads/main",
            "project": {
                "git_http_url": "https://gitlab.example.com/Platform/aro-fleet.git",
                "git_ssh_url": "git@gitlab.example.com:Platform/aro-fleet.git",
                "web_url": "https://gitlab.example.com/Platform/aro-fleet",
                "default_branch": "main"
            },
            "repository": {"url": "git@gitlab.example.com:Platform/aro-fleet.git"}
        })
        .to_string();
        let Event::Push(push) = parse_gitlab(Some("Push Hook"), body.as_bytes()).unwrap() else {
            panic!("a push")
        };
        assert_eq!(push.urls.len(), 4);
        assert_eq!(
            concerns(
                &push,
                "ssh://git@gitlab.example.com/platform/aro-fleet",
                &GitRef::RemoteHead
            ),
            Ok(())
        );
        let by_header = br#"{"ref":"refs/tags/v1","project":{"web_url":"https://g/p"}}"#;
        let Event::Push(tag) = parse_gitlab(Some("Tag Push Hook"), by_header).unwrap() else {
            panic!("a tag push")
        };
        assert_eq!(
            concerns(&tag, "https://g/p.git", &GitRef::Tag("v1".into())),
            Ok(())
        );
        assert_eq!(
            parse_gitlab(
                Some("Merge Request Hook"),
                br#"{"object_kind":"merge_request"}"#
            ),
            Ok(Event::Other("merge_request".into()))
        );
        assert!(matches!(
            parse_gitlab(None, b"nope"),
            Err(Malformed::Json(_))
        ));
        assert_eq!(
            parse_gitlab(None, b"{}"),
            Err(Malformed::NoEvent("X-Gitlab-Event"))
        );
    }
}

//! Which repository the statuses go to: what the repository URL names (`owner/name`, or a GitLab
//! project's path with its groups), and the API path of a status on a commit of it.

use super::Host;

/// The repository a git URL names, case kept: the path after the host of an https, ssh or git URL
/// or of a scp-like one (`git@host:owner/name.git`), without credentials, a trailing `/` or
/// `.git`. `None` for a local path or a `file://` URL (no host names the repository).
pub fn from_url(url: &str) -> Option<String> {
    let url = url.trim();
    let path = match url.split_once("://") {
        Some(("file", _)) => return None,
        Some((_, rest)) => rest.split_once('/')?.1,
        None => {
            let (authority, path) = url.split_once(':')?;
            if authority.is_empty() || authority.contains('/') {
                return None;
            }
            path
        }
    };
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path).trim_matches('/');
    (path.contains('/') && !path.split('/').any(str::is_empty)).then(|| path.to_string())
}

/// Why `repo` cannot name a repository on `host`.
pub fn check(host: Host, repo: &str) -> Result<(), String> {
    let parts: Vec<&str> = repo.split('/').collect();
    let ok = match host {
        Host::GitHub => parts.len() == 2 && parts.iter().all(|p| !p.is_empty()),
        // A numeric project id, or a path with at least a namespace and a name.
        Host::GitLab => {
            repo.chars().all(|c| c.is_ascii_digit()) && !repo.is_empty()
                || parts.len() >= 2 && parts.iter().all(|p| !p.is_empty())
        }
    };
    if ok {
        Ok(())
    } else if host == Host::GitHub {
        Err(format!("{repo:?} is not OWNER/NAME"))
    } else {
        Err(format!(
            "{repo:?} is neither a project id nor a path NAMESPACE/NAME"
        ))
    }
}

/// The path segments, after the API base, of the status of commit `sha` in `repo`: GitHub's
/// `repos/{owner}/{repo}/statuses/{sha}`, GitLab's `projects/{id}/statuses/{sha}` (the project's
/// path is one segment, its `/` encoded when the URL is built).
pub fn status_segments(host: Host, repo: &str, sha: &str) -> Vec<String> {
    match host {
        Host::GitHub => {
            let mut segments = vec!["repos".to_string()];
            segments.extend(repo.split('/').map(str::to_string));
            segments.extend(["statuses".to_string(), sha.to_string()]);
            segments
        }
        Host::GitLab => vec![
            "projects".to_string(),
            repo.to_string(),
            "statuses".to_string(),
            sha.to_string(),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_a_repository_url_names_owner_and_name() {
        for url in [
            "https://github.com/Azure/aro-fleet.git",
            "https://github.com/Azure/aro-fleet",
            "https://github.com/Azure/aro-fleet/",
            "https://x-access-token:abc@github.com:443/Azure/aro-fleet.git",
            "ssh://git@github.com/Azure/aro-fleet.git",
            "ssh://git@github.com:22/Azure/aro-fleet",
            "git@github.com:Azure/aro-fleet.git",
            "git://github.com/Azure/aro-fleet.git",
        ] {
            assert_eq!(from_url(url).as_deref(), Some("Azure/aro-fleet"), "{url}");
        }
        assert_eq!(
            from_url("https://gitlab.com/platform/aro/fleet.git").as_deref(),
            Some("platform/aro/fleet"),
            "GitLab groups are kept"
        );
    }

    #[test]
    fn local_repositories_name_none() {
        for url in [
            "/srv/git/fleet",
            "file:///srv/git/fleet.git",
            "fleet",
            "./fleet",
            "https://github.com/",
            "https://github.com/only-owner",
        ] {
            assert_eq!(from_url(url), None, "{url}");
        }
    }

    #[test]
    fn github_wants_owner_and_name_gitlab_a_path_or_an_id() {
        assert!(check(Host::GitHub, "Azure/aro-fleet").is_ok());
        assert!(check(Host::GitHub, "group/sub/fleet").is_err());
        assert!(check(Host::GitHub, "fleet").is_err());
        assert!(check(Host::GitLab, "group/sub/fleet").is_ok());
        assert!(check(Host::GitLab, "4242").is_ok());
        assert!(check(Host::GitLab, "fleet").is_err());
    }

    #[test]
    fn the_status_paths_of_each_host() {
        assert_eq!(
            status_segments(Host::GitHub, "Azure/aro-fleet", "abc"),
            ["repos", "Azure", "aro-fleet", "statuses", "abc"]
        );
        assert_eq!(
            status_segments(Host::GitLab, "platform/aro/fleet", "abc"),
            ["projects", "platform/aro/fleet", "statuses", "abc"]
        );
    }
}

//! Fleets: several agents (several repositories) may share one management cluster. Each names
//! its fleet, and writes that name on every inventory and every object it applies
//! ([`FLEET_ANNOTATION`]). An agent acts only on its own fleet's inventories and objects: another
//! fleet's are left alone and reported, never pruned, adopted or updated. Taking another fleet's
//! units over is explicit: `--take-over-fleet NAME`.
//!
//! The name is, in order: `--fleet`, the `fleet` of the repository's `aro-gitops.yaml`, else the
//! repository's host and path (the https and ssh URLs of one repository name one fleet). Shards
//! of one fleet share it.
//!
//! Inventories and objects written before fleets were named carry no name. Such an inventory is
//! the fleet's whose revision declares its unit (the next pass writes the name on it); one no unit
//! declares is left alone and reported, since it may be another fleet's.

use crate::marks::FLEET_ANNOTATION;
use serde_json::Value;

/// Whose inventories and objects this agent acts on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FleetScope {
    /// This agent's fleet (empty: unnamed, as in unit tests).
    pub name: String,
    /// Another fleet whose inventories and objects this agent takes over (`--take-over-fleet`).
    pub take_over: Option<String>,
}

/// What the agent does with something a fleet wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Whose {
    /// This fleet's (or the fleet taken over): acted on.
    Ours,
    /// Written before fleets were named: this fleet's if its revision declares the unit.
    Unnamed,
    /// Another fleet's, named: left alone.
    Fleet(String),
}

impl FleetScope {
    pub fn new(name: impl Into<String>, take_over: Option<String>) -> FleetScope {
        FleetScope {
            name: name.into(),
            take_over: take_over.filter(|t| !t.is_empty()),
        }
    }

    /// Whose is what carries the fleet name `fleet` (`None`: it carries none).
    pub fn whose(&self, fleet: Option<&str>) -> Whose {
        match fleet {
            None => Whose::Unnamed,
            Some(f) if f == self.name || self.take_over.as_deref() == Some(f) => Whose::Ours,
            Some(f) => Whose::Fleet(f.to_string()),
        }
    }

    /// Why this agent leaves the live object `live` alone: it is marked as another fleet's.
    pub fn foreign_object(&self, live: &Value) -> Option<String> {
        match self.whose(fleet_of(live)) {
            Whose::Fleet(f) => Some(f),
            Whose::Ours | Whose::Unnamed => None,
        }
    }
}

/// What the flags say of fleets: `--fleet` and `--take-over-fleet`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FleetNaming {
    /// `--fleet`.
    pub flag: Option<String>,
    /// `--take-over-fleet`.
    pub take_over: Option<String>,
}

impl FleetNaming {
    /// The scope of a revision of the repository at `url` whose settings file names the fleet
    /// `settings` (if it does). A local path is taken whole (`examples-repo` from any folder is
    /// one fleet).
    pub fn at(&self, settings: Option<&str>, url: &str) -> FleetScope {
        let local = std::fs::canonicalize(url).ok();
        let url = local.as_deref().and_then(|p| p.to_str()).unwrap_or(url);
        let name = resolve(self.flag.as_deref(), settings, url);
        FleetScope::new(name, self.take_over.clone())
    }
}

/// The line that says which fleet's units are taken over, when one is.
pub fn take_over_line(scope: &FleetScope, units: usize) -> Option<String> {
    let other = scope.take_over.as_ref()?;
    Some(format!(
        "taking over fleet {other:?}: its inventories ({units} found) and objects become fleet {:?}'s (--take-over-fleet)",
        scope.name
    ))
}

/// The warning of another fleet's inventories on the cluster (`fleet` empty: inventories written
/// before fleets were named, of units this fleet does not declare).
pub fn foreign_line(fleet: &str, units: &[String]) -> String {
    let n = units.len();
    let shown: Vec<&str> = units.iter().take(5).map(String::as_str).collect();
    let more = if n > shown.len() {
        format!(" and {} more", n - shown.len())
    } else {
        String::new()
    };
    let which = format!("{}{more}", shown.join(", "));
    if fleet.is_empty() {
        format!(
            "warning: {n} inventories name no fleet (written before fleets were named) and no unit of this fleet declares their units ({which}): they and their objects are left alone, never pruned"
        )
    } else {
        format!(
            "warning: fleet {fleet:?} also lives on this cluster ({n} inventories: {which}): its inventories and objects are left alone, never pruned or adopted (--take-over-fleet {fleet:?} takes them over)"
        )
    }
}

/// The fleet name an inventory or object carries.
pub fn fleet_of(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(FLEET_ANNOTATION))
        .and_then(Value::as_str)
}

/// The fleet name of a repository at `url` when nothing names it: its host and path, without
/// scheme, credentials, a trailing `/` or `.git`, so that the https and ssh URLs of one repository
/// name one fleet (`github.com/org/fleet`); a local path (or `file://` URL) is itself.
pub fn default_name(url: &str) -> String {
    let url = match url::Url::parse(url) {
        Ok(u) if u.scheme() == "file" => u.path().to_string(),
        Ok(u) if u.has_host() => {
            let host = u.host_str().unwrap_or_default();
            let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
            format!("{host}{port}{}", u.path())
        }
        // scp-like `user@host:path`, or a local path.
        _ => match url.split_once('@') {
            Some((user, rest)) if !user.contains('/') && rest.contains(':') => {
                let (host, path) = rest.split_once(':').unwrap_or((rest, ""));
                format!("{host}/{}", path.trim_start_matches('/'))
            }
            _ => url.to_string(),
        },
    };
    let url = url.trim_end_matches('/');
    url.strip_suffix(".git").unwrap_or(url).to_string()
}

/// The fleet name, in order: the flag, the settings file, the repository's URL.
pub fn resolve(flag: Option<&str>, settings: Option<&str>, url: &str) -> String {
    flag.or(settings)
        .filter(|n| !n.trim().is_empty())
        .map(|n| n.trim().to_string())
        .unwrap_or_else(|| default_name(url))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_default_name_is_the_url_without_credentials_or_suffix() {
        for (url, name) in [
            (
                "https://user:token@github.com/org/fleet.git",
                "github.com/org/fleet",
            ),
            ("https://github.com/org/fleet/", "github.com/org/fleet"),
            ("ssh://git@github.com/org/fleet.git", "github.com/org/fleet"),
            ("git@github.com:org/fleet.git", "github.com/org/fleet"),
            ("https://git.example:8443/fleet", "git.example:8443/fleet"),
            ("/srv/git/fleet", "/srv/git/fleet"),
            ("file:///srv/git/fleet.git", "/srv/git/fleet"),
        ] {
            assert_eq!(default_name(url), name, "{url}");
        }
        assert_eq!(resolve(Some("a"), Some("b"), "/r"), "a");
        assert_eq!(resolve(None, Some(" b "), "/r"), "b");
        assert_eq!(resolve(None, None, "/r/"), "/r");
        assert_eq!(resolve(Some(""), None, "/r"), "/r");
    }

    #[test]
    fn an_agent_acts_on_its_fleet_and_the_one_it_takes_over() {
        let scope = FleetScope::new("a", Some("b".into()));
        assert_eq!(scope.whose(Some("a")), Whose::Ours);
        assert_eq!(scope.whose(Some("b")), Whose::Ours);
        assert_eq!(scope.whose(Some("c")), Whose::Fleet("c".into()));
        assert_eq!(scope.whose(None), Whose::Unnamed);
        let live = json!({"metadata": {"annotations": {FLEET_ANNOTATION: "c"}}});
        assert_eq!(scope.foreign_object(&live).as_deref(), Some("c"));
        assert_eq!(scope.foreign_object(&json!({"metadata": {}})), None);
        assert_eq!(FleetScope::new("a", Some(String::new())).take_over, None);
    }
}

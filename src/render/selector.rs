//! Choosing objects by a `target` (patches, replacements): group, version, kind, name and namespace
//! (regular expressions matched whole, against the original or the current value), label selector and
//! annotation selector (Kubernetes label-selector syntax: `a=b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`,
//! `!a`, comma-separated, all required).

use super::kustomization::Selector;
use super::resid::GvkSelector;
use super::resources::Resource;
use regex::Regex;

/// A compiled target.
pub struct Matcher {
    selector: Selector,
    name: Option<Regex>,
    namespace: Option<Regex>,
    labels: Vec<Requirement>,
    annotations: Vec<Requirement>,
}

impl Matcher {
    pub fn new(selector: &Selector) -> Result<Self, String> {
        let anchored = |what: &str, s: &str| -> Result<Option<Regex>, String> {
            if s.is_empty() {
                return Ok(None);
            }
            Regex::new(&format!("^(?:{s})$"))
                .map(Some)
                .map_err(|e| format!("target {what} `{s}` is not a valid regular expression: {e}"))
        };
        Ok(Matcher {
            selector: selector.clone(),
            name: anchored("name", &selector.name)?,
            namespace: anchored("namespace", &selector.namespace)?,
            labels: parse_requirements(&selector.label_selector)
                .map_err(|e| format!("labelSelector `{}`: {e}", selector.label_selector))?,
            annotations: parse_requirements(&selector.annotation_selector).map_err(|e| {
                format!("annotationSelector `{}`: {e}", selector.annotation_selector)
            })?,
        })
    }

    /// Whether `res` is selected.
    pub fn matches(&self, res: &Resource) -> bool {
        let (org, cur) = (res.org_id(), res.cur_id());
        if let Some(re) = &self.namespace
            && !re.is_match(org.effective_namespace())
            && !re.is_match(cur.effective_namespace())
        {
            return false;
        }
        if let Some(re) = &self.name
            && !re.is_match(&org.name)
            && !re.is_match(&cur.name)
        {
            return false;
        }
        let s = &self.selector;
        if !res
            .gvk()
            .selected_by(&GvkSelector::new(&s.group, &s.version, &s.kind))
        {
            return false;
        }
        let labels = res.string_map("labels");
        let annotations = res.string_map("annotations");
        self.labels.iter().all(|r| r.holds(&labels))
            && self.annotations.iter().all(|r| r.holds(&annotations))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

impl Requirement {
    fn holds(&self, pairs: &[(String, String)]) -> bool {
        let get = |k: &str| {
            pairs
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        match self {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
        }
    }
}

/// Splits at commas outside parentheses.
fn split_top(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

fn parse_requirements(s: &str) -> Result<Vec<Requirement>, String> {
    if s.trim().is_empty() {
        return Ok(Vec::new());
    }
    split_top(s)
        .into_iter()
        .map(|part| parse_one(part.trim()))
        .collect()
}

fn parse_one(part: &str) -> Result<Requirement, String> {
    let key_ok = |k: &str| !k.is_empty() && !k.contains(char::is_whitespace);
    if let Some(key) = part.strip_prefix('!') {
        let key = key.trim();
        return if key_ok(key) {
            Ok(Requirement::NotExists(key.into()))
        } else {
            Err(format!("`{part}` is not a requirement"))
        };
    }
    for (op, ctor) in [
        (
            "!=",
            Requirement::NotEquals as fn(String, String) -> Requirement,
        ),
        ("==", Requirement::Equals),
        ("=", Requirement::Equals),
    ] {
        if let Some((k, v)) = part.split_once(op) {
            let (k, v) = (k.trim(), v.trim());
            if !key_ok(k) || v.contains(char::is_whitespace) {
                return Err(format!("`{part}` is not a requirement"));
            }
            return Ok(ctor(k.into(), v.into()));
        }
    }
    let words: Vec<&str> = part.splitn(2, char::is_whitespace).collect();
    if let [key, rest] = words.as_slice() {
        let rest = rest.trim();
        let (negate, list) = if let Some(l) = rest.strip_prefix("notin") {
            (true, l)
        } else if let Some(l) = rest.strip_prefix("in") {
            (false, l)
        } else {
            return Err(format!("`{part}` is not a requirement"));
        };
        let list = list
            .trim()
            .strip_prefix('(')
            .and_then(|l| l.strip_suffix(')'))
            .ok_or_else(|| format!("`{part}`: values must be in parentheses"))?;
        let values: Vec<String> = list
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect();
        return Ok(if negate {
            Requirement::NotIn(key.to_string(), values)
        } else {
            Requirement::In(key.to_string(), values)
        });
    }
    if key_ok(part) {
        Ok(Requirement::Exists(part.into()))
    } else {
        Err(format!("`{part}` is not a requirement"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::{Origin, SourcedObject};
    use serde_json::json;

    fn res(labels: serde_json::Value) -> Resource {
        Resource::loaded(SourcedObject {
            object: json!({"apiVersion": "apps/v1", "kind": "Deployment",
                           "metadata": {"name": "web-1", "namespace": "prod", "labels": labels}}),
            origin: Origin {
                file: "a.yaml".into(),
                document: 0,
            },
        })
    }

    fn sel(f: impl FnOnce(&mut Selector)) -> Selector {
        let mut s = Selector::default();
        f(&mut s);
        s
    }

    #[test]
    fn names_are_whole_regular_expressions() {
        let r = res(json!({"app": "web"}));
        let m = |s: Selector| Matcher::new(&s).unwrap().matches(&r);
        assert!(m(sel(|s| s.name = "web-.*".into())));
        assert!(!m(sel(|s| s.name = "web".into())));
        assert!(m(sel(|s| s.namespace = "prod".into())));
        assert!(!m(sel(|s| s.namespace = "default".into())));
        assert!(m(sel(|s| s.kind = "Deployment".into())));
        assert!(!m(sel(|s| s.group = "batch".into())));
        assert!(Matcher::new(&sel(|s| s.name = "(".into())).is_err());
    }

    #[test]
    fn label_selectors() {
        let r = res(json!({"app": "web", "tier": "front"}));
        let m = |l: &str| {
            Matcher::new(&sel(|s| s.label_selector = l.into()))
                .unwrap()
                .matches(&r)
        };
        assert!(m("app=web"));
        assert!(m("app==web,tier"));
        assert!(!m("app!=web"));
        assert!(m("app in (web, api)"));
        assert!(!m("tier notin (front)"));
        assert!(m("!missing"));
        assert!(!m("missing"));
        assert!(Matcher::new(&sel(|s| s.label_selector = "a in x".into())).is_err());
    }
}

//! Choosing objects by a `target` (patches, replacements): group, version, kind, name and namespace
//! (regular expressions matched whole, against the original or the current value), label selector and
//! annotation selector (Kubernetes label-selector syntax: `a=b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`,
//! `!a`, comma-separated, all required).

use super::kustomization::Selector;
use super::resid::field_str;
use super::resources::Resource;
use crate::object::split_api_version;
use crate::selector::LabelSelector;
use regex::Regex;

/// Compiles `pattern`, reusing an earlier compilation: a fleet's overlays repeat the same targets.
pub fn cached_regex(pattern: &str) -> Result<Regex, regex::Error> {
    static CACHE: std::sync::LazyLock<std::sync::Mutex<std::collections::HashMap<String, Regex>>> =
        std::sync::LazyLock::new(Default::default);
    if let Some(re) = CACHE.lock().expect("regex cache lock").get(pattern) {
        return Ok(re.clone());
    }
    let re = Regex::new(pattern)?;
    let mut cache = CACHE.lock().expect("regex cache lock");
    if cache.len() >= 4096 {
        cache.clear();
    }
    cache.insert(pattern.to_string(), re.clone());
    Ok(re)
}

/// A compiled target.
pub struct Matcher {
    selector: Selector,
    name: Option<Regex>,
    namespace: Option<Regex>,
    labels: LabelSelector,
    annotations: LabelSelector,
}

impl Matcher {
    pub fn new(selector: &Selector) -> Result<Self, String> {
        let anchored = |what: &str, s: &str| -> Result<Option<Regex>, String> {
            if s.is_empty() {
                return Ok(None);
            }
            cached_regex(&format!("^(?:{s})$"))
                .map(Some)
                .map_err(|e| format!("target {what} `{s}` is not a valid regular expression: {e}"))
        };
        Ok(Matcher {
            selector: selector.clone(),
            name: anchored("name", &selector.name)?,
            namespace: anchored("namespace", &selector.namespace)?,
            labels: LabelSelector::parse(&selector.label_selector)
                .map_err(|e| format!("labelSelector `{}`: {}", selector.label_selector, e.why))?,
            annotations: LabelSelector::parse(&selector.annotation_selector).map_err(|e| {
                format!(
                    "annotationSelector `{}`: {}",
                    selector.annotation_selector, e.why
                )
            })?,
        })
    }

    /// Whether `res` is selected.
    pub fn matches(&self, res: &Resource) -> bool {
        let s = &self.selector;
        // The type first: it is cheap to check and rules out most objects.
        let obj = res.object();
        let (group, version) = split_api_version(field_str(obj, "apiVersion"));
        let kind = field_str(obj, "kind");
        if !((s.group.is_empty() || s.group == group)
            && (s.version.is_empty() || s.version == version)
            && (s.kind.is_empty() || s.kind == kind))
        {
            return false;
        }
        if self.namespace.is_some() || self.name.is_some() {
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
        }
        let pairs = |field: &str| obj.get("metadata").and_then(|m| m.get(field));
        let (labels, annotations) = (pairs("labels"), pairs("annotations"));
        self.labels.matches_with(|k| string_in(labels, k))
            && self.annotations.matches_with(|k| string_in(annotations, k))
    }
}

/// The string under `key` in `map` (labels or annotations), if there is one.
fn string_in<'a>(map: Option<&'a serde_json::Value>, key: &str) -> Option<&'a str> {
    map.and_then(|m| m.get(key))
        .and_then(serde_json::Value::as_str)
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

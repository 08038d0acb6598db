//! Kubernetes label-selector syntax (`a=b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`,
//! comma-separated, all required): parsed once, matched against labels, annotations or any map.
//! One implementation for the control plane's LIST/WATCH and the renderer's patch targets.

use serde_json::Value;

/// A selector that cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unable to parse requirement: invalid label selector {input:?}: {why}")]
pub struct SelectorError {
    pub input: String,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

/// A parsed `labelSelector`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        let bad = |why: &str| SelectorError {
            input: input.to_string(),
            why: why.to_string(),
        };
        let mut reqs = Vec::new();
        for part in split_top_level(input) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let req = if let Some(key) = part.strip_prefix('!') {
                Requirement::DoesNotExist(label_key(key.trim()).map_err(|e| bad(&e))?)
            } else if let Some((k, rest)) = split_word(part, " notin ") {
                Requirement::NotIn(
                    label_key(k).map_err(|e| bad(&e))?,
                    set_values(rest).map_err(|e| bad(&e))?,
                )
            } else if let Some((k, rest)) = split_word(part, " in ") {
                Requirement::In(
                    label_key(k).map_err(|e| bad(&e))?,
                    set_values(rest).map_err(|e| bad(&e))?,
                )
            } else if let Some((k, v)) = part.split_once("!=") {
                Requirement::NotEquals(
                    label_key(k.trim()).map_err(|e| bad(&e))?,
                    label_value(v.trim()).map_err(|e| bad(&e))?,
                )
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                Requirement::Equals(
                    label_key(k.trim()).map_err(|e| bad(&e))?,
                    label_value(v.trim()).map_err(|e| bad(&e))?,
                )
            } else {
                Requirement::Exists(label_key(part).map_err(|e| bad(&e))?)
            };
            reqs.push(req);
        }
        Ok(LabelSelector(reqs))
    }

    /// Reads a structured `metav1.LabelSelector` (`matchLabels`, `matchExpressions` with the
    /// operators `In`, `NotIn`, `Exists`, `DoesNotExist`); all requirements are ANDed.
    pub fn from_json(selector: &Value) -> Result<Self, SelectorError> {
        let bad = |why: String| SelectorError {
            input: selector.to_string(),
            why,
        };
        let mut reqs = Vec::new();
        if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
            for (k, v) in labels {
                let v = v
                    .as_str()
                    .ok_or_else(|| bad(format!("matchLabels.{k} is not a string")))?;
                reqs.push(Requirement::Equals(
                    label_key(k).map_err(bad)?,
                    v.to_string(),
                ));
            }
        }
        let expressions = selector.get("matchExpressions").and_then(Value::as_array);
        for e in expressions.into_iter().flatten() {
            let key = label_key(e.get("key").and_then(Value::as_str).unwrap_or("")).map_err(bad)?;
            let values: Vec<String> = e
                .get("values")
                .map(|v| crate::object::strings_at(v, ""))
                .unwrap_or_default();
            let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
            reqs.push(match op {
                "In" | "NotIn" if values.is_empty() => {
                    return Err(bad(format!("operator {op} of key {key:?} needs values")));
                }
                "In" => Requirement::In(key, values),
                "NotIn" => Requirement::NotIn(key, values),
                "Exists" => Requirement::Exists(key),
                "DoesNotExist" => Requirement::DoesNotExist(key),
                _ => {
                    return Err(bad(format!(
                        "{op:?} is not a valid label selector operator"
                    )));
                }
            });
        }
        Ok(LabelSelector(reqs))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `obj`'s `metadata.labels` satisfy every requirement.
    pub fn matches(&self, obj: &Value) -> bool {
        let labels = obj.pointer("/metadata/labels");
        self.matches_with(|k| labels.and_then(|l| l.get(k)).and_then(Value::as_str))
    }

    /// Whether the key/value pairs `get` looks up satisfy every requirement (labels, annotations, ...).
    pub fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::DoesNotExist(k) => get(k).is_none(),
        })
    }
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(input: &str) -> Vec<&str> {
    let (mut depth, mut start, mut parts) = (0i32, 0usize, Vec::new());
    for (i, c) in input.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&input[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&input[start..]);
    parts
}

fn split_word<'a>(part: &'a str, word: &str) -> Option<(&'a str, &'a str)> {
    part.find(word)
        .map(|i| (part[..i].trim(), part[i + word.len()..].trim()))
}

fn label_key(k: &str) -> Result<String, String> {
    let ok = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c));
    if ok {
        Ok(k.to_string())
    } else {
        Err(format!("invalid label key {k:?}"))
    }
}

/// A label value as Kubernetes allows it: empty, or at most 63 characters of alphanumerics, `-`,
/// `_` and `.`, starting and ending with an alphanumeric. Refusing others (as kube-apiserver
/// does) also keeps stray parentheses and commas from swallowing the requirements after them.
fn label_value(v: &str) -> Result<String, String> {
    let edges_ok = |c: Option<char>| c.is_none_or(|c| c.is_ascii_alphanumeric());
    let ok = v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && edges_ok(v.chars().next())
        && edges_ok(v.chars().last());
    if ok {
        Ok(v.to_string())
    } else {
        Err(format!("invalid label value {v:?}"))
    }
}

fn set_values(rest: &str) -> Result<Vec<String>, String> {
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or("expected a set like (a,b)")?;
    inner
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(label_value)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors_match_like_kubernetes() {
        let obj = json!({"metadata": {"labels": {"app": "web", "tier": "front"}}});
        for (sel, want) in [
            ("app=web", true),
            ("app==web,tier=front", true),
            ("app!=web", false),
            ("app in (web, api)", true),
            ("app notin (web)", false),
            ("env notin (prod)", true),
            ("tier", true),
            ("!env", true),
            ("!app", false),
            ("", true),
        ] {
            assert_eq!(
                LabelSelector::parse(sel).unwrap().matches(&obj),
                want,
                "{sel}"
            );
        }
        assert!(LabelSelector::parse("app in web").is_err());
        assert!(LabelSelector::parse("a b=c").is_err());
        for bad in [
            "a=b c",
            "a!=x(y",
            "a in (x y)",
            "a=-x",
            &format!("a={}", "v".repeat(64)),
        ] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad}");
        }
        assert!(LabelSelector::parse("a=").is_ok());
    }

    /// Found by the `selector` fuzz target: a value with an unbalanced parenthesis swallowed the
    /// requirement after it (`e!=x(y,j` matched objects without label `j`). Such values are now
    /// refused, so a selector is the conjunction of its parts.
    #[test]
    fn a_value_with_parentheses_is_refused_not_merged_with_the_next_requirement() {
        let obj = json!({"metadata": {"labels": {}}});
        assert!(!LabelSelector::parse("j").unwrap().matches(&obj));
        let err = LabelSelector::parse("e!=x(y,j").unwrap_err();
        assert!(err.why.contains("invalid label value"), "{err}");
        assert!(LabelSelector::parse("emace!=metacaa\u{fffd}a (x,y0\u{1}9 (z),j").is_err());
        let annotations = [("team", "a")];
        let get = |k: &str| {
            annotations
                .iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| *v)
        };
        assert!(LabelSelector::parse("team=a").unwrap().matches_with(get));
    }

    #[test]
    fn structured_selectors_match_like_kubernetes() {
        let obj = json!({"metadata": {"labels": {"app": "web", "tier": "front"}}});
        for (sel, want) in [
            (json!({"matchLabels": {"app": "web"}}), true),
            (json!({"matchLabels": {"app": "api"}}), false),
            (
                json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "back"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}),
                true,
            ),
            (
                json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "env", "operator": "Exists"}]}),
                false,
            ),
        ] {
            assert_eq!(
                LabelSelector::from_json(&sel).unwrap().matches(&obj),
                want,
                "{sel}"
            );
        }
        assert!(LabelSelector::from_json(&json!({})).unwrap().is_empty());
        for bad in [
            json!({"matchExpressions": [{"key": "a", "operator": "Near"}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
            json!({"matchLabels": {"a b": "c"}}),
        ] {
            assert!(LabelSelector::from_json(&bad).is_err(), "{bad}");
        }
    }
}

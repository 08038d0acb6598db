//! One run's state and what it does to requests and answers: it fills the placeholders of a step
//! (`{ns}`, `{rv:N}`, `{name:N}`, `{uid:N}`, `{continue:N}`, `{pad}`) and normalises answers so
//! that two servers, or two runs on one server, compare equal when they behave alike.
//!
//! Normalisation replaces only what a server generates and a client cannot predict: uids (and
//! any UUID in a message), resourceVersions (also quoted in a message), continue tokens,
//! creation and deletion timestamps (also in a message), managedFields times (and so the order they give the
//! entries), conditions'
//! lastTransitionTime (a controller's clock), generated names, allocated cluster IPs,
//! the run's namespace name, and the content hashes in `/openapi/v3`'s URLs (a SHA-512 of each
//! whole document, which describes every kind the server has).

use regex::Regex;
use serde_json::{Map, Value, json};
use std::sync::LazyLock;

/// One run's state: the namespace, what earlier steps answered (raw), the generated names seen.
pub struct Run {
    pub ns: String,
    pub answers: Vec<Value>,
    generated: Vec<(String, String)>,
}

static PLACEHOLDER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\{(ns|rv|name|uid|continue)(?::(\d+))?\}").unwrap());
/// A resourceVersion quoted in a message: "the ResourceVersion in the precondition (299)", "too
/// old resource version: 1 (412)".
static RV_IN_TEXT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)(resource ?version[^()]{0,40}\()\d+\)").unwrap());
/// A timestamp in a message (an object quoted whole in an error message).
static TIME_IN_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})").unwrap()
});
/// A resourceVersion in JSON quoted in a message (`\"resourceVersion\":\"123\"`).
static RV_IN_JSON_TEXT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(resourceVersion\\?":\\?")\d+"#).unwrap());
static UUID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap()
});
/// The content hash of an OpenAPI v3 document in its URL (`?hash=` and 128 hex digits).
static OPENAPI_HASH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\?hash=[0-9A-F]{128}$").unwrap());
/// An IPv4 address: a Service's cluster IP is allocated at random from the service range.
static IPV4: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$").unwrap());

impl Run {
    pub fn new(ns: String) -> Run {
        Run {
            ns,
            answers: Vec::new(),
            generated: Vec::new(),
        }
    }

    /// `text` with its placeholders filled (percent-encoded in a query).
    pub fn substitute(&self, text: &str, in_query: bool) -> String {
        PLACEHOLDER
            .replace_all(text, |c: &regex::Captures| {
                if &c[1] == "ns" {
                    return self.ns.clone();
                }
                let n: usize = c.get(2).map_or(0, |m| m.as_str().parse().unwrap());
                let answer = n
                    .checked_sub(1)
                    .and_then(|i| self.answers.get(i))
                    .unwrap_or(&Value::Null);
                let field = match &c[1] {
                    "rv" => "resourceVersion",
                    "name" => "name",
                    "uid" => "uid",
                    _ => "continue",
                };
                let v = answer["metadata"][field].as_str().unwrap_or("").to_string();
                if in_query {
                    percent_encoding::utf8_percent_encode(&v, percent_encoding::NON_ALPHANUMERIC)
                        .to_string()
                } else {
                    v
                }
            })
            .into_owned()
    }

    /// Records the names a server generated (objects carrying `metadata.generateName`).
    pub fn learn_generated(&mut self, v: &Value) {
        match v {
            Value::Object(m) => {
                if let (Some(g), Some(n)) = (
                    m.get("metadata").and_then(|md| md["generateName"].as_str()),
                    m.get("metadata").and_then(|md| md["name"].as_str()),
                ) && n.starts_with(g)
                    && n != g
                    && !self.generated.iter().any(|(x, _)| x == n)
                {
                    self.generated
                        .push((n.to_string(), format!("{g}<generated>")));
                }
                m.values().for_each(|x| self.learn_generated(x));
            }
            Value::Array(a) => a.iter().for_each(|x| self.learn_generated(x)),
            _ => {}
        }
    }

    pub fn normalise(&self, v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut out = Map::new();
                for (k, x) in m {
                    let placeholder = match (k.as_str(), x) {
                        ("uid", Value::String(_)) => Some("<uid>"),
                        ("resourceVersion", Value::String(s)) if !s.is_empty() => Some("<rv>"),
                        ("continue", Value::String(s)) if !s.is_empty() => Some("<continue>"),
                        (
                            "creationTimestamp" | "deletionTimestamp" | "time"
                            | "lastTransitionTime",
                            Value::String(_),
                        ) => Some("<time>"),
                        ("clusterIP", Value::String(s)) if IPV4.is_match(s) => Some("<ip>"),
                        _ => None,
                    };
                    let x = match (placeholder, k.as_str(), x) {
                        (Some(p), _, _) => Value::String(p.into()),
                        (None, "serverRelativeURL", Value::String(url)) => {
                            Value::String(OPENAPI_HASH.replace(url, "?hash=<sha512>").into_owned())
                        }
                        (None, "clusterIPs", Value::Array(ips)) => Value::Array(
                            ips.iter()
                                .map(|ip| match ip.as_str() {
                                    Some(s) if IPV4.is_match(s) => json!("<ip>"),
                                    _ => ip.clone(),
                                })
                                .collect(),
                        ),
                        (None, "managedFields", Value::Array(entries)) => {
                            Value::Array(sorted_managed_fields(
                                entries.iter().map(|e| self.normalise(e)).collect(),
                            ))
                        }
                        _ => self.normalise(x),
                    };
                    out.insert(k.clone(), x);
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(a.iter().map(|x| self.normalise(x)).collect()),
            Value::String(s) => Value::String(self.normalise_text(s)),
            other => other.clone(),
        }
    }

    pub fn normalise_text(&self, s: &str) -> String {
        let mut s = s.to_string();
        for (name, with) in &self.generated {
            s = s.replace(name, with);
        }
        s = s.replace(&self.ns, "{ns}");
        let s = RV_IN_TEXT.replace_all(&s, "${1}<rv>)");
        let s = RV_IN_JSON_TEXT.replace_all(&s, "${1}<rv>");
        let s = TIME_IN_TEXT.replace_all(&s, "<time>");
        UUID.replace_all(&s, "<uuid>").into_owned()
    }
}

/// managedFields in kube-apiserver's order without its time component. kube-apiserver sorts the
/// entries by operation, then by the second of their time, then by manager, apiVersion and
/// subresource: two writes in one second or in two give different orders, which a client cannot
/// predict, so the order compared is the one without the time.
fn sorted_managed_fields(mut entries: Vec<Value>) -> Vec<Value> {
    let key = |e: &Value| {
        ["operation", "manager", "apiVersion", "subresource"]
            .map(|k| e[k].as_str().unwrap_or("").to_string())
    };
    entries.sort_by_key(key);
    entries
}

/// The projection of `body` on `pointers`: each pointer to what it points at (null when
/// nothing). A pointer is a JSON pointer (`/a/b/0`, `~1` for `/`) where a segment `[k=v]` picks
/// the first array element whose (dotted) key `k` is the string `v`:
/// `/resources/[name=configmaps]/verbs`, `/items/[metadata.name=apps]`.
pub fn project(body: &Value, pointers: &[String]) -> Value {
    let mut out = Map::new();
    for p in pointers {
        out.insert(p.clone(), pick(body, p).cloned().unwrap_or(Value::Null));
    }
    Value::Object(out)
}

fn pick<'a>(body: &'a Value, pointer: &str) -> Option<&'a Value> {
    let mut at = body;
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        at = match seg.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            Some(cond) => {
                let (key, want) = cond.split_once('=')?;
                at.as_array()?.iter().find(|x| {
                    key.split('.')
                        .try_fold(*x, |v, k| v.get(k))
                        .and_then(Value::as_str)
                        == Some(want)
                })?
            }
            None => match at {
                Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
                v => v.get(&seg)?,
            },
        };
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_projection_picks_by_pointer_and_by_key() {
        let body = json!({"resources": [{"name": "pods", "verbs": ["get"]}, {"name": "configmaps", "verbs": ["list"]}],
            "items": [{"metadata": {"name": "apps"}, "v": 1}], "a/b": 2});
        let got = project(
            &body,
            &[
                "/resources/[name=configmaps]/verbs".into(),
                "/items/[metadata.name=apps]/v".into(),
                "/a~1b".into(),
                "/resources/1/name".into(),
                "/missing".into(),
            ],
        );
        assert_eq!(
            got,
            json!({"/resources/[name=configmaps]/verbs": ["list"], "/items/[metadata.name=apps]/v": 1,
                "/a~1b": 2, "/resources/1/name": "configmaps", "/missing": null})
        );
    }

    #[test]
    fn quoted_resource_versions_and_cluster_ips_are_masked() {
        let run = Run::new("fa-x".into());
        assert_eq!(
            run.normalise_text("too old resource version: 1 (412)"),
            "too old resource version: 1 (<rv>)"
        );
        assert_eq!(
            run.normalise_text(
                r#"{\"resourceVersion\":\"77\",\"creationTimestamp\":\"2026-11-29T01:39:10Z\"}"#
            ),
            r#"{\"resourceVersion\":\"<rv>\",\"creationTimestamp\":\"<time>\"}"#
        );
        let v =
            run.normalise(&json!({"spec": {"clusterIP": "10.0.0.7", "clusterIPs": ["10.0.0.7"]}}));
        assert_eq!(
            v,
            json!({"spec": {"clusterIP": "<ip>", "clusterIPs": ["<ip>"]}})
        );
        let none = run.normalise(&json!({"spec": {"clusterIP": "None"}}));
        let fields = run.normalise(&json!({"managedFields": [
            {"manager": "b", "operation": "Update"}, {"manager": "z", "operation": "Apply"},
            {"manager": "a", "operation": "Update", "subresource": "status"}]}));
        let managers: Vec<&str> = fields["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap())
            .collect();
        assert_eq!(managers, ["z", "a", "b"]);
        assert_eq!(none, json!({"spec": {"clusterIP": "None"}}));
    }
}

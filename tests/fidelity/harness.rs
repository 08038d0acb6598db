//! The differential harness: one request sequence replayed against a server, each step's answer
//! (status, Content-Type, body) recorded and normalised so that two servers, or two runs on one
//! server, compare equal when they behave alike.
//!
//! Each run of a sequence gets its own namespace (`{ns}` in the corpus), created before the first
//! step and not compared. Normalisation replaces what a server generates and a client cannot
//! predict: uids (and any UUID in a message), resourceVersions, continue tokens, creation and
//! deletion timestamps, managedFields times, generated names, and the run's namespace name.

use http_body_util::BodyExt;
use regex::Regex;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::path::Path;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

/// How long a plain request may take before the step records a timeout.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a watch step collects events when fewer than it expects arrive.
const WATCH_WINDOW: Duration = Duration::from_secs(3);

/// One sequence of the corpus: a file `tests/fidelity/corpus/NAME.yaml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sequence {
    #[serde(skip)]
    pub name: String,
    /// What the sequence shows (one line).
    pub about: String,
    pub steps: Vec<Step>,
}

/// One request. `{ns}`, `{rv:N}`, `{name:N}` and `{continue:N}` in `path`, `query` and `body` are
/// the run's namespace and step N's (1-based) `metadata.resourceVersion`, `metadata.name` and
/// `metadata.continue`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub query: Option<String>,
    /// A JSON body (written as YAML in the corpus).
    #[serde(default)]
    pub body: Option<Value>,
    /// A body sent byte for byte (for malformed input).
    #[serde(default)]
    pub raw: Option<String>,
    /// The Content-Type; `application/json` when a body is given and this is not.
    #[serde(default)]
    pub content_type: Option<String>,
    /// A watch: collect this many events (BOOKMARKs aside), or what came within the window.
    #[serde(default)]
    pub watch: Option<usize>,
}

/// Reads every sequence under `dir`, sorted by name.
pub fn load_corpus(dir: &Path) -> Vec<Sequence> {
    crate::common::real_cluster::yaml_files(dir)
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).expect("read a sequence");
            let value = aro_gitops::yaml::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: not YAML: {e}", f.display()));
            let mut seq: Sequence = serde_json::from_value(value)
                .unwrap_or_else(|e| panic!("{}: not a sequence: {e}", f.display()));
            seq.name = f.file_stem().unwrap().to_string_lossy().into_owned();
            seq
        })
        .collect()
}

/// One run's state: the namespace, what earlier steps answered (raw), the generated names seen.
struct Run {
    ns: String,
    answers: Vec<Value>,
    generated: Vec<(String, String)>,
}

static PLACEHOLDER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\{(ns|rv|name|continue)(?::(\d+))?\}").unwrap());
/// A resourceVersion quoted in a message ("the ResourceVersion in the precondition (299)").
static RV_IN_TEXT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)(resourceversion[^()]{0,40}\()\d+\)").unwrap());
static UUID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap()
});

impl Run {
    fn substitute(&self, text: &str, in_query: bool) -> String {
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
    fn learn_generated(&mut self, v: &Value) {
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

    fn normalise(&self, v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut out = Map::new();
                for (k, x) in m {
                    let placeholder = match (k.as_str(), x) {
                        ("uid", Value::String(_)) => Some("<uid>"),
                        ("resourceVersion", Value::String(s)) if !s.is_empty() => Some("<rv>"),
                        ("continue", Value::String(s)) if !s.is_empty() => Some("<continue>"),
                        ("creationTimestamp" | "deletionTimestamp" | "time", Value::String(_)) => {
                            Some("<time>")
                        }
                        _ => None,
                    };
                    let x = match placeholder {
                        Some(p) => Value::String(p.into()),
                        None => self.normalise(x),
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

    fn normalise_text(&self, s: &str) -> String {
        let mut s = s.to_string();
        for (name, with) in &self.generated {
            s = s.replace(name, with);
        }
        s = s.replace(&self.ns, "{ns}");
        let s = RV_IN_TEXT.replace_all(&s, "${1}<rv>)");
        UUID.replace_all(&s, "<uuid>").into_owned()
    }
}

/// The namespace a run of `seq` uses: `f<run>-<sequence>`, cut to a DNS label.
pub fn namespace(seq: &str, run: &str) -> String {
    let mut ns = format!("f{run}-{seq}");
    ns.truncate(50);
    ns.trim_end_matches('-').to_string()
}

/// Runs `seq` on `client` in a fresh namespace; returns each step's normalised answer
/// (`{"status", "contentType", "body"}`).
pub async fn run_sequence(client: &kube::Client, seq: &Sequence, run: &str) -> Vec<Value> {
    let ns = namespace(&seq.name, run);
    let created = request(
        client,
        "POST",
        "/api/v1/namespaces",
        Some("application/json"),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            .to_string()
            .into_bytes(),
        None,
    )
    .await;
    assert_eq!(created.0, 201, "create namespace {ns}: {:?}", created.2);
    let mut state = Run {
        ns,
        answers: Vec::new(),
        generated: Vec::new(),
    };
    let mut out = Vec::new();
    for step in &seq.steps {
        let mut uri = state.substitute(&step.path, false);
        if let Some(q) = &step.query {
            uri = format!("{uri}?{}", state.substitute(q, true));
        }
        let body = match (&step.body, &step.raw) {
            (Some(b), _) => Some(state.substitute(&b.to_string(), false).into_bytes()),
            (None, Some(r)) => Some(state.substitute(r, false).into_bytes()),
            (None, None) => None,
        };
        let content_type = step
            .content_type
            .clone()
            .or_else(|| body.as_ref().map(|_| "application/json".to_string()));
        let (status, ct, answer) = request(
            client,
            &step.method,
            &uri,
            content_type.as_deref(),
            body.unwrap_or_default(),
            step.watch,
        )
        .await;
        state.learn_generated(&answer);
        out.push(json!({"status": status, "contentType": ct, "body": state.normalise(&answer)}));
        state.answers.push(answer);
    }
    out
}

/// One request: the status, the Content-Type and the body (JSON, or `{"text": ...}` when it is
/// not JSON; for a watch, the array of events).
pub async fn request(
    client: &kube::Client,
    method: &str,
    uri: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
    watch: Option<usize>,
) -> (u16, String, Value) {
    let mut req = http::Request::builder().method(method).uri(uri);
    if let Some(ct) = content_type {
        req = req.header(http::header::CONTENT_TYPE, ct);
    }
    req = req.header(http::header::ACCEPT, "application/json");
    let req = req.body(kube::client::Body::from(body)).expect("a request");
    let resp = match tokio::time::timeout(REQUEST_TIMEOUT, client.send(req)).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return (0, String::new(), json!({"transportError": e.to_string()})),
        Err(_) => return (0, String::new(), json!({"timeout": true})),
    };
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let mut body = resp.into_body();
    if let Some(want) = watch.filter(|_| status == 200) {
        return (status, ct, collect_events(&mut body, want).await);
    }
    let bytes = match tokio::time::timeout(REQUEST_TIMEOUT, body.collect()).await {
        Ok(Ok(b)) => b.to_bytes(),
        _ => return (status, ct, json!({"bodyError": true})),
    };
    (status, ct, parse_body(&bytes))
}

fn parse_body(bytes: &[u8]) -> Value {
    if bytes.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| json!({"text": String::from_utf8_lossy(bytes).trim_end()}))
}

/// Reads watch events until `want` arrived or the window closed.
async fn collect_events(body: &mut kube::client::Body, want: usize) -> Value {
    let deadline = Instant::now() + WATCH_WINDOW;
    let mut buf: Vec<u8> = Vec::new();
    let mut events = Vec::new();
    while events.len() < want {
        let left = deadline.saturating_duration_since(Instant::now());
        let frame = match tokio::time::timeout(left, body.frame()).await {
            Ok(Some(Ok(f))) => f,
            _ => break,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        buf.extend_from_slice(&data);
        while let Some(i) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=i).collect();
            let event = parse_body(&line);
            if !event.is_null() && event["type"] != "BOOKMARK" {
                events.push(event);
            }
        }
    }
    Value::Array(events)
}

/// Installs `crd` and waits (polling, with a deadline) until `probe` lists.
/// Installs a CRD and waits until its storage version's collection answers (in `default` for a
/// namespaced kind).
pub async fn install_crd(client: &kube::Client, crd: &Value) {
    let spec = &crd["spec"];
    let group = spec["group"].as_str().expect("spec.group");
    let plural = spec["names"]["plural"].as_str().expect("spec.names.plural");
    let version = spec["versions"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["storage"] == true))
        .and_then(|v| v["name"].as_str())
        .expect("a storage version");
    let probe = match spec["scope"].as_str() {
        Some("Cluster") => format!("/apis/{group}/{version}/{plural}"),
        _ => format!("/apis/{group}/{version}/namespaces/default/{plural}"),
    };
    let probe = probe.as_str();
    let (status, _, body) = request(
        client,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        Some("application/json"),
        crd.to_string().into_bytes(),
        None,
    )
    .await;
    assert!(
        status == 201 || status == 409,
        "install the CRD: {status} {body}"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, _, _) = request(client, "GET", probe, None, Vec::new(), None).await;
        if status == 200 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the CRD is not served: {probe} answers {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

//! The differential harness: one request sequence replayed against a server, each step's answer
//! (status, Content-Type, `Warning` headers, body) recorded and normalised so that two servers,
//! or two runs on one server, compare equal when they behave alike.
//!
//! Each run of a sequence gets its own namespace (`{ns}` in the corpus), created before the first
//! step and not compared. What is normalised, and why, is in `normalise.rs`; how a request is
//! sent, in `request.rs`.

use crate::normalise::{Run, project};
use crate::request::{Outgoing, send};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a step with `until` repeats its request.
const UNTIL_DEADLINE: Duration = Duration::from_secs(10);

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

/// One request. `{ns}`, `{rv:N}`, `{name:N}`, `{uid:N}` and `{continue:N}` in `path`, `query`,
/// `headers` and `body` are the run's namespace and step N's (1-based)
/// `metadata.resourceVersion`, `metadata.name`, `metadata.uid` and `metadata.continue`.
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
    /// `{pad}` in `body` or `raw` becomes this many `x` (a body too large to keep in a file).
    #[serde(default)]
    pub pad: Option<usize>,
    /// The Content-Type; `application/json` when a body is given and this is not.
    #[serde(default)]
    pub content_type: Option<String>,
    /// The Accept header; `application/json` when not given.
    #[serde(default)]
    pub accept: Option<String>,
    /// Further request headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Sent as ServiceAccount NAME of the run's namespace (impersonation headers:
    /// `Impersonate-User: system:serviceaccount:{ns}:NAME`).
    #[serde(default, rename = "as")]
    pub as_service_account: Option<String>,
    /// Compare only these parts of the body (see [`project`]): for documents far larger than
    /// what the step shows (discovery, OpenAPI).
    #[serde(default)]
    pub only: Option<Vec<String>>,
    /// Repeat the request (every 50 ms, for at most 10 s) until it answers this status: for what
    /// a server learns through its own caches (kube-apiserver's RBAC authorizer sees a new
    /// RoleBinding a moment after it is stored). The last answer is the step's.
    #[serde(default)]
    pub until: Option<u16>,
    /// A watch: collect this many events (timer BOOKMARKs aside), or what came within the window.
    #[serde(default)]
    pub watch: Option<usize>,
    /// Keep only the watch events of these types (`[DELETED]`): the intermediate states a
    /// controller passes through on its own time are not predictable.
    #[serde(default)]
    pub event_types: Vec<String>,
    /// The watch window in seconds (3 when not given), for what a controller does in its own time
    /// (garbage collection, namespace deletion).
    #[serde(default)]
    pub wait: Option<u64>,
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

/// The namespace a run of `seq` uses: `f<run>-<sequence>`, cut to a DNS label.
pub fn namespace(seq: &str, run: &str) -> String {
    let mut ns = format!("f{run}-{seq}");
    ns.truncate(50);
    ns.trim_end_matches('-').to_string()
}

/// Waits (at most 30 s) until the namespace `ns` has its `default` ServiceAccount: on
/// kube-apiserver the service-account controller makes it a moment after the namespace, and a Pod
/// created before is refused (403). The local control plane has no such controller; its Pod
/// admission takes `default` as present, so its runs do not wait.
async fn default_account(client: &kube::Client, ns: &str) {
    let uri = format!("/api/v1/namespaces/{ns}/serviceaccounts/default");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let got = send(
            client,
            Outgoing {
                method: "GET",
                uri: &uri,
                ..Outgoing::default()
            },
        )
        .await;
        if got.status == 200 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "namespace {ns}: no default ServiceAccount after 30 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Runs `seq` on `client` in a fresh namespace; returns each step's normalised answer
/// (`{"status", "contentType", "body"}`, and `"warnings"` when there were any).
/// `wait_for_default_account`: the server makes each namespace's `default` ServiceAccount
/// later (kube-apiserver's controllers); a sequence that creates Pods waits for it.
pub async fn run_sequence(
    client: &kube::Client,
    seq: &Sequence,
    run: &str,
    wait_for_default_account: bool,
) -> Vec<Value> {
    let ns = namespace(&seq.name, run);
    let created = send(
        client,
        Outgoing {
            method: "POST",
            uri: "/api/v1/namespaces",
            content_type: Some("application/json"),
            body: json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
                .to_string()
                .into_bytes(),
            ..Outgoing::default()
        },
    )
    .await;
    assert_eq!(
        created.status, 201,
        "create namespace {ns}: {:?}",
        created.body
    );
    if wait_for_default_account && seq.steps.iter().any(|s| s.path.contains("/pods")) {
        default_account(client, &ns).await;
    }
    let mut state = Run::new(ns);
    let mut out = Vec::new();
    for step in &seq.steps {
        let mut uri = state.substitute(&step.path, false);
        if let Some(q) = &step.query {
            uri = format!("{uri}?{}", state.substitute(q, true));
        }
        let pad = |b: String| match step.pad {
            Some(n) => b.replace("{pad}", &"x".repeat(n)),
            None => b,
        };
        let body = match (&step.body, &step.raw) {
            (Some(b), _) => Some(pad(state.substitute(&b.to_string(), false)).into_bytes()),
            (None, Some(r)) => Some(pad(state.substitute(r, false)).into_bytes()),
            (None, None) => None,
        };
        let content_type = step
            .content_type
            .clone()
            .or_else(|| body.as_ref().map(|_| "application/json".to_string()));
        let mut headers: Vec<(String, String)> = step
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), state.substitute(v, false)))
            .collect();
        if let Some(sa) = &step.as_service_account {
            headers.push((
                "Impersonate-User".into(),
                format!("system:serviceaccount:{}:{sa}", state.ns),
            ));
        }
        let outgoing = || Outgoing {
            method: &step.method,
            uri: &uri,
            content_type: content_type.as_deref(),
            accept: step.accept.as_deref(),
            headers: headers.clone(),
            body: body.clone().unwrap_or_default(),
            watch: step.watch,
            window: step.wait.map(Duration::from_secs),
            event_types: &step.event_types,
        };
        let mut answer = send(client, outgoing()).await;
        let deadline = Instant::now() + UNTIL_DEADLINE;
        while let Some(want) = step.until
            && answer.status != want
            && Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
            answer = send(client, outgoing()).await;
        }
        state.learn_generated(&answer.body);
        let normalised = state.normalise(&answer.body);
        let shown = match &step.only {
            Some(pointers) => project(&normalised, pointers),
            None => normalised,
        };
        let mut record = json!({
            "status": answer.status,
            "contentType": answer.content_type,
            "body": shown,
        });
        if !answer.warnings.is_empty() {
            let warnings: Vec<String> = answer
                .warnings
                .iter()
                .map(|w| state.normalise_text(w))
                .collect();
            record["warnings"] = json!(warnings);
        }
        out.push(record);
        state.answers.push(answer.body);
    }
    out
}

/// Installs a CRD and waits (polling, with a deadline) until its storage version's collection
/// answers (in `default` for a namespaced kind).
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
    let installed = send(
        client,
        Outgoing {
            method: "POST",
            uri: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            content_type: Some("application/json"),
            body: crd.to_string().into_bytes(),
            ..Outgoing::default()
        },
    )
    .await;
    assert!(
        installed.status == 201 || installed.status == 409,
        "install the CRD: {} {}",
        installed.status,
        installed.body
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let probed = send(
            client,
            Outgoing {
                method: "GET",
                uri: &probe,
                ..Outgoing::default()
            },
        )
        .await;
        if probed.status == 200 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the CRD is not served: {probe} answers {}",
            probed.status
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

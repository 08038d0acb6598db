//! A loopback fault proxy for tests: an HTTP listener on 127.0.0.1 forwarding every request to
//! an API server (the real kube-apiserver over TLS, trusting its CA, or `control-plane serve`),
//! the caller's `Authorization` header passed through, and failing a share of the resource
//! requests the way a troubled API server or the network between does:
//!
//! - 429 with `Retry-After: 1` (API priority and fairness), 500 and 503: answered here, the
//!   request never reaches the server;
//! - 504 and a connection reset: the request is forwarded (it may take effect), then the answer
//!   is lost: a 504, or the connection closed without an answer;
//! - of a watch: a 200 whose one event is `ERROR` with a 410 `Expired` Status, then the end (as
//!   kube-apiserver ends a watch whose resourceVersion is too old), or the upstream watch cut
//!   after a short while.
//!
//! Which request gets which fault is [`aro_gitops::controlplane::faults::pick`] of its number
//! (in the order requests arrive) and a seed, as the control plane's own `--inject-faults`;
//! discovery, `/version` and health are never faulted ([`faults::classify`]).
//!
//! The agent is given [`FaultProxy::kubeconfig`], naming the proxy and the caller's token.

use super::write_log::{Write, WriteLog, patch_kind};
use aro_gitops::controlplane::faults::{self, RequestClass};
use futures::StreamExt;
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, StreamBody, combinators::UnsyncBoxBody};
use hyper::body::{Bytes, Frame, Incoming};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

type ProxyBody = UnsyncBoxBody<Bytes, std::io::Error>;

/// The API server behind the proxy.
#[derive(Debug, Clone)]
pub struct Upstream {
    /// `https://127.0.0.1:6443` or `http://127.0.0.1:PORT`.
    pub url: String,
    /// The PEM text of the CA the server's certificate is checked against (HTTPS).
    pub ca_pem: Option<Vec<u8>>,
}

/// One fault the proxy injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fault {
    TooManyRequests,
    InternalError,
    Unavailable,
    /// Forwarded, then a 504.
    Timeout,
    /// Forwarded, then the connection closed without an answer.
    Reset,
    /// A watch answered with an `ERROR` event of a 410 Gone, then ended.
    WatchGone,
    /// A watch forwarded, then cut after a while.
    WatchCut,
}

impl Fault {
    pub fn as_str(self) -> &'static str {
        match self {
            Fault::TooManyRequests => "429",
            Fault::InternalError => "500",
            Fault::Unavailable => "503",
            Fault::Timeout => "504",
            Fault::Reset => "reset",
            Fault::WatchGone => "410-gone",
            Fault::WatchCut => "watch-cut",
        }
    }
}

/// The faults a request of `class` may get.
pub fn choices(class: RequestClass) -> &'static [Fault] {
    use Fault::*;
    match class {
        RequestClass::Exempt => &[],
        RequestClass::Read | RequestClass::Create | RequestClass::Write => {
            &[TooManyRequests, InternalError, Unavailable, Timeout, Reset]
        }
        RequestClass::Watch => &[
            TooManyRequests,
            InternalError,
            Unavailable,
            WatchGone,
            WatchCut,
            Reset,
        ],
    }
}

struct State {
    upstream: kube::Client,
    rate: f64,
    seed: u64,
    next: AtomicU64,
    injected: Mutex<BTreeMap<Fault, u64>>,
    /// Writes (POST, PUT, PATCH, DELETE, dry runs left out) by `METHOD path`, faulted or not.
    writes: Mutex<BTreeMap<String, u64>>,
    /// How long a cut watch streams before it ends.
    cut_after: Duration,
    /// Out of rotation: the upstream is restarting and not ready, so every request is answered
    /// 503 without reaching it, as a load balancer health-checking `/readyz` answers.
    out_of_rotation: AtomicBool,
    log: Mutex<WriteLog>,
}

/// A running proxy; stops when dropped.
pub struct FaultProxy {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FaultProxy {
    /// Starts a proxy to `upstream` failing `rate` of the resource requests, from `seed`.
    pub async fn start(upstream: &Upstream, rate: f64, seed: u64) -> FaultProxy {
        let mut config = kube::Config::new(upstream.url.parse().expect("the upstream URL"));
        config.default_retry = false;
        config.read_timeout = None; // watches stream for minutes
        if let Some(pem) = &upstream.ca_pem {
            use rustls_pki_types::pem::PemObject;
            let certs: Vec<Vec<u8>> = rustls_pki_types::CertificateDer::pem_slice_iter(pem)
                .map(|c| c.expect("the CA's PEM").to_vec())
                .collect();
            config.root_cert = Some(certs);
        }
        let client = kube::client::ClientBuilder::try_from(config)
            .expect("a client of the upstream")
            .build();
        let state = Arc::new(State {
            upstream: client,
            rate,
            seed,
            next: AtomicU64::new(0),
            injected: Mutex::default(),
            writes: Mutex::default(),
            cut_after: Duration::from_millis(500),
            out_of_rotation: AtomicBool::new(false),
            log: Mutex::default(),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let url = format!("http://{}", listener.local_addr().expect("its address"));
        let serving = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let state = serving.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let state = state.clone();
                        async move { serve(&state, req).await }
                    });
                    // A reset ends the connection with an error: nothing to report.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        FaultProxy { url, state, task }
    }

    /// A kubeconfig naming the proxy, with `token` as the user's bearer token (none for a server
    /// without authentication), written to `path`.
    pub fn kubeconfig(&self, path: &Path, token: Option<&str>) -> PathBuf {
        let user = match token {
            Some(t) => format!("    token: {t}\n"),
            None => "    {}\n".to_string(),
        };
        let text = format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: proxy\n\
             clusters:\n- name: proxy\n  cluster:\n    server: {}\n\
             contexts:\n- name: proxy\n  context:\n    cluster: proxy\n    user: proxy\n\
             users:\n- name: proxy\n  user:\n{user}",
            self.url
        );
        std::fs::write(path, text).expect("the kubeconfig is written");
        path.to_path_buf()
    }

    /// Takes the upstream out of rotation (`false`) while it restarts, and back (`true`) once it
    /// is ready: a real kube-apiserver serves before `/readyz` (its RBAC authorizer not yet
    /// synced, so it answers 403), and in a cluster its load balancer sends it nothing until then.
    pub fn set_in_rotation(&self, ready: bool) {
        self.state.out_of_rotation.store(!ready, Ordering::Relaxed);
    }

    /// Faultable requests seen.
    pub fn requests(&self) -> u64 {
        self.state.next.load(Ordering::Relaxed)
    }

    /// Faults injected, by kind.
    pub fn injected(&self) -> BTreeMap<Fault, u64> {
        self.state.injected.lock().expect("lock").clone()
    }

    /// Writes seen so far by `METHOD path` (dry runs left out), and forgets them.
    pub fn take_writes(&self) -> BTreeMap<String, u64> {
        std::mem::take(&mut *self.state.writes.lock().expect("lock"))
    }

    /// The writes answered with success so far, in order (dry runs and faulted writes left out),
    /// and forgets them.
    pub fn take_write_log(&self) -> Vec<Write> {
        std::mem::take(&mut self.state.log.lock().expect("lock").writes)
    }

    /// `faults injected: N of M requests (429: a, 500: b, ...)`.
    pub fn line(&self) -> String {
        let injected = self.injected();
        let kinds: Vec<String> = injected
            .iter()
            .map(|(k, n)| format!("{}: {n}", k.as_str()))
            .collect();
        format!(
            "faults injected: {} of {} requests ({})",
            injected.values().sum::<u64>(),
            self.requests(),
            kinds.join(", ")
        )
    }
}

/// The error that makes hyper close the connection without an answer.
#[derive(Debug)]
struct Reset;

impl std::fmt::Display for Reset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an injected connection reset")
    }
}

impl std::error::Error for Reset {}

fn full(status: StatusCode, body: String) -> Response<ProxyBody> {
    let mut resp = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|e| match e {})
            .boxed_unsync(),
    );
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// A Kubernetes `Status` of a failure.
fn status_json(code: u16, reason: &str, message: &str) -> String {
    serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": format!("injected fault (fault proxy): {message}"),
        "reason": reason, "code": code})
    .to_string()
}

async fn serve(state: &State, req: Request<Incoming>) -> Result<Response<ProxyBody>, Reset> {
    let class = faults::classify(
        req.method(),
        req.uri().path(),
        req.uri().query().unwrap_or(""),
    );
    let fault = if class == RequestClass::Exempt {
        None
    } else {
        let n = state.next.fetch_add(1, Ordering::Relaxed);
        faults::pick(state.seed, n, state.rate, choices(class))
    };
    let dry_run = req
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "dryRun=All"));
    if matches!(class, RequestClass::Create | RequestClass::Write) && !dry_run {
        let key = format!("{} {}", req.method(), req.uri().path());
        *state.writes.lock().expect("lock").entry(key).or_default() += 1;
    }
    if let Some(f) = fault {
        *state.injected.lock().expect("lock").entry(f).or_default() += 1;
    }
    match fault {
        Some(Fault::TooManyRequests) => {
            let mut resp = full(
                StatusCode::TOO_MANY_REQUESTS,
                status_json(
                    429,
                    "TooManyRequests",
                    "too many requests, please try again later",
                ),
            );
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return Ok(resp);
        }
        Some(Fault::InternalError) => {
            return Ok(full(
                StatusCode::INTERNAL_SERVER_ERROR,
                status_json(500, "InternalError", "an internal error; not applied"),
            ));
        }
        Some(Fault::Unavailable) => {
            return Ok(full(
                StatusCode::SERVICE_UNAVAILABLE,
                status_json(
                    503,
                    "ServiceUnavailable",
                    "the server is unavailable; not applied",
                ),
            ));
        }
        Some(Fault::WatchGone) => {
            let event = serde_json::json!({"type": "ERROR", "object": {"kind": "Status",
                "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "injected fault (fault proxy): too old resource version",
                "reason": "Expired", "code": 410}});
            return Ok(full(StatusCode::OK, format!("{event}\n")));
        }
        _ => {}
    }
    if state.out_of_rotation.load(Ordering::Relaxed) {
        return Ok(full(
            StatusCode::SERVICE_UNAVAILABLE,
            status_json(
                503,
                "ServiceUnavailable",
                "no healthy upstream: the server is restarting",
            ),
        ));
    }
    // A write (not faulted) is logged with what it did: an update's object is read first (a GET
    // with the caller's credentials), so the log can tell a write that left it as it was.
    let logged =
        fault.is_none() && !dry_run && matches!(class, RequestClass::Create | RequestClass::Write);
    let (method, path) = (req.method().to_string(), req.uri().path().to_string());
    let query = req.uri().query().map(str::to_string);
    let patch = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(patch_kind);
    let before = if logged && matches!(method.as_str(), "PATCH" | "PUT") {
        version_of(state, &path, req.headers().get(header::AUTHORIZATION)).await
    } else {
        None
    };
    let resp = forward(state, req).await?;
    if logged {
        let (parts, body) = resp.into_parts();
        let bytes = body.collect().await.map_err(|_| Reset)?.to_bytes();
        state.log.lock().expect("lock").answered(
            (&method, &path, query.as_deref(), patch),
            before,
            parts.status.as_u16(),
            &bytes,
        );
        return Ok(Response::from_parts(
            parts,
            Full::new(bytes).map_err(|e| match e {}).boxed_unsync(),
        ));
    }
    match fault {
        Some(Fault::Timeout) => Ok(full(
            StatusCode::GATEWAY_TIMEOUT,
            status_json(
                504,
                "Timeout",
                "the server was unable to return a response in the time allotted (it may have been applied)",
            ),
        )),
        Some(Fault::Reset) => Err(Reset),
        Some(Fault::WatchCut) if resp.status().is_success() => {
            let (parts, body) = resp.into_parts();
            let cut = body
                .into_data_stream()
                .take_until(tokio::time::sleep(state.cut_after))
                .map(|d| d.map(Frame::data));
            Ok(Response::from_parts(
                parts,
                BodyExt::boxed_unsync(StreamBody::new(cut)),
            ))
        }
        _ => Ok(resp),
    }
}

/// The resourceVersion of the object at `path` (a subresource's: its object's) now, read with
/// `authorization`; `None` when it cannot be read (it does not exist yet).
async fn version_of(
    state: &State,
    path: &str,
    authorization: Option<&HeaderValue>,
) -> Option<String> {
    let object_path = path.strip_suffix("/status").unwrap_or(path);
    let mut req = Request::get(object_path);
    if let Some(a) = authorization {
        req = req.header(header::AUTHORIZATION, a);
    }
    let req = req.body(kube::client::Body::empty()).ok()?;
    let resp = state.upstream.send(req).await.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let bytes = resp.into_body().collect().await.ok()?.to_bytes();
    let object: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    object["metadata"]["resourceVersion"]
        .as_str()
        .map(str::to_string)
}

/// Sends `req` to the upstream server; a server that cannot be reached answers 503 (nothing was
/// sent to it), a connection to it that broke closes the caller's.
async fn forward(state: &State, req: Request<Incoming>) -> Result<Response<ProxyBody>, Reset> {
    let (mut parts, body) = req.into_parts();
    let body = body.collect().await.map_err(|_| Reset)?.to_bytes();
    parts.headers.remove(header::HOST);
    let uri = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .parse()
        .expect("a path");
    parts.uri = uri;
    let req = Request::from_parts(parts, kube::client::Body::from(body.to_vec()));
    match state.upstream.send(req).await {
        Ok(resp) => {
            let (parts, body) = resp.into_parts();
            let body = body.map_err(std::io::Error::other).boxed_unsync();
            Ok(Response::from_parts(parts, body))
        }
        Err(e) => {
            let sent = aro_gitops::apply::retry::connection_failure(&e)
                != Some(aro_gitops::apply::retry::ConnectionFailure::NotSent);
            if sent {
                Err(Reset)
            } else {
                Ok(full(
                    StatusCode::SERVICE_UNAVAILABLE,
                    status_json(
                        503,
                        "ServiceUnavailable",
                        &format!("the upstream server cannot be reached: {e}"),
                    ),
                ))
            }
        }
    }
}

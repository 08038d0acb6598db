//! Fault injection (`--inject-faults RATE --fault-seed N`): a layer in front of the control plane's
//! request handler that fails a share of the resource requests the way a troubled API server does
//! (500, 409, 429 with `Retry-After`, a timeout, a watch that ends early), so tests can show the
//! agent survives them.
//!
//! Every fault but the dropped watch is answered *before* the request reaches the store: a faulted
//! write never takes effect. A dropped watch is served, then its stream ends after a short while
//! (as an API server ending a watch early), and the client must watch again.
//!
//! The decision for the n-th resource request is [`decide`]`(seed, n, ...)`, a pure function, so a
//! seed gives one sequence of decisions. Requests arriving concurrently take their numbers in the
//! order they arrive, so which request gets which decision depends on that order; each injected
//! fault is logged at debug with its number and kind. Discovery (`/api`, `/apis/...` lists of
//! resources), `/version` and the health endpoints are never faulted.

use super::error::{ApiError, Reason};
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use http::{HeaderValue, Method, Request, StatusCode, header};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// What to inject.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultConfig {
    /// The share of resource requests that fail (0 to 1).
    pub rate: f64,
    pub seed: u64,
    /// How long a timed-out request is held before its 504, and how long a dropped watch streams
    /// before it ends.
    pub delay: Duration,
}

impl FaultConfig {
    pub fn new(rate: f64, seed: u64) -> Self {
        FaultConfig {
            rate,
            seed,
            delay: Duration::from_millis(300),
        }
    }
}

/// One kind of injected fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    /// 500 InternalError.
    InternalError,
    /// 409 Conflict (updates, patches and deletes only).
    Conflict,
    /// 429 TooManyRequests with `Retry-After: 1`.
    TooManyRequests,
    /// Held for the delay, then 504 Timeout (not applied).
    Timeout,
    /// A watch served, then ended after the delay (watches only).
    DroppedWatch,
}

impl FaultKind {
    pub const ALL: [FaultKind; 5] = [
        FaultKind::InternalError,
        FaultKind::Conflict,
        FaultKind::TooManyRequests,
        FaultKind::Timeout,
        FaultKind::DroppedWatch,
    ];

    /// How the final line and the logs name it.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::InternalError => "500",
            FaultKind::Conflict => "409",
            FaultKind::TooManyRequests => "429",
            FaultKind::Timeout => "timeout",
            FaultKind::DroppedWatch => "dropped-watch",
        }
    }

    fn index(self) -> usize {
        FaultKind::ALL
            .iter()
            .position(|k| *k == self)
            .expect("every kind is listed")
    }
}

/// What a request is, as far as faults go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestClass {
    /// Discovery, version, health: never faulted.
    Exempt,
    Read,
    /// A POST: a create (a real API server answers a create 409 only for a name taken).
    Create,
    /// PUT, PATCH, DELETE.
    Write,
    Watch,
}

/// The class of a request from its method, path and query.
pub fn classify(method: &Method, path: &str, query: &str) -> RequestClass {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let resource = matches!(segs.as_slice(), ["api", _, _, ..] | ["apis", _, _, _, ..]);
    if !resource {
        return RequestClass::Exempt;
    }
    let watch = query
        .split('&')
        .any(|p| matches!(p, "watch=true" | "watch=1"));
    match *method {
        Method::GET | Method::HEAD if watch => RequestClass::Watch,
        Method::GET | Method::HEAD => RequestClass::Read,
        Method::POST => RequestClass::Create,
        _ => RequestClass::Write,
    }
}

/// splitmix64: a small, well-mixed step from one 64-bit state to the next.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The fault, if any, for the `n`-th faultable request from `seed` at `rate`: the same inputs
/// always give the same answer. Reads and creates may get 500, 429 or a timeout; updates,
/// patches and deletes also 409; watches 500, 429 or a dropped watch.
pub fn decide(seed: u64, n: u64, rate: f64, class: RequestClass) -> Option<FaultKind> {
    use FaultKind::*;
    let choices: &[FaultKind] = match class {
        RequestClass::Exempt => return None,
        RequestClass::Read | RequestClass::Create => &[InternalError, TooManyRequests, Timeout],
        RequestClass::Write => &[InternalError, Conflict, TooManyRequests, Timeout],
        RequestClass::Watch => &[InternalError, TooManyRequests, DroppedWatch],
    };
    pick(seed, n, rate, choices)
}

/// The choice, if any, for the `n`-th request from `seed` at `rate`, among `choices` (none when
/// empty): the same inputs always give the same answer. [`decide`] with the control plane's own
/// faults; a fault proxy in front of another API server picks among its own.
pub fn pick<T: Copy>(seed: u64, n: u64, rate: f64, choices: &[T]) -> Option<T> {
    let draw = splitmix64(seed ^ splitmix64(n));
    let uniform = (draw >> 11) as f64 / (1u64 << 53) as f64;
    if uniform >= rate || choices.is_empty() {
        return None;
    }
    Some(choices[(splitmix64(draw) % choices.len() as u64) as usize])
}

/// The injector of one control plane: the request count and the faults injected by kind.
#[derive(Debug)]
pub struct Faults {
    config: FaultConfig,
    next: AtomicU64,
    injected: [AtomicU64; 5],
}

/// How many faults of each kind were injected.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Faultable requests seen.
    pub requests: u64,
    pub by_kind: Vec<(FaultKind, u64)>,
}

impl FaultCounts {
    pub fn total(&self) -> u64 {
        self.by_kind.iter().map(|(_, n)| n).sum()
    }

    /// `faults injected: 12 of 240 requests (500: 3, 409: 2, 429: 4, timeout: 2, dropped-watch: 1)`.
    pub fn line(&self) -> String {
        let kinds: Vec<String> = self
            .by_kind
            .iter()
            .map(|(k, n)| format!("{}: {n}", k.as_str()))
            .collect();
        format!(
            "faults injected: {} of {} requests ({})",
            self.total(),
            self.requests,
            kinds.join(", ")
        )
    }
}

impl Faults {
    pub fn new(config: FaultConfig) -> Self {
        Faults {
            config,
            next: AtomicU64::new(0),
            injected: Default::default(),
        }
    }

    pub fn counts(&self) -> FaultCounts {
        FaultCounts {
            requests: self.next.load(Ordering::Relaxed),
            by_kind: FaultKind::ALL
                .iter()
                .map(|k| (*k, self.injected[k.index()].load(Ordering::Relaxed)))
                .collect(),
        }
    }

    /// Serves `req` through `inner`, or fails it as the next decision says.
    pub async fn serve<F, Fut>(&self, req: Request<Body>, inner: F) -> Response
    where
        F: FnOnce(Request<Body>) -> Fut,
        Fut: Future<Output = Response>,
    {
        let class = classify(
            req.method(),
            req.uri().path(),
            req.uri().query().unwrap_or(""),
        );
        if class == RequestClass::Exempt {
            return inner(req).await;
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let Some(kind) = decide(self.config.seed, n, self.config.rate, class) else {
            return inner(req).await;
        };
        self.injected[kind.index()].fetch_add(1, Ordering::Relaxed);
        tracing::debug!(
            request = n,
            fault = kind.as_str(),
            method = %req.method(),
            path = req.uri().path(),
            "fault injected"
        );
        let refuse = |e: ApiError| {
            super::http::json_response(
                StatusCode::from_u16(e.code).expect("a valid code"),
                &e.to_status(),
            )
        };
        match kind {
            FaultKind::InternalError => refuse(ApiError::internal(
                "injected fault: an internal error (--inject-faults); the request was not applied",
            )),
            FaultKind::Conflict => refuse(ApiError::new(
                409,
                Reason::Conflict,
                "injected fault: the object has been modified; please apply your changes to the latest version and try again (--inject-faults); the request was not applied",
            )),
            FaultKind::TooManyRequests => {
                let mut resp = refuse(ApiError::new(
                    429,
                    Reason::TooManyRequests,
                    "injected fault: too many requests, please try again later (--inject-faults)",
                ));
                resp.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                resp
            }
            FaultKind::Timeout => {
                tokio::time::sleep(self.config.delay).await;
                refuse(ApiError::new(
                    504,
                    Reason::Timeout,
                    "injected fault: the server was unable to return a response in the time allotted (--inject-faults); the request was not applied",
                ))
            }
            FaultKind::DroppedWatch => {
                let resp = inner(req).await;
                if !resp.status().is_success() {
                    return resp;
                }
                let (parts, body) = resp.into_parts();
                let until = tokio::time::sleep(self.config.delay);
                let cut = body.into_data_stream().take_until(until);
                (parts, Body::from_stream(cut)).into_response()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_one_sequence() {
        let run = |seed| -> Vec<Option<FaultKind>> {
            (0..1000)
                .map(|n| decide(seed, n, 0.2, RequestClass::Write))
                .collect()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn the_rate_is_the_share_of_faulted_requests() {
        let faulted = (0..20_000)
            .filter(|n| decide(7, *n, 0.2, RequestClass::Read).is_some())
            .count();
        assert!((3_600..4_400).contains(&faulted), "{faulted}");
        assert!((0..1000).all(|n| decide(7, n, 0.0, RequestClass::Write).is_none()));
        assert!((0..1000).all(|n| decide(7, n, 1.0, RequestClass::Write).is_some()));
    }

    #[test]
    fn each_class_gets_only_its_faults() {
        let kinds = |class| -> std::collections::BTreeSet<FaultKind> {
            (0..2000).filter_map(|n| decide(1, n, 1.0, class)).collect()
        };
        use FaultKind::*;
        assert_eq!(
            kinds(RequestClass::Read).into_iter().collect::<Vec<_>>(),
            [InternalError, TooManyRequests, Timeout]
        );
        assert_eq!(
            kinds(RequestClass::Create).into_iter().collect::<Vec<_>>(),
            [InternalError, TooManyRequests, Timeout]
        );
        assert_eq!(
            kinds(RequestClass::Write).into_iter().collect::<Vec<_>>(),
            [InternalError, Conflict, TooManyRequests, Timeout]
        );
        assert_eq!(
            kinds(RequestClass::Watch).into_iter().collect::<Vec<_>>(),
            [InternalError, TooManyRequests, DroppedWatch]
        );
        assert!(kinds(RequestClass::Exempt).is_empty());
    }

    #[test]
    fn discovery_and_health_are_exempt() {
        let c = |m: Method, p: &str, q: &str| classify(&m, p, q);
        assert_eq!(c(Method::GET, "/api/v1", ""), RequestClass::Exempt);
        assert_eq!(c(Method::GET, "/apis/apps/v1", ""), RequestClass::Exempt);
        assert_eq!(c(Method::GET, "/apis", ""), RequestClass::Exempt);
        assert_eq!(c(Method::GET, "/healthz", ""), RequestClass::Exempt);
        assert_eq!(c(Method::GET, "/version", ""), RequestClass::Exempt);
        assert_eq!(
            c(Method::GET, "/api/v1/namespaces/a/configmaps", "limit=500"),
            RequestClass::Read
        );
        assert_eq!(
            c(
                Method::GET,
                "/apis/x.io/v1/things",
                "watch=true&resourceVersion=3"
            ),
            RequestClass::Watch
        );
        assert_eq!(
            c(
                Method::PATCH,
                "/apis/x.io/v1/namespaces/a/things/b",
                "fieldManager=m"
            ),
            RequestClass::Write
        );
        assert_eq!(
            c(Method::DELETE, "/api/v1/namespaces/a", ""),
            RequestClass::Write
        );
    }

    #[test]
    fn the_line_counts_by_kind() {
        let f = Faults::new(FaultConfig::new(0.5, 1));
        f.injected[FaultKind::Conflict.index()].store(2, Ordering::Relaxed);
        f.injected[FaultKind::Timeout.index()].store(1, Ordering::Relaxed);
        f.next.store(10, Ordering::Relaxed);
        assert_eq!(
            f.counts().line(),
            "faults injected: 3 of 10 requests (500: 0, 409: 2, 429: 0, timeout: 1, dropped-watch: 0)"
        );
    }

    fn faulty_control_plane(rate: f64) -> (tempfile::TempDir, super::super::ControlPlane) {
        let dir = tempfile::tempdir().unwrap();
        let mut config = super::super::Config::new(dir.path());
        config.preload_crds = false;
        config.faults = Some(FaultConfig {
            delay: Duration::from_millis(10),
            ..FaultConfig::new(rate, 3)
        });
        let cp = super::super::ControlPlane::open(config).unwrap();
        (dir, cp)
    }

    fn create(name: &str) -> Request<Body> {
        let body = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name}, "data": {"a": "b"}});
        Request::post("/api/v1/namespaces/default/configmaps")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap()
    }

    #[tokio::test]
    async fn a_faulted_write_is_not_applied() {
        use tower::ServiceExt;
        let (_dir, cp) = faulty_control_plane(1.0);
        let mut retry_after = 0;
        for i in 0..30 {
            let resp = cp
                .router_with_faults()
                .oneshot(create(&format!("c{i}")))
                .await
                .unwrap();
            let code = resp.status().as_u16();
            assert!([500, 429, 504].contains(&code), "{code}");
            if code == 429 {
                assert_eq!(resp.headers()[header::RETRY_AFTER], "1");
                retry_after += 1;
            }
        }
        assert!(retry_after > 0);
        let counts = cp.faults_injected().unwrap();
        assert_eq!((counts.requests, counts.total()), (30, 30));
        // The in-process client has no faults, and sees nothing written.
        let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(cp.client(), "default");
        let list = api.list(&Default::default()).await.unwrap();
        assert!(list.items.is_empty(), "{:?}", list.items);
    }

    #[tokio::test]
    async fn a_dropped_watch_ends_after_the_delay() {
        use tower::ServiceExt;
        let (_dir, cp) = faulty_control_plane(1.0);
        let watch = || {
            Request::get("/api/v1/namespaces/default/configmaps?watch=true")
                .body(Body::empty())
                .unwrap()
        };
        let resp = loop {
            let resp = cp.router_with_faults().oneshot(watch()).await.unwrap();
            if resp.status().is_success() {
                break resp;
            }
        };
        let ended = tokio::time::timeout(
            Duration::from_secs(10),
            http_body_util::BodyExt::collect(resp.into_body()),
        )
        .await;
        assert!(ended.is_ok(), "the watch was not dropped");
        assert_eq!(
            cp.faults_injected().unwrap().by_kind[FaultKind::DroppedWatch.index()].1,
            1
        );
    }
}

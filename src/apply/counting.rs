//! Counts the requests the agent sends, split into reads and writes, so a run can prove that a
//! second pass over an unchanged repository writes nothing.

use http::{Method, Request};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// Shared counters of requests sent through a client.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter {
    reads: Arc<AtomicU64>,
    writes: Arc<AtomicU64>,
    /// Reads by what they ask for (see [`Read`]).
    lists: Arc<AtomicU64>,
    gets: Arc<AtomicU64>,
    watches: Arc<AtomicU64>,
    /// Requests by Kubernetes verb, in the order of [`VERBS`] (dry runs included, as the API
    /// server counts them).
    verbs: Arc<[AtomicU64; 7]>,
    /// Requests by `METHOD path` (query left out), for tests and benchmarks that check how state
    /// is read (e.g. one LIST per kind, no per-object GET). The further pages of a paged LIST
    /// (a `continue` token in the query) count under `METHOD path (continued)`, so one LIST
    /// stays one entry however many pages it takes.
    by_path: Arc<Mutex<BTreeMap<String, u64>>>,
}

impl RequestCounter {
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// POST, PUT, PATCH and DELETE requests, but dry runs (`dryRun=All`: nothing is stored),
    /// which count as reads.
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    /// LIST requests (first pages; a further page of the same LIST is not counted again).
    pub fn lists(&self) -> u64 {
        self.lists.load(Ordering::Relaxed)
    }

    /// Reads of one object or of the API's discovery documents.
    pub fn gets(&self) -> u64 {
        self.gets.load(Ordering::Relaxed)
    }

    /// WATCH requests (each start or resumption of a watch).
    pub fn watches(&self) -> u64 {
        self.watches.load(Ordering::Relaxed)
    }

    /// Requests by Kubernetes verb (get, list, watch, create, update, patch, delete), dry runs
    /// included; further pages of a LIST are not counted again.
    pub fn verbs(&self) -> [(&'static str, u64); 7] {
        std::array::from_fn(|i| (VERBS[i], self.verbs[i].load(Ordering::Relaxed)))
    }

    /// How many requests went to each `METHOD path` (query left out; further pages of a LIST
    /// under `METHOD path (continued)`).
    pub fn requests(&self) -> BTreeMap<String, u64> {
        self.by_path.lock().expect("counter lock").clone()
    }

    fn record_path(&self, method: &Method, path: &str, query: Option<&str>) {
        let continued = query.is_some_and(|q| {
            q.split('&')
                .any(|p| p.strip_prefix("continue=").is_some_and(|t| !t.is_empty()))
        });
        let entry = if continued {
            format!("{method} {path} (continued)")
        } else if is_dry_run(query) {
            format!("{method} {path} (dry run)")
        } else {
            format!("{method} {path}")
        };
        *self
            .by_path
            .lock()
            .expect("counter lock")
            .entry(entry)
            .or_default() += 1;
    }

    fn record(&self, method: &Method, path: &str, query: Option<&str>) {
        if *method == Method::GET {
            let counter = match read_kind(path, query) {
                Read::List => Some(&self.lists),
                Read::ListContinued => None,
                Read::Get => Some(&self.gets),
                Read::Watch => Some(&self.watches),
            };
            if let Some(c) = counter {
                c.fetch_add(1, Ordering::Relaxed);
            }
        }
        if let Some(i) = verb(method, path, query) {
            self.verbs[i].fetch_add(1, Ordering::Relaxed);
        }
        let counter = if [Method::POST, Method::PUT, Method::PATCH, Method::DELETE].contains(method)
            && !is_dry_run(query)
        {
            &self.writes
        } else {
            &self.reads
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn layer(&self) -> CountLayer {
        CountLayer(self.clone())
    }
}

/// The Kubernetes verbs the agent's requests are counted under (metrics).
pub const VERBS: [&str; 7] = [
    "get", "list", "watch", "create", "update", "patch", "delete",
];

/// The index in [`VERBS`] of a request's verb; none for a further page of a LIST (one LIST is
/// one request however many pages it takes) and for methods Kubernetes has no verb for.
fn verb(method: &Method, path: &str, query: Option<&str>) -> Option<usize> {
    let name = match *method {
        Method::GET => match read_kind(path, query) {
            Read::Get => "get",
            Read::List => "list",
            Read::ListContinued => return None,
            Read::Watch => "watch",
        },
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => return None,
    };
    VERBS.iter().position(|v| *v == name)
}

/// What a GET asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    /// A collection (the first page).
    List,
    /// A further page of a collection (a `continue` token).
    ListContinued,
    /// One object (or its subresource), or a discovery document.
    Get,
    /// A watch of a collection (`watch=true`, or `watch=1`).
    Watch,
}

fn query_has(query: Option<&str>, pred: impl Fn(&str) -> bool) -> bool {
    query.is_some_and(|q| q.split('&').any(pred))
}

/// Tells a GET of `path` apart by the API's URL layout: after `/api/v1` or `/apis/GROUP/VERSION`
/// (and `namespaces/NS` for a namespaced kind) one segment names a collection, two or more an
/// object (and its subresource). Anything else (discovery, `/version`) is a GET.
fn read_kind(path: &str, query: Option<&str>) -> Read {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let rest = match segments.as_slice() {
        ["api", _version, rest @ ..] => rest,
        ["apis", _group, _version, rest @ ..] => rest,
        _ => return Read::Get,
    };
    // `namespaces/NS/...` scopes a namespaced kind, except a Namespace's own subresources.
    let rest = match rest {
        ["namespaces", _ns, "status" | "finalize"] => rest,
        ["namespaces", _ns, scoped @ ..] if !scoped.is_empty() => scoped,
        _ => rest,
    };
    match rest.len() {
        1 if query_has(query, |p| p == "watch=true" || p == "watch=1") => Read::Watch,
        1 if query_has(query, |p| {
            p.strip_prefix("continue=").is_some_and(|t| !t.is_empty())
        }) =>
        {
            Read::ListContinued
        }
        1 => Read::List,
        _ => Read::Get,
    }
}

/// A request with `dryRun=All`: judged by the server, stored nowhere.
fn is_dry_run(query: Option<&str>) -> bool {
    query.is_some_and(|q| q.split('&').any(|p| p == "dryRun=All"))
}

/// A tower layer that records every request in a [`RequestCounter`].
#[derive(Debug, Clone)]
pub struct CountLayer(RequestCounter);

impl<S> Layer<S> for CountLayer {
    type Service = Count<S>;
    fn layer(&self, inner: S) -> Count<S> {
        Count {
            inner,
            counter: self.0.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Count<S> {
    inner: S,
    counter: RequestCounter,
}

impl<S, B> Service<Request<B>> for Count<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        self.counter
            .record(req.method(), req.uri().path(), req.uri().query());
        self.counter
            .record_path(req.method(), req.uri().path(), req.uri().query());
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_reads_are_told_apart() {
        let c = RequestCounter::default();
        for m in [
            Method::GET,
            Method::PATCH,
            Method::POST,
            Method::GET,
            Method::DELETE,
        ] {
            c.record(&m, "/api/v1/namespaces/a/configmaps/b", None);
        }
        assert_eq!((c.reads(), c.writes()), (2, 3));
        c.record(
            &Method::PATCH,
            "/api/v1/namespaces/a/configmaps/b",
            Some("fieldManager=a&dryRun=All&force=true"),
        );
        assert_eq!((c.reads(), c.writes()), (3, 3), "a dry run stores nothing");
    }

    #[test]
    fn requests_count_under_their_kubernetes_verb() {
        let c = RequestCounter::default();
        let one = "/api/v1/namespaces/a/configmaps/b";
        let all = "/api/v1/namespaces/a/configmaps";
        c.record(&Method::GET, one, None);
        c.record(&Method::GET, all, Some("limit=500"));
        c.record(&Method::GET, all, Some("limit=500&continue=abc"));
        c.record(&Method::GET, all, Some("watch=true"));
        c.record(&Method::POST, all, None);
        c.record(&Method::PUT, one, None);
        c.record(&Method::PATCH, one, Some("dryRun=All"));
        c.record(&Method::PATCH, one, None);
        c.record(&Method::DELETE, one, None);
        assert_eq!(
            c.verbs(),
            [
                ("get", 1),
                ("list", 1),
                ("watch", 1),
                ("create", 1),
                ("update", 1),
                ("patch", 2),
                ("delete", 1)
            ]
        );
    }

    #[test]
    fn further_pages_of_a_list_count_apart() {
        let c = RequestCounter::default();
        let path = "/apis/g/v1/things";
        c.record_path(&Method::GET, path, Some("limit=500"));
        c.record_path(&Method::GET, path, Some("limit=500&continue=abc"));
        c.record_path(&Method::GET, path, Some("continue=&limit=500"));
        let r = c.requests();
        assert_eq!(r["GET /apis/g/v1/things"], 2);
        assert_eq!(r["GET /apis/g/v1/things (continued)"], 1);
    }

    #[test]
    fn reads_are_told_apart_by_what_they_ask_for() {
        let cases = [
            ("/api/v1/configmaps", None, Read::List),
            (
                "/api/v1/namespaces/ns/configmaps",
                Some("limit=500"),
                Read::List,
            ),
            (
                "/api/v1/namespaces/ns/configmaps",
                Some("limit=500&continue=x"),
                Read::ListContinued,
            ),
            ("/api/v1/namespaces/ns/configmaps/a", None, Read::Get),
            ("/apis/g/v1/namespaces/ns/things/a/status", None, Read::Get),
            (
                "/apis/g/v1/things",
                Some("watch=true&resourceVersion=4"),
                Read::Watch,
            ),
            ("/api/v1/namespaces", None, Read::List),
            ("/api/v1/namespaces/ns", None, Read::Get),
            ("/api/v1/namespaces/ns/status", None, Read::Get),
            ("/apis/g/v1", None, Read::Get),
            ("/version", None, Read::Get),
        ];
        for (path, query, want) in cases {
            assert_eq!(read_kind(path, query), want, "{path} {query:?}");
        }
        let c = RequestCounter::default();
        c.record(&Method::GET, "/api/v1/namespaces/ns/configmaps", None);
        c.record(
            &Method::GET,
            "/api/v1/namespaces/ns/configmaps",
            Some("continue=x"),
        );
        c.record(&Method::GET, "/api/v1/namespaces/ns/configmaps/a", None);
        c.record(&Method::GET, "/api/v1/configmaps", Some("watch=true"));
        c.record(&Method::PATCH, "/api/v1/namespaces/ns/configmaps/a", None);
        assert_eq!((c.lists(), c.gets(), c.watches()), (1, 1, 1));
        assert_eq!((c.reads(), c.writes()), (4, 1));
    }
}

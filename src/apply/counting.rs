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

    fn record(&self, method: &Method, query: Option<&str>) {
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
        self.counter.record(req.method(), req.uri().query());
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
            c.record(&m, None);
        }
        assert_eq!((c.reads(), c.writes()), (2, 3));
        c.record(&Method::PATCH, Some("fieldManager=a&dryRun=All&force=true"));
        assert_eq!((c.reads(), c.writes()), (3, 3), "a dry run stores nothing");
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
}

//! Retries of the requests an API server failed for a passing reason (429 with its `Retry-After`,
//! 500, 503, 504, and a 409 of a forced server-side apply, which no field owner can cause), so one
//! such answer never fails a unit. Only requests whose body can be sent again are retried; what the
//! agent writes is idempotent (server-side apply, deletes that take 404 as done, writes under a
//! `resourceVersion` precondition), so a retried write never creates anything twice.
//!
//! kube's own clients built from a kubeconfig retry 429, 503 and 504 already; this layer sits in
//! front of the embedded control plane, whose in-process client has no retry of its own.

use futures::future::BoxFuture;
use http::{Method, Request, Response, StatusCode, header};
use kube::client::Body;
use std::task::{Context, Poll};
use std::time::Duration;
use tower::{Layer, Service, ServiceExt};

/// How many times one request is sent again at most.
pub const MAX_RETRIES: u32 = 8;

/// The longest wait before a retry (a longer `Retry-After` is cut to it).
const MAX_DELAY: Duration = Duration::from_secs(2);

/// How long to wait before sending a request again after `status`, or `None` not to. `attempt`:
/// the retries already made. `forced_apply`: the request is a server-side apply with `force`.
pub fn retry_delay(
    status: StatusCode,
    forced_apply: bool,
    retry_after: Option<&str>,
    attempt: u32,
) -> Option<Duration> {
    if attempt >= MAX_RETRIES {
        return None;
    }
    let backoff = (Duration::from_millis(20) * 2u32.pow(attempt)).min(MAX_DELAY);
    match status {
        StatusCode::TOO_MANY_REQUESTS => Some(
            retry_after
                .and_then(|s| s.trim().parse::<u64>().ok())
                .map_or(backoff, |secs| Duration::from_secs(secs).min(MAX_DELAY)),
        ),
        StatusCode::INTERNAL_SERVER_ERROR
        | StatusCode::SERVICE_UNAVAILABLE
        | StatusCode::GATEWAY_TIMEOUT => Some(backoff),
        StatusCode::CONFLICT if forced_apply => Some(backoff),
        _ => None,
    }
}

fn is_forced_apply<B>(req: &Request<B>) -> bool {
    req.method() == Method::PATCH
        && req
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|c| c.as_bytes().starts_with(b"application/apply-patch"))
        && req
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|p| p == "force=true"))
}

/// A copy of `req` to send again, when its body can be copied.
fn copy(req: &Request<Body>) -> Option<Request<Body>> {
    let body = req.body().try_clone()?;
    let mut out = Request::new(body);
    *out.method_mut() = req.method().clone();
    *out.uri_mut() = req.uri().clone();
    *out.version_mut() = req.version();
    *out.headers_mut() = req.headers().clone();
    *out.extensions_mut() = req.extensions().clone();
    Some(out)
}

/// The layer retrying transient API errors (see the module).
#[derive(Debug, Clone, Default)]
pub struct RetryLayer;

impl<S> Layer<S> for RetryLayer {
    type Service = Retry<S>;
    fn layer(&self, inner: S) -> Retry<S> {
        Retry { inner }
    }
}

#[derive(Debug, Clone)]
pub struct Retry<S> {
    inner: S,
}

impl<S, B> Service<Request<Body>> for Retry<S>
where
    S: Service<Request<Body>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Response<B>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        // The service made ready is the one to call first; a clone takes its place.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            let forced_apply = is_forced_apply(&req);
            let mut req = req;
            let mut attempt = 0;
            loop {
                let again = copy(&req);
                let (method, path) = (req.method().clone(), req.uri().path().to_string());
                let resp = inner.call(req).await?;
                let Some(again) = again else {
                    return Ok(resp);
                };
                let retry_after = resp
                    .headers()
                    .get(header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok());
                let Some(delay) = retry_delay(resp.status(), forced_apply, retry_after, attempt)
                else {
                    return Ok(resp);
                };
                tracing::debug!(%method, %path, status = resp.status().as_u16(), attempt, ?delay, "retrying a request the API server failed for a passing reason");
                drop(resp);
                tokio::time::sleep(delay).await;
                attempt += 1;
                req = again;
                inner = inner.ready_oneshot().await?;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passing_failures_are_retried_with_growing_waits() {
        let d = |status: u16, forced, after, attempt| {
            retry_delay(
                StatusCode::from_u16(status).unwrap(),
                forced,
                after,
                attempt,
            )
        };
        assert_eq!(d(500, false, None, 0), Some(Duration::from_millis(20)));
        assert_eq!(d(504, false, None, 2), Some(Duration::from_millis(80)));
        assert_eq!(d(503, false, None, 7), Some(MAX_DELAY));
        assert_eq!(d(500, false, None, MAX_RETRIES), None);
        assert_eq!(d(429, false, Some("1"), 0), Some(Duration::from_secs(1)));
        assert_eq!(d(429, false, Some("600"), 0), Some(MAX_DELAY));
        assert_eq!(d(429, false, None, 1), Some(Duration::from_millis(40)));
        assert_eq!(d(409, true, None, 0), Some(Duration::from_millis(20)));
    }

    #[test]
    fn answers_that_say_something_are_not_retried() {
        for status in [200, 201, 400, 403, 404, 410, 422] {
            assert_eq!(
                retry_delay(StatusCode::from_u16(status).unwrap(), true, None, 0),
                None,
                "{status}"
            );
        }
        // A 409 of anything but a forced apply is a real conflict (a precondition, an existing name).
        assert_eq!(retry_delay(StatusCode::CONFLICT, false, None, 0), None);
    }

    #[test]
    fn only_a_forced_apply_counts_as_one() {
        let req = |method: Method, ct: &str, uri: &str| {
            Request::builder()
                .method(method)
                .uri(uri)
                .header(header::CONTENT_TYPE, ct)
                .body(())
                .unwrap()
        };
        let apply = "application/apply-patch+yaml";
        assert!(is_forced_apply(&req(
            Method::PATCH,
            apply,
            "/api/v1/namespaces/a/configmaps/b?fieldManager=m&force=true"
        )));
        assert!(!is_forced_apply(&req(
            Method::PATCH,
            apply,
            "/api/v1/namespaces/a/configmaps/b?fieldManager=m"
        )));
        assert!(!is_forced_apply(&req(
            Method::PATCH,
            "application/merge-patch+json",
            "/api/v1/namespaces/a/configmaps/b?force=true"
        )));
    }
}

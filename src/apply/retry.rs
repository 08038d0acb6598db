//! Retries of the requests an API server failed for a passing reason (429 with its `Retry-After`,
//! 500, 503, 504, and a 409 of a forced server-side apply, which no field owner can cause), and of
//! those a connection failure cut off (refused while the server restarts, reset, closed before the
//! answer, timed out), so one such failure never fails a unit. Only requests whose body can be
//! sent again are retried; what the agent writes is idempotent (server-side apply, deletes that
//! take 404 as done, writes under a `resourceVersion` precondition), so a retried write never
//! changes anything twice. A create (POST) cut off after it was sent is not sent again: the server
//! may have made the object.
//!
//! Every client of the agent has this layer ([`super::client`]); kube's own retry (429, 503, 504)
//! is turned off there, so the two never compound.

use futures::future::BoxFuture;
use http::{Method, Request, Response, StatusCode, header};
use kube::client::Body;
use std::error::Error as StdError;
use std::io::ErrorKind;
use std::task::{Context, Poll};
use std::time::Duration;
use tower::{BoxError, Layer, Service, ServiceExt};

/// The retry plan of kube requests.
const PLAN: crate::retry::RetryPlan = crate::retry::KUBE;
/// How many times one request is sent again at most.
pub const MAX_RETRIES: u32 = PLAN.max_retries;

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
    let backoff = PLAN.delay(attempt + 1, None, 0.0);
    match status {
        StatusCode::TOO_MANY_REQUESTS => Some(
            retry_after
                .and_then(|s| s.trim().parse::<u64>().ok())
                .map_or(backoff, |secs| {
                    PLAN.delay(attempt + 1, Some(Duration::from_secs(secs)), 0.0)
                }),
        ),
        StatusCode::INTERNAL_SERVER_ERROR
        | StatusCode::SERVICE_UNAVAILABLE
        | StatusCode::GATEWAY_TIMEOUT => Some(backoff),
        StatusCode::CONFLICT if forced_apply => Some(backoff),
        _ => None,
    }
}

/// How long to wait before sending a request again after its connection failed, or `None` not
/// to. `failure`: what [`connection_failure`] made of the error; `method`: the request's.
pub fn retry_after_error(
    failure: Option<ConnectionFailure>,
    method: &Method,
    attempt: u32,
) -> Option<Duration> {
    if attempt >= MAX_RETRIES {
        return None;
    }
    match failure? {
        ConnectionFailure::NotSent => {}
        // A create the server may have received: sending it again could make a second object.
        ConnectionFailure::CutOff if method == Method::POST => return None,
        ConnectionFailure::CutOff => {}
    }
    Some(PLAN.delay(attempt + 1, None, 0.0))
}

/// A failed connection, as far as sending the request again goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionFailure {
    /// No connection was made (refused, unreachable, timed out connecting): the server never saw
    /// the request.
    NotSent,
    /// The connection broke after the request may have been sent (reset, closed before the
    /// answer, timed out reading it).
    CutOff,
}

/// What an error of the HTTP client says about the connection: `None` for anything that is not a
/// passing connection failure (a TLS refusal, a bad certificate, an auth plugin that failed).
pub fn connection_failure(error: &(dyn StdError + 'static)) -> Option<ConnectionFailure> {
    let mut connect = false;
    let mut cut = false;
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(e) = e.downcast_ref::<hyper_util::client::legacy::Error>() {
            connect |= e.is_connect();
        }
        if let Some(e) = e.downcast_ref::<hyper::Error>() {
            cut |= e.is_incomplete_message() || e.is_closed() || e.is_canceled() || e.is_timeout();
        }
        if let Some(e) = e.downcast_ref::<std::io::Error>() {
            match e.kind() {
                ErrorKind::ConnectionRefused
                | ErrorKind::ConnectionReset
                | ErrorKind::ConnectionAborted
                | ErrorKind::BrokenPipe
                | ErrorKind::UnexpectedEof
                | ErrorKind::NotConnected
                | ErrorKind::TimedOut => cut = true,
                _ => return None,
            }
        }
        next = e.source();
    }
    match (connect, cut) {
        (true, true) => Some(ConnectionFailure::NotSent),
        (false, true) => Some(ConnectionFailure::CutOff),
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
    S::Error: Into<BoxError> + Send + 'static,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Response<B>, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
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
                let resp = match inner.call(req).await {
                    Ok(resp) => resp,
                    Err(e) => {
                        let e: BoxError = e.into();
                        let failure = connection_failure(&*e);
                        let (Some(again), Some(delay)) =
                            (again, retry_after_error(failure, &method, attempt))
                        else {
                            return Err(e);
                        };
                        tracing::debug!(%method, %path, error = %e, attempt, ?delay, "retrying a request whose connection failed");
                        tokio::time::sleep(delay).await;
                        attempt += 1;
                        req = again;
                        inner = inner.ready_oneshot().await.map_err(Into::into)?;
                        continue;
                    }
                };
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
                inner = inner.ready_oneshot().await.map_err(Into::into)?;
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
        assert_eq!(d(503, false, None, 7), Some(PLAN.max_retry_after));
        assert_eq!(d(500, false, None, MAX_RETRIES), None);
        assert_eq!(d(429, false, Some("1"), 0), Some(Duration::from_secs(1)));
        assert_eq!(d(429, false, Some("600"), 0), Some(PLAN.max_retry_after));
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
    fn a_cut_connection_is_retried_unless_a_create_may_have_arrived() {
        use ConnectionFailure::*;
        let get = Method::GET;
        assert_eq!(
            retry_after_error(Some(NotSent), &Method::POST, 0),
            Some(Duration::from_millis(20))
        );
        assert_eq!(
            retry_after_error(Some(CutOff), &Method::PATCH, 1),
            Some(Duration::from_millis(40))
        );
        assert_eq!(retry_after_error(Some(CutOff), &Method::POST, 0), None);
        assert_eq!(retry_after_error(Some(NotSent), &get, MAX_RETRIES), None);
        assert_eq!(retry_after_error(None, &get, 0), None);
    }

    #[test]
    fn connection_failures_are_told_from_other_errors() {
        let io = |kind| -> BoxError { Box::new(std::io::Error::new(kind, "x")) };
        assert_eq!(
            connection_failure(&*io(ErrorKind::ConnectionReset)),
            Some(ConnectionFailure::CutOff)
        );
        assert_eq!(
            connection_failure(&*io(ErrorKind::UnexpectedEof)),
            Some(ConnectionFailure::CutOff)
        );
        // A TLS refusal or a bad certificate comes as invalid data: sending again cannot help.
        assert_eq!(connection_failure(&*io(ErrorKind::InvalidData)), None);
        assert_eq!(
            connection_failure(&*BoxError::from("an auth plugin failed")),
            None
        );
    }

    #[tokio::test]
    async fn a_refused_connection_is_not_sent_and_a_reset_one_is_cut_off() {
        use hyper_util::client::legacy::Client;
        use hyper_util::rt::TokioExecutor;
        let client: Client<_, http_body_util::Empty<bytes::Bytes>> =
            Client::builder(TokioExecutor::new()).build_http();
        // A port nothing listens on: bound, then closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let uri: http::Uri = format!("http://127.0.0.1:{port}/api").parse().unwrap();
        let e: BoxError = client.get(uri).await.unwrap_err().into();
        assert_eq!(
            connection_failure(&*e),
            Some(ConnectionFailure::NotSent),
            "{e:?}"
        );
        // A server that reads the request and closes the connection without answering.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).await;
        });
        let uri: http::Uri = format!("http://{addr}/api").parse().unwrap();
        let e: BoxError = client.get(uri).await.unwrap_err().into();
        assert_eq!(
            connection_failure(&*e),
            Some(ConnectionFailure::CutOff),
            "{e:?}"
        );
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

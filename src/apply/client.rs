//! Every `kube::Client` the agent uses is built here, so each has the same layers in front of
//! the API server: the agent's retry ([`super::retry`]) outermost, then the request counting
//! ([`super::counting`]) of every attempt, then the transport: kube's own HTTP stack for a real
//! cluster (TLS, auth and its refresh, kube's headers and tracing), or the embedded control
//! plane's in-process router.
//!
//! kube's stack has a retry of its own (429, 503, 504, up to 15 times, `Retry-After` honoured up
//! to 1000 s). It is turned off here: under the agent's retry the two would compound (8 × 15
//! tries of one request), and the agent's also retries 500s and cut connections.

use super::RequestCounter;
use super::retry::RetryLayer;
use http::{Request, Response};
use kube::client::Body;
use tower::{BoxError, Service};

/// Requests waiting for kube's stack at most, per client (as kube's own buffer in front of it).
const BUFFER: usize = 1024;

/// A client of the API server `config` names, through kube's HTTP stack, counted in `counter`.
pub fn from_config(
    mut config: kube::Config,
    counter: &RequestCounter,
) -> Result<kube::Client, kube::Error> {
    config.default_retry = false;
    Ok(kube::client::ClientBuilder::try_from(config)?
        .with_layer(&counter.layer())
        // kube's stack is one boxed service; the retry sends a request again from its own task,
        // so it needs a handle it can clone.
        .with_layer(&tower::buffer::BufferLayer::new(BUFFER))
        .with_layer(&RetryLayer)
        .build())
}

/// A client over `service` (an in-process API server), counted in `counter`.
pub fn over<S, B>(service: S, counter: &RequestCounter) -> kube::Client
where
    S: Service<Request<Body>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError> + Send + 'static,
    B: hyper::body::Body<Data = hyper::body::Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let service = tower::ServiceBuilder::new()
        .layer(RetryLayer)
        .layer(counter.layer())
        .service(service);
    kube::Client::new(service, "default")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer of `status`, counting the calls.
    async fn server(statuses: Vec<u16>) -> (String, std::sync::Arc<std::sync::atomic::AtomicU32>) {
        use std::sync::atomic::{AtomicU32, Ordering};
        let calls = std::sync::Arc::new(AtomicU32::new(0));
        let seen = calls.clone();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new().fallback(move || {
            let seen = seen.clone();
            let statuses = statuses.clone();
            async move {
                let n = seen.fetch_add(1, Ordering::SeqCst) as usize;
                let code = statuses[n.min(statuses.len() - 1)];
                let status = serde_json::json!({"kind": "Status", "apiVersion": "v1",
                    "status": if code == 200 {"Success"} else {"Failure"}, "code": code,
                    "message": "m", "metadata": {}});
                (
                    http::StatusCode::from_u16(code).unwrap(),
                    [
                        (http::header::CONTENT_TYPE, "application/json"),
                        (http::header::RETRY_AFTER, "0"),
                    ],
                    status.to_string(),
                )
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (url, calls)
    }

    #[tokio::test]
    async fn a_client_from_a_config_retries_once_per_attempt_and_counts_each() {
        use std::sync::atomic::Ordering;
        let (url, calls) = server(vec![503, 429, 500, 200]).await;
        let counter = RequestCounter::default();
        let client = from_config(kube::Config::new(url.parse().unwrap()), &counter).unwrap();
        let req = Request::get("/api/v1/namespaces/a/configmaps/b")
            .body(Vec::new())
            .unwrap();
        let status: kube::core::Status = client.request(req).await.unwrap();
        assert_eq!(status.code, 200);
        // Four tries: kube's own retry would have made more of the 503 and 429 under ours.
        assert_eq!(calls.load(Ordering::SeqCst), 4);
        assert_eq!(counter.reads(), 4);
    }

    #[tokio::test]
    async fn a_client_gives_up_after_the_last_retry() {
        use std::sync::atomic::Ordering;
        let (url, calls) = server(vec![503]).await;
        let counter = RequestCounter::default();
        let client = from_config(kube::Config::new(url.parse().unwrap()), &counter).unwrap();
        let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(client, "a");
        let e = api.get("b").await.unwrap_err();
        assert!(
            matches!(e, kube::Error::Api(ref s) if s.code == 503),
            "{e:?}"
        );
        assert_eq!(
            calls.load(Ordering::SeqCst),
            super::super::retry::MAX_RETRIES + 1
        );
    }
}

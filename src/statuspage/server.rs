//! The router: the index, a page per cluster, the live updates (server-sent events), the embedded
//! assets and the snapshot as JSON. Read-only (GET only), with a Content-Security-Policy that
//! allows the page's own script and style and nothing else.

use super::feed::Feed;
use super::html::{self, Query};
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::StreamExt;
use std::convert::Infallible;

/// The Content-Security-Policy of every response.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:";

const SCRIPT: &str = include_str!("assets/status.js");
const STYLE: &str = include_str!("assets/status.css");

/// The status page's routes over `feed`.
pub fn router(feed: Feed) -> axum::Router {
    axum::Router::new()
        .route("/", get(index))
        .route("/clusters/{namespace}/{name}", get(cluster))
        .route("/units/{*unit}", get(unit))
        .route("/rollout", get(rollout))
        .route("/events", get(events))
        .route("/api/status", get(api))
        .route(
            "/assets/status.js",
            get(|| async { asset(SCRIPT, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/assets/status.css",
            get(|| async { asset(STYLE, "text/css; charset=utf-8") }),
        )
        .fallback(|| async { page_response(StatusCode::NOT_FOUND, not_found("No such page.")) })
        .layer(axum::middleware::map_response(secure))
        .with_state(feed)
}

/// Binds `addr` and serves the page for the life of the returned server.
pub async fn serve(
    feed: Feed,
    addr: std::net::SocketAddr,
) -> std::io::Result<crate::serving::Server> {
    crate::serving::serve(router(feed), addr, "status page").await
}

async fn secure(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

fn page_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

fn not_found(what: &str) -> String {
    html::layout(
        "Not found",
        0,
        "<h1><a href=\"/\">aro-gitops</a> status</h1>",
        &format!(
            "<p>{}</p><p><a href=\"/\">All clusters</a></p>",
            html::text(what)
        ),
    )
}

async fn index(
    State(feed): State<Feed>,
    query: Result<axum::extract::Query<Query>, axum::extract::rejection::QueryRejection>,
) -> Response {
    // A malformed query (e.g. `?page=x`) shows the first page rather than an error.
    let query = query.map(|q| q.0).unwrap_or_default();
    let snapshot = feed.snapshot();
    let main = html::index(&snapshot, &query, now());
    page_response(
        StatusCode::OK,
        html::layout(
            "aro-gitops status",
            snapshot.generation,
            &html::header(&snapshot),
            &main,
        ),
    )
}

async fn cluster(
    State(feed): State<Feed>,
    Path((namespace, name)): Path<(String, String)>,
) -> Response {
    let snapshot = feed.snapshot();
    let Some(unit) = snapshot.cluster(&namespace, &name).cloned() else {
        let what = format!("No cluster {namespace}/{name} is reported.");
        return page_response(StatusCode::NOT_FOUND, not_found(&what));
    };
    let report = cluster_report(&namespace, &name);
    let title = format!("{namespace}/{name}: {}", unit.phase);
    page_of(&feed, &snapshot, &unit, report, &title).await
}

/// The page of a unit, by its path: any unit, but meant for those whose cluster was never known
/// (the index links them here; their reports are under `reports/_units/`).
async fn unit(State(feed): State<Feed>, Path(path): Path<String>) -> Response {
    let snapshot = feed.snapshot();
    let path = path.trim_matches('/');
    let Some(unit) = snapshot.unit(path).cloned() else {
        let what = format!("No unit {path} is reported.");
        return page_response(StatusCode::NOT_FOUND, not_found(&what));
    };
    let report = match unit.cluster.as_deref().and_then(|c| c.split_once('/')) {
        Some((namespace, name)) => cluster_report(namespace, name),
        None => crate::report::unit_report_paths(path).1,
    };
    let title = format!("{path}: {}", unit.phase);
    page_of(&feed, &snapshot, &unit, report, &title).await
}

/// The newest revision's rollout, wave by wave.
async fn rollout(State(feed): State<Feed>) -> Response {
    let snapshot = feed.snapshot();
    let view = snapshot.rollout.as_deref();
    let title = view.map_or_else(|| "rollout".to_string(), super::rollout::summary);
    let main = super::rollout::page(view);
    page_response(
        StatusCode::OK,
        html::layout(&title, snapshot.generation, &html::header(&snapshot), &main),
    )
}

/// The report path of the CAPI Cluster `namespace/name` on the status branch.
fn cluster_report(namespace: &str, name: &str) -> std::path::PathBuf {
    let key = crate::object::ObjectKey {
        group: "cluster.x-k8s.io".into(),
        version: "v1beta1".into(),
        kind: "Cluster".into(),
        namespace: Some(namespace.into()),
        name: name.to_string(),
    };
    crate::report::report_paths(&key).1
}

/// The page of `unit`, with the history of its `report` on the status branch.
async fn page_of(
    feed: &Feed,
    snapshot: &super::feed::Snapshot,
    unit: &super::feed::UnitView,
    report: std::path::PathBuf,
    title: &str,
) -> Response {
    let history = match feed.history() {
        None => Ok(Default::default()),
        Some(_) => {
            let feed = feed.clone();
            let tip = snapshot.status_commit.clone();
            tokio::task::spawn_blocking(move || {
                let history = feed.history().expect("history present");
                history
                    .of(tip.as_deref(), &report)
                    .map_err(|e| e.to_string())
            })
            .await
            .unwrap_or_else(|e| Err(e.to_string()))
        }
    };
    let history = match &history {
        Ok(entries) => Ok(entries.as_slice()),
        Err(e) => Err(e.clone()),
    };
    let main = super::cluster::page(unit, history, now());
    page_response(
        StatusCode::OK,
        html::layout(title, snapshot.generation, &html::header(snapshot), &main),
    )
}

async fn events(
    State(feed): State<Feed>,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    let stream = tokio_stream::wrappers::WatchStream::new(feed.subscribe()).map(|generation| {
        Ok(Event::default()
            .event("update")
            .data(generation.to_string()))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

async fn api(State(feed): State<Feed>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        feed.snapshot().to_json().to_string(),
    )
        .into_response()
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    async fn get(router: &axum::Router, path: &str) -> (StatusCode, axum::http::HeaderMap, String) {
        let request = axum::http::Request::get(path)
            .body(axum::body::Body::empty())
            .expect("a request");
        let response = router.clone().oneshot(request).await.expect("a response");
        let (parts, body) = response.into_parts();
        let bytes = http_body_util::BodyExt::collect(body)
            .await
            .expect("a body")
            .to_bytes();
        (
            parts.status,
            parts.headers,
            String::from_utf8_lossy(&bytes).into_owned(),
        )
    }

    #[tokio::test]
    async fn every_response_carries_the_csp_and_only_get_is_served() {
        let router = router(Feed::default());
        for path in [
            "/",
            "/assets/status.js",
            "/assets/status.css",
            "/api/status",
            "/rollout",
            "/nope",
        ] {
            let (_, headers, _) = get(&router, path).await;
            assert_eq!(headers[header::CONTENT_SECURITY_POLICY], CSP, "{path}");
        }
        let (status, _, body) = get(&router, "/clusters/a/%3Cscript%3E").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(
            body.contains("No cluster a/&lt;script&gt; is reported."),
            "{body}"
        );
        let (status, _, body) = get(&router, "/?page=x").await;
        assert_eq!(
            status,
            StatusCode::OK,
            "a malformed query shows the first page: {body}"
        );
        let post = axum::http::Request::post("/")
            .body(axum::body::Body::empty())
            .expect("a request");
        let response = router.clone().oneshot(post).await.expect("a response");
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    }

    #[tokio::test]
    async fn a_unit_whose_cluster_was_never_known_has_a_page() {
        let feed = Feed::default();
        let mut broken =
            super::super::feed::tests::outcome("clusters/broken", "broken", &["bad <YAML>"]);
        broken.cluster = None;
        feed.units(&[broken]);
        let router = router(feed);
        let (status, _, body) = get(&router, "/units/clusters/broken").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(body.contains("data-unit=\"clusters/broken\""), "{body}");
        assert!(body.contains("bad &lt;YAML&gt;"), "{body}");
        let (status, _, body) = get(&router, "/units/clusters/nope").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(
            body.contains("No unit clusters/nope is reported."),
            "{body}"
        );
    }

    #[tokio::test]
    async fn the_rollout_shows_on_the_index_and_its_own_page() {
        use crate::rollout::{Paused, RolloutView, WaveState, WaveView};
        let feed = Feed::default();
        let router = router(feed.clone());
        let (status, _, body) = get(&router, "/rollout").await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.contains("No rollout in progress"), "{body}");
        let (_, _, body) = get(&router, "/").await;
        assert!(!body.contains("href=\"/rollout\""), "{body}");
        let generation = feed.snapshot().generation;
        let view = RolloutView {
            revision: "abc1234def".into(),
            waves: vec![WaveView {
                name: "dev".into(),
                units: vec!["clusters/dev".into()],
                state: WaveState::Paused,
            }],
            current: Some(0),
            paused: Some(Paused {
                wave: "dev".into(),
                failing: vec![("clusters/dev".into(), vec!["quota exceeded".into()])],
            }),
            waiting_for_window: vec![],
        };
        feed.rollout(Some(&view));
        assert_eq!(feed.snapshot().generation, generation + 1);
        feed.rollout(Some(&view));
        assert_eq!(
            feed.snapshot().generation,
            generation + 1,
            "no change, no update"
        );
        let (_, _, body) = get(&router, "/").await;
        assert!(
            body.contains(
                "<a href=\"/rollout\">rollout of abc1234: paused at wave dev: 1 failing</a>"
            ),
            "{body}"
        );
        let (_, _, body) = get(&router, "/rollout").await;
        assert!(
            body.contains("<b>clusters/dev</b>: quota exceeded"),
            "{body}"
        );
        let (_, _, body) = get(&router, "/api/status").await;
        let json: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            json["rollout"]["paused"]["failing"][0]["unit"],
            "clusters/dev"
        );
        feed.rollout(None);
        let (_, _, body) = get(&router, "/rollout").await;
        assert!(body.contains("No rollout in progress"), "{body}");
    }
}

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
    let key = crate::object::ObjectKey {
        group: "cluster.x-k8s.io".into(),
        version: "v1beta1".into(),
        kind: "Cluster".into(),
        namespace: Some(namespace.clone()),
        name: name.clone(),
    };
    let report = crate::report::report_paths(&key).1;
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
    let main = super::cluster::page(&unit, history, now());
    let title = format!("{namespace}/{name}: {}", unit.phase);
    page_response(
        StatusCode::OK,
        html::layout(&title, snapshot.generation, &html::header(&snapshot), &main),
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

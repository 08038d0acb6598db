//! One HTTP request of a sequence, sent as a client would send it, and its answer as data: the
//! status, the Content-Type, the `Warning` headers and the body (JSON, or `{"text": ...}` when it
//! is not JSON; for a watch, the array of events).

use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// How long a plain request may take before the step records a timeout.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a watch step collects events, by default, when fewer than it expects arrive.
pub const WATCH_WINDOW: Duration = Duration::from_secs(3);
/// The annotation of the BOOKMARK that ends a watch's initial events (`sendInitialEvents=true`).
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// What to send.
#[derive(Debug, Default)]
pub struct Outgoing<'a> {
    pub method: &'a str,
    pub uri: &'a str,
    pub content_type: Option<&'a str>,
    /// The Accept header; `application/json` when not given.
    pub accept: Option<&'a str>,
    /// Further headers (impersonation, ...).
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// A watch: collect this many events, or what comes within `window`.
    pub watch: Option<usize>,
    pub window: Option<Duration>,
    /// Keep only watch events of these types (all when empty).
    pub event_types: &'a [String],
}

/// What came back.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    /// Every `Warning` header, in order.
    pub warnings: Vec<String>,
    pub body: Value,
}

impl Answer {
    fn failed(body: Value) -> Answer {
        Answer {
            status: 0,
            content_type: String::new(),
            warnings: Vec::new(),
            body,
        }
    }
}

/// Sends `out` and reads its answer (a watch's events until enough came or the window closed).
pub async fn send(client: &kube::Client, out: Outgoing<'_>) -> Answer {
    let mut req = http::Request::builder().method(out.method).uri(out.uri);
    if let Some(ct) = out.content_type {
        req = req.header(http::header::CONTENT_TYPE, ct);
    }
    req = req.header(
        http::header::ACCEPT,
        out.accept.unwrap_or("application/json"),
    );
    for (k, v) in &out.headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let req = req
        .body(kube::client::Body::from(out.body))
        .expect("a request");
    let resp = match tokio::time::timeout(REQUEST_TIMEOUT, client.send(req)).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return Answer::failed(json!({"transportError": e.to_string()})),
        Err(_) => return Answer::failed(json!({"timeout": true})),
    };
    let status = resp.status().as_u16();
    let header = |name: http::header::HeaderName| -> Vec<String> {
        resp.headers()
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::to_string)
            .collect()
    };
    let content_type = header(http::header::CONTENT_TYPE)
        .into_iter()
        .next()
        .unwrap_or_default();
    let warnings = header(http::header::WARNING);
    let mut body = resp.into_body();
    let body = match out.watch.filter(|_| status == 200) {
        Some(want) => {
            let window = out.window.unwrap_or(WATCH_WINDOW);
            collect_events(&mut body, want, window, out.event_types).await
        }
        None => match tokio::time::timeout(REQUEST_TIMEOUT, body.collect()).await {
            Ok(Ok(b)) => parse_body(&b.to_bytes()),
            _ => json!({"bodyError": true}),
        },
    };
    Answer {
        status,
        content_type,
        warnings,
        body,
    }
}

fn parse_body(bytes: &[u8]) -> Value {
    if bytes.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| json!({"text": String::from_utf8_lossy(bytes).trim_end()}))
}

/// Whether a watch event is kept. BOOKMARKs come when a server's timers say so, which a client
/// cannot predict, so they are dropped, except the one that ends the initial events
/// (`sendInitialEvents=true`): a server sends it exactly once, after the last initial event.
pub fn kept_event(event: &Value) -> bool {
    !event.is_null()
        && (event["type"] != "BOOKMARK"
            || event["object"]["metadata"]["annotations"][INITIAL_EVENTS_END] == "true")
}

/// What a watch's events end with when the server closed the stream before `want` events came
/// (a `timeoutSeconds`, an ERROR): a pseudo-event, so that closing is compared too.
pub const STREAM_ENDED: &str = "(the server closed the stream)";

/// Reads watch events (of `types`, when given) until `want` arrived, the stream ended or the
/// window closed.
async fn collect_events(
    body: &mut kube::client::Body,
    want: usize,
    window: Duration,
    types: &[String],
) -> Value {
    let deadline = Instant::now() + window;
    let mut buf: Vec<u8> = Vec::new();
    let mut events = Vec::new();
    while events.len() < want {
        let left = deadline.saturating_duration_since(Instant::now());
        let frame = match tokio::time::timeout(left, body.frame()).await {
            Ok(Some(Ok(f))) => f,
            Ok(None) => {
                events.push(json!({"type": STREAM_ENDED}));
                break;
            }
            _ => break,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        buf.extend_from_slice(&data);
        while let Some(i) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=i).collect();
            let event = parse_body(&line);
            let typed = types.is_empty() || types.iter().any(|t| event["type"] == *t.as_str());
            if kept_event(&event) && typed {
                events.push(event);
            }
        }
    }
    Value::Array(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_initial_events_end_bookmark_is_kept() {
        let end = json!({"type": "BOOKMARK", "object": {"metadata": {"annotations": {INITIAL_EVENTS_END: "true"}}}});
        let timer = json!({"type": "BOOKMARK", "object": {"metadata": {}}});
        assert!(kept_event(&end));
        assert!(!kept_event(&timer));
        assert!(kept_event(&json!({"type": "ADDED"})));
    }
}

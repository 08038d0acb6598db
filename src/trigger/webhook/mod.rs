//! The push webhook receiver, served on `run --webhook-bind-address`: `POST /hooks/github`
//! (signed with `X-Hub-Signature-256`) and `POST /hooks/gitlab` (`X-Gitlab-Token`).
//!
//! A request is read up to [`MAX_BODY`] (413 past it), authenticated against the shared secret
//! (401 when it does not match or no secret is configured: nothing is read further), parsed (400
//! when the payload cannot be read) and then acknowledged with 202: a push to the repository and
//! branch the agent follows raises the [`FetchSignal`], anything else is ignored. Every request is
//! counted in `aro_gitops_webhook_requests_total{provider,result}`. Neither the secret nor the
//! signature appears in a response, a log line or a metric.

pub mod auth;
pub mod push;

pub use auth::{SECRET_ENV, Secret, SecretError, github_signature};

use super::FetchSignal;
use crate::metrics::Metrics;
use crate::source::GitRef;
use auth::Refused;
use http::{HeaderMap, StatusCode};
use push::{Event, Malformed};
use std::net::SocketAddr;
use std::sync::Arc;

/// The largest body accepted (1 MiB; GitHub caps its payloads at 25 MB, but pushes are far smaller).
pub const MAX_BODY: usize = 1 << 20;

/// Who sent the webhook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    GitHub,
    GitLab,
}

impl Provider {
    /// The `provider` label (see [`crate::metrics::WEBHOOK_PROVIDERS`]).
    pub fn label(self) -> &'static str {
        match self {
            Provider::GitHub => "github",
            Provider::GitLab => "gitlab",
        }
    }
}

/// What the agent follows, and the secret webhooks must prove they know.
#[derive(Debug, Clone)]
pub struct Receiver {
    /// `None`: every webhook is refused (401).
    pub secret: Option<Secret>,
    /// The agent's `--repo`.
    pub repo: String,
    /// The agent's `--ref`.
    pub reference: GitRef,
}

/// What becomes of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A push to what the agent follows: a fetch is requested (of this commit, when the payload
    /// names it).
    Accepted(Option<String>),
    /// Acknowledged, nothing to fetch (another repository or branch, another event).
    Ignored(&'static str),
    /// GitHub's ping: answered 200.
    Pong,
    Unauthorized(Refused),
    TooLarge,
    Malformed(String),
}

impl Outcome {
    /// The `result` label (see [`crate::metrics::WEBHOOK_RESULTS`]).
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Accepted(_) => "accepted",
            Outcome::Ignored(_) | Outcome::Pong => "ignored",
            Outcome::Unauthorized(_) => "unauthorized",
            Outcome::TooLarge => "too_large",
            Outcome::Malformed(_) => "malformed",
        }
    }

    /// The response: status and a one-line plain-text body.
    pub fn response(&self) -> (StatusCode, String) {
        match self {
            Outcome::Accepted(_) => (
                StatusCode::ACCEPTED,
                "accepted: a fetch is requested".into(),
            ),
            Outcome::Ignored(why) => (StatusCode::ACCEPTED, format!("ignored: {why}")),
            Outcome::Pong => (StatusCode::OK, "pong".into()),
            Outcome::Unauthorized(why) => (StatusCode::UNAUTHORIZED, why.reason().to_string()),
            Outcome::TooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the body is larger than {MAX_BODY} bytes"),
            ),
            Outcome::Malformed(why) => (StatusCode::BAD_REQUEST, why.clone()),
        }
    }
}

impl Receiver {
    /// Decides on a request whose body was read whole: authentication first, then the payload.
    pub fn decide(&self, provider: Provider, headers: &HeaderMap, body: &[u8]) -> Outcome {
        let header = |name: &str| headers.get(name).map(|v| v.as_bytes());
        let event_header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let auth = match provider {
            Provider::GitHub => {
                auth::verify_github(self.secret.as_ref(), header("x-hub-signature-256"), body)
            }
            Provider::GitLab => auth::verify_gitlab(self.secret.as_ref(), header("x-gitlab-token")),
        };
        if let Err(refused) = auth {
            return Outcome::Unauthorized(refused);
        }
        let event = match provider {
            Provider::GitHub => push::parse_github(
                event_header("x-github-event"),
                event_header("content-type"),
                body,
            ),
            Provider::GitLab => push::parse_gitlab(event_header("x-gitlab-event"), body),
        };
        match event {
            Err(Malformed::Json(_)) => {
                Outcome::Malformed("the payload is not a JSON object".into())
            }
            Err(e) => Outcome::Malformed(e.to_string()),
            Ok(Event::Ping) => Outcome::Pong,
            Ok(Event::Other(_)) => Outcome::Ignored("not a push event"),
            Ok(Event::Push(p)) => match push::concerns(&p, &self.repo, &self.reference) {
                Ok(()) => Outcome::Accepted(p.after.clone()),
                Err(why) => Outcome::Ignored(why.reason()),
            },
        }
    }
}

/// Reads a body of at most [`MAX_BODY`] bytes.
async fn read_body(headers: &HeaderMap, body: axum::body::Body) -> Result<bytes::Bytes, Outcome> {
    use http_body_util::BodyExt;
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return Err(Outcome::TooLarge);
    }
    match http_body_util::Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(Outcome::TooLarge),
        Err(_) => Err(Outcome::Malformed("the body could not be read".into())),
    }
}

/// The receiver at work: decides, counts, logs and raises the signal.
struct Handler {
    receiver: Receiver,
    signal: FetchSignal,
    metrics: Arc<Metrics>,
}

impl Handler {
    async fn handle(
        &self,
        provider: Provider,
        headers: HeaderMap,
        body: axum::body::Body,
    ) -> (StatusCode, String) {
        let outcome = match read_body(&headers, body).await {
            Ok(body) => self.receiver.decide(provider, &headers, &body),
            Err(outcome) => outcome,
        };
        self.metrics
            .count_webhook(provider.label(), outcome.label());
        let (status, text) = outcome.response();
        match &outcome {
            Outcome::Accepted(commit) => {
                tracing::info!(
                    provider = provider.label(),
                    commit = commit.as_deref().unwrap_or("(not named)"),
                    "webhook: push accepted, fetch requested"
                );
                self.signal.request_commit(commit.clone());
            }
            Outcome::Ignored(_) | Outcome::Pong => {
                tracing::debug!(provider = provider.label(), reason = %text, "webhook: ignored")
            }
            _ => tracing::warn!(
                provider = provider.label(),
                status = status.as_u16(),
                reason = %text,
                "webhook: request refused"
            ),
        }
        (status, text + "\n")
    }
}

/// Binds `addr` and serves the webhook endpoints in the background; an accepted push raises
/// `signal`.
pub async fn serve(
    receiver: Receiver,
    signal: FetchSignal,
    metrics: Arc<Metrics>,
    addr: SocketAddr,
) -> std::io::Result<crate::serving::Server> {
    crate::serving::serve(router(receiver, signal, metrics), addr, "webhook").await
}

fn router(receiver: Receiver, signal: FetchSignal, metrics: Arc<Metrics>) -> axum::Router {
    if let Some(secret) = &receiver.secret {
        secret.teach_redaction();
    } else {
        tracing::warn!(
            "webhook: no secret configured (--webhook-secret-file or {SECRET_ENV}): every webhook is refused"
        );
    }
    let handler = Arc::new(Handler {
        receiver,
        signal,
        metrics,
    });
    let route = |provider: Provider| {
        let handler = handler.clone();
        axum::routing::post(move |headers: HeaderMap, body: axum::body::Body| {
            let handler = handler.clone();
            async move { handler.handle(provider, headers, body).await }
        })
    };
    axum::Router::new()
        .route("/hooks/github", route(Provider::GitHub))
        .route("/hooks/gitlab", route(Provider::GitLab))
}

#[cfg(test)]
mod tests;

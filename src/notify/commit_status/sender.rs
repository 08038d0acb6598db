//! The commit statuses' edge: a bounded queue the agent drops statuses into without waiting, and
//! one background task that posts them in order over the project's HTTP stack
//! ([`crate::azure::transport::HyperTransport`]), retrying rate limits, server errors and lost
//! connections with backoff ([`POST_RETRY`], the server's wait honoured), then giving up with a
//! warning. A full queue drops the status (said in the log); reconciling never waits.

use super::decide::{Status, Tracker};
use super::request::{self, Answer};
use super::{Config, ConfigError, Host};
use crate::azure::transport::HyperTransport;
use crate::report::UnitOutcome;
use crate::retry::{Backoff, RetryPlan};
use azure_core::http::headers::HeaderName;
use azure_core::http::{HttpClient, Method, Request};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

/// Statuses waiting to be posted, at most.
pub const QUEUE: usize = 256;

/// How one status is retried: a few times, short, since later statuses wait behind it.
pub const POST_RETRY: RetryPlan = RetryPlan {
    backoff: Backoff {
        base: Duration::from_millis(250),
        max: Duration::from_secs(4),
        jitter: 0.5,
    },
    max_retry_after: Duration::from_secs(30),
    max_retries: 4,
    max_elapsed: Duration::from_secs(60),
};

/// The running commit statuses: what was said, and the queue to the poster.
pub struct CommitStatuses {
    tracker: Mutex<Tracker>,
    queue: Mutex<Option<mpsc::Sender<Status>>>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for CommitStatuses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitStatuses").finish_non_exhaustive()
    }
}

/// What the poster needs.
struct Poster {
    config: Config,
    client: HyperTransport,
}

impl CommitStatuses {
    /// Starts the poster of `config` (on the current tokio runtime).
    pub fn start(config: Config) -> Result<CommitStatuses, ConfigError> {
        let client = HyperTransport::production()?;
        let tracker = Tracker::new(config.host, config.contexts, config.page.as_deref());
        let (tx, rx) = mpsc::channel(QUEUE);
        tracing::info!(host = ?config.host, api = %config.api, repo = %config.repo, "posting commit statuses");
        let poster = Arc::new(Poster { config, client });
        let task = tokio::spawn(poster.run(rx));
        Ok(CommitStatuses {
            tracker: Mutex::new(tracker),
            queue: Mutex::new(Some(tx)),
            task: Mutex::new(Some(task)),
        })
    }

    fn tracker(&self) -> std::sync::MutexGuard<'_, Tracker> {
        self.tracker.lock().expect("commit status tracker lock")
    }

    /// Queues `statuses` without waiting; a status the queue has no room for is dropped (and may
    /// be posted on its next change).
    fn queue(&self, statuses: Vec<Status>) {
        let queue = self.queue.lock().expect("commit status queue lock");
        for status in statuses {
            let sent = match queue.as_ref() {
                Some(tx) => tx.try_send(status).map_err(|e| e.into_inner()),
                None => Err(status),
            };
            if let Err(status) = sent {
                tracing::warn!(context = %status.context, sha = %status.sha, "commit status queue full: status dropped");
                self.tracker().forget(&status);
            }
        }
    }

    /// Passes over `units` of commit `sha` begin.
    /// `units`: each with its CAPI Cluster, when known.
    pub fn begin(
        &self,
        sha: &str,
        units: impl IntoIterator<Item = (String, Option<crate::object::ObjectKey>)>,
    ) {
        let statuses = self.tracker().begin(sha, units);
        self.queue(statuses);
    }

    /// A unit's pass ended with `outcome`; `last`: the run ends with it.
    pub fn unit(&self, outcome: &UnitOutcome, last: bool) {
        let statuses = self.tracker().unit(outcome, last);
        self.queue(statuses);
    }

    /// Commit `sha` was refused (`why`).
    pub fn refused(&self, sha: &str, why: &str) {
        let status = self.tracker().refused(sha, why);
        self.queue(status.into_iter().collect());
    }

    /// Commit `sha` failed before its units were known (`why`).
    pub fn revision_failed(&self, sha: &str, why: &str) {
        let status = self
            .tracker()
            .revision_failed(sha, &format!("failed: {why}"));
        self.queue(status.into_iter().collect());
    }

    /// Posts what is queued, for at most `within`; what is left then is given up (said).
    pub async fn flush(&self, within: Duration) {
        self.queue.lock().expect("commit status queue lock").take();
        let Some(mut task) = self.task.lock().expect("commit status task lock").take() else {
            return;
        };
        if tokio::time::timeout(within, &mut task).await.is_err() {
            task.abort();
            tracing::warn!(
                waited_ms = within.as_millis() as u64,
                "commit statuses still queued at exit were not posted"
            );
        }
    }
}

impl Drop for CommitStatuses {
    fn drop(&mut self) {
        if let Some(task) = self.task.get_mut().ok().and_then(Option::take) {
            task.abort();
        }
    }
}

impl Poster {
    /// Posts each queued status in turn until the queue is closed.
    async fn run(self: Arc<Self>, mut rx: mpsc::Receiver<Status>) {
        while let Some(status) = rx.recv().await {
            self.post(&status).await;
        }
    }

    /// Posts `status`, retried as [`POST_RETRY`] says; a failure is logged, never returned.
    async fn post(&self, status: &Status) {
        let started = Instant::now();
        let mut retries = 0;
        loop {
            let (wait, why) = match self.attempt(status).await {
                Ok(Answer::Posted) => {
                    tracing::debug!(context = %status.context, sha = %status.sha, state = ?status.state, "commit status posted");
                    return;
                }
                Ok(Answer::Refused) => return,
                Ok(Answer::Retry(after)) => (after, "the server asked to retry".to_string()),
                Err(e) => (None, e),
            };
            retries += 1;
            if POST_RETRY.expired(started.elapsed(), retries) {
                tracing::warn!(context = %status.context, sha = %status.sha, retries = retries - 1, reason = %why, "commit status not posted: giving up");
                return;
            }
            let delay = POST_RETRY.delay(retries, wait, crate::retry::jitter());
            tracing::debug!(context = %status.context, delay_ms = delay.as_millis() as u64, "commit status: retrying");
            tokio::time::sleep(delay).await;
        }
    }

    /// One request: what the answer means, or why there was none (retried).
    async fn attempt(&self, status: &Status) -> Result<Answer, String> {
        let config = &self.config;
        let mut url = config.api.clone();
        let segments = super::repo::status_segments(config.host, &config.repo, &status.sha);
        url.path_segments_mut()
            .map_err(|()| "the API base cannot take a path".to_string())?
            .pop_if_empty()
            .extend(&segments);
        let mut req = Request::new(url, Method::Post);
        for (name, value) in request::headers(config.host, config.token.expose()) {
            req.insert_header(HeaderName::from_static(name), value);
        }
        let body = request::body(config.host, status).to_string();
        req.set_body(body.into_bytes());
        let response = self
            .client
            .execute_request(&req)
            .await
            .map_err(|e| crate::redact::scrub(&e.to_string()).into_owned())?;
        let code = u16::from(response.status());
        let headers = response.headers().clone();
        let header = |name: &str| {
            headers
                .get_optional_str(&HeaderName::from(name.to_string()))
                .map(str::to_string)
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let answer = request::answer(code, header, now);
        if answer == Answer::Refused {
            let text = response
                .into_body()
                .collect_string()
                .await
                .unwrap_or_default();
            let text = super::decide::description(&text);
            let host = match config.host {
                Host::GitHub => "GitHub",
                Host::GitLab => "GitLab",
            };
            tracing::warn!(context = %status.context, sha = %status.sha, status = code, response = %text, "{host} refused the commit status");
        }
        Ok(answer)
    }
}

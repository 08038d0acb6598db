//! What makes a long-running `aro-gitops run` fetch its source before `--interval` is up: a
//! signed push webhook ([`webhook`]) and, when `--repo` is a local directory, a change there
//! ([`watch`]).
//!
//! Both only raise a [`FetchSignal`]; the run loop waits on it beside its timer. Raising it any
//! number of times before the loop takes it gives one fetch, so a flood of requests, or a fetch
//! in progress and any number of new requests, costs at most one more fetch.

pub mod watch;
pub mod webhook;

use std::sync::Arc;
use tokio::sync::Notify;

/// "A fetch is wanted": raised by the triggers, taken by the run loop. Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct FetchSignal(Arc<Notify>);

impl FetchSignal {
    /// Asks for a fetch. Requests not yet taken coalesce into one.
    pub fn request(&self) {
        self.0.notify_one();
    }

    /// Waits until a fetch is asked for, and takes the request.
    pub async fn wanted(&self) {
        self.0.notified().await;
    }

    /// Takes a pending request, if any, without waiting (a fetch is about to start and serves it);
    /// true when there was one.
    pub fn take(&self) -> bool {
        use futures::FutureExt;
        self.0.notified().now_or_never().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn many_requests_before_the_loop_takes_them_make_one() {
        let signal = FetchSignal::default();
        for _ in 0..1000 {
            signal.clone().request();
        }
        tokio::time::timeout(Duration::from_secs(5), signal.wanted())
            .await
            .expect("one request is pending");
        assert!(!signal.take(), "the requests coalesced into one");
    }

    #[tokio::test]
    async fn a_request_while_the_loop_works_is_kept_for_after() {
        let signal = FetchSignal::default();
        assert!(!signal.take());
        signal.request();
        assert!(signal.take());
        // The loop is fetching: new requests wait for it, then make one more fetch.
        signal.request();
        signal.request();
        tokio::time::timeout(Duration::from_secs(5), signal.wanted())
            .await
            .expect("the request was kept");
        assert!(!signal.take());
    }
}

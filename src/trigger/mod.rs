//! What makes a long-running `aro-gitops run` fetch its source before `--interval` is up: a
//! signed push webhook ([`webhook`]) and, when `--repo` is a local directory, a change there
//! ([`watch`]).
//!
//! Both only raise a [`FetchSignal`]; the run loop waits on it beside its timer. Raising it any
//! number of times before the loop takes it gives one fetch, so a flood of requests, or a fetch
//! in progress and any number of new requests, costs at most one more fetch; and none more when
//! every request that came during the fetch named the commit it brought (a webhook names it), so
//! a flood of deliveries of one push costs one fetch.

pub mod watch;
pub mod webhook;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// "A fetch is wanted": raised by the triggers, taken by the run loop. Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct FetchSignal {
    notify: Arc<Notify>,
    /// What the requests not yet served asked for.
    pending: Arc<Mutex<Pending>>,
}

/// The requests since the last fetch started: the commits they named, and whether one named none.
#[derive(Debug, Default)]
struct Pending {
    commits: BTreeSet<String>,
    any: bool,
}

impl FetchSignal {
    /// Asks for a fetch. Requests not yet taken coalesce into one.
    pub fn request(&self) {
        self.request_commit(None);
    }

    /// Asks for a fetch that brings `commit` (when known: a push names the commit it made).
    pub fn request_commit(&self, commit: Option<String>) {
        {
            let mut p = self.pending.lock().expect("fetch signal lock");
            match commit {
                Some(c) => p.commits.insert(c),
                None => std::mem::replace(&mut p.any, true),
            };
        }
        self.notify.notify_one();
    }

    /// Waits until a fetch is asked for, and takes the request.
    pub async fn wanted(&self) {
        self.notify.notified().await;
    }

    /// Takes a pending request, if any, without waiting (a fetch is about to start and serves it);
    /// true when there was one.
    pub fn take(&self) -> bool {
        use futures::FutureExt;
        *self.pending.lock().expect("fetch signal lock") = Pending::default();
        self.notify.notified().now_or_never().is_some()
    }

    /// A fetch brought `commit`: the requests made meanwhile that all asked for it are served
    /// (and taken); any other request stays for the next fetch. True when some were taken.
    pub fn served_by(&self, commit: &str) -> bool {
        use futures::FutureExt;
        let mut p = self.pending.lock().expect("fetch signal lock");
        if p.any || p.commits.is_empty() || p.commits.iter().any(|c| c != commit) {
            return false;
        }
        *p = Pending::default();
        self.notify.notified().now_or_never().is_some()
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
    async fn requests_for_the_commit_a_fetch_brought_are_served_by_it() {
        let signal = FetchSignal::default();
        signal.request_commit(Some("c1".into()));
        assert!(signal.take(), "a fetch starts");
        // A flood of deliveries of the same push while it fetches.
        for _ in 0..1000 {
            signal.request_commit(Some("c1".into()));
        }
        assert!(signal.served_by("c1"), "the fetch brought c1");
        assert!(!signal.take(), "nothing left: one fetch in all");
        // A newer commit, or a request that names none, is not served by an older fetch.
        signal.request_commit(Some("c1".into()));
        signal.request_commit(Some("c2".into()));
        assert!(!signal.served_by("c1"));
        assert!(signal.take());
        signal.request();
        assert!(!signal.served_by("c1"));
        assert!(signal.take());
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

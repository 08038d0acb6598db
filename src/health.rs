//! Liveness and readiness probes, served on `/healthz` and `/readyz` when
//! `run --health-probe-bind-address` is set.
//!
//! `/healthz` answers 200 while the process's runtime serves requests (a wedged runtime does not
//! answer, and the probe fails). `/readyz` answers 200 once every watch cache the agent started
//! has finished its first LIST, else 503 with the reason in plain text. With leader election
//! (`--leader-elect`) it also needs this instance to lead or to be a healthy standby (it could
//! read the Lease at its last try); the body says which.
//!
//! What the agent depends on shows there too: a watch that keeps failing (the API server
//! unreachable, access refused) makes `/readyz` 503 and names it until the watch resumes (kube's
//! watcher retries with backoff); a source that cannot be fetched leaves it 200 (the last good
//! revision still serves, and webhooks must still reach this instance) with a `degraded:` line.

use crate::serving::Server;
use std::net::SocketAddr;
use std::sync::Arc;

/// Where the agent's watch caches stand (and its source).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheSync {
    /// How many kinds have a cache.
    pub kinds: usize,
    /// Whether every kind the first revision reads has its cache (the agent adds them in steps).
    pub all_started: bool,
    /// The kinds whose cache has not finished its first LIST (`Kind.group/version`).
    pub unsynced: Vec<String>,
    /// The kinds whose watch failed at its last try, with the error (`Kind.group/version: ...`).
    pub failing: Vec<String>,
    /// Why the last fetch of the source failed, when it did (the last good revision serves).
    pub source_error: Option<String>,
}

/// Where an instance stands in the leader election, for `/readyz`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    Leading,
    Standby {
        /// The leader last seen.
        holder: Option<String>,
        /// The last try could read the Lease.
        healthy: bool,
    },
}

/// The answer of `/readyz` for `sync` and, with leader election, `role`.
pub fn readiness_with(sync: &CacheSync, role: Option<&Role>) -> (u16, String) {
    let (code, body) = readiness(sync);
    let (code, mut body) = with_role(code, body, role);
    if code == 200
        && let Some(e) = &sync.source_error
    {
        body.push_str(&format!(
            "degraded: the source could not be fetched ({e}); the last good revision serves\n"
        ));
    }
    (code, body)
}

fn with_role(code: u16, body: String, role: Option<&Role>) -> (u16, String) {
    match role {
        None => (code, body),
        Some(_) if code != 200 => (code, body),
        Some(Role::Leading) => (200, "ok: leading\n".into()),
        Some(Role::Standby {
            holder,
            healthy: true,
        }) => {
            let leader = holder.as_deref().unwrap_or("none yet");
            (200, format!("ok: standby (leader: {leader})\n"))
        }
        Some(Role::Standby { healthy: false, .. }) => (
            503,
            "not ready: standby and the leader election Lease could not be read\n".into(),
        ),
    }
}

/// How many unsynced kinds a 503 names.
const NAMED: usize = 5;

/// The answer of `/readyz` for `sync`: the status code and a short plain-text body.
pub fn readiness(sync: &CacheSync) -> (u16, String) {
    if sync.kinds == 0 || !sync.all_started {
        return (503, "not ready: the watch caches have not started\n".into());
    }
    if !sync.failing.is_empty() {
        let mut named = sync.failing[..sync.failing.len().min(NAMED)].join("; ");
        if sync.failing.len() > NAMED {
            named.push_str("; ...");
        }
        let body = format!(
            "not ready: {} of {} watches failing (retrying with backoff): {named}\n",
            sync.failing.len(),
            sync.kinds
        );
        return (503, body);
    }
    if sync.unsynced.is_empty() {
        return (200, "ok\n".into());
    }
    let mut named = sync.unsynced[..sync.unsynced.len().min(NAMED)].join(", ");
    if sync.unsynced.len() > NAMED {
        named.push_str(", ...");
    }
    let body = format!(
        "not ready: {} of {} watch caches not synced: {named}\n",
        sync.unsynced.len(),
        sync.kinds
    );
    (503, body)
}

/// Binds `addr` and serves `/healthz` and `/readyz` in the background; `sync` reads where the
/// caches stand at each `/readyz`.
pub async fn serve(
    sync: Arc<dyn Fn() -> CacheSync + Send + Sync>,
    addr: SocketAddr,
) -> std::io::Result<Server> {
    serve_with_role(sync, Arc::new(|| None), addr).await
}

/// As [`serve`]; `role` reads where this instance stands in the leader election (`None`:
/// no election).
pub async fn serve_with_role(
    sync: Arc<dyn Fn() -> CacheSync + Send + Sync>,
    role: Arc<dyn Fn() -> Option<Role> + Send + Sync>,
    addr: SocketAddr,
) -> std::io::Result<Server> {
    let text = |(code, body): (u16, String)| {
        let status = http::StatusCode::from_u16(code).expect("a valid status");
        (
            status,
            [(http::header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            body,
        )
    };
    let router = axum::Router::new()
        .route(
            "/healthz",
            axum::routing::get(move || async move { text((200, "ok\n".into())) }),
        )
        .route(
            "/readyz",
            axum::routing::get(move || {
                let answer = readiness_with(&sync(), role().as_ref());
                async move { text(answer) }
            }),
        );
    crate::serving::serve(router, addr, "health").await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_watch_is_not_ready_and_an_unreachable_source_is_degraded() {
        let synced = CacheSync {
            kinds: 3,
            all_started: true,
            ..CacheSync::default()
        };
        let failing = CacheSync {
            failing: vec!["Secret/v1: connection refused".into()],
            ..synced.clone()
        };
        assert_eq!(
            readiness_with(&failing, Some(&Role::Leading)),
            (
                503,
                "not ready: 1 of 3 watches failing (retrying with backoff): Secret/v1: connection refused\n"
                    .into()
            )
        );
        let stale = CacheSync {
            source_error: Some("git fetch: connection refused".into()),
            ..synced
        };
        let (code, body) = readiness_with(&stale, None);
        assert_eq!(code, 200);
        assert_eq!(
            body,
            "ok\ndegraded: the source could not be fetched (git fetch: connection refused); the last good revision serves\n"
        );
    }

    #[test]
    fn not_ready_before_any_cache_started() {
        let (code, body) = readiness(&CacheSync::default());
        assert_eq!(code, 503);
        assert_eq!(body, "not ready: the watch caches have not started\n");
    }

    #[test]
    fn not_ready_while_a_cache_lists_and_names_it() {
        let sync = CacheSync {
            kinds: 3,
            all_started: true,
            unsynced: vec!["Secret/v1".into()],
            ..CacheSync::default()
        };
        assert_eq!(
            readiness(&sync),
            (
                503,
                "not ready: 1 of 3 watch caches not synced: Secret/v1\n".into()
            )
        );
        let many = CacheSync {
            kinds: 8,
            all_started: true,
            unsynced: (0..7).map(|i| format!("K{i}")).collect(),
            ..CacheSync::default()
        };
        let (code, body) = readiness(&many);
        assert_eq!(code, 503);
        assert!(body.ends_with("K3, K4, ...\n"), "{body}");
    }

    #[test]
    fn ready_once_every_cache_synced() {
        let sync = CacheSync {
            kinds: 2,
            all_started: true,
            unsynced: vec![],
            ..CacheSync::default()
        };
        assert_eq!(readiness(&sync), (200, "ok\n".into()));
        // Synced caches of only the first kinds (the revision's not yet asked for): not ready.
        let early = CacheSync {
            all_started: false,
            ..sync
        };
        assert_eq!(readiness(&early).0, 503);
    }

    #[test]
    fn with_election_ready_when_leading_or_a_healthy_standby() {
        let synced = CacheSync {
            kinds: 2,
            all_started: true,
            unsynced: vec![],
            ..CacheSync::default()
        };
        assert_eq!(
            readiness_with(&synced, Some(&Role::Leading)),
            (200, "ok: leading\n".into())
        );
        let standby = Role::Standby {
            holder: Some("host_1".into()),
            healthy: true,
        };
        assert_eq!(
            readiness_with(&synced, Some(&standby)),
            (200, "ok: standby (leader: host_1)\n".into())
        );
        let cut_off = Role::Standby {
            holder: None,
            healthy: false,
        };
        assert_eq!(readiness_with(&synced, Some(&cut_off)).0, 503);
        // Caches first: a leader whose caches are not synced is not ready.
        assert_eq!(
            readiness_with(&CacheSync::default(), Some(&Role::Leading)).0,
            503
        );
    }

    #[tokio::test]
    async fn serves_healthz_and_readyz() {
        async fn get(addr: SocketAddr, path: &str) -> String {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            let request = format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
            stream.write_all(request.as_bytes()).await.unwrap();
            let mut response = String::new();
            stream.read_to_string(&mut response).await.unwrap();
            response
        }
        let server = serve(Arc::new(CacheSync::default), "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let live = get(server.addr, "/healthz").await;
        assert!(live.starts_with("HTTP/1.1 200"), "{live}");
        let ready = get(server.addr, "/readyz").await;
        assert!(ready.starts_with("HTTP/1.1 503"), "{ready}");
        assert!(ready.ends_with("have not started\n"), "{ready}");
    }
}

//! Serving a small HTTP router (metrics, probes) on an address for the life of the agent.

use std::net::SocketAddr;

/// A server running in the background, stopped when dropped.
#[derive(Debug)]
pub struct Server {
    /// The address it listens on (the port chosen when asked for port 0).
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Binds `addr` and serves `router` in the background; `what` names it in the log when it stops.
pub async fn serve(
    router: axum::Router,
    addr: SocketAddr,
    what: &'static str,
) -> std::io::Result<Server> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            tracing::error!(error = %e, server = what, "a server stopped");
        }
    });
    Ok(Server { addr: local, task })
}

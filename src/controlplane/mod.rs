//! The local control plane: a Kubernetes-compatible API server with a durable store.
//!
//! No kube-apiserver can be installed where aro-gitops is developed, and users without a cluster
//! still want to see the agent work, so the project brings its own. It speaks the subset of the
//! Kubernetes API the agent, kube-rs and kubectl rely on (discovery, CRUD, server-side apply,
//! merge/JSON/strategic patches, status subresources, finalizers, garbage collection, watches) and
//! keeps its state in redb so a crash loses no acknowledged write.
//!
//! The same router serves a loopback socket ([`ControlPlane::serve`]) and in-process clients
//! ([`ControlPlane::client`]).

mod access;
mod admission;
mod authz;
mod body;
mod collector;
mod commit;
mod continuation;
mod defaults;
mod delete;
mod discovery;
mod discovery_aggregated;
mod entry;
pub mod error;
mod escalation;
mod events;
pub mod faults;
#[doc(hidden)]
pub mod fuzzing;
mod gc;
mod history;
mod http;
pub mod kubeconfig;
mod limits;
mod negotiate;
mod objects;
mod openapi_paths;
mod openapi_schemas;
mod openapi_v2;
mod openapi_v3;
mod params;
mod patched;
mod protobuf;
mod reads;
mod registry;
mod scale;
mod selector;
pub mod served;
mod service_ips;
mod state;
mod store;
mod strategy;
mod table;
mod txn;
mod validation;
mod watch;
mod workloads;
mod writes;

pub use error::{ApiError, ControlPlaneError};
pub use limits::IMMORTAL_NAMESPACES;

use objects::{Target, WriteOptions};
use serde_json::{Value, json};
use state::State;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The field manager the control plane itself writes with (preloaded CRDs, default namespaces).
pub const SYSTEM_MANAGER: &str = "aro-gitops-control-plane";

/// How to run a control plane.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the store lives; one directory per control plane.
    pub state_dir: PathBuf,
    /// Install the CRDs of every kind the agent handles at start.
    pub preload_crds: bool,
    /// How many watch events are kept for watches to resume from.
    pub event_log_capacity: usize,
    /// The most bytes of object JSON the kept watch events may hold (each event holds its object,
    /// and the object before the change, in memory): what bounds memory on a large fleet, where
    /// objects carry managedFields and status. Older events are compacted (watches from before
    /// get 410 Gone and relist, as upstream).
    pub event_log_bytes: usize,
    pub bookmark_interval: Duration,
    /// Largest request body accepted (upstream: 3 MiB).
    pub max_body_bytes: usize,
    /// How long a request body may take to arrive; a client that stalls mid-body is answered 408.
    pub request_body_timeout: Duration,
    /// Namespaces no request may delete (403, as kube-apiserver's immortal namespaces): by default
    /// `default`, `kube-system`, `kube-public` and the agent's own namespace.
    pub protected_namespaces: Vec<String>,
    /// Faults to inject into the requests of its clients (`--inject-faults`): those of the socket
    /// and of [`ControlPlane::router_with_faults`], never of the in-process [`ControlPlane::client`].
    pub faults: Option<faults::FaultConfig>,
}

impl Config {
    pub fn new(state_dir: impl Into<PathBuf>) -> Self {
        Config {
            state_dir: state_dir.into(),
            preload_crds: true,
            event_log_capacity: 100_000,
            event_log_bytes: 32 * 1024 * 1024,
            bookmark_interval: Duration::from_secs(60),
            max_body_bytes: 3 * 1024 * 1024,
            request_body_timeout: Duration::from_secs(60),
            protected_namespaces: limits::default_protected_namespaces(),
            faults: None,
        }
    }
}

pub(crate) struct Shared {
    state: Mutex<State>,
    store: store::Store,
    /// Staged writes waiting for the committer (see `commit`).
    queue: commit::Queue,
    config: Config,
    faults: Option<Arc<faults::Faults>>,
}

/// A running local control plane (cheap to clone).
#[derive(Clone)]
pub struct ControlPlane {
    shared: Arc<Shared>,
}

impl ControlPlane {
    /// Opens the store in `config.state_dir`, creates the standard namespaces and, unless turned
    /// off, installs or updates the preloaded CRDs.
    pub fn open(config: Config) -> Result<ControlPlane, ControlPlaneError> {
        let (store, loaded) = store::Store::open(&config.state_dir)?;
        let mut state = State::open(loaded, config.event_log_capacity, config.event_log_bytes)?;
        state.protect_namespaces(config.protected_namespaces.clone());
        let (queue, queued) = commit::queue();
        let cp = ControlPlane {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                store,
                queue,
                faults: config
                    .faults
                    .clone()
                    .map(|f| Arc::new(faults::Faults::new(f))),
                config,
            }),
        };
        // Bootstrap commits directly: nothing else writes yet.
        cp.bootstrap()?;
        commit::spawn(Arc::downgrade(&cp.shared), queued).map_err(|source| {
            ControlPlaneError::Committer {
                path: cp.shared.config.state_dir.clone(),
                source,
            }
        })?;
        // The garbage collector's thread, like the committer's, is a thread of this process.
        collector::spawn(&cp.shared).map_err(|source| ControlPlaneError::Committer {
            path: cp.shared.config.state_dir.clone(),
            source,
        })?;
        Ok(cp)
    }

    fn bootstrap(&self) -> Result<(), ControlPlaneError> {
        let mut objects: Vec<Value> = ["default", "kube-system", "kube-public", "kube-node-lease"]
            .iter()
            .map(|ns| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .collect();
        objects.extend(authz::default_cluster_roles());
        if self.shared.config.preload_crds {
            objects.extend(crate::crds::preloaded());
        }
        for obj in objects {
            self.ensure(obj)?;
        }
        Ok(())
    }

    /// Creates `obj` if absent, or applies it as the control plane's own manager if it differs.
    fn ensure(&self, obj: Value) -> Result<(), ControlPlaneError> {
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let fail = |e: ApiError| ControlPlaneError::Preload {
            name: name.clone(),
            message: e.message,
        };
        let mut state = self.shared.state.lock().expect("state lock");
        let registry = state.registry();
        let (group, version) =
            crate::object::split_api_version(obj["apiVersion"].as_str().unwrap_or(""));
        let kind = obj["kind"].as_str().unwrap_or("");
        let rt = registry
            .by_kind(group, kind)
            .ok_or_else(|| fail(ApiError::unknown_path()))?;
        let target = Target {
            version: version.to_string(),
            namespace: None,
            name: Some(name.clone()),
            subresource: None,
            rt,
        };
        if let Some(live) = state.get(&target.key(&name))
            && obj
                .get("spec")
                .is_none_or(|spec| live.object().get("spec") == Some(spec))
        {
            return Ok(());
        }
        let opts = WriteOptions {
            field_manager: SYSTEM_MANAGER.into(),
            force: true,
            now: chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            ..WriteOptions::default()
        };
        let mut txn = state.begin();
        objects::patch(&mut txn, &target, objects::PatchType::Apply, obj, &opts).map_err(fail)?;
        let changes = txn.into_changes();
        let staged = state.stage(changes);
        drop(state);
        commit::commit_group(&self.shared.state, &self.shared.store, &[&staged]).map_err(|e| {
            self.shared.state.lock().expect("state lock").abort();
            fail(e)
        })
    }

    /// The HTTP router, for serving on a socket or in-process.
    pub fn router(&self) -> axum::Router {
        let shared = self.shared.clone();
        axum::Router::new().fallback(move |req: axum::extract::Request| {
            let shared = shared.clone();
            async move { http::handle(shared, req).await }
        })
    }

    /// The router as the agent and the socket's clients see it: with the configured faults
    /// injected (see [`faults`]); without faults, [`ControlPlane::router`].
    pub fn router_with_faults(&self) -> axum::Router {
        let Some(faults) = self.shared.faults.clone() else {
            return self.router();
        };
        let shared = self.shared.clone();
        axum::Router::new().fallback(move |req: axum::extract::Request| {
            let shared = shared.clone();
            let faults = faults.clone();
            async move { faults.serve(req, |req| http::handle(shared, req)).await }
        })
    }

    /// The faults injected so far, when faults are configured.
    pub fn faults_injected(&self) -> Option<faults::FaultCounts> {
        self.shared.faults.as_ref().map(|f| f.counts())
    }

    /// A `kube::Client` talking to this control plane in-process (no socket).
    pub fn client(&self) -> kube::Client {
        kube::Client::new(self.router(), "default")
    }

    /// Serves on `listener` until the future is dropped or the process ends.
    pub async fn serve(&self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        axum::serve(listener, self.router()).await
    }

    /// Binds `addr` (loopback unless `allow_non_loopback`) and serves in the background.
    pub async fn spawn(
        &self,
        addr: SocketAddr,
        allow_non_loopback: bool,
    ) -> Result<ServerHandle, ControlPlaneError> {
        if !addr.ip().is_loopback() && !allow_non_loopback {
            return Err(ControlPlaneError::NonLoopback {
                addr: addr.to_string(),
            });
        }
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ControlPlaneError::Listen {
                addr: addr.to_string(),
                source,
            })?;
        let local = listener
            .local_addr()
            .map_err(|source| ControlPlaneError::Listen {
                addr: addr.to_string(),
                source,
            })?;
        // What the socket's clients ask for is recorded (see `served`); in-process clients are not.
        let served = Arc::new(served::Served::new(Some(
            self.shared.config.state_dir.join(served::SERVED_FILE),
        )));
        let router = self
            .router_with_faults()
            .layer(axum::Extension(served.clone()));
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router).await {
                tracing::error!(error = %e, "control plane server stopped");
            }
        });
        Ok(ServerHandle {
            addr: local,
            task,
            served,
        })
    }

    /// Waits (up to `timeout`) until nothing else holds this control plane (in-process clients,
    /// servers, watches), then closes it, so its state directory can be opened again at once.
    /// Returns whether it was released in time.
    pub async fn close(self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut shared = self.shared;
        loop {
            // Taken whole, so no background thread (committer, collector) can take it up again
            // and hold the store open after this returns.
            match Arc::try_unwrap(shared) {
                Ok(inner) => {
                    drop(inner);
                    return true;
                }
                Err(still_shared) => shared = still_shared,
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.shared
            .state
            .lock()
            .expect("state lock")
            .resource_version()
    }
}

/// A control plane served on a socket; dropping the handle stops serving.
pub struct ServerHandle {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
    served: Arc<served::Served>,
}

impl ServerHandle {
    /// The (group, resource, verb) of every resource request served on this socket so far.
    pub fn served(&self) -> Vec<served::Access> {
        self.served.accesses()
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A `kube::Client` for this server over its socket.
    pub fn client(&self) -> Result<kube::Client, ControlPlaneError> {
        let url: ::http::Uri = self
            .url()
            .parse()
            .map_err(|e: ::http::uri::InvalidUri| ControlPlaneError::Client(e.to_string()))?;
        let config = kube::Config::new(url);
        kube::Client::try_from(config).map_err(|e| ControlPlaneError::Client(e.to_string()))
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

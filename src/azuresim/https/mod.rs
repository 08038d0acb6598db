//! The simulator's Azure endpoints on the wire: one loopback listener speaking HTTPS with a
//! certificate from a CA the agent makes for itself at start-up ([`tls`]), so the embedded
//! default runs the real Azure SDK code (`azure_identity`, `azure_security_keyvault_keys`) against
//! it, not a mock. The SDK clients reach it through the simulated transport
//! (`azure::transport::HyperTransport::simulated`), which trusts only that CA and sends the
//! simulator's host names (`azure::endpoints`) here.
//!
//! Routing is by host name: `login.<cloud>.azure-sim.invalid` is Entra ID ([`entra`]),
//! `<vault>.vault.<cloud>.azure-sim.invalid` goes to the registered [`KeyVaultHandler`] (404 until
//! one is registered), `management.<cloud>.azure-sim.invalid` to the Resource Manager reads of
//! [`arm`] (404 until an inventory is registered with [`SimHttps::set_arm`]). A connection that does not start a TLS handshake is plain HTTP, served only
//! for the instance metadata service's managed-identity endpoint (IMDS is plain HTTP on Azure too).
//!
//! [`AzureRequestCounts`] counts token requests (here) and Key Vault requests (by the handler).

pub mod arm;
pub mod directory;
pub mod entra;
pub mod federated;
pub mod tls;
pub mod tokens;

use crate::azure::cloud::AzureEnvironment;
use crate::azure::endpoints::{Endpoints, IMDS_HOST, SimHost, parse_sim_host};
use crate::azure::transport::{HyperTransport, TransportError};
use crate::metrics::AzureRequestCounts;
use bytes::Bytes;
use directory::IdentityDirectory;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tls::{CertError, SimCertificates};
use tokens::TokenStore;

/// A response of the simulated services.
pub type SimResponse = http::Response<Full<Bytes>>;

/// A JSON response with `status`.
pub fn json_response(status: u16, body: &serde_json::Value) -> SimResponse {
    http::Response::builder()
        .status(status)
        .header(
            http::header::CONTENT_TYPE,
            "application/json; charset=utf-8",
        )
        .header("x-ms-simulated", "aro-gitops")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("a valid response")
}

/// What the simulated services share: the issued tokens, the counts, the identities, the port.
pub struct SimServices {
    pub tokens: TokenStore,
    pub counts: Arc<AzureRequestCounts>,
    pub directory: Arc<dyn IdentityDirectory>,
    /// The listener's port (every simulated URL carries it).
    pub port: u16,
    key_vault: RwLock<Option<Arc<dyn KeyVaultHandler>>>,
    arm: RwLock<Option<Arc<arm::SimArm>>>,
}

impl SimServices {
    /// The endpoints standing in for `environment` (authority host, vault URLs, the challenge's
    /// resource).
    pub fn endpoints(&self, environment: AzureEnvironment) -> Endpoints {
        Endpoints::simulated(environment, self.port)
    }
}

/// A request to a simulated vault.
#[derive(Debug)]
pub struct VaultRequest {
    pub environment: AzureEnvironment,
    /// The vault's name (the host's first label), lower case.
    pub vault: String,
    pub method: http::Method,
    pub uri: http::Uri,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

/// Serves the Key Vault data plane of every simulated vault. Registered on a running server with
/// [`SimHttps::set_key_vault_handler`]; it counts its requests with
/// [`AzureRequestCounts::count_key_vault`] and checks bearer tokens with
/// [`TokenStore::validate_bearer`].
#[async_trait::async_trait]
pub trait KeyVaultHandler: Send + Sync + 'static {
    async fn handle(&self, services: &SimServices, request: VaultRequest) -> SimResponse;
}

/// The simulator's HTTPS server could not start.
#[derive(Debug, thiserror::Error)]
pub enum SimHttpsError {
    #[error(transparent)]
    Certificates(#[from] CertError),
    #[error("binding the Azure simulator's loopback listener: {0}")]
    Bind(std::io::Error),
    #[error(transparent)]
    Transport(#[from] TransportError),
}

/// How the simulated endpoints behave.
#[derive(Debug, Clone)]
pub struct SimHttpsConfig {
    /// How long an issued token lives.
    pub token_lifetime: Duration,
}

impl Default for SimHttpsConfig {
    fn default() -> Self {
        SimHttpsConfig {
            token_lifetime: tokens::DEFAULT_TOKEN_LIFETIME,
        }
    }
}

/// The running listener. Dropping it stops it.
pub struct SimHttps {
    addr: SocketAddr,
    certificates: SimCertificates,
    services: Arc<SimServices>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for SimHttps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimHttps")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl SimHttps {
    /// Makes a CA and the listener's certificate, binds `127.0.0.1:0` and serves until dropped.
    pub async fn start(
        directory: Arc<dyn IdentityDirectory>,
        config: SimHttpsConfig,
    ) -> Result<SimHttps, SimHttpsError> {
        let certificates = SimCertificates::generate()?;
        let acceptor = tokio_rustls::TlsAcceptor::from(certificates.server_config()?);
        let listener = tokio::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(SimHttpsError::Bind)?;
        let addr = listener.local_addr().map_err(SimHttpsError::Bind)?;
        let services = Arc::new(SimServices {
            tokens: TokenStore::new(config.token_lifetime),
            counts: Arc::default(),
            directory,
            port: addr.port(),
            key_vault: RwLock::new(None),
            arm: RwLock::new(None),
        });
        let task = tokio::spawn(accept_loop(listener, acceptor, services.clone()));
        tracing::debug!(%addr, "simulated Azure endpoints (Entra ID, Key Vault, IMDS) listening");
        Ok(SimHttps {
            addr,
            certificates,
            services,
            task,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The agent's CA (DER), the only root the simulated transport trusts.
    pub fn ca_der(&self) -> &[u8] {
        self.certificates.ca_der.as_ref()
    }

    /// The agent's CA in PEM.
    pub fn ca_pem(&self) -> &str {
        &self.certificates.ca_pem
    }

    /// A transport for the SDK clients: trusts only this CA, reaches this listener.
    pub fn transport(&self) -> Result<HyperTransport, TransportError> {
        HyperTransport::simulated(self.ca_der(), self.addr)
    }

    pub fn endpoints(&self, environment: AzureEnvironment) -> Endpoints {
        self.services.endpoints(environment)
    }

    pub fn counts(&self) -> Arc<AzureRequestCounts> {
        self.services.counts.clone()
    }

    pub fn services(&self) -> Arc<SimServices> {
        self.services.clone()
    }

    /// Registers Resource Manager reads (replacing any earlier ones); tests queue its faults
    /// through `arm`.
    pub fn set_arm(&self, arm: Arc<arm::SimArm>) {
        *self.services.arm.write().unwrap_or_else(|e| e.into_inner()) = Some(arm);
    }

    /// Resource Manager reads from the inventory records of the cluster `client` reaches.
    pub fn serve_arm_from(&self, client: kube::Client) -> Arc<arm::SimArm> {
        let arm = Arc::new(arm::SimArm::new(Arc::new(arm::ClusterInventory(client))));
        self.set_arm(arm.clone());
        arm
    }

    /// Registers the Key Vault data plane (replacing any earlier handler).
    pub fn set_key_vault_handler(&self, handler: Arc<dyn KeyVaultHandler>) {
        *self
            .services
            .key_vault
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Some(handler);
    }
}

impl Drop for SimHttps {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    services: Arc<SimServices>,
) {
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                tracing::warn!(error = %e, "the Azure simulator's listener failed to accept");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(serve_connection(stream, acceptor.clone(), services.clone()));
    }
}

/// TLS handshake records start with 0x16.
const TLS_HANDSHAKE: u8 = 0x16;

async fn serve_connection(
    stream: tokio::net::TcpStream,
    acceptor: tokio_rustls::TlsAcceptor,
    services: Arc<SimServices>,
) {
    let mut first = [0u8; 1];
    if !matches!(stream.peek(&mut first).await, Ok(1)) {
        return;
    }
    let http = hyper::server::conn::http1::Builder::new();
    if first[0] == TLS_HANDSHAKE {
        // A client that does not trust the CA ends here: the handshake fails on its side.
        let Ok(tls) = acceptor.accept(stream).await else {
            return;
        };
        let services = services.clone();
        let svc = service_fn(move |req| {
            let services = services.clone();
            async move { Ok::<_, std::convert::Infallible>(route(&services, true, req).await) }
        });
        let _ = http.serve_connection(TokioIo::new(tls), svc).await;
    } else {
        let svc = service_fn(move |req| {
            let services = services.clone();
            async move { Ok::<_, std::convert::Infallible>(route(&services, false, req).await) }
        });
        let _ = http.serve_connection(TokioIo::new(stream), svc).await;
    }
}

fn not_found(what: &str) -> SimResponse {
    json_response(
        404,
        &serde_json::json!({"error": {"code": "NotFound", "message": format!("the Azure simulator serves no {what}")}}),
    )
}

async fn route(
    services: &SimServices,
    tls: bool,
    req: http::Request<hyper::body::Incoming>,
) -> SimResponse {
    let (parts, body) = req.into_parts();
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return json_response(400, &serde_json::json!({"error": "bad_request"})),
    };
    let host = parts
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or(parts.uri.host())
        .unwrap_or_default();
    let host = host.rsplit_once(':').map_or(host, |(h, _)| h).to_string();
    let path = parts.uri.path();
    if !tls {
        if host == IMDS_HOST
            && parts.method == http::Method::GET
            && path == "/metadata/identity/oauth2/token"
        {
            let metadata = parts
                .headers
                .get("metadata")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.eq_ignore_ascii_case("true"));
            return entra::imds(services, parts.uri.query().unwrap_or_default(), metadata).await;
        }
        return not_found("plain-HTTP endpoint but IMDS");
    }
    match parse_sim_host(&host) {
        Some(SimHost::Login(env)) if parts.method == http::Method::POST => {
            entra::token(services, env, path, &body).await
        }
        Some(SimHost::Vault(environment, vault)) => {
            let handler = services
                .key_vault
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            let Some(handler) = handler else {
                return not_found("Key Vault API in this build");
            };
            let request = VaultRequest {
                environment,
                vault,
                method: parts.method,
                uri: parts.uri,
                headers: parts.headers,
                body,
            };
            handler.handle(services, request).await
        }
        Some(SimHost::ResourceManager(environment)) => {
            let served = services
                .arm
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            match served {
                Some(a) => {
                    arm::handle(
                        services,
                        &a,
                        environment,
                        &parts.method,
                        &parts.uri,
                        &parts.headers,
                    )
                    .await
                }
                None => not_found("Resource Manager API here"),
            }
        }
        _ => not_found(&format!("endpoint at {host}{path}")),
    }
}

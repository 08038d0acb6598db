//! The one HTTP transport of every Azure SDK client: hyper over rustls with ring, the same TLS
//! stack kube uses (the SDK's default client would bring reqwest and another crypto provider).
//!
//! Production trusts the platform's roots and resolves names through the system. Simulation
//! trusts only the agent's own CA (made at start-up, see `azuresim::https`) and sends every
//! simulated host name ([`super::endpoints::is_sim_host`], and the managed-identity address) to
//! the simulator's loopback listener: a resolver override, so the SDK code paths are the same and
//! only the endpoints and the roots differ. A name outside the simulator fails in simulation, so
//! nothing simulated can leak out to a real service.

use super::endpoints::is_sim_host;
use azure_core::error::{Error, ErrorKind};
use azure_core::http::headers::{HeaderName, HeaderValue, Headers};
use azure_core::http::{AsyncRawResponse, Body, HttpClient, Request, Transport};
use bytes::Bytes;
use futures::AsyncReadExt;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpStream;

/// How long one request may take, connection included, before it fails as a timeout (which the
/// SDK's retry policy retries).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a transport could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("no trusted root certificate could be loaded from the platform")]
    NoRoots,
    #[error("the certificate authority is not a valid certificate: {0}")]
    BadCa(String),
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
}

/// Where connections go.
#[derive(Clone)]
enum Connector {
    /// Names resolved by the system.
    Web(HttpConnector),
    /// Every simulated name to the simulator's loopback listener; anything else refused.
    Loopback(SocketAddr),
}

impl tower::Service<http::Uri> for Connector {
    type Response = TokioIo<TcpStream>;
    type Error = Box<dyn std::error::Error + Send + Sync>;
    type Future =
        Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send + 'static>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        match self {
            Connector::Web(c) => c.poll_ready(cx).map_err(Into::into),
            Connector::Loopback(_) => Poll::Ready(Ok(())),
        }
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        match self {
            Connector::Web(c) => {
                let fut = c.call(uri);
                Box::pin(async move { fut.await.map_err(Into::into) })
            }
            Connector::Loopback(addr) => {
                let addr = *addr;
                Box::pin(async move {
                    let host = uri.host().unwrap_or_default();
                    if !is_sim_host(host) {
                        return Err(format!(
                            "{host} is not served by the Azure simulator (simulated Azure reaches no real service)"
                        )
                        .into());
                    }
                    let stream = TcpStream::connect(addr).await?;
                    stream.set_nodelay(true)?;
                    Ok(TokioIo::new(stream))
                })
            }
        }
    }
}

/// An `azure_core` HTTP client over hyper and rustls (ring).
#[derive(Clone)]
pub struct HyperTransport {
    client: Client<hyper_rustls::HttpsConnector<Connector>, Full<Bytes>>,
    simulated: bool,
}

impl std::fmt::Debug for HyperTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HyperTransport")
            .field("simulated", &self.simulated)
            .finish_non_exhaustive()
    }
}

fn tls_config(roots: rustls::RootCertStore) -> Result<rustls::ClientConfig, TransportError> {
    Ok(rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth())
}

impl HyperTransport {
    fn build(connector: Connector, tls: rustls::ClientConfig, simulated: bool) -> HyperTransport {
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(connector);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(60))
            .build(https);
        HyperTransport { client, simulated }
    }

    /// Production: the platform's trusted roots, names resolved by the system.
    pub fn production() -> Result<HyperTransport, TransportError> {
        let mut roots = rustls::RootCertStore::empty();
        let loaded = rustls_native_certs::load_native_certs();
        let (added, _) = roots.add_parsable_certificates(loaded.certs);
        if added == 0 {
            return Err(TransportError::NoRoots);
        }
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        Ok(HyperTransport::build(
            Connector::Web(http),
            tls_config(roots)?,
            false,
        ))
    }

    /// Simulation: trusts only `ca_der` (the agent's own CA) and sends every simulated name to
    /// `listener` on the loopback.
    pub fn simulated(
        ca_der: &[u8],
        listener: SocketAddr,
    ) -> Result<HyperTransport, TransportError> {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(rustls_pki_types::CertificateDer::from(ca_der.to_vec()))
            .map_err(|e| TransportError::BadCa(e.to_string()))?;
        Ok(HyperTransport::build(
            Connector::Loopback(listener),
            tls_config(roots)?,
            true,
        ))
    }

    /// Whether this transport talks to the simulator.
    pub fn is_simulated(&self) -> bool {
        self.simulated
    }

    /// As the SDK clients take it in their `ClientOptions`.
    pub fn sdk_transport(&self) -> Transport {
        Transport::new(Arc::new(self.clone()))
    }
}

async fn body_bytes(body: &Body) -> azure_core::Result<Bytes> {
    match body {
        Body::Bytes(b) => Ok(b.clone()),
        Body::SeekableStream(s) => {
            let mut stream = s.clone();
            stream.reset().await?;
            let mut buf = Vec::new();
            stream
                .read_to_end(&mut buf)
                .await
                .map_err(|e| Error::with_error(ErrorKind::Io, e, "reading the request body"))?;
            Ok(Bytes::from(buf))
        }
    }
}

fn to_headers(map: &http::HeaderMap) -> Headers {
    let map: HashMap<HeaderName, HeaderValue> = map
        .iter()
        .filter_map(|(k, v)| {
            let v = v.to_str().ok()?;
            Some((
                HeaderName::from(k.as_str().to_owned()),
                HeaderValue::from(v.to_owned()),
            ))
        })
        .collect();
    Headers::from(map)
}

#[async_trait::async_trait]
impl HttpClient for HyperTransport {
    async fn execute_request(&self, request: &Request) -> azure_core::Result<AsyncRawResponse> {
        let url = request.url();
        let mut builder = http::Request::builder()
            .method(request.method().as_str())
            .uri(url.as_str());
        for (name, value) in request.headers().iter() {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let body = body_bytes(request.body()).await?;
        let req = builder
            .body(Full::new(body))
            .map_err(|e| Error::with_error(ErrorKind::Other, e, "building the HTTP request"))?;
        // Only the host and path go into errors: a query may carry an identity's id, never a
        // secret, but keep errors short and uniform.
        let target = format!("{}{}", url.host_str().unwrap_or_default(), url.path());
        let send = async {
            let response = self.client.request(req).await.map_err(|e| {
                // A certificate the roots do not vouch for stays so: not retried.
                let kind = if is_tls_rejection(&e) {
                    ErrorKind::Other
                } else if e.is_connect() {
                    ErrorKind::Connection
                } else {
                    ErrorKind::Io
                };
                Error::with_message(
                    kind,
                    format!("request to {target} failed: {}", error_chain(&e)),
                )
            })?;
            let (parts, body) = response.into_parts();
            let bytes = body.collect().await.map_err(|e| {
                Error::with_message(
                    ErrorKind::Io,
                    format!("reading the response of {target}: {e}"),
                )
            })?;
            Ok::<_, Error>(AsyncRawResponse::from_bytes(
                parts.status.as_u16().into(),
                to_headers(&parts.headers),
                bytes.to_bytes(),
            ))
        };
        match tokio::time::timeout(REQUEST_TIMEOUT, send).await {
            Ok(r) => r,
            Err(_) => Err(Error::with_message(
                ErrorKind::Io,
                format!("request to {target} timed out after {REQUEST_TIMEOUT:?}"),
            )),
        }
    }
}

/// Whether TLS refused the peer (its certificate, or the handshake): somewhere in the sources.
fn is_tls_rejection(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = current {
        if err.downcast_ref::<rustls::Error>().is_some() {
            return true;
        }
        // An io::Error's source() skips the error it wraps: step into it instead.
        current = match err
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => err.source(),
        };
    }
    false
}

/// The error and its sources on one line (hyper's top-level message alone says little).
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

//! The simulated guest clusters' API (IO; the answers are `guest_api`'s): one HTTPS listener on
//! loopback for every simulated cluster, told apart by the path prefix
//! `/clusters/<namespace>/<name>` that each kubeconfig Secret names, with the certificate of the
//! simulator's guest CA (`guest_tls`), which the kubeconfigs carry. Each request reads the
//! HcpOpenShiftCluster it names from the control plane, so annotations take effect at once.
//!
//! The listener keeps its port across restarts when it can (the address is kept in the ConfigMap
//! [`ADDRESS_CONFIG_MAP`] of `aro-gitops-system`) and the CA is kept, so the kubeconfig Secrets
//! written before stay valid and are not written again.

use super::FIELD_MANAGER;
use super::guest_api;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{Value, json};

/// Where the guest API's address is kept between runs.
pub const ADDRESS_CONFIG_MAP: &str = "azure-simulator-guest-api";
const NAMESPACE: &str = "aro-gitops-system";

/// The HcpOpenShiftCluster as the guest API reads it.
fn hcp_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(
            "redhatopenshift.azure.com",
            "v1api20240610preview",
            crate::kinds::HCP_CLUSTER,
        ),
        "hcpopenshiftclusters",
    )
}

/// Where the guest API listens, as the kubeconfigs name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestEndpoint {
    /// `https://127.0.0.1:P`.
    pub base: String,
    /// The CA certificate (PEM) the kubeconfigs trust.
    pub ca_pem: String,
}

/// Starts the guest API: its certificates, its listener; gives where it is and the server to run.
pub async fn start(
    client: Client,
) -> Result<(GuestEndpoint, impl std::future::Future<Output = ()>), String> {
    ensure_namespace(&client).await;
    let tls = super::guest_tls::load_or_create(&client)
        .await
        .map_err(|e| e.to_string())?;
    let (listener, address) = bind(&client).await.map_err(|e| e.to_string())?;
    let endpoint = GuestEndpoint {
        base: format!("https://{address}"),
        ca_pem: tls.ca_pem.clone(),
    };
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.server);
    Ok((endpoint, serve(listener, acceptor, client)))
}

/// Creates `aro-gitops-system`, where the guest API keeps its address and CA, when it is not
/// there yet (a new control plane).
async fn ensure_namespace(client: &Client) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(NAMESPACE).await.ok().flatten().is_some() {
        return;
    }
    let namespace =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}});
    if let Err(error) = namespaces
        .patch(
            NAMESPACE,
            &PatchParams::apply(FIELD_MANAGER),
            &Patch::Apply(&namespace),
        )
        .await
    {
        tracing::debug!(%error, "the agent's namespace could not be created");
    }
}

/// Binds the guest API's listener: the address of the last run when it is free, else a new
/// loopback port (then recorded). Returns the listener and its address (`127.0.0.1:P`).
async fn bind(client: &Client) -> std::io::Result<(tokio::net::TcpListener, String)> {
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let previous = maps
        .get_opt(ADDRESS_CONFIG_MAP)
        .await
        .ok()
        .flatten()
        .and_then(|m| m.data?.get("address").cloned())
        .filter(|a| a.starts_with("127.0.0.1:"));
    let listener = match &previous {
        Some(a) => match tokio::net::TcpListener::bind(a.as_str()).await {
            Ok(l) => l,
            Err(_) => tokio::net::TcpListener::bind("127.0.0.1:0").await?,
        },
        None => tokio::net::TcpListener::bind("127.0.0.1:0").await?,
    };
    let address = listener.local_addr()?.to_string();
    if previous.as_deref() != Some(address.as_str()) {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": ADDRESS_CONFIG_MAP, "namespace": NAMESPACE},
            "data": {"address": address}});
        if let Err(error) = maps
            .patch(
                ADDRESS_CONFIG_MAP,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&body),
            )
            .await
        {
            tracing::debug!(%error, "the guest API's address was not recorded");
        }
    }
    tracing::info!(%address, "simulated guest cluster API listening (HTTPS, loopback)");
    Ok((listener, address))
}

/// Serves the guest API on `listener` until the task is dropped.
async fn serve(
    listener: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    client: Client,
) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                tracing::warn!(%error, "the simulated guest cluster API failed to accept");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let (acceptor, client) = (acceptor.clone(), client.clone());
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(stream).await else {
                return; // a client that does not trust the CA, or no TLS at all
            };
            let service =
                hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let client = client.clone();
                    async move {
                        Ok::<_, std::convert::Infallible>(
                            handle(&client, req.map(axum::body::Body::new)).await,
                        )
                    }
                });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .await;
        });
    }
}

async fn handle(client: &Client, req: axum::extract::Request) -> axum::response::Response {
    let path = req.uri().path().to_string();
    let bearer = req
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let (code, body) = if req.method() != http::Method::GET {
        (
            405,
            json!({"apiVersion": "v1", "kind": "Status", "status": "Failure",
                "reason": "MethodNotAllowed", "code": 405,
                "message": "the simulated guest API only reads"}),
        )
    } else {
        let parts: Vec<&str> = path.trim_start_matches('/').splitn(4, '/').collect();
        match parts.as_slice() {
            ["clusters", ns, name, rest @ ..] => {
                let rest = rest.first().copied().unwrap_or("");
                let api: Api<DynamicObject> =
                    Api::namespaced_with(client.clone(), ns, &hcp_resource());
                match api.get_opt(name).await {
                    Ok(found) => {
                        let cluster = found.and_then(|o| serde_json::to_value(o).ok());
                        guest_api::respond(cluster.as_ref(), bearer.as_deref(), rest)
                    }
                    Err(error) => {
                        tracing::warn!(%ns, %name, %error, "simulated guest API: reading the cluster failed");
                        guest_api::respond(None, bearer.as_deref(), rest)
                    }
                }
            }
            _ => guest_api::respond(None, bearer.as_deref(), ""),
        }
    };
    tracing::debug!(%path, code, "simulated guest API request");
    let status =
        http::StatusCode::from_u16(code).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    axum::response::Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(axum::body::Body::from(bytes))
        .expect("a valid response")
}

/// The server URL of the guest `cluster` under the listener at `base` (`https://127.0.0.1:P`).
pub fn server_url(base: &str, cluster: &Value) -> String {
    let text = |p: &str| crate::object::text_at(cluster, p).unwrap_or_default();
    format!(
        "{base}{}",
        guest_api::path_prefix(text("/metadata/namespace"), text("/metadata/name"))
    )
}

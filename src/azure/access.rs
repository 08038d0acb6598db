//! What a part of the agent needs to call Azure through the SDK: the endpoints of a cluster's
//! cloud, the client options (our transport, the authority host) and the process's one
//! credential cache. Real Azure and the simulator differ only in what this hands out.

use super::cloud::AzureEnvironment;
use super::credential::CredentialCache;
use super::endpoints::Endpoints;
use super::transport::{HyperTransport, TransportError};
use azure_core::http::ClientOptions;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The agent's way to Azure, real or simulated.
#[derive(Debug)]
pub struct AzureAccess {
    /// The simulator's listener port, when Azure is simulated.
    sim_port: Option<u16>,
    credentials: CredentialCache,
    /// The token file workload identities read; `None`: `AZURE_FEDERATED_TOKEN_FILE` (the
    /// projected token a real deployment mounts).
    federated_token_file: Option<PathBuf>,
}

impl AzureAccess {
    /// Real Azure: the platform's roots, the clouds' own hosts.
    pub fn production() -> Result<AzureAccess, TransportError> {
        Ok(AzureAccess {
            sim_port: None,
            credentials: CredentialCache::new(HyperTransport::production()?),
            federated_token_file: None,
        })
    }

    /// The simulator listening on `listener`, whose certificates come from the CA `ca_der`.
    pub fn simulated(ca_der: &[u8], listener: SocketAddr) -> Result<AzureAccess, TransportError> {
        Ok(AzureAccess {
            sim_port: Some(listener.port()),
            credentials: CredentialCache::new(HyperTransport::simulated(ca_der, listener)?),
            federated_token_file: None,
        })
    }

    /// Workload identities read their federated token from `path` (the embedded default's
    /// simulated projected token) instead of `AZURE_FEDERATED_TOKEN_FILE`.
    pub fn with_federated_token_file(mut self, path: PathBuf) -> AzureAccess {
        self.federated_token_file = Some(path);
        self
    }

    /// The token file workload identities read, when not `AZURE_FEDERATED_TOKEN_FILE`.
    pub fn federated_token_file(&self) -> Option<&Path> {
        self.federated_token_file.as_deref()
    }

    pub fn is_simulated(&self) -> bool {
        self.sim_port.is_some()
    }

    /// Where `environment`'s Entra ID and vaults are (the simulator's stand-ins when simulated).
    pub fn endpoints(&self, environment: AzureEnvironment) -> Endpoints {
        match self.sim_port {
            Some(port) => Endpoints::simulated(environment, port),
            None => Endpoints::real(environment),
        }
    }

    /// The process's credentials.
    pub fn credentials(&self) -> &CredentialCache {
        &self.credentials
    }

    /// Options for an SDK client (e.g. `KeyClientOptions::client_options`) of `endpoints`' cloud.
    pub fn client_options(&self, endpoints: &Endpoints) -> ClientOptions {
        self.credentials.client_options(endpoints)
    }
}

//! The simulator on its own, against any API server (`aro-gitops azure-simulator`): the same
//! [`AzureSimulator`] as beside the embedded control plane (ASO's statuses, finalizers, kubeconfig
//! Secrets, the guest clusters' API), its Entra ID / Key Vault / IMDS endpoints on a loopback
//! listener ([`SimHttps`]), one set of simulated vaults shared by both, and where agents find
//! those endpoints published in the cluster ([`crate::azure::published`]), with a Lease renewed
//! while it runs.

use super::https::directory::ControlPlaneDirectory;
use super::https::{SimHttps, SimHttpsConfig};
use super::keyvault::KeyVaults;
use super::{AzureSimulator, FIELD_MANAGER, SimConfig, inventory};
use crate::azure::published;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// The CRD of the simulated Azure inventory, which the simulator needs on the API server.
pub fn inventory_crd_name() -> String {
    format!("simulatedazureresources.{}", inventory::GROUP)
}

/// Why the simulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum StandaloneError {
    #[error(
        "the CustomResourceDefinition {crd} is not installed on the API server: install the project's CRDs first \
         (`aro-gitops crds | kubectl apply --server-side -f -`)"
    )]
    MissingCrd { crd: String },
    #[error("reading the CustomResourceDefinition {crd}: {error}")]
    ReadCrd { crd: String, error: kube::Error },
    #[error("the simulated Azure endpoints could not start: {0}")]
    Endpoints(#[from] super::https::SimHttpsError),
    #[error(
        "publishing the simulator's endpoints in {kind} {}/{}: {error}",
        published::NAMESPACE,
        published::NAME
    )]
    Publish {
        kind: &'static str,
        error: kube::Error,
    },
    #[error(
        "granting agents read access to the simulated Azure inventory ({kind} {}/{}): {error}",
        inventory::NAMESPACE,
        inventory::READER_ROLE
    )]
    GrantReader {
        kind: &'static str,
        error: kube::Error,
    },
}

/// The simulator running against a cluster; [`Standalone::stop`] ends it.
pub struct Standalone {
    client: kube::Client,
    https: SimHttps,
    simulator: tokio::task::JoinHandle<()>,
    renewal: tokio::task::JoinHandle<()>,
}

impl Standalone {
    /// Checks the simulator's CRD, starts the simulator (each resource provisioning for `delay`)
    /// and its endpoints against the cluster `client` reaches, and publishes where they are.
    /// `api_server` names that cluster in the publication (for people).
    pub async fn start(
        client: kube::Client,
        delay: Duration,
        api_server: &str,
    ) -> Result<Standalone, StandaloneError> {
        require_crd(&client, &inventory_crd_name()).await?;
        let key_vaults = KeyVaults::default();
        let https = SimHttps::start(
            Arc::new(ControlPlaneDirectory::new(client.clone())),
            SimHttpsConfig::default(),
        )
        .await?;
        https.set_key_vault_handler(Arc::new(key_vaults.clone()));
        https.serve_arm_from(client.clone());
        publish(&client, https.addr(), https.ca_pem(), api_server).await?;
        let simulator = AzureSimulator::new(
            client.clone(),
            SimConfig {
                provisioning_delay: delay,
            },
        )
        .serving_guests()
        .with_key_vaults(key_vaults)
        .spawn();
        let renewal = tokio::spawn(renew(client.clone()));
        Ok(Standalone {
            client,
            https,
            simulator,
            renewal,
        })
    }

    /// Where the Entra ID / Key Vault / IMDS endpoints listen.
    pub fn addr(&self) -> SocketAddr {
        self.https.addr()
    }

    /// The requests the endpoints have served so far.
    pub fn requests(&self) -> crate::metrics::AzureRequestTotals {
        self.https.counts().totals()
    }

    /// Stops the simulator and its endpoints, and withdraws the publication (the Lease and the
    /// ConfigMap), so agents no longer find it. A withdrawal that fails is logged: the Lease then
    /// expires on its own.
    pub async fn stop(self) {
        self.renewal.abort();
        self.simulator.abort();
        let _ = self.simulator.await;
        for (kind, result) in [
            (
                "Lease",
                Api::<Lease>::namespaced(self.client.clone(), published::NAMESPACE)
                    .delete(published::NAME, &DeleteParams::default())
                    .await
                    .map(|_| ()),
            ),
            (
                "ConfigMap",
                Api::<ConfigMap>::namespaced(self.client.clone(), published::NAMESPACE)
                    .delete(published::NAME, &DeleteParams::default())
                    .await
                    .map(|_| ()),
            ),
        ] {
            if let Err(error) = result {
                tracing::warn!(%kind, %error, "the simulator's publication could not be withdrawn");
            }
        }
        drop(self.https);
    }
}

/// Fails with what to install when the CRD `name` is not served.
async fn require_crd(client: &kube::Client, name: &str) -> Result<(), StandaloneError> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    match crds.get_opt(name).await {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(StandaloneError::MissingCrd {
            crd: name.to_string(),
        }),
        Err(error) => Err(StandaloneError::ReadCrd {
            crd: name.to_string(),
            error,
        }),
    }
}

/// Writes the namespaces, the inventory's reader Role, the ConfigMap and a first renewal of the
/// Lease.
async fn publish(
    client: &kube::Client,
    address: SocketAddr,
    ca_pem: &str,
    api_server: &str,
) -> Result<(), StandaloneError> {
    let pp = PatchParams::apply(FIELD_MANAGER).force();
    let publish_err = |kind: &'static str| move |error| StandaloneError::Publish { kind, error };
    for name in [published::NAMESPACE, inventory::NAMESPACE] {
        let namespace = serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name}});
        Api::<Namespace>::all(client.clone())
            .patch(name, &pp, &Patch::Apply(&namespace))
            .await
            .map_err(publish_err("Namespace"))?;
    }
    // The agents beside it may read the simulated inventory (deploy/base does not grant it).
    let (role, binding) = inventory::reader_rbac(published::NAMESPACE);
    Api::<Role>::namespaced(client.clone(), inventory::NAMESPACE)
        .patch(inventory::READER_ROLE, &pp, &Patch::Apply(&role))
        .await
        .map_err(|error| StandaloneError::GrantReader {
            kind: "Role",
            error,
        })?;
    Api::<RoleBinding>::namespaced(client.clone(), inventory::NAMESPACE)
        .patch(inventory::READER_ROLE, &pp, &Patch::Apply(&binding))
        .await
        .map_err(|error| StandaloneError::GrantReader {
            kind: "RoleBinding",
            error,
        })?;
    let config_map = published::config_map(address, ca_pem, api_server);
    Api::<ConfigMap>::namespaced(client.clone(), published::NAMESPACE)
        .patch(published::NAME, &pp, &Patch::Apply(&config_map))
        .await
        .map_err(publish_err("ConfigMap"))?;
    renew_once(client).await.map_err(publish_err("Lease"))
}

/// The Lease's holder: this process.
fn holder() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "localhost".to_string());
    format!("{host}_{}", std::process::id())
}

async fn renew_once(client: &kube::Client) -> Result<(), kube::Error> {
    let lease = published::lease(&holder(), &published::micro_time(chrono::Utc::now()));
    Api::<Lease>::namespaced(client.clone(), published::NAMESPACE)
        .patch(
            published::NAME,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&lease),
        )
        .await
        .map(|_| ())
}

/// Renews the Lease every [`published::RENEW_EVERY`] until aborted.
async fn renew(client: kube::Client) {
    let mut ticks = tokio::time::interval(published::RENEW_EVERY);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        if let Err(error) = renew_once(&client).await {
            tracing::warn!(%error, "the Azure simulator's Lease could not be renewed; retrying");
        }
    }
}

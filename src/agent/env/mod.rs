//! Where the agent's live state is: a real cluster (in-cluster or from a kubeconfig), or the
//! embedded local control plane with the Azure simulator playing ASO beside it.

pub(crate) mod arm_reads;
mod client_cert;
pub(super) mod target;

use crate::agent::AgentError;
use crate::agent::env::target::LiveTarget;
use crate::apply::{AzureView, Cluster, RequestCounter};
use crate::azure::AzureAccess;
use crate::azure::published;
use crate::azuresim::https::directory::ControlPlaneDirectory;
use crate::azuresim::https::federated;
use crate::azuresim::https::{SimHttps, SimHttpsConfig};
use crate::azuresim::keyvault::KeyVaults;
use crate::azuresim::{AzureSimulator, SimConfig};
use crate::controlplane::{self, ControlPlane};
use crate::metrics::{AzureRequestCounts, AzureRequestTotals};
use crate::report::AzureMode;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Creates the state directory ignored by git, as tools' caches are: a `.gitignore` of `*` inside
/// it, so that a state directory inside a repository (the default `.aro-gitops` in the working
/// directory) never shows as untracked files, and a plain folder's import leaves it out.
pub(crate) fn prepare_state_dir(dir: &Path) -> Result<(), AgentError> {
    let failed = |source| AgentError::StateDir {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(failed)?;
    let ignore = dir.join(".gitignore");
    if !ignore.exists() {
        std::fs::write(
            &ignore,
            "# the aro-gitops state directory: never committed\n*\n",
        )
        .map_err(failed)?;
    }
    Ok(())
}

/// The cluster the agent works on, and what runs beside it.
pub struct Environment {
    pub cluster: Cluster,
    pub azure: AzureMode,
    /// Whether an Azure resource exists (for reconcile-policy-if-exists).
    pub azure_view: AzureView,
    pub control_plane: Option<ControlPlane>,
    simulator: Option<tokio::task::JoinHandle<()>>,
    /// The way to Azure through its SDK (credentials, Key Vault): real, or the simulator's HTTPS
    /// endpoints. `None` when Azure is simulated but no simulator runs (read-only commands), or
    /// when the platform has no trusted roots.
    pub azure_sdk: Option<Arc<AzureAccess>>,
    /// The simulator's Entra ID / Key Vault / IMDS listener, when Azure is simulated.
    sim_https: Option<SimHttps>,
}

impl Environment {
    /// On a real cluster (`--in-cluster` or `--kubeconfig`): that cluster, whatever ASO it runs.
    /// Otherwise the local control plane in `state_dir/control-plane` (CRDs preloaded) and the
    /// Azure simulator. The first line logged says which.
    /// `sim_delay: None` starts no simulator (read-only commands).
    pub async fn start(
        state_dir: &Path,
        target: &LiveTarget,
        sim_delay: Option<Duration>,
    ) -> Result<Environment, AgentError> {
        Self::start_with_faults(state_dir, target, sim_delay, None).await
    }

    /// As [`Environment::start`]; on the embedded control plane, `faults` are injected into the
    /// agent's requests (not the simulator's; see [`controlplane::faults`]).
    pub async fn start_with_faults(
        state_dir: &Path,
        target: &LiveTarget,
        sim_delay: Option<Duration>,
        faults: Option<controlplane::faults::FaultConfig>,
    ) -> Result<Environment, AgentError> {
        if let Some(cluster) = crate::agent::env::target::connect(target).await? {
            use_cluster_crds(cluster.client()).await;
            let azure_sdk = match AzureAccess::production() {
                Ok(a) => Some(Arc::new(a)),
                Err(e) => {
                    tracing::warn!(error = %e, "no way to Azure's endpoints: credentials and Key Vault are unavailable");
                    None
                }
            };
            let azure_view = match &azure_sdk {
                Some(a) => arm_reads::arm_view(&cluster, a.clone()),
                None => AzureView::unavailable(),
            };
            return Ok(Environment {
                azure: AzureMode::Real,
                azure_view,
                cluster,
                control_plane: None,
                simulator: None,
                azure_sdk,
                sim_https: None,
            });
        }
        tracing::info!(
            "{}",
            crate::agent::env::target::describe_embedded(&state_dir.join("control-plane"))
        );
        let mut config = controlplane::Config::new(state_dir.join("control-plane"));
        config.faults = faults;
        let cp = tokio::task::spawn_blocking(move || ControlPlane::open(config))
            .await
            .map_err(|e| AgentError::Task(e.to_string()))??;
        let counter = RequestCounter::default();
        let client = crate::apply::client::over(cp.router_with_faults(), &counter);
        let cluster = Cluster::new(client, counter);
        // One set of simulated vaults: served by the endpoints, set up from the Vault objects.
        let key_vaults = KeyVaults::default();
        let simulator = sim_delay.map(|d| simulate_azure(&cp, d, Some(key_vaults.clone())));
        let (sim_https, azure_sdk) = match sim_delay {
            Some(_) => {
                let token_file = simulated_token_file(state_dir)?;
                let (s, a) = simulate_azure_endpoints_with(cp.client(), Some(token_file)).await?;
                s.set_key_vault_handler(Arc::new(key_vaults));
                (Some(s), Some(a))
            }
            None => (None, None),
        };
        tracing::info!(state = %state_dir.display(), "using the embedded local control plane; Azure is SIMULATED");
        Ok(Environment {
            cluster,
            azure: AzureMode::Simulated,
            azure_view: AzureView::Simulated(cp.client()),
            control_plane: Some(cp),
            simulator,
            azure_sdk,
            sim_https,
        })
    }
}

/// Reads the CustomResourceDefinitions a real cluster serves and makes their schemas the ones
/// rendered custom resources are validated against ([`crate::validate::crd`]). When they cannot be
/// read, validation keeps the preloaded CRDs' schemas (and says so).
async fn use_cluster_crds(client: &kube::Client) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let api: kube::Api<CustomResourceDefinition> = kube::Api::all(client.clone());
    match api.list(&Default::default()).await {
        Ok(list) => {
            let crds: Vec<serde_json::Value> = list
                .items
                .iter()
                .filter_map(|c| serde_json::to_value(c).ok())
                .collect();
            for problem in crate::validate::crd::use_cluster_crds(&crds) {
                tracing::warn!(%problem, "a CRD's schema cannot be read: its kind is not schema-checked");
            }
            tracing::info!(
                crds = crds.len(),
                "rendered custom resources are validated against the cluster's CRD schemas"
            );
        }
        Err(e) => tracing::warn!(
            error = %e,
            "cannot list the cluster's CustomResourceDefinitions: custom resources are validated against the preloaded CRDs' schemas"
        ),
    }
}

/// Starts the Azure simulator beside `cp`, in this process: it plays ASO on the control plane's
/// objects, each resource provisioning for `delay`, and serves the simulated guest clusters' API.
/// Used by the embedded path and by `control-plane serve --simulate-azure`; it runs until the
/// handle is aborted. `key_vaults`: the simulated vaults the simulator sets up from each Vault
/// (faults, access; see [`KeyVaults::configure_vault`]).
pub fn simulate_azure(
    cp: &ControlPlane,
    delay: Duration,
    key_vaults: Option<KeyVaults>,
) -> tokio::task::JoinHandle<()> {
    let simulator = AzureSimulator::new(
        cp.client(),
        SimConfig {
            provisioning_delay: delay,
        },
    )
    .serving_guests();
    match key_vaults {
        Some(v) => simulator.with_key_vaults(v),
        None => simulator,
    }
    .spawn()
}

/// Starts the simulator's Azure endpoints (Entra ID, Key Vault, IMDS) on a loopback HTTPS
/// listener with a CA made now, knowing the identities of the cluster `client` reaches, and the
/// SDK access that trusts that CA and reaches that listener. It serves fresh simulated vaults
/// ([`KeyVaults`]); the embedded path gives it the ones its simulator sets up instead.
pub async fn simulate_azure_endpoints(
    client: kube::Client,
) -> Result<(SimHttps, Arc<AzureAccess>), AgentError> {
    simulate_azure_endpoints_with(client, None).await
}

/// The token file workload identities read when Azure is simulated: `AZURE_FEDERATED_TOKEN_FILE`
/// when set, else a simulated projected service-account token written under `state_dir` (a real
/// deployment mounts the projected token; see [`federated`]).
fn simulated_token_file(state_dir: &Path) -> Result<PathBuf, AgentError> {
    federated::token_file(state_dir).map_err(|e| {
        AgentError::AzureEndpoints(format!(
            "the simulated federated token file could not be written under {}: {e}",
            state_dir.display()
        ))
    })
}

/// As [`simulate_azure_endpoints`]; workload identities read `token_file` (`None`:
/// `AZURE_FEDERATED_TOKEN_FILE`).
pub async fn simulate_azure_endpoints_with(
    client: kube::Client,
    token_file: Option<PathBuf>,
) -> Result<(SimHttps, Arc<AzureAccess>), AgentError> {
    let directory = Arc::new(ControlPlaneDirectory::new(client.clone()));
    let server = SimHttps::start(directory, SimHttpsConfig::default())
        .await
        .map_err(|e| AgentError::AzureEndpoints(e.to_string()))?;
    let mut access = AzureAccess::simulated(server.ca_der(), server.addr())
        .map_err(|e| AgentError::AzureEndpoints(e.to_string()))?;
    if let Some(path) = token_file {
        access = access.with_federated_token_file(path);
    }
    server.set_key_vault_handler(Arc::new(KeyVaults::default()));
    server.serve_arm_from(client);
    Ok((server, Arc::new(access)))
}

/// The simulator published in the cluster `client` reaches (two GETs: its ConfigMap and its Lease).
async fn read_published(
    client: &kube::Client,
) -> Result<published::PublishedSimulator, published::NotFound> {
    use k8s_openapi::api::coordination::v1::Lease;
    use k8s_openapi::api::core::v1::ConfigMap;
    let read = |what: &'static str| {
        move |e: kube::Error| published::NotFound::Read {
            what,
            error: e.to_string(),
        }
    };
    let config_map = kube::Api::<ConfigMap>::namespaced(client.clone(), published::NAMESPACE)
        .get_opt(published::NAME)
        .await
        .map_err(read("ConfigMap"))?
        .and_then(|c| serde_json::to_value(c).ok());
    let lease = match config_map {
        Some(_) => kube::Api::<Lease>::namespaced(client.clone(), published::NAMESPACE)
            .get_opt(published::NAME)
            .await
            .map_err(read("Lease"))?
            .and_then(|l| serde_json::to_value(l).ok()),
        None => None,
    };
    published::find(config_map.as_ref(), lease.as_ref(), chrono::Utc::now())
}

/// The ConfigMap `control-plane serve --simulate-azure` writes in the agent's namespace, so that an
/// agent given only a kubeconfig knows Azure is simulated on that cluster (and never reports a
/// simulated resource as real). A real cluster has none.
fn simulated_marker() -> crate::object::ObjectKey {
    crate::apply::inventory::config_map_key("azure-simulated")
}

/// Marks the served control plane `cp` as one whose Azure is simulated (see [`simulated_marker`]).
pub async fn mark_simulated(cp: &ControlPlane) -> Result<(), AgentError> {
    let cluster = Cluster::new(cp.client(), RequestCounter::default());
    let key = simulated_marker();
    let ns = key.namespace.clone().unwrap_or_default();
    let namespace =
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
    let ns_key = crate::object::ObjectKey::from_object(&namespace).expect("a Namespace");
    cluster
        .apply(&ns_key, &namespace, SIMULATOR_MANAGER)
        .await?;
    let marker = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": key.name, "namespace": ns},
        "data": {"azure": "simulated by aro-gitops control-plane serve --simulate-azure"}});
    cluster.apply(&key, &marker, SIMULATOR_MANAGER).await?;
    Ok(())
}

/// The field manager of the simulated-Azure marker.
const SIMULATOR_MANAGER: &str = "aro-gitops-azure-simulator";

impl Environment {
    /// For a run on a kubeconfig's cluster: whether it is a local control plane with the
    /// simulator beside it (`control-plane serve --simulate-azure`, [`simulated_marker`]); then
    /// Azure counts as simulated, and the reports say so. One GET.
    pub async fn detect_simulated_azure(&mut self, state_dir: &Path) {
        if self.azure == AzureMode::Simulated
            || !matches!(self.cluster.get(&simulated_marker()).await, Ok(Some(_)))
        {
            return;
        }
        tracing::info!(
            "the cluster is a local control plane with the Azure simulator beside it; Azure is SIMULATED"
        );
        self.azure = AzureMode::Simulated;
        self.azure_view = AzureView::Simulated(self.cluster.client().clone());
        // The served control plane's identities, this process's own simulated endpoints.
        let endpoints = match simulated_token_file(state_dir) {
            Ok(token_file) => {
                simulate_azure_endpoints_with(self.cluster.client().clone(), Some(token_file)).await
            }
            Err(e) => Err(e),
        };
        match endpoints {
            Ok((server, access)) => {
                self.sim_https = Some(server);
                self.azure_sdk = Some(access);
            }
            Err(e) => {
                tracing::warn!(error = %e, "the simulated Azure endpoints could not start");
                self.sim_https = None;
                self.azure_sdk = None;
            }
        }
    }

    /// `--use-azure-simulator`: on a cluster, Azure is the simulator running against it (`aro-gitops
    /// azure-simulator`), found through what it publishes there ([`published`]): the SDK's
    /// requests go to its endpoints, trusting its CA only, existence questions go to its Resource
    /// Manager endpoint (as they would to Azure's), and the reports say Azure is simulated. An
    /// error says how to start one when none runs. The embedded control plane already simulates
    /// Azure: nothing changes.
    pub async fn use_azure_simulator(&mut self, state_dir: &Path) -> Result<(), AgentError> {
        if self.control_plane.is_some() {
            return Ok(());
        }
        let client = self.cluster.client().clone();
        let found = read_published(&client).await;
        let simulator = found.map_err(|e| AgentError::NoAzureSimulator(e.advice()))?;
        let access = AzureAccess::simulated(&simulator.ca_der, simulator.address)
            .map_err(|e| AgentError::AzureEndpoints(e.to_string()))?
            .with_federated_token_file(simulated_token_file(state_dir)?);
        tracing::info!(
            endpoints = %simulator.address,
            "--use-azure-simulator: Azure is SIMULATED by the simulator running against this API server"
        );
        let access = Arc::new(access);
        self.azure = AzureMode::Simulated;
        self.azure_view = arm_reads::arm_view(&self.cluster, access.clone());
        self.azure_sdk = Some(access);
        self.sim_https = None;
        Ok(())
    }

    /// The requests the simulated Azure endpoints served, when Azure is simulated by this process.
    pub fn azure_requests(&self) -> Option<AzureRequestTotals> {
        self.sim_https.as_ref().map(|s| s.counts().totals())
    }

    /// The live counters of the simulated Azure endpoints (for metrics), when simulated here.
    pub fn azure_request_counts(&self) -> Option<Arc<AzureRequestCounts>> {
        self.sim_https.as_ref().map(SimHttps::counts)
    }

    /// The simulator's HTTPS endpoints, when Azure is simulated by this process.
    pub fn azure_simulator(&self) -> Option<&SimHttps> {
        self.sim_https.as_ref()
    }

    /// Stops the simulator and lets go of the embedded control plane, waiting until its store is
    /// released (so the same state can be opened again right away).
    pub async fn shutdown(mut self) {
        if let Some(s) = self.simulator.take() {
            s.abort();
            let _ = s.await;
        }
        self.sim_https.take();
        let cp = self.control_plane.take();
        drop(self);
        if let Some(cp) = cp
            && !cp.close(Duration::from_secs(10)).await
        {
            tracing::warn!("the embedded control plane was still in use after 10 s");
        }
    }
}

impl Drop for Environment {
    fn drop(&mut self) {
        if let Some(s) = &self.simulator {
            s.abort();
        }
    }
}

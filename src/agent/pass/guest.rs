//! Reading the guest clusters (IO at the edge of the aggregated-APIServices gate,
//! `reconcile::aro::apiservices`): once a hosted cluster is up (its HcpOpenShiftCluster Ready and
//! its kubeconfig Secret written), the agent lists the guest cluster's
//! `apiregistration.k8s.io/v1` APIServices with a kube-rs client built from that Secret.
//!
//! One client per kubeconfig Secret, built from the Secret (read with its data then) and kept,
//! while the gate holds, until the Secret's resourceVersion changes. Once an AROControlPlane is
//! `Available` (the latch holds) its guest is read again at most every [`LATCHED_READ_INTERVAL`]
//! (and once per run): the condition stays informative without a LIST on every pass, and no client
//! is kept for it meanwhile.
//! Nothing read from the Secret reaches a log or a message: errors about the kubeconfig say which
//! Secret, never what it holds.

use crate::apply::Cluster;
use crate::kinds::{HCP_CLUSTER, is_aso_group};
use crate::object::{ObjectKey, str_at};
use crate::reconcile::aro::apiservices::{self, GuestRead};
use crate::reconcile::readiness::aso_readiness;
use crate::report::UnitOutcome;
use base64::Engine as _;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, ListParams};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a guest is read again once its control plane is Available.
pub const LATCHED_READ_INTERVAL: Duration = Duration::from_secs(300);
/// How soon a unit whose gate holds (the guest's APIServices not all Available, or not readable)
/// is passed over again: nothing in the local cluster changes when the guest gets better.
pub const RECHECK_AFTER: Duration = Duration::from_secs(2);
/// How long one LIST of a guest cluster may take.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A guest cluster, for the resourceVersion of the Secret its client was built from.
struct Entry {
    resource_version: String,
    /// The client (or why there is none), kept while the gate holds.
    client: Option<Result<kube::Client, String>>,
    /// When the guest was last read.
    last_read: Option<Instant>,
}

/// The guest clients of the agent, by kubeconfig Secret (namespace, name).
#[derive(Default)]
pub struct GuestClients {
    entries: Mutex<HashMap<(String, String), Entry>>,
}

/// The live object of `kind` named `name` in `namespace`, if any.
fn live_named<'a>(
    live: &'a HashMap<ObjectKey, Value>,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Option<&'a Value> {
    live.iter()
        .find(|(k, _)| {
            k.kind == kind && k.name == name && k.namespace.as_deref() == Some(namespace)
        })
        .map(|(_, v)| v)
}

impl GuestClients {
    /// What the guest cluster of the AROControlPlane `acp` (as in git; `live_acp` as live) says
    /// now, or why it was not read (see the module header).
    pub async fn read(
        &self,
        cluster: &Cluster,
        acp: &Value,
        live_acp: Option<&Value>,
        live: &HashMap<ObjectKey, Value>,
    ) -> GuestRead {
        let Some(namespace) = str_at(acp, "/metadata/namespace") else {
            return GuestRead::NotUp;
        };
        let hcp_up = apiservices::hosted_cluster_name(acp)
            .and_then(|n| {
                live.iter().find(|(k, _)| {
                    is_aso_group(&k.group)
                        && k.kind == HCP_CLUSTER
                        && k.name == n
                        && k.namespace.as_deref() == Some(namespace)
                })
            })
            .is_some_and(|(_, h)| aso_readiness(h).is_ready());
        let (secret, data_key) = apiservices::kubeconfig_secret(acp);
        let rv = live_named(live, "Secret", namespace, &secret)
            .and_then(|s| str_at(s, "/metadata/resourceVersion"))
            .map(str::to_string);
        let (true, Some(rv)) = (hcp_up, rv) else {
            return GuestRead::NotUp;
        };
        let id = (namespace.to_string(), secret.clone());
        let latched = apiservices::was_available(live_acp.and_then(|o| o.get("status")));
        let cached = {
            let entries = self.entries.lock().expect("guest clients lock");
            entries
                .get(&id)
                .filter(|e| e.resource_version == rv)
                .map(|e| (e.client.clone(), e.last_read))
        };
        let last_read = cached.as_ref().and_then(|(_, at)| *at);
        if latched && last_read.is_some_and(|at| at.elapsed() < LATCHED_READ_INTERVAL) {
            return GuestRead::Kept;
        }
        let client = match cached.and_then(|(client, _)| client) {
            Some(client) => client,
            None => build_client(cluster, namespace, &secret, &data_key).await,
        };
        let read = match &client {
            Ok(c) => list_apiservices(c.clone()).await,
            Err(why) => GuestRead::Failed(why.clone()),
        };
        tracing::debug!(%namespace, secret = %secret, read = read_kind(&read), "guest cluster APIServices read");
        // The client is kept while the gate holds (the guest is read again soon); once it is
        // passed it goes, and the next read (minutes later) builds one again: a converged fleet
        // keeps no client per cluster.
        let expected = apiservices::expected_apiservices(apiservices::oauth_enabled(acp));
        let passed = latched
            || apiservices::apiservices_condition(&expected, &read).is_some_and(|c| c.is_true());
        self.entries.lock().expect("guest clients lock").insert(
            id,
            Entry {
                resource_version: rv,
                client: (!passed).then_some(client),
                last_read: Some(Instant::now()),
            },
        );
        read
    }
}

fn read_kind(read: &GuestRead) -> &'static str {
    match read {
        GuestRead::NotUp => "not up",
        GuestRead::Kept => "kept",
        GuestRead::Listed(_) => "listed",
        GuestRead::NotFound => "not served",
        GuestRead::Failed(_) => "failed",
    }
}

/// A client for the kubeconfig in Secret `namespace/name`, key `data_key`. The error names the
/// Secret and says what is wrong, never what the Secret holds.
async fn build_client(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    data_key: &str,
) -> Result<kube::Client, String> {
    let key = ObjectKey {
        group: Default::default(),
        version: "v1".into(),
        kind: "Secret".into(),
        namespace: Some(namespace.into()),
        name: name.into(),
    };
    let what = format!("the kubeconfig Secret {namespace}/{name}");
    let secret = match cluster.get(&key).await {
        Ok(Some(s)) => s,
        Ok(None) => return Err(format!("{what} is gone")),
        Err(e) => return Err(format!("reading {what} failed: {e}")),
    };
    let text = secret
        .pointer(&format!("/data/{data_key}"))
        .and_then(Value::as_str)
        .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| format!("{what} has no kubeconfig under key {data_key:?}"))?;
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&text)
        .map_err(|_| format!("{what} (key {data_key:?}) does not hold a valid kubeconfig"))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .map_err(|_| {
            format!("{what} (key {data_key:?}): its kubeconfig has no usable cluster and user")
        })?;
    let mut config = config;
    config.read_timeout = Some(READ_TIMEOUT);
    config.connect_timeout = Some(READ_TIMEOUT);
    crate::apply::client::from_config(config, &crate::apply::RequestCounter::default()).map_err(
        |_| format!("{what} (key {data_key:?}): no client can be built from its kubeconfig"),
    )
}

/// One LIST of the guest's APIServices.
async fn list_apiservices(client: kube::Client) -> GuestRead {
    let api: Api<APIService> = Api::all(client);
    let listed = tokio::time::timeout(READ_TIMEOUT, api.list(&ListParams::default())).await;
    match listed {
        Err(_) => GuestRead::Failed(format!("no answer within {READ_TIMEOUT:?}")),
        Ok(Ok(list)) => GuestRead::Listed(
            list.items
                .into_iter()
                .filter_map(|a| serde_json::to_value(a).ok())
                .collect(),
        ),
        Ok(Err(kube::Error::Api(s))) if s.code == 404 => GuestRead::NotFound,
        Ok(Err(kube::Error::Api(s))) => {
            GuestRead::Failed(format!("{} {}: {}", s.code, s.reason, s.message))
        }
        Ok(Err(e)) => GuestRead::Failed(e.to_string()),
    }
}

/// Whether the unit of `outcome` waits on a guest cluster (an AROControlPlane whose `Available`
/// is held by the aggregated-APIServices gate): it is passed over again after [`RECHECK_AFTER`].
pub fn waits_on_guest(outcome: &UnitOutcome) -> bool {
    outcome.standing.conditions.iter().any(|o| {
        o.object.starts_with("AROControlPlane/")
            && o.conditions.iter().any(|c| {
                c.type_ == apiservices::AVAILABLE_CONDITION
                    && c.status != "True"
                    && c.reason
                        .as_deref()
                        .is_some_and(|r| r != apiservices::WAITING_FOR_CONTROL_PLANE_REASON)
            })
    })
}

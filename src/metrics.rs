//! The agent's metrics: one [`Registry`] for the process, served as OpenMetrics text on
//! `/metrics` when `run --metrics-bind-address` is set.
//!
//! Request counts are read from the counters the agent already keeps ([`RequestCounter`], the
//! Azure simulator's [`AzureRequestCounts`]) at scrape time, so nothing is counted twice. No
//! counter carries a per-cluster label.

use crate::apply::RequestCounter;
use crate::azuresim::https::AzureRequestCounts;
use crate::report::Phase;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::net::SocketAddr;
use std::sync::Arc;

/// The content type of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Every phase a unit can be in, so each `aro_gitops_units{phase}` series is present (0 too).
const PHASES: [Phase; 4] = [
    Phase::Converged,
    Phase::Progressing,
    Phase::Blocked,
    Phase::Failed,
];

type PhaseLabel = [(&'static str, &'static str); 1];

/// The process's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    units: Family<PhaseLabel, Gauge>,
    leader: Gauge,
}

impl Metrics {
    /// Metrics over the agent's Kubernetes request counter and, when Azure is simulated by this
    /// process, the simulator's request counts (without them the Azure family is absent: the
    /// agent does not count requests to real Azure).
    pub fn new(kube: RequestCounter, azure: Option<Arc<AzureRequestCounts>>) -> Self {
        let mut registry = Registry::default();
        let units = Family::<PhaseLabel, Gauge>::default();
        registry.register(
            "aro_gitops_units",
            "Units by the phase of their last pass",
            units.clone(),
        );
        let leader = Gauge::<i64>::default();
        // An instance that runs without election leads; the election sets it (`set_leader`).
        leader.set(1);
        registry.register(
            "aro_gitops_leader",
            "1 while this instance leads or runs without election, else 0",
            leader.clone(),
        );
        registry.register_collector(Box::new(KubeRequests(kube)));
        if let Some(counts) = azure {
            registry.register_collector(Box::new(AzureRequests(counts)));
        }
        let metrics = Metrics {
            registry,
            units,
            leader,
        };
        metrics.set_units([]);
        metrics
    }

    /// Sets `aro_gitops_units{phase}` from the phases of a pass's units.
    pub fn set_units(&self, phases: impl IntoIterator<Item = Phase>) {
        let mut counts = [0i64; PHASES.len()];
        for p in phases {
            if let Some(i) = PHASES.iter().position(|q| *q == p) {
                counts[i] += 1;
            }
        }
        for (p, n) in PHASES.iter().zip(counts) {
            self.units.get_or_create(&[("phase", p.as_str())]).set(n);
        }
    }

    /// Sets `aro_gitops_leader`: 1 while this instance leads, else 0 (with `--leader-elect`).
    pub fn set_leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    /// The exposition in OpenMetrics text.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String does not fail");
        out
    }
}

/// `aro_gitops_kube_requests_total{verb}`, read from the agent's request counter.
#[derive(Debug)]
struct KubeRequests(RequestCounter);

impl Collector for KubeRequests {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let help = "Requests the agent sent to the Kubernetes API, by verb";
        let mut family = encoder.encode_descriptor(
            "aro_gitops_kube_requests",
            help,
            None,
            prometheus_client::metrics::MetricType::Counter,
        )?;
        for (verb, n) in self.0.verbs() {
            let labels = [("verb", verb)];
            ConstCounter::new(n).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

/// `aro_gitops_azure_requests_total{service,simulated="true"}`, read from the Azure simulator.
#[derive(Debug)]
struct AzureRequests(Arc<AzureRequestCounts>);

impl Collector for AzureRequests {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let help = "Requests the simulated Azure endpoints served (token: Entra ID and IMDS)";
        let mut family = encoder.encode_descriptor(
            "aro_gitops_azure_requests",
            help,
            None,
            prometheus_client::metrics::MetricType::Counter,
        )?;
        let totals = self.0.totals();
        for (service, n) in [("token", totals.token), ("keyvault", totals.key_vault)] {
            let labels = [("service", service), ("simulated", "true")];
            ConstCounter::new(n).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

pub use crate::serving::Server;

/// Binds `addr` and serves `/metrics` in the background.
pub async fn serve(metrics: Arc<Metrics>, addr: SocketAddr) -> std::io::Result<Server> {
    let router = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let body = metrics.encode();
            async move { ([(http::header::CONTENT_TYPE, CONTENT_TYPE)], body) }
        }),
    );
    crate::serving::serve(router, addr, "metrics").await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<&str> {
        text.lines().collect()
    }

    #[test]
    fn exposition_names_labels_and_values() {
        let azure = Arc::new(AzureRequestCounts::default());
        azure.count_token();
        azure.count_token();
        azure.count_key_vault();
        let metrics = Metrics::new(RequestCounter::default(), Some(azure.clone()));
        metrics.set_units([Phase::Converged, Phase::Converged, Phase::Failed]);
        let text = metrics.encode();
        let l = lines(&text);
        for want in [
            "# TYPE aro_gitops_azure_requests counter",
            r#"aro_gitops_azure_requests_total{service="token",simulated="true"} 2"#,
            r#"aro_gitops_azure_requests_total{service="keyvault",simulated="true"} 1"#,
            "# TYPE aro_gitops_kube_requests counter",
            r#"aro_gitops_kube_requests_total{verb="get"} 0"#,
            r#"aro_gitops_kube_requests_total{verb="delete"} 0"#,
            "# TYPE aro_gitops_units gauge",
            r#"aro_gitops_units{phase="Converged"} 2"#,
            r#"aro_gitops_units{phase="Progressing"} 0"#,
            r#"aro_gitops_units{phase="Blocked"} 0"#,
            r#"aro_gitops_units{phase="Failed"} 1"#,
            "# TYPE aro_gitops_leader gauge",
            "aro_gitops_leader 1",
            "# EOF",
        ] {
            assert!(l.contains(&want), "missing {want:?} in:\n{text}");
        }
        metrics.set_leader(false);
        assert!(metrics.encode().lines().any(|l| l == "aro_gitops_leader 0"));
        // Read at scrape time: a later count shows on the next scrape.
        azure.count_token();
        assert!(
            metrics
                .encode()
                .contains(r#"aro_gitops_azure_requests_total{service="token",simulated="true"} 3"#)
        );
    }

    #[test]
    fn without_simulated_azure_the_azure_family_is_absent() {
        let text = Metrics::new(RequestCounter::default(), None).encode();
        assert!(!text.contains("aro_gitops_azure_requests"), "{text}");
        assert!(text.contains(r#"aro_gitops_kube_requests_total{verb="watch"} 0"#));
    }

    #[tokio::test]
    async fn serves_openmetrics_text_on_slash_metrics() {
        let metrics = Arc::new(Metrics::new(RequestCounter::default(), None));
        let server = serve(metrics, "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        assert!(
            response
                .to_ascii_lowercase()
                .contains(&format!("content-type: {CONTENT_TYPE}")),
            "{response}"
        );
        assert!(response.contains("aro_gitops_leader 1"), "{response}");
    }
}

//! The agent's metrics: one [`Registry`] for the process, served as OpenMetrics text on
//! `/metrics` when `run --metrics-bind-address` is set.
//!
//! Request counts are read from the counters the agent already keeps ([`RequestCounter`], and the
//! [`AzureRequestCounts`] the Azure simulator increments) at scrape time, so nothing is counted
//! twice. No counter carries a per-cluster label.
//!
//! The controller's own: `aro_gitops_reconcile_total{result}` and
//! `aro_gitops_reconcile_duration_seconds` count and time every pass of a unit (see
//! [`PassResult`] for the results), `aro_gitops_renders_total` the units rendered (a unit whose
//! earlier render stands is not counted), `aro_gitops_queue_depth` the units waiting in the work
//! queue (0 when idle). `aro_gitops_rollout_wave` and `aro_gitops_rollout_paused` say where the
//! newest revision's rollout stands ([`Metrics::rollout`]).

mod azure;
mod rollout;

use crate::apply::RequestCounter;
use crate::report::Phase;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use std::net::SocketAddr;
use std::sync::Arc;

use azure::AzureRequests;
pub use azure::{AzureRequestCounts, AzureRequestTotals};

/// The content type of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Every phase a unit can be in, so each `aro_gitops_units{phase}` series is present (0 too).
const PHASES: [Phase; 6] = [
    Phase::Converged,
    Phase::Progressing,
    Phase::Blocked,
    Phase::Failed,
    Phase::NotStarted,
    Phase::Interrupted,
];

type PhaseLabel = [(&'static str, &'static str); 1];

/// The `provider` label of `aro_gitops_webhook_requests_total`.
pub const WEBHOOK_PROVIDERS: [&str; 2] = ["github", "gitlab"];
/// The `result` label of `aro_gitops_webhook_requests_total`: a fetch requested; acknowledged
/// without one (another repository or branch, a ping, another event); refused (no secret, a bad
/// signature or token); a body over the limit; a payload that could not be read.
pub const WEBHOOK_RESULTS: [&str; 5] = [
    "accepted",
    "ignored",
    "unauthorized",
    "too_large",
    "malformed",
];
/// The `result` label of `aro_gitops_source_fetches_total`: fetched; unreachable, so the last good
/// revision serves; failed with no revision to serve.
pub const FETCH_RESULTS: [&str; 3] = ["success", "stale", "failure"];

/// `aro_gitops_webhook_requests_total{provider,result}` and
/// `aro_gitops_source_fetches_total{result}`, every series present from the start (at 0).
#[derive(Debug, Default)]
struct TriggerCounters {
    webhook_requests: Family<[(&'static str, &'static str); 2], Counter>,
    source_fetches: Family<[(&'static str, &'static str); 1], Counter>,
}

impl TriggerCounters {
    fn register(registry: &mut Registry) -> TriggerCounters {
        let counters = TriggerCounters::default();
        for provider in WEBHOOK_PROVIDERS {
            for result in WEBHOOK_RESULTS {
                let _ = counters
                    .webhook_requests
                    .get_or_create(&[("provider", provider), ("result", result)]);
            }
        }
        for result in FETCH_RESULTS {
            let _ = counters.source_fetches.get_or_create(&[("result", result)]);
        }
        registry.register(
            "aro_gitops_webhook_requests",
            "Webhook requests received, by provider and result",
            counters.webhook_requests.clone(),
        );
        registry.register(
            "aro_gitops_source_fetches",
            "Fetches of the source, whatever triggered them, by result",
            counters.source_fetches.clone(),
        );
        counters
    }
}

/// How one pass of a unit ended, the `result` of `aro_gitops_reconcile_total`: from the phase
/// of its outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassResult {
    /// Converged: nothing left to do until something changes.
    Success,
    /// Progressing or Blocked: the unit waits for something (a resource to become ready, an
    /// object it depends on) and runs again when that changes.
    Requeue,
    /// Failed: an error, a failed object or a failed step; retried after a backoff.
    Error,
}

impl PassResult {
    const ALL: [PassResult; 3] = [PassResult::Success, PassResult::Requeue, PassResult::Error];

    pub fn of(phase: Phase) -> PassResult {
        match phase {
            Phase::Converged => PassResult::Success,
            // A pass never ends NotStarted or Interrupted (a converge says so of the units it
            // did not reach or cut short): the unit runs again.
            Phase::Progressing | Phase::Blocked | Phase::NotStarted | Phase::Interrupted => {
                PassResult::Requeue
            }
            Phase::Failed => PassResult::Error,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PassResult::Success => "success",
            PassResult::Requeue => "requeue",
            PassResult::Error => "error",
        }
    }
}

/// The buckets of `aro_gitops_reconcile_duration_seconds`: from 5 ms (a pass that finds nothing
/// to do) to a minute (a pass that waits on slow API calls).
const PASS_BUCKETS: [f64; 13] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// The process's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    units: Family<PhaseLabel, Gauge>,
    triggers: TriggerCounters,
    passes: Family<[(&'static str, &'static str); 1], Counter>,
    pass_seconds: Histogram,
    renders: Counter,
    queue_depth: Gauge,
    leader: Gauge,
    verifications: Family<[(&'static str, &'static str); 1], Counter>,
    refused: Gauge,
    rollout: rollout::RolloutGauges,
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
        let passes = Family::<[(&'static str, &'static str); 1], Counter>::default();
        for r in PassResult::ALL {
            let _ = passes.get_or_create(&[("result", r.as_str())]);
        }
        registry.register(
            "aro_gitops_reconcile",
            "Passes over a unit, by how they ended (success: converged; requeue: progressing or \
             blocked, runs again when what it waits for changes; error: failed)",
            passes.clone(),
        );
        let pass_seconds = Histogram::new(PASS_BUCKETS);
        registry.register_with_unit(
            "aro_gitops_reconcile_duration",
            "How long each pass over a unit took",
            Unit::Seconds,
            pass_seconds.clone(),
        );
        let renders = Counter::default();
        registry.register(
            "aro_gitops_renders",
            "Units rendered (a unit whose inputs did not change keeps its earlier render and is not counted)",
            renders.clone(),
        );
        let queue_depth = Gauge::default();
        registry.register(
            "aro_gitops_queue_depth",
            "Units waiting in the work queue (ready or waiting for their time; not those running)",
            queue_depth.clone(),
        );
        let verifications = Family::<[(&'static str, &'static str); 1], Counter>::default();
        for r in crate::source::signature::RESULTS {
            let _ = verifications.get_or_create(&[("result", r)]);
        }
        registry.register(
            "aro_gitops_revision_verification",
            "Signature checks of fetched revisions (--verify-signatures), by result",
            verifications.clone(),
        );
        let refused = Gauge::default();
        registry.register(
            "aro_gitops_revision_refused",
            "1 while the newest revision is refused (unsigned, untrusted or invalid signature) and \
             the last verified one stays in force, else 0",
            refused.clone(),
        );
        let triggers = TriggerCounters::register(&mut registry);
        let rollout = rollout::RolloutGauges::register(&mut registry);
        let metrics = Metrics {
            registry,
            units,
            triggers,
            passes,
            pass_seconds,
            renders,
            queue_depth,
            leader,
            verifications,
            refused,
            rollout,
        };
        metrics.set_units([]);
        metrics
    }

    /// Counts one pass over a unit that ended in `phase` after `elapsed`.
    pub fn pass_ended(&self, phase: Phase, elapsed: std::time::Duration) {
        let result = PassResult::of(phase);
        self.passes
            .get_or_create(&[("result", result.as_str())])
            .inc();
        self.pass_seconds.observe(elapsed.as_secs_f64());
    }

    /// Counts `n` units rendered.
    pub fn rendered(&self, n: usize) {
        self.renders.inc_by(n as u64);
    }

    /// Sets `aro_gitops_queue_depth`.
    pub fn set_queue_depth(&self, n: usize) {
        self.queue_depth.set(n as i64);
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

    /// Counts a webhook request: `provider` and `result` are among [`WEBHOOK_PROVIDERS`] and
    /// [`WEBHOOK_RESULTS`].
    pub fn count_webhook(&self, provider: &'static str, result: &'static str) {
        let labels = [("provider", provider), ("result", result)];
        self.triggers.webhook_requests.get_or_create(&labels).inc();
    }

    /// Counts a fetch of the source: `result` is among [`FETCH_RESULTS`].
    pub fn count_fetch(&self, result: &'static str) {
        let labels = [("result", result)];
        self.triggers.source_fetches.get_or_create(&labels).inc();
    }

    /// Counts a signature check of a fetched revision (`result` among
    /// [`crate::source::signature::RESULTS`]) and sets `aro_gitops_revision_refused`.
    pub fn count_verification(&self, result: &'static str) {
        self.verifications
            .get_or_create(&[("result", result)])
            .inc();
        self.refused.set(i64::from(result != "verified"));
    }

    /// Sets `aro_gitops_leader`: 1 while this instance leads, else 0 (with `--leader-elect`).
    pub fn set_leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    /// Sets `aro_gitops_rollout_wave` (the 1-based wave in progress, 0 when none) and
    /// `aro_gitops_rollout_paused` from the newest revision's rollout (`None`: no rollout).
    pub fn rollout(&self, view: Option<&crate::rollout::RolloutView>) {
        self.rollout.set(view);
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
    fn webhook_and_fetch_counters_start_at_zero_and_count() {
        let metrics = Metrics::new(RequestCounter::default(), None);
        let text = metrics.encode();
        for want in [
            "# TYPE aro_gitops_webhook_requests counter",
            r#"aro_gitops_webhook_requests_total{provider="github",result="accepted"} 0"#,
            r#"aro_gitops_webhook_requests_total{provider="gitlab",result="malformed"} 0"#,
            "# TYPE aro_gitops_source_fetches counter",
            r#"aro_gitops_source_fetches_total{result="success"} 0"#,
            r#"aro_gitops_source_fetches_total{result="failure"} 0"#,
        ] {
            assert!(lines(&text).contains(&want), "missing {want:?} in:\n{text}");
        }
        metrics.count_webhook("gitlab", "unauthorized");
        metrics.count_webhook("gitlab", "unauthorized");
        metrics.count_fetch("stale");
        let text = metrics.encode();
        for want in [
            r#"aro_gitops_webhook_requests_total{provider="gitlab",result="unauthorized"} 2"#,
            r#"aro_gitops_source_fetches_total{result="stale"} 1"#,
        ] {
            assert!(lines(&text).contains(&want), "missing {want:?} in:\n{text}");
        }
    }

    #[test]
    fn revision_verifications_count_by_result_and_the_refused_gauge_follows() {
        let metrics = Metrics::new(RequestCounter::default(), None);
        let text = metrics.encode();
        for want in [
            r#"aro_gitops_revision_verification_total{result="verified"} 0"#,
            r#"aro_gitops_revision_verification_total{result="invalid"} 0"#,
            "aro_gitops_revision_refused 0",
        ] {
            assert!(lines(&text).contains(&want), "missing {want:?} in:\n{text}");
        }
        metrics.count_verification("untrusted");
        let text = metrics.encode();
        for want in [
            r#"aro_gitops_revision_verification_total{result="untrusted"} 1"#,
            "aro_gitops_revision_refused 1",
        ] {
            assert!(lines(&text).contains(&want), "missing {want:?} in:\n{text}");
        }
        metrics.count_verification("verified");
        assert!(lines(&metrics.encode()).contains(&"aro_gitops_revision_refused 0"));
    }

    #[test]
    fn passes_renders_and_queue_depth() {
        let metrics = Metrics::new(RequestCounter::default(), None);
        let text = metrics.encode();
        for want in [
            "# TYPE aro_gitops_reconcile counter",
            r#"aro_gitops_reconcile_total{result="success"} 0"#,
            r#"aro_gitops_reconcile_total{result="requeue"} 0"#,
            r#"aro_gitops_reconcile_total{result="error"} 0"#,
            "# TYPE aro_gitops_reconcile_duration_seconds histogram",
            "# UNIT aro_gitops_reconcile_duration_seconds seconds",
            "aro_gitops_reconcile_duration_seconds_count 0",
            "# TYPE aro_gitops_renders counter",
            "aro_gitops_renders_total 0",
            "# TYPE aro_gitops_queue_depth gauge",
            "aro_gitops_queue_depth 0",
        ] {
            assert!(lines(&text).contains(&want), "missing {want:?} in:\n{text}");
        }
        let ms = std::time::Duration::from_millis;
        metrics.pass_ended(Phase::Converged, ms(3));
        metrics.pass_ended(Phase::Blocked, ms(200));
        metrics.pass_ended(Phase::Progressing, ms(2_000));
        metrics.pass_ended(Phase::Failed, ms(90_000));
        metrics.rendered(3);
        metrics.rendered(0);
        metrics.rendered(1);
        metrics.set_queue_depth(5);
        let text = metrics.encode();
        for want in [
            r#"aro_gitops_reconcile_total{result="success"} 1"#,
            r#"aro_gitops_reconcile_total{result="requeue"} 2"#,
            r#"aro_gitops_reconcile_total{result="error"} 1"#,
            "aro_gitops_reconcile_duration_seconds_count 4",
            r#"aro_gitops_reconcile_duration_seconds_bucket{le="0.005"} 1"#,
            r#"aro_gitops_reconcile_duration_seconds_bucket{le="0.25"} 2"#,
            r#"aro_gitops_reconcile_duration_seconds_bucket{le="2.5"} 3"#,
            r#"aro_gitops_reconcile_duration_seconds_bucket{le="60.0"} 3"#,
            r#"aro_gitops_reconcile_duration_seconds_bucket{le="+Inf"} 4"#,
            "aro_gitops_renders_total 4",
            "aro_gitops_queue_depth 5",
        ] {
            assert!(lines(&text).contains(&want), "missing {want:?} in:\n{text}");
        }
        metrics.set_queue_depth(0);
        assert!(lines(&metrics.encode()).contains(&"aro_gitops_queue_depth 0"));
    }

    #[test]
    fn the_rollout_gauges_follow_the_view() {
        use crate::rollout::{Paused, RolloutView, WaveState, WaveView};
        let metrics = Metrics::new(RequestCounter::default(), None);
        let has = |m: &Metrics, want: &str| lines(&m.encode()).contains(&want);
        for want in [
            "# TYPE aro_gitops_rollout_wave gauge",
            "aro_gitops_rollout_wave 0",
            "# TYPE aro_gitops_rollout_paused gauge",
            "aro_gitops_rollout_paused 0",
        ] {
            assert!(has(&metrics, want), "missing {want:?}");
        }
        let wave = |name: &str, state| WaveView {
            name: name.into(),
            units: vec![format!("clusters/{name}")],
            state,
        };
        let mut view = RolloutView {
            revision: "0123456789".into(),
            waves: vec![
                wave("dev", WaveState::Done),
                wave("prod", WaveState::Rolling),
            ],
            current: Some(1),
            paused: None,
            waiting_for_window: vec![],
        };
        metrics.rollout(Some(&view));
        assert!(has(&metrics, "aro_gitops_rollout_wave 2"));
        assert!(has(&metrics, "aro_gitops_rollout_paused 0"));
        view.paused = Some(Paused {
            wave: "prod".into(),
            failing: vec![("clusters/prod".into(), vec!["boom".into()])],
        });
        metrics.rollout(Some(&view));
        assert!(has(&metrics, "aro_gitops_rollout_paused 1"));
        view.current = None;
        view.paused = None;
        metrics.rollout(Some(&view));
        assert!(
            has(&metrics, "aro_gitops_rollout_wave 0"),
            "every wave done"
        );
        metrics.rollout(None);
        assert!(has(&metrics, "aro_gitops_rollout_wave 0"));
        assert!(has(&metrics, "aro_gitops_rollout_paused 0"));
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

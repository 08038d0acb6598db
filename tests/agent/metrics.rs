//! A long-running `aro-gitops run --metrics-bind-address 127.0.0.1:0`: it says where it serves,
//! and `/metrics` shows the simulated Azure requests, the Kubernetes requests by verb, the units
//! by phase and the leader gauge.

use super::resync::{Running, http_get};
use super::*;

/// How long the agent may take to start serving, and then to converge the fleet (a debug build, a
/// shared machine).
const DEADLINE: Duration = Duration::from_secs(180);

/// The value of the sample `series` (name and labels, as exposed), if present.
pub(super) fn sample(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn metrics_show_simulated_azure_and_kube_requests_while_the_agent_runs() {
    let f = super::keyvault::managed_key_fixture();
    let agent = Running::start_with(&f, &["--metrics-bind-address", "127.0.0.1:0"]);
    let addr = agent.served_address("metrics: serving on http://", "/metrics", DEADLINE);

    let token = r#"aro_gitops_azure_requests_total{service="token",simulated="true"}"#;
    let deadline = Instant::now() + DEADLINE;
    let (head, body) = loop {
        let (head, body) = http_get(&addr, "/metrics").expect("the metrics endpoint answers");
        let converged = sample(&body, r#"aro_gitops_units{phase="Converged"}"#);
        if sample(&body, token).is_some_and(|n| n >= 1.0) && converged == Some(2.0) {
            break (head, body);
        }
        assert!(
            Instant::now() < deadline,
            "no token request and two converged units within {DEADLINE:?}:\n{body}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/openmetrics-text; version=1.0.0; charset=utf-8"),
        "{head}"
    );
    let keyvault = r#"aro_gitops_azure_requests_total{service="keyvault",simulated="true"}"#;
    assert!(sample(&body, keyvault).is_some_and(|n| n >= 1.0), "{body}");
    for verb in [
        "get", "list", "watch", "create", "update", "patch", "delete",
    ] {
        let series = format!(r#"aro_gitops_kube_requests_total{{verb="{verb}"}}"#);
        assert!(sample(&body, &series).is_some(), "no {series} in:\n{body}");
    }
    for verb in ["list", "watch", "patch"] {
        let series = format!(r#"aro_gitops_kube_requests_total{{verb="{verb}"}}"#);
        assert!(sample(&body, &series).is_some_and(|n| n >= 1.0), "{body}");
    }
    assert_eq!(sample(&body, "aro_gitops_leader"), Some(1.0), "{body}");
    assert!(body.trim_end().ends_with("# EOF"), "{body}");
}

//! Where an Azure simulator running against a cluster (`aro-gitops azure-simulator`) says its
//! endpoints are: the one thing the agent reads of it, with `--use-azure-simulator`.
//!
//! The simulator keeps, in [`NAMESPACE`] of the cluster it plays ASO on, the ConfigMap [`NAME`]
//! (its listener's address, the CA its certificates come from, the API server it plays against)
//! and the Lease [`NAME`], renewed while it runs. The agent trusts that CA only, sends the
//! simulated host names to that address (see [`super::transport`]) and counts the simulator as
//! gone once the Lease has not been renewed within its duration. The shapes and the decisions are
//! here, pure; the writes are the simulator's, the reads the agent's.

use serde_json::{Value, json};
use std::net::SocketAddr;

/// The namespace of the ConfigMap and the Lease (the agent's own).
pub const NAMESPACE: &str = "aro-gitops-system";
/// The name of the ConfigMap and of the Lease.
pub const NAME: &str = "aro-gitops-azure-simulator";
/// The ConfigMap's key holding the listener's address (`127.0.0.1:PORT`).
pub const ADDRESS_KEY: &str = "address";
/// The ConfigMap's key holding the CA certificate (PEM) the listener's certificate chains to.
pub const CA_KEY: &str = "ca.crt";
/// The ConfigMap's key naming the API server the simulator plays against (for people).
pub const SERVER_KEY: &str = "apiServer";
/// How long the Lease holds without a renewal.
pub const LEASE_SECONDS: i64 = 15;
/// How often the simulator renews it.
pub const RENEW_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// The simulator as the agent finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedSimulator {
    pub address: SocketAddr,
    /// The CA certificate, DER.
    pub ca_der: Vec<u8>,
}

/// Why no usable simulator was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotFound {
    #[error("no ConfigMap {NAMESPACE}/{NAME}")]
    NoConfigMap,
    #[error("the ConfigMap {NAMESPACE}/{NAME} {0}")]
    Malformed(String),
    #[error("no Lease {NAMESPACE}/{NAME}: the simulator is not running")]
    NoLease,
    #[error(
        "the Lease {NAMESPACE}/{NAME} was last renewed {0}, longer ago than its duration: the simulator is not running"
    )]
    Expired(String),
    #[error("reading {what} {NAMESPACE}/{NAME}: {error}")]
    Read { what: &'static str, error: String },
}

impl NotFound {
    /// The whole message the agent gives, with what to do.
    pub fn advice(&self) -> String {
        format!(
            "--use-azure-simulator: no Azure simulator runs against this API server ({self}); \
             start one with `aro-gitops azure-simulator --kubeconfig KUBECONFIG` (its CRDs first: \
             `aro-gitops crds | kubectl apply --server-side -f -`), or leave out --use-azure-simulator \
             to use real Azure"
        )
    }
}

/// The ConfigMap the simulator publishes, for server-side apply.
pub fn config_map(address: SocketAddr, ca_pem: &str, api_server: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": NAME, "namespace": NAMESPACE,
            "annotations": {"aro-gitops.dev/simulated": "the aro-gitops Azure simulator's endpoints: nothing here is real Azure"}},
        "data": {ADDRESS_KEY: address.to_string(), CA_KEY: ca_pem, SERVER_KEY: api_server},
    })
}

/// The Lease the simulator renews, for server-side apply: held by `holder`, renewed at `now`
/// (RFC 3339 with microseconds, as `MicroTime`).
pub fn lease(holder: &str, now: &str) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": now},
    })
}

/// Now as a Lease's `renewTime`.
pub fn micro_time(now: chrono::DateTime<chrono::Utc>) -> String {
    now.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// The simulator the ConfigMap `config_map` (its JSON) and the Lease `lease` describe, when the
/// Lease was renewed within its duration before `now`.
pub fn find(
    config_map: Option<&Value>,
    lease: Option<&Value>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<PublishedSimulator, NotFound> {
    let data = config_map.ok_or(NotFound::NoConfigMap)?;
    let field = |key: &str| {
        data.pointer(&format!("/data/{}", key.replace('/', "~1")))
            .and_then(Value::as_str)
            .ok_or_else(|| NotFound::Malformed(format!("has no data key {key}")))
    };
    let address: SocketAddr = field(ADDRESS_KEY)?
        .parse()
        .map_err(|e| NotFound::Malformed(format!("has an address that is not IP:PORT ({e})")))?;
    let ca_der = super::assertion::first_certificate(field(CA_KEY)?.as_bytes())
        .map_err(|_| NotFound::Malformed(format!("has no PEM certificate under {CA_KEY}")))?
        .to_vec();
    let spec = lease.ok_or(NotFound::NoLease)?.get("spec");
    let renewed = spec
        .and_then(|s| s.get("renewTime"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let seconds = spec
        .and_then(|s| s.get("leaseDurationSeconds"))
        .and_then(Value::as_i64)
        .unwrap_or(LEASE_SECONDS);
    let alive = chrono::DateTime::parse_from_rfc3339(renewed)
        .is_ok_and(|at| now.signed_duration_since(at) <= chrono::Duration::seconds(seconds));
    if !alive {
        let when = if renewed.is_empty() { "never" } else { renewed };
        return Err(NotFound::Expired(when.to_string()));
    }
    Ok(PublishedSimulator { address, ca_der })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca_pem() -> String {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.self_signed(&key).unwrap().pem()
    }

    fn at(s: &str) -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::parse_from_rfc3339(s).unwrap().into()
    }

    #[test]
    fn a_published_simulator_with_a_fresh_lease_is_found() {
        let addr: SocketAddr = "127.0.0.1:4443".parse().unwrap();
        let cm = config_map(addr, &ca_pem(), "https://127.0.0.1:6443");
        let now = at("2026-11-28T20:00:10Z");
        let l = lease("sim-1", &micro_time(at("2026-11-28T20:00:00Z")));
        let found = find(Some(&cm), Some(&l), now).unwrap();
        assert_eq!(found.address, addr);
        assert!(!found.ca_der.is_empty());
        // Not renewed for longer than its duration: gone.
        let late = at("2026-11-28T20:00:16Z");
        let err = find(Some(&cm), Some(&l), late).unwrap_err();
        assert!(matches!(err, NotFound::Expired(_)), "{err}");
        assert!(
            err.advice()
                .contains("aro-gitops azure-simulator --kubeconfig")
        );
    }

    #[test]
    fn what_is_missing_is_named() {
        let now = at("2026-11-28T20:00:00Z");
        assert_eq!(find(None, None, now), Err(NotFound::NoConfigMap));
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let cm = config_map(addr, &ca_pem(), "s");
        assert_eq!(find(Some(&cm), None, now), Err(NotFound::NoLease));
        let bad = config_map(addr, "not a certificate", "s");
        assert!(matches!(
            find(Some(&bad), None, now),
            Err(NotFound::Malformed(m)) if m.contains(CA_KEY)
        ));
        let mut no_address = config_map(addr, &ca_pem(), "s");
        no_address["data"][ADDRESS_KEY] = json!("somewhere");
        assert!(matches!(
            find(Some(&no_address), None, now),
            Err(NotFound::Malformed(_))
        ));
        assert!(NotFound::NoConfigMap.advice().contains("aro-gitops crds"));
    }
}

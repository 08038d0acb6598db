//! The request counts of the simulated Azure endpoints: the simulator increments an
//! [`AzureRequestCounts`] it is handed, the run's summary prints its [`AzureRequestTotals`], and
//! `aro_gitops_azure_requests_total` reads it at scrape time. The type lives here, with its reader,
//! so that the agent's metrics do not depend on the simulator.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// How many requests the simulated Azure endpoints have served, for the run's summary and metrics.
#[derive(Debug, Default)]
pub struct AzureRequestCounts {
    token: AtomicU64,
    key_vault: AtomicU64,
}

impl AzureRequestCounts {
    /// Requests to Entra ID's token endpoint and to IMDS, whatever their outcome.
    pub fn token_requests(&self) -> u64 {
        self.token.load(Ordering::Relaxed)
    }

    /// Requests to Key Vault, whatever their outcome (counted by the Key Vault handler).
    pub fn key_vault_requests(&self) -> u64 {
        self.key_vault.load(Ordering::Relaxed)
    }

    pub fn count_token(&self) {
        self.token.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_key_vault(&self) {
        self.key_vault.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts now.
    pub fn totals(&self) -> AzureRequestTotals {
        AzureRequestTotals {
            token: self.token_requests(),
            key_vault: self.key_vault_requests(),
        }
    }
}

/// The simulated Azure requests of a run, as its summary reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AzureRequestTotals {
    pub token: u64,
    pub key_vault: u64,
}

impl AzureRequestTotals {
    /// The line the run's summary prints.
    pub fn summary_line(&self) -> String {
        format!(
            "azure: {} token requests, {} key vault requests (simulated)",
            self.token, self.key_vault
        )
    }
}

/// `aro_gitops_azure_requests_total{service,simulated="true"}`, read from the Azure simulator's counts.
#[derive(Debug)]
pub(super) struct AzureRequests(pub(super) Arc<AzureRequestCounts>);

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_line_says_simulated() {
        let counts = AzureRequestCounts::default();
        counts.count_token();
        counts.count_key_vault();
        counts.count_key_vault();
        assert_eq!(
            counts.totals().summary_line(),
            "azure: 1 token requests, 2 key vault requests (simulated)"
        );
    }
}

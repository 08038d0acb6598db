//! The [`RetryPlan`] as the SDK pipeline's retry policy: the pipeline re-sends the request on
//! 408/429/500/502/503/504 and on transport errors (a timeout included); the plan says how long
//! to wait (the server's `Retry-After` first) and when to stop.

use crate::retry::{RetryPlan, jitter};
use azure_core::http::StatusCode;
use azure_core::http::headers::{HeaderName, RETRY_AFTER};
use azure_core::http::policies::{RetryHeaders, RetryPolicy};
use azure_core::time::Duration as SdkDuration;
use std::time::Duration;

/// The SDK retry policy of the Azure clients (Key Vault, Resource Manager reads).
#[derive(Debug)]
pub struct PlanPolicy {
    plan: RetryPlan,
    headers: RetryHeaders,
}

impl PlanPolicy {
    pub fn new(plan: RetryPlan) -> PlanPolicy {
        PlanPolicy {
            plan,
            headers: RetryHeaders {
                retry_headers: vec![
                    HeaderName::from_static("x-ms-retry-after-ms"),
                    HeaderName::from_static("retry-after-ms"),
                    RETRY_AFTER,
                ],
            },
        }
    }
}

fn to_std(d: SdkDuration) -> Duration {
    Duration::try_from(d).unwrap_or(Duration::ZERO)
}

fn to_sdk(d: Duration) -> SdkDuration {
    SdkDuration::try_from(d).unwrap_or(SdkDuration::MAX)
}

#[async_trait::async_trait]
impl RetryPolicy for PlanPolicy {
    fn is_expired(&self, duration_since_start: SdkDuration, retry_count: u32) -> bool {
        self.plan.expired(to_std(duration_since_start), retry_count)
    }

    fn retry_headers(&self) -> Option<&RetryHeaders> {
        Some(&self.headers)
    }

    /// Empty: the pipeline's defaults (408, 429, 500, 502, 503, 504).
    fn retry_status_codes(&self) -> &[StatusCode] {
        &[]
    }

    fn sleep_duration(&self, retry_count: u32) -> SdkDuration {
        to_sdk(self.plan.delay(retry_count, None, jitter()))
    }

    async fn wait(&self, retry_count: u32, retry_after: Option<SdkDuration>) {
        let delay = self
            .plan
            .delay(retry_count, retry_after.map(to_std), jitter());
        tracing::debug!(
            retry = retry_count,
            delay_ms = delay.as_millis() as u64,
            "Azure request retried"
        );
        tokio::time::sleep(delay).await;
    }
}

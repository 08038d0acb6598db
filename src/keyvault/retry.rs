//! How Key Vault requests are retried (`identity-and-keys.md`: 429 with Retry-After, 5xx and
//! timeouts, with backoff). The SDK's pipeline runs the retry loop (it re-sends the request, reads
//! `Retry-After`, retries 408/429/500/502/503/504 and transport errors); this plan decides how
//! long to wait and when to give up, so one cluster's throttled vault waits inside its own key
//! step and never holds up the others.

use crate::agent::controller::queue::Backoff;
use std::time::Duration;

/// The retry plan of the Key Vault calls.
#[derive(Debug, Clone, Copy)]
pub struct RetryPlan {
    /// Exponential backoff with jitter when the server does not say how long to wait.
    pub backoff: Backoff,
    /// A `Retry-After` longer than this waits this long.
    pub max_retry_after: Duration,
    /// Retries of one request before giving up.
    pub max_retries: u32,
    /// Time spent retrying one request before giving up.
    pub max_elapsed: Duration,
}

impl Default for RetryPlan {
    fn default() -> Self {
        RetryPlan {
            backoff: Backoff {
                base: Duration::from_millis(500),
                max: Duration::from_secs(8),
                jitter: 0.5,
            },
            max_retry_after: Duration::from_secs(30),
            max_retries: 5,
            max_elapsed: Duration::from_secs(60),
        }
    }
}

impl RetryPlan {
    /// Whether to give up after `retries` retries, `elapsed` since the first attempt.
    pub fn expired(&self, elapsed: Duration, retries: u32) -> bool {
        retries >= self.max_retries || elapsed >= self.max_elapsed
    }

    /// How long to wait before retry number `retry` (from 1): the server's `Retry-After` when it
    /// gave one (at most [`RetryPlan::max_retry_after`]), else the backoff with jitter (`random`
    /// in `[0, 1)`).
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>, random: f64) -> Duration {
        match retry_after {
            Some(d) => d.min(self.max_retry_after),
            None => self.backoff.delay(retry.max(1), random),
        }
    }
}

/// A number in `[0, 1)` for the jitter.
pub fn jitter() -> f64 {
    (uuid::Uuid::new_v4().as_u128() >> 75) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_honoured_and_capped() {
        let plan = RetryPlan::default();
        assert_eq!(
            plan.delay(1, Some(Duration::from_secs(2)), 0.9),
            Duration::from_secs(2)
        );
        assert_eq!(
            plan.delay(3, Some(Duration::ZERO), 0.9),
            Duration::ZERO,
            "the server's word, even when shorter than the backoff"
        );
        assert_eq!(
            plan.delay(1, Some(Duration::from_secs(3600)), 0.0),
            Duration::from_secs(30)
        );
    }

    #[test]
    fn without_retry_after_the_backoff_grows_with_jitter_up_to_its_cap() {
        let plan = RetryPlan::default();
        let ms = |retry, random| plan.delay(retry, None, random).as_millis();
        assert_eq!([ms(1, 0.0), ms(2, 0.0), ms(3, 0.0)], [500, 1000, 2000]);
        assert_eq!(ms(2, 0.999_999), 500, "jitter takes off up to half");
        assert_eq!(ms(10, 0.0), 8000, "capped");
        assert_eq!(ms(0, 0.0), 500, "retry 0 counts as the first");
    }

    #[test]
    fn it_gives_up_after_its_retries_or_its_time() {
        let plan = RetryPlan::default();
        assert!(!plan.expired(Duration::from_secs(1), 4));
        assert!(plan.expired(Duration::from_secs(1), 5));
        assert!(plan.expired(Duration::from_secs(60), 0));
    }

    #[test]
    fn jitter_is_in_range() {
        for _ in 0..100 {
            let j = jitter();
            assert!((0.0..1.0).contains(&j), "{j}");
        }
    }
}

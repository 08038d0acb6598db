//! How the agent waits before it tries again, in one place: a unit whose pass failed, a kube
//! request answered 429 or 5xx or cut off, a Key Vault request throttled, a report push that lost
//! a race to another agent. One shape for all: exponential backoff with jitter, a server's
//! `Retry-After` honoured up to a cap, and a limit in retries and in time; one profile per caller
//! ([`UNIT_QUEUE`], [`KUBE`], [`KEY_VAULT`], [`REPORT_PUSH`]). Pure: the caller passes the random
//! number, so the tests need no clock and no luck.

use std::time::Duration;

/// Exponential backoff with jitter: `base · 2^(failures-1)`, at most `max`, then scaled by a
/// factor in `[1 - jitter, 1]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    pub base: Duration,
    pub max: Duration,
    /// The share of the delay that is random, in `[0, 1]`.
    pub jitter: f64,
}

impl Backoff {
    /// The delay after `failures` failures in a row (0 counts as 1), with `random` in `[0, 1)`.
    pub fn delay(&self, failures: u32, random: f64) -> Duration {
        let exp = failures.saturating_sub(1).min(30);
        let full = self.base.saturating_mul(1u32 << exp).min(self.max);
        full.mul_f64(1.0 - self.jitter.clamp(0.0, 1.0) * random.clamp(0.0, 1.0))
    }
}

/// When one request is retried and how long each retry waits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPlan {
    /// The wait when the server does not say how long.
    pub backoff: Backoff,
    /// A `Retry-After` longer than this waits this long.
    pub max_retry_after: Duration,
    /// Retries of one request before giving up.
    pub max_retries: u32,
    /// Time spent retrying one request before giving up.
    pub max_elapsed: Duration,
}

impl RetryPlan {
    /// Whether to give up after `retries` retries, `elapsed` since the first attempt.
    pub fn expired(&self, elapsed: Duration, retries: u32) -> bool {
        retries >= self.max_retries || elapsed >= self.max_elapsed
    }

    /// How long to wait before retry number `retry` (from 1): the server's `Retry-After` when it
    /// gave one (at most [`RetryPlan::max_retry_after`]), else the backoff (`random` in `[0, 1)`).
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>, random: f64) -> Duration {
        match retry_after {
            Some(d) => d.min(self.max_retry_after),
            None => self.backoff.delay(retry.max(1), random),
        }
    }
}

/// A unit whose pass failed runs again after this backoff (the controller's work queue).
pub const UNIT_QUEUE: Backoff = Backoff {
    base: Duration::from_secs(2),
    max: Duration::from_secs(300),
    jitter: 0.5,
};

/// Kube requests (`crate::apply::retry`): short waits, since a pass holds its worker meanwhile.
pub const KUBE: RetryPlan = RetryPlan {
    backoff: Backoff {
        base: Duration::from_millis(20),
        max: Duration::from_secs(2),
        jitter: 0.0,
    },
    max_retry_after: Duration::from_secs(2),
    max_retries: 8,
    max_elapsed: Duration::MAX,
};

/// Key Vault requests (`identity-and-keys.md`: 429 with Retry-After, 5xx and timeouts): one
/// cluster's throttled vault waits inside its own key step and never holds up the others.
pub const KEY_VAULT: RetryPlan = RetryPlan {
    backoff: Backoff {
        base: Duration::from_millis(500),
        max: Duration::from_secs(8),
        jitter: 0.5,
    },
    max_retry_after: Duration::from_secs(30),
    max_retries: 5,
    max_elapsed: Duration::from_secs(60),
};

/// Report pushes that lost a race (several agents, one per shard, publish to one branch): the
/// jitter keeps agents that lost to each other from fetching and pushing in step again.
pub const REPORT_PUSH: RetryPlan = RetryPlan {
    backoff: Backoff {
        base: Duration::from_millis(25),
        max: Duration::from_secs(1),
        jitter: 0.5,
    },
    max_retry_after: Duration::ZERO,
    max_retries: 7,
    max_elapsed: Duration::MAX,
};

/// A random number in `[0, 1)` for the jitter.
pub fn jitter() -> f64 {
    // The low 62 bits of a v4 UUID are random (the version and variant bits are above them).
    let bits = (uuid::Uuid::new_v4().as_u128() as u64) & ((1 << 53) - 1);
    bits as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_exponentially_with_jitter_within_bounds() {
        let b = Backoff {
            base: Duration::from_secs(1),
            max: Duration::from_secs(60),
            jitter: 0.5,
        };
        assert_eq!(b.delay(1, 0.0), Duration::from_secs(1));
        assert_eq!(b.delay(2, 0.0), Duration::from_secs(2));
        assert_eq!(b.delay(4, 0.0), Duration::from_secs(8));
        assert_eq!(b.delay(30, 0.0), Duration::from_secs(60), "capped");
        assert_eq!(
            b.delay(3, 0.999_999).as_millis(),
            2000,
            "jitter takes off up to half"
        );
        assert_eq!(
            b.delay(0, 0.0),
            Duration::from_secs(1),
            "0 counts as the first"
        );
    }

    #[test]
    fn retry_after_is_honoured_and_capped() {
        let plan = KEY_VAULT;
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
    fn without_retry_after_the_backoff_grows_up_to_its_cap() {
        let ms = |plan: RetryPlan, retry| plan.delay(retry, None, 0.0).as_millis();
        assert_eq!(
            [ms(KEY_VAULT, 1), ms(KEY_VAULT, 2), ms(KEY_VAULT, 3)],
            [500, 1000, 2000]
        );
        assert_eq!(ms(KEY_VAULT, 10), 8000);
        assert_eq!([ms(KUBE, 1), ms(KUBE, 2), ms(KUBE, 8)], [20, 40, 2000]);
        assert_eq!(
            [ms(REPORT_PUSH, 1), ms(REPORT_PUSH, 2), ms(REPORT_PUSH, 20)],
            [25, 50, 1000]
        );
    }

    #[test]
    fn a_plan_gives_up_after_its_retries_or_its_time() {
        assert!(!KEY_VAULT.expired(Duration::from_secs(1), 4));
        assert!(KEY_VAULT.expired(Duration::from_secs(1), 5));
        assert!(KEY_VAULT.expired(Duration::from_secs(60), 0));
        assert!(!KUBE.expired(Duration::from_secs(3600), 7));
        assert!(KUBE.expired(Duration::ZERO, 8));
    }

    #[test]
    fn jitter_is_in_range_and_varies() {
        let draws: Vec<f64> = (0..100).map(|_| jitter()).collect();
        assert!(draws.iter().all(|j| (0.0..1.0).contains(j)));
        assert!(draws.iter().any(|j| *j != draws[0]));
    }
}

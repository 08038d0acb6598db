//! The lease decisions of leader election, pure: what to do with the Lease as last read, and
//! whether this instance may still act as the leader.
//!
//! Expiry is judged on this instance's own clock, from when it first saw the record as it is (as
//! client-go does): the holder's timestamps are written for people, never compared across
//! machines.

use std::time::{Duration, Instant};

/// The timings of the election (the kubebuilder defaults: 15 s, 10 s, 2 s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timings {
    /// How long a Lease holds without a renewal before another instance may take it.
    pub lease_duration: Duration,
    /// How long the leader keeps acting without a successful renewal (less than the lease
    /// duration: it stops before another instance can take over).
    pub renew_deadline: Duration,
    /// How often an instance tries to acquire or renew.
    pub retry_period: Duration,
}

impl Default for Timings {
    fn default() -> Self {
        Timings {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// Why a set of timings cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimingsError {
    #[error(
        "the renew deadline ({renew:?}) must be shorter than the lease duration ({lease:?}): a leader that cannot renew has to stop before another instance may take over"
    )]
    DeadlineNotBeforeExpiry { renew: Duration, lease: Duration },
    #[error(
        "the retry period ({retry:?}) must be shorter than the renew deadline ({renew:?}): the leader must get at least one more try before it gives up"
    )]
    RetryNotBeforeDeadline { retry: Duration, renew: Duration },
    #[error("the lease duration must be at least one second (the Lease counts whole seconds)")]
    LeaseTooShort,
}

impl Timings {
    pub fn check(&self) -> Result<(), TimingsError> {
        if self.lease_duration < Duration::from_secs(1) {
            return Err(TimingsError::LeaseTooShort);
        }
        if self.renew_deadline >= self.lease_duration {
            return Err(TimingsError::DeadlineNotBeforeExpiry {
                renew: self.renew_deadline,
                lease: self.lease_duration,
            });
        }
        if self.retry_period >= self.renew_deadline {
            return Err(TimingsError::RetryNotBeforeDeadline {
                retry: self.retry_period,
                renew: self.renew_deadline,
            });
        }
        Ok(())
    }

    /// `leaseDurationSeconds` (rounded up: never shorter than the duration asked for).
    pub fn lease_seconds(&self) -> i32 {
        let s = self.lease_duration.as_secs() + u64::from(self.lease_duration.subsec_nanos() > 0);
        i32::try_from(s).unwrap_or(i32::MAX)
    }
}

/// The part of a Lease the decisions read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// `None` or empty: released (nobody holds it).
    pub holder: Option<String>,
    /// `leaseDurationSeconds`.
    pub duration: Duration,
    /// `renewTime`, as written (only compared for equality).
    pub renew_time: Option<String>,
    pub transitions: i32,
}

impl Record {
    fn holder(&self) -> Option<&str> {
        self.holder.as_deref().filter(|h| !h.is_empty())
    }
}

/// A record and when this instance first saw it as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    pub record: Record,
    pub since: Instant,
}

/// What was seen at `now`: `previous` unchanged keeps its time; any change (a renewal, a new
/// holder) starts the clock again.
pub fn observe(previous: Option<Observed>, record: Record, now: Instant) -> Observed {
    match previous {
        Some(p) if p.record == record => p,
        _ => Observed { record, since: now },
    }
}

/// What to do with the Lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// There is no Lease: create it, held by this instance.
    Create,
    /// This instance holds it: renew it.
    Renew,
    /// Released or expired: take it over (a new transition).
    TakeOver { from: Option<String> },
    /// Another instance holds it and it has not expired: stand by.
    Wait { holder: String },
}

/// The decision for `me` on the Lease as observed (`None`: there is none), at `now`.
pub fn decide(observed: Option<&Observed>, me: &str, now: Instant) -> Decision {
    let Some(o) = observed else {
        return Decision::Create;
    };
    match o.record.holder() {
        None => Decision::TakeOver { from: None },
        Some(h) if h == me => Decision::Renew,
        Some(h) if expired(o, now) => Decision::TakeOver {
            from: Some(h.to_string()),
        },
        Some(h) => Decision::Wait {
            holder: h.to_string(),
        },
    }
}

/// Whether the record has gone a whole lease duration without change, seen from here.
pub fn expired(o: &Observed, now: Instant) -> bool {
    now.saturating_duration_since(o.since) >= o.record.duration
}

/// The transitions count after `decision`: a new holder is a new transition.
pub fn transitions(observed: Option<&Observed>, decision: &Decision) -> i32 {
    let before = observed.map_or(0, |o| o.record.transitions);
    match decision {
        Decision::TakeOver { .. } => before.saturating_add(1),
        _ => before,
    }
}

/// Fail-stop: this instance may act as the leader at `now` only within the renew deadline of
/// its last successful acquire or renewal.
pub fn leading_until(last_renewal: Option<Instant>, timings: &Timings) -> Option<Instant> {
    last_renewal.map(|t| t + timings.renew_deadline)
}

/// Whether an instance whose last successful renewal was `last_renewal` still leads at `now`.
pub fn still_leading(last_renewal: Option<Instant>, timings: &Timings, now: Instant) -> bool {
    leading_until(last_renewal, timings).is_some_and(|until| now < until)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(holder: Option<&str>, renew: &str, transitions: i32) -> Record {
        Record {
            holder: holder.map(str::to_string),
            duration: Duration::from_secs(15),
            renew_time: Some(renew.to_string()),
            transitions,
        }
    }

    #[test]
    fn no_lease_is_created() {
        assert_eq!(decide(None, "a", Instant::now()), Decision::Create);
        assert_eq!(transitions(None, &Decision::Create), 0);
    }

    #[test]
    fn the_holder_renews() {
        let now = Instant::now();
        let o = observe(None, record(Some("a"), "t1", 3), now);
        // Even long after: the holder's own lease is renewed, not taken over.
        let later = now + Duration::from_secs(60);
        assert_eq!(decide(Some(&o), "a", later), Decision::Renew);
        assert_eq!(transitions(Some(&o), &Decision::Renew), 3);
    }

    #[test]
    fn held_by_another_and_fresh_means_wait() {
        let now = Instant::now();
        let o = observe(None, record(Some("b"), "t1", 1), now);
        assert_eq!(
            decide(Some(&o), "a", now + Duration::from_secs(14)),
            Decision::Wait { holder: "b".into() }
        );
    }

    #[test]
    fn expired_after_a_lease_duration_without_change_and_taken_over() {
        let t0 = Instant::now();
        let o = observe(None, record(Some("b"), "t1", 1), t0);
        let at = t0 + Duration::from_secs(15);
        let d = decide(Some(&o), "a", at);
        assert_eq!(
            d,
            Decision::TakeOver {
                from: Some("b".into())
            }
        );
        assert_eq!(transitions(Some(&o), &d), 2);
    }

    #[test]
    fn a_renewal_seen_starts_the_clock_again() {
        let t0 = Instant::now();
        let o = observe(None, record(Some("b"), "t1", 1), t0);
        // Unchanged: the first sighting's time is kept.
        let same = observe(
            Some(o.clone()),
            record(Some("b"), "t1", 1),
            t0 + Duration::from_secs(10),
        );
        assert_eq!(same.since, t0);
        // Renewed at 10 s: not expired at 20 s, expired at 25 s.
        let renewed = observe(
            Some(same),
            record(Some("b"), "t2", 1),
            t0 + Duration::from_secs(10),
        );
        assert_eq!(renewed.since, t0 + Duration::from_secs(10));
        assert!(!expired(&renewed, t0 + Duration::from_secs(20)));
        assert!(expired(&renewed, t0 + Duration::from_secs(25)));
    }

    #[test]
    fn a_released_lease_is_taken_at_once() {
        let now = Instant::now();
        for holder in [None, Some("")] {
            let o = observe(None, record(holder, "t1", 4), now);
            let d = decide(Some(&o), "a", now);
            assert_eq!(d, Decision::TakeOver { from: None });
            assert_eq!(transitions(Some(&o), &d), 5);
        }
    }

    #[test]
    fn fail_stop_at_the_renew_deadline_before_the_lease_expires() {
        let t = Timings::default();
        let renewed = Instant::now();
        assert!(still_leading(
            Some(renewed),
            &t,
            renewed + Duration::from_secs(9)
        ));
        assert!(!still_leading(
            Some(renewed),
            &t,
            renewed + Duration::from_secs(10)
        ));
        assert!(!still_leading(None, &t, renewed));
        // Another instance cannot take over before this one has stopped.
        assert!(leading_until(Some(renewed), &t).unwrap() < renewed + t.lease_duration);
    }

    #[test]
    fn timings_are_checked() {
        assert_eq!(Timings::default().check(), Ok(()));
        assert_eq!(Timings::default().lease_seconds(), 15);
        let bad = Timings {
            renew_deadline: Duration::from_secs(15),
            ..Timings::default()
        };
        assert!(matches!(
            bad.check(),
            Err(TimingsError::DeadlineNotBeforeExpiry { .. })
        ));
        let bad = Timings {
            retry_period: Duration::from_secs(10),
            ..Timings::default()
        };
        assert!(matches!(
            bad.check(),
            Err(TimingsError::RetryNotBeforeDeadline { .. })
        ));
        let odd = Timings {
            lease_duration: Duration::from_millis(2500),
            renew_deadline: Duration::from_secs(2),
            retry_period: Duration::from_millis(500),
        };
        assert_eq!(odd.lease_seconds(), 3);
    }
}

//! The rollout's time source. The decision takes the time as an argument ([`super::decide`]); the
//! controller asks this clock for it: the system's, or one set to start at a given instant that
//! runs at the system clock's pace from there (`run --rollout-clock`, hidden: a test places the
//! agent just before a maintenance window opens, or inside one, without waiting for the hour).

use chrono::{DateTime, TimeDelta, Utc};
use std::time::Duration;

/// The system clock, or the system clock shifted by a fixed offset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Clock {
    offset: TimeDelta,
}

impl Clock {
    /// A clock that reads `at` now, and runs on from there.
    pub fn starting_at(at: DateTime<Utc>) -> Clock {
        Clock {
            offset: at - Utc::now(),
        }
    }

    pub fn now(&self) -> DateTime<Utc> {
        Utc::now() + self.offset
    }

    /// How long until this clock reads `at` (zero once it has).
    pub fn until(&self, at: DateTime<Utc>) -> Duration {
        (at - self.now()).to_std().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_set_to_an_instant_runs_on_from_it() {
        let at: DateTime<Utc> = "2031-05-06T02:59:58Z".parse().unwrap();
        let clock = Clock::starting_at(at);
        let now = clock.now();
        assert!(now >= at && now - at < TimeDelta::seconds(5), "{now}");
        let wait = clock.until("2031-05-06T03:00:00Z".parse().unwrap());
        assert!(
            wait <= Duration::from_secs(2) && wait > Duration::ZERO,
            "{wait:?}"
        );
        assert_eq!(clock.until(at), Duration::ZERO);
        let system = Clock::default();
        assert!((system.now() - Utc::now()).abs() < TimeDelta::seconds(1));
    }
}

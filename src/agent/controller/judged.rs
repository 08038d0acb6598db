//! What the agent knows of each unit's last judgement between converges: when its last pass
//! began, and whether a change of one of its objects came since. A unit judged converged that no
//! change touched keeps its outcome in a drift check (see [`super::round::keep_earlier`]): the
//! pass would read the same objects from the same caches and decide the same. Each such unit is
//! still judged again once its resync comes due ([`Judged::recent`]), a few minutes after its
//! last pass (what a pass reads from outside the caches, a guest cluster, is read again then).

use crate::agent::pass::guest::LATCHED_READ_INTERVAL;
use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

/// The longest a converged unit goes without a pass: a guest cluster's read is taken again no
/// less often (see [`crate::agent::pass::guest`]).
pub(super) const RESYNC: Duration = LATCHED_READ_INTERVAL;

/// Kept by the agent from one converge to the next.
#[derive(Debug, Default)]
pub(in crate::agent) struct Judged {
    /// When each unit's last pass in this process began.
    began: HashMap<String, Instant>,
    /// The units a change touched after their last pass began (or that no pass reached since).
    touched: BTreeSet<String>,
}

impl Judged {
    /// Whether `unit`'s last pass began recently enough to stand for now: within its resync,
    /// spread between half of [`RESYNC`] and all of it by the unit's name, so that a fleet judged
    /// at once comes due over minutes, a few units per drift check.
    pub(super) fn recent(&self, unit: &str, now: Instant) -> bool {
        self.began
            .get(unit)
            .is_some_and(|at| now.saturating_duration_since(*at) < resync_of(unit))
    }

    /// Whether a change touched `unit` after its last pass began.
    pub(super) fn touched(&self, unit: &str) -> bool {
        self.touched.contains(unit)
    }

    /// Takes what a converge ends with, by unit (`units`: each unit's name, when its last pass
    /// in the converge began, and whether a change touched it since): a unit with no pass in it
    /// keeps what was known before.
    pub(super) fn record(
        &mut self,
        units: impl IntoIterator<Item = (String, Option<Instant>, bool)>,
    ) {
        let mut began = HashMap::new();
        let mut touched = BTreeSet::new();
        for (unit, at, changed) in units {
            if let Some(at) = at.or_else(|| self.began.get(&unit).copied()) {
                began.insert(unit.clone(), at);
            }
            if changed {
                touched.insert(unit);
            }
        }
        *self = Judged { began, touched };
    }
}

/// `unit`'s resync: between half of [`RESYNC`] and all of it, the same for the same name.
fn resync_of(unit: &str) -> Duration {
    // SipHash with fixed keys: the same name spreads the same way in every process.
    let mut h = std::hash::DefaultHasher::new();
    unit.hash(&mut h);
    let half = RESYNC / 2;
    half + Duration::from_millis(h.finish() % half.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_judged_lately_and_untouched_stands_until_its_resync() {
        let now = Instant::now();
        let mut j = Judged::default();
        j.record([
            ("a".to_string(), Some(now), false),
            ("b".to_string(), Some(now), true),
            ("c".to_string(), None, false),
        ]);
        assert!(j.recent("a", now) && !j.touched("a"));
        assert!(j.touched("b"));
        assert!(!j.recent("c", now), "never judged");
        assert!(!j.recent("a", now + RESYNC), "due by then");
        assert!(j.recent("a", now + RESYNC / 2 - Duration::from_millis(1)));

        // A converge with no pass of a: it keeps when its last pass began; b is no longer
        // touched once a pass ran over it.
        let later = now + Duration::from_secs(1);
        j.record([
            ("a".to_string(), None, false),
            ("b".to_string(), Some(later), false),
        ]);
        assert!(j.recent("a", now) && !j.touched("b"));
        assert!(!j.recent("c", now), "a unit gone is forgotten");
    }

    #[test]
    fn resyncs_spread_over_the_second_half_of_the_interval() {
        let spread: BTreeSet<Duration> = (0..200).map(|i| resync_of(&format!("u{i}"))).collect();
        assert!(spread.iter().all(|d| *d >= RESYNC / 2 && *d < RESYNC));
        assert!(spread.len() > 150, "spread out: {}", spread.len());
        assert_eq!(resync_of("clusters/dev"), resync_of("clusters/dev"));
    }
}

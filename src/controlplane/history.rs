//! The store's history, as etcd's MVCC window is kube-apiserver's: the state at an older
//! resourceVersion (a LIST with `resourceVersionMatch=Exact`, the later pages of a paginated LIST)
//! is rebuilt from the latest state and the watch event log, back to the last compaction.
//!
//! The history is the event log itself: each event holds the object after the change and the one
//! before it, both shared with the index (no copy), so answering at an older version costs no
//! memory beyond the log, which is bounded by count and bytes (`Config::event_log_capacity`,
//! `Config::event_log_bytes`). The history is compacted on kube-apiserver's schedule
//! ([`Compactor`]) and when the store's admin asks (`POST /debug/compact`): as etcd's compaction,
//! it ends exact lists and continue tokens from before it, not watches (served from the log, as
//! kube-apiserver's are from its watch cache).

use super::state::{Entry, EventType, State, WatchEvent};
use std::collections::BTreeMap;
use std::iter::Peekable;
use std::time::{Duration, Instant};

/// How often the history is compacted, as kube-apiserver compacts etcd (`--etcd-compaction-interval`).
pub const COMPACTION_INTERVAL: Duration = Duration::from_secs(5 * 60);

/// The history does not reach back to the version asked for (compacted, or from before the log a
/// restart loaded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooOld;

/// What a key held just before `ev`: `Ok(None)` when absent, `Err` when the log does not know.
fn before(ev: &WatchEvent) -> Result<Option<&Entry>, TooOld> {
    match (ev.type_, &ev.previous) {
        (EventType::Added, _) => Ok(None),
        (_, Some(p)) => Ok(Some(p)),
        (_, None) => Err(TooOld),
    }
}

/// The objects whose key starts with `prefix` (after `after`, when given) as they were at `rv`,
/// in key order.
pub fn range_at<'a>(
    state: &'a State,
    prefix: &'a str,
    after: Option<&str>,
    rv: u64,
) -> Result<Box<dyn Iterator<Item = (&'a String, &'a Entry)> + 'a>, TooOld> {
    let current = state.range(prefix, after);
    if rv >= state.resource_version() {
        return Ok(Box::new(current));
    }
    if rv < state.history_start() {
        return Err(TooOld);
    }
    let overlay = undo(state.log().iter().rev(), prefix, after, rv)?;
    Ok(Box::new(Merged {
        current: current.peekable(),
        overlay: overlay.into_iter().peekable(),
    }))
}

/// Walking the log back from its newest event: for each key under `prefix` changed after `rv`,
/// what it held at `rv` (the state before its oldest change after `rv`).
fn undo<'a>(
    newest_first: impl Iterator<Item = &'a std::sync::Arc<WatchEvent>>,
    prefix: &str,
    after: Option<&str>,
    rv: u64,
) -> Result<BTreeMap<&'a String, Option<&'a Entry>>, TooOld> {
    let mut overlay = BTreeMap::new();
    for ev in newest_first.take_while(|e| e.resource_version > rv) {
        if ev.key.starts_with(prefix) && after.is_none_or(|a| ev.key.as_str() > a) {
            overlay.insert(&ev.key, before(ev)?);
        }
    }
    Ok(overlay)
}

/// The current objects with the overlay's keys replaced (or removed, or added back).
struct Merged<'a, I: Iterator<Item = (&'a String, &'a Entry)>> {
    current: Peekable<I>,
    overlay: Peekable<std::collections::btree_map::IntoIter<&'a String, Option<&'a Entry>>>,
}

impl<'a, I: Iterator<Item = (&'a String, &'a Entry)>> Iterator for Merged<'a, I> {
    type Item = (&'a String, &'a Entry);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let order = match (self.current.peek(), self.overlay.peek()) {
                (None, None) => return None,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some((c, _)), Some((o, _))) => c.as_str().cmp(o.as_str()),
            };
            let (key, value) = match order {
                std::cmp::Ordering::Less => return self.current.next(),
                std::cmp::Ordering::Equal => {
                    self.current.next();
                    self.overlay.next()?
                }
                std::cmp::Ordering::Greater => self.overlay.next()?,
            };
            if let Some(entry) = value {
                return Some((key, entry));
            }
        }
    }
}

/// kube-apiserver's compaction schedule: every interval, compact through the resourceVersion
/// seen at the previous tick, so the history kept spans one to two intervals.
#[derive(Debug)]
pub struct Compactor {
    interval: Duration,
    next_tick: Instant,
    /// The resourceVersion seen at the last tick: what the next one compacts through.
    seen: Option<u64>,
}

impl Compactor {
    pub fn new(now: Instant, interval: Duration) -> Self {
        Compactor {
            interval,
            next_tick: now + interval,
            seen: None,
        }
    }

    /// How long until the next tick.
    pub fn until_due(&self, now: Instant) -> Duration {
        self.next_tick.saturating_duration_since(now)
    }

    /// At or after the tick's time: the resourceVersion to compact through (the one seen at the
    /// previous tick), noting `current` for the next one. `None` before the tick's time, and at
    /// the first tick.
    pub fn tick(&mut self, now: Instant, current: u64) -> Option<u64> {
        if now < self.next_tick {
            return None;
        }
        self.next_tick = now + self.interval;
        self.seen.replace(current)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::sync::Arc;

    fn entry(text: &str) -> Entry {
        Entry {
            json: Bytes::from(text.to_string()),
        }
    }

    fn ev(
        rv: u64,
        type_: EventType,
        key: &str,
        object: &str,
        previous: Option<&str>,
    ) -> Arc<WatchEvent> {
        Arc::new(WatchEvent {
            resource_version: rv,
            type_,
            key: key.into(),
            object: entry(object),
            previous: previous.map(entry),
        })
    }

    #[test]
    fn the_state_at_a_version_undoes_the_later_changes() {
        use EventType::*;
        // At 1: a=a1, b=b1. Then: 2 c added, 3 a modified, 4 b deleted, 5 a modified again.
        let log = [
            ev(2, Added, "/p/c", "c1", None),
            ev(3, Modified, "/p/a", "a2", Some("a1")),
            ev(4, Deleted, "/p/b", "b1", Some("b1")),
            ev(5, Modified, "/p/a", "a3", Some("a2")),
            ev(6, Added, "/q/x", "x1", None),
        ];
        let current: BTreeMap<String, Entry> = [("/p/a", "a3"), ("/p/c", "c1"), ("/q/x", "x1")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), entry(v)))
            .collect();
        let at = |rv: u64, after: Option<&str>| -> Vec<String> {
            let overlay = undo(log.iter().rev(), "/p/", after, rv).unwrap();
            let merged = Merged {
                current: current
                    .iter()
                    .filter(|(k, _)| k.starts_with("/p/") && after.is_none_or(|a| k.as_str() > a))
                    .peekable(),
                overlay: overlay.into_iter().peekable(),
            };
            merged
                .map(|(k, e)| format!("{k}={}", String::from_utf8_lossy(&e.json)))
                .collect()
        };
        assert_eq!(at(1, None), ["/p/a=a1", "/p/b=b1"]);
        assert_eq!(at(3, None), ["/p/a=a2", "/p/b=b1", "/p/c=c1"]);
        assert_eq!(at(4, None), ["/p/a=a2", "/p/c=c1"]);
        assert_eq!(at(6, None), ["/p/a=a3", "/p/c=c1"]);
        assert_eq!(at(1, Some("/p/a")), ["/p/b=b1"]);
    }

    #[test]
    fn a_change_whose_prior_state_the_log_lacks_is_too_old() {
        let log = [ev(3, EventType::Modified, "/p/a", "a2", None)];
        assert_eq!(undo(log.iter().rev(), "/p/", None, 2).err(), Some(TooOld));
        assert!(undo(log.iter().rev(), "/p/", None, 3).is_ok());
        assert!(
            undo(log.iter().rev(), "/q/", None, 2).is_ok(),
            "another prefix"
        );
    }

    #[test]
    fn compaction_runs_every_interval_through_what_the_previous_tick_saw() {
        let t0 = Instant::now();
        let min5 = Duration::from_secs(300);
        let mut c = Compactor::new(t0, min5);
        assert_eq!(c.until_due(t0), min5);
        assert_eq!(c.tick(t0 + Duration::from_secs(10), 7), None, "not due");
        assert_eq!(c.tick(t0 + min5, 10), None, "the first tick only notes 10");
        assert_eq!(c.tick(t0 + min5 + Duration::from_secs(1), 12), None);
        assert_eq!(c.tick(t0 + min5 * 2, 20), Some(10));
        assert_eq!(c.tick(t0 + min5 * 3, 25), Some(20));
    }
}

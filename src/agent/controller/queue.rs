//! The work queue of units: a key queued twice runs once, a key is handed out to one worker at a
//! time (queued again while it runs, it runs once more after), keys come out in the order they
//! were queued (one slow or failing unit never holds up the others), and a key whose work failed
//! waits an exponential backoff with jitter before it runs again. Pure: the caller says what
//! time it is, so the tests need no clock.

use crate::retry::Backoff;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::time::{Duration, Instant};

/// A deduplicating queue of keys with one worker per key and backoff on failure.
pub struct WorkQueue<K> {
    ready: VecDeque<K>,
    /// Keys waiting for their time (a backoff), by when, then by order of arrival.
    delayed: BTreeMap<(Instant, u64), K>,
    waiting: HashMap<K, (Instant, u64)>,
    queued: HashSet<K>,
    active: HashSet<K>,
    /// Queued again while active: runs again when done.
    again: HashSet<K>,
    failures: HashMap<K, u32>,
    backoff: Backoff,
    /// How long a change waits before its run, for the changes after it to share that run.
    debounce: Duration,
    seq: u64,
    rng: u64,
}

impl<K: Clone + Eq + Hash> WorkQueue<K> {
    /// An empty queue; `seed` makes the jitter reproducible.
    pub fn new(backoff: Backoff, seed: u64) -> Self {
        WorkQueue {
            ready: VecDeque::new(),
            delayed: BTreeMap::new(),
            waiting: HashMap::new(),
            queued: HashSet::new(),
            active: HashSet::new(),
            again: HashSet::new(),
            failures: HashMap::new(),
            backoff,
            debounce: Duration::ZERO,
            seq: 0,
            rng: seed | 1,
        }
    }

    /// Queues `key` to run now. A key already queued is not queued twice; a key that runs is
    /// run once more when it is done; a key in backoff keeps waiting.
    pub fn add(&mut self, key: K) {
        if self.active.contains(&key) {
            self.again.insert(key);
            return;
        }
        if self.waiting.contains_key(&key) {
            if self.failures.contains_key(&key) {
                return; // backing off: the retry comes at its time
            }
            let at = self.waiting.remove(&key).expect("waiting");
            self.delayed.remove(&at);
            self.queued.remove(&key);
        }
        if self.queued.insert(key.clone()) {
            self.ready.push_back(key);
        }
    }

    /// Changes wait `debounce` before their run (see [`WorkQueue::wake`]).
    pub fn with_debounce(mut self, debounce: Duration) -> Self {
        self.debounce = debounce;
        self
    }

    /// Queues `key` for a change seen at `now`: it runs after the debounce, so the changes that
    /// follow within it share one run. A key already queued keeps its place; a key that runs runs
    /// once more when it is done (after the debounce too); a key in backoff keeps waiting.
    pub fn wake(&mut self, key: K, now: Instant) {
        if self.active.contains(&key) {
            self.again.insert(key);
            return;
        }
        self.add_at(key, now + self.debounce);
    }

    /// Queues `key` to run at `at` (unless it is queued already).
    pub fn add_at(&mut self, key: K, at: Instant) {
        if self.active.contains(&key) || self.queued.contains(&key) {
            return;
        }
        self.seq += 1;
        self.queued.insert(key.clone());
        self.waiting.insert(key.clone(), (at, self.seq));
        self.delayed.insert((at, self.seq), key);
    }

    /// The next key due at `now`, handed out (to one worker) until [`WorkQueue::done`].
    pub fn pop(&mut self, now: Instant) -> Option<K> {
        while let Some(entry) = self.delayed.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let key = entry.remove();
            self.waiting.remove(&key);
            self.ready.push_back(key);
        }
        let key = self.ready.pop_front()?;
        self.queued.remove(&key);
        self.active.insert(key.clone());
        Some(key)
    }

    /// `key`'s work ended at `now`: on failure it runs again after its backoff; on success its
    /// failures are forgotten. Queued again while it ran, it runs again now.
    pub fn done(&mut self, key: &K, failed: bool, now: Instant) {
        self.active.remove(key);
        if failed {
            let n = self.failures.entry(key.clone()).or_insert(0);
            *n += 1;
            let n = *n;
            let random = self.random();
            let delay = self.backoff.delay(n, random);
            self.again.remove(key);
            self.add_at(key.clone(), now + delay);
            return;
        }
        self.failures.remove(key);
        if self.again.remove(key) {
            self.add_at(key.clone(), now + self.debounce);
        }
    }

    /// How many keys are queued: ready, or waiting for their time (a debounce, a backoff). Keys
    /// running are not counted (one queued again while it runs counts once it is done).
    pub fn len(&self) -> usize {
        self.queued.len()
    }

    /// Whether `key`'s work is running.
    pub fn is_active(&self, key: &K) -> bool {
        self.active.contains(key)
    }

    /// When the next delayed key is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.delayed.keys().next().map(|(at, _)| *at)
    }

    /// Whether a key is ready to run at `now`.
    pub fn has_ready(&self, now: Instant) -> bool {
        !self.ready.is_empty() || self.next_due().is_some_and(|at| at <= now)
    }

    /// How many failures in a row `key` has had.
    #[cfg(test)]
    pub fn failures(&self, key: &K) -> u32 {
        self.failures.get(key).copied().unwrap_or(0)
    }

    /// A number in `[0, 1)` (xorshift).
    fn random(&mut self) -> f64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue() -> WorkQueue<&'static str> {
        WorkQueue::new(crate::retry::UNIT_QUEUE, 42)
    }

    #[test]
    fn a_key_queued_twice_runs_once() {
        let mut q = queue();
        let now = Instant::now();
        q.add("a");
        q.add("b");
        q.add("a");
        assert_eq!(q.pop(now), Some("a"));
        assert_eq!(q.pop(now), Some("b"));
        assert_eq!(q.pop(now), None);
    }

    #[test]
    fn len_counts_queued_keys_ready_or_waiting_not_running() {
        let mut q = queue();
        let now = Instant::now();
        assert_eq!(q.len(), 0);
        q.add("a");
        q.add("a");
        q.add_at("b", now + Duration::from_secs(5));
        assert_eq!(q.len(), 2, "a once, b waiting for its time");
        assert_eq!(q.pop(now), Some("a"));
        assert_eq!(q.len(), 1, "a runs: not counted");
        q.add("a");
        assert_eq!(
            q.len(),
            1,
            "queued again while it runs: counted once it is done"
        );
        q.done(&"a", false, now);
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop(now + Duration::from_secs(5)), Some("a"));
        assert_eq!(q.pop(now + Duration::from_secs(5)), Some("b"));
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn one_worker_per_key_and_a_rerun_when_queued_while_running() {
        let mut q = queue();
        let now = Instant::now();
        q.add("a");
        assert_eq!(q.pop(now), Some("a"));
        q.add("a");
        q.add("a");
        assert_eq!(q.pop(now), None, "a runs already");
        q.done(&"a", false, now);
        assert_eq!(q.pop(now), Some("a"), "queued while running: once more");
        q.done(&"a", false, now);
        assert_eq!(q.pop(now), None);
    }

    #[test]
    fn a_failing_key_waits_its_backoff_growing() {
        let b = Backoff {
            base: Duration::from_secs(1),
            max: Duration::from_secs(60),
            jitter: 0.5,
        };
        let mut q = WorkQueue::new(b, 7);
        let t0 = Instant::now();
        q.add("a");
        let mut now = t0;
        let mut last = Duration::ZERO;
        for n in 1..=5u32 {
            assert_eq!(q.pop(now), Some("a"));
            q.done(&"a", true, now);
            assert_eq!(q.failures(&"a"), n);
            assert_eq!(q.pop(now), None, "backing off");
            q.add("a");
            assert_eq!(q.pop(now), None, "a change does not cut a backoff short");
            let due = q.next_due().expect("retry scheduled");
            let delay = due - now;
            let full = Duration::from_secs(1 << (n - 1));
            assert!(delay <= full && delay >= full / 2, "{n}: {delay:?}");
            assert!(n == 1 || delay > last / 2);
            last = delay;
            now = due;
        }
        assert_eq!(q.pop(now), Some("a"));
        q.done(&"a", false, now);
        assert_eq!(q.failures(&"a"), 0, "success forgets the failures");
    }

    #[test]
    fn jitter_spreads_retries_of_units_failing_together() {
        let mut q = queue();
        let now = Instant::now();
        for k in ["a", "b", "c", "d"] {
            q.add(k);
        }
        while let Some(k) = q.pop(now) {
            q.done(&k, true, now);
        }
        let dues: HashSet<Instant> = q.delayed.keys().map(|(at, _)| *at).collect();
        assert!(dues.len() > 1, "retries are spread");
    }

    #[test]
    fn a_failing_unit_does_not_hold_up_the_others() {
        let mut q = queue();
        let now = Instant::now();
        q.add("bad");
        q.add("a");
        q.add("b");
        assert_eq!(q.pop(now), Some("bad"));
        q.done(&"bad", true, now);
        // The failing unit waits; the others go first, in the order they came.
        assert_eq!(q.pop(now), Some("a"));
        assert_eq!(q.pop(now), Some("b"));
        q.add("a");
        q.done(&"a", false, now);
        assert_eq!(q.pop(now), Some("a"));
        let later = q.next_due().expect("bad is due later");
        assert_eq!(q.pop(later), Some("bad"));
    }

    #[test]
    fn changes_within_the_debounce_share_one_run() {
        let mut q = queue().with_debounce(Duration::from_millis(100));
        let t0 = Instant::now();
        q.wake("a", t0);
        q.wake("b", t0 + Duration::from_millis(10));
        q.wake("a", t0 + Duration::from_millis(50));
        assert_eq!(
            q.pop(t0 + Duration::from_millis(99)),
            None,
            "still debouncing"
        );
        assert_eq!(
            q.pop(t0 + Duration::from_millis(100)),
            Some("a"),
            "a keeps its first time"
        );
        assert_eq!(
            q.pop(t0 + Duration::from_millis(100)),
            None,
            "b is not due yet"
        );
        // A change while a runs: one more run, debounced from the end of this one.
        q.wake("a", t0 + Duration::from_millis(105));
        q.wake("a", t0 + Duration::from_millis(106));
        let end = t0 + Duration::from_millis(120);
        q.done(&"a", false, end);
        assert_eq!(q.pop(end), Some("b"), "b was due at 110 ms");
        assert_eq!(q.pop(end), None, "a waits for its debounce");
        assert_eq!(q.pop(end + Duration::from_millis(100)), Some("a"));
        assert_eq!(q.pop(end + Duration::from_millis(100)), None, "once");
    }

    #[test]
    fn keys_come_out_in_arrival_order() {
        let mut q = queue();
        let now = Instant::now();
        for k in ["c", "a", "b", "a", "c"] {
            q.add(k);
        }
        let order: Vec<_> = std::iter::from_fn(|| q.pop(now)).collect();
        assert_eq!(order, vec!["c", "a", "b"]);
    }
}

/// At most `limit` pieces of work in flight (never unbounded), each started from a queue key.
pub struct Workers<F> {
    running: futures::stream::FuturesUnordered<F>,
    limit: usize,
}

impl<F: std::future::Future> Workers<F> {
    pub fn new(limit: usize) -> Self {
        Workers {
            running: futures::stream::FuturesUnordered::new(),
            limit: limit.max(1),
        }
    }

    /// Starts work for the keys due at `now`, up to the limit.
    pub fn fill<K: Clone + Eq + Hash>(
        &mut self,
        queue: &mut WorkQueue<K>,
        now: Instant,
        mut start: impl FnMut(K) -> F,
    ) {
        while self.running.len() < self.limit {
            let Some(key) = queue.pop(now) else { break };
            self.running.push(start(key));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// The next piece of work to finish (pending forever when none runs).
    pub async fn next(&mut self) -> F::Output {
        use futures::StreamExt;
        match self.running.next().await {
            Some(out) => out,
            None => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod workers_tests {
    use super::*;
    use futures::channel::oneshot;

    #[tokio::test]
    async fn concurrency_is_bounded_and_a_slow_unit_takes_one_slot() {
        let mut q: WorkQueue<u32> = WorkQueue::new(crate::retry::UNIT_QUEUE, 1);
        for k in 0..7 {
            q.add(k);
        }
        // Each piece of work runs until the test lets it end.
        let mut gates: Vec<(u32, oneshot::Sender<()>)> = Vec::new();
        let mut started = Vec::new();
        let mut start = |k: u32, gates: &mut Vec<(u32, oneshot::Sender<()>)>| {
            let (tx, rx) = oneshot::channel();
            gates.push((k, tx));
            started.push(k);
            async move {
                let _ = rx.await;
                k
            }
        };
        let mut workers = Workers::new(2);
        let now = Instant::now();
        workers.fill(&mut q, now, |k| start(k, &mut gates));
        let mut finished = Vec::new();
        // Unit 0 is slow: it holds its slot to the end, while the six others pass one by one
        // through the other.
        while finished.len() < 6 {
            assert_eq!(gates.len(), 2, "exactly the limit runs while work waits");
            let i = gates
                .iter()
                .position(|(k, _)| *k != 0)
                .expect("a fast unit runs");
            let (_, gate) = gates.remove(i);
            gate.send(()).expect("running");
            let k = workers.next().await;
            q.done(&k, false, now);
            finished.push(k);
            workers.fill(&mut q, now, |k| start(k, &mut gates));
        }
        assert_eq!(finished, vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(gates.len(), 1, "only the slow unit is left");
        let (_, gate) = gates.pop().expect("slow unit");
        gate.send(()).expect("running");
        assert_eq!(workers.next().await, 0);
        assert!(workers.is_empty());
        assert_eq!(started, vec![0, 1, 2, 3, 4, 5, 6], "in arrival order");
    }
}

//! A long-running `run` goes in cycles: the initial sync, then one per fetch of the source
//! (`--interval`) and one per drift check (`--drift-interval`). Each ends with one line, on the
//! terminal and as a structured log event, of what it cost:
//!
//! ```text
//! cycle 3 (drift): 1000 units, 1000 passes, 0 writes, 0 lists, 0 gets, 2.1 s
//! ```
//!
//! The line's form is stable (benchmarks and tests parse it with [`CycleLine::parse`]): the
//! cycle's number (the initial sync is 0), what started it (`initial`, `source` or `drift`), the
//! units of the revision, the passes run over them (a new revision passes over the units it
//! rendered again, not over every unit), then the requests the cycle sent to the cluster: writes, LISTs (a paged
//! LIST counts once) and GETs (one object, or the API's discovery), and its wall time in seconds.
//! The watches that keep the caches are not counted (they stay open across cycles).

use crate::apply::RequestCounter;
use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

/// What started a cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The first sync after the agent started.
    Initial,
    /// A fetch of the source (`--interval`).
    Source,
    /// A drift check (`--drift-interval`).
    Drift,
}

impl Trigger {
    fn name(self) -> &'static str {
        match self {
            Trigger::Initial => "initial",
            Trigger::Source => "source",
            Trigger::Drift => "drift",
        }
    }
}

/// One cycle's line.
#[derive(Debug, Clone, PartialEq)]
pub struct CycleLine {
    pub number: u64,
    pub trigger: Trigger,
    pub units: usize,
    pub passes: u64,
    pub writes: u64,
    pub lists: u64,
    pub gets: u64,
    pub seconds: f64,
}

impl fmt::Display for CycleLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cycle {} ({}): {} units, {} passes, {} writes, {} lists, {} gets, {:.1} s",
            self.number,
            self.trigger.name(),
            self.units,
            self.passes,
            self.writes,
            self.lists,
            self.gets,
            self.seconds
        )
    }
}

impl CycleLine {
    /// The cycle line in `line` (as [`Display`](fmt::Display) writes it), `None` for any other line.
    pub fn parse(line: &str) -> Option<CycleLine> {
        let rest = line.trim().strip_prefix("cycle ")?;
        let (number, rest) = rest.split_once(" (")?;
        let (trigger, rest) = rest.split_once("): ")?;
        let trigger = [Trigger::Initial, Trigger::Source, Trigger::Drift]
            .into_iter()
            .find(|t| t.name() == trigger)?;
        let fields: Vec<&str> = rest.split(", ").collect();
        let [units, passes, writes, lists, gets, seconds] = fields.as_slice() else {
            return None;
        };
        let count = |field: &str, unit: &str| field.strip_suffix(unit)?.trim().parse::<u64>().ok();
        Some(CycleLine {
            number: number.parse().ok()?,
            trigger,
            units: count(units, "units")? as usize,
            passes: count(passes, "passes")?,
            writes: count(writes, "writes")?,
            lists: count(lists, "lists")?,
            gets: count(gets, "gets")?,
            seconds: seconds.strip_suffix(" s")?.parse().ok()?,
        })
    }

    /// Prints the line on standard output and logs it as an event with its fields.
    pub fn report(&self) {
        tracing::info!(
            cycle = self.number,
            trigger = self.trigger.name(),
            units = self.units,
            passes = self.passes,
            writes = self.writes,
            lists = self.lists,
            gets = self.gets,
            elapsed_s = self.seconds,
            "cycle done"
        );
        crate::output::println(&self.to_string());
    }
}

/// The counters and the clock at a cycle's start.
pub struct Meter {
    started: Instant,
    /// Requests by path, when the log shows debug events (each cycle then logs its own).
    requests: Option<BTreeMap<String, u64>>,
    writes: u64,
    lists: u64,
    gets: u64,
}

impl Meter {
    pub fn start(counter: &RequestCounter) -> Meter {
        Meter {
            started: Instant::now(),
            requests: tracing::enabled!(tracing::Level::DEBUG).then(|| counter.requests()),
            writes: counter.writes(),
            lists: counter.lists(),
            gets: counter.gets(),
        }
    }

    /// The line of the cycle started with this meter, ending now.
    pub fn line(
        &self,
        counter: &RequestCounter,
        number: u64,
        trigger: Trigger,
        (units, passes): (usize, u64),
    ) -> CycleLine {
        if let Some(before) = &self.requests {
            let sent: BTreeMap<String, u64> = counter
                .requests()
                .into_iter()
                .map(|(path, n)| (n - before.get(&path).copied().unwrap_or(0), path))
                .filter(|(n, _)| *n > 0)
                .map(|(n, path)| (path, n))
                .collect();
            tracing::debug!(cycle = number, requests = ?sent, "requests of the cycle");
        }
        CycleLine {
            number,
            trigger,
            units,
            passes,
            writes: counter.writes() - self.writes,
            lists: counter.lists() - self.lists,
            gets: counter.gets() - self.gets,
            seconds: round(self.started.elapsed()),
        }
    }
}

/// Seconds to a tenth, as the line shows them.
fn round(d: Duration) -> f64 {
    (d.as_secs_f64() * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_reads_back_as_written() {
        let line = CycleLine {
            number: 3,
            trigger: Trigger::Drift,
            units: 1000,
            passes: 1000,
            writes: 0,
            lists: 0,
            gets: 2,
            seconds: 2.1,
        };
        let text = line.to_string();
        assert_eq!(
            text,
            "cycle 3 (drift): 1000 units, 1000 passes, 0 writes, 0 lists, 2 gets, 2.1 s"
        );
        assert_eq!(CycleLine::parse(&text), Some(line));
        assert_eq!(
            CycleLine::parse(
                "  cycle 0 (initial): 2 units, 5 passes, 40 writes, 9 lists, 3 gets, 12.0 s\n"
            )
            .map(|l| l.trigger),
            Some(Trigger::Initial)
        );
        for other in [
            "cycle",
            "cycle 1 (later): 1 units, 1 passes, 0 writes, 0 lists, 0 gets, 0.1 s",
            "cycle 1 (drift): 1 units, 0 writes, 0 lists, 0 gets, 0.1 s",
            "clusters/a: Converged",
            "cycle x (drift): 1 units, 1 passes, 0 writes, 0 lists, 0 gets, 0.1 s",
        ] {
            assert_eq!(CycleLine::parse(other), None, "{other}");
        }
    }
}

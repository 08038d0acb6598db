//! Progress as units advance along the dependency chain: bars on a terminal, plain lines
//! otherwise (one line each time a unit moves). A unit that fails prints its errors as one block
//! ([`report::failure_block`]) where the user looks: on the terminal and in the log.

use crate::report::{self, UnitOutcome};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

pub struct Progress {
    bars: Option<(MultiProgress, Vec<ProgressBar>)>,
    names: Vec<String>,
    last: Vec<String>,
    /// The failure block last printed for each unit (printed again only when it changes).
    failures: Vec<String>,
}

impl Progress {
    pub fn new(bars: bool, names: impl Iterator<Item = String>) -> Progress {
        let names: Vec<String> = names.collect();
        let bars = bars.then(|| {
            let multi = MultiProgress::new();
            let style =
                ProgressStyle::with_template("{prefix:<18} [{bar:20}] {pos:>2}/{len} {msg}")
                    .expect("valid template")
                    .progress_chars("=> ");
            let list = names
                .iter()
                .map(|n| {
                    multi.add(
                        ProgressBar::new(10)
                            .with_style(style.clone())
                            .with_prefix(n.clone()),
                    )
                })
                .collect();
            (multi, list)
        });
        let last = vec![String::new(); names.len()];
        let failures = vec![String::new(); names.len()];
        Progress {
            bars,
            names,
            last,
            failures,
        }
    }

    pub fn update(&mut self, i: usize, outcome: &UnitOutcome) {
        let chain = &outcome.standing.chain;
        let phase = report::phase(outcome);
        let line = format!(
            "{:?}: step {}/{}: {}",
            phase, chain.step, chain.total, chain.stage
        );
        let line = crate::redact::scrub(&line).into_owned();
        match &self.bars {
            Some((_, bars)) => {
                bars[i].set_length(chain.total as u64);
                bars[i].set_position(chain.step as u64);
                bars[i].set_message(
                    crate::redact::scrub(&format!("{phase:?}: {}", chain.stage)).into_owned(),
                );
            }
            None if self.last[i] != line => {
                crate::output::println(&format!("{}: {line}", self.names[i]))
            }
            None => {}
        }
        self.last[i] = line;
        if phase == report::Phase::Failed && !outcome.errors.is_empty() {
            self.failed(i, outcome);
        }
    }

    /// Prints the failure block of unit `i` (once per distinct block), and logs each error.
    fn failed(&mut self, i: usize, outcome: &UnitOutcome) {
        let block = report::failure_block(&self.names[i], &outcome.errors);
        if self.failures[i] == block {
            return;
        }
        for e in &outcome.errors {
            tracing::error!(
                unit = %self.names[i],
                file = e.location(),
                object = e.object.as_ref().map(ToString::to_string),
                error = %e.text(),
                "unit failed"
            );
        }
        match &self.bars {
            Some((multi, _)) => {
                let _ = multi.println(crate::redact::scrub(block.trim_end()));
            }
            None => crate::output::print(&block),
        }
        self.failures[i] = block;
    }

    pub fn finish(&mut self) {
        if let Some((_, bars)) = &self.bars {
            for b in bars {
                b.finish();
            }
        }
    }
}

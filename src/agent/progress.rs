//! Progress as units advance along the dependency chain: bars on a terminal, plain lines
//! otherwise (one line each time a unit moves).

use crate::report::{self, UnitOutcome};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

pub struct Progress {
    bars: Option<(MultiProgress, Vec<ProgressBar>)>,
    names: Vec<String>,
    last: Vec<String>,
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
        Progress { bars, names, last }
    }

    pub fn update(&mut self, i: usize, outcome: &UnitOutcome) {
        let chain = report::chain(&outcome.live, outcome.cluster.as_ref());
        let phase = report::phase(outcome);
        let line = format!(
            "{:?}: step {}/{}: {}",
            phase, chain.step, chain.total, chain.stage
        );
        match &self.bars {
            Some((_, bars)) => {
                bars[i].set_length(chain.total as u64);
                bars[i].set_position(chain.step as u64);
                bars[i].set_message(format!("{phase:?}: {}", chain.stage));
            }
            None if self.last[i] != line => println!("{}: {line}", self.names[i]),
            None => {}
        }
        self.last[i] = line;
    }

    pub fn finish(&mut self) {
        if let Some((_, bars)) = &self.bars {
            for b in bars {
                b.finish();
            }
        }
    }
}

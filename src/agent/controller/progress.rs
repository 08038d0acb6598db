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
    /// The milestone lines printed for each unit (each printed once).
    milestones: Vec<Vec<String>>,
}

/// The conditions whose changes are worth a line of their own: the steps a cluster takes beside
/// its dependency chain (the etcd key, the guest cluster's aggregated APIs).
const MILESTONE_CONDITIONS: [&str; 2] = ["EncryptionKeyReady", "AggregatedAPIServicesAvailable"];

/// The milestones of `outcome`: the identity its cluster uses once the identity check let it
/// through, and each state of the [`MILESTONE_CONDITIONS`].
fn milestones(outcome: &UnitOutcome) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(i) = &outcome.standing.identity {
        let kind = i
            .kind
            .as_deref()
            .map(|k| format!(" ({k})"))
            .unwrap_or_default();
        out.push(format!(
            "identity: AzureClusterIdentity {}{kind} allows namespace {}; ASO credentials in Secret {}",
            i.identity, i.namespace, i.secret
        ));
    }
    for o in &outcome.standing.conditions {
        for c in &o.conditions {
            if !MILESTONE_CONDITIONS.contains(&c.type_.as_str()) {
                continue;
            }
            let reason = c.reason.as_deref().unwrap_or_default();
            let message = c
                .message
                .as_deref()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default();
            out.push(format!(
                "{}: {} {} {reason}{message}",
                o.object, c.type_, c.status
            ));
        }
    }
    out
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
        let milestones = vec![Vec::new(); names.len()];
        Progress {
            bars,
            names,
            last,
            failures,
            milestones,
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
        for m in milestones(outcome) {
            if self.milestones[i].contains(&m) {
                continue;
            }
            let text = crate::redact::scrub(&format!("{}: {m}", self.names[i])).into_owned();
            match &self.bars {
                Some((multi, _)) => {
                    let _ = multi.println(&text);
                }
                None => crate::output::println(&text),
            }
            self.milestones[i].push(m);
        }
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

    /// A unit that left git and failed (deleting its objects waits for consent): it has no bar or
    /// line of its own, so its phase and failure block are printed when the converge ends.
    pub fn left_git(&mut self, outcome: &UnitOutcome) {
        if report::phase(outcome) != report::Phase::Failed || outcome.errors.is_empty() {
            return;
        }
        let block = report::failure_block(&outcome.unit, &outcome.errors);
        for e in &outcome.errors {
            tracing::error!(unit = %outcome.unit, file = e.location(), error = %e.text(), "unit failed");
        }
        let text = format!("{}: Failed: it left the revision\n{block}", outcome.unit);
        match &self.bars {
            Some((multi, _)) => {
                let _ = multi.println(crate::redact::scrub(text.trim_end()));
            }
            None => crate::output::print(&text),
        }
    }

    pub fn finish(&mut self) {
        if let Some((_, bars)) = &self.bars {
            for b in bars {
                b.finish();
            }
        }
    }
}

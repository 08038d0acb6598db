//! What the agent says about `--verify-signatures`: the metrics of each check, and a line on the
//! terminal when a revision is refused (once per refused revision) or verified again after one.

use crate::agent::controller::context::SourceContext;
use crate::metrics::Metrics;
use crate::source::Revision;
use crate::source::signature::{Refusal, Verdict};

impl SourceContext {
    /// Records the verification of the revision the last sync fetched; `serving` is the revision
    /// the agent goes on with (the last verified one after a refusal), if any.
    pub(in crate::agent) fn verified(
        &self,
        metrics: &Metrics,
        result: Result<Verdict, Refusal>,
        serving: Option<&Revision>,
    ) {
        let label = match &result {
            Ok(verdict) => verdict.result(),
            Err(refusal) => refusal.verdict.result(),
        };
        metrics.count_verification(label);
        let mut shown = self.shown_refusal.lock().expect("shown refusal lock");
        match result {
            Err(refusal) => {
                let text = refusal.to_string();
                if let Some(statuses) = &self.commit_status {
                    let prefix = format!("{} {}: ", crate::source::signature::REFUSED, refusal.tip);
                    let why = text.strip_prefix(&prefix).unwrap_or(&text);
                    statuses.refused(&refusal.tip, &format!("signature check: {why}"));
                }
                let serving_commit = serving.map(|r| r.commit.as_str());
                if shown.as_deref() == Some(text.as_str()) {
                    tracing::debug!(commit = %refusal.commit, revision = %refusal.tip, result = label, serving = serving_commit, "{text}");
                } else {
                    tracing::warn!(commit = %refusal.commit, revision = %refusal.tip, result = label, serving = serving_commit, "{text}");
                    crate::output::println(&refusal_line(&text, serving));
                    *shown = Some(text);
                }
            }
            Ok(verdict) => {
                if shown.take().is_some()
                    && let Some(r) = serving
                {
                    crate::output::println(&format!(
                        "verified: revision {} is {verdict}: applying it",
                        r.commit
                    ));
                }
            }
        }
    }
}

/// The terminal line of a refusal.
fn refusal_line(refusal: &str, serving: Option<&Revision>) -> String {
    match serving {
        Some(r) => format!(
            "refused: {refusal}; nothing of it is applied, revision {} stays in force",
            r.commit
        ),
        None => format!("refused: {refusal}; no verified revision to apply"),
    }
}

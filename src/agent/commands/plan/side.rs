//! One side of a plan (head, or the base it is compared with): its revision fetched into its own
//! mirror, checked out, its units found; and the render cache its units are looked up in.

use super::cache;
use crate::agent::AgentError;
use crate::plan::preview::Revision as PreviewRevision;
use crate::source::{GitRef, Source, SourceConfig};
use crate::unit::Unit;
use std::path::PathBuf;

/// A revision checked out, its units found but not rendered yet.
pub(super) struct Checkout {
    pub(super) revision: PreviewRevision,
    pub(super) root: PathBuf,
    pub(super) units: Vec<Unit>,
}

/// Fetches `reference` into its own mirror under `state_dir` (never the run's source state),
/// verifies it when asked (before anything of it is checked out), checks it out (linked from a
/// checkout under `seed`, another side's state, when there is one) and finds its units.
pub(super) async fn checkout_revision(
    repo: &str,
    reference: &GitRef,
    state_dir: PathBuf,
    verification: Option<std::sync::Arc<crate::source::signature::Verification>>,
    seed: Option<PathBuf>,
) -> Result<Checkout, AgentError> {
    let config = SourceConfig {
        url: repo.to_string(),
        reference: reference.clone(),
        state_dir,
    };
    let shown = reference.to_string();
    tokio::task::spawn_blocking(move || -> Result<Checkout, AgentError> {
        let mut source = Source::open(config)?;
        if let Some(v) = verification {
            source.verify_signatures(v);
        }
        if let Some(seed) = seed {
            source.seed_checkouts_from(seed);
        }
        let revision = match source.sync()? {
            crate::source::SyncOutcome::Stale { error, .. } => return Err(error.into()),
            outcome => outcome.revision().clone(),
        };
        let units = crate::unit::discover(&revision.checkout)?;
        Ok(Checkout {
            revision: PreviewRevision {
                reference: shown,
                commit: revision.commit,
            },
            root: revision.checkout,
            units,
        })
    })
    .await
    .map_err(|e| AgentError::Task(e.to_string()))?
}

/// The render cache of a side whose source state is `side_state` (`None` with decryption keys:
/// a preparation holding decrypted values is never written).
pub(super) fn render_cache(
    plan_state: &std::path::Path,
    side_state: &std::path::Path,
    checkout: &Checkout,
    digests: bool,
) -> Option<cache::RenderCache> {
    if !digests {
        return None;
    }
    let mirror = crate::source::mirror_path(side_state);
    match cache::RenderCache::new(
        &plan_state.join("render-cache"),
        mirror,
        &checkout.revision.commit,
    ) {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::warn!(error = %e, "the render cache is not used");
            None
        }
    }
}

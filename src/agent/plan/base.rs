//! A plan without a cluster: head against the base revision's render (a pull request's preview in
//! CI). The same policy and deletion-safety decisions as against live state, on rendered objects.
//! Base renders every unit; head only the units whose base input closure a changed path touches
//! (see [`crate::agent::incremental`]), the others take base's preparation and show no change.

use super::{
    Checkout, Rendered, add_deletions, add_diff, cluster_name, empty_cluster, held, policy_effect,
    prepared_or_errors, unit_consents,
};
use crate::agent::prepare;
use crate::agent::{AgentError, Safety};
use crate::apply::inventory::Identity;
use crate::object::ObjectKey;
use crate::plan::diff_revisions;
use crate::plan::policy::{self, Policy};
use crate::plan::preview::ClusterPreview;
use crate::plan::prune::{self, Candidate, Consent};
use crate::source::{GitRef, Source, SourceConfig};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

/// Prepares the units of a checkout: every unit, or with `base` (the base side, rendered, and the
/// paths changed since it), only those whose input closure changed (see
/// [`super::incremental`]); the others take base's preparation. Gives `base` back.
pub(super) async fn render(
    checkout: Checkout,
    base: Option<(Rendered, Option<Vec<PathBuf>>)>,
) -> Result<(Rendered, Option<Rendered>), AgentError> {
    tokio::task::spawn_blocking(move || {
        let inputs = base.as_ref().map(|(b, _)| {
            let mut inputs = b.inputs.clone();
            inputs.retain(|u, _| !b.conflicted.contains(&u.name()));
            inputs
        });
        let earlier = base
            .as_ref()
            .zip(inputs.as_ref())
            .map(
                |((b, changed), inputs)| crate::agent::incremental::Earlier {
                    units: &b.units,
                    inputs,
                    changed: changed.as_deref(),
                },
            );
        let mut prepared =
            crate::agent::incremental::prepare_units(&checkout.root, checkout.units, earlier);
        let (_, conflicted) = crate::agent::fleet::check(&mut prepared.units);
        let side = Rendered {
            rendered: prepared.rendered.len(),
            units: prepared.units,
            inputs: prepared.inputs,
            revision: checkout.revision,
            conflicted,
        };
        (side, base.map(|(b, _)| b))
    })
    .await
    .map_err(|e| AgentError::Task(e.to_string()))
}

/// The paths changed from base to head, read in head's mirror (`None` when it cannot tell, say
/// base is not in head's history: then every unit renders).
pub(super) async fn changed_paths(
    repo: &str,
    head: &GitRef,
    state_dir: PathBuf,
    from: String,
    to: String,
) -> Option<Vec<PathBuf>> {
    let config = SourceConfig {
        url: repo.to_string(),
        reference: head.clone(),
        state_dir,
    };
    let found = tokio::task::spawn_blocking(move || {
        Source::open(config).and_then(|s| s.changed_paths(&from, &to))
    })
    .await;
    match found {
        Ok(Ok(changed)) => Some(changed),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "the changes from base to head are unknown: every unit renders");
            None
        }
        Err(e) => {
            tracing::warn!(error = %e, "the changes from base to head are unknown: every unit renders");
            None
        }
    }
}

/// Head against the base revision (no cluster).
pub(super) fn against_base(
    base: &Rendered,
    head: &Rendered,
    safety: Safety,
) -> Vec<ClusterPreview> {
    let base_units: BTreeMap<String, &prepare::Preparation> =
        base.units.iter().map(|(u, p)| (u.name(), p)).collect();
    let mut clusters = Vec::new();
    for (unit, prepared) in &head.units {
        let name = unit.name();
        let Some(p) = prepared_or_errors(prepared, &name, &mut clusters) else {
            continue;
        };
        let mut c = empty_cluster(&name, cluster_name(p));
        let old: HashMap<Identity, &Value> = match base_units.get(&name) {
            Some(Ok(b)) => b
                .objects
                .iter()
                .map(|o| (Identity::from(&o.key), &o.object))
                .collect(),
            // A base that did not render shows head as all new.
            _ => HashMap::new(),
        };
        for &i in &p.order {
            let o = &p.objects[i];
            let before = old.get(&Identity::from(&o.key)).copied();
            let declared = policy::declared(&o.object);
            if declared == Policy::Skip {
                policy_effect(
                    &mut c,
                    &o.key,
                    Policy::Skip,
                    "not applied: reconcile-policy skip (read and reported only)",
                );
                continue;
            }
            if declared == Policy::DetachOnDelete {
                policy_effect(
                    &mut c,
                    &o.key,
                    Policy::DetachOnDelete,
                    "applied; when it leaves git, the Azure resource is kept",
                );
            }
            if let Some(p) = policy::if_exists(&o.object)
                && before.is_none()
            {
                policy_effect(
                    &mut c,
                    &o.key,
                    p,
                    &format!(
                        "decided at create time: policy {p} if the Azure resource already exists, else manage"
                    ),
                );
            }
            add_diff(&mut c, diff_revisions(Some(&o.object), before), false);
        }
        if let Some(Ok(b)) = base_units.get(&name) {
            let wanted: BTreeSet<Identity> =
                p.objects.iter().map(|o| Identity::from(&o.key)).collect();
            let leaving: Vec<&prepare::PlannedObject> = b
                .objects
                .iter()
                .filter(|o| !wanted.contains(&Identity::from(&o.key)))
                .collect();
            let rendered = Some(p.objects.len());
            deletions_from_base(
                &mut c,
                &leaving,
                rendered,
                b.objects.len(),
                unit_consents(p),
                safety,
            );
        }
        clusters.push(c);
    }
    // Units only in base: all of it leaves.
    let present: BTreeSet<String> = head.units.iter().map(|(u, _)| u.name()).collect();
    if !head.units.is_empty() {
        for (name, b) in base_units.iter().filter(|(n, _)| !present.contains(*n)) {
            let Ok(b) = b else { continue };
            let mut c = empty_cluster(name, cluster_name(b));
            let leaving: Vec<&prepare::PlannedObject> = b.objects.iter().collect();
            deletions_from_base(&mut c, &leaving, None, b.objects.len(), false, safety);
            clusters.push(c);
        }
    }
    clusters
}

/// The deletions of what left git between base and head, decided as a pass decides them
/// ([`prune::deletions`]); `rendered` is how many objects head renders (`None`: the unit left git).
fn deletions_from_base(
    c: &mut ClusterPreview,
    leaving: &[&prepare::PlannedObject],
    rendered: Option<usize>,
    total: usize,
    unit_consent: bool,
    safety: Safety,
) {
    if leaving.is_empty() {
        return;
    }
    let keys: Vec<ObjectKey> = leaving.iter().map(|o| o.key.clone()).collect();
    let old: Vec<Option<&Value>> = leaving.iter().map(|o| Some(&o.object)).collect();
    let cands: Vec<Candidate> = keys
        .iter()
        .zip(leaving)
        .map(|(k, o)| Candidate {
            key: k,
            live: Some(&o.object),
            recorded: policy::declared(&o.object),
        })
        .collect();
    let consent = Consent {
        flag: safety.allow_deletion,
        unit: unit_consent,
    };
    let verdicts = prune::deletions(&prune::Pruning {
        rendered,
        stale_source: None,
        candidates: &cands,
        total,
        consent,
        max_share: safety.max_delete_share,
        allow_empty_render: safety.allow_empty_render,
    });
    match verdicts {
        Ok(verdicts) => add_deletions(c, &keys, &old, verdicts, "base"),
        Err(hold) => held(c, &keys, &hold),
    }
}

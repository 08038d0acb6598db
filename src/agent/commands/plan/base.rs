//! A plan without a cluster: head against the base revision's render (a pull request's preview in
//! CI). The same policy and deletion-safety decisions as against live state, on rendered objects.
//! Base renders every unit; head only the units whose base input closure a changed path touches
//! (see [`crate::agent::controller::incremental`]), the others take base's preparation (moved, not copied) and
//! show no change: they are compared with themselves, which costs no diff.

use super::cache::{self, RenderCache};
use super::{
    Checkout, Rendered, add_deletions, add_diff, cluster_name, empty_cluster, held, pending_values,
    policy_effect, unit_consents,
};
use crate::agent::{AgentError, Safety};
use crate::agent::{fleet, prepare};
use crate::apply::inventory::Identity;
use crate::object::ObjectKey;
use crate::plan::diff_revisions;
use crate::plan::ownership::UnitClaims;
use crate::plan::policy::{self, Policy};
use crate::plan::preview::ClusterPreview;
use crate::plan::prune::{self, Candidate, Consent};
use crate::source::{GitRef, Source, SourceConfig};
use crate::unit::Unit;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

/// Prepares the units of a checkout: every unit, or with `base` (the base side, rendered, and the
/// paths changed since it), only those whose input closure changed (see
/// [`super::incremental`]); the others take base's preparation, moved out of base (base keeps
/// the units it does not give away; the head side names those it took in [`Rendered::kept`]).
/// Gives `base` back. A unit to render is taken from `cache` when it holds the unit's render
/// at this revision (see [`super::cache`]).
pub(super) async fn render(
    checkout: Checkout,
    base: Option<(Rendered, Option<Vec<PathBuf>>)>,
    cache: Option<RenderCache>,
) -> Result<(Rendered, Option<Rendered>), AgentError> {
    tokio::task::spawn_blocking(move || {
        let (mut base, changed) = base.unzip();
        let changed = changed.flatten();
        // Base's closures (base needs them no more), but those of the units the fleet check
        // failed: head renders them again rather than keep base's failure.
        let inputs = base.as_mut().map(|b| {
            let mut inputs = std::mem::take(&mut b.inputs);
            inputs.retain(|u, _| !b.conflicted.contains(&u.name()));
            inputs
        });
        // Base's preparations, each to be taken once by the head unit keeping it.
        let mut given: Vec<(Unit, Option<prepare::Preparation>)> = base
            .as_mut()
            .map(|b| std::mem::take(&mut b.units))
            .unwrap_or_default()
            .into_iter()
            .map(|(u, p)| (u, Some(p)))
            .collect();
        let at: HashMap<Unit, usize> = given
            .iter()
            .enumerate()
            .map(|(i, (u, _))| (u.clone(), i))
            .collect();
        let cached = std::sync::atomic::AtomicUsize::new(0);
        let mut prepared = crate::agent::controller::incremental::prepare_units_with(
            checkout.units,
            inputs.as_ref().map(|i| (i, changed.as_deref())),
            |u| at.get(u).and_then(|&i| given[i].1.take()),
            |u| {
                let (p, inputs, hit) = cache::prepare(cache.as_ref(), &checkout.root, u);
                if hit {
                    cached.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                (p, inputs)
            },
        );
        tracing::info!(
            revision = %checkout.revision.commit,
            cached = cached.into_inner(),
            "units taken from the render cache"
        );
        if let Some(b) = base.as_mut() {
            // Base's closures back: the plan's rollout tells own changes from shared ones by them.
            b.inputs = inputs.unwrap_or_default();
            b.units = given
                .into_iter()
                .filter_map(|(u, p)| p.map(|p| (u, p)))
                .collect();
        }
        let fresh: BTreeSet<String> = prepared.rendered.iter().map(|(u, _)| u.name()).collect();
        // What each unit declares: a unit kept declares what it declared at base.
        let mut base_claims: HashMap<String, Arc<UnitClaims>> = base
            .as_mut()
            .map(|b| std::mem::take(&mut b.claims))
            .unwrap_or_default()
            .into_iter()
            .map(|c| (c.unit.clone(), c))
            .collect();
        // What base's units declare they own (head's newcomers to an object fail, not its owner).
        let owners = fleet::declared_owners(base_claims.values().map(|c| &**c));
        // A unit kept declares what it declared at base; the others' claims are computed on
        // every core (each reads its unit's objects).
        let claimed: Vec<(&prepare::Prepared, Option<Arc<UnitClaims>>)> = prepared
            .units
            .iter()
            .filter_map(|(u, p)| Some((u, p.as_ref().ok()?)))
            .map(|(u, p)| match base_claims.remove(&u.name()) {
                Some(c) if !fresh.contains(&c.unit) => (&**p, Some(c)),
                _ => (&**p, None),
            })
            .collect();
        let claims: Vec<Arc<UnitClaims>> = prepare::on_every_core(&claimed, |(p, kept)| {
            kept.clone().unwrap_or_else(|| Arc::new(fleet::claims(p)))
        });
        let checked = crate::plan::ownership::Fleet::new(claims.clone());
        let conflicted =
            fleet::fail_conflicts(&mut prepared.units, &checked, fleet::owner_by(&owners));
        let side = Rendered {
            rendered: prepared.rendered.iter().map(|(u, _)| u.name()).collect(),
            kept: prepared
                .units
                .iter()
                .map(|(u, _)| u.name())
                .filter(|n| !fresh.contains(n))
                .collect(),
            units: prepared.units,
            // Only base's closures are asked (by head's render).
            inputs: if base.is_some() {
                BTreeMap::new()
            } else {
                prepared.inputs
            },
            revision: checkout.revision,
            conflicted,
            claims,
        };
        (side, base)
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
    // Each unit's preview on every core (each reads only its own objects), in the units' order.
    let mut clusters: Vec<ClusterPreview> = prepare::on_every_core(&head.units, |(unit, p)| {
        unit_against_base(unit, p, &base_units, head, safety)
    })
    .into_iter()
    .flatten()
    .collect();
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

/// One head unit's preview against base (a unit that failed to prepare: its errors).
fn unit_against_base(
    unit: &Unit,
    prepared: &prepare::Preparation,
    base_units: &BTreeMap<String, &prepare::Preparation>,
    head: &Rendered,
    safety: Safety,
) -> Option<ClusterPreview> {
    let name = unit.name();
    let p = match prepared {
        Ok(p) => &**p,
        Err(errors) => return Some(super::failed_unit(&name, errors)),
    };
    let mut c = empty_cluster(&name, cluster_name(p));
    // A unit kept: every object unchanged, without normalising and diffing it.
    let kept = head.kept.contains(&name);
    // A unit head kept is base's preparation itself (moved out of base).
    let base_unit = if kept {
        Some(p)
    } else {
        match base_units.get(&name) {
            Some(Ok(b)) => Some(&**b),
            _ => None,
        }
    };
    let bodies = p.thawed();
    let base_bodies = base_unit.filter(|_| !kept).map(|b| b.thawed());
    // A unit kept is its own base: head's bodies are base's.
    let old: HashMap<Identity, &Value> = match base_unit {
        Some(b) => (b
            .objects
            .iter()
            .zip(base_bodies.as_ref().unwrap_or(&bodies)))
        .map(|(o, body)| (Identity::from(&o.key), &**body))
        .collect(),
        // A base that did not render shows head as all new.
        None => HashMap::new(),
    };
    for &i in &p.order {
        let (o, body) = (&p.objects[i], &*bodies[i]);
        let before = old.get(&Identity::from(&o.key)).copied();
        let same = kept && before.is_some();
        let declared = policy::declared(body);
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
        if let Some(p) = policy::if_exists(body)
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
        if same {
            c.counts.unchanged += 1;
        } else {
            // A value the agent fills in is worth a note only where the object changes: an
            // unchanged object keeps the live value.
            pending_values(&mut c, p, i, body);
            add_diff(&mut c, diff_revisions(Some(body), before), false);
        }
    }
    // A unit kept has nothing leaving (its objects are base's).
    if let Some(b) = base_unit.filter(|_| !kept) {
        let wanted: BTreeSet<Identity> = p.objects.iter().map(|o| Identity::from(&o.key)).collect();
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
    Some(c)
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
    let bodies: Vec<std::sync::Arc<Value>> = leaving.iter().map(|o| o.object()).collect();
    let old: Vec<Option<&Value>> = bodies.iter().map(|b| Some(&**b)).collect();
    let cands: Vec<Candidate> = (keys.iter().zip(&bodies))
        .map(|(k, body)| Candidate {
            key: k,
            live: Some(body),
            recorded: policy::declared(body),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::preview::Revision as PreviewRevision;
    use std::path::Path;

    fn cm(name: &str, data: &str, annotations: &str) -> String {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: x\n  annotations: {{{annotations}}}\ndata: {{k: {data}}}\n"
        )
    }

    fn write(root: &Path, files: &[(&str, String)]) {
        for (path, text) in files {
            let p = root.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
    }

    fn checkout(root: &Path) -> Checkout {
        Checkout {
            revision: PreviewRevision {
                reference: root.display().to_string(),
                commit: "c".into(),
            },
            root: root.to_path_buf(),
            units: crate::unit::discover(root).unwrap(),
        }
    }

    /// The preview, and the units head kept.
    fn preview(
        base: &Path,
        head: &Path,
        changed: Option<Vec<PathBuf>>,
    ) -> (Vec<ClusterPreview>, BTreeSet<String>) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (b, _) = rt.block_on(render(checkout(base), None, None)).unwrap();
        let (h, b) = rt
            .block_on(render(checkout(head), Some((b, changed)), None))
            .unwrap();
        (against_base(&b.unwrap(), &h, Safety::default()), h.kept)
    }

    /// Units head keeps (moved out of base, compared with themselves) preview exactly as when head
    /// renders every unit: unchanged counts, policy effects, a conflict with a new unit, a unit
    /// changed, one removed, one added.
    #[test]
    fn kept_units_preview_as_when_every_unit_renders() {
        let tmp = tempfile::tempdir().unwrap();
        let (base, head) = (tmp.path().join("base"), tmp.path().join("head"));
        let skip = "serviceoperator.azure.com/reconcile-policy: skip";
        let kust = |r: &str| format!("resources: [{r}]\n");
        for (root, a_data) in [(&base, "one"), (&head, "two")] {
            write(
                root,
                &[
                    ("clusters/a/kustomization.yaml", kust("cm.yaml")),
                    ("clusters/a/cm.yaml", cm("a", a_data, "")),
                    (
                        "clusters/b/kustomization.yaml",
                        kust("cm.yaml, skipped.yaml"),
                    ),
                    ("clusters/b/cm.yaml", cm("b", "same", "")),
                    ("clusters/b/skipped.yaml", cm("b-skip", "same", skip)),
                    ("clusters/e/kustomization.yaml", kust("cm.yaml")),
                    ("clusters/e/cm.yaml", cm("e", "same", "")),
                ],
            );
        }
        write(
            &base,
            &[
                ("clusters/c/kustomization.yaml", kust("cm.yaml")),
                ("clusters/c/cm.yaml", cm("c", "gone", "")),
            ],
        );
        // d is new, and declares e's object too: only d fails at head (e declared it at base, so
        // owns it), and e does not render again.
        write(
            &head,
            &[
                ("clusters/d/kustomization.yaml", kust("cm.yaml, e.yaml")),
                ("clusters/d/cm.yaml", cm("d", "new", "")),
                ("clusters/d/e.yaml", cm("e", "same", "")),
            ],
        );
        let changed: Vec<PathBuf> = [
            "clusters/a/cm.yaml",
            "clusters/c/cm.yaml",
            "clusters/c/kustomization.yaml",
            "clusters/d/cm.yaml",
            "clusters/d/e.yaml",
            "clusters/d/kustomization.yaml",
        ]
        .into_iter()
        .map(PathBuf::from)
        .collect();
        let (incremental, kept) = preview(&base, &head, Some(changed));
        let (full, none) = preview(&base, &head, None);
        assert_eq!(
            kept,
            BTreeSet::from(["clusters/b".into(), "clusters/e".into()])
        );
        assert!(none.is_empty());
        assert_eq!(incremental, full);
        let units: Vec<&str> = full.iter().map(|c| c.unit.as_str()).collect();
        assert_eq!(
            units,
            [
                "clusters/a",
                "clusters/b",
                "clusters/d",
                "clusters/e",
                "clusters/c"
            ]
        );
        let b = &full[1];
        assert_eq!(
            (b.counts.unchanged, b.policy_effects.len()),
            (1, 1),
            "{b:?}"
        );
        assert!(!full[2].errors.is_empty(), "{:?}", full[2]);
        assert!(full[3].errors.is_empty(), "{:?}", full[3]);
    }
}

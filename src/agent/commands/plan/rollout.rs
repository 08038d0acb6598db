//! The rollout a plan foresees (`plan --base/--head` with head's `rollout:`): every unit on the
//! base revision, none on head yet, decided at the current time by [`crate::rollout::decide`],
//! the same decision the controller carries out. It shows the waves with the clusters each
//! changes, and the clusters whose maintenance window is closed now.

use super::Rendered;
use crate::plan::preview::{ClusterPreview, RolloutPreview, WavePreview, WindowWait};
use crate::rollout::units::change_of;
use crate::rollout::{Rollout, UnitChange, UnitInput, decide};
use chrono::{DateTime, SecondsFormat, Utc};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// The rollout of head over the fleet at `now`; `None` when no unit goes through waves or waits
/// for a window. `changed`: the paths changed from base to head (`None`: unknown, then every unit
/// that renders otherwise counts as changed through what it shares).
pub(super) fn foresee(
    settings: &Rollout,
    base: &Rendered,
    head: &Rendered,
    clusters: &[ClusterPreview],
    changed: Option<&[PathBuf]>,
    now: DateTime<Utc>,
) -> Option<RolloutPreview> {
    let previews: BTreeMap<&str, &ClusterPreview> =
        clusters.iter().map(|c| (c.unit.as_str(), c)).collect();
    let at_base: BTreeSet<&str> = base.rendered.iter().map(String::as_str).collect();
    let inputs: BTreeMap<String, &crate::render::Inputs> =
        base.inputs.iter().map(|(u, i)| (u.name(), i)).collect();
    let units: Vec<UnitInput> = head
        .units
        .iter()
        .map(|(unit, prepared)| {
            let name = unit.name();
            let facts = (prepared.as_ref())
                .map(|p| p.rollout.clone())
                .unwrap_or_default();
            let same = head.kept.contains(&name)
                || previews
                    .get(name.as_str())
                    .is_some_and(|c| !c.has_changes() && c.errors.is_empty());
            let new = !at_base.contains(name.as_str());
            let change = if same {
                UnitChange::None
            } else if new {
                UnitChange::Own
            } else {
                match inputs.get(&name) {
                    Some(i) => change_of(
                        &name,
                        false,
                        |p| i.touched_by(p),
                        changed.unwrap_or_default(),
                    ),
                    None => UnitChange::Shared,
                }
            };
            UnitInput {
                labels: facts.labels,
                apply_now: facts.apply_now,
                unit: name,
                on: (!new).then(|| base.revision.commit.clone()),
                change,
                newest: None,
            }
        })
        .collect();
    let decision = decide(&head.revision.commit, Some(settings), &units, None, now);
    let view = decision.view?;
    Some(RolloutPreview {
        waves: view
            .waves
            .into_iter()
            .map(|w| WavePreview {
                name: w.name,
                units: w.units,
            })
            .collect(),
        waiting_for_window: view
            .waiting_for_window
            .into_iter()
            .map(|(unit, opens_at)| WindowWait {
                unit,
                opens_at: opens_at.map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true)),
            })
            .collect(),
    })
}

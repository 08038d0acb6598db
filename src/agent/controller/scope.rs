//! Which units a new revision passes over: those it rendered again, and those that read what one
//! of them renders; a unit that had converged and neither keeps its outcome (see
//! [`super::Agent::converge`]'s `earlier`).

use crate::agent::controller::revision::Revision;
use crate::report::{self, ObjectAction, UnitOutcome};
use std::collections::BTreeSet;

/// Whether a unit's pass reads an object a unit (of any shard) rendered again for `rev` renders: the identity its
/// clusters use or its Secret, or an AutoNodePolicy of its namespace. Such a unit passes again
/// even when its own preparation did not change.
/// `index`: the revision's wake index, which knows the identities and Secrets each unit's
/// clusters use. Asked by the unit's index in the revision.
pub(super) fn reads_what_was_rendered(
    rev: &Revision,
    index: &super::wakes::Wakes,
) -> impl Fn(usize, &crate::agent::pass::prepare::Prepared) -> bool + use<> {
    use crate::agent::pass::identity_check::may_be_watched;
    let rendered: Vec<&crate::agent::pass::prepare::Prepared> = rev
        .fleet_units
        .iter()
        .filter(|(u, _)| rev.rendered.contains(&u.name()))
        .filter_map(|(_, p)| p.as_deref().ok())
        .collect();
    // The units whose clusters use an identity or a Secret rendered again (found in the wake
    // index, with those whose inventory holds it: a pass more, never one less).
    let readers: BTreeSet<usize> = (rendered.iter())
        .flat_map(|p| p.objects.iter().map(|o| &o.key))
        .filter(|k| may_be_watched(k))
        .flat_map(|k| index.holding(k.into()))
        .collect();
    let policy_namespaces: BTreeSet<String> = rendered
        .iter()
        .flat_map(|p| &p.objects)
        .filter(|o| crate::reconcile::aro::node_policy::is_policy_key(&o.key))
        .filter_map(|o| o.key.namespace.as_deref().map(str::to_string))
        .collect();
    move |i, p| {
        readers.contains(&i)
            || (!policy_namespaces.is_empty()
                && p.node_policy_namespaces()
                    .iter()
                    .any(|n| policy_namespaces.contains(n)))
    }
}

/// The outcome of a unit whose preparation did not change, at `revision`, when a pass would find
/// nothing to do: it had converged with nothing left for the agent or a person (no deletion
/// waiting for consent, no drift). It is the earlier outcome as it was, on `revision`: its report
/// goes on naming the commit whose rendering is applied (`rendered_at`), with what applying it
/// did, byte for byte, so a commit that leaves a cluster's rendering as it is rewrites no report.
///
/// Whether `earlier` is such an outcome; if so, it is made that outcome in place (so the caller
/// moves it, never copies it).
pub(super) fn kept_outcome(earlier: &mut UnitOutcome, revision: &str) -> bool {
    let settled = report::phase(earlier) == report::Phase::Converged
        && earlier.stale_source.is_none()
        && earlier.objects.iter().all(|o| {
            matches!(
                o.action,
                ObjectAction::Created
                    | ObjectAction::Updated
                    | ObjectAction::Unchanged
                    | ObjectAction::Adopted
                    | ObjectAction::Skipped
                    | ObjectAction::Deleted
            )
        });
    if !settled {
        return false;
    }
    let reported = earlier.reported_revision();
    earlier.rendered_at = (reported != revision).then(|| reported.to_string());
    earlier.revision = revision.to_string();
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures;

    fn converged(revision: &str) -> UnitOutcome {
        let mut o = fixtures::outcome_at(11);
        o.revision = revision.into();
        assert_eq!(report::phase(&o), report::Phase::Converged);
        o
    }

    #[test]
    fn a_kept_unit_is_on_the_new_revision_and_its_report_is_the_same_bytes() {
        let kept_outcome = |o: &UnitOutcome, revision: &str| {
            let mut o = o.clone();
            super::kept_outcome(&mut o, revision).then_some(o)
        };
        let earlier = converged("r1");
        let kept = kept_outcome(&earlier, "r2").expect("kept");
        assert_eq!(kept.revision, "r2");
        assert_eq!(kept.rendered_at.as_deref(), Some("r1"));
        let (before, after) = (report::build(&earlier), report::build(&kept));
        assert_eq!(report::to_yaml(&before), report::to_yaml(&after));
        assert_eq!(report::to_markdown(&before), report::to_markdown(&after));

        // Kept again by a third commit: still the first one's rendering.
        let again = kept_outcome(&kept, "r3").expect("kept");
        assert_eq!(
            (again.revision.as_str(), again.reported_revision()),
            ("r3", "r1")
        );
        // Kept at the revision it was rendered at (a drift check): nothing older to name.
        let same = kept_outcome(&earlier, "r1").expect("kept");
        assert_eq!((same.rendered_at, same.revision), (None, "r1".to_string()));
    }

    #[test]
    fn a_unit_not_settled_is_not_kept() {
        let mut o = converged("r1");
        o.stale_source = Some("unreachable".into());
        assert!(!kept_outcome(&mut o.clone(), "r2"));
        let progressing = fixtures::outcome_at(1);
        assert!(!kept_outcome(&mut progressing.clone(), "r2"));
    }
}

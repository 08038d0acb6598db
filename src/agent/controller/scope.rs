//! Which units a new revision passes over: those it rendered again, and those that read what one
//! of them renders; a unit that had converged and neither keeps its outcome (see
//! [`super::Agent::converge`]'s `earlier`).

use crate::agent::controller::revision::Revision;
use crate::report::{self, ObjectAction, UnitOutcome};
use std::collections::BTreeSet;

/// Whether a unit's pass reads an object a unit (of any shard) rendered again for `rev` renders: the identity its
/// clusters use or its Secret, or an AutoNodePolicy of its namespace. Such a unit passes again
/// even when its own preparation did not change.
pub(super) fn reads_what_was_rendered(
    rev: &Revision,
) -> impl Fn(&crate::agent::pass::prepare::Prepared) -> bool + '_ {
    let rendered: Vec<&crate::agent::pass::prepare::Prepared> = rev
        .fleet_units
        .iter()
        .filter(|(u, _)| rev.rendered.contains(&u.name()))
        .filter_map(|(_, p)| p.as_ref().ok())
        .collect();
    let keys: std::collections::HashSet<crate::object::ObjectKey> = rendered
        .iter()
        .flat_map(|p| p.objects.iter().map(|o| o.key.clone()))
        .collect();
    let policy_namespaces: BTreeSet<String> = rendered
        .iter()
        .flat_map(|p| &p.objects)
        .filter(|o| crate::reconcile::aro::node_policy::is_policy(&o.object))
        .filter_map(|o| o.key.namespace.clone())
        .collect();
    let identities = crate::agent::pass::identity_check::rendered_identities(
        rev.fleet_units.iter().filter_map(|(_, p)| p.as_ref().ok()),
    );
    move |p| {
        if keys.is_empty() {
            return false;
        }
        crate::agent::pass::identity_check::watched(p, &identities)
            .iter()
            .any(|k| keys.contains(k))
            || p.node_policy_namespaces()
                .iter()
                .any(|n| policy_namespaces.contains(n))
    }
}

/// The outcome of a unit whose preparation did not change, at `revision`, when a pass would find
/// nothing to do: it had converged with nothing left for the agent or a person (no deletion
/// waiting for consent, no drift). What the earlier passes did is not done again: it reads as
/// unchanged.
pub(super) fn kept_outcome(earlier: &UnitOutcome, revision: &str) -> Option<UnitOutcome> {
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
        return None;
    }
    let mut o = earlier.clone();
    o.revision = revision.to_string();
    o.objects.retain(|x| x.action != ObjectAction::Deleted);
    for x in &mut o.objects {
        if matches!(
            x.action,
            ObjectAction::Created | ObjectAction::Updated | ObjectAction::Adopted
        ) {
            x.action = ObjectAction::Unchanged;
        }
    }
    Some(o)
}

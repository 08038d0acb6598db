//! What a run reports of each object across its passes (a pure decision).

use crate::report::UnitOutcome;

/// A run reports what it did to each object: a create or update in an earlier pass of this run
/// is not forgotten when a later pass finds the object unchanged. A pass over a unit that kept
/// the outcome of an earlier commit's rendering (see [`super::scope::kept_outcome`]) applies that
/// same rendering: its report goes on naming that commit.
pub(in crate::agent) fn carry_actions(previous: &UnitOutcome, next: &mut UnitOutcome) {
    use crate::report::ObjectAction;
    if next.rendered_at.is_none() && previous.revision == next.revision {
        next.rendered_at = previous.rendered_at.clone();
    }
    // A unit being removed forgets its CAPI Cluster once that is deleted: the report keeps it.
    if next.cluster.is_none() {
        next.cluster = previous.cluster.clone();
    }
    // A deletion finished in an earlier pass leaves no trace in later ones: keep it reported.
    let gone: Vec<_> = previous
        .objects
        .iter()
        .filter(|p| p.action == ObjectAction::Deleted)
        .filter(|p| !next.objects.iter().any(|o| o.key == p.key))
        .cloned()
        .collect();
    next.objects.extend(gone);
    for o in &mut next.objects {
        if o.action != ObjectAction::Unchanged {
            continue;
        }
        if let Some(p) = previous.objects.iter().find(|p| p.key == o.key)
            && matches!(
                p.action,
                ObjectAction::Created | ObjectAction::Updated | ObjectAction::Adopted
            )
        {
            o.action = p.action.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::ObjectKey;
    use crate::report::{AzureMode, ObjectAction, ObjectOutcome};

    fn outcome(actions: &[(&str, ObjectAction)]) -> UnitOutcome {
        UnitOutcome {
            rendered_at: None,
            held: None,
            unit: "u".into(),
            cluster: None,
            revision: "r".into(),
            stale_source: None,
            azure: AzureMode::Simulated,
            objects: actions
                .iter()
                .map(|(n, a)| ObjectOutcome {
                    key: ObjectKey {
                        group: Default::default(),
                        version: "v1".into(),
                        kind: "ConfigMap".into(),
                        namespace: None,
                        name: n.to_string(),
                    },
                    action: a.clone(),
                    ready: true,
                    reason: None,
                    message: None,
                })
                .collect(),
            errors: vec![],
            standing: crate::report::Standing::unknown(None),
        }
    }

    #[test]
    fn earlier_creates_survive_later_unchanged_passes() {
        let first = outcome(&[
            ("a", ObjectAction::Created),
            ("b", ObjectAction::Blocked { on: vec![] }),
            ("c", ObjectAction::Updated),
        ]);
        let mut second = outcome(&[
            ("a", ObjectAction::Unchanged),
            ("b", ObjectAction::Created),
            ("c", ObjectAction::Failed),
        ]);
        carry_actions(&first, &mut second);
        let actions: Vec<_> = second.objects.iter().map(|o| o.action.clone()).collect();
        assert_eq!(
            actions,
            vec![
                ObjectAction::Created,
                ObjectAction::Created,
                ObjectAction::Failed
            ]
        );
    }

    #[test]
    fn a_pass_over_a_kept_unit_names_the_commit_its_rendering_is_of() {
        let mut kept = outcome(&[("a", ObjectAction::Created)]);
        kept.rendered_at = Some("r0".into());
        let mut pass = outcome(&[("a", ObjectAction::Unchanged)]);
        carry_actions(&kept, &mut pass);
        assert_eq!(pass.reported_revision(), "r0");
        assert_eq!(pass.objects[0].action, ObjectAction::Created);

        // A pass on another commit (a rollout moved the unit) names its own.
        let mut moved = outcome(&[]);
        moved.revision = "r2".into();
        carry_actions(&kept, &mut moved);
        assert_eq!(moved.reported_revision(), "r2");
    }
}

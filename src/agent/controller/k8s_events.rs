//! Kubernetes Events (events.k8s.io/v1) on a cluster's AROCluster and AROControlPlane: which
//! to record when a pass over its unit ends. Pure; the publishing is in `publish`.
//!
//! An event is recorded only when something changed, so a pass that finds nothing to do costs
//! nothing:
//! - the unit's phase changed since the last event about it: `Converged`, `Progressing`,
//!   `Blocked` (type Normal) or `ReconcileFailed` (type Warning);
//! - the unit still fails, with other errors than those last recorded: `ReconcileFailed` again.
//!
//! The first pass over a unit in this process has nothing to compare with: it records its phase,
//! except a converged unit that the pass did not write to (an agent restarted over a converged
//! fleet says nothing). A unit whose ARO objects are not known (it failed before rendering them)
//! has nothing to put an event on: its report and the log say why. No note holds a secret value:
//! each goes through [`crate::redact::scrub`].
//!
//! A paused fleet rollout says `RolloutPaused` on each failing unit's ARO objects (`rollout`).

pub mod publish;
pub mod rollout;

use crate::kinds::{CONTROL_PLANE_GROUP, INFRA_GROUP};
use crate::object::ObjectKey;
use crate::report::{self, ObjectAction, Phase, UnitOutcome};
pub use kube::runtime::events::EventType;

/// The longest note the API server accepts is 1 kB.
const NOTE_MAX: usize = 1024;
/// How many objects a note names before it says how many more there are.
const NAMED: usize = 3;

/// What the last event about a unit said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    pub phase: Phase,
    /// The failure's note, when failed.
    pub failure: Option<String>,
}

/// One event to record on each of a unit's ARO objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub type_: EventType,
    pub reason: &'static str,
    /// What the agent did (`Reconcile`: a pass over the unit).
    pub action: &'static str,
    pub note: String,
}

/// The events' action: a pass over the unit.
pub const ACTION: &str = "Reconcile";

/// What to say after a pass ended in `outcome`, given what was said last (`None`: nothing yet in
/// this process), and what is then said last.
pub fn decide(last: Option<&Said>, outcome: &UnitOutcome) -> (Said, Option<Planned>) {
    let phase = report::phase(outcome);
    let failure = (phase == Phase::Failed).then(|| failure_note(outcome));
    let now = Said {
        phase,
        failure: failure.clone(),
    };
    let speak = match last {
        None => phase != Phase::Converged || wrote(outcome),
        Some(l) => l.phase != phase || l.failure != failure,
    };
    if !speak {
        return (now, None);
    }
    let (type_, reason, note) = match phase {
        Phase::Converged => (EventType::Normal, "Converged", converged_note(outcome)),
        Phase::Progressing => (
            EventType::Normal,
            "Progressing",
            format!("step {}", outcome.standing.chain.short()),
        ),
        Phase::Blocked => (EventType::Normal, "Blocked", blocked_note(outcome)),
        Phase::Failed => (
            EventType::Warning,
            "ReconcileFailed",
            failure.unwrap_or_default(),
        ),
        Phase::NotStarted | Phase::Interrupted => (
            EventType::Warning,
            phase.as_str(),
            outcome.standing.pass.why().unwrap_or_default().to_string(),
        ),
    };
    let planned = Planned {
        type_,
        reason,
        action: ACTION,
        note: crate::output::clip(&crate::redact::scrub(&note), NOTE_MAX).into_owned(),
    };
    (now, Some(planned))
}

/// The objects a unit's events are about: its AROCluster and AROControlPlane, in that order,
/// from the pass's objects, else from `known` (the objects the unit is known to own live: a
/// unit that failed before rendering them still has them from an earlier revision).
pub fn regarding(outcome: &UnitOutcome, known: &[ObjectKey]) -> Vec<ObjectKey> {
    let aro = |keys: &mut dyn Iterator<Item = &ObjectKey>| {
        let mut out: Vec<ObjectKey> = Vec::new();
        let keys: Vec<&ObjectKey> = keys.collect();
        for (group, kind) in [
            (INFRA_GROUP, "AROCluster"),
            (CONTROL_PLANE_GROUP, "AROControlPlane"),
        ] {
            for k in &keys {
                if k.group == group && k.kind == kind && !out.contains(k) {
                    out.push((*k).clone());
                }
            }
        }
        out
    };
    let found = aro(&mut outcome.objects.iter().map(|o| &o.key));
    if found.is_empty() {
        aro(&mut known.iter())
    } else {
        found
    }
}

/// Whether the pass wrote to an object (created, updated, adopted or deleted one).
fn wrote(outcome: &UnitOutcome) -> bool {
    outcome.objects.iter().any(|o| {
        matches!(
            o.action,
            ObjectAction::Created
                | ObjectAction::Updated
                | ObjectAction::Adopted
                | ObjectAction::Deleted
        )
    })
}

fn converged_note(outcome: &UnitOutcome) -> String {
    let revision: String = outcome.revision.chars().take(12).collect();
    format!(
        "every object of {} is ready ({} objects) at revision {revision}",
        outcome.unit,
        outcome.objects.len()
    )
}

fn blocked_note(outcome: &UnitOutcome) -> String {
    let waits: Vec<String> = outcome
        .objects
        .iter()
        .filter_map(|o| match &o.action {
            ObjectAction::Blocked { on } => {
                let on: Vec<String> = on.iter().map(ToString::to_string).collect();
                Some(format!("{} waits for {}", o.key, on.join(", ")))
            }
            _ => None,
        })
        .collect();
    listed(&waits, "objects")
}

/// What failed, in the user's words: the unit's errors, else its failed objects, else the failed
/// step of its dependency chain.
fn failure_note(outcome: &UnitOutcome) -> String {
    let items: Vec<String> = if !outcome.errors.is_empty() {
        outcome.errors.iter().map(ToString::to_string).collect()
    } else {
        let failed: Vec<String> = outcome
            .objects
            .iter()
            .filter(|o| o.action == ObjectAction::Failed)
            .map(|o| {
                let why = o.message.as_deref().or(o.reason.as_deref());
                match why {
                    Some(w) => format!("{} failed: {w}", o.key),
                    None => format!("{} failed", o.key),
                }
            })
            .collect();
        if failed.is_empty() {
            vec![format!(
                "step {}: {}",
                outcome.standing.chain.short(),
                outcome.standing.chain.stage
            )]
        } else {
            failed
        }
    };
    crate::redact::scrub(&listed(&items, "errors")).into_owned()
}

/// The first [`NAMED`] of `items`, then how many more.
fn listed(items: &[String], what: &str) -> String {
    let mut out = items
        .iter()
        .take(NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if items.len() > NAMED {
        out.push_str(&format!("; and {} more {what}", items.len() - NAMED));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{AzureMode, ObjectOutcome, Standing, UnitError};

    fn key(group: &str, kind: &str, name: &str) -> ObjectKey {
        ObjectKey {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            namespace: Some("aro-dev".into()),
            name: name.into(),
        }
    }

    fn object(k: ObjectKey, action: ObjectAction, ready: bool) -> ObjectOutcome {
        ObjectOutcome {
            key: k,
            action,
            ready,
            reason: None,
            message: None,
        }
    }

    /// A unit with an AROCluster, an AROControlPlane and a ConfigMap, each `action`, ready or not.
    pub(super) fn outcome(action: ObjectAction, ready: bool) -> UnitOutcome {
        UnitOutcome {
            rendered_at: None,
            held: None,
            unit: "clusters/dev".into(),
            cluster: None,
            revision: "0123456789abcdef".into(),
            stale_source: None,
            azure: AzureMode::Simulated,
            objects: vec![
                object(key("", "ConfigMap", "settings"), action.clone(), ready),
                object(key(INFRA_GROUP, "AROCluster", "dev"), action.clone(), ready),
                object(
                    key(CONTROL_PLANE_GROUP, "AROControlPlane", "dev-cp"),
                    action,
                    ready,
                ),
            ],
            errors: vec![],
            standing: Standing::unknown(None),
        }
    }

    fn converged_writing() -> UnitOutcome {
        outcome(ObjectAction::Created, true)
    }

    pub(super) fn converged_idle() -> UnitOutcome {
        outcome(ObjectAction::Unchanged, true)
    }

    pub(super) fn progressing() -> UnitOutcome {
        outcome(ObjectAction::Created, false)
    }

    pub(super) fn failed(message: &str) -> UnitOutcome {
        let mut o = outcome(ObjectAction::Unchanged, true);
        o.errors.push(UnitError::new(
            Some(key(INFRA_GROUP, "AROCluster", "dev")),
            Some("clusters/dev/cluster.yaml".into()),
            message.into(),
        ));
        o
    }

    /// The reasons said along `passes`, starting from nothing said.
    fn reasons(passes: &[UnitOutcome]) -> Vec<&'static str> {
        let mut last: Option<Said> = None;
        let mut out = Vec::new();
        for p in passes {
            let (said, planned) = decide(last.as_ref(), p);
            out.extend(planned.map(|e| e.reason));
            last = Some(said);
        }
        out
    }

    #[test]
    fn a_phase_change_is_said_once_and_a_no_op_pass_says_nothing() {
        assert_eq!(
            reasons(&[
                progressing(),
                progressing(),
                converged_writing(),
                converged_idle(),
                converged_idle(),
            ]),
            vec!["Progressing", "Converged"]
        );
        let (_, e) = decide(None, &progressing());
        let e = e.expect("an event");
        assert_eq!((e.type_, e.action), (EventType::Normal, ACTION));
        let (said, e) = decide(
            Some(&Said {
                phase: Phase::Progressing,
                failure: None,
            }),
            &converged_idle(),
        );
        let e = e.expect("Progressing → Converged");
        assert_eq!((e.type_, e.reason), (EventType::Normal, "Converged"));
        assert!(e.note.contains("3 objects") && e.note.contains("0123456789ab"));
        assert!(!e.note.contains("0123456789abc"), "a short revision");
        assert_eq!(decide(Some(&said), &converged_idle()).1, None);
    }

    #[test]
    fn blocked_names_what_waits_for_what() {
        let on = vec![key("resources.azure.com", "ResourceGroup", "rg")];
        let mut o = outcome(ObjectAction::Blocked { on }, false);
        let mut pool = o.objects[1].clone();
        pool.key = key(INFRA_GROUP, "AROMachinePool", "workers");
        o.objects.push(pool);
        let (said, e) = decide(None, &o);
        let e = e.unwrap();
        assert_eq!((said.phase, e.reason), (Phase::Blocked, "Blocked"));
        assert!(
            e.note
                .contains("AROCluster/aro-dev/dev waits for ResourceGroup/aro-dev/rg"),
            "{}",
            e.note
        );
        assert!(e.note.ends_with("; and 1 more objects"), "{}", e.note);
    }

    #[test]
    fn a_restart_over_a_converged_fleet_says_nothing() {
        assert_eq!(reasons(&[converged_idle()]), Vec::<&str>::new());
        assert_eq!(reasons(&[converged_writing()]), vec!["Converged"]);
    }

    #[test]
    fn failures_warn_once_per_distinct_error() {
        let passes = [
            converged_writing(),
            failed("spec.region: Required value"),
            failed("spec.region: Required value"),
            failed("spec.version: Invalid value"),
            converged_idle(),
        ];
        assert_eq!(
            reasons(&passes),
            vec![
                "Converged",
                "ReconcileFailed",
                "ReconcileFailed",
                "Converged"
            ]
        );
        let (said, e) = decide(None, &passes[1]);
        let e = e.unwrap();
        assert_eq!(e.type_, EventType::Warning);
        assert_eq!(
            e.note,
            "clusters/dev/cluster.yaml: AROCluster/aro-dev/dev: spec.region: Required value"
        );
        assert_eq!(said.failure.as_deref(), Some(e.note.as_str()));
    }

    #[test]
    fn a_failed_object_without_errors_says_which_and_why() {
        let mut o = outcome(ObjectAction::Unchanged, true);
        o.objects[2].action = ObjectAction::Failed;
        o.objects[2].message = Some("the API server refused it".into());
        let (_, e) = decide(None, &o);
        assert_eq!(
            e.unwrap().note,
            "AROControlPlane/aro-dev/dev-cp failed: the API server refused it"
        );
    }

    #[test]
    fn notes_hold_no_secret_value_and_fit_the_api_server() {
        let secret = "s3cr3t-value-of-a-secret-k8s-events";
        crate::redact::learn([&serde_json::json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "creds", "namespace": "aro-dev"},
            "stringData": {"password": secret},
        })]);
        let (_, e) = decide(None, &failed(&format!("the password {secret} is refused")));
        let note = e.unwrap().note;
        assert!(!note.contains(secret), "{note}");
        let (_, e) = decide(None, &failed(&"é".repeat(2000)));
        let note = e.unwrap().note;
        assert!(
            note.len() <= NOTE_MAX && note.ends_with('…'),
            "{}",
            note.len()
        );
    }

    #[test]
    fn events_are_about_the_aro_cluster_and_control_plane() {
        let o = converged_writing();
        let names = |keys: Vec<ObjectKey>| -> Vec<String> {
            keys.iter().map(ToString::to_string).collect()
        };
        let both = vec!["AROCluster/aro-dev/dev", "AROControlPlane/aro-dev/dev-cp"];
        assert_eq!(names(regarding(&o, &[])), both);
        // A unit that failed before rendering them: the ones it owns live.
        let mut none = o.clone();
        none.objects.truncate(1);
        assert!(regarding(&none, &[]).is_empty());
        let live: Vec<ObjectKey> = o.objects.iter().map(|x| x.key.clone()).collect();
        assert_eq!(names(regarding(&none, &live)), both);
    }
}

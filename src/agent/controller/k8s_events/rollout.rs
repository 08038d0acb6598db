//! The `RolloutPaused` Event (type Warning): once per newly paused rollout, one on each failing
//! unit's ARO objects, "rollout of <sha7> paused at wave <name>: <unit>: <first error>". Pure;
//! the publishing is in `publish`.

use super::{EventType, NOTE_MAX, Planned};
use crate::rollout::Paused;

/// The events' reason.
pub const REASON: &str = "RolloutPaused";
/// The events' action: the rollout.
pub const ACTION: &str = "Rollout";

/// Which pause was last said: its revision, wave and failing units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PauseSaid {
    revision: String,
    wave: String,
    units: Vec<String>,
}

/// What to say of the rollout of `revision`, paused as `paused` says (`None`: not paused), given
/// the pause said last: an event per failing unit when the pause is new (another revision, wave
/// or set of failing units), else nothing. Returns what is then said last.
pub fn decide(
    last: Option<&PauseSaid>,
    revision: &str,
    paused: Option<&Paused>,
) -> (Option<PauseSaid>, Vec<(String, Planned)>) {
    let Some(p) = paused else {
        return (None, Vec::new());
    };
    let mut units: Vec<String> = p.failing.iter().map(|(u, _)| u.clone()).collect();
    units.sort();
    let now = PauseSaid {
        revision: revision.to_string(),
        wave: p.wave.clone(),
        units,
    };
    if last == Some(&now) {
        return (Some(now), Vec::new());
    }
    let sha7: String = revision.chars().take(7).collect();
    let planned = (p.failing.iter())
        .map(|(unit, errors)| {
            let first = errors.first().map(String::as_str).unwrap_or("failed");
            let note = format!(
                "rollout of {sha7} paused at wave {}: {unit}: {first}",
                p.wave
            );
            let note = crate::output::clip(&crate::redact::scrub(&note), NOTE_MAX).into_owned();
            let planned = Planned {
                type_: EventType::Warning,
                reason: REASON,
                action: ACTION,
                note,
            };
            (unit.clone(), planned)
        })
        .collect();
    (Some(now), planned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paused(units: &[&str]) -> Paused {
        Paused {
            wave: "dev".into(),
            failing: (units.iter())
                .map(|u| (u.to_string(), vec![format!("{u} broke"), "more".into()]))
                .collect(),
        }
    }

    #[test]
    fn a_new_pause_is_said_once_per_failing_unit() {
        let p = paused(&["clusters/dev-2", "clusters/dev-1"]);
        let (said, planned) = decide(None, "0123456789", Some(&p));
        let notes: Vec<(&str, &str)> = (planned.iter())
            .map(|(u, e)| (u.as_str(), e.note.as_str()))
            .collect();
        assert_eq!(
            notes,
            vec![
                (
                    "clusters/dev-2",
                    "rollout of 0123456 paused at wave dev: clusters/dev-2: clusters/dev-2 broke"
                ),
                (
                    "clusters/dev-1",
                    "rollout of 0123456 paused at wave dev: clusters/dev-1: clusters/dev-1 broke"
                ),
            ]
        );
        assert!(planned.iter().all(|(_, e)| e.type_ == EventType::Warning
            && e.reason == "RolloutPaused"
            && e.action == ACTION));
        // The same pause again: nothing; the same units in another order: nothing.
        let same = paused(&["clusters/dev-1", "clusters/dev-2"]);
        let (said, planned) = decide(said.as_ref(), "0123456789", Some(&same));
        assert!(planned.is_empty());
        // Another failing unit, or another revision: said again.
        let more = paused(&["clusters/dev-1", "clusters/dev-2", "clusters/dev-3"]);
        assert_eq!(decide(said.as_ref(), "0123456789", Some(&more)).1.len(), 3);
        assert_eq!(decide(said.as_ref(), "fedcba9876", Some(&same)).1.len(), 2);
        // Not paused: forgotten, so pausing again is said again.
        let (none, planned) = decide(said.as_ref(), "0123456789", None);
        assert!(none.is_none() && planned.is_empty());
        assert_eq!(decide(none.as_ref(), "0123456789", Some(&same)).1.len(), 2);
    }

    #[test]
    fn a_unit_without_errors_says_failed() {
        let p = Paused {
            wave: "prod".into(),
            failing: vec![("clusters/p".into(), vec![])],
        };
        let (_, planned) = decide(None, "abcdef0123", Some(&p));
        assert_eq!(
            planned[0].1.note,
            "rollout of abcdef0 paused at wave prod: clusters/p: failed"
        );
    }
}

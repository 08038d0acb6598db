//! The decision core: what happens to one object of a unit at its turn, as data.
//!
//! [`decide_object`] is the one place the per-object sequence is written: a kind the cluster does
//! not serve, an owner being deleted, the owner's gate, dependencies not ready yet, the
//! reconcile policy and adoption, `skip`, drift and self-heal, and finally create, update or
//! leave unchanged. It does no IO. Where it needs a fact only IO can give (the owner reconciler's
//! word, the owner's prerequisites, whether the Azure resource exists, the object read whole), it
//! asks a [`Question`]; its caller answers and asks again (sans-IO, as linkerd's policy index or a
//! QUIC state machine). A pass answers by reading and writing the cluster, a plan from what it
//! listed, so a plan shows exactly the decisions a run takes: [`decide_unit`] is that walk for a
//! caller whose answers are at hand.
//!
//! What left git is the other half of the core, [`super::prune::deletions`]: delete, detach
//! (delete and keep the Azure resource), keep (`skip`) or blocked by deletion safety, for every
//! member of the unit's inventory git no longer renders; it is pure too, and run and plan call it
//! alike.

use super::drift::{self, DriftedField};
use super::policy::{self, Decision, Policy, Provenance};
use super::{Action, ObjectDiff, ownership};
use crate::object::ObjectKey;
use serde_json::Value;

/// What an object's owner (the ARO reconciler of the object it is embedded in, or the identity of
/// a cluster for its credential Secret) says: the body to apply, a hold, or a failure.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    /// Apply this body (git's, or the owner's decision's).
    Open(Value),
    /// Not applied now.
    Held(Hold),
    /// The owner could not decide; the reason (the unit's errors say why).
    Failed(&'static str),
}

/// A hold the owner put on an object.
#[derive(Debug, Clone, PartialEq)]
pub struct Hold {
    /// What it waits on.
    pub on: Vec<ObjectKey>,
    pub reason: String,
    pub message: String,
    /// Only a person lifts it (a node pool its AutoNodePolicy refuses): the object fails.
    pub needs_person: bool,
}

/// Why live state of an object's kind is unknown.
#[derive(Debug, Clone, PartialEq)]
pub enum Unreadable {
    /// The cluster serves no such kind.
    NotServed,
    /// Listing the kind failed.
    ReadFailed(String),
}

/// What the inventory recorded of an object.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recorded<'a> {
    pub decision: Decision,
    /// The digest of the body last applied ([`body_digest`]).
    pub applied: Option<&'a str>,
}

/// What is known about one object at its turn: read by the caller, and the answers it gave.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    pub key: &'a ObjectKey,
    /// The unit's name (its ownership mark).
    pub unit: &'a str,
    /// The unit's fleet's name (its ownership mark too; empty: unnamed).
    pub fleet: &'a str,
    /// The object as git renders it.
    pub object: &'a Value,
    /// Embedded in an ARO object, or a cluster's credential Secret: its owner decides its body.
    pub owned: bool,
    pub unreadable: Option<&'a Unreadable>,
    /// The ARO object it is embedded in, when that is being deleted.
    pub deleting_owner: Option<&'a ObjectKey>,
    /// Its dependencies not ready yet.
    pub blockers: &'a [ObjectKey],
    pub live: Option<&'a Value>,
    pub recorded: Option<Recorded<'a>>,
    /// The object is rendered at the revision last applied to it (`drift`): unchanged in git by
    /// construction, whatever its digest says.
    pub at_applied_revision: bool,
    pub self_heal: bool,
    /// Answers to [`Question::Gate`].
    pub gate: Option<&'a Gate>,
    /// Answer to [`Question::Prerequisites`]: the reason when they failed.
    pub prerequisites: Option<Result<(), &'static str>>,
    /// Answer to [`Question::AzureExists`].
    pub azure: Option<&'a Result<bool, String>>,
    /// [`Question::WholeObject`] was answered: `live` is as read whole.
    pub read_whole: bool,
}

/// What only the caller can find out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Question {
    /// What the owner says ([`Gate`]); asked of owned objects only.
    Gate,
    /// The owner's prerequisites before its resources are written (its finalizer, its owned
    /// kinds) and the unit's inventory written: asked once an object is past its gates.
    Prerequisites,
    /// Whether the Azure resource exists (`reconcile-policy-if-exists`, nothing recorded).
    AzureExists,
    /// The live object read whole: a cached copy has no managedFields (drift is judged by field
    /// ownership) and may lag behind the agent's own writes.
    WholeObject,
}

/// What is done with the object.
#[derive(Debug, Clone, PartialEq)]
pub enum Verb {
    Create,
    Update,
    Unchanged,
    /// `reconcile-policy: skip`: read and reported, never written.
    Skip,
    /// Live differs from what was applied and self-heal is off: reported, not corrected.
    Drifted,
    /// Not applied now: waits on these.
    Hold {
        on: Vec<ObjectKey>,
    },
    /// Its owner is being deleted: not applied (the owner's deletion decides).
    Deleting {
        owner: ObjectKey,
    },
    Fail,
}

/// The decision for one object.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub verb: Verb,
    /// The report's reason code, and words for a person.
    pub reason: Option<String>,
    pub message: Option<String>,
    /// The unit's error this step reports, in the user's words (the caller names the object).
    pub error: Option<String>,
    /// The policy decision (none before the gates are passed).
    pub decision: Option<Decision>,
    /// The decision is new: recorded in the inventory before anything is created.
    pub record_first: bool,
    /// Taken over: live and not created by the agent, or its Azure resource existed.
    pub adopted: bool,
    /// The body to apply, with the decision and the ownership mark on it, and its digest.
    pub body: Option<Value>,
    pub digest: Option<String>,
    pub diff: Option<ObjectDiff>,
    pub drift: Vec<DriftedField>,
}

/// The decider's answer: a decision, or a question first.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Ask(Question),
    Act(Box<Step>),
}

impl Step {
    fn new(verb: Verb) -> Step {
        Step {
            verb,
            reason: None,
            message: None,
            error: None,
            decision: None,
            record_first: false,
            adopted: false,
            body: None,
            digest: None,
            diff: None,
            drift: vec![],
        }
    }

    fn failed(reason: &str) -> Step {
        Step {
            reason: Some(reason.to_string()),
            ..Step::new(Verb::Fail)
        }
    }

    fn act(self) -> Verdict {
        Verdict::Act(Box::new(self))
    }

    /// Whether the step writes the object.
    pub fn writes(&self) -> bool {
        matches!(self.verb, Verb::Create | Verb::Update)
    }
}

/// The digest of an object body as applied (its JSON text, key order as given): what the
/// inventory remembers, so an object unchanged in git since it was applied is known.
pub fn body_digest(obj: &Value) -> String {
    crate::object::sha256_hex(obj.to_string().as_bytes())[..32].to_string()
}

/// Drifted fields in a person's words: each path, with who changed it when known.
pub fn describe(fields: &[DriftedField]) -> String {
    fields
        .iter()
        .map(|f| match f.managers.as_slice() {
            [] => f.path.clone(),
            m => format!("{} (changed by {})", f.path, m.join(", ")),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The gates before an object's policy is decided: its kind read, its owner not being deleted,
/// the owner's word, its dependencies ready and its owner's prerequisites done. The body to go on
/// with, or the verdict that ends here.
fn past_gates<'a>(f: &Facts<'a>) -> Result<&'a Value, Verdict> {
    let key = f.key;
    match f.unreadable {
        Some(Unreadable::NotServed) => {
            return Err(Step {
                error: Some(format!(
                    "the cluster serves no kind {} in {} (is its CustomResourceDefinition installed?)",
                    key.kind,
                    key.api_version()
                )),
                ..Step::failed("UnknownKind")
            }
            .act());
        }
        Some(Unreadable::ReadFailed(why)) => {
            return Err(Step {
                error: Some(format!("live state of its kind could not be read: {why}")),
                ..Step::failed("LiveUnreadable")
            }
            .act());
        }
        None => {}
    }
    if let Some(owner) = f.deleting_owner {
        return Err(Step {
            reason: Some(format!(
                "{owner} is being deleted: not applied; deleted in reverse order with it"
            )),
            ..Step::new(Verb::Deleting {
                owner: owner.clone(),
            })
        }
        .act());
    }
    let body = if f.owned {
        match f.gate {
            None => return Err(Verdict::Ask(Question::Gate)),
            Some(Gate::Open(body)) => body,
            Some(Gate::Held(h)) => {
                let verb = if h.needs_person {
                    Verb::Fail
                } else {
                    Verb::Hold { on: h.on.clone() }
                };
                return Err(Step {
                    reason: Some(h.reason.clone()),
                    message: Some(h.message.clone()).filter(|m| !m.is_empty()),
                    ..Step::new(verb)
                }
                .act());
            }
            Some(Gate::Failed(reason)) => return Err(Step::failed(reason).act()),
        }
    } else {
        f.object
    };
    if !f.blockers.is_empty() {
        return Err(Step::new(Verb::Hold {
            on: f.blockers.to_vec(),
        })
        .act());
    }
    match f.prerequisites {
        None => return Err(Verdict::Ask(Question::Prerequisites)),
        Some(Err(reason)) => return Err(Step::failed(reason).act()),
        Some(Ok(())) => {}
    }
    Ok(body)
}

/// The reconcile policy and adoption of an object past its gates: the decision, and whether it is
/// new (nothing recorded it yet).
fn policy_of(f: &Facts, body: &Value) -> Result<(Decision, bool), Verdict> {
    let recorded = f.recorded.map(|r| r.decision);
    match f.live {
        Some(l) => Ok((policy::decide_live(body, l, recorded), false)),
        None => {
            let exists = if recorded.is_none() && policy::if_exists(body).is_some() {
                match f.azure {
                    None => return Err(Verdict::Ask(Question::AzureExists)),
                    Some(found) => found.clone(),
                }
            } else {
                Ok(false)
            };
            match policy::decide_create(body, recorded, exists) {
                Ok(d) => Ok((d, recorded.is_none())),
                Err(e) => Err(Step {
                    error: Some(e.to_string()),
                    ..Step::failed("AdoptionUndecided")
                }
                .act()),
            }
        }
    }
}

/// Decides what happens to one object (see the module header).
pub fn decide_object(f: &Facts) -> Verdict {
    let body = match past_gates(f) {
        Ok(body) => body,
        Err(verdict) => return verdict,
    };
    let (decision, new) = match policy_of(f, body) {
        Ok(decided) => decided,
        Err(verdict) => return verdict,
    };
    let decided = |verb| Step {
        decision: Some(decision),
        record_first: new,
        ..Step::new(verb)
    };
    if decision.policy == Policy::Skip && !policy::skip_needs_write(f.live, &decision) {
        return Step {
            reason: Some("ReconcilePolicySkip".into()),
            message: Some(if f.live.is_some() {
                "reconcile-policy skip: read and reported, never written".into()
            } else {
                "reconcile-policy skip: not created".into()
            }),
            ..decided(Verb::Skip)
        }
        .act();
    }
    let desired = ownership::mark(
        policy::with_decision(body.clone(), &decision),
        f.unit,
        f.fleet,
    );
    let digest = body_digest(&desired);
    let applied = f.recorded.and_then(|r| r.applied);
    let adopted =
        f.live.is_some() && applied.is_none() && decision.provenance == Provenance::Adopted;
    // Unchanged in git since the last apply, yet different live: drift.
    let unchanged_in_git = f.at_applied_revision || applied == Some(digest.as_str());
    let (diff, fields) = drift::judge(&desired, f.live, unchanged_in_git);
    let partial = f
        .live
        .is_some_and(|c| c.pointer("/metadata/managedFields").is_none());
    if partial
        && !f.read_whole
        && (!unchanged_in_git || diff.action != Action::Unchanged || !fields.is_empty())
    {
        return Verdict::Ask(Question::WholeObject);
    }
    if !fields.is_empty() && !f.self_heal {
        return Step {
            reason: Some("Drifted".into()),
            message: Some(format!(
                "live state differs from what aro-gitops applied: {}; run with --self-heal to correct it",
                describe(&fields)
            )),
            drift: fields,
            diff: Some(diff),
            ..decided(Verb::Drifted)
        }
        .act();
    }
    let verb = match diff.action {
        Action::Create => Verb::Create,
        Action::Update => Verb::Update,
        _ => Verb::Unchanged,
    };
    Step {
        adopted,
        body: Some(desired),
        digest: Some(digest),
        diff: Some(diff),
        drift: fields,
        ..decided(verb)
    }
    .act()
}

/// A caller whose answers are at hand (a plan): it states the facts of object `i` and answers
/// the decider's questions about it.
pub trait UnitView {
    fn facts(&self, i: usize) -> Facts<'_>;
    fn answer(&mut self, i: usize, question: Question);
}

/// The decisions for a unit's objects, in `order` (dependencies first).
pub fn decide_unit(order: &[usize], view: &mut impl UnitView) -> Vec<(usize, Step)> {
    order
        .iter()
        .map(|&i| {
            // Each question is asked once: four answers at most.
            let mut asked = Vec::new();
            let step = loop {
                match decide_object(&view.facts(i)) {
                    Verdict::Act(step) => break *step,
                    Verdict::Ask(q) => {
                        assert!(!asked.contains(&q), "{q:?} asked twice");
                        asked.push(q);
                        view.answer(i, q);
                    }
                }
            };
            (i, step)
        })
        .collect()
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;

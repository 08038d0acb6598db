//! One object of a pass: its decision is [`crate::plan::decide::decide_object`]'s; here the pass
//! answers the decider's questions by reading and writing the cluster, then carries the step out
//! and records it (inventory, outcome, the unit's errors).

use super::reconcilers::{Reconcilers, Step as OwnerStep};
use super::{FAILPOINT_ENV, Pass, blockers_of, failed};
use crate::marks::FIELD_MANAGER;
use crate::plan::decide::{
    self, Facts, Gate, Hold, Question, Recorded, Step, Unreadable, Verb, Verdict,
};
use crate::report::{ObjectAction, ObjectOutcome, UnitError};
use serde_json::Value;

/// The answers a pass gave the decider for one object.
#[derive(Default)]
struct Answers {
    gate: Option<Gate>,
    prerequisites: Option<Result<(), &'static str>>,
    azure: Option<Result<bool, String>>,
    read_whole: bool,
}

/// What an owner's decision says, as the decider reads it.
fn gate_of(step: OwnerStep) -> Gate {
    match step {
        OwnerStep::Apply(body) => Gate::Open(body),
        OwnerStep::Held(h) => Gate::Held(Hold {
            needs_person: h.needs_person(),
            on: h.on,
            reason: h.reason,
            message: h.message,
        }),
        OwnerStep::Failed(reason) => Gate::Failed(reason),
    }
}

impl Pass<'_, '_> {
    /// Decides object `i` (answering the decider's questions), carries the step out and says
    /// what came of it.
    pub(super) async fn object(
        &mut self,
        reconcilers: &mut Reconcilers,
        i: usize,
        inventory_ok: bool,
    ) -> ObjectOutcome {
        let prepared = self.prepared;
        let planned = &prepared.objects[i];
        let key = &planned.key;
        let unreadable = self
            .unserved
            .contains(&super::read_live::list_key(key))
            .then_some(Unreadable::NotServed);
        let owner = planned.embedded_in.map(|p| &prepared.objects[p].key);
        let deleting_owner = owner.filter(|o| super::aro_deletion::is_deleting(self.live.get(*o)));
        let owned = planned.embedded_in.is_some()
            || crate::reconcile::credentials::is_credential_secret(&self.bodies[i]);
        let blockers = blockers_of(prepared, i, &self.live);
        let mut answers = Answers::default();
        let step = loop {
            let verdict = decide::decide_object(&Facts {
                key,
                unit: &self.unit,
                fleet: &self.ctx.fleet.scope.name,
                object: &self.bodies[i],
                owned,
                unreadable: unreadable.as_ref(),
                deleting_owner,
                blockers: &blockers,
                live: self.live.get(key),
                recorded: self.inv.get(key).map(|e| Recorded {
                    decision: e.decision(),
                    applied: e.applied.as_deref(),
                }),
                at_applied_revision: false,
                self_heal: self.ctx.self_heal,
                gate: answers.gate.as_ref(),
                prerequisites: answers.prerequisites,
                azure: answers.azure.as_ref(),
                read_whole: answers.read_whole,
            });
            match verdict {
                Verdict::Act(step) => break *step,
                Verdict::Ask(Question::Gate) => {
                    let step = reconcilers.step(prepared, i, &self.live, &mut self.errors);
                    answers.gate = Some(gate_of(step));
                }
                Verdict::Ask(Question::Prerequisites) => {
                    let done = self.prerequisites(reconcilers, i, inventory_ok).await;
                    answers.prerequisites = Some(done);
                }
                Verdict::Ask(Question::AzureExists) => {
                    let body = match &answers.gate {
                        Some(Gate::Open(body)) => body,
                        _ => &*self.bodies[i],
                    };
                    let unit_objects: Vec<&Value> = self.bodies.iter().map(|b| &**b).collect();
                    answers.azure = Some(self.ctx.azure_view.exists(body, &unit_objects).await);
                }
                Verdict::Ask(Question::WholeObject) => {
                    self.read_whole(i).await;
                    answers.read_whole = true;
                }
            }
        };
        self.carry_out(i, step).await
    }

    /// Before an object past its gates is written: its owner's finalizer, then the owned kinds
    /// its owner's decision asks for, and the unit's inventory written. The reason when one
    /// failed.
    async fn prerequisites(
        &mut self,
        reconcilers: &mut Reconcilers,
        i: usize,
        inventory_ok: bool,
    ) -> Result<(), &'static str> {
        let prepared = self.prepared;
        // The owner's finalizer goes on before the first resource it embeds exists.
        if let Some(p) = prepared.objects[i].embedded_in
            && let Err(e) = super::aro_deletion::ensure_finalizer(
                self.ctx.cluster,
                &prepared.objects[p].key,
                &mut self.live,
            )
            .await
        {
            self.errors.push(e);
            return Err("FinalizerNotAdded");
        }
        if !reconcilers
            .record_owned_kinds(
                self.ctx.cluster,
                prepared,
                i,
                &mut self.live,
                &mut self.errors,
            )
            .await
        {
            return Err("OwnerRecordFailed");
        }
        if !inventory_ok {
            return Err("InventoryNotWritten");
        }
        Ok(())
    }

    /// Cached objects come without managedFields (field ownership), and a cache may lag behind
    /// the agent's own writes: an object to be written or reported drifted is read whole first.
    async fn read_whole(&mut self, i: usize) {
        let key = &self.prepared.objects[i].key;
        match self.ctx.cluster.get(key).await {
            Ok(Some(whole)) => drop(self.live.insert(key.clone(), whole)),
            Ok(None) => drop(self.live.remove(key)),
            Err(e) => tracing::warn!(object = %key, error = %e, "reading the object failed"),
        }
    }

    /// Carries out the decided step for object `i`.
    async fn carry_out(&mut self, i: usize, step: Step) -> ObjectOutcome {
        let planned = &self.prepared.objects[i];
        let key = &planned.key;
        if let Some(e) = &step.error {
            self.errors.push(UnitError {
                object: Some(key.clone()),
                file: Some(planned.origin.file.clone()),
                message: format!("{key} ({}): {e}", planned.origin),
                ..Default::default()
            });
        }
        if let Some(d) = step.decision.filter(|_| step.record_first) {
            self.inv.record(key, d, None);
            if !self.save().await {
                return failed(key, "InventoryNotWritten");
            }
            tracing::info!(object = %key, provenance = d.provenance.as_str(), policy = %d.policy, "adoption decision recorded");
            if std::env::var(FAILPOINT_ENV).as_deref() == Ok("exit-after-adoption-record") {
                tracing::error!(object = %key, "failpoint exit-after-adoption-record: exiting before the create");
                std::process::exit(137);
            }
        }
        let outcome = |action| ObjectOutcome {
            key: key.clone(),
            action,
            ready: false,
            reason: step.reason.clone(),
            message: step.message.clone(),
        };
        let adopted_or = |action| {
            if step.adopted {
                ObjectAction::Adopted
            } else {
                action
            }
        };
        match &step.verb {
            Verb::Fail => outcome(ObjectAction::Failed),
            Verb::Hold { on } => outcome(ObjectAction::Blocked { on: on.clone() }),
            Verb::Deleting { .. } => outcome(ObjectAction::Deleting),
            Verb::Skip => {
                self.inv.record(key, step.decision.expect("decided"), None);
                outcome(ObjectAction::Skipped)
            }
            Verb::Drifted => {
                tracing::info!(object = %key, fields = %decide::describe(&step.drift), "drift: live differs from what was applied (self-heal is off)");
                outcome(ObjectAction::Drifted)
            }
            Verb::Unchanged => {
                self.inv
                    .record(key, step.decision.expect("decided"), step.digest.clone());
                outcome(adopted_or(ObjectAction::Unchanged))
            }
            Verb::Create | Verb::Update => {
                let body = step.body.as_ref().expect("a write has a body");
                match self.ctx.cluster.apply(key, body, FIELD_MANAGER).await {
                    Ok(applied) => {
                        let drifted = !step.drift.is_empty();
                        let action = step.diff.as_ref().map(|d| d.action.to_string());
                        tracing::info!(object = %key, action = action.as_deref().unwrap_or(""), drifted, "applied");
                        self.live.insert(key.clone(), applied);
                        let decision = step.decision.expect("decided");
                        self.inv.record(key, decision, step.digest.clone());
                        outcome(adopted_or(if step.verb == Verb::Create {
                            ObjectAction::Created
                        } else {
                            ObjectAction::Updated
                        }))
                    }
                    Err(e) => {
                        self.errors.push(UnitError {
                            object: Some(key.clone()),
                            file: Some(planned.origin.file.clone()),
                            message: e.to_string(),
                            ..Default::default()
                        });
                        outcome(ObjectAction::Failed)
                    }
                }
            }
        }
    }
}

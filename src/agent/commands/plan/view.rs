//! A unit against live state as `plan` and `drift` list it: the facts the decider asks for,
//! answered without a pass.

use crate::agent::prepare;
use crate::apply::inventory::{Identity, Inventory};
use crate::apply::live_index::LiveIndex;
use crate::object::ObjectKey;
use crate::plan::decide;
use crate::reconcile::aro::node_policy;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};

/// What `reconcile-policy-if-exists` found in Azure, for each object that asks (and is neither live
/// nor decided already).
pub type AzureFindings = HashMap<ObjectKey, Result<bool, String>>;

/// What `plan` and `drift` know of one unit's objects, for the decider
/// ([`decide::decide_unit`]): live state as listed (each object parsed once), the inventory, the
/// Azure view's findings, and the owner's word as far as it can be told without a pass.
pub struct ListedView<'a> {
    name: &'a str,
    /// The unit's fleet's name (empty: unnamed).
    fleet: &'a str,
    p: &'a prepare::Prepared,
    /// Its objects' bodies, parsed.
    bodies: Vec<std::sync::Arc<Value>>,
    inv: &'a Inventory,
    live: &'a LiveIndex,
    azure: &'a AzureFindings,
    /// Each object's live copy, parsed.
    current: Vec<Option<Value>>,
    unreadable: Vec<Option<decide::Unreadable>>,
    gates: HashMap<usize, decide::Gate>,
    read_whole: BTreeSet<usize>,
    /// The unit is rendered at the revision last applied to it (`drift`): what differs live is
    /// drift by construction.
    at_applied: bool,
}

impl<'a> ListedView<'a> {
    pub fn new(
        name: &'a str,
        p: &'a prepare::Prepared,
        inv: &'a Inventory,
        live: &'a LiveIndex,
        azure: &'a AzureFindings,
    ) -> ListedView<'a> {
        ListedView {
            name,
            fleet: "",
            p,
            bodies: p.thawed(),
            inv,
            live,
            azure,
            current: p
                .objects
                .iter()
                .map(|o| live.get(&Identity::from(&o.key)))
                .collect(),
            unreadable: p
                .objects
                .iter()
                .map(|o| {
                    live.failure(&o.key)
                        .map(|why| decide::Unreadable::ReadFailed(why.to_string()))
                })
                .collect(),
            gates: HashMap::new(),
            read_whole: BTreeSet::new(),
            at_applied: false,
        }
    }

    /// The view of a unit of the fleet named `fleet`.
    pub fn of_fleet(self, fleet: &'a str) -> ListedView<'a> {
        ListedView { fleet, ..self }
    }

    /// The view of a unit rendered at the revision last applied to it.
    pub fn at_applied_revision(self) -> ListedView<'a> {
        ListedView {
            at_applied: true,
            ..self
        }
    }

    /// The object's live copy, as listed.
    pub fn current(&self, i: usize) -> Option<&Value> {
        self.current[i].as_ref()
    }

    /// The body an owned object is applied with, as the plan can tell it: controlled by its live
    /// ARO object, a node pool merged with its namespace's AutoNodePolicy, and the values the
    /// agent fills in at pass time (credentials, the KMS key version) as they stand live.
    fn gate(&self, i: usize) -> decide::Gate {
        let o = &self.p.objects[i];
        let current = self.current[i].as_ref();
        let mut body = Value::clone(&self.bodies[i]);
        if let Some(parent) = o.embedded_in.and_then(|pi| self.current[pi].as_ref()) {
            crate::reconcile::aro::set_controller(&mut body, parent);
        }
        let body = match self.p.with_node_policy(i, body, |ns| {
            self.live
                .select(node_policy::POLICY_GROUP, node_policy::POLICY_KIND, ns)
                .collect()
        }) {
            Ok(body) => body,
            Err(e) => {
                return decide::Gate::Held(decide::Hold {
                    on: vec![],
                    reason: node_policy::NODE_POLICY_VIOLATION.into(),
                    message: format!("not applied: {e}"),
                    needs_person: true,
                });
            }
        };
        let body = crate::reconcile::credentials::as_planned(body, current);
        decide::Gate::Open(crate::reconcile::aro::keyvault::as_planned(body, current))
    }
}

impl decide::UnitView for ListedView<'_> {
    fn facts(&self, i: usize) -> decide::Facts<'_> {
        let o = &self.p.objects[i];
        decide::Facts {
            key: &o.key,
            unit: self.name,
            fleet: self.fleet,
            object: &self.bodies[i],
            owned: o.embedded_in.is_some()
                || crate::reconcile::credentials::is_credential_secret(&self.bodies[i]),
            unreadable: self.unreadable[i].as_ref(),
            // A plan shows where the unit converges: what waits now is applied later.
            deleting_owner: None,
            blockers: &[],
            live: self.current[i].as_ref(),
            recorded: self.inv.get(&o.key).map(|e| decide::Recorded {
                decision: e.decision(),
                applied: e.applied.as_deref(),
            }),
            // A plan shows what differs (whether a run corrects drift is the run's setting);
            // `drift` shows what drifted.
            self_heal: !self.at_applied,
            at_applied_revision: self.at_applied,
            gate: self.gates.get(&i),
            prerequisites: Some(Ok(())),
            azure: Some(self.azure.get(&o.key).unwrap_or(&Ok(false))),
            read_whole: self.read_whole.contains(&i),
        }
    }

    fn answer(&mut self, i: usize, question: decide::Question) {
        match question {
            decide::Question::Gate => {
                let gate = self.gate(i);
                self.gates.insert(i, gate);
            }
            // A listed object is whole already.
            decide::Question::WholeObject => drop(self.read_whole.insert(i)),
            decide::Question::Prerequisites | decide::Question::AzureExists => {}
        }
    }
}

//! The embedded ARO reconcilers in a pass: the decisions are `reconcile::aro`'s (pure), the IO
//! is here. [`Reconcilers`] holds one pass's state:
//! - at the start, where each AROControlPlane's etcd key stands (the pass's [`KeyManager`]),
//!   and what its guest cluster's APIServices say (`guest`; the gate in `aro::apiservices`);
//! - for each embedded resource, in the pass's order, what its owner's decision (taken when the
//!   first of its resources comes up) says: apply this body, held by a gate, or failed;
//! - before an owner's first apply, the owned-kinds annotation;
//! - before pruning, the owned objects the applier deletes, put into the unit's inventory so the
//!   deletion safety decides them like any other;
//! - at the end, each decision's patches (the AROCluster's endpoint, the CAPI MachinePool's
//!   replicas-managed-by) and its status through the status subresource, each written only when
//!   it differs from what is live; then the `Ready` condition of the AutoNodePolicies of the
//!   unit's namespaces (`reconcile::aro::node_policy`).
//!
//! The decisions see live state with the AutoNodePolicies the unit renders in place of the live
//! ones: a policy in git counts before it is live.
//!
//! [`recorded_kind_keys`] tells the pass which recorded kinds to list beyond the unit's own, so
//! the decisions see owned objects of a kind no longer rendered.

use crate::agent::pass::guest::GuestClients;
use crate::agent::pass::prepare::Prepared;
use crate::apply::Cluster;
use crate::apply::inventory::Inventory;
use crate::marks::{OWNERSHIP_MANAGER, RECONCILER_MANAGER};
use crate::object::ObjectKey;
use crate::plan::policy;
use crate::reconcile::aro::apiservices::{self, GuestRead};
use crate::reconcile::aro::{
    self, Decision, Held, KeyManager, KeyState, OWNED_KINDS_ANNOTATION, node_policy, owned_kinds,
};
use crate::reconcile::credentials as identity_aso;
use crate::report::UnitError;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn aro_objects(
    prepared: &Prepared,
) -> impl Iterator<Item = &crate::agent::pass::prepare::PlannedObject> {
    prepared
        .objects
        .iter()
        .filter(|o| crate::kinds::is_aro_kind(&o.key.group, &o.key.kind))
}

/// List keys (namespace-wide, any name) of the kinds the unit's live ARO owners recorded.
pub fn recorded_kind_keys(prepared: &Prepared, live: &HashMap<ObjectKey, Value>) -> Vec<ObjectKey> {
    aro_objects(prepared)
        .filter_map(|o| live.get(&o.key).map(|l| (o, l)))
        .flat_map(|(o, l)| {
            owned_kinds(l)
                .into_iter()
                .map(|(group, version, kind)| ObjectKey {
                    group: group.into(),
                    version: version.into(),
                    kind: kind.into(),
                    namespace: o.key.namespace.clone(),
                    name: String::new(),
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Server-side applies `patch` as the reconciler (or its `status` through the status subresource)
/// and keeps the result in `live`.
async fn reconciler_write(
    cluster: &Cluster,
    patch: &Value,
    status: bool,
    live: &mut HashMap<ObjectKey, Value>,
    errors: &mut Vec<UnitError>,
) {
    let Ok(found) = ObjectKey::from_object(patch) else {
        return;
    };
    // The live map is keyed by the version the unit asked for.
    let key = live
        .keys()
        .find(|k| {
            (&k.group, &k.kind, &k.namespace, &k.name)
                == (&found.group, &found.kind, &found.namespace, &found.name)
        })
        .cloned()
        .unwrap_or(found);
    let result = if status {
        cluster.apply_status(&key, patch, RECONCILER_MANAGER).await
    } else {
        cluster.apply(&key, patch, RECONCILER_MANAGER).await
    };
    match result {
        Ok(updated) => {
            live.insert(key, updated);
        }
        Err(e) => errors.push(UnitError {
            object: Some(key),
            file: None,
            message: e.to_string(),
            ..Default::default()
        }),
    }
}

/// What an embedded resource's owner decided for it.
pub enum Step {
    /// Apply this body (namespace, controller reference, mutators, pause).
    Apply(Value),
    /// A gate holds it.
    Held(Held),
    /// Not applied; the reason (the unit's errors say why).
    Failed(&'static str),
}

/// What a key manager sees: the unit's live objects, its AROClusters as in git (the Vault a
/// cluster declares is what git says now; whether it is Ready is what the live Vault says).
fn key_world(prepared: &Prepared, live: &HashMap<ObjectKey, Value>) -> Vec<Value> {
    let clusters: HashMap<&ObjectKey, Arc<Value>> = aro_objects(prepared)
        .filter(|o| o.key.kind == "AROCluster")
        .map(|o| (&o.key, o.object()))
        .collect();
    let mut world: Vec<Value> = live
        .iter()
        .filter(|(k, _)| !clusters.contains_key(k))
        .map(|(_, v)| v.clone())
        .collect();
    world.extend(clusters.into_values().map(|c| Value::clone(&c)));
    world
}

/// The ARO reconcilers' state in one pass over a unit (see the module header).
pub struct Reconcilers {
    keys: HashMap<ObjectKey, KeyState>,
    /// What each AROControlPlane's guest cluster said this pass ([`Reconcilers::read_guests`]).
    guests: HashMap<ObjectKey, GuestRead>,
    now: String,
    /// Decisions by owner index, taken when the owner's first embedded resource comes up.
    decisions: HashMap<usize, Decision>,
    /// Owners whose terminal error is reported already.
    failed: BTreeSet<usize>,
    /// Owners whose owned kinds are recorded this pass.
    recorded: BTreeSet<usize>,
    /// The last decisions taken, and the fingerprint of the live state they were taken on.
    last: Option<(u64, Arc<[Decision]>)>,
    /// What the identities of the unit's clusters say (`agent::identity`).
    identities: crate::agent::pass::identity_check::Identities,
}

/// What identifies a live state for the decisions: each object's key and resourceVersion (a
/// write's response, put into `live`, has a new one). Order-independent.
fn fingerprint(live: &HashMap<ObjectKey, Value>) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    let hasher = BuildHasherDefault::<DefaultHasher>::default();
    live.iter().fold(live.len() as u64, |acc, (k, v)| {
        let rv = crate::object::str_at(v, "/metadata/resourceVersion");
        acc.wrapping_add(hasher.hash_one((k, rv)))
    })
}

impl Reconcilers {
    /// Asks `keys` where the etcd key of each AROControlPlane of the unit stands (`live`: the
    /// unit's live objects, read by the agent-managed keys only: see [`key_world`]).
    pub async fn start(
        keys: &dyn KeyManager,
        prepared: &Prepared,
        live: &HashMap<ObjectKey, Value>,
    ) -> Reconcilers {
        let mut states = HashMap::new();
        let mut world: Option<Vec<Value>> = None;
        for o in aro_objects(prepared).filter(|o| o.key.kind == "AROControlPlane") {
            let body = o.object();
            let hcp = body
                .pointer("/spec/resources")
                .and_then(Value::as_array)
                .and_then(|l| l.iter().find(|r| r["kind"] == crate::kinds::HCP_CLUSTER));
            let state = match hcp {
                Some(h) if h.pointer(aro::KMS_POINTER).is_some() => {
                    let world = world.get_or_insert_with(|| key_world(prepared, live));
                    let state = keys.key_state(&body, h, world).await;
                    // The version the agent fills in is in place before the object meets the
                    // cluster's schema (the render left the field out).
                    aro::keyvault::checked_with_version(
                        h,
                        state,
                        crate::validate::crd::cluster_problems,
                    )
                }
                Some(h) => keys.key_state(&body, h, &[]).await,
                None => KeyState::NotConfigured,
            };
            states.insert(o.key.clone(), state);
        }
        Reconcilers {
            keys: states,
            guests: HashMap::new(),
            now: now(),
            decisions: HashMap::new(),
            failed: BTreeSet::new(),
            recorded: BTreeSet::new(),
            last: None,
            identities: Default::default(),
        }
    }

    /// The identity verdicts the decisions and the credential Secrets follow.
    pub fn with_identities(
        mut self,
        identities: crate::agent::pass::identity_check::Identities,
    ) -> Reconcilers {
        self.identities = identities;
        self
    }

    /// The decisions of the unit's ARO objects against `live` (see [`aro::decide_all`]). Taken
    /// again only when `live` changed since the last time (a pass asks at each owner's first
    /// resource, before pruning and at the end; most of the time nothing was written between).
    fn decide(&mut self, prepared: &Prepared, live: &HashMap<ObjectKey, Value>) -> Arc<[Decision]> {
        let seen = fingerprint(live);
        if let Some((at, decisions)) = &self.last
            && *at == seen
        {
            return decisions.clone();
        }
        let bodies: Vec<Arc<Value>> = aro_objects(prepared).map(|o| o.object()).collect();
        let desired: Vec<&Value> = bodies.iter().map(|b| &**b).collect();
        if desired.is_empty() {
            return Arc::new([]);
        }
        // A stable world: decisions do not depend on the map's iteration order.
        let mut entries: Vec<(&ObjectKey, &Value)> = live.iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut snapshot: Vec<Value> = entries.into_iter().map(|(_, v)| v.clone()).collect();
        // The AutoNodePolicies the unit renders count as they are in git, live or not yet, so
        // the first apply of a node pool is already merged with its policy.
        let id = |o: &Value| {
            (
                o.pointer("/metadata/namespace").cloned(),
                o["metadata"]["name"].clone(),
            )
        };
        for policy in prepared.node_policies() {
            snapshot.retain(|o| !node_policy::is_policy(o) || id(o) != id(&policy));
            snapshot.push(Value::clone(&policy));
        }
        let mut decisions = aro::decide_all(&desired, snapshot, &self.keys, &self.now);
        // A cluster its identity stops: nothing applied, the condition says why.
        for d in &mut decisions {
            if let Some(v) = self.identities.verdict(&d.owner) {
                let previous = live.get(&d.owner).and_then(|o| o.get("status"));
                identity_aso::restrict(d, v, previous, &self.now);
            }
        }
        self.gate(prepared, live, &mut decisions);
        let decisions: Arc<[Decision]> = decisions.into();
        self.last = Some((seen, decisions.clone()));
        decisions
    }

    /// Reads the guest cluster of each AROControlPlane of the unit whose hosted cluster is up
    /// (`agent::guest`), for the aggregated-APIServices gate of the decisions.
    pub async fn read_guests(
        &mut self,
        guests: &GuestClients,
        cluster: &Cluster,
        prepared: &Prepared,
        live: &HashMap<ObjectKey, Value>,
    ) {
        for o in aro_objects(prepared).filter(|o| o.key.kind == "AROControlPlane") {
            let read = guests
                .read(cluster, &o.object(), live.get(&o.key), live)
                .await;
            self.guests.insert(o.key.clone(), read);
        }
    }

    /// Adds the aggregated-APIServices gate (`AggregatedAPIServicesAvailable`, `Available`) to
    /// the AROControlPlanes' decided statuses.
    fn gate(
        &self,
        prepared: &Prepared,
        live: &HashMap<ObjectKey, Value>,
        decisions: &mut [Decision],
    ) {
        for d in decisions
            .iter_mut()
            .filter(|d| d.owner.kind == "AROControlPlane")
        {
            let Some(o) = aro_objects(prepared).find(|o| o.key == d.owner) else {
                continue;
            };
            let read = self.guests.get(&d.owner).unwrap_or(&GuestRead::NotUp);
            let previous = live.get(&d.owner).and_then(|l| l.get("status"));
            let body = o.object();
            d.status = apiservices::gate_status(&body, &d.status, previous, read, &self.now);
        }
    }

    /// What the decision of the owner of embedded resource `i` says for it.
    pub fn step(
        &mut self,
        prepared: &Prepared,
        i: usize,
        live: &HashMap<ObjectKey, Value>,
        errors: &mut Vec<UnitError>,
    ) -> Step {
        let planned = &prepared.objects[i];
        let Some(p) = planned.embedded_in else {
            return self.credential_step(planned);
        };
        if !self.decisions.contains_key(&p) {
            let owner = &prepared.objects[p].key;
            if let Some(d) = self
                .decide(prepared, live)
                .iter()
                .find(|d| &d.owner == owner)
            {
                self.decisions.insert(p, d.clone());
            }
        }
        let Some(d) = self.decisions.get(&p) else {
            return Step::Failed("NotDecided");
        };
        if let Some(e) = &d.error {
            if self.failed.insert(p) {
                errors.push(UnitError {
                    object: Some(d.owner.clone()),
                    file: Some(planned.origin.file.clone()),
                    message: format!("{e} ({})", planned.origin),
                    ..Default::default()
                });
            }
            return Step::Failed("InvalidSpec");
        }
        if let Some(h) = d.held.iter().find(|h| h.key == planned.key) {
            // A failed key step is the unit's error too (once), so the unit is retried.
            if let Some(KeyState::Failed { condition }) = self.keys.get(&d.owner)
                && h.reason == condition.reason
                && self.failed.insert(p)
            {
                errors.push(UnitError {
                    object: Some(d.owner.clone()),
                    file: Some(prepared.objects[p].origin.file.clone()),
                    message: condition.message.clone(),
                    ..Default::default()
                });
            }
            return Step::Held(h.clone());
        }
        d.applies
            .iter()
            .find(|a| ObjectKey::from_object(a).as_ref() == Ok(&planned.key))
            .map_or(Step::Failed("NotDecided"), |b| {
                let mut body = b.clone();
                // The cluster's credential, as the unit was prepared with it.
                if let Some(secret) = identity_aso::credential_from(&planned.object()) {
                    identity_aso::annotate(&mut body, secret);
                }
                Step::Apply(body)
            })
    }

    /// A cluster's ASO credential Secret is applied as its identity's verdict says; any other
    /// object of git as it is.
    fn credential_step(&self, planned: &crate::agent::pass::prepare::PlannedObject) -> Step {
        let body = planned.object();
        if !identity_aso::is_credential_secret(&body) {
            return Step::Apply(Value::clone(&body));
        }
        match self.identities.verdict(&planned.key) {
            Some(identity_aso::Verdict::Allowed { secret }) => Step::Apply((**secret).clone()),
            Some(v) => {
                let (reason, message) = v.stop().unwrap_or_default();
                Step::Held(Held {
                    key: planned.key.clone(),
                    on: v.waits_on(),
                    reason: reason.into(),
                    message,
                })
            }
            // A Secret of git that only looks like one.
            None => Step::Apply(Value::clone(&body)),
        }
    }

    /// Shared applier, step 1: before the first apply of an owner's embedded resources this pass,
    /// the owned-kinds annotation its decision asks for. False when that write failed.
    pub async fn record_owned_kinds(
        &mut self,
        cluster: &Cluster,
        prepared: &Prepared,
        i: usize,
        live: &mut HashMap<ObjectKey, Value>,
        errors: &mut Vec<UnitError>,
    ) -> bool {
        let Some(p) = prepared.objects[i].embedded_in else {
            return true;
        };
        let Some(value) = self
            .decisions
            .get(&p)
            .and_then(|d| d.record_owned_kinds.clone())
        else {
            return true;
        };
        if self.recorded.contains(&p) {
            return true;
        }
        let owner = &prepared.objects[p].key;
        tracing::debug!(%owner, kinds = %value, "recording owned kinds");
        let patch = json!({"apiVersion": owner.api_version(), "kind": owner.kind,
            "metadata": {"name": owner.name, "namespace": owner.namespace,
                "annotations": {OWNED_KINDS_ANNOTATION: value}}});
        match cluster.apply(owner, &patch, OWNERSHIP_MANAGER).await {
            Ok(updated) => {
                live.insert(owner.clone(), updated);
                self.recorded.insert(p);
                crate::agent::failpoint::failpoint_kill(
                    "exit-after-owned-kinds-record",
                    &prepared.objects[i].key,
                );
                true
            }
            Err(e) => {
                errors.push(UnitError {
                    object: Some(owner.clone()),
                    file: Some(prepared.objects[i].origin.file.clone()),
                    message: e.to_string(),
                    ..Default::default()
                });
                false
            }
        }
    }

    /// The applier's deletions (owned objects of a recorded kind left out of `spec.resources`) go
    /// through the pass's deletion safety. The inventory holds every embedded resource the agent
    /// applied, so they are prune candidates already; one it does not hold (applied by another
    /// controller before the agent) is recorded, as the live object says, and pruned alike.
    pub fn record_deletions(
        &mut self,
        prepared: &Prepared,
        live: &HashMap<ObjectKey, Value>,
        inv: &mut Inventory,
    ) {
        for d in self.decide(prepared, live).iter() {
            for k in &d.deletions {
                let found = live.iter().find(|(lk, _)| {
                    (&lk.group, &lk.kind, &lk.namespace, &lk.name)
                        == (&k.group, &k.kind, &k.namespace, &k.name)
                });
                if let Some((lk, obj)) = found
                    && inv.get(lk).is_none()
                    && !prepared.objects.iter().any(|o| &o.key == lk)
                {
                    tracing::info!(owner = %d.owner, object = %lk, "owned object left spec.resources: recorded for pruning");
                    inv.record(lk, policy::decide_live(obj, obj, None), None);
                }
            }
        }
    }

    /// The reconcilers' writes at the end of a pass: patches, then status, where they differ
    /// from live.
    pub async fn write(
        &mut self,
        cluster: &Cluster,
        prepared: &Prepared,
        live: &mut HashMap<ObjectKey, Value>,
        errors: &mut Vec<UnitError>,
    ) {
        for d in self.decide(prepared, live).iter() {
            let Some(obj) = live.get(&d.owner).cloned() else {
                continue;
            };
            for patch in &d.patches {
                tracing::debug!(object = %d.owner, patch = %patch["kind"], "reconciler patch");
                reconciler_write(cluster, patch, false, live, errors).await;
            }
            let obj = live.get(&d.owner).cloned().unwrap_or(obj);
            let current = obj.get("status").cloned().unwrap_or(json!({}));
            let differs = d
                .status
                .as_object()
                .is_some_and(|m| m.iter().any(|(k, v)| current.get(k) != Some(v)));
            if differs {
                tracing::debug!(object = %d.owner, live = %current, computed = %d.status, "status write");
                let patch = json!({"apiVersion": obj["apiVersion"], "kind": obj["kind"],
                    "metadata": {"name": d.owner.name, "namespace": d.owner.namespace},
                    "status": d.status});
                reconciler_write(cluster, &patch, true, live, errors).await;
            }
        }
        // The AutoNodePolicies of the unit's namespaces, judged on the statuses just written.
        let world: Vec<&Value> = live.values().collect();
        let patches = node_policy::policy_status_patches(
            &prepared.node_policy_namespaces(),
            &world,
            &self.now,
        );
        for patch in &patches {
            reconciler_write(cluster, patch, true, live, errors).await;
        }
    }
}

//! One pass over a prepared unit: read live state (`read_live`: from the shared caches),
//! decide each object in dependency order (`plan::decide`, the decisions a plan shows too) and
//! carry the decisions out (`object`), prune what left git (as far as
//! deletion safety allows), then let the embedded reconcilers write the ARO objects' status. A
//! pass never waits: what is blocked now is retried when a watch fires.
//!
//! The resources embedded in ARO objects are applied as their owner's decision says
//! (`reconcilers::Reconcilers`, on `reconcile::aro`): the body to apply, or held by a gate (the
//! infrastructure, control-plane, ExternalAuth and key gates), with the owned kinds recorded on
//! the owner before its first apply.
//!
//! The unit's inventory is written before anything new is created (so nothing can be orphaned),
//! and a `reconcile-policy-if-exists` decision is recorded in it before its create is sent.
//! Without `self_heal`, an object whose desired state did not change since the agent last applied
//! it is not re-applied when live state differs: that is drift, and it is reported.
//!
//! Its helpers, one file each, are below: `prepare` (the unit as rendered), `read_live`,
//! `preflight`, `identity_check`, `guest`, `reconcilers`, `object` (one object's step carried
//! out), `prune` and `aro_deletion`.

pub(super) mod aro_deletion;
pub(super) mod guest;
pub(super) mod identity_check;
mod object;
pub(super) mod preflight;
pub mod prepare;
pub mod prune;
pub(super) mod read_live;
pub(super) mod reconcilers;

use crate::agent::failpoint::FAILPOINT_ENV;
use crate::apply::inventory::{self, Inventory};
use crate::apply::{AzureView, Cluster};
use crate::object::ObjectKey;
use crate::plan::policy;
use crate::reconcile::aro::{KeyManager, node_policy};
use crate::reconcile::readiness::{ObjectState, object_state, unblocks};
use crate::report::{AzureMode, ObjectAction, ObjectOutcome, Standing, UnitError, UnitOutcome};
use prepare::Prepared;
use prune::{self as pruning, Safety};
use reconcilers::Reconcilers;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};

/// The dependencies of object `i` that hold it back now. An embedded resource waits here only on
/// what is not embedded in another ARO object (its owner's other resources, Namespaces, CRDs):
/// the gates between the ARO objects of a cluster are their decisions' ([`aro::Decision::held`]).
fn blockers_of(prepared: &Prepared, i: usize, live: &HashMap<ObjectKey, Value>) -> Vec<ObjectKey> {
    let own = prepared.objects[i].embedded_in;
    prepared.deps[i]
        .iter()
        .filter(|&&d| {
            let theirs = prepared.objects[d].embedded_in;
            own.is_none() || theirs.is_none() || theirs == own
        })
        .map(|&d| &prepared.objects[d].key)
        .filter(|d| !unblocks(d, live.get(*d)))
        .cloned()
        .collect()
}

/// The outcome of an object that could not be applied, with the reason.
fn failed(key: &ObjectKey, reason: &str) -> ObjectOutcome {
    ObjectOutcome {
        key: key.clone(),
        action: ObjectAction::Failed,
        ready: false,
        reason: Some(reason.to_string()),
        message: None,
    }
}

/// What every pass of a run shares.
pub struct PassContext<'a> {
    pub cluster: &'a Cluster,
    pub azure_view: &'a AzureView,
    pub azure: AzureMode,
    pub revision: &'a str,
    pub stale_source: Option<String>,
    pub safety: Safety,
    pub self_heal: bool,
    /// Where the etcd encryption keys of the AROControlPlanes stand.
    pub keys: &'a dyn KeyManager,
    /// The guest clusters' clients (the aggregated-APIServices gate).
    pub guests: &'a guest::GuestClients,
    /// The way to Azure's endpoints (a rotated identity secret is tried there), when there is one.
    pub azure_sdk: Option<&'a crate::azure::access::AzureAccess>,
    /// Live state to read instead of listing it.
    pub caches: Option<&'a crate::agent::controller::cache::Caches>,
    /// What every unit of the revision declares (ownership's deletion guard).
    pub fleet: &'a crate::plan::ownership::Fleet,
}

/// Writes `inventory` as the fleet `fleet`'s when it differs from `written` or was read from
/// another name (see [`inventory::write`]), and remembers what was written.
async fn save(
    cluster: &Cluster,
    fleet: &str,
    inventory: &mut Inventory,
    written: &mut Inventory,
    errors: &mut Vec<UnitError>,
) -> bool {
    if inventory == written && inventory.read_from.is_none() {
        return true;
    }
    match inventory::write(cluster, inventory, fleet).await {
        Ok(()) => {
            inventory.read_from = None;
            *written = inventory.clone();
            true
        }
        Err(e) => {
            errors.push(UnitError {
                object: None,
                file: None,
                message: format!("writing the unit's inventory failed: {e}"),
                ..Default::default()
            });
            false
        }
    }
}

/// Runs one pass and says how the unit stands.
pub async fn run(ctx: &PassContext<'_>, prepared: &Prepared, inv: &mut Inventory) -> UnitOutcome {
    let mut errors = Vec::new();
    let read_live::Live { objects, unserved } =
        read_live::read(ctx.cluster, ctx.caches, prepared, &mut errors).await;
    let mut pass = Pass {
        ctx,
        prepared,
        bodies: prepared.thawed(),
        unit: prepared.unit.name(),
        written: inv.clone(),
        inv,
        live: objects,
        unserved,
        errors,
    };
    if let Some(refused) = pass.refused().await {
        return refused;
    }
    // The identities of the unit's clusters: a cluster they stop has nothing applied.
    let reads = identity_check::Reads::Live {
        cluster: ctx.cluster,
        caches: ctx.caches,
    };
    let identities =
        identity_check::check(reads, ctx.azure_sdk, prepared, ctx.fleet, &mut pass.errors).await;
    // An identity nobody has (live or in git) is a broken definition: nothing is applied.
    if identities.any_unresolved() {
        let live: Vec<_> = pass.live.values().cloned().collect();
        return pass.outcome(vec![], Standing::of(&live, prepared.cluster.as_ref()));
    }
    let mut reconcilers = Reconcilers::start(ctx.keys, prepared, &pass.live)
        .await
        .with_identities(identities);
    reconcilers
        .read_guests(ctx.guests, ctx.cluster, prepared, &pass.live)
        .await;
    let inventory_ok = pass.record_before_create().await;
    let mut outcomes: Vec<Option<ObjectOutcome>> = vec![None; prepared.objects.len()];
    for &i in &prepared.order {
        outcomes[i] = Some(pass.object(&mut reconcilers, i, inventory_ok).await);
    }
    reconcilers.record_deletions(prepared, &pass.live, pass.inv);
    let pruned = pass.prune().await;
    pass.record_revision().await;
    reconcilers
        .write(ctx.cluster, prepared, &mut pass.live, &mut pass.errors)
        .await;
    pass.finish(outcomes, pruned).await
}

/// One pass over a unit: what it reads, writes and reports as it goes.
struct Pass<'a, 'c> {
    ctx: &'a PassContext<'c>,
    prepared: &'a Prepared,
    /// The bodies of its objects, parsed for the pass (by index).
    bodies: Vec<std::sync::Arc<Value>>,
    unit: String,
    inv: &'a mut Inventory,
    /// The inventory as last written.
    written: Inventory,
    /// Live objects, keyed with the version the unit asked for; kept up to date with the pass's
    /// own writes.
    live: HashMap<ObjectKey, Value>,
    unserved: BTreeSet<read_live::ListKey>,
    errors: Vec<UnitError>,
}

impl Pass<'_, '_> {
    /// The outcome of a unit nothing was applied for.
    fn outcome(&mut self, objects: Vec<ObjectOutcome>, standing: Standing) -> UnitOutcome {
        UnitOutcome {
            rendered_at: None,
            held: None,
            unit: self.unit.clone(),
            cluster: self.prepared.cluster.clone(),
            revision: self.ctx.revision.to_string(),
            stale_source: self.ctx.stale_source.clone(),
            azure: self.ctx.azure,
            objects,
            errors: std::mem::take(&mut self.errors),
            standing,
        }
    }

    /// The unit refused before its first write: an object live and owned by another unit is not
    /// taken over silently, and the whole unit is checked against the cluster (its inventory
    /// included).
    async fn refused(&mut self) -> Option<UnitOutcome> {
        let prepared = self.prepared;
        let live = |i: usize| self.live.get(&prepared.objects[i].key);
        let taken = crate::agent::fleet::taken_over(&self.ctx.fleet.scope, prepared, live);
        if !taken.is_empty() {
            for e in &taken {
                tracing::error!(unit = %self.unit, error = %e.message, "not taken over from another unit");
            }
            self.errors.extend(taken);
            return Some(self.outcome(vec![], Standing::unknown(prepared.cluster.as_ref())));
        }
        let refused = preflight::check(
            self.ctx.cluster,
            prepared,
            &self.live,
            &self.unserved,
            self.inv,
            self.ctx.revision,
        )
        .await;
        if refused.is_empty() {
            return None;
        }
        let live = &self.live;
        let objects = preflight::outcomes(prepared, &refused, |k| {
            object_state(k, live.get(k)) == ObjectState::Ready
        });
        let standing = Standing::of(
            &self.live.values().cloned().collect::<Vec<_>>(),
            prepared.cluster.as_ref(),
        );
        self.errors.extend(refused);
        Some(self.outcome(objects, standing))
    }

    /// Writes the inventory when it differs from what was written last.
    async fn save(&mut self) -> bool {
        save(
            self.ctx.cluster,
            &self.ctx.fleet.scope.name,
            self.inv,
            &mut self.written,
            &mut self.errors,
        )
        .await
    }

    /// Records every object about to be managed before anything is created: a crash after a
    /// create can never leave an object the inventory does not know. Decisions under
    /// reconcile-policy-if-exists are taken just before their create. False when the inventory
    /// could not be written.
    async fn record_before_create(&mut self) -> bool {
        for (o, body) in self.prepared.objects.iter().zip(&self.bodies) {
            if self.inv.get(&o.key).is_some() {
                continue;
            }
            match self.live.get(&o.key) {
                Some(l) => self
                    .inv
                    .record(&o.key, policy::decide_live(body, l, None), None),
                None if policy::if_exists(body).is_none() => self.inv.record(
                    &o.key,
                    policy::decide_create(body, None, Ok(false)).expect("no Azure view needed"),
                    None,
                ),
                None => {}
            }
        }
        self.save().await
    }

    /// Prunes what left git, unless the render or the source says not to.
    async fn prune(&mut self) -> Vec<ObjectOutcome> {
        let prepared = self.prepared;
        let desired_keys: Vec<ObjectKey> = prepared.objects.iter().map(|o| o.key.clone()).collect();
        let leaving: Vec<inventory::Entry> = pruning::candidates(self.inv, &desired_keys)
            .into_iter()
            .cloned()
            .collect();
        if leaving.is_empty() {
            return vec![];
        }
        let unit_consent = prepared
            .cluster
            .as_ref()
            .and_then(|c| prepared.objects.iter().position(|o| &o.key == c))
            .is_some_and(|i| crate::plan::prune::consents(&self.bodies[i]));
        let how = pruning::UnitPruning {
            rendered: Some(prepared.objects.len()),
            stale_source: self.ctx.stale_source.as_deref(),
            unit_consent,
            safety: self.ctx.safety,
            fleet: self.ctx.fleet,
        };
        let total = self.inv.entries.len();
        let (pruned, _) = pruning::prune(
            self.ctx.cluster,
            self.inv,
            leaving,
            &mut self.live,
            total,
            how,
            &mut self.errors,
        )
        .await;
        pruned
    }

    /// The revision is recorded when the unit converged on it without an error.
    async fn record_revision(&mut self) {
        if self.errors.is_empty() && self.ctx.stale_source.is_none() {
            self.inv.revision = Some(self.ctx.revision.to_string());
        }
        self.save().await;
    }

    /// The ARO objects being deleted driven a step, and how each object stands now.
    async fn finish(
        mut self,
        outcomes: Vec<Option<ObjectOutcome>>,
        pruned: Vec<ObjectOutcome>,
    ) -> UnitOutcome {
        let (ctx, prepared) = (self.ctx, self.prepared);
        // ARO objects being deleted (left git, or deleted by a person): the next step, in
        // reverse order.
        let inv = &*self.inv;
        let of_unit =
            |k: &ObjectKey| inv.get(k).is_some() || prepared.objects.iter().any(|o| &o.key == k);
        let fleet = (self.unit.as_str(), ctx.fleet);
        let driven =
            aro_deletion::drive(ctx.cluster, &self.live, of_unit, fleet, &mut self.errors).await;
        let mut objects: Vec<ObjectOutcome> = prepared
            .order
            .iter()
            .filter_map(|&i| Some(standing_of(prepared, i, outcomes[i].clone()?, &self.live)))
            .chain(pruned)
            .collect();
        aro_deletion::merge(&mut objects, driven);
        // The unit's own Secrets were read whole to be compared; their values go no further.
        let live_objects: Vec<Value> = std::mem::take(&mut self.live)
            .into_values()
            .map(read_live::without_secret_data)
            .collect();
        let standing = Standing::of(&live_objects, prepared.cluster.as_ref());
        self.outcome(objects, standing)
    }
}

/// An object's outcome as it stands at the end of the pass: ready or not, and the reason its
/// live state gives (skipped and drifted objects keep the one the pass gave them).
fn standing_of(
    prepared: &Prepared,
    i: usize,
    mut o: ObjectOutcome,
    live: &HashMap<ObjectKey, Value>,
) -> ObjectOutcome {
    let state = object_state(&o.key, live.get(&o.key));
    o.ready = state == ObjectState::Ready;
    let keep = matches!(o.action, ObjectAction::Skipped | ObjectAction::Drifted);
    match state {
        ObjectState::Failed { reason, message } if o.action != ObjectAction::Skipped => {
            if !matches!(o.action, ObjectAction::Blocked { .. }) {
                o.action = ObjectAction::Failed;
            }
            o.reason = Some(reason);
            o.message = Some(message);
        }
        ObjectState::Waiting { reason, message } if !keep => {
            o.reason = Some(reason);
            o.message = Some(message).filter(|m| !m.is_empty());
        }
        ObjectState::Missing if o.reason.is_none() => o.reason = Some("NotCreated".into()),
        _ => {}
    }
    if let Some(why) = node_policy::ignored(&prepared.objects[i].object())
        && o.reason.is_none()
    {
        o.reason = Some(node_policy::NOT_DEFAULT.into());
        o.message = Some(why);
    }
    o
}

/// A pass over a unit that left git: prunes its whole inventory as deletion safety allows (every
/// object counts against the share guard, so it needs the unit's consent), and drops the inventory
/// once nothing is left in it.
pub async fn remove(ctx: &PassContext<'_>, inv: &mut Inventory) -> UnitOutcome {
    let mut written = inv.clone();
    let mut errors = Vec::new();
    let leaving: Vec<inventory::Entry> = inv.entries.values().cloned().collect();
    // The report stays where the cluster's report was: its CAPI Cluster, as the inventory knows it.
    let capi_cluster = leaving
        .iter()
        .find(|e| e.id.group == "cluster.x-k8s.io" && e.id.kind == "Cluster")
        .map(inventory::Entry::key);
    let mut live = HashMap::new();
    let how = pruning::UnitPruning {
        rendered: None,
        stale_source: ctx.stale_source.as_deref(),
        unit_consent: false,
        safety: ctx.safety,
        fleet: ctx.fleet,
    };
    let total = leaving.len();
    let (mut objects, went_ahead) = pruning::prune(
        ctx.cluster,
        inv,
        leaving,
        &mut live,
        total,
        how,
        &mut errors,
    )
    .await;
    if went_ahead {
        let of_unit = |k: &ObjectKey| inv.get(k).is_some();
        let fleet = (inv.unit.as_str(), ctx.fleet);
        let driven = aro_deletion::drive(ctx.cluster, &live, of_unit, fleet, &mut errors).await;
        aro_deletion::merge(&mut objects, driven);
    }
    let blocked = objects
        .iter()
        .filter(|o| o.action == ObjectAction::DeletionBlocked)
        .map(|o| o.reason.as_deref().unwrap_or("blocked"));
    if let Some(message) = pruning::left_git_blocked(&inv.unit, blocked) {
        errors.push(UnitError {
            file: Some(inv.unit.clone().into()),
            message,
            ..Default::default()
        });
    }
    if inv.entries.is_empty() {
        if let Err(e) = inventory::remove(ctx.cluster, inv, &ctx.fleet.scope.name).await {
            errors.push(UnitError {
                object: None,
                file: None,
                message: format!("removing the inventory of a unit that left git: {e}"),
                ..Default::default()
            });
        }
    } else {
        let fleet = &ctx.fleet.scope.name;
        save(ctx.cluster, fleet, inv, &mut written, &mut errors).await;
    }
    UnitOutcome {
        rendered_at: None,
        held: None,
        unit: inv.unit.clone(),
        standing: Standing::unknown(capi_cluster.as_ref()),
        cluster: capi_cluster,
        revision: ctx.revision.to_string(),
        stale_source: ctx.stale_source.clone(),
        azure: ctx.azure,
        objects,
        errors,
    }
}

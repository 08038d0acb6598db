//! The controller: brings every unit of a revision to its converged state. Units are keys in a
//! work queue (`queue`); up to `--concurrency` passes run at once, one per unit; live state comes
//! from the shared caches (`cache`), whose changes wake the unit that owns the changed object
//! (`wakes`: an index, not a scan of the fleet). The per-unit work is `pass`.

pub mod cache;
pub(super) mod carry;
mod commit_status;
pub(super) mod context;
mod converge;
pub mod cycle_line;
pub(super) mod cycles;
mod follower;
pub mod incremental;
mod judged;
pub(super) mod k8s_events;
pub mod leader;
pub mod lifecycle;
pub(super) mod progress;
pub(super) mod publish;
pub mod queue;
pub(super) mod revision;
pub(super) mod rollout;
mod rollout_durable;
pub mod rollout_record;
mod rollout_standing;
mod round;
mod scope;
pub(super) mod servers;
pub mod shard;
pub(super) mod status_page;
pub(super) mod triggers;
pub(super) mod verify;
pub mod wakes;
#[cfg(test)]
#[path = "wakes_of_tests.rs"]
mod wakes_of_tests;

use crate::agent::pass::prepare::Prepared;
use crate::apply::inventory::{self, Inventory, InventoryError};
use crate::object::ObjectKey;
use crate::object::Sym;
use crate::plan::ownership::{FleetScope, scope as fleets};
use crate::report::UnitOutcome;
use cache::KindKey;
use context::{LiveContext, Signals};
use revision::Revision;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use wakes::{WakeKey, Wakes};

/// The kinds cached whatever the units declare: Secrets (a unit's readiness may wait on one) and
/// ConfigMaps (the inventories are read from their cache).
fn always() -> [KindKey; 2] {
    let inventories = crate::apply::inventory::config_map_key("");
    [
        (Sym::new(""), Sym::new("v1"), Sym::new("Secret")),
        (inventories.group, inventories.version, inventories.kind),
    ]
}

/// Every kind the units of `rev` (this shard's) and the inventories read, and the kinds the
/// fleet-wide Azure identity check lists (every shard's).
fn kinds_of(rev: &Revision, inventories: &BTreeMap<String, Inventory>) -> BTreeSet<KindKey> {
    let prepared = || rev.units.iter().filter_map(|(_, p)| p.as_ref().ok());
    // Borrowed first: a fleet has 100,000 objects and entries, and few kinds.
    let rendered = prepared()
        .flat_map(|p| (p.objects.iter()).map(|o| (&*o.key.group, &*o.key.version, &*o.key.kind)));
    let inventoried = inventories
        .values()
        .flat_map(|inv| (inv.entries.values()).map(|e| (&*e.id.group, &*e.version, &*e.id.kind)));
    let borrowed: BTreeSet<(&str, &str, &str)> = rendered.chain(inventoried).collect();
    let owned = (borrowed.into_iter())
        .map(|(group, version, kind)| (Sym::new(group), Sym::new(version), Sym::new(kind)));
    // A live AutoNodePolicy changes the node pools of its namespace, in git or not.
    let policies = prepared()
        .any(|p| !p.node_policy_namespaces().is_empty())
        .then(|| {
            let k = crate::reconcile::aro::node_policy::list_key(None);
            (k.group, k.version, k.kind)
        });
    let identities = crate::agent::fleet::identity_kinds(&rev.fleet_units)
        .into_iter()
        .map(|k| (k.group, k.version, k.kind));
    owned
        .chain(identities)
        .chain(always())
        .chain(crate::agent::pass::identity_check::read_kinds())
        .chain(policies)
        .collect()
}

/// Each unit's wake keys, kept while its preparation, its inventory and the Secrets of the
/// fleet's rendered identities stay: a commit that renders one unit again computes one unit's
/// keys.
#[derive(Default)]
pub(in crate::agent) struct WakeKeys {
    /// Each identity the fleet renders, with the Secret it reads, when the keys were made.
    identities: Vec<(ObjectKey, Option<ObjectKey>)>,
    /// By unit: its preparation and inventory entries then, and its keys.
    units: HashMap<String, UnitKeys>,
}

/// A unit's preparation and inventory entries, and the wake keys made of them.
type UnitKeys = (Arc<Prepared>, Option<Arc<InventoryEntries>>, Vec<WakeKey>);

type InventoryEntries = BTreeMap<inventory::Identity, inventory::Entry>;

/// The wake index of `rev`'s prepared units: what each renders and what its inventory holds
/// (the identities its clusters name may be rendered by a unit of another shard). A unit's keys
/// are taken from `kept` while nothing they are made of changed.
fn wakes_of(
    rev: &Revision,
    inventories: &BTreeMap<String, Inventory>,
    kept: &mut WakeKeys,
) -> Wakes {
    use crate::agent::pass::identity_check::{rendered_identities, secret_of, watched};
    let identities = rendered_identities(
        rev.fleet_units
            .iter()
            .filter_map(|(_, p)| p.as_deref().ok()),
    );
    let mut made_with: Vec<(ObjectKey, Option<ObjectKey>)> = (identities.iter())
        .map(|(k, o)| (k.clone(), secret_of(o)))
        .collect();
    made_with.sort_unstable();
    if made_with != kept.identities {
        *kept = WakeKeys {
            identities: made_with,
            ..Default::default()
        };
    }
    let keys_of = |p: &Prepared, inv: Option<&InventoryEntries>| -> Vec<WakeKey> {
        let rendered = p.objects.iter().map(|o| WakeKey::from(&o.key));
        // The identities its clusters use and their Secrets: a change to one wakes them.
        let watched = watched(p, &identities);
        let watched = watched.iter().map(WakeKey::from);
        let inventoried = inv.into_iter().flat_map(|e| e.keys().map(WakeKey::from));
        rendered.chain(watched).chain(inventoried).collect()
    };
    let mut units = HashMap::with_capacity(rev.units.len());
    let mut index = Vec::with_capacity(rev.units.len());
    for (i, (u, p)) in rev.units.iter().enumerate() {
        let Ok(p) = p else { continue };
        let name = u.name();
        let inv = inventories.get(&name).map(|inv| inv.entries.clone());
        let keys = match kept.units.remove(&name) {
            Some((then, inv_then, keys))
                if Arc::ptr_eq(&then, p)
                    && match (&inv_then, &inv) {
                        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                        (None, None) => true,
                        _ => false,
                    } =>
            {
                keys
            }
            _ => keys_of(p, inv.as_deref()),
        };
        index.push((i, name.clone()));
        units.insert(name, (p.clone(), inv, keys));
    }
    kept.units = units;
    Wakes::new((index.iter()).map(|(i, name)| (*i, kept.units[name].2.iter().copied())))
}

impl LiveContext {
    /// Sets up the watch caches of every kind `rev` and the inventories read, and runs no pass
    /// (a standby keeping them warm).
    pub(super) async fn warm_caches(&self, rev: &Revision) {
        let (inventories, _) = self.inventories(&rev.fleet.scope, |_| true).await;
        self.caches
            .ensure(&self.env.cluster, &kinds_of(rev, &inventories))
            .await;
        self.caches.revision_watched();
    }

    /// The fleet `scope`'s own inventories, by unit: who owns each object live (see
    /// [`crate::agent::fleet::check`]). Assembled from the decoded ones each time: their entries
    /// are shared, so that copies no more than a thousand small records.
    pub(super) async fn owners(
        &self,
        scope: &FleetScope,
    ) -> std::sync::Arc<BTreeMap<String, Inventory>> {
        let own = match self.cached_inventories(scope).await {
            Some(decoded) => inventory::assemble(&decoded, scope, |_| true).0,
            None => self.inventories(scope, |_| true).await.0,
        };
        std::sync::Arc::new(own)
    }

    /// The fleet `scope`'s inventories (see [`inventory::from_config_maps`] for `declared`), and
    /// those not acted on: from the ConfigMaps' cache once it is synced and has seen the agent's
    /// own last writes, else with one LIST. When they cannot be read at all, none (nothing is
    /// pruned this round). Other fleets' inventories are said once each, then left alone.
    async fn inventories(
        &self,
        scope: &FleetScope,
        declared: impl Fn(&str) -> bool,
    ) -> (BTreeMap<String, Inventory>, Vec<InventoryError>) {
        let cluster = &self.env.cluster;
        self.caches.ensure(cluster, &always().into()).await;
        let read = match self.cached_inventories(scope).await {
            Some(decoded) => Ok(inventory::assemble(&decoded, scope, declared)),
            None => inventory::read_all(cluster, scope, declared).await,
        };
        match read {
            Ok((own, broken, foreign)) => {
                self.say_foreign(&foreign);
                (own, broken)
            }
            Err(e) => {
                tracing::error!(error = %e, "reading the inventories failed: nothing is pruned this round");
                (BTreeMap::new(), vec![])
            }
        }
    }

    /// The inventories in the ConfigMaps' cache, decoded for the fleet `scope`: decoded again
    /// only when a ConfigMap changed since (or the fleet is another). `None`: read them with a
    /// LIST (see [`Caches::inventories`]).
    async fn cached_inventories(
        &self,
        scope: &FleetScope,
    ) -> Option<std::sync::Arc<Vec<inventory::Decoded>>> {
        let known = {
            let last = self.inventories_read.lock().expect("inventories lock");
            (last.as_ref())
                .filter(|(_, fleet, _)| *fleet == scope.name)
                .map(|(generation, _, _)| *generation)
        };
        let started = std::time::Instant::now();
        let (generation, config_maps) = self.caches.inventories(&self.env.cluster, known).await?;
        tracing::debug!(
            elapsed_ms = started.elapsed().as_millis() as u64,
            read = config_maps.as_ref().map_or(0, Vec::len),
            "inventory ConfigMaps read from the cache"
        );
        let mut last = self.inventories_read.lock().expect("inventories lock");
        match config_maps {
            None => last.as_ref().map(|(_, _, decoded)| decoded.clone()),
            Some(config_maps) => {
                let started = std::time::Instant::now();
                let earlier = (last.as_ref())
                    .filter(|(_, fleet, _)| *fleet == scope.name)
                    .map(|(_, _, decoded)| decoded.clone())
                    .unwrap_or_default();
                let decoded = std::sync::Arc::new(inventory::decode_config_maps_after(
                    config_maps,
                    scope,
                    &earlier,
                ));
                tracing::debug!(
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "inventories decoded"
                );
                *last = Some((generation, scope.name.clone(), decoded.clone()));
                Some(decoded)
            }
        }
    }

    /// Says each other fleet found on the cluster, the first time it is found.
    fn say_foreign(&self, foreign: &inventory::Foreign) {
        let mut said = self.foreign_said.lock().expect("foreign fleets lock");
        for (fleet, units) in foreign {
            if said.insert(fleet.clone()) {
                let line = fleets::foreign_line(fleet, units);
                tracing::warn!(fleet = %fleet, inventories = units.len(), "{line}");
                crate::output::println(&line);
            }
        }
    }
}

impl Signals {
    /// Kubernetes Events on the unit's ARO objects, when its phase (or its failure) changed, and
    /// the status page told; `inv`: the unit's inventory (its objects, when the pass did not
    /// render them); `live`: where the objects' uids are read.
    fn record_events(&self, live: &LiveContext, outcome: &UnitOutcome, inv: Option<&Inventory>) {
        let cluster = &live.env.cluster;
        let known = || {
            inv.into_iter()
                .flat_map(|inv| inv.entries.values())
                .filter(|e| crate::kinds::is_aro_kind(&e.id.group, &e.id.kind))
                .map(inventory::Entry::key)
                .collect()
        };
        let uid = |key: &crate::object::ObjectKey| {
            let live = live.caches.read(cluster, key)?;
            live.iter()
                .find(|o| {
                    o.pointer("/metadata/name")
                        .and_then(serde_json::Value::as_str)
                        == Some(&key.name)
                })
                .and_then(|o| o.pointer("/metadata/uid")?.as_str().map(str::to_string))
        };
        self.events
            .pass_ended(outcome, known, cluster.client().default_namespace(), uid);
        self.feed_unit(outcome);
        self.status_unit(outcome);
    }
}

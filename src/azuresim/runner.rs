//! The simulator's loop: discovers ASO kinds, watches them (`watch`), and writes
//! what [`status`] and [`secret`] decide.
//!
//! One task owns all state. Watchers (one per ASO kind) only report which objects changed; the loop
//! collects those, re-reads each object and its owner, and writes status only when it differs, so
//! its own writes come back as events that change nothing. A change to an object also wakes the
//! objects that name it as owner. Provisioning delays are timers in the same loop, keyed by the
//! generation they were started for: a spec change during the delay starts a new one. Deletions
//! (the finalizer, `deletion`) are timed the same way.
//!
//! The objects marked in one turn of the loop are distinct, so they are reconciled concurrently (at
//! most [`RECONCILE_CONCURRENCY`] at a time): each object still has one reconcile in flight, in the
//! order its changes arrived. The loop's bookkeeping ([`State`]) sits behind a lock that is never
//! held across a request.

mod deletion;
mod identities;

use super::inventory;
use super::keyvault::{KEY_VAULT_GROUP, KeyVaults};
use super::policy::{self, ReconcilePolicy};
use super::status::{self, Phase};
use super::watch::{self, Key, Kinds, Seen, to_value};
use super::{FIELD_MANAGER, SimConfig, credential, guest, secret};
use crate::arm::OwnerRef;
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep_until};

/// How often the simulator looks for ASO kinds installed after it started.
const REDISCOVERY_INTERVAL: Duration = Duration::from_secs(30);
/// How soon to look again when discovery failed or found no ASO kind.
const DISCOVERY_RETRY: Duration = Duration::from_secs(2);
/// How soon to look again at a resource whose credential Secret could not be used.
const CREDENTIAL_RETRY: Duration = Duration::from_secs(2);
/// How soon to retry an object whose reconcile failed.
const RETRY_AFTER: Duration = Duration::from_secs(1);
/// How many objects are reconciled at once. Each takes a few requests in a row; a fleet's first
/// step marks thousands of objects together, and the API server, not the simulator, sets the pace.
const RECONCILE_CONCURRENCY: usize = 16;

/// Simulates Azure Service Operator against a control plane (see the module header of `azuresim`).
pub struct AzureSimulator {
    client: Client,
    config: SimConfig,
    key_vaults: Option<KeyVaults>,
    /// Serve the guest clusters' API (`guest`), and name it in the kubeconfig Secrets.
    guests: bool,
}

impl AzureSimulator {
    pub fn new(client: Client, config: SimConfig) -> Self {
        AzureSimulator {
            client,
            config,
            key_vaults: None,
            guests: false,
        }
    }

    /// The simulated vaults' data plane takes each Vault's fault and access settings
    /// ([`KeyVaults::configure_vault`]) as the simulator sees the Vault.
    pub fn with_key_vaults(mut self, vaults: KeyVaults) -> Self {
        self.key_vaults = Some(vaults);
        self
    }

    /// Also serves each provisioned cluster's guest API on a loopback listener, and writes
    /// kubeconfig Secrets that point at it (see `guest`).
    pub fn serving_guests(mut self) -> Self {
        self.guests = true;
        self
    }

    /// Starts the simulator on the current tokio runtime. It runs until the returned handle is
    /// aborted (its watchers and the guest API stop with it) or the runtime shuts down.
    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            if !self.guests {
                return run(self.client, self.config, self.key_vaults, None).await;
            }
            match guest::start(self.client.clone()).await {
                Ok((endpoint, server)) => {
                    futures::future::join(
                        run(self.client, self.config, self.key_vaults, Some(endpoint)),
                        server,
                    )
                    .await;
                }
                Err(error) => {
                    tracing::warn!(%error, "the simulated guest cluster API could not start; kubeconfigs name the simulated API URL");
                    run(self.client, self.config, self.key_vaults, None).await
                }
            }
        })
    }
}

struct Runner {
    client: Client,
    config: SimConfig,
    /// Where the guest API listens, when it runs.
    guest: Option<guest::GuestEndpoint>,
    tx: mpsc::UnboundedSender<Seen>,
    kinds: Kinds,
    key_vaults: Option<KeyVaults>,
    state: Mutex<State>,
}

/// What the loop remembers between turns. Reconciles running at once each take the lock for a
/// moment, never across an await.
#[derive(Default)]
struct State {
    /// The owner each known object names: which objects to wake when an owner changes.
    owners: HashMap<Key, OwnerRef>,
    /// The same, indexed by the owner named.
    children: HashMap<OwnerSlot, BTreeSet<Key>>,
    /// Provisioning started for (generation, due at).
    timers: HashMap<Key, (i64, Instant)>,
    /// Deletions under `manage`: when the simulated Azure resource is due to go.
    deletions: HashMap<Key, Instant>,
    wakeups: BinaryHeap<Reverse<(Instant, Key)>>,
    /// ARM ids already recorded in the simulated Azure inventory by this runner.
    recorded: BTreeSet<String>,
    /// ARM ids whose simulated Azure resource is to be deleted (objects gone without the finalizer).
    removals: Vec<String>,
    /// uids of deleted objects whose simulated Azure resource the finalizer step already removed.
    finalized: HashSet<String>,
    /// Objects whose next reconcile reads the API server, not the watch's copy: their last write
    /// conflicted with a newer version the watch has not delivered yet.
    fresh: HashSet<Key>,
}

/// Where an owner is looked up: (namespace, kind, name). The group, when a reference names one, is
/// checked against `owners`.
type OwnerSlot = (String, String, String);

impl State {
    fn set_owner(&mut self, key: &Key, owner: OwnerRef) {
        self.unindex(key);
        if let OwnerRef::Named { kind, name, .. } = &owner {
            self.children
                .entry((key.namespace.clone(), kind.clone(), name.clone()))
                .or_default()
                .insert(key.clone());
        }
        self.owners.insert(key.clone(), owner);
    }

    fn unindex(&mut self, key: &Key) {
        if let Some(OwnerRef::Named { kind, name, .. }) = self.owners.get(key) {
            let slot = (key.namespace.clone(), kind.clone(), name.clone());
            if let Some(children) = self.children.get_mut(&slot) {
                children.remove(key);
                if children.is_empty() {
                    self.children.remove(&slot);
                }
            }
        }
    }

    fn forget(&mut self, key: &Key) {
        self.unindex(key);
        self.owners.remove(key);
        self.timers.remove(key);
        self.deletions.remove(key);
    }

    /// The known objects that name `owner` as theirs.
    fn children_of(&self, owner: &Key) -> Vec<Key> {
        let slot = (
            owner.namespace.clone(),
            owner.kind.clone(),
            owner.name.clone(),
        );
        let Some(children) = self.children.get(&slot) else {
            return Vec::new();
        };
        children
            .iter()
            .filter(|child| {
                matches!(self.owners.get(*child), Some(OwnerRef::Named { group, .. })
                    if group.as_ref().is_none_or(|g| *g == owner.group))
            })
            .cloned()
            .collect()
    }
}

async fn run(
    client: Client,
    config: SimConfig,
    key_vaults: Option<KeyVaults>,
    guest: Option<guest::GuestEndpoint>,
) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut runner = Runner {
        client,
        config,
        guest,
        tx,
        kinds: HashMap::new(),
        key_vaults,
        state: Mutex::new(State::default()),
    };
    // Dropped with this task, which aborts every watcher.
    let mut watchers: JoinSet<()> = JoinSet::new();
    let mut next_discovery = Instant::now();
    tracing::info!(
        delay_ms = runner.config.provisioning_delay.as_millis() as u64,
        "Azure simulator started"
    );
    loop {
        let mut dirty = BTreeSet::new();
        let next_wakeup = runner
            .state_mut()
            .wakeups
            .peek()
            .map(|Reverse((at, _))| *at);
        tokio::select! {
            _ = sleep_until(next_discovery) => {
                let found = watch::discover(&runner.client, &mut runner.kinds, &runner.tx, &mut watchers).await;
                next_discovery = Instant::now() + if found { REDISCOVERY_INTERVAL } else { DISCOVERY_RETRY };
            }
            Some(seen) = rx.recv() => {
                runner.note(seen, &mut dirty);
                while let Ok(seen) = rx.try_recv() {
                    runner.note(seen, &mut dirty);
                }
            }
            _ = sleep_until(next_wakeup.unwrap_or_else(Instant::now)), if next_wakeup.is_some() => {
                let now = Instant::now();
                let wakeups = &mut runner.state_mut().wakeups;
                while let Some(Reverse((at, _))) = wakeups.peek() {
                    if *at > now {
                        break;
                    }
                    let Reverse((_, key)) = wakeups.pop().expect("peeked");
                    dirty.insert(key);
                }
            }
        }
        let removals = std::mem::take(&mut runner.state_mut().removals);
        for arm_id in removals {
            runner.state_mut().recorded.remove(&arm_id);
            match inventory::remove(&runner.client, &arm_id).await {
                Ok(()) => tracing::info!(%arm_id, "simulated Azure resource deleted"),
                Err(error) => {
                    tracing::warn!(%arm_id, %error, "deleting the simulated Azure resource failed")
                }
            }
        }
        let reconciled: Vec<(Key, Result<(), kube::Error>)> = futures::stream::iter(dirty)
            .map(|key| {
                let runner = &runner;
                async move {
                    let outcome = runner.reconcile(&key).await;
                    (key, outcome)
                }
            })
            .buffer_unordered(RECONCILE_CONCURRENCY)
            .collect()
            .await;
        for (key, outcome) in reconciled {
            let retry_at = match outcome {
                Ok(()) => continue,
                // Gone meanwhile: the watch reports it.
                Err(kube::Error::Api(s)) if s.code == 404 => continue,
                // Changed since it was read: read it again at once, from the API server.
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    runner.state_mut().fresh.insert(key.clone());
                    Instant::now()
                }
                Err(error) => {
                    tracing::warn!(kind = %key.kind, namespace = %key.namespace, name = %key.name, %error, "simulated reconcile failed; retrying");
                    Instant::now() + RETRY_AFTER
                }
            };
            runner.state_mut().wakeups.push(Reverse((retry_at, key)));
        }
    }
}

impl Runner {
    /// The loop's bookkeeping, for a moment: never hold it across an await.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The bookkeeping between batches, when nothing else can hold it.
    fn state_mut(&mut self) -> &mut State {
        self.state
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records what a watcher saw and marks the objects to reconcile.
    fn note(&mut self, seen: Seen, dirty: &mut BTreeSet<Key>) {
        let state = self.state_mut();
        let key = match seen {
            Seen::Applied { key, owner } => {
                state.set_owner(&key, owner);
                dirty.insert(key.clone());
                key
            }
            Seen::Deleted { key, uid, arm_id } => {
                state.forget(&key);
                // Deleted through the finalizer: its Azure resource was handled then.
                if !state.finalized.remove(&uid) {
                    state.removals.extend(arm_id);
                }
                key
            }
        };
        dirty.extend(state.children_of(&key));
    }

    fn api(&self, ar: &ApiResource, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, ar)
    }

    /// Brings one object (its finalizer, status and Secrets) to what the simulated Azure would
    /// report, or takes its deletion a step further.
    async fn reconcile(&self, key: &Key) -> Result<(), kube::Error> {
        let Some(watched) = self.kinds.get(&(key.group.clone(), key.kind.clone())) else {
            return Ok(());
        };
        let ar = &watched.ar;
        let api = self.api(ar, &key.namespace);
        // The watch's copy, unless the last write conflicted with it (or the first list is not
        // complete yet): then the API server's.
        let fresh = self.state().fresh.remove(key);
        let live = match watched.cached(&key.namespace, &key.name) {
            Some(cached) if !fresh => Some(cached),
            _ => api.get_opt(&key.name).await?.map(|o| to_value(o, ar)),
        };
        let Some(mut obj) = live else {
            self.state().forget(key);
            return Ok(());
        };
        if let Some(vaults) = &self.key_vaults
            && key.kind == "Vault"
            && key.group == KEY_VAULT_GROUP
        {
            vaults.configure_vault(&obj);
        }
        if policy::is_deleting(&obj) {
            self.state().timers.remove(key);
            return self.finalize(key, ar, &api, obj).await;
        }
        self.state().deletions.remove(key);
        if !policy::has_finalizer(&obj) {
            obj = deletion::add_finalizer(&api, ar, &obj).await?;
        }
        if self.credential_refused(key, ar, &api, &obj).await? {
            return Ok(());
        }
        let owner = self
            .owner_object(&key.namespace, &crate::arm::owner_of(&obj))
            .await?;
        if ReconcilePolicy::of(&obj) == ReconcilePolicy::Skip {
            // ASO never writes Azure under skip; it only reads the resource. A resource that
            // exists in the simulated Azure reads as Ready; one that does not is left alone.
            self.state().timers.remove(key);
            let read = status::render(&obj, owner.as_ref(), &Phase::Succeeded, &timestamp());
            let exists = match read.get("id").and_then(Value::as_str) {
                Some(id) => inventory::exists(&self.client, id).await?,
                None => false,
            };
            tracing::debug!(kind = %key.kind, namespace = %key.namespace, name = %key.name, exists, "reconcile-policy skip: read only");
            if exists {
                write_status(&api, ar, key, &obj, &read, "Succeeded").await?;
            }
            return Ok(());
        }
        let generation = obj
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let delay_elapsed = self
            .state()
            .timers
            .get(key)
            .is_some_and(|(g, at)| *g == generation && Instant::now() >= *at);
        let provisioned = status::is_settled(&obj) || delay_elapsed;
        let phase = status::phase(&obj, owner.as_ref(), provisioned);
        if key.kind == crate::kinds::HCP_CLUSTER
            && self.identities_stop(key, ar, &api, &obj, &phase).await?
        {
            return Ok(());
        }
        let desired = status::render(&obj, owner.as_ref(), &phase, &timestamp());
        if phase == Phase::Succeeded {
            // What Azure holds comes first: once Ready says Succeeded, the resource (and a
            // cluster's kubeconfig Secrets) exist.
            let unrecorded = desired
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !self.state().recorded.contains(*id));
            if let Some(arm_id) = unrecorded {
                let arm_type = crate::arm::arm_type(&key.group, &key.kind);
                inventory::ensure(&self.client, arm_id, &arm_type, FIELD_MANAGER).await?;
                self.state().recorded.insert(arm_id.to_string());
            }
            if key.kind == crate::kinds::HCP_CLUSTER {
                self.write_secrets(&obj).await?;
            }
        }
        write_status(&api, ar, key, &obj, &desired, phase.reason()).await?;

        match phase {
            Phase::Provisioning => {
                let mut state = self.state();
                if state.timers.get(key).map(|(g, _)| *g) != Some(generation) {
                    let due = Instant::now() + self.config.provisioning_delay;
                    state.timers.insert(key.clone(), (generation, due));
                    state.wakeups.push(Reverse((due, key.clone())));
                }
            }
            // Retried on the next change: the delay of this generation has been served.
            Phase::TransientFailure { .. } => {}
            _ => {
                self.state().timers.remove(key);
            }
        }
        Ok(())
    }

    /// ASO's per-resource credential ([`credential`]): true when `obj` cannot be managed with
    /// it, after writing why; retried as ASO retries (the Secret is not watched).
    pub(super) async fn credential_refused(
        &self,
        key: &Key,
        ar: &ApiResource,
        api: &Api<DynamicObject>,
        obj: &Value,
    ) -> Result<bool, kube::Error> {
        if credential::credential_from(obj).is_none() {
            return Ok(false);
        }
        let secret = match credential::secret_to_read(obj) {
            Some(name) => Api::<Secret>::namespaced(self.client.clone(), &key.namespace)
                .get_opt(name)
                .await?
                .and_then(|s| serde_json::to_value(s).ok()),
            None => None,
        };
        let Err(problem) = credential::check(obj, secret.as_ref()) else {
            return Ok(false);
        };
        tracing::debug!(kind = %key.kind, namespace = %key.namespace, name = %key.name, %problem, "credential refused");
        let desired = credential::refused_status(obj, &problem, &timestamp());
        write_status(api, ar, key, obj, &desired, credential::REASON).await?;
        self.state().timers.remove(key);
        self.state()
            .wakeups
            .push(Reverse((Instant::now() + CREDENTIAL_RETRY, key.clone())));
        Ok(true)
    }

    /// The object `owner` names, when it exists. An owner of a kind not served counts as missing.
    async fn owner_object(
        &self,
        namespace: &str,
        owner: &OwnerRef,
    ) -> Result<Option<Value>, kube::Error> {
        let OwnerRef::Named { group, kind, name } = owner else {
            return Ok(None);
        };
        let watched = match group {
            Some(g) => self.kinds.get(&(g.clone(), kind.clone())),
            None => self
                .kinds
                .iter()
                .find(|((_, k), _)| k == kind)
                .map(|(_, w)| w),
        };
        let Some(watched) = watched else {
            return Ok(None);
        };
        let ar = &watched.ar;
        if let Some(cached) = watched.cached(namespace, name) {
            return Ok(Some(cached));
        }
        Ok(self
            .api(ar, namespace)
            .get_opt(name)
            .await?
            .map(|o| to_value(o, ar)))
    }

    /// Writes the kubeconfig Secrets a provisioned HcpOpenShiftCluster asks for, when they differ.
    async fn write_secrets(&self, cluster: &Value) -> Result<(), kube::Error> {
        let namespace = cluster
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default");
        let cluster_name = cluster
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let api: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
        for desired in secret::credential_secrets_at(cluster, self.guest.as_ref()) {
            let name = desired
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let live = api
                .get_opt(name)
                .await?
                .and_then(|s| serde_json::to_value(s).ok());
            if live
                .as_ref()
                .is_some_and(|l| secret::is_up_to_date(l, &desired))
            {
                continue;
            }
            api.patch(
                name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&desired),
            )
            .await?;
            tracing::info!(%namespace, secret_name = %name, cluster = %cluster_name, "simulated kubeconfig Secret written");
        }
        Ok(())
    }
}

/// Writes `desired` as the status of `obj` when it differs from the live one. Returns the object as
/// it stands after (with the resourceVersion of the write).
async fn write_status(
    api: &Api<DynamicObject>,
    ar: &ApiResource,
    key: &Key,
    obj: &Value,
    desired: &Value,
    reason: &str,
) -> Result<Value, kube::Error> {
    if obj.get("status") == Some(desired) {
        return Ok(obj.clone());
    }
    let body = json!({
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "metadata": {"name": key.name, "namespace": key.namespace},
        "status": desired,
    });
    let written = api
        .patch_status(
            &key.name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&body),
        )
        .await?;
    let generation = obj.pointer("/metadata/generation").and_then(|g| g.as_i64());
    let state = desired
        .get("provisioningState")
        .or_else(|| desired.pointer("/properties/provisioningState"))
        .and_then(|s| s.as_str());
    tracing::info!(
        kind = %key.kind, namespace = %key.namespace, name = %key.name,
        generation, reason, provisioning_state = state,
        "simulated ASO status written"
    );
    Ok(to_value(written, ar))
}

fn timestamp() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

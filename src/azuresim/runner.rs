//! The simulator's watch loop: discovers ASO kinds, watches them, and writes what [`status`] and
//! [`secret`] decide.
//!
//! One task owns all state. Watchers (one per ASO kind) only report which objects changed; the loop
//! collects those, re-reads each object and its owner, and writes status only when it differs, so
//! its own writes come back as events that change nothing. A change to an object also wakes the
//! objects that name it as owner. Provisioning delays are timers in the same loop, keyed by the
//! generation they were started for: a spec change during the delay starts a new one.

use super::azure::{self, OwnerRef};
use super::inventory;
use super::status::{self, Phase};
use super::{FIELD_MANAGER, RECONCILE_POLICY_ANNOTATION, SimConfig, secret};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::discovery::{Discovery, Scope, verbs};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};
use std::fmt;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep_until};

/// How often the simulator looks for ASO kinds installed after it started.
const REDISCOVERY_INTERVAL: Duration = Duration::from_secs(30);
/// How soon to look again when discovery failed or found no ASO kind.
const DISCOVERY_RETRY: Duration = Duration::from_secs(2);
/// How soon to retry an object whose reconcile failed.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// Simulates Azure Service Operator against a control plane (see the module header of `azuresim`).
pub struct AzureSimulator {
    client: Client,
    config: SimConfig,
}

impl AzureSimulator {
    pub fn new(client: Client, config: SimConfig) -> Self {
        AzureSimulator { client, config }
    }

    /// Starts the simulator on the current tokio runtime. It runs until the returned handle is
    /// aborted (its watchers stop with it) or the runtime shuts down.
    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(run(self.client, self.config))
    }
}

/// One simulated object, independent of the API version it is served at.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Key {
    group: String,
    kind: String,
    namespace: String,
    name: String,
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.kind, self.namespace, self.name)
    }
}

/// What a watcher reports.
enum Seen {
    Applied { key: Key, owner: OwnerRef },
    /// Gone from the control plane; `arm_id` is the Azure resource ASO deleted with it (policy
    /// `manage`), `None` when the Azure resource is kept (`detach-on-delete`, `skip`) or never existed.
    Deleted { key: Key, arm_id: Option<String> },
}

struct Runner {
    client: Client,
    config: SimConfig,
    tx: mpsc::UnboundedSender<Seen>,
    /// Watched kinds by (group, kind).
    kinds: HashMap<(String, String), ApiResource>,
    /// The owner each known object names: which objects to wake when an owner changes.
    owners: HashMap<Key, OwnerRef>,
    /// Provisioning started for (generation, due at).
    timers: HashMap<Key, (i64, Instant)>,
    wakeups: BinaryHeap<Reverse<(Instant, Key)>>,
    /// ARM ids already recorded in the simulated Azure inventory by this runner.
    recorded: BTreeSet<String>,
    /// ARM ids whose simulated Azure resource is to be deleted.
    removals: Vec<String>,
}

async fn run(client: Client, config: SimConfig) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut runner = Runner {
        client,
        config,
        tx,
        kinds: HashMap::new(),
        owners: HashMap::new(),
        timers: HashMap::new(),
        wakeups: BinaryHeap::new(),
        recorded: BTreeSet::new(),
        removals: Vec::new(),
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
        let next_wakeup = runner.wakeups.peek().map(|Reverse((at, _))| *at);
        tokio::select! {
            _ = sleep_until(next_discovery) => {
                let found = runner.discover(&mut watchers).await;
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
                while let Some(Reverse((at, _))) = runner.wakeups.peek() {
                    if *at > now {
                        break;
                    }
                    let Reverse((_, key)) = runner.wakeups.pop().expect("peeked");
                    dirty.insert(key);
                }
            }
        }
        for arm_id in std::mem::take(&mut runner.removals) {
            runner.recorded.remove(&arm_id);
            match inventory::remove(&runner.client, &arm_id).await {
                Ok(()) => tracing::info!(%arm_id, "simulated Azure resource deleted"),
                Err(error) => {
                    tracing::warn!(%arm_id, %error, "deleting the simulated Azure resource failed")
                }
            }
        }
        for key in dirty {
            if let Err(error) = runner.reconcile(&key).await {
                tracing::warn!(kind = %key.kind, namespace = %key.namespace, name = %key.name, %error, "simulated reconcile failed; retrying");
                runner
                    .wakeups
                    .push(Reverse((Instant::now() + RETRY_AFTER, key)));
            }
        }
    }
}

impl Runner {
    /// Finds ASO kinds not watched yet and starts a watcher for each. True when at least one ASO
    /// kind is watched.
    async fn discover(&mut self, watchers: &mut JoinSet<()>) -> bool {
        let groups = match self.client.list_api_groups().await {
            Ok(groups) => groups,
            Err(error) => {
                tracing::warn!(%error, "Azure simulator: API discovery failed");
                return !self.kinds.is_empty();
            }
        };
        let names: Vec<String> = groups
            .groups
            .into_iter()
            .map(|g| g.name)
            .filter(|n| n.ends_with(".azure.com"))
            .collect();
        if names.is_empty() {
            tracing::debug!("Azure simulator: no ASO API group served yet");
            return !self.kinds.is_empty();
        }
        let allow: Vec<&str> = names.iter().map(String::as_str).collect();
        let discovery = match Discovery::new(self.client.clone())
            .filter(&allow)
            .run()
            .await
        {
            Ok(d) => d,
            Err(error) => {
                tracing::warn!(%error, "Azure simulator: discovery of ASO groups failed");
                return !self.kinds.is_empty();
            }
        };
        for group in discovery.groups() {
            for (ar, caps) in group.recommended_resources() {
                if caps.scope != Scope::Namespaced || !caps.supports_operation(verbs::WATCH) {
                    continue;
                }
                let gk = (ar.group.clone(), ar.kind.clone());
                if self.kinds.contains_key(&gk) {
                    continue;
                }
                tracing::info!(group = %ar.group, version = %ar.version, kind = %ar.kind, "Azure simulator: watching ASO kind");
                watchers.spawn(watch_kind(self.client.clone(), ar.clone(), self.tx.clone()));
                self.kinds.insert(gk, ar);
            }
        }
        !self.kinds.is_empty()
    }

    /// Records what a watcher saw and marks the objects to reconcile.
    fn note(&mut self, seen: Seen, dirty: &mut BTreeSet<Key>) {
        let key = match seen {
            Seen::Applied { key, owner } => {
                self.owners.insert(key.clone(), owner);
                dirty.insert(key.clone());
                key
            }
            Seen::Deleted { key, arm_id } => {
                self.owners.remove(&key);
                self.timers.remove(&key);
                self.removals.extend(arm_id);
                key
            }
        };
        dirty.extend(self.children_of(&key));
    }

    fn children_of(&self, owner: &Key) -> Vec<Key> {
        self.owners
            .iter()
            .filter(|(child, named)| {
                child.namespace == owner.namespace
                    && matches!(named, OwnerRef::Named { group, kind, name }
                        if *name == owner.name && *kind == owner.kind && group.as_ref().is_none_or(|g| *g == owner.group))
            })
            .map(|(child, _)| child.clone())
            .collect()
    }

    fn api(&self, ar: &ApiResource, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, ar)
    }

    /// Brings one object's status (and Secrets) to what the simulated Azure would report.
    async fn reconcile(&mut self, key: &Key) -> Result<(), kube::Error> {
        let Some(ar) = self
            .kinds
            .get(&(key.group.clone(), key.kind.clone()))
            .cloned()
        else {
            return Ok(());
        };
        let api = self.api(&ar, &key.namespace);
        let Some(live) = api.get_opt(&key.name).await? else {
            self.owners.remove(key);
            self.timers.remove(key);
            return Ok(());
        };
        let obj = to_value(live, &ar);
        let owner = self
            .owner_object(&key.namespace, &azure::owner_of(&obj))
            .await?;
        if obj
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(RECONCILE_POLICY_ANNOTATION))
            .and_then(Value::as_str)
            == Some("skip")
        {
            // ASO never writes Azure under skip; it only reads the resource. A resource that
            // exists in the simulated Azure reads as Ready; one that does not is left alone.
            self.timers.remove(key);
            let read = status::render(&obj, owner.as_ref(), &Phase::Succeeded, &timestamp());
            let exists = match read.get("id").and_then(Value::as_str) {
                Some(id) => inventory::exists(&self.client, id).await?,
                None => false,
            };
            tracing::debug!(kind = %key.kind, namespace = %key.namespace, name = %key.name, exists, "reconcile-policy skip: read only");
            if exists && obj.get("status") != Some(&read) {
                let body = json!({
                    "apiVersion": obj["apiVersion"], "kind": obj["kind"],
                    "metadata": {"name": key.name, "namespace": key.namespace},
                    "status": read,
                });
                api.patch_status(&key.name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&body))
                    .await?;
            }
            return Ok(());
        }
        let generation = obj
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let delay_elapsed = self
            .timers
            .get(key)
            .is_some_and(|(g, at)| *g == generation && Instant::now() >= *at);
        let provisioned = status::is_settled(&obj) || delay_elapsed;
        let phase = status::phase(&obj, owner.as_ref(), provisioned);
        let desired = status::render(&obj, owner.as_ref(), &phase, &timestamp());

        if obj.get("status") != Some(&desired) {
            let body = json!({
                "apiVersion": obj["apiVersion"],
                "kind": obj["kind"],
                "metadata": {"name": key.name, "namespace": key.namespace},
                "status": desired,
            });
            api.patch_status(
                &key.name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&body),
            )
            .await?;
            tracing::info!(
                kind = %key.kind, namespace = %key.namespace, name = %key.name, generation,
                reason = phase.reason(), "simulated ASO status written"
            );
        }

        match phase {
            Phase::Provisioning => {
                if self.timers.get(key).map(|(g, _)| *g) != Some(generation) {
                    let due = Instant::now() + self.config.provisioning_delay;
                    self.timers.insert(key.clone(), (generation, due));
                    self.wakeups.push(Reverse((due, key.clone())));
                }
            }
            _ => {
                self.timers.remove(key);
            }
        }
        if phase == Phase::Succeeded {
            if let Some(arm_id) = desired.get("id").and_then(Value::as_str)
                && !self.recorded.contains(arm_id)
            {
                let arm_type = azure::arm_type(&key.group, &key.kind);
                inventory::ensure(&self.client, arm_id, &arm_type, FIELD_MANAGER).await?;
                self.recorded.insert(arm_id.to_string());
            }
            if key.kind == azure::HCP_CLUSTER {
                self.write_secrets(&obj).await?;
            }
        }
        Ok(())
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
        let ar = match group {
            Some(g) => self.kinds.get(&(g.clone(), kind.clone())),
            None => self
                .kinds
                .iter()
                .find(|((_, k), _)| k == kind)
                .map(|(_, ar)| ar),
        };
        let Some(ar) = ar else {
            return Ok(None);
        };
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
        for desired in secret::credential_secrets(cluster) {
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
            tracing::info!(%namespace, secret = %name, cluster = %cluster_name, "simulated kubeconfig Secret written");
        }
        Ok(())
    }
}

/// Watches one ASO kind in every namespace and reports changes until the receiver is gone.
async fn watch_kind(client: Client, ar: ApiResource, tx: mpsc::UnboundedSender<Seen>) {
    let api: Api<DynamicObject> = Api::all_with(client, &ar);
    let mut events = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    while let Some(event) = events.next().await {
        let seen = match event {
            Ok(watcher::Event::Apply(obj) | watcher::Event::InitApply(obj)) => {
                let key = key_of(&obj, &ar);
                let owner = azure::owner_of(&to_value(obj, &ar));
                Seen::Applied { key, owner }
            }
            Ok(watcher::Event::Delete(obj)) => {
                let key = key_of(&obj, &ar);
                let obj = to_value(obj, &ar);
                Seen::Deleted {
                    key,
                    arm_id: deleted_in_azure(&obj),
                }
            }
            Ok(watcher::Event::Init | watcher::Event::InitDone) => continue,
            Err(error) => {
                tracing::warn!(kind = %ar.kind, %error, "Azure simulator: watch failed; retrying");
                continue;
            }
        };
        if tx.send(seen).is_err() {
            return;
        }
    }
}

/// The ARM id ASO deletes in Azure when `obj` is deleted: its `status.id` under policy `manage`;
/// `detach-on-delete` and `skip` keep the Azure resource.
fn deleted_in_azure(obj: &Value) -> Option<String> {
    let policy = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(RECONCILE_POLICY_ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or("manage");
    if policy != "manage" {
        return None;
    }
    obj.pointer("/status/id")
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn key_of(obj: &DynamicObject, ar: &ApiResource) -> Key {
    Key {
        group: ar.group.clone(),
        kind: ar.kind.clone(),
        namespace: obj.namespace().unwrap_or_default(),
        name: obj.name_any(),
    }
}

/// The object as JSON, with `apiVersion` and `kind` filled in (list items may lack them).
fn to_value(obj: DynamicObject, ar: &ApiResource) -> Value {
    let mut value = serde_json::to_value(obj).unwrap_or_else(|_| json!({}));
    if value
        .get("kind")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        value["kind"] = json!(ar.kind);
    }
    if value
        .get("apiVersion")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        value["apiVersion"] = json!(ar.api_version);
    }
    value
}

fn timestamp() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

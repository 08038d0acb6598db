//! The inventory: what the agent applied for each unit, kept in the cluster so that it survives
//! restarts and is shared by replicas. Prune deletes only inventory members that are no longer
//! rendered.
//!
//! One ConfigMap per unit in [`AGENT_NAMESPACE`], labelled [`INVENTORY_LABEL`], its unit path in
//! [`OWNER_ANNOTATION`] and its fleet in [`FLEET_ANNOTATION`] (see
//! [`crate::plan::ownership::scope`]: an agent acts only on its own fleet's inventories). `data.revision` holds the last revision applied to the unit, `data.entries`
//! one JSON object per line: the object's identity and version, the reconcile decision taken for it,
//! and a digest of the body last applied (how a changed desired state is told apart from drift).
//! No object bodies and no Secret values are stored.

use super::{ApplyError, Cluster};

use crate::marks::{
    AGENT_NAMESPACE, FIELD_MANAGER, FLEET_ANNOTATION, INVENTORY_LABEL, OWNER_ANNOTATION,
};
use crate::object::{ObjectKey, Sym};
use crate::plan::ownership::scope::{self, FleetScope, Whose};
use crate::plan::policy::{Decision, Policy, Provenance};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// An object's identity across API versions: group, kind, namespace, name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Identity {
    pub group: Sym,
    pub kind: Sym,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub namespace: Option<Sym>,
    pub name: String,
}

impl From<&ObjectKey> for Identity {
    fn from(k: &ObjectKey) -> Self {
        Identity {
            group: k.group.clone(),
            kind: k.kind.clone(),
            namespace: k.namespace.clone(),
            name: k.name.clone(),
        }
    }
}

/// What the inventory records about one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    #[serde(flatten)]
    pub id: Identity,
    /// The API version last applied (deletes and reads use it).
    pub version: Sym,
    pub provenance: Provenance,
    pub policy: Policy,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub if_exists: bool,
    /// Digest of the body last applied; `None` while recorded but not yet applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<String>,
}

impl Entry {
    pub fn key(&self) -> ObjectKey {
        ObjectKey {
            group: self.id.group.clone(),
            version: self.version.clone(),
            kind: self.id.kind.clone(),
            namespace: self.id.namespace.clone(),
            name: self.id.name.clone(),
        }
    }

    pub fn decision(&self) -> Decision {
        Decision {
            provenance: self.provenance,
            policy: self.policy,
            if_exists: self.if_exists,
        }
    }
}

/// One unit's inventory.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Inventory {
    pub unit: String,
    /// The last revision applied to the unit.
    pub revision: Option<String>,
    /// Shared: the agent keeps the inventories it decoded from the ConfigMaps' cache, and every
    /// converge takes copies of them that only a write changes.
    pub entries: std::sync::Arc<BTreeMap<Identity, Entry>>,
    /// The live ConfigMap carries [`crate::plan::prune::ALLOW_DELETION_ANNOTATION`]`=true`.
    pub consent: bool,
    /// The live ConfigMap carries [`crate::plan::prune::ALLOW_EMPTY_RENDER_ANNOTATION`]`=true`.
    pub allow_empty_render: bool,
    /// The name of the ConfigMap it was read from, when that is not the name this fleet writes
    /// (written before fleets were named, or by the fleet taken over): removed once written anew.
    pub read_from: Option<String>,
}

/// The inventories of other fleets on the cluster, by fleet name (empty: written before fleets
/// were named, and of no unit the revision declares), each with its units: left alone.
pub type Foreign = BTreeMap<String, Vec<String>>;

/// An inventory that does not decode, or that the agent does not trust (written by someone else).
#[derive(Debug, Clone, thiserror::Error)]
#[error("ConfigMap/{AGENT_NAMESPACE}/{name}: {why}")]
pub struct InventoryError {
    pub name: String,
    /// The unit the ConfigMap says it belongs to, when it says so.
    pub unit: Option<String>,
    pub why: String,
}

/// Why the agent does not trust `cm` as an inventory: its data was written by a field manager
/// other than the agent's ([`FIELD_MANAGER`], the only one that writes inventories; units cannot
/// write into [`AGENT_NAMESPACE`], validation refuses it). `None`: trusted. A ConfigMap without
/// managedFields (a server that does not track them) is judged by its content alone.
pub fn distrust(cm: &Value) -> Option<String> {
    let managed = cm
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)?;
    let writes_data = |m: &Value| m.pointer("/fieldsV1/f:data").is_some();
    let others: Vec<&str> = managed
        .iter()
        .filter(|m| writes_data(m))
        .filter_map(|m| m.get("manager").and_then(Value::as_str))
        .filter(|m| *m != FIELD_MANAGER)
        .collect();
    if let Some(first) = others.first() {
        return Some(format!(
            "the inventory's data was written by field manager {first:?}, not by aro-gitops: the agent does not act on it (nothing is applied or pruned for its unit) until it is restored or deleted"
        ));
    }
    let entries = cm
        .pointer("/data/entries")
        .and_then(Value::as_str)
        .is_some_and(|e| !e.trim().is_empty());
    let ours = managed.iter().any(|m| {
        m.get("manager").and_then(Value::as_str) == Some(FIELD_MANAGER)
            && m.pointer("/fieldsV1/f:data/f:entries").is_some()
    });
    (entries && !ours).then(|| {
        "no field manager of aro-gitops owns the inventory's data.entries: the agent does not act on it until it is restored or deleted".to_string()
    })
}

/// What [`distrust`] reads of an inventory's `managedFields` (an array), and nothing more: for
/// each field manager that writes the data, its name, and whether it writes `data.entries`. The
/// watch caches keep this in place of the whole managedFields (which they drop), so that
/// inventories read from a cache are judged as when read whole; `distrust` gives the same answer
/// on both.
pub fn trust_facts(managed: &Value) -> Value {
    let facts = managed
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m.pointer("/fieldsV1/f:data").is_some())
        .map(|m| {
            let data = match m.pointer("/fieldsV1/f:data/f:entries") {
                Some(_) => json!({"f:entries": {}}),
                None => json!({}),
            };
            json!({"manager": m.get("manager").cloned().unwrap_or(Value::Null), "fieldsV1": {"f:data": data}})
        })
        .collect();
    Value::Array(facts)
}

/// The ConfigMap name of the inventory of `unit` of the fleet `fleet`: a readable slug and a
/// digest of the exact path and fleet name (of the path alone when the fleet is unnamed, as
/// before fleets were named).
pub fn name_for(fleet: &str, unit: &str) -> String {
    let slug = crate::object::name_slug(unit, 200);
    format!(
        "inventory-{}-{}",
        slug.trim_end_matches('-'),
        &crate::object::sha256_hex(owner_text(fleet, unit).as_bytes())[..10]
    )
}

fn owner_text(fleet: &str, unit: &str) -> String {
    if fleet.is_empty() {
        unit.to_string()
    } else {
        format!("{fleet}\n{unit}")
    }
}

impl Inventory {
    pub fn new(unit: &str) -> Inventory {
        Inventory {
            unit: unit.to_string(),
            ..Default::default()
        }
    }

    pub fn get(&self, key: &ObjectKey) -> Option<&Entry> {
        self.entries.get(&Identity::from(key))
    }

    /// Records (or updates) the entry of `key`.
    pub fn record(&mut self, key: &ObjectKey, decision: Decision, applied: Option<String>) {
        let id = Identity::from(key);
        let applied = applied.or_else(|| self.entries.get(&id).and_then(|e| e.applied.clone()));
        std::sync::Arc::make_mut(&mut self.entries).insert(
            id.clone(),
            Entry {
                id,
                version: key.version.clone(),
                provenance: decision.provenance,
                policy: decision.policy,
                if_exists: decision.if_exists,
                applied,
            },
        );
    }

    pub fn forget(&mut self, key: &ObjectKey) {
        std::sync::Arc::make_mut(&mut self.entries).remove(&Identity::from(key));
    }

    /// The ConfigMap that stores this inventory (for server-side apply), as the fleet `fleet`
    /// writes it.
    pub fn to_config_map(&self, fleet: &str) -> Value {
        let entries: Vec<String> = self
            .entries
            .values()
            .map(|e| serde_json::to_string(e).expect("entries serialise"))
            .collect();
        let mut data = serde_json::Map::new();
        if let Some(r) = &self.revision {
            data.insert("revision".into(), Value::String(r.clone()));
        }
        data.insert("entries".into(), Value::String(entries.join("\n")));
        let mut annotations = json!({OWNER_ANNOTATION: self.unit});
        if !fleet.is_empty() {
            annotations[FLEET_ANNOTATION] = json!(fleet);
        }
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name_for(fleet, &self.unit),
                "namespace": AGENT_NAMESPACE,
                "labels": {INVENTORY_LABEL: "true", "app.kubernetes.io/managed-by": "aro-gitops"},
                "annotations": annotations,
            },
            "data": data,
        })
    }

    /// Reads an inventory from its live ConfigMap.
    pub fn from_config_map(cm: &Value) -> Result<Inventory, InventoryError> {
        let name = cm
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        let unit = cm
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(OWNER_ANNOTATION))
            .and_then(Value::as_str)
            .map(str::to_string);
        let err = |why: String| InventoryError {
            name: name.clone(),
            unit: unit.clone(),
            why,
        };
        if let Some(why) = distrust(cm) {
            return Err(err(why));
        }
        let unit = unit
            .clone()
            .ok_or_else(|| err(format!("no {OWNER_ANNOTATION} annotation")))?;
        let fleet = scope::fleet_of(cm).unwrap_or_default();
        if name != name_for(fleet, &unit) {
            // Not that unit's inventory: reported, and the unit goes on with its own.
            return Err(InventoryError {
                unit: None,
                ..err(format!(
                    "it says it is the inventory of unit {unit}, whose inventory is {}: the agent does not act on it",
                    name_for(fleet, &unit)
                ))
            });
        }
        let revision = cm
            .pointer("/data/revision")
            .and_then(Value::as_str)
            .map(str::to_string);
        let mut entries = BTreeMap::new();
        let lines = cm
            .pointer("/data/entries")
            .and_then(Value::as_str)
            .unwrap_or("");
        for (n, line) in lines
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let e: Entry = serde_json::from_str(line).map_err(|e| {
                err(format!(
                    "the inventory does not decode: data.entries line {}: {e}",
                    n + 1
                ))
            })?;
            entries.insert(e.id.clone(), e);
        }
        Ok(Inventory {
            unit,
            revision,
            entries: entries.into(),
            consent: crate::plan::prune::consents(cm),
            allow_empty_render: crate::plan::prune::allows_empty_render(cm),
            read_from: Some(name),
        })
    }
}

/// The key of the inventory ConfigMaps, for LIST calls.
pub fn config_map_key(name: &str) -> ObjectKey {
    ObjectKey {
        group: Default::default(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: Some(AGENT_NAMESPACE.into()),
        name: name.into(),
    }
}

/// This fleet's inventories in the cluster, by unit path (one LIST; see [`from_config_maps`]).
pub async fn read_all(
    cluster: &Cluster,
    fleet: &FleetScope,
    declared: impl Fn(&str) -> bool,
) -> Result<(BTreeMap<String, Inventory>, Vec<InventoryError>, Foreign), ApplyError> {
    let items = cluster
        .list(
            &config_map_key(""),
            Some(&format!("{INVENTORY_LABEL}=true")),
        )
        .await?;
    Ok(from_config_maps(items, fleet, declared))
}

/// A ConfigMap of [`AGENT_NAMESPACE`] labelled [`INVENTORY_LABEL`], decoded: whose it says it
/// is, and the inventory or why it does not read (see [`decode_config_maps`]), and the
/// ConfigMap's name and resourceVersion (what a decoding can be kept by).
#[derive(Debug, Clone)]
pub struct Decoded(
    Whose,
    Result<Inventory, InventoryError>,
    Option<(String, String)>,
);

/// The inventories among `config_maps` (those in [`AGENT_NAMESPACE`] labelled
/// [`INVENTORY_LABEL`]), decoded, as the fleet `fleet` sees them; another fleet's that does not
/// read is left out. What [`assemble`] makes the fleet's inventories of.
pub fn decode_config_maps(
    config_maps: impl IntoIterator<Item = Value>,
    fleet: &FleetScope,
) -> Vec<Decoded> {
    decode_config_maps_after(config_maps, fleet, &[])
}

/// [`decode_config_maps`], keeping the decoding in `earlier` (by [`decode_config_maps`] for the
/// same fleet) of each ConfigMap found at the same resourceVersion: a commit changes a few
/// inventories of a thousand.
pub fn decode_config_maps_after(
    config_maps: impl IntoIterator<Item = Value>,
    fleet: &FleetScope,
    earlier: &[Decoded],
) -> Vec<Decoded> {
    let kept: std::collections::HashMap<&(String, String), &Decoded> = (earlier.iter())
        .filter_map(|d| Some((d.2.as_ref()?, d)))
        .collect();
    let version = |cm: &Value| {
        let at = |p: &str| cm.pointer(p).and_then(Value::as_str).map(str::to_string);
        Some((at("/metadata/name")?, at("/metadata/resourceVersion")?))
    };
    let label = format!("/metadata/labels/{}", INVENTORY_LABEL.replace('/', "~1"));
    let ours = |cm: &Value| {
        cm.pointer("/metadata/namespace").and_then(Value::as_str) == Some(AGENT_NAMESPACE)
            && cm.pointer(&label).and_then(Value::as_str) == Some("true")
    };
    (config_maps.into_iter().filter(ours))
        .filter_map(|cm| {
            let version = version(&cm);
            if let Some(d) = version.as_ref().and_then(|v| kept.get(v)) {
                return Some((*d).clone());
            }
            let whose = fleet.whose(scope::fleet_of(&cm));
            match (Inventory::from_config_map(&cm), &whose) {
                (Err(e), Whose::Fleet(_)) => {
                    tracing::debug!(error = %e, "another fleet's inventory does not read");
                    None
                }
                (read, _) => Some(Decoded(whose, read, version)),
            }
        })
        .collect()
}

/// This fleet's inventories among `config_maps` (those in [`AGENT_NAMESPACE`] labelled
/// [`INVENTORY_LABEL`]), by unit; the ones that could not be read (their units prune nothing);
/// and the other fleets' (left alone). An inventory that names no fleet is this fleet's when
/// `declared` (the revision declares its unit), else left alone as well. Of two inventories of
/// one unit, the one this fleet wrote counts.
pub fn from_config_maps(
    config_maps: impl IntoIterator<Item = Value>,
    fleet: &FleetScope,
    declared: impl Fn(&str) -> bool,
) -> (BTreeMap<String, Inventory>, Vec<InventoryError>, Foreign) {
    assemble(&decode_config_maps(config_maps, fleet), fleet, declared)
}

/// [`from_config_maps`] of the ConfigMaps `decoded` (by [`decode_config_maps`] for `fleet`).
pub fn assemble(
    decoded: &[Decoded],
    fleet: &FleetScope,
    declared: impl Fn(&str) -> bool,
) -> (BTreeMap<String, Inventory>, Vec<InventoryError>, Foreign) {
    let mut found: BTreeMap<String, Inventory> = BTreeMap::new();
    let mut foreign = Foreign::new();
    let mut errors = Vec::new();
    for Decoded(whose, read, _) in decoded {
        match read {
            Ok(inv) => match whose {
                Whose::Fleet(other) => {
                    (foreign.entry(other.clone()).or_default()).push(inv.unit.clone())
                }
                Whose::Unnamed if !declared(&inv.unit) => foreign
                    .entry(String::new())
                    .or_default()
                    .push(inv.unit.clone()),
                Whose::Ours | Whose::Unnamed => {
                    let ours = name_for(&fleet.name, &inv.unit);
                    let read_from = inv.read_from.clone().filter(|n| *n != ours);
                    let written_by_us = read_from.is_none();
                    match found.get(&inv.unit) {
                        Some(kept) if kept.read_from.is_none() || !written_by_us => {}
                        _ => {
                            let mut inv = inv.clone();
                            inv.read_from = read_from;
                            found.insert(inv.unit.clone(), inv);
                        }
                    }
                }
            },
            Err(e) => errors.push(e.clone()),
        }
    }
    // A ConfigMap some unit applied from git (before units were kept out of the agent's
    // namespace) is that unit's object, never an inventory.
    let applied_from_git: BTreeMap<String, String> = found
        .values()
        .flat_map(|inv| {
            inv.entries
                .keys()
                .filter(|id| {
                    id.group.is_empty()
                        && id.kind == "ConfigMap"
                        && id.namespace.as_deref() == Some(AGENT_NAMESPACE)
                })
                .map(|id| (id.name.clone(), inv.unit.clone()))
        })
        .collect();
    found.retain(|unit, inv| {
        let name = inv
            .read_from
            .clone()
            .unwrap_or_else(|| name_for(&fleet.name, &inv.unit));
        let Some(by) = applied_from_git.get(&name) else {
            return true;
        };
        errors.push(InventoryError {
            name,
            unit: Some(unit.clone()),
            why: format!(
                "the ConfigMap was applied from git by unit {by}: it is not an inventory the agent wrote, and the agent does not act on it until it is deleted"
            ),
        });
        false
    });
    (found, errors, foreign)
}

/// Writes `inventory` as the fleet `fleet`'s (server-side apply), creating its namespace on first
/// use; then removes the ConfigMap it was read from when that had another name (it named no
/// fleet, or the fleet taken over).
pub async fn write(
    cluster: &Cluster,
    inventory: &Inventory,
    fleet: &str,
) -> Result<(), ApplyError> {
    write_config_map(cluster, inventory, fleet).await?;
    if let Some(old) = &inventory.read_from
        && *old != name_for(fleet, &inventory.unit)
    {
        cluster.delete(&config_map_key(old)).await?;
    }
    Ok(())
}

async fn write_config_map(
    cluster: &Cluster,
    inventory: &Inventory,
    fleet: &str,
) -> Result<(), ApplyError> {
    let cm = inventory.to_config_map(fleet);
    let key = ObjectKey::from_object(&cm).expect("inventory has an identity");
    match cluster.apply(&key, &cm, FIELD_MANAGER).await {
        Ok(_) => Ok(()),
        Err(ApplyError::Api { source, .. }) if matches!(source.as_ref(), kube::Error::Api(s) if s.code == 404) =>
        {
            let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": AGENT_NAMESPACE}});
            let ns_key = ObjectKey::from_object(&ns).expect("namespace has an identity");
            cluster.apply(&ns_key, &ns, FIELD_MANAGER).await?;
            cluster.apply(&key, &cm, FIELD_MANAGER).await.map(|_| ())
        }
        Err(e) => Err(e),
    }
}

/// Deletes a unit's inventory once it holds nothing (under the name it was read from, else the
/// name the fleet `fleet` writes).
pub async fn remove(
    cluster: &Cluster,
    inventory: &Inventory,
    fleet: &str,
) -> Result<(), ApplyError> {
    let name = (inventory.read_from.clone()).unwrap_or_else(|| name_for(fleet, &inventory.unit));
    cluster.delete(&config_map_key(&name)).await.map(|_| ())
}

#[cfg(test)]
#[path = "inventory_tests.rs"]
mod tests;

//! The inventory: what the agent applied for each unit, kept in the cluster so that it survives
//! restarts and is shared by replicas. Prune deletes only inventory members that are no longer
//! rendered.
//!
//! One ConfigMap per unit in [`AGENT_NAMESPACE`], labelled [`INVENTORY_LABEL`], its unit path in
//! [`OWNER_ANNOTATION`]. `data.revision` holds the last revision applied to the unit, `data.entries`
//! one JSON object per line: the object's identity and version, the reconcile decision taken for it,
//! and a digest of the body last applied (how a changed desired state is told apart from drift).
//! No object bodies and no Secret values are stored.

use super::{ApplyError, Cluster};

use crate::marks::{AGENT_NAMESPACE, FIELD_MANAGER, INVENTORY_LABEL, OWNER_ANNOTATION};
use crate::object::ObjectKey;
use crate::plan::policy::{Decision, Policy, Provenance};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// An object's identity across API versions: group, kind, namespace, name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Identity {
    pub group: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub namespace: Option<String>,
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
    pub version: String,
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
    pub entries: BTreeMap<Identity, Entry>,
    /// The live ConfigMap carries [`crate::plan::prune::ALLOW_DELETION_ANNOTATION`]`=true`.
    pub consent: bool,
    /// The live ConfigMap carries [`crate::plan::prune::ALLOW_EMPTY_RENDER_ANNOTATION`]`=true`.
    pub allow_empty_render: bool,
}

/// An inventory that does not decode, or that the agent does not trust (written by someone else).
#[derive(Debug, thiserror::Error)]
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

/// The ConfigMap name of a unit's inventory: a readable slug and a digest of the exact path.
pub fn name_for(unit: &str) -> String {
    let slug: String = unit
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let slug: String = slug.trim_matches('-').chars().take(200).collect();
    format!(
        "inventory-{}-{}",
        slug.trim_end_matches('-'),
        &crate::object::sha256_hex(unit.as_bytes())[..10]
    )
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
        self.entries.insert(
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
        self.entries.remove(&Identity::from(key));
    }

    /// The ConfigMap that stores this inventory (for server-side apply).
    pub fn to_config_map(&self) -> Value {
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
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name_for(&self.unit),
                "namespace": AGENT_NAMESPACE,
                "labels": {INVENTORY_LABEL: "true", "app.kubernetes.io/managed-by": "aro-gitops"},
                "annotations": {OWNER_ANNOTATION: self.unit},
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
        if name != name_for(&unit) {
            // Not that unit's inventory: reported, and the unit goes on with its own.
            return Err(InventoryError {
                unit: None,
                ..err(format!(
                    "it says it is the inventory of unit {unit}, whose inventory is {}: the agent does not act on it",
                    name_for(&unit)
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
            entries,
            consent: crate::plan::prune::consents(cm),
            allow_empty_render: crate::plan::prune::allows_empty_render(cm),
        })
    }
}

/// The key of the inventory ConfigMaps, for LIST calls.
pub fn config_map_key(name: &str) -> ObjectKey {
    ObjectKey {
        group: String::new(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: Some(AGENT_NAMESPACE.into()),
        name: name.into(),
    }
}

/// Every inventory in the cluster, by unit path (one LIST). Inventories that do not decode are
/// returned as errors: their units prune nothing.
pub async fn read_all(
    cluster: &Cluster,
) -> Result<(BTreeMap<String, Inventory>, Vec<InventoryError>), ApplyError> {
    let items = cluster
        .list(
            &config_map_key(""),
            Some(&format!("{INVENTORY_LABEL}=true")),
        )
        .await?;
    Ok(from_config_maps(items))
}

/// The inventories among `config_maps` (those in [`AGENT_NAMESPACE`] labelled [`INVENTORY_LABEL`]),
/// by unit, and the ones that could not be read.
pub fn from_config_maps(
    config_maps: impl IntoIterator<Item = Value>,
) -> (BTreeMap<String, Inventory>, Vec<InventoryError>) {
    let mut found = BTreeMap::new();
    let mut errors = Vec::new();
    let label = format!("/metadata/labels/{}", INVENTORY_LABEL.replace('/', "~1"));
    for cm in config_maps {
        if cm.pointer("/metadata/namespace").and_then(Value::as_str) != Some(AGENT_NAMESPACE)
            || cm.pointer(&label).and_then(Value::as_str) != Some("true")
        {
            continue;
        }
        match Inventory::from_config_map(&cm) {
            Ok(inv) => {
                found.insert(inv.unit.clone(), inv);
            }
            Err(e) => errors.push(e),
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
        let name = name_for(&inv.unit);
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
    (found, errors)
}

/// Writes `inventory` (server-side apply), creating its namespace on first use.
pub async fn write(cluster: &Cluster, inventory: &Inventory) -> Result<(), ApplyError> {
    let cm = inventory.to_config_map();
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

/// Deletes a unit's inventory once it holds nothing.
pub async fn remove(cluster: &Cluster, unit: &str) -> Result<(), ApplyError> {
    cluster
        .delete(&config_map_key(&name_for(unit)))
        .await
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(kind: &str, name: &str, version: &str) -> ObjectKey {
        ObjectKey {
            group: "resources.azure.com".into(),
            version: version.into(),
            kind: kind.into(),
            namespace: Some("dev".into()),
            name: name.into(),
        }
    }

    #[test]
    fn names_are_valid_and_distinct_for_similar_paths() {
        let a = name_for("clusters/dev");
        let b = name_for("clusters-dev");
        assert!(a.starts_with("inventory-clusters-dev-"), "{a}");
        assert_ne!(a, b);
        assert!(a.len() <= 253);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        );
        assert!(name_for(&"x/".repeat(300)).len() <= 253);
    }

    #[test]
    fn an_inventory_round_trips_through_its_config_map() {
        let mut inv = Inventory::new("clusters/dev");
        inv.revision = Some("abc".into());
        let created = Decision {
            provenance: Provenance::Created,
            policy: Policy::Manage,
            if_exists: false,
        };
        inv.record(
            &key("ResourceGroup", "rg", "v1api20200601"),
            created,
            Some("d1".into()),
        );
        inv.record(
            &key("ResourceGroup", "other", "v1api20200601"),
            Decision {
                provenance: Provenance::Adopted,
                policy: Policy::Skip,
                if_exists: true,
            },
            None,
        );
        let cm = inv.to_config_map();
        assert_eq!(Inventory::from_config_map(&cm).unwrap(), inv);
    }

    #[test]
    fn identity_ignores_the_api_version() {
        let mut inv = Inventory::new("u");
        let d = Decision {
            provenance: Provenance::Created,
            policy: Policy::Manage,
            if_exists: false,
        };
        inv.record(
            &key("ResourceGroup", "rg", "v1api20200601"),
            d,
            Some("x".into()),
        );
        let newer = key("ResourceGroup", "rg", "v1api20230701");
        assert!(inv.get(&newer).is_some());
        // Re-recording without a digest keeps the last applied one.
        inv.record(&newer, d, None);
        assert_eq!(inv.get(&newer).unwrap().applied.as_deref(), Some("x"));
        assert_eq!(inv.get(&newer).unwrap().version, "v1api20230701");
    }

    #[test]
    fn an_inventory_written_by_another_manager_is_not_trusted() {
        let mut cm = Inventory::new("clusters/dev").to_config_map();
        cm["data"]["entries"] = Value::String(
            r#"{"group":"","kind":"Namespace","name":"victim-ns","version":"v1","provenance":"created","policy":"manage"}"#.into(),
        );
        let ours = json!({"manager": FIELD_MANAGER, "operation": "Apply", "fieldsV1": {"f:data": {"f:entries": {}}}});
        cm["metadata"]["managedFields"] = json!([ours.clone()]);
        assert!(Inventory::from_config_map(&cm).is_ok());
        cm["metadata"]["managedFields"] = json!([ours, {"manager": "kubectl-edit", "operation": "Update",
            "fieldsV1": {"f:data": {"f:entries": {}}}}]);
        let e = Inventory::from_config_map(&cm).unwrap_err();
        assert!(e.to_string().contains("\"kubectl-edit\""), "{e}");
        assert_eq!(e.unit.as_deref(), Some("clusters/dev"));
        // Annotating it (consent to delete) is no write to its data.
        cm["metadata"]["managedFields"] = json!([{"manager": FIELD_MANAGER, "fieldsV1": {"f:data": {"f:entries": {}}}},
            {"manager": "kubectl-annotate", "fieldsV1": {"f:metadata": {"f:annotations": {}}}}]);
        assert!(Inventory::from_config_map(&cm).is_ok());
        // Entries nobody of the agent wrote.
        cm["metadata"]["managedFields"] =
            json!([{"manager": FIELD_MANAGER, "fieldsV1": {"f:metadata": {}}}]);
        assert!(Inventory::from_config_map(&cm).is_err());
    }

    #[test]
    fn trust_is_judged_alike_on_the_facts_the_caches_keep() {
        let mut cm = Inventory::new("clusters/dev").to_config_map();
        cm["data"]["entries"] = Value::String(
            r#"{"group":"","kind":"Namespace","name":"n","version":"v1","provenance":"created","policy":"manage"}"#.into(),
        );
        let ours = json!({"manager": FIELD_MANAGER, "operation": "Apply", "time": "t",
            "fieldsV1": {"f:data": {".": {}, "f:entries": {}, "f:revision": {}}, "f:metadata": {"f:labels": {}}}});
        let cases = [
            json!([ours.clone()]),
            json!([ours.clone(), {"manager": "kubectl-edit", "fieldsV1": {"f:data": {"f:entries": {}}}}]),
            json!([ours.clone(), {"manager": "kubectl-annotate", "fieldsV1": {"f:metadata": {"f:annotations": {}}}}]),
            json!([{"manager": FIELD_MANAGER, "fieldsV1": {"f:metadata": {}}}]),
            json!([{"manager": FIELD_MANAGER, "fieldsV1": {"f:data": {"f:revision": {}}}}]),
            json!([]),
        ];
        for managed in cases {
            let mut whole = cm.clone();
            whole["metadata"]["managedFields"] = managed.clone();
            let mut kept = cm.clone();
            kept["metadata"]["managedFields"] = trust_facts(&managed);
            assert_eq!(distrust(&whole), distrust(&kept), "{managed}");
            assert!(kept.to_string().len() <= whole.to_string().len());
        }
    }

    #[test]
    fn a_config_map_named_for_another_unit_is_no_inventory_of_it() {
        let mut cm = Inventory::new("clusters/dev").to_config_map();
        cm["metadata"]["name"] = Value::String("inventory-forged".into());
        let e = Inventory::from_config_map(&cm).unwrap_err();
        assert!(
            e.to_string()
                .contains("says it is the inventory of unit clusters/dev"),
            "{e}"
        );
        assert_eq!(
            e.unit, None,
            "the real inventory of clusters/dev is not refused for it"
        );
    }

    #[test]
    fn a_config_map_a_unit_applied_is_no_inventory() {
        let victim = Inventory::new("clusters/prod");
        let mut forger = Inventory::new("clusters/evil");
        forger.record(
            &config_map_key(&name_for("clusters/prod")),
            Decision {
                provenance: Provenance::Created,
                policy: Policy::Manage,
                if_exists: false,
            },
            Some("d".into()),
        );
        let (found, errors) = from_config_maps([victim.to_config_map(), forger.to_config_map()]);
        assert_eq!(found.keys().collect::<Vec<_>>(), vec!["clusters/evil"]);
        assert!(
            errors[0]
                .to_string()
                .contains("applied from git by unit clusters/evil")
        );
    }

    #[test]
    fn a_broken_inventory_names_its_config_map() {
        let mut cm = Inventory::new("u").to_config_map();
        cm["data"]["entries"] = Value::String("{not json".into());
        let e = Inventory::from_config_map(&cm).unwrap_err();
        assert!(
            e.to_string()
                .contains("ConfigMap/aro-gitops-system/inventory-u-"),
            "{e}"
        );
        assert!(e.to_string().contains("line 1"), "{e}");
    }
}

//! The Azure resource an ASO object stands for, so that two objects standing for one resource (in
//! two units, or in git and live) are caught before either is applied or deleted.
//!
//! An identity is the ARM id the object's owner chain gives (`spec.owner` names followed through
//! the objects of its unit, or `spec.owner.armId`; the name in Azure is `spec.azureName`, else
//! `metadata.name`), in the subscription of the chain's root: the `spec.subscriptionID` of the
//! AROControlPlane of the cluster whose ARO object the root is embedded in, else the subscription
//! of the credential ASO uses, unknown here and taken as one shared default (so a collision may be
//! reported for objects meant for two subscriptions, never missed for one). ARM ids compare case-insensitively. Kinds whose names are
//! global in Azure (Key Vaults, storage accounts, ...) compare by type and name alone, across
//! subscriptions and resource groups.
//!
//! Objects under `reconcile-policy: skip` still have an identity (a deletion must not destroy what
//! they read), but never collide with each other or with the object that manages the resource:
//! [`AzureIdentity::writes`] says whether the object writes to Azure.

use crate::arm::OwnerRef;
use crate::object::{ObjectKey, Sym};
use serde_json::Value;

/// ARM types whose names are unique in all of Azure (their DNS names derive from them).
pub const GLOBAL_TYPES: [&str; 6] = [
    "microsoft.keyvault/vaults",
    "microsoft.storage/storageaccounts",
    "microsoft.containerregistry/registries",
    "microsoft.cache/redis",
    "microsoft.documentdb/databaseaccounts",
    "microsoft.web/sites",
];

/// The Azure resource an object stands for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AzureIdentity {
    /// What identities compare by: the lowercased ARM id after its subscription, or
    /// `global:<type>/<name>`. (Boxed, the texts keep no spare capacity: a fleet holds the
    /// identities of all its declared and live ASO objects.)
    pub id: Box<str>,
    /// The subscription (lowercased), when known: from an owner's ARM id, or the ARO object.
    /// A fleet names a few: interned.
    pub subscription: Option<Sym>,
    /// The ARM id as the object gives it, for messages.
    pub arm_id: Box<str>,
    /// The object writes to Azure (its policy is not `skip`).
    pub writes: bool,
}

impl AzureIdentity {
    /// Whether both stand for one Azure resource: the same id, in the same subscription or one
    /// of them in a subscription not known here (a conflict may be reported for objects meant for
    /// two subscriptions, never missed for one); global names across subscriptions.
    pub fn same(&self, other: &AzureIdentity) -> bool {
        self.id == other.id
            && (self.id.starts_with("global:")
                || match (&self.subscription, &other.subscription) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                })
    }
}

/// One ASO object of a unit, with the subscription of the ARO object it is embedded in.
pub struct AsoObject<'a> {
    pub key: &'a ObjectKey,
    pub body: &'a Value,
    pub subscription: Option<&'a str>,
}

use crate::object::text_at;

/// Whether `obj` is under `reconcile-policy: skip` (read only, never written).
fn skipped(obj: &Value) -> bool {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(crate::validate::RECONCILE_POLICY))
        .and_then(Value::as_str)
        == Some("skip")
}

/// The owner of `objects[i]` among `objects` (same namespace, kind and name).
fn owner(objects: &[AsoObject], i: usize) -> Option<usize> {
    let OwnerRef::Named { kind, name, .. } = crate::arm::owner_of(objects[i].body) else {
        return None;
    };
    let ns = &objects[i].key.namespace;
    objects
        .iter()
        .position(|o| o.key.kind == kind && o.key.name == name && &o.key.namespace == ns)
}

/// The identity of every object of one unit (`None`: not an ASO kind, or an owner chain that does
/// not resolve: ASO cannot create it either).
pub fn of_unit(objects: &[AsoObject]) -> Vec<Option<AzureIdentity>> {
    let bodies: Vec<&Value> = objects.iter().map(|o| o.body).collect();
    (0..objects.len())
        .map(|i| {
            let o = &objects[i];
            if !crate::kinds::is_aso_group(&o.key.group) {
                return None;
            }
            let arm_id = crate::arm::arm_id_in(o.body, &bodies)?;
            // The subscription of the chain's root (an owner given by ARM id carries its own).
            let mut root = i;
            for _ in 0..16 {
                match owner(objects, root) {
                    Some(p) if p != root => root = p,
                    _ => break,
                }
            }
            let default = format!("/subscriptions/{}", crate::arm::SUBSCRIPTION_ID);
            let (subscription, path) = match arm_id.strip_prefix(&default) {
                Some(rest) => (
                    objects[root].subscription.map(str::to_string),
                    rest.to_string(),
                ),
                None => {
                    let rest = arm_id.strip_prefix("/subscriptions/").unwrap_or(&arm_id);
                    let (sub, path) = rest.split_once('/').unwrap_or((rest, ""));
                    (Some(sub.to_string()), format!("/{path}"))
                }
            };
            let arm_id = match &subscription {
                Some(sub) => format!("/subscriptions/{sub}{path}"),
                None => arm_id,
            };
            let arm_type = crate::arm::arm_type(&o.key.group, &o.key.kind).to_ascii_lowercase();
            let id = if GLOBAL_TYPES.contains(&arm_type.as_str()) {
                format!(
                    "global:{arm_type}/{}",
                    crate::arm::azure_name(o.body).to_ascii_lowercase()
                )
            } else {
                path.to_ascii_lowercase()
            };
            Some(AzureIdentity {
                id: id.into_boxed_str(),
                subscription: subscription.map(|s| Sym::new(&s.to_ascii_lowercase())),
                arm_id: arm_id.into_boxed_str(),
                writes: !skipped(o.body),
            })
        })
        .collect()
}

/// The subscription an ARO object gives the resources it embeds: the `spec.subscriptionID` of its
/// cluster's AROControlPlane (CAPZ's AROCluster and AROMachinePool have none), found among
/// `objects`: in the object's namespace, of the cluster `cluster_of` names.
pub fn subscription_of<'a>(
    aro_object: &Value,
    objects: impl IntoIterator<Item = &'a Value>,
    cluster_of: impl Fn(&Value) -> &str,
) -> Option<&'a str> {
    let namespace = |o: &Value| o.pointer("/metadata/namespace").cloned();
    let cluster = cluster_of(aro_object).to_string();
    objects
        .into_iter()
        .find(|o| {
            o.get("kind").and_then(Value::as_str) == Some("AROControlPlane")
                && namespace(o) == namespace(aro_object)
                && cluster_of(o) == cluster
        })
        .and_then(|acp| text_at(acp, "/spec/subscriptionID"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(group: &str, kind: &str, ns: &str, name: &str) -> ObjectKey {
        ObjectKey {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            namespace: Some(ns.into()),
            name: name.into(),
        }
    }

    fn rg(ns: &str, name: &str, azure_name: &str) -> (ObjectKey, Value) {
        (
            key("resources.azure.com", "ResourceGroup", ns, name),
            json!({"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup",
                   "metadata": {"name": name, "namespace": ns}, "spec": {"azureName": azure_name}}),
        )
    }

    fn vault(ns: &str, name: &str, owner: &str) -> (ObjectKey, Value) {
        (
            key("keyvault.azure.com", "Vault", ns, name),
            json!({"apiVersion": "keyvault.azure.com/v1api20230701", "kind": "Vault",
                   "metadata": {"name": name, "namespace": ns}, "spec": {"owner": {"name": owner}}}),
        )
    }

    fn ids(objs: &[(ObjectKey, Value)], sub: Option<&str>) -> Vec<Option<AzureIdentity>> {
        let v: Vec<AsoObject> = objs
            .iter()
            .map(|(k, b)| AsoObject {
                key: k,
                body: b,
                subscription: sub,
            })
            .collect();
        of_unit(&v)
    }

    #[test]
    fn one_resource_group_in_two_namespaces_is_one_identity() {
        let a = ids(&[rg("aro-dev", "rg", "aro-dev-rg")], Some("sub-1"));
        let b = ids(&[rg("aro-dev2", "other", "ARO-DEV-RG")], Some("SUB-1"));
        assert!(a[0].as_ref().unwrap().same(b[0].as_ref().unwrap()));
        assert_eq!(
            &*a[0].as_ref().unwrap().arm_id,
            "/subscriptions/sub-1/resourceGroups/aro-dev-rg"
        );
        let c = ids(&[rg("aro-dev2", "other", "aro-dev-rg")], Some("sub-2"));
        assert!(!a[0].as_ref().unwrap().same(c[0].as_ref().unwrap()));
        // A subscription not known here may be any: the same resource group, conservatively.
        let d = ids(&[rg("elsewhere", "x", "aro-dev-rg")], None);
        assert!(a[0].as_ref().unwrap().same(d[0].as_ref().unwrap()));
    }

    #[test]
    fn vaults_compare_by_name_across_subscriptions_and_groups() {
        let a = ids(
            &[rg("a", "rg", "rg-a"), vault("a", "kv", "rg")],
            Some("sub-1"),
        );
        let b = ids(
            &[rg("b", "rg", "rg-b"), vault("b", "kv", "rg")],
            Some("sub-2"),
        );
        assert_eq!(
            &*a[1].as_ref().unwrap().id,
            "global:microsoft.keyvault/vaults/kv"
        );
        assert!(a[1].as_ref().unwrap().same(b[1].as_ref().unwrap()));
        assert!(a[1].as_ref().unwrap().arm_id.starts_with(
            "/subscriptions/sub-1/resourceGroups/rg-a/providers/Microsoft.KeyVault/vaults/kv"
        ));
    }

    #[test]
    fn non_aso_kinds_and_unresolved_owners_have_none_and_skip_does_not_write() {
        let cm = (
            key("", "ConfigMap", "a", "x"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
        );
        let orphan = vault("a", "kv", "missing");
        let mut skip = rg("a", "rg", "rg-a");
        skip.1["metadata"]["annotations"] =
            json!({"serviceoperator.azure.com/reconcile-policy": "skip"});
        let got = ids(&[cm, orphan, skip], None);
        assert_eq!(got[0], None);
        assert_eq!(got[1], None);
        assert!(!got[2].as_ref().unwrap().writes);
        assert!(
            got[2]
                .as_ref()
                .unwrap()
                .arm_id
                .contains(crate::arm::SUBSCRIPTION_ID)
        );
    }

    /// The subscription of an AROCluster's or AROMachinePool's resources is their control
    /// plane's: same namespace, same cluster; a `spec.subscriptionID` on the AROCluster itself
    /// (no field of CAPZ's) counts for nothing.
    #[test]
    fn the_subscription_is_the_clusters_control_plane_s() {
        let aro = |kind: &str, ns: &str, cluster: &str, sub: Option<&str>| {
            let mut o =
                json!({"kind": kind, "metadata": {"name": cluster, "namespace": ns}, "spec": {}});
            if let Some(sub) = sub {
                o["spec"]["subscriptionID"] = json!(sub);
            }
            o
        };
        fn name(o: &Value) -> &str {
            o.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
        }
        let ac = aro("AROCluster", "a", "c1", Some("wrong"));
        let objects = [
            aro("AROControlPlane", "b", "c1", Some("other-namespace")),
            aro("AROControlPlane", "a", "c2", Some("other-cluster")),
            ac.clone(),
            aro("AROControlPlane", "a", "c1", Some("sub-1")),
        ];
        assert_eq!(subscription_of(&ac, &objects, name), Some("sub-1"));
        assert_eq!(subscription_of(&ac, &objects[..3], name), None);
    }
}

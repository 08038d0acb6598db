//! Reading the live objects of a unit: finding objects by group, kind and name in the cluster's
//! namespace, their embedded resources, conditions, owners. Only identity, `spec` references and
//! `status` are read; a Secret is looked at for its name only.

use crate::object::split_api_version;
use serde_json::Value;

pub(super) const CAPI_GROUP: &str = "cluster.x-k8s.io";
pub(super) const INFRA_GROUP: &str = "infrastructure.cluster.x-k8s.io";
pub(super) const CONTROLPLANE_GROUP: &str = "controlplane.cluster.x-k8s.io";
pub(super) const ARO_GROUP: &str = "redhatopenshift.azure.com";

pub(super) const HCP_CLUSTER: &str = "HcpOpenShiftCluster";
pub(super) const NODE_POOL: &str = "HcpOpenShiftClustersNodePool";
pub(super) const EXTERNAL_AUTH: &str = "HcpOpenShiftClustersExternalAuth";

/// The label CAPI puts on every object of a cluster.
const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";

/// The live objects of one unit, seen from one namespace.
pub(super) struct Live<'a> {
    objects: Vec<&'a Value>,
}

impl<'a> Live<'a> {
    /// Keeps the objects in `namespace` (and those without one).
    pub fn new(objects: &'a [Value], namespace: Option<&str>) -> Self {
        let objects = objects
            .iter()
            .filter(|o| match (namespace_of(o), namespace) {
                (Some(have), Some(want)) => have == want,
                _ => true,
            })
            .collect();
        Live { objects }
    }

    /// Every object of a group and kind, in the order given.
    pub fn of_kind<'s>(
        &'s self,
        group: &'s str,
        kind: &'s str,
    ) -> impl Iterator<Item = &'a Value> + 's {
        self.objects
            .iter()
            .copied()
            .filter(move |o| is_kind(o, group, kind))
    }

    /// The object of this group, kind and name.
    pub fn find(&self, group: &str, kind: &str, name: &str) -> Option<&'a Value> {
        self.of_kind(group, kind).find(|o| name_of(o) == Some(name))
    }
}

/// The group of an object's `apiVersion` (empty for the core group).
pub(super) fn group_of(obj: &Value) -> &str {
    obj.get("apiVersion")
        .and_then(Value::as_str)
        .map(|v| split_api_version(v).0)
        .unwrap_or_default()
}

pub(super) fn kind_of(obj: &Value) -> &str {
    obj.get("kind").and_then(Value::as_str).unwrap_or_default()
}

pub(super) fn is_kind(obj: &Value, group: &str, kind: &str) -> bool {
    kind_of(obj) == kind && group_of(obj) == group
}

pub(super) fn name_of(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

pub(super) fn namespace_of(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// The cluster an object belongs to: its CAPI cluster-name label, else its own name.
pub(super) fn cluster_name_of(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/labels")
        .and_then(|l| l.get(CLUSTER_NAME_LABEL))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .or_else(|| name_of(obj))
}

/// The resources embedded in an ARO kind's `spec.resources`.
pub(super) fn embedded(owner: &Value) -> impl Iterator<Item = &Value> {
    owner
        .pointer("/spec/resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|e| e.is_object())
}

/// The `status` of the condition `type`, when the object has one.
pub(super) fn condition<'v>(obj: &'v Value, type_: &str) -> Option<&'v Value> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

pub(super) fn condition_is_true(obj: &Value, type_: &str) -> bool {
    condition(obj, type_)
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some("True")
}

/// The condition's message, or its reason when it has no message.
pub(super) fn condition_text(obj: &Value, type_: &str) -> Option<String> {
    let c = condition(obj, type_)?;
    let field = |f: &str| {
        c.get(f)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
    };
    field("message")
        .or_else(|| field("reason"))
        .map(str::to_string)
}

/// A boolean at `pointer`, false when absent.
pub(super) fn flag(obj: &Value, pointer: &str) -> bool {
    obj.pointer(pointer).and_then(Value::as_bool) == Some(true)
}

/// Whether `obj` has an ownerReference to the object of this kind and name.
pub(super) fn owned_by(obj: &Value, kind: &str, name: &str) -> bool {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|r| {
            r.get("kind").and_then(Value::as_str) == Some(kind)
                && r.get("name").and_then(Value::as_str) == Some(name)
        })
}

/// Whether `obj` carries the CAPI label naming `cluster`.
pub(super) fn labelled_for(obj: &Value, cluster: &str) -> bool {
    obj.pointer("/metadata/labels")
        .and_then(|l| l.get(CLUSTER_NAME_LABEL))
        .and_then(Value::as_str)
        == Some(cluster)
}

/// Names listed for a person: the first few, then how many more.
pub(super) fn list_names(names: &[String]) -> String {
    const SHOWN: usize = 3;
    let mut out = names
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        out.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    out
}

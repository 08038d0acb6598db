//! The shared applier of the three ARO reconcilers (`aro-reconcilers.md`, "Shared applier"), as
//! a pure decision, and the [`Decision`] every ARO reconciler returns.
//!
//! Given an owner's embedded resources (already mutated) and the ones its gates hold back, the
//! applier decides: the owned-kinds annotation to record on the owner before anything is applied,
//! the applies (controller ownerReference to the owner), the deletions (objects of a recorded
//! kind, controlled by the owner, no longer in `spec.resources`) and `status.resources`.

use super::AroError;
use super::str_at;
use super::world::{embedded_live, find};
use crate::object::{ObjectKey, split_api_version};
use crate::reconcile::readiness::{Readiness, aso_readiness};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// Annotation on the owner listing the kinds it ever applied, recorded before the first one.
pub const OWNED_KINDS_ANNOTATION: &str = "sigs.k8s.io/cluster-api-provider-azure-owned-aso-kinds";

/// An embedded resource not applied now, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub key: ObjectKey,
    /// What it waits for.
    pub on: Vec<ObjectKey>,
    pub reason: String,
    pub message: String,
}

impl Held {
    /// Whether only a person can lift this hold (a node pool its AutoNodePolicy refuses): the
    /// object is then reported failed rather than waiting.
    pub fn needs_person(&self) -> bool {
        [
            super::node_policy::NODE_POLICY_VIOLATION,
            super::node_policy::NODE_POLICY_INVALID,
            crate::identity::NOT_ALLOWED_REASON,
            crate::reconcile::credentials::IDENTITY_ERROR_REASON,
        ]
        .contains(&self.reason.as_str())
    }
}

/// What an ARO reconciler decides for one ARO object, from the objects it sees.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub owner: ObjectKey,
    /// The owned-kinds annotation value to write on the owner before any apply, when it grows.
    pub record_owned_kinds: Option<String>,
    /// Embedded resources to server-side apply: namespace, controller reference, mutators, pause.
    pub applies: Vec<Value>,
    /// Embedded resources held by a gate.
    pub held: Vec<Held>,
    /// Owned objects of a recorded kind no longer in `spec.resources`: to delete (through the
    /// agent's deletion safety).
    pub deletions: Vec<ObjectKey>,
    /// The status to write through the status subresource.
    pub status: Value,
    /// Other writes of the reconciler (partial objects to server-side apply): the AROCluster's
    /// control plane endpoint, the CAPI MachinePool's replicas-managed-by annotation.
    pub patches: Vec<Value>,
    /// A terminal error: nothing is applied or deleted until the spec is fixed.
    pub error: Option<AroError>,
}

impl Decision {
    /// A decision from what the shared applier worked out: a terminal error records, applies and
    /// deletes nothing (the status still says why).
    pub fn assemble(
        owner: ObjectKey,
        applied: Applied,
        held: Vec<Held>,
        status: Value,
        patches: Vec<Value>,
        error: Option<AroError>,
    ) -> Decision {
        let failed = error.is_some();
        Decision {
            owner,
            record_owned_kinds: applied.record_owned_kinds.filter(|_| !failed),
            applies: if failed { vec![] } else { applied.applies },
            held,
            deletions: if failed { vec![] } else { applied.deletions },
            status,
            patches,
            error,
        }
    }
}

/// `Kind.version.group`, the form the owned-kinds annotation records.
pub fn owned_kinds_entry(obj: &Value) -> String {
    let (group, version) = split_api_version(str_at(obj, "/apiVersion").unwrap_or(""));
    format!("{}.{version}.{group}", str_at(obj, "/kind").unwrap_or(""))
}

/// The entries of `owner`'s owned-kinds annotation.
pub fn recorded_kinds(owner: &Value) -> BTreeSet<String> {
    owner
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(OWNED_KINDS_ANNOTATION))
        .and_then(Value::as_str)
        .map(|s| {
            s.split(';')
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `Kind.version.group` → `(group, version, kind)`.
pub fn parse_owned_kind(entry: &str) -> Option<(String, String, String)> {
    let (kind, rest) = entry.split_once('.')?;
    let (version, group) = rest.split_once('.').unwrap_or((rest, ""));
    (!kind.is_empty() && !version.is_empty())
        .then(|| (group.to_string(), version.to_string(), kind.to_string()))
}

/// A controller ownerReference to `owner` (which must be live: it needs the uid).
pub fn controller_ref(owner: &Value) -> Option<Value> {
    Some(json!({
        "apiVersion": str_at(owner, "/apiVersion")?,
        "kind": str_at(owner, "/kind")?,
        "name": str_at(owner, "/metadata/name")?,
        "uid": str_at(owner, "/metadata/uid")?,
        "controller": true,
        "blockOwnerDeletion": true,
    }))
}

/// Makes `owner` the controller of `desired` (its only ownerReference), when `owner` has a uid.
pub fn set_controller(desired: &mut Value, owner: &Value) {
    if let Some(r) = controller_ref(owner) {
        desired["metadata"]["ownerReferences"] = json!([r]);
    }
}

/// Whether `obj` has `owner` (live, with a uid) as its controller.
pub fn controlled_by(obj: &Value, owner: &Value) -> bool {
    str_at(owner, "/metadata/uid").is_some_and(|uid| controller_uid(obj) == Some(uid))
}

/// The uid of `obj`'s controller (its ownerReference with `controller: true`).
pub fn controller_uid(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .and_then(|r| r.get("uid"))
        .and_then(Value::as_str)
}

/// The kinds `owner` recorded in its owned-kinds annotation, as `(group, version, kind)`.
pub fn owned_kinds(owner: &Value) -> Vec<(String, String, String)> {
    recorded_kinds(owner)
        .iter()
        .filter_map(|e| parse_owned_kind(e))
        .collect()
}

/// The applier's share of a decision.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Applied {
    pub record_owned_kinds: Option<String>,
    pub applies: Vec<Value>,
    pub deletions: Vec<ObjectKey>,
    /// `status.resources`, spec order, then the objects being pruned.
    pub resources: Vec<Value>,
}

fn same(a: &Value, b: &Value) -> bool {
    str_at(a, "/kind") == str_at(b, "/kind")
        && str_at(a, "/metadata/name") == str_at(b, "/metadata/name")
}

/// The shared applier: `resources` are the owner's embedded resources as mutated, `held` those a
/// gate holds back; `desired` is the owner as in git, `owner` the live one, `live` the world.
pub fn apply(
    desired: &Value,
    owner: &Value,
    resources: Vec<Value>,
    held: &[Held],
    live: &[Value],
) -> Applied {
    let is_held =
        |r: &Value| ObjectKey::from_object(r).is_ok_and(|k| held.iter().any(|h| h.key == k));
    let applies: Vec<Value> = resources
        .into_iter()
        .filter(|r| !is_held(r))
        .map(|mut r| {
            set_controller(&mut r, owner);
            r
        })
        .collect();
    let recorded = recorded_kinds(owner);
    let mut kinds = recorded.clone();
    kinds.extend(applies.iter().map(owned_kinds_entry));
    let record_owned_kinds =
        (kinds != recorded).then(|| kinds.into_iter().collect::<Vec<_>>().join(";"));
    let wanted = embedded_live(desired, live);
    let recorded_kinds: Vec<(String, String)> = owned_kinds(owner)
        .into_iter()
        .map(|(g, _, k)| (g, k))
        .collect();
    let mut leaving: Vec<&Value> = live
        .iter()
        .filter(|o| str_at(o, "/metadata/namespace") == str_at(owner, "/metadata/namespace"))
        .filter(|o| {
            let (group, _) = split_api_version(str_at(o, "/apiVersion").unwrap_or(""));
            let kind = str_at(o, "/kind").unwrap_or("");
            recorded_kinds.iter().any(|(g, k)| g == group && k == kind)
        })
        .filter(|o| controlled_by(o, owner))
        .filter(|o| !wanted.iter().any(|(e, _)| same(e, o)))
        .collect();
    leaving.sort_by_key(|o| ObjectKey::from_object(o).ok());
    let deletions = leaving
        .iter()
        .filter_map(|o| ObjectKey::from_object(o).ok())
        .collect();
    let mut resources: Vec<Value> = wanted
        .iter()
        .map(|(e, found)| resource_entry(e, *found, false))
        .collect();
    resources.extend(leaving.iter().map(|o| resource_entry(o, Some(o), true)));
    Applied {
        record_owned_kinds,
        applies,
        deletions,
        resources,
    }
}

/// One `status.resources[]` entry: `{resource: {group, version, kind, name}, ready}` (CAPZ's
/// shape: no message; why a resource is not ready is on its conditions and in the report);
/// `leaving`: the object is being pruned, never ready.
fn resource_entry(entry: &Value, found: Option<&Value>, leaving: bool) -> Value {
    let (group, version) = split_api_version(str_at(entry, "/apiVersion").unwrap_or(""));
    let ready = !leaving && found.is_some_and(|o| aso_readiness(o) == Readiness::Ready);
    json!({
        "resource": {"group": group, "version": version, "kind": str_at(entry, "/kind"), "name": str_at(entry, "/metadata/name")},
        "ready": ready,
    })
}

/// Holds every one of `resources` on `on`, for `reason`.
pub fn hold_all(resources: &[Value], on: &ObjectKey, reason: &str, message: &str) -> Vec<Held> {
    resources
        .iter()
        .filter_map(|r| ObjectKey::from_object(r).ok())
        .map(|key| Held {
            key,
            on: vec![on.clone()],
            reason: reason.into(),
            message: message.into(),
        })
        .collect()
}

/// The live owner of a decision: `desired`'s live counterpart.
pub fn live_owner<'a>(desired: &Value, live: &'a [Value]) -> Option<&'a Value> {
    find(
        live,
        desired,
        str_at(desired, "/kind").unwrap_or(""),
        str_at(desired, "/metadata/name").unwrap_or(""),
    )
}

#[cfg(test)]
#[allow(clippy::type_complexity)] // tables of tuples
mod tests {
    use super::*;

    fn owner(annotation: Option<&str>) -> Value {
        let mut o = json!({"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "AROControlPlane",
        "metadata": {"name": "cp", "namespace": "ns", "uid": "u-1"},
        "spec": {"resources": [
            {"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup", "metadata": {"name": "rg"}},
            {"apiVersion": "network.azure.com/v1api20201101", "kind": "VirtualNetwork", "metadata": {"name": "vnet"}}
        ]}});
        if let Some(a) = annotation {
            o["metadata"]["annotations"] = json!({OWNED_KINDS_ANNOTATION: a});
        }
        o
    }

    fn embedded(o: &Value) -> Vec<Value> {
        o["spec"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let mut r = r.clone();
                r["metadata"]["namespace"] = json!("ns");
                r
            })
            .collect()
    }

    fn live_obj(api: &str, kind: &str, name: &str, controller_uid: Option<&str>) -> Value {
        let mut o = json!({"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "ns", "generation": 1},
            "status": {"conditions": [{"type": "Ready", "status": "True", "observedGeneration": 1}]}});
        if let Some(uid) = controller_uid {
            o["metadata"]["ownerReferences"] = json!([{"uid": uid, "controller": true}]);
        }
        o
    }

    #[test]
    fn owned_kinds_are_recorded_before_anything_is_applied() {
        let cases: Vec<(&str, Option<&str>, Vec<&str>, Option<&str>)> = vec![
            (
                "nothing recorded: both kinds",
                None,
                vec![],
                Some(
                    "ResourceGroup.v1api20200601.resources.azure.com;VirtualNetwork.v1api20201101.network.azure.com",
                ),
            ),
            (
                "all recorded: no write",
                Some(
                    "VirtualNetwork.v1api20201101.network.azure.com;ResourceGroup.v1api20200601.resources.azure.com",
                ),
                vec![],
                None,
            ),
            (
                "a held kind is not recorded yet",
                None,
                vec!["vnet"],
                Some("ResourceGroup.v1api20200601.resources.azure.com"),
            ),
            (
                "earlier kinds stay recorded",
                Some("Vault.v1api20230701.keyvault.azure.com"),
                vec!["vnet"],
                Some(
                    "ResourceGroup.v1api20200601.resources.azure.com;Vault.v1api20230701.keyvault.azure.com",
                ),
            ),
        ];
        for (name, annotation, held_names, want) in cases {
            let o = owner(annotation);
            let res = embedded(&o);
            let held: Vec<Held> = res
                .iter()
                .filter(|r| held_names.contains(&r["metadata"]["name"].as_str().unwrap()))
                .flat_map(|r| {
                    hold_all(
                        std::slice::from_ref(r),
                        &ObjectKey::from_object(&o).unwrap(),
                        "R",
                        "m",
                    )
                })
                .collect();
            let a = apply(&o, &o, res, &held, &[]);
            assert_eq!(a.record_owned_kinds.as_deref(), want, "case {name}");
            assert_eq!(a.applies.len(), 2 - held_names.len(), "case {name}");
            for r in &a.applies {
                assert_eq!(
                    r["metadata"]["ownerReferences"][0]["uid"], "u-1",
                    "case {name}"
                );
                assert_eq!(r["metadata"]["ownerReferences"][0]["controller"], true);
            }
        }
    }

    #[test]
    fn owned_objects_of_recorded_kinds_left_out_of_spec_are_deleted_and_listed() {
        let o = owner(Some(
            "ResourceGroup.v1api20200601.resources.azure.com;VirtualNetwork.v1api20201101.network.azure.com",
        ));
        let live = vec![
            live_obj(
                "resources.azure.com/v1api20200601",
                "ResourceGroup",
                "rg",
                Some("u-1"),
            ),
            // Left git, controlled by this owner: deleted.
            live_obj(
                "resources.azure.com/v1api20200601",
                "ResourceGroup",
                "old-rg",
                Some("u-1"),
            ),
            // Controlled by another owner, or by none: not ours.
            live_obj(
                "resources.azure.com/v1api20200601",
                "ResourceGroup",
                "theirs",
                Some("u-2"),
            ),
            live_obj(
                "resources.azure.com/v1api20200601",
                "ResourceGroup",
                "free",
                None,
            ),
            // A kind never recorded: not ours to prune.
            live_obj(
                "keyvault.azure.com/v1api20230701",
                "Vault",
                "kv",
                Some("u-1"),
            ),
        ];
        let a = apply(&o, &o, embedded(&o), &[], &live);
        let names: Vec<&str> = a.deletions.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["old-rg"]);
        let listed: Vec<(&str, bool)> = a
            .resources
            .iter()
            .map(|r| (r["resource"]["name"].as_str().unwrap(), r["ready"] == true))
            .collect();
        assert_eq!(listed, [("rg", true), ("vnet", false), ("old-rg", false)]);
        assert!(a.resources.iter().all(|r| r.get("message").is_none()));
        assert_eq!(
            a.resources[0]["resource"],
            json!({"group": "resources.azure.com", "version": "v1api20200601", "kind": "ResourceGroup", "name": "rg"})
        );
    }

    #[test]
    fn entries_and_references() {
        assert_eq!(
            parse_owned_kind("HcpOpenShiftCluster.v1api20240610preview.redhatopenshift.azure.com"),
            Some((
                "redhatopenshift.azure.com".into(),
                "v1api20240610preview".into(),
                "HcpOpenShiftCluster".into()
            ))
        );
        assert_eq!(
            parse_owned_kind("Secret.v1."),
            Some(("".into(), "v1".into(), "Secret".into()))
        );
        assert_eq!(parse_owned_kind("nonsense"), None);
        let hcp = json!({"apiVersion": "redhatopenshift.azure.com/v1api20240610preview", "kind": "HcpOpenShiftCluster"});
        assert_eq!(
            owned_kinds_entry(&hcp),
            "HcpOpenShiftCluster.v1api20240610preview.redhatopenshift.azure.com"
        );
        let mut o = owner(None);
        assert!(controlled_by(&live_obj("a/v1", "X", "x", Some("u-1")), &o));
        o["metadata"].as_object_mut().unwrap().remove("uid");
        assert!(
            controller_ref(&o).is_none(),
            "a controller needs a live owner"
        );
        assert!(!controlled_by(&live_obj("a/v1", "X", "x", Some("u-1")), &o));
    }
}

//! Deletion of an ARO object in reverse order (`aro-reconcilers.md`, "Deletion"), as a pure decision.
//!
//! AROCluster, AROControlPlane and AROMachinePool carry a finalizer of their own while they own
//! resources. Once one is deleted (it has a `deletionTimestamp`), [`decide`] reads the live objects
//! of its namespace and says which of the resources it controls to delete now, which wait and for
//! what, and whether the finalizer may be released: only when every resource it controls is gone.
//!
//! Across one cluster (its ARO objects share the `cluster.x-k8s.io/cluster-name`), the order is the
//! dependency chain read backwards, each stage waiting until the one before is gone:
//! 1. ExternalAuth and node pools;
//! 2. the HcpOpenShiftCluster;
//! 3. anything else the control plane or the node pools embed;
//! 4. the infrastructure (what the AROCluster embeds).
//!
//! Within a stage an object waits for the objects that depend on it (ASO owners and references, the
//! edges of [`crate::plan::graph`]), so a subnet goes before its virtual network and the resource
//! group last.
//!
//! Resources under `reconcile-policy: skip` are never deleted by the agent and hold nothing back:
//! garbage collection takes the Kubernetes object once the owner is gone, and ASO leaves the Azure
//! resource alone. A paused owner (or cluster) deletes nothing and keeps its finalizer.

use super::applier::controller_uid;
use super::embedded::{cluster_name, is_paused};
use super::str_at;
use crate::kinds::{EXTERNAL_AUTH, HCP_CLUSTER, NODE_POOL, is_aro_kind};
use crate::object::{ObjectKey, finalizers};
use crate::plan::graph::{self, Node};
use crate::plan::policy::{Policy, declared};
use serde_json::Value;

/// The finalizer of an AROCluster.
pub const CLUSTER_FINALIZER: &str = "arocluster/finalizer";
/// The finalizer of an AROControlPlane.
pub const CONTROL_PLANE_FINALIZER: &str = "arocontrolplanes/finalizer";
/// The finalizer of an AROMachinePool.
pub const MACHINE_POOL_FINALIZER: &str = "aromachinepool/finalizer";

/// The finalizer of an ARO kind (`None` for any other kind).
pub fn finalizer_for(kind: &str) -> Option<&'static str> {
    match kind {
        "AROCluster" => Some(CLUSTER_FINALIZER),
        "AROControlPlane" => Some(CONTROL_PLANE_FINALIZER),
        "AROMachinePool" => Some(MACHINE_POOL_FINALIZER),
        _ => None,
    }
}

/// Whether `obj` is being deleted (it has a `deletionTimestamp`).
pub fn is_deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

/// Whether `obj` (an ARO object) carries the finalizer of its kind.
pub fn holds_finalizer(obj: &Value) -> bool {
    str_at(obj, "/kind")
        .and_then(finalizer_for)
        .is_some_and(|f| finalizers(obj).iter().any(|x| x == f))
}

/// `obj`'s finalizers without the one of its kind, in order (what to leave when releasing it).
pub fn without_own_finalizer(obj: &Value) -> Vec<String> {
    let own = str_at(obj, "/kind").and_then(finalizer_for);
    finalizers(obj)
        .into_iter()
        .filter(|f| Some(f.as_str()) != own)
        .collect()
}

/// What happens now to one resource the deleted owner controls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send its delete now.
    Delete,
    /// Its delete was sent; it is going.
    Going,
    /// Not yet: these objects must be gone first. `stuck`: some of them are not being deleted and
    /// their owner is not either, so only a person can move it on.
    Wait { on: Vec<ObjectKey>, stuck: bool },
    /// `reconcile-policy: skip`: the agent never deletes it; it holds nothing back.
    Left,
    /// The owner or its cluster is paused: nothing is deleted until it is resumed.
    Paused,
}

/// The decision for one deleted ARO object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deletion {
    /// Every live resource the owner controls, and what happens to it now.
    pub steps: Vec<(ObjectKey, Step)>,
    /// The owner's finalizer may be removed: nothing it controls is left (but `skip` ones).
    pub release: bool,
}

impl Deletion {
    /// The resources to send a delete for now.
    pub fn to_delete(&self) -> impl Iterator<Item = &ObjectKey> {
        self.steps
            .iter()
            .filter(|(_, s)| *s == Step::Delete)
            .map(|(k, _)| k)
    }
}

/// One live resource of the owner's cluster, controlled by one of the cluster's ARO objects.
struct Member<'a> {
    key: ObjectKey,
    object: &'a Value,
    stage: u8,
    /// The uid of the ARO object that controls it.
    controller: &'a str,
}

/// The stage of a resource in the deletion order (lower goes first; see the module header).
fn stage(kind: &str, controller_kind: &str) -> u8 {
    match kind {
        NODE_POOL | EXTERNAL_AUTH => 0,
        HCP_CLUSTER => 1,
        _ if controller_kind == "AROCluster" => 3,
        _ => 2,
    }
}

/// Decides the next step of the deletion of `owner` (an ARO object with a `deletionTimestamp`).
/// `live` holds the live objects of its namespace: the ARO objects, their CAPI Cluster, and the
/// resources of every kind they recorded as owned.
pub fn decide(owner: &Value, live: &[Value]) -> Deletion {
    let namespace = str_at(owner, "/metadata/namespace");
    let uid = str_at(owner, "/metadata/uid").unwrap_or_default();
    let cluster = cluster_name(owner);
    let in_namespace = |o: &&Value| str_at(o, "/metadata/namespace") == namespace;
    let capi_cluster = live.iter().filter(in_namespace).find(|o| {
        str_at(o, "/kind") == Some("Cluster")
            && str_at(o, "/apiVersion").is_some_and(|a| a.starts_with("cluster.x-k8s.io/"))
            && str_at(o, "/metadata/name") == Some(cluster)
    });
    let paused = is_paused(owner, capi_cluster);
    // The ARO objects of the owner's cluster: (uid, kind, being deleted).
    let peers: Vec<(&str, &str, bool)> = live
        .iter()
        .filter(in_namespace)
        .filter(|o| {
            let (group, kind) = (
                crate::object::split_api_version(str_at(o, "/apiVersion").unwrap_or("")).0,
                str_at(o, "/kind").unwrap_or(""),
            );
            is_aro_kind(group, kind) && cluster_name(o) == cluster
        })
        .filter_map(|o| {
            Some((
                str_at(o, "/metadata/uid")?,
                str_at(o, "/kind")?,
                is_deleting(o),
            ))
        })
        .chain(std::iter::once((
            uid,
            str_at(owner, "/kind").unwrap_or(""),
            true,
        )))
        .collect();
    let members: Vec<Member> = live
        .iter()
        .filter(in_namespace)
        .filter_map(|o| {
            let controller = controller_uid(o)?;
            let (_, controller_kind, _) = peers.iter().find(|(u, _, _)| *u == controller)?;
            let key = ObjectKey::from_object(o).ok()?;
            Some(Member {
                stage: stage(&key.kind, controller_kind),
                key,
                object: o,
                controller,
            })
        })
        .collect();
    let nodes: Vec<Node> = members
        .iter()
        .map(|m| Node {
            key: m.key.clone(),
            object: m.object,
            embedded_in: None,
        })
        .collect();
    let g = graph::build(&nodes);
    let skipped = |m: &Member| declared(m.object) == Policy::Skip;
    let going_by_itself = |m: &Member| {
        is_deleting(m.object)
            || peers
                .iter()
                .any(|(u, _, deleting)| *u == m.controller && *deleting)
    };
    let mut steps = Vec::new();
    for (i, m) in members.iter().enumerate() {
        if m.controller != uid {
            continue;
        }
        let step = if skipped(m) {
            Step::Left
        } else if paused {
            Step::Paused
        } else if is_deleting(m.object) {
            Step::Going
        } else {
            let dependents = g.dependents(i);
            let first: Vec<&Member> = members
                .iter()
                .enumerate()
                .filter(|(j, o)| {
                    *j != i
                        && !skipped(o)
                        && (o.stage < m.stage || (o.stage == m.stage && dependents.contains(j)))
                })
                .map(|(_, o)| o)
                .collect();
            if first.is_empty() {
                Step::Delete
            } else {
                Step::Wait {
                    on: first.iter().map(|o| o.key.clone()).collect(),
                    stuck: first.iter().any(|o| !going_by_itself(o)),
                }
            }
        };
        steps.push((m.key.clone(), step));
    }
    let release = !paused && steps.iter().all(|(_, s)| *s == Step::Left);
    Deletion { steps, release }
}

#[cfg(test)]
#[path = "deletion_tests.rs"]
mod tests;

//! The kinds a cluster runs its workloads with: Pods, Nodes, PersistentVolumeClaims, batch Jobs
//! and apps ReplicaSets, served as kube-apiserver alone serves them. No scheduler, kubelet or
//! controller acts on them (the real cluster the fidelity test measures against runs none of
//! those either): a Pod stays Pending, a Job never starts one, a claim is never bound.
//!
//! Two steps, as upstream orders them:
//! - [`defaults`]: the decoder's `SetDefaults_*` of these kinds, before field management
//!   records the request (so the writer owns what they set);
//! - [`admit_create`]: what each kind's strategy (`PrepareForCreate`) and kube-apiserver's
//!   default admission plugins set on a new object after that, owned by no manager: a Pod's
//!   service account, token volume, tolerations, priority and status; a Job's generated selector;
//!   a claim's protection finalizer; a Node's not-ready taint.

use super::defaults::or_set;
use super::error::ApiError;
use super::objects::Target;
use super::state::Txn;
use serde_json::{Map, Value, json};
use std::sync::Arc;

mod pod;

/// The decoder's defaults of these kinds (beyond the pod template's, which the caller applies).
pub(super) fn defaults(group: &str, kind: &str, obj: &mut Value) {
    match (group, kind) {
        ("", "Pod") => pod::defaults(obj),
        ("", "PersistentVolumeClaim") => {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                or_set(spec, "volumeMode", json!("Filesystem"));
            }
        }
        ("apps", "ReplicaSet") => {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                or_set(spec, "replicas", json!(1));
            }
        }
        ("batch", "Job") => job_defaults(obj),
        _ => {}
    }
}

/// What a new object of these kinds gets after field management recorded the request; a Pod
/// naming a service account or priority class that does not exist is refused (403), as the
/// admission plugins refuse it.
pub(super) fn admit_create(txn: &Txn, target: &Target, obj: &mut Value) -> Result<(), ApiError> {
    if target.rt.custom {
        return Ok(());
    }
    match (target.rt.group.as_str(), target.rt.kind.as_str()) {
        ("", "Pod") => {
            let namespace = target.namespace.as_deref().unwrap_or("");
            pod::admit(obj, |name| service_account(txn, namespace, name))?
        }
        ("", "PersistentVolumeClaim") => {
            obj["status"] = json!({"phase": "Pending"});
            add_finalizer(obj, "kubernetes.io/pvc-protection");
        }
        ("", "Node") => node_create(obj),
        ("apps", "ReplicaSet") => obj["status"] = json!({"replicas": 0}),
        ("batch", "Job") => job_create(obj),
        _ => {}
    }
    Ok(())
}

/// The status a new Node states, taken out of `obj` while field management records the create:
/// kept, but owned by no manager (upstream resets the status of a kind with a status
/// subresource out of the main resource's managed fields).
pub(super) fn take_unowned_status(target: &Target, obj: &mut Value) -> Option<Value> {
    let is_node = !target.rt.custom && target.rt.group.is_empty() && target.rt.kind == "Node";
    is_node
        .then(|| obj.as_object_mut().and_then(|m| m.remove("status")))
        .flatten()
}

/// A Pod removed at once, as kube-apiserver answers it: its graceful deletion with no node to
/// wait for (period 0) marks it deleted (a new generation) just before removing it.
pub(super) fn as_removed(target: &Target, obj: Arc<Value>, now: &str) -> Arc<Value> {
    let is_pod = !target.rt.custom && target.rt.group.is_empty() && target.rt.kind == "Pod";
    if !is_pod || obj.pointer("/metadata/deletionTimestamp").is_some() {
        return obj;
    }
    let mut pod = (*obj).clone();
    let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) else {
        return obj;
    };
    meta.insert("deletionTimestamp".into(), json!(now));
    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
    if let Some(g) = meta.get("generation").and_then(Value::as_i64) {
        meta.insert("generation".into(), json!(g + 1));
    }
    Arc::new(pod)
}

/// The ServiceAccount `name` of `namespace`, as the ServiceAccount admission plugin finds it.
/// `default` always exists: kube's service-account controller creates it in every namespace,
/// a controller this server has not.
fn service_account(txn: &Txn, namespace: &str, name: &str) -> Option<Value> {
    let stored = txn
        .get(&format!("/ServiceAccount/{namespace}/{name}"))
        .map(|v| (*v).clone());
    match stored {
        None if name == "default" => Some(json!({"metadata": {"name": "default"}})),
        other => other,
    }
}

fn add_finalizer(obj: &mut Value, finalizer: &str) {
    let list = &mut obj["metadata"]["finalizers"];
    match list.as_array_mut() {
        Some(l) if l.iter().any(|f| f == finalizer) => {}
        Some(l) => l.push(json!(finalizer)),
        None => *list = json!([finalizer]),
    }
}

/// `SetDefaults_Job`: one completion at a time, six retries, a non-indexed completion mode, not
/// suspended, replacing pods once they are terminating or failed, and a selector the server
/// generates. A Job with no labels takes its template's.
fn job_defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let unset = |s: &Map<String, Value>, k: &str| s.get(k).is_none_or(Value::is_null);
    if unset(spec, "completions") && unset(spec, "parallelism") {
        spec.insert("completions".into(), json!(1));
    }
    or_set(spec, "parallelism", json!(1));
    let per_index = !unset(spec, "backoffLimitPerIndex");
    or_set(
        spec,
        "backoffLimit",
        json!(if per_index { i32::MAX } else { 6 }),
    );
    or_set(spec, "completionMode", json!("NonIndexed"));
    or_set(spec, "suspend", json!(false));
    let replacement = if unset(spec, "podFailurePolicy") {
        "TerminatingOrFailed"
    } else {
        "Failed"
    };
    or_set(spec, "podReplacementPolicy", json!(replacement));
    or_set(spec, "manualSelector", json!(false));
    copy_template_labels(obj);
}

/// A Job without labels of its own takes its pod template's (a default, so applied again when
/// the server has added labels to the template).
fn copy_template_labels(obj: &mut Value) {
    let template = obj
        .pointer("/spec/template/metadata/labels")
        .filter(|l| l.is_object())
        .cloned();
    let own_empty = obj
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    if let (Some(labels), true) = (template, own_empty)
        && obj["metadata"].is_object()
    {
        obj["metadata"]["labels"] = labels;
    }
}

/// The Job labels its pods carry, and the one its generated selector selects by.
const JOB_NAME_LABELS: [&str; 2] = ["job-name", "batch.kubernetes.io/job-name"];
const CONTROLLER_UID_LABELS: [&str; 2] = ["controller-uid", "batch.kubernetes.io/controller-uid"];

/// A new Job: unless its selector is manual, its template is labelled with its name and uid and
/// its selector selects the uid; its status starts empty.
fn job_create(obj: &mut Value) {
    let manual = obj.pointer("/spec/manualSelector") == Some(&json!(true));
    // Labels copied from the template by defaulting are the template's very map upstream (Go
    // shares it): what the server adds to the template shows on the Job too.
    let shared = obj
        .pointer("/metadata/labels")
        .is_some_and(|l| Some(l) == obj.pointer("/spec/template/metadata/labels"));
    if !manual {
        let name = obj.pointer("/metadata/name").cloned().unwrap_or(json!(""));
        let uid = obj.pointer("/metadata/uid").cloned().unwrap_or(json!(""));
        let spec = &mut obj["spec"];
        let labels = &mut spec["template"]["metadata"]["labels"];
        if !labels.is_object() {
            *labels = json!({});
        }
        let labels = labels.as_object_mut().expect("an object");
        for key in JOB_NAME_LABELS {
            labels.entry(key).or_insert_with(|| name.clone());
        }
        for key in CONTROLLER_UID_LABELS {
            labels.entry(key).or_insert_with(|| uid.clone());
        }
        let selector = &mut spec["selector"]["matchLabels"];
        if !selector.is_object() {
            *selector = json!({});
        }
        selector
            .as_object_mut()
            .expect("an object")
            .entry(CONTROLLER_UID_LABELS[1])
            .or_insert(uid);
    }
    obj["status"] = json!({});
    if shared {
        obj["metadata"]["labels"] = obj["spec"]["template"]["metadata"]["labels"].clone();
    }
    copy_template_labels(obj);
}

/// The taint kube-apiserver's TaintNodesByCondition admission puts on every new Node until its
/// kubelet reports it ready.
const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";

/// A new Node: tainted not-ready; its status (a Node may state it on create, as its kubelet
/// registers it) allocating its capacity, and its non-pointer members present (the daemon
/// endpoint's port and the system info, as Go's zero values serialise).
fn node_create(obj: &mut Value) {
    let spec = &mut obj["spec"];
    if !spec.is_object() {
        *spec = json!({});
    }
    let taints = &mut spec["taints"];
    if !taints.is_array() {
        *taints = json!([]);
    }
    let list = taints.as_array_mut().expect("an array");
    if !list
        .iter()
        .any(|t| t["key"] == NOT_READY_TAINT && t["effect"] == "NoSchedule")
    {
        list.push(json!({"key": NOT_READY_TAINT, "effect": "NoSchedule"}));
    }
    let status = &mut obj["status"];
    if !status.is_object() {
        *status = json!({});
    }
    // `SetDefaults_NodeStatus`: what can be allocated is the whole capacity unless stated.
    if let Some(s) = status.as_object_mut()
        && let Some(capacity) = s.get("capacity").filter(|c| !c.is_null()).cloned()
    {
        or_set(s, "allocatable", capacity);
    }
    let endpoint = &mut status["daemonEndpoints"]["kubeletEndpoint"];
    if !endpoint.is_object() {
        *endpoint = json!({});
    }
    if let Some(e) = endpoint.as_object_mut() {
        or_set(e, "Port", json!(0));
    }
    let info = &mut status["nodeInfo"];
    if !info.is_object() {
        *info = json!({});
    }
    if let Some(info) = info.as_object_mut() {
        for field in [
            "machineID",
            "systemUUID",
            "bootID",
            "kernelVersion",
            "osImage",
            "containerRuntimeVersion",
            "kubeletVersion",
            "kubeProxyVersion",
            "operatingSystem",
            "architecture",
        ] {
            or_set(info, field, json!(""));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_gets_its_defaults_and_a_generated_selector() {
        let mut job = json!({"metadata": {"name": "j", "uid": "u"},
            "spec": {"template": {"spec": {"restartPolicy": "Never"}}}});
        defaults("batch", "Job", &mut job);
        let spec = &job["spec"];
        assert_eq!(
            (&spec["completions"], &spec["parallelism"]),
            (&json!(1), &json!(1))
        );
        assert_eq!(spec["backoffLimit"], 6);
        assert_eq!(spec["completionMode"], "NonIndexed");
        assert_eq!(spec["podReplacementPolicy"], "TerminatingOrFailed");
        assert_eq!(
            (&spec["suspend"], &spec["manualSelector"]),
            (&json!(false), &json!(false))
        );
        assert!(job["metadata"].get("labels").is_none());
        job_create(&mut job);
        let want = json!({"job-name": "j", "batch.kubernetes.io/job-name": "j",
            "controller-uid": "u", "batch.kubernetes.io/controller-uid": "u"});
        assert_eq!(job["spec"]["template"]["metadata"]["labels"], want);
        assert_eq!(job["metadata"]["labels"], want);
        assert_eq!(
            job["spec"]["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}})
        );
        assert_eq!(job["status"], json!({}));
    }

    #[test]
    fn parallelism_alone_leaves_completions_unset() {
        let mut job = json!({"spec": {"parallelism": 3, "podFailurePolicy": {"rules": []}}});
        defaults("batch", "Job", &mut job);
        assert!(job["spec"].get("completions").is_none());
        assert_eq!(job["spec"]["podReplacementPolicy"], "Failed");
    }

    #[test]
    fn a_manual_selector_is_left_alone() {
        let mut job = json!({"metadata": {"name": "j", "uid": "u", "labels": {"x": "1"}},
            "spec": {"manualSelector": true, "selector": {"matchLabels": {"x": "1"}},
                "template": {"metadata": {"labels": {"x": "1"}}}}});
        job_create(&mut job);
        assert_eq!(
            job["spec"]["template"]["metadata"]["labels"],
            json!({"x": "1"})
        );
        assert_eq!(job["spec"]["selector"], json!({"matchLabels": {"x": "1"}}));
    }

    #[test]
    fn a_new_node_is_tainted_not_ready_once() {
        let mut node = json!({"metadata": {"name": "n"}});
        node_create(&mut node);
        node_create(&mut node);
        assert_eq!(
            node["spec"]["taints"],
            json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
        );
        assert_eq!(
            node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"],
            0
        );
        assert_eq!(node["status"]["nodeInfo"]["kubeletVersion"], "");
    }

    #[test]
    fn a_removed_pod_is_answered_marked_deleted_and_other_kinds_as_they_were() {
        let reg = crate::controlplane::registry::Registry::new([]);
        let pod = json!({"metadata": {"name": "p", "generation": 1}});
        let pods = Target::of(&reg, "", "pods", Some("n"));
        let removed = as_removed(&pods, Arc::new(pod.clone()), "2026-01-01T00:00:00Z");
        assert_eq!(
            removed["metadata"],
            json!({"name": "p", "generation": 2, "deletionTimestamp": "2026-01-01T00:00:00Z",
                "deletionGracePeriodSeconds": 0})
        );
        let cms = Target::of(&reg, "", "configmaps", Some("n"));
        assert_eq!(*as_removed(&cms, Arc::new(pod.clone()), "t"), pod);
    }

    #[test]
    fn a_claim_and_a_replica_set_get_their_defaults() {
        let mut pvc = json!({"spec": {"accessModes": ["ReadWriteOnce"]}});
        defaults("", "PersistentVolumeClaim", &mut pvc);
        assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
        add_finalizer(&mut pvc, "kubernetes.io/pvc-protection");
        add_finalizer(&mut pvc, "kubernetes.io/pvc-protection");
        assert_eq!(
            pvc["metadata"]["finalizers"],
            json!(["kubernetes.io/pvc-protection"])
        );
        let mut rs = json!({"spec": {}});
        defaults("apps", "ReplicaSet", &mut rs);
        assert_eq!(rs["spec"]["replicas"], 1);
    }
}

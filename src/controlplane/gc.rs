//! Deletion, as kube-apiserver's registry does it: a DELETE marks an object its finalizers hold
//! (adding `orphan` or `foregroundDeletion` as its options ask) or removes it at once; namespaces
//! and CRDs are emptied before they go. What becomes of dependents (ownerReferences) is the
//! collector's work, done after the request, as kube-controller-manager does it (see
//! [`super::collector`] and [`collect`]).

use super::state::{CRD_PREFIX, Txn};
use crate::object::{finalizers, str_at};
use serde_json::{Value, json};
use std::sync::Arc;

/// `propagationPolicy` of a DELETE (or what `orphanDependents` means).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    Orphan,
    Background,
    Foreground,
}

/// The finalizer the collector removes once the dependents that block it are gone.
pub const FOREGROUND: &str = "foregroundDeletion";
/// The finalizer the collector removes once it took the ownerReferences off the dependents.
pub const ORPHAN: &str = "orphan";

/// The storage-key parts: (group, kind, namespace, name).
pub(super) fn key_parts(key: &str) -> (&str, &str, &str, &str) {
    let mut it = key.splitn(4, '/');
    (
        it.next().unwrap_or(""),
        it.next().unwrap_or(""),
        it.next().unwrap_or(""),
        it.next().unwrap_or(""),
    )
}

/// What a kind's DELETE does to dependents when it says nothing, as upstream's strategies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DefaultPolicy {
    /// No collection finalizer is ever added (Events).
    Unsupported,
    /// Dependents are orphaned (core/v1 ReplicationControllers and batch/v1 Jobs, kept so for
    /// compatibility upstream).
    Orphan,
    /// Dependents are deleted by the collector once the owner is gone.
    Background,
}

pub(super) fn default_policy(group: &str, kind: &str) -> DefaultPolicy {
    match (group, kind) {
        ("" | "events.k8s.io", "Event") => DefaultPolicy::Unsupported,
        ("", "ReplicationController") | ("batch", "Job") => DefaultPolicy::Orphan,
        _ => DefaultPolicy::Background,
    }
}

/// The finalizers an object has after a DELETE asking `asked` (`None`: the DELETE said nothing),
/// or `None` when they stay as they are. As upstream: what the DELETE asks wins, else a collection
/// finalizer already there, else the kind's default; the other collection finalizer goes.
pub(super) fn deletion_finalizers(
    current: &[String],
    asked: Option<Propagation>,
    default: DefaultPolicy,
) -> Option<Vec<String>> {
    if default == DefaultPolicy::Unsupported {
        return None;
    }
    let first = current
        .iter()
        .find(|f| *f == ORPHAN || *f == FOREGROUND)
        .map(String::as_str);
    let (orphan, foreground) = match asked {
        Some(p) => (p == Propagation::Orphan, p == Propagation::Foreground),
        None => match first {
            Some(f) => (f == ORPHAN, f == FOREGROUND),
            None => (default == DefaultPolicy::Orphan, false),
        },
    };
    let mut new: Vec<String> = current
        .iter()
        .filter(|f| *f != ORPHAN && *f != FOREGROUND)
        .cloned()
        .collect();
    if orphan {
        new.push(ORPHAN.into());
    }
    if foreground {
        new.push(FOREGROUND.into());
    }
    let set = |l: &[String]| l.iter().cloned().collect::<std::collections::BTreeSet<_>>();
    (set(current) != set(&new)).then_some(new)
}

fn set_finalizers(obj: &mut Value, list: &[String]) {
    if list.is_empty() {
        obj["metadata"]
            .as_object_mut()
            .map(|m| m.remove("finalizers"));
    } else {
        obj["metadata"]["finalizers"] = json!(list);
    }
}

/// Starts deleting the object at `key`. Returns the object as it now stands, or `None` if absent.
pub fn delete(
    txn: &mut Txn,
    key: &str,
    asked: Option<Propagation>,
    now: &str,
) -> Option<Arc<Value>> {
    let obj = txn.get(key)?;
    if txn.is_protected(key) {
        // Requests were refused before getting here; what remains is the collector following an
        // ownerReference, which upstream is refused as well and leaves the namespace as it is.
        return Some(obj);
    }
    let (group, kind, _, name) = key_parts(key);
    let is_namespace = group.is_empty() && kind == "Namespace";
    let is_crd = key.starts_with(CRD_PREFIX);
    let already = obj.pointer("/metadata/deletionTimestamp").is_some();
    let mut obj_now = (*obj).clone();
    let mut held = is_namespace || is_crd; // until emptied, below
    let current = finalizers(&obj);
    let fins = if is_namespace {
        current
    } else {
        deletion_finalizers(&current, asked, default_policy(group, kind)).unwrap_or(current)
    };
    set_finalizers(&mut obj_now, &fins);
    held |= !fins.is_empty();
    if !held {
        return remove(txn, key);
    }
    if !already {
        obj_now["metadata"]["deletionTimestamp"] = json!(now);
        if is_namespace {
            // Upstream's namespace storage marks the deletion without a grace period.
            obj_now["status"] = json!({"phase": "Terminating"});
        } else {
            obj_now["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        }
        // Marking a held object deleted changes its desired state: a kind that counts
        // generations counts this one too, as upstream.
        if let Some(g) = obj_now
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
        {
            obj_now["metadata"]["generation"] = json!(g + 1);
        }
    }
    let staged = if *obj != obj_now {
        txn.put(key, obj_now)
    } else {
        obj.clone()
    };
    if is_namespace {
        // One completion check at the end, not one per object removed.
        txn.defer_namespace(name, true);
        for (k, _) in txn.scan_keys(|k| key_parts(k).2 == name && !k.starts_with("/Namespace/")) {
            delete(txn, &k, None, now);
        }
        txn.defer_namespace(name, false);
    }
    if is_crd && let Some(prefix) = crd_instances_prefix(&staged) {
        for (k, _) in txn.scan(&prefix) {
            delete(txn, &k, None, now);
        }
    }
    Some(try_complete(txn, key).unwrap_or(staged))
}

/// Storage-key prefix of a CRD's instances.
fn crd_instances_prefix(crd: &Value) -> Option<String> {
    let group = str_at(crd, "/spec/group")?;
    let kind = str_at(crd, "/spec/names/kind")?;
    Some(format!("{group}/{kind}/"))
}

/// A deleting namespace or CRD whose holds are gone (emptied, no finalizers left) is removed.
/// Returns the final object if it was removed.
fn try_complete(txn: &mut Txn, key: &str) -> Option<Arc<Value>> {
    let obj = txn.get(key)?;
    obj.pointer("/metadata/deletionTimestamp")?;
    let (group, kind, _, name) = key_parts(key);
    if group.is_empty()
        && kind == "Namespace"
        && !txn
            .scan_keys(|k| key_parts(k).2 == name && !k.starts_with("/Namespace/"))
            .is_empty()
    {
        return None;
    }
    if key.starts_with(CRD_PREFIX)
        && crd_instances_prefix(&obj).is_some_and(|p| !txn.scan(&p).is_empty())
    {
        return None;
    }
    if !finalizers(&obj).is_empty() {
        return None;
    }
    remove(txn, key)
}

/// Removes the object at `key` for good; a namespace or CRD waiting for it to go may complete.
pub fn remove(txn: &mut Txn, key: &str) -> Option<Arc<Value>> {
    let gone = txn.remove(key)?;
    after_removal(txn, key);
    Some(gone)
}

/// An update that left no finalizer on an object being deleted removes it, as upstream: watchers
/// see it DELETED as it was stored (no MODIFIED first); the writer is answered `updated`.
pub fn remove_finalized(txn: &mut Txn, key: &str, updated: Value) -> Option<Arc<Value>> {
    txn.remove(key)?;
    after_removal(txn, key);
    Some(Arc::new(updated))
}

fn after_removal(txn: &mut Txn, key: &str) {
    let (group, kind, namespace, _) = key_parts(key);
    if !namespace.is_empty() && !txn.namespace_deferred(namespace) {
        try_complete(txn, &format!("/Namespace//{namespace}"));
    }
    for (k, crd) in txn.scan(CRD_PREFIX) {
        if crd.pointer("/metadata/deletionTimestamp").is_some()
            && str_at(&crd, "/spec/group") == Some(group)
            && str_at(&crd, "/spec/names/kind") == Some(kind)
        {
            try_complete(txn, &k);
        }
    }
}

/// Takes `finalizer` off the object at `key`; once none is left, a deleting object goes.
fn drop_finalizer(txn: &mut Txn, key: &str, finalizer: &str) {
    let Some(obj) = txn.get(key) else { return };
    let mut fins = finalizers(&obj);
    fins.retain(|f| f != finalizer);
    let mut updated = (*obj).clone();
    set_finalizers(&mut updated, &fins);
    if fins.is_empty() && obj.pointer("/metadata/deletionTimestamp").is_some() {
        remove_finalized(txn, key, updated);
    } else if updated != *obj {
        txn.put(key, updated);
    }
}

/// What the collector makes of one owner reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OwnerState {
    /// No object of that uid, kind and name where the dependent can name it.
    Absent,
    Present,
    /// Present, deleting, and waiting for its dependents (`foregroundDeletion`).
    Waiting,
}

/// What the collector does to a dependent that is not itself being deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    Keep,
    /// Take off the references to these owner uids (gone, or waiting while another owner stays).
    DropReferences(Vec<String>),
    Delete(Propagation),
}

/// The collector's decision on a dependent, as upstream's garbage collector: kept while an owner
/// stands (dangling references dropped); otherwise deleted, in the foreground when a waiting owner
/// needs its dependents gone first, else as its own collection finalizers say.
pub(super) fn verdict(
    owners: &[(String, OwnerState)],
    has_dependents: bool,
    own_finalizers: &[String],
) -> Verdict {
    let of = |s: OwnerState| owners.iter().filter(move |(_, st)| *st == s);
    if of(OwnerState::Present).next().is_some() {
        let drop: Vec<String> = owners
            .iter()
            .filter(|(_, s)| *s != OwnerState::Present)
            .map(|(u, _)| u.clone())
            .collect();
        return if drop.is_empty() {
            Verdict::Keep
        } else {
            Verdict::DropReferences(drop)
        };
    }
    if of(OwnerState::Waiting).next().is_some() && has_dependents {
        return Verdict::Delete(Propagation::Foreground);
    }
    let first = own_finalizers
        .iter()
        .find(|f| *f == ORPHAN || *f == FOREGROUND);
    Verdict::Delete(match first.map(String::as_str) {
        Some(ORPHAN) => Propagation::Orphan,
        Some(_) => Propagation::Foreground,
        None => Propagation::Background,
    })
}

fn refs_of(obj: &Value) -> &[Value] {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn owner_state(txn: &Txn, dependent_key: &str, reference: &Value) -> OwnerState {
    let uid = reference.get("uid").and_then(Value::as_str).unwrap_or("");
    let Some(owner_key) = txn.key_of_uid(uid) else {
        return OwnerState::Absent;
    };
    let (_, kind, namespace, name) = key_parts(&owner_key);
    let same_scope = namespace.is_empty() || namespace == key_parts(dependent_key).2;
    if !same_scope
        || reference.get("kind").and_then(Value::as_str) != Some(kind)
        || reference.get("name").and_then(Value::as_str) != Some(name)
    {
        return OwnerState::Absent;
    }
    match txn.get(&owner_key) {
        Some(o)
            if o.pointer("/metadata/deletionTimestamp").is_some()
                && finalizers(&o).iter().any(|f| f == FOREGROUND) =>
        {
            OwnerState::Waiting
        }
        Some(_) => OwnerState::Present,
        None => OwnerState::Absent,
    }
}

/// The collector's work on the object at `key`, as kube-controller-manager's garbage collector:
/// a deleting owner with `orphan` frees its dependents, one with `foregroundDeletion` deletes them
/// and goes once no blocking one is left; a dependent without a standing owner is deleted.
pub fn collect(txn: &mut Txn, key: &str, now: &str) {
    let Some(obj) = txn.get(key) else { return };
    let fins = finalizers(&obj);
    let uid = str_at(&obj, "/metadata/uid").unwrap_or("").to_string();
    if obj.pointer("/metadata/deletionTimestamp").is_some() {
        if fins.iter().any(|f| f == ORPHAN) {
            orphan_dependents(txn, &uid);
            drop_finalizer(txn, key, ORPHAN);
        } else if fins.iter().any(|f| f == FOREGROUND) {
            delete_dependents(txn, key, &uid, now);
        }
        return;
    }
    let refs = refs_of(&obj);
    if refs.is_empty() {
        return;
    }
    let owners: Vec<(String, OwnerState)> = refs
        .iter()
        .map(|r| {
            let uid = r.get("uid").and_then(Value::as_str).unwrap_or("");
            (uid.to_string(), owner_state(txn, key, r))
        })
        .collect();
    let has_dependents = !txn.dependents_of(&uid).is_empty();
    match verdict(&owners, has_dependents, &fins) {
        Verdict::Keep => {}
        Verdict::DropReferences(uids) => {
            let mut d = (*obj).clone();
            drop_references(&mut d, &uids);
            txn.put(key, d);
        }
        Verdict::Delete(p) => {
            delete(txn, key, Some(p), now);
        }
    }
}

fn drop_references(obj: &mut Value, uids: &[String]) {
    if let Some(refs) = obj["metadata"]["ownerReferences"].as_array_mut() {
        refs.retain(|r| {
            !r.get("uid")
                .and_then(Value::as_str)
                .is_some_and(|u| uids.iter().any(|d| d == u))
        });
        if refs.is_empty() {
            obj["metadata"]
                .as_object_mut()
                .map(|m| m.remove("ownerReferences"));
        }
    }
}

fn orphan_dependents(txn: &mut Txn, uid: &str) {
    for dep in txn.dependents_of(uid) {
        if let Some(d) = txn.get(&dep) {
            let mut d = (*d).clone();
            drop_references(&mut d, &[uid.to_string()]);
            txn.put(&dep, d);
        }
    }
}

/// A foreground deletion: each dependent not yet deleting is collected (it sees its owner
/// waiting); the owner's finalizer goes once no dependent blocks it (`blockOwnerDeletion`).
fn delete_dependents(txn: &mut Txn, key: &str, uid: &str, now: &str) {
    for dep in txn.dependents_of(uid) {
        if txn
            .get(&dep)
            .is_some_and(|d| d.pointer("/metadata/deletionTimestamp").is_none())
        {
            collect(txn, &dep, now);
        }
    }
    let blocking = txn.dependents_of(uid).into_iter().any(|dep| {
        txn.get(&dep).is_some_and(|d| {
            refs_of(&d).iter().any(|r| {
                r.get("uid").and_then(Value::as_str) == Some(uid)
                    && r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
            })
        })
    });
    if !blocking {
        drop_finalizer(txn, key, FOREGROUND);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::controlplane::state::State;

    fn state() -> (tempfile::TempDir, State) {
        let dir = tempfile::tempdir().unwrap();
        let (_, loaded) = crate::controlplane::store::Store::open(dir.path()).unwrap();
        (dir, State::open(loaded, 1000, 1 << 20).unwrap())
    }

    fn cm(name: &str, owner: Option<(&str, bool)>, fins: &[&str]) -> Value {
        let mut o = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("u-{name}")}});
        if let Some((owner, block)) = owner {
            o["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
                "name": owner, "uid": format!("u-{owner}"), "blockOwnerDeletion": block}]);
        }
        if !fins.is_empty() {
            o["metadata"]["finalizers"] = json!(fins);
        }
        o
    }

    fn key(name: &str) -> String {
        format!("/ConfigMap/ns/{name}")
    }

    #[test]
    fn a_foreground_owner_goes_after_its_blocking_dependents() {
        let (_dir, state) = state();
        let mut txn = state.begin();
        txn.put(&key("owner"), cm("owner", None, &[]));
        txn.put(&key("dep"), cm("dep", Some(("owner", true)), &["x/hold"]));
        let owner = delete(&mut txn, &key("owner"), Some(Propagation::Foreground), "t").unwrap();
        assert_eq!(finalizers(&owner), [FOREGROUND], "marked, not removed");
        collect(&mut txn, &key("owner"), "t");
        let dep = txn.get(&key("dep")).unwrap();
        assert!(dep.pointer("/metadata/deletionTimestamp").is_some());
        assert!(
            txn.get(&key("owner")).is_some(),
            "the held dependent blocks it"
        );
        let mut released = (*dep).clone();
        set_finalizers(&mut released, &[]);
        remove_finalized(&mut txn, &key("dep"), released);
        collect(&mut txn, &key("owner"), "t");
        assert!(txn.get(&key("owner")).is_none());
    }

    #[test]
    fn an_orphaning_owner_frees_its_dependents_then_goes() {
        let (_dir, state) = state();
        let mut txn = state.begin();
        txn.put(&key("owner"), cm("owner", None, &[]));
        txn.put(&key("dep"), cm("dep", Some(("owner", false)), &[]));
        delete(&mut txn, &key("owner"), Some(Propagation::Orphan), "t");
        collect(&mut txn, &key("owner"), "t");
        assert!(txn.get(&key("owner")).is_none());
        let dep = txn.get(&key("dep")).unwrap();
        assert!(dep.pointer("/metadata/ownerReferences").is_none(), "{dep}");
    }

    #[test]
    fn a_dependent_without_its_owner_is_deleted() {
        let (_dir, state) = state();
        let mut txn = state.begin();
        txn.put(&key("dep"), cm("dep", Some(("ghost", false)), &[]));
        txn.put(&key("other"), cm("other", None, &[]));
        let mut wrong_name = cm("kept", Some(("other", false)), &[]);
        wrong_name["metadata"]["ownerReferences"][0]["name"] = json!("renamed");
        txn.put(&key("kept"), cm("kept", Some(("other", false)), &[]));
        txn.put(&key("misnamed"), wrong_name);
        for k in ["dep", "kept", "misnamed"] {
            collect(&mut txn, &key(k), "t");
        }
        assert!(txn.get(&key("dep")).is_none());
        assert!(txn.get(&key("kept")).is_some());
        assert!(
            txn.get(&key("misnamed")).is_none(),
            "an owner is its uid, kind and name"
        );
    }

    fn strings(l: &[&str]) -> Vec<String> {
        l.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_delete_adds_the_collection_finalizer_it_asks_for_and_drops_the_other() {
        let bg = DefaultPolicy::Background;
        let fg = Some(Propagation::Foreground);
        assert_eq!(
            deletion_finalizers(&[], fg, bg),
            Some(strings(&[FOREGROUND]))
        );
        assert_eq!(
            deletion_finalizers(&strings(&["a", ORPHAN]), fg, bg),
            Some(strings(&["a", FOREGROUND]))
        );
        assert_eq!(
            deletion_finalizers(&strings(&[ORPHAN]), Some(Propagation::Background), bg),
            Some(vec![])
        );
        assert_eq!(deletion_finalizers(&strings(&["a"]), None, bg), None);
        assert_eq!(
            deletion_finalizers(&strings(&[FOREGROUND]), None, bg),
            None,
            "a DELETE saying nothing keeps the finalizer there"
        );
    }

    #[test]
    fn a_kinds_default_policy_applies_when_the_delete_says_nothing() {
        assert_eq!(
            deletion_finalizers(&[], None, default_policy("batch", "Job")),
            Some(strings(&[ORPHAN]))
        );
        assert_eq!(
            deletion_finalizers(&[], Some(Propagation::Orphan), default_policy("", "Event")),
            None
        );
        assert_eq!(
            default_policy("apps", "Deployment"),
            DefaultPolicy::Background
        );
    }

    #[test]
    fn a_dependent_stays_while_one_owner_stands_and_loses_the_others() {
        let o = |u: &str, s| (u.to_string(), s);
        assert_eq!(
            verdict(&[o("a", OwnerState::Present)], false, &[]),
            Verdict::Keep
        );
        assert_eq!(
            verdict(
                &[o("a", OwnerState::Present), o("b", OwnerState::Absent)],
                false,
                &[]
            ),
            Verdict::DropReferences(strings(&["b"]))
        );
        assert_eq!(
            verdict(&[o("a", OwnerState::Absent)], true, &[]),
            Verdict::Delete(Propagation::Background)
        );
        assert_eq!(
            verdict(&[o("a", OwnerState::Waiting)], true, &[]),
            Verdict::Delete(Propagation::Foreground)
        );
        assert_eq!(
            verdict(&[o("a", OwnerState::Waiting)], false, &strings(&[ORPHAN])),
            Verdict::Delete(Propagation::Orphan)
        );
    }
}

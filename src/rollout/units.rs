//! What the rollout decision needs to know of a unit, read from its render: the labels of its CAPI
//! Cluster (what wave and window selectors match), its apply-now annotation, and how a revision
//! changes it (through its own folder only, or through what it shares). Pure helpers the
//! controller and `plan` share.

use super::decide::UnitChange;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The API group of CAPI's Cluster.
const CLUSTER_GROUP: &str = "cluster.x-k8s.io";

/// Whether `object` is a CAPI Cluster (`cluster.x-k8s.io`, any version).
fn is_capi_cluster(object: &Value) -> bool {
    let group = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .and_then(|v| v.rsplit_once('/'))
        .map(|(g, _)| g);
    object.get("kind").and_then(Value::as_str) == Some("Cluster") && group == Some(CLUSTER_GROUP)
}

/// The labels of the unit's CAPI Cluster among its rendered `objects` (empty when it renders none,
/// or it has no labels). Non-string values are left out.
pub fn cluster_labels<'a>(
    objects: impl IntoIterator<Item = &'a Value>,
) -> BTreeMap<String, String> {
    objects
        .into_iter()
        .find(|o| is_capi_cluster(o))
        .and_then(|o| o.pointer("/metadata/labels"))
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// The unit's apply-now annotation ([`super::APPLY_NOW_ANNOTATION`]): the first of its rendered
/// `objects` carrying it (its Cluster, usually), trimmed.
pub fn apply_now<'a>(objects: impl IntoIterator<Item = &'a Value>) -> Option<String> {
    objects.into_iter().find_map(|o| {
        o.pointer("/metadata/annotations")?
            .get(super::APPLY_NOW_ANNOTATION)?
            .as_str()
            .map(|v| v.trim().to_string())
    })
}

/// How a revision changes the unit at `unit_path` (`clusters/dev-1`), given whether it renders
/// the same as on the revision it is on, whether a path touches its input closure there
/// (`|p| inputs.touched_by(p)` with its `crate::render::Inputs`: this module sits below the
/// renderer), and the paths changed since:
/// `None` when it renders the same; `Own` when every changed path its closure reads lies in its
/// own folder; `Shared` when one lies outside (a base, a component), or when none of its inputs
/// is among them yet it renders differently (the change cannot be placed: waves hold it). A unit
/// new at the revision has no earlier closure: it is `Own` (the caller says so).
pub fn change_of(
    unit_path: &str,
    renders_same: bool,
    touched_by: impl Fn(&Path) -> bool,
    changed: &[PathBuf],
) -> UnitChange {
    if renders_same {
        return UnitChange::None;
    }
    let folder = Path::new(unit_path);
    let mut touched = changed.iter().filter(|c| touched_by(c)).peekable();
    if touched.peek().is_none() {
        return UnitChange::Shared;
    }
    if touched.all(|c| c.starts_with(folder)) {
        UnitChange::Own
    } else {
        UnitChange::Shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::Inputs;
    use serde_json::json;

    fn cluster(labels: Value) -> Value {
        json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
               "metadata": {"name": "dev-1", "labels": labels}})
    }

    #[test]
    fn labels_come_from_the_capi_cluster() {
        let other = json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "x", "labels": {"env": "wrong"}}});
        let aro = json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
                         "kind": "Cluster", "metadata": {"labels": {"env": "wrong"}}});
        let objects = [other, aro, cluster(json!({"env": "prod", "n": 3}))];
        let labels = cluster_labels(&objects);
        assert_eq!(labels, BTreeMap::from([("env".into(), "prod".into())]));
        assert!(cluster_labels(&objects[..2]).is_empty());
    }

    #[test]
    fn apply_now_is_read_from_any_object() {
        let mut c = cluster(json!({}));
        c["metadata"]["annotations"] = json!({ super::super::APPLY_NOW_ANNOTATION: " abc1234 " });
        let objects = [json!({"kind": "ConfigMap", "metadata": {}}), c];
        assert_eq!(apply_now(&objects).as_deref(), Some("abc1234"));
        assert_eq!(apply_now(&objects[..1]), None);
    }

    fn inputs(files: &[&str]) -> Inputs {
        Inputs::of(files, &[])
    }

    fn paths(p: &[&str]) -> Vec<PathBuf> {
        p.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn a_change_is_own_or_shared_by_where_the_read_paths_lie() {
        let closure = inputs(&[
            "clusters/dev-1/kustomization.yaml",
            "clusters/dev-1/patch.yaml",
            "base/cluster/kustomization.yaml",
        ]);
        let own = paths(&["clusters/dev-1/patch.yaml", "clusters/dev-2/patch.yaml"]);
        let shared = paths(&[
            "clusters/dev-1/patch.yaml",
            "base/cluster/kustomization.yaml",
        ]);
        assert_eq!(
            change_of("clusters/dev-1", true, |p| closure.touched_by(p), &shared),
            UnitChange::None
        );
        assert_eq!(
            change_of("clusters/dev-1", false, |p| closure.touched_by(p), &own),
            UnitChange::Own
        );
        assert_eq!(
            change_of("clusters/dev-1", false, |p| closure.touched_by(p), &shared),
            UnitChange::Shared
        );
        // A folder named like the unit's prefix is not its folder.
        let sibling = inputs(&["clusters/dev-10/x.yaml"]);
        let changed = paths(&["clusters/dev-10/x.yaml"]);
        assert_eq!(
            change_of("clusters/dev-1", false, |p| sibling.touched_by(p), &changed),
            UnitChange::Shared
        );
        // Nothing it reads changed, yet it renders otherwise: held like a shared change.
        assert_eq!(
            change_of("clusters/dev-1", false, |p| closure.touched_by(p), &[]),
            UnitChange::Shared
        );
    }
}

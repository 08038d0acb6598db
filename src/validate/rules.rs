//! Rules that no single-object schema can state: duplicate objects across files, and the ASO
//! reconcile-policy annotations (on top-level objects and on ASO resources embedded in the ARO
//! kinds' `spec.resources`).

use crate::object::{ObjectKey, Origin};
use serde_json::Value;
use std::collections::BTreeMap;

/// The ASO annotation that decides whether the agent creates, updates and deletes a resource.
pub const RECONCILE_POLICY: &str = "serviceoperator.azure.com/reconcile-policy";
/// The policy to take when the Azure resource already exists at create time (the ADR's option 4.2).
pub const RECONCILE_POLICY_IF_EXISTS: &str = "serviceoperator.azure.com/reconcile-policy-if-exists";
/// The values both annotations accept.
pub const POLICY_VALUES: [&str; 3] = ["manage", "skip", "detach-on-delete"];

/// Kinds whose `spec.resources` holds embedded ASO resources.
pub const EMBEDDING_KINDS: [&str; 3] = ["AROCluster", "AROControlPlane", "AROMachinePool"];

/// The embedded resources of `obj` (index in `spec.resources`, entry), when its kind embeds any.
pub fn embedded(obj: &Value) -> Vec<(usize, &Value)> {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    if !EMBEDDING_KINDS.contains(&kind) {
        return Vec::new();
    }
    match obj.pointer("/spec/resources") {
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_object())
            .collect(),
        _ => Vec::new(),
    }
}

/// `/spec/resources/<i> (Kind/name)`: how messages point at an embedded resource.
pub fn embedded_pointer(index: usize, entry: &Value) -> String {
    let kind = entry.get("kind").and_then(Value::as_str).unwrap_or("?");
    let name = entry
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("?");
    format!("/spec/resources/{index} ({kind}/{name})")
}

/// Problems with the reconcile-policy annotations of one object (or embedded resource): each
/// message starts with the pointer of the annotation. `prefix` is prepended to pointers.
pub fn policy_problems(obj: &Value, prefix: &str) -> Vec<String> {
    let Some(annotations) = obj
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    let mut problems = Vec::new();
    for key in [RECONCILE_POLICY, RECONCILE_POLICY_IF_EXISTS] {
        if let Some(value) = annotations.get(key)
            && !value.as_str().is_some_and(|v| POLICY_VALUES.contains(&v))
        {
            let shown = match value {
                Value::String(s) => format!("{s:?}"),
                other => format!("{other} (not a string)"),
            };
            problems.push(format!(
                "{prefix}{}: {shown} is not a reconcile policy: use manage, skip or detach-on-delete",
                annotation_pointer(key)
            ));
        }
    }
    if annotations.contains_key(RECONCILE_POLICY)
        && annotations.contains_key(RECONCILE_POLICY_IF_EXISTS)
    {
        problems.push(format!(
            "{prefix}/metadata/annotations: {RECONCILE_POLICY} and {RECONCILE_POLICY_IF_EXISTS} cannot both be set: \
             keep {RECONCILE_POLICY_IF_EXISTS} to choose the policy only when the Azure resource already exists"
        ));
    }
    problems
}

fn annotation_pointer(key: &str) -> String {
    format!(
        "/metadata/annotations/{}",
        key.replace('~', "~0").replace('/', "~1")
    )
}

/// The identity duplicates are judged by: group, kind, namespace, name (the version does not count).
type DuplicateKey = crate::object::VersionlessId;

/// Where an object was first seen: its file, and for an embedded resource, the owner and index.
#[derive(Debug, Clone)]
pub struct Place {
    pub origin: Origin,
    pub owner: Option<(ObjectKey, usize)>,
}

impl Place {
    fn describe(&self) -> String {
        match &self.owner {
            Some((owner, index)) => format!("{} ({owner} spec.resources[{index}])", self.origin),
            None => self.origin.to_string(),
        }
    }
}

/// Tracks every object seen so far and reports the second (third, ...) definition of one.
#[derive(Default)]
pub struct Duplicates {
    seen: BTreeMap<DuplicateKey, Place>,
}

impl Duplicates {
    /// Records `key` at `place`; if it was seen before, returns the message naming both places.
    pub fn record(&mut self, key: &ObjectKey, place: Place) -> Option<String> {
        let id = key.versionless();
        match self.seen.get(&id) {
            Some(first) => Some(format!(
                "defined twice: in {} and in {}",
                first.describe(),
                place.describe()
            )),
            None => {
                self.seen.insert(id, place);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::PathBuf;

    fn with_annotations(a: Value) -> Value {
        json!({"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup", "metadata": {"name": "rg", "annotations": a}})
    }

    #[test]
    fn accepts_each_known_policy_and_no_annotation() {
        for v in POLICY_VALUES {
            assert!(
                policy_problems(&with_annotations(json!({RECONCILE_POLICY: v})), "").is_empty(),
                "{v}"
            );
            assert!(
                policy_problems(
                    &with_annotations(json!({RECONCILE_POLICY_IF_EXISTS: v})),
                    ""
                )
                .is_empty(),
                "{v}"
            );
        }
        assert!(policy_problems(&json!({"metadata": {"name": "x"}}), "").is_empty());
    }

    #[test]
    fn rejects_unknown_and_non_string_policies() {
        assert_eq!(
            policy_problems(&with_annotations(json!({RECONCILE_POLICY: "Manage"})), ""),
            vec![
                "/metadata/annotations/serviceoperator.azure.com~1reconcile-policy: \"Manage\" is not a reconcile policy: \
                 use manage, skip or detach-on-delete"
            ]
        );
        assert_eq!(
            policy_problems(
                &with_annotations(json!({RECONCILE_POLICY_IF_EXISTS: true})),
                "/spec/resources/0 (Vault/kv)"
            ),
            vec![
                "/spec/resources/0 (Vault/kv)/metadata/annotations/serviceoperator.azure.com~1reconcile-policy-if-exists: \
                 true (not a string) is not a reconcile policy: use manage, skip or detach-on-delete"
            ]
        );
    }

    #[test]
    fn rejects_both_annotations_on_one_object() {
        let problems = policy_problems(
            &with_annotations(
                json!({RECONCILE_POLICY: "manage", RECONCILE_POLICY_IF_EXISTS: "skip"}),
            ),
            "",
        );
        assert_eq!(problems.len(), 1);
        assert!(problems[0].starts_with(
            "/metadata/annotations: serviceoperator.azure.com/reconcile-policy and \
             serviceoperator.azure.com/reconcile-policy-if-exists cannot both be set"
        ));
    }

    #[test]
    fn embedded_only_for_aro_kinds_and_object_entries() {
        let cp = json!({"kind": "AROControlPlane", "spec": {"resources": [{"kind": "A"}, 3, {"kind": "B"}]}});
        let found: Vec<usize> = embedded(&cp).into_iter().map(|(i, _)| i).collect();
        assert_eq!(found, vec![0, 2]);
        assert!(
            embedded(&json!({"kind": "Other", "spec": {"resources": [{"kind": "A"}]}})).is_empty()
        );
        assert_eq!(
            embedded_pointer(2, &json!({"kind": "Vault", "metadata": {"name": "kv"}})),
            "/spec/resources/2 (Vault/kv)"
        );
    }

    #[test]
    fn duplicates_ignore_version_and_name_both_places() {
        let key = |v: &str, ns: &str| ObjectKey {
            group: "g".into(),
            version: v.into(),
            kind: "K".into(),
            namespace: Some(ns.into()),
            name: "n".into(),
        };
        let place = |f: &str| Place {
            origin: Origin {
                file: PathBuf::from(f),
                document: 0,
            },
            owner: None,
        };
        let mut d = Duplicates::default();
        assert_eq!(d.record(&key("v1", "a"), place("a.yaml")), None);
        assert_eq!(d.record(&key("v1", "b"), place("b.yaml")), None);
        assert_eq!(
            d.record(&key("v2", "a"), place("c.yaml")).unwrap(),
            "defined twice: in a.yaml and in c.yaml"
        );
        let owner = (key("v1", "a"), 3);
        assert_eq!(
            d.record(
                &key("v1", "b"),
                Place {
                    origin: Origin {
                        file: "d.yaml".into(),
                        document: 1
                    },
                    owner: Some(owner)
                }
            )
            .unwrap(),
            "defined twice: in b.yaml and in d.yaml (document 2) (K/a/n spec.resources[3])"
        );
    }
}

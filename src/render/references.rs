//! kustomize's name-reference fix-up, for what it can change in a render with `resources` and `namespace`.
//!
//! After everything is accumulated, kustomize rewrites references to objects a transformer renamed or moved.
//! Render v0 renames nothing, so the only references that change are those that carry a namespace and
//! point at an object a kustomization's `namespace` moved:
//! - `subjects` of `rbac.authorization.k8s.io` RoleBindings and ClusterRoleBindings, to `v1` ServiceAccounts;
//! - `webhooks[].clientConfig.service` of `admissionregistration.k8s.io` webhook configurations, to `v1` Services.
//!
//! A reference (a mapping with `name` and maybe `namespace`) is matched as kustomize v5.5 matches it: among
//! the objects the referrer can see, the moved ones of the target kind with that name, in the reference's
//! namespace (as loaded, else as rendered) when it names one; a single match (or several identical ones)
//! gives the reference that object's namespace, several different ones are an error, none leaves it alone.

use super::error::RenderError;
use super::resources::{Resource, cluster_scoped, display_key, effective_namespace, str_at};
use crate::object::split_api_version;
use serde_json::{Map, Value};

/// Updates, in place, the namespace of references to moved ServiceAccounts and Services.
pub fn follow_moved_references(resources: &mut [Resource]) -> Result<(), RenderError> {
    for i in 0..resources.len() {
        let Some(field) = referrer_field(resources[i].object()) else {
            continue;
        };
        let mut updates = Vec::new(); // (entry index, namespace)
        for (n, entry) in entries(resources[i].object(), field)
            .into_iter()
            .enumerate()
        {
            let Some(reference) = entry.and_then(Value::as_object) else {
                continue;
            };
            let referral = select(resources, i, field, n + 1, reference)?;
            if let Some(ns) = referral.filter(|ns| !ns.is_empty()) {
                updates.push((n, ns));
            }
        }
        let object = &mut resources[i].sourced.object;
        for (n, ns) in updates {
            if let Some(reference) = entry_mut(object, field, n) {
                reference.insert("namespace".into(), Value::String(ns));
            }
        }
    }
    Ok(())
}

/// The referring fields kustomize follows for namespace moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// `subjects[]`, referring to ServiceAccounts.
    Subjects,
    /// `webhooks[].clientConfig.service`, referring to Services.
    WebhookServices,
}

impl Field {
    fn target_kind(self) -> &'static str {
        match self {
            Field::Subjects => "ServiceAccount",
            Field::WebhookServices => "Service",
        }
    }

    fn describe(self, n: usize) -> String {
        match self {
            Field::Subjects => format!("subjects entry {n}"),
            Field::WebhookServices => format!("webhooks entry {n} clientConfig.service"),
        }
    }
}

fn referrer_field(obj: &Value) -> Option<Field> {
    let (group, _) = split_api_version(str_at(obj, "/apiVersion"));
    match (group, str_at(obj, "/kind")) {
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            Some(Field::Subjects)
        }
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration",
        ) => Some(Field::WebhookServices),
        _ => None,
    }
}

/// The reference slots of `field` in `obj`, by position (`None` where an entry has no reference).
fn entries(obj: &Value, field: Field) -> Vec<Option<&Value>> {
    let list = match field {
        Field::Subjects => obj.get("subjects"),
        Field::WebhookServices => obj.get("webhooks"),
    };
    let Some(list) = list.and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .map(|entry| match field {
            Field::Subjects => Some(entry),
            Field::WebhookServices => entry.pointer("/clientConfig/service"),
        })
        .collect()
}

fn entry_mut(obj: &mut Value, field: Field, n: usize) -> Option<&mut Map<String, Value>> {
    match field {
        Field::Subjects => obj.get_mut("subjects")?.get_mut(n)?.as_object_mut(),
        Field::WebhookServices => obj
            .get_mut("webhooks")?
            .get_mut(n)?
            .pointer_mut("/clientConfig/service")?
            .as_object_mut(),
    }
}

/// The current namespace of the object `reference` (entry `n` of `field` in `resources[referrer]`) points at,
/// if it points at exactly one moved object.
fn select(
    resources: &[Resource],
    referrer: usize,
    field: Field,
    n: usize,
    reference: &Map<String, Value>,
) -> Result<Option<String>, RenderError> {
    let referrer_res = &resources[referrer];
    let error = |problem: String| RenderError::Reference {
        origin: referrer_res.sourced.origin.clone(),
        id: display_key(referrer_res.object()),
        problem,
    };
    let Some(name) = reference.get("name").and_then(Value::as_str) else {
        return Err(error(format!("{} has no name", field.describe(n))));
    };

    let visible = visible_to(resources, referrer);
    let candidates: Vec<&Resource> = match reference.get("namespace") {
        None => visible,
        Some(ns) => {
            let ns = ns.as_str().unwrap_or_default();
            let by_original: Vec<&Resource> = visible
                .iter()
                .copied()
                .filter(|r| r.original_namespace.as_deref() == Some(ns))
                .collect();
            if by_original.is_empty() {
                visible
                    .into_iter()
                    .filter(|r| effective_namespace(r.object()).as_deref() == Some(ns))
                    .collect()
            } else {
                by_original
            }
        }
    };
    let referrer_ns = effective_namespace(referrer_res.object());
    let matches: Vec<&Resource> = candidates
        .into_iter()
        .filter(|r| {
            let obj = r.object();
            r.moved
                && str_at(obj, "/metadata/name") == name
                && str_at(obj, "/kind") == field.target_kind()
                && split_api_version(str_at(obj, "/apiVersion")).1 == "v1"
                && (referrer_ns.is_none()
                    || cluster_scoped(obj)
                    || str_at(obj, "/kind") == "ServiceAccount"
                    || effective_namespace(obj) == referrer_ns)
        })
        .collect();
    let namespace_of = |r: &Resource| str_at(r.object(), "/metadata/namespace").to_string();
    match matches.as_slice() {
        [] => Ok(None),
        [first, rest @ ..] if rest.iter().all(|r| namespace_of(r) == namespace_of(first)) => {
            Ok(Some(namespace_of(first)))
        }
        several => Err(error(format!(
            "{} (name {name}) could refer to any of {}: found multiple possible referrals; give it a namespace",
            field.describe(n),
            several
                .iter()
                .map(|r| format!("{} ({})", display_key(r.object()), r.sourced.origin))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The objects a referrer can refer to, as kustomize sees it: all of them for a cluster-scoped referrer;
/// otherwise cluster-scoped objects, those in its namespace, and for a RoleBinding those in the namespaces
/// its ServiceAccount subjects name.
fn visible_to(resources: &[Resource], referrer: usize) -> Vec<&Resource> {
    let referrer_obj = resources[referrer].object();
    let Some(referrer_ns) = effective_namespace(referrer_obj) else {
        return resources.iter().collect();
    };
    let subject_namespaces: Vec<&str> = if str_at(referrer_obj, "/kind") == "RoleBinding" {
        referrer_obj
            .get("subjects")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|s| s.get("kind").and_then(Value::as_str) == Some("ServiceAccount"))
            .filter_map(|s| s.get("namespace").and_then(Value::as_str))
            .collect()
    } else {
        Vec::new()
    };
    resources
        .iter()
        .filter(|r| match effective_namespace(r.object()) {
            None => true,
            Some(ns) => {
                ns == referrer_ns
                    || subject_namespaces.contains(&str_at(r.object(), "/metadata/namespace"))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::{Origin, SourcedObject};
    use serde_json::json;

    fn res(object: Value, moved_to: Option<&str>) -> Resource {
        let file = format!("{}.yaml", object["metadata"]["name"].as_str().unwrap());
        let mut r = Resource::loaded(SourcedObject {
            object,
            origin: Origin {
                file: file.into(),
                document: 0,
            },
        });
        if let Some(ns) = moved_to {
            super::super::namespace::set_namespace(&mut r.sourced.object, ns);
            r.moved = true;
        }
        r
    }

    fn sa(name: &str, ns: Option<&str>) -> Value {
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}})
    }

    fn crb(subjects: Value) -> Value {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "crb"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cr"}, "subjects": subjects})
    }

    #[test]
    fn subjects_follow_moved_service_accounts() {
        let mut rs = vec![
            res(sa("ctrl", Some("system")), Some("sys")),
            res(sa("plain", Some("p")), None),
            res(
                crb(json!([
                    {"kind": "ServiceAccount", "name": "ctrl", "namespace": "system"},
                    {"kind": "ServiceAccount", "name": "ctrl"},
                    {"kind": "ServiceAccount", "name": "ctrl", "namespace": "elsewhere"},
                    {"kind": "ServiceAccount", "name": "plain"},
                    {"kind": "User", "name": "ctrl"}
                ])),
                None,
            ),
        ];
        follow_moved_references(&mut rs).unwrap();
        let ns: Vec<Option<&str>> = rs[2].object()["subjects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["namespace"].as_str())
            .collect();
        // kustomize matches by name whatever the subject's kind, hence the User.
        assert_eq!(
            ns,
            [
                Some("sys"),
                Some("sys"),
                Some("elsewhere"),
                None,
                Some("sys")
            ]
        );
    }

    #[test]
    fn webhook_services_follow_moved_services() {
        let mut rs = vec![
            res(
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "wh", "namespace": "system"}}),
                Some("sys"),
            ),
            res(
                json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration", "metadata": {"name": "m"},
                       "webhooks": [{"name": "a", "clientConfig": {"service": {"name": "wh", "namespace": "system", "path": "/m"}}},
                                    {"name": "b", "clientConfig": {"url": "https://x"}}]}),
                None,
            ),
        ];
        follow_moved_references(&mut rs).unwrap();
        assert_eq!(
            rs[1].object()["webhooks"][0]["clientConfig"]["service"],
            json!({"name": "wh", "namespace": "sys", "path": "/m"})
        );
        assert_eq!(
            rs[1].object()["webhooks"][1]["clientConfig"],
            json!({"url": "https://x"})
        );
    }

    #[test]
    fn ambiguous_and_nameless_references_are_errors() {
        let mut rs = vec![
            res(sa("sa", None), Some("a")),
            res(sa("sa", None), Some("b")),
            res(crb(json!([{"kind": "ServiceAccount", "name": "sa"}])), None),
        ];
        let err = follow_moved_references(&mut rs).unwrap_err();
        assert_eq!(
            err.to_string(),
            "crb.yaml: ClusterRoleBinding/crb: subjects entry 1 (name sa) could refer to any of ServiceAccount/a/sa (sa.yaml), \
             ServiceAccount/b/sa (sa.yaml): found multiple possible referrals; give it a namespace"
        );
        let mut rs = vec![res(crb(json!([{"kind": "ServiceAccount"}])), None)];
        assert_eq!(
            follow_moved_references(&mut rs).unwrap_err().to_string(),
            "crb.yaml: ClusterRoleBinding/crb: subjects entry 1 has no name"
        );
    }

    #[test]
    fn a_role_binding_sees_its_namespace_and_its_subjects_namespaces() {
        let rb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "rb", "namespace": "q"},
                        "subjects": [{"kind": "ServiceAccount", "name": "ctrl"}, {"kind": "ServiceAccount", "name": "x", "namespace": "sys"}]});
        let mut rs = vec![
            res(sa("ctrl", Some("system")), Some("sys")),
            res(rb.clone(), None),
        ];
        follow_moved_references(&mut rs).unwrap();
        assert_eq!(rs[1].object()["subjects"][0]["namespace"], "sys");
        // Without a subject naming `sys`, the ServiceAccount there is out of the RoleBinding's sight.
        let mut rb = rb;
        rb["subjects"][1]["namespace"] = json!("other");
        let mut rs = vec![res(sa("ctrl", Some("system")), Some("sys")), res(rb, None)];
        follow_moved_references(&mut rs).unwrap();
        assert_eq!(rs[1].object()["subjects"][0].get("namespace"), None);
    }
}

//! kube-apiserver's validation of what objects say about others and about their own deletion:
//! `metadata.ownerReferences` (at most one controller), no finalizer added to an
//! object being deleted, and the RBAC kinds' references (a rule's verbs, a binding's roleRef,
//! which may not change).

use crate::machinery::field::FieldError;
use serde_json::{Map, Value, json};

/// `metadata.ownerReferences`: one at most is the controller (each naming its owner whole is
/// [`super::metadata_errors`]'s).
pub fn owner_reference_errors(obj: &Value) -> Vec<FieldError> {
    let Some(refs) = obj
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    let controllers: Vec<&Value> = refs
        .iter()
        .filter(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .collect();
    if controllers.len() > 1 {
        let named: Vec<String> = controllers
            .iter()
            .map(|r| format!("{}/{}", str_of(r, "kind"), str_of(r, "name")))
            .collect();
        errors.push(FieldError::invalid_raw(
            "metadata.ownerReferences",
            rendered_references(refs),
            &format!(
                "Only one reference can have Controller set to true. Found \"true\" in references for {}",
                named.join(" and ")
            ),
        ));
    }
    errors
}

fn str_of<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or("")
}

/// The references as upstream renders them in a message: JSON, fields in the Go struct's order.
fn rendered_references(refs: &[Value]) -> String {
    let each: Vec<Value> = refs
        .iter()
        .map(|r| {
            let mut m = Map::new();
            for field in [
                "apiVersion",
                "kind",
                "name",
                "uid",
                "controller",
                "blockOwnerDeletion",
            ] {
                if let Some(v) = r.get(field) {
                    m.insert(field.into(), v.clone());
                }
            }
            Value::Object(m)
        })
        .collect();
    serde_json::to_string(&each).expect("JSON values serialise")
}

/// An update may not add finalizers to an object already being deleted.
pub fn finalizer_update_errors(obj: &Value, old: &Value) -> Vec<FieldError> {
    if old.pointer("/metadata/deletionTimestamp").is_none() {
        return Vec::new();
    }
    let before = crate::object::finalizers(old);
    let added: Vec<String> = crate::object::finalizers(obj)
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    if added.is_empty() {
        return Vec::new();
    }
    let quoted: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
    vec![FieldError::forbidden(
        "metadata.finalizers",
        &format!(
            "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
            quoted.join(", ")
        ),
    )]
}

/// A Role's or ClusterRole's rules each name at least one verb.
pub fn role_errors(obj: &Value) -> Vec<FieldError> {
    obj.get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter(|(_, rule)| {
            rule.get("verbs")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty)
        })
        .map(|(i, _)| FieldError::required(&format!("rules[{i}].verbs"), ""))
        .collect()
}

/// A RoleBinding's or ClusterRoleBinding's roleRef may not change.
pub fn role_ref_update_errors(obj: &Value, old: &Value) -> Vec<FieldError> {
    let (new_ref, old_ref) = (&obj["roleRef"], &old["roleRef"]);
    if new_ref == old_ref {
        return Vec::new();
    }
    let go = json!({
        "APIGroup": str_of(new_ref, "apiGroup"),
        "Kind": str_of(new_ref, "kind"),
        "Name": str_of(new_ref, "name"),
    });
    vec![FieldError::invalid_raw("roleRef", go, "field is immutable")]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn owner_references_are_complete_and_one_is_the_controller() {
        let cm = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "controller": true},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "uid": "u", "controller": true},
        ]}});
        assert_eq!(
            messages(&owner_reference_errors(&cm)),
            vec![
                "metadata.ownerReferences: Invalid value: [{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"a\",\"controller\":true},{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"b\",\"uid\":\"u\",\"controller\":true}]: Only one reference can have Controller set to true. Found \"true\" in references for ConfigMap/a and ConfigMap/b".to_string(),
            ]
        );
    }

    #[test]
    fn no_finalizer_is_added_while_deleting() {
        let old = json!({"metadata": {"deletionTimestamp": "t", "finalizers": ["a/x"]}});
        let new = json!({"metadata": {"finalizers": ["a/x", "a/y"]}});
        assert_eq!(
            messages(&finalizer_update_errors(&new, &old)),
            vec![
                "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"a/y\"}"
            ]
        );
        let alive = json!({"metadata": {"finalizers": []}});
        assert!(finalizer_update_errors(&new, &alive).is_empty());
    }

    #[test]
    fn rbac_references() {
        let role = json!({"rules": [{"apiGroups": [""], "resources": ["pods"]}]});
        assert_eq!(
            messages(&role_errors(&role)),
            vec!["rules[0].verbs: Required value"]
        );
        let old = json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "a"}});
        let new = json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "other"}});
        assert_eq!(
            messages(&role_ref_update_errors(&new, &old)),
            vec![
                "roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"Role\",\"Name\":\"other\"}: field is immutable"
            ]
        );
    }
}

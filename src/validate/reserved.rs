//! What belongs to the agent and no unit may declare: its namespace (where the inventories live),
//! the labels and annotations it writes to mark inventories and the objects each unit owns.
//!
//! A unit that declares an object in [`AGENT_NAMESPACE`] (or the Namespace itself), or an object
//! carrying [`INVENTORY_LABEL`], [`OWNER_LABEL`] or [`OWNER_ANNOTATION`], fails validation: it
//! could otherwise forge another unit's inventory or ownership and make the agent delete what it
//! does not own.

use serde_json::Value;

use crate::marks::{AGENT_NAMESPACE, INVENTORY_LABEL, OWNER_ANNOTATION, OWNER_LABEL};

/// Problems with `obj` (a rendered object or an embedded resource; `prefix` is prepended to the
/// pointers): it lives in the agent's namespace or carries one of the agent's marks.
pub fn problems(obj: &Value, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    let name = obj.pointer("/metadata/name").and_then(Value::as_str);
    let namespace = obj.pointer("/metadata/namespace").and_then(Value::as_str);
    if namespace == Some(AGENT_NAMESPACE) {
        out.push(format!(
            "{prefix}/metadata/namespace: {AGENT_NAMESPACE} is the agent's own namespace (it holds the inventories); a unit may not declare objects in it"
        ));
    }
    if kind == "Namespace" && name == Some(AGENT_NAMESPACE) {
        out.push(format!(
            "{prefix}/metadata/name: {AGENT_NAMESPACE} is the agent's own namespace; a unit may not declare it"
        ));
    }
    for (field, key) in [
        ("labels", INVENTORY_LABEL),
        ("labels", OWNER_LABEL),
        ("annotations", OWNER_ANNOTATION),
    ] {
        if obj
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_object)
            .is_some_and(|m| m.contains_key(key))
        {
            out.push(format!(
                "{prefix}/metadata/{field}/{}: {key} is written by the agent only (it marks inventories and the unit owning an object); remove it from git",
                key.replace('~', "~0").replace('/', "~1")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marks::ADOPT_FROM_ANNOTATION;
    use serde_json::json;

    #[test]
    fn the_agent_namespace_and_marks_are_refused() {
        let cm = json!({"kind": "ConfigMap", "metadata": {"name": "inventory-x", "namespace": AGENT_NAMESPACE,
            "labels": {INVENTORY_LABEL: "true"}, "annotations": {OWNER_ANNOTATION: "clusters/dev"}}});
        let p = problems(&cm, "");
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p[0].starts_with("/metadata/namespace: aro-gitops-system"));
        assert!(p[1].contains("aro-gitops.dev~1inventory"));
        let ns = json!({"kind": "Namespace", "metadata": {"name": AGENT_NAMESPACE}});
        assert_eq!(problems(&ns, "").len(), 1);
        let fine = json!({"kind": "ConfigMap", "metadata": {"name": "x", "namespace": "aro-dev",
            "annotations": {ADOPT_FROM_ANNOTATION: "clusters/old"}}});
        assert!(problems(&fine, "").is_empty());
        let embedded =
            json!({"kind": "Vault", "metadata": {"name": "kv", "labels": {OWNER_LABEL: "x"}}});
        assert!(
            problems(&embedded, "/spec/resources/1 (Vault/kv)")[0]
                .starts_with("/spec/resources/1 (Vault/kv)/metadata/labels/")
        );
    }
}

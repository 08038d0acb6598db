//! Rendered custom resources against the structural schemas of the CRDs the target cluster
//! serves, strictly (unknown fields refused, as `kubectl apply` asks), with the checks the API
//! server makes ([`crate::crdschema`]): a local run fails where a real cluster would.
//!
//! The schemas are the process's *cluster schemas*: the project's reference CRDs ([`crate::crds`],
//! which the embedded control plane, the default target, preloads) unless the edge that connected
//! to a real cluster read that cluster's CRDs and installed them with [`use_cluster_crds`]. CRDs a unit renders itself
//! count too, before the cluster's. Messages start with the field's JSON pointer, never quote a
//! value, and say which kind and version the schema is of.

use crate::crdschema::{ErrorType, FieldValidation, SchemaSet, StructuralSchema};
use crate::object::split_api_version;
use serde_json::Value;
use std::sync::{Arc, OnceLock, RwLock};

fn cluster_slot() -> &'static RwLock<Option<Arc<SchemaSet>>> {
    static SLOT: OnceLock<RwLock<Option<Arc<SchemaSet>>>> = OnceLock::new();
    SLOT.get_or_init(|| RwLock::new(None))
}

/// The schemas of the project's reference CRDs ([`crate::crds`], which the control plane preloads).
pub fn preloaded_schemas() -> Arc<SchemaSet> {
    static PRELOADED: OnceLock<Arc<SchemaSet>> = OnceLock::new();
    PRELOADED
        .get_or_init(|| {
            let crds = crate::crds::preloaded();
            // The preloaded CRDs are compiled in and served by the control plane, which refuses
            // a CRD whose schema it cannot read: none is left out here.
            Arc::new(SchemaSet::from_crds(&crds).0)
        })
        .clone()
}

/// The schemas rendered objects are checked against: the target cluster's, as installed by
/// [`use_cluster_crds`], else the preloaded ones.
pub fn cluster_schemas() -> Arc<SchemaSet> {
    let installed = cluster_slot().read().expect("schema lock").clone();
    installed.unwrap_or_else(preloaded_schemas)
}

/// Installs the CRDs a real cluster serves (read from its API at the edge) as the schemas of
/// this process's validation. Returns the CRDs whose schema could not be read, with why (those
/// kinds are then not checked).
pub fn use_cluster_crds(crds: &[Value]) -> Vec<String> {
    let (set, problems) = SchemaSet::from_crds(crds);
    *cluster_slot().write().expect("schema lock") = Some(Arc::new(set));
    problems
        .into_iter()
        .map(|(name, e)| format!("CustomResourceDefinition {name}: {e}"))
        .collect()
}

/// A kube field path (`spec.items[0].name`) as a JSON pointer (`/spec/items/0/name`).
pub(super) fn pointer_of(field: &str) -> String {
    let mut out = String::new();
    for part in field.split('.') {
        let (key, indexes) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            out.push('/');
            out.push_str(&key.replace('~', "~0").replace('/', "~1"));
        }
        for index in indexes.split('[').filter(|s| !s.is_empty()) {
            out.push('/');
            out.push_str(index.trim_end_matches(']'));
        }
    }
    out
}

/// The schema `obj` is checked against: from `rendered` (CRDs of the same render) first, then
/// `cluster`. `Err` when a CRD defines the kind but does not serve the object's version.
fn schema_for<'a>(
    obj: &Value,
    rendered: &'a SchemaSet,
    cluster: &'a SchemaSet,
) -> Option<Result<&'a StructuralSchema, String>> {
    let kind = obj.get("kind").and_then(Value::as_str)?;
    let api_version = obj.get("apiVersion").and_then(Value::as_str)?;
    let (group, version) = split_api_version(api_version);
    for set in [rendered, cluster] {
        if let Some(s) = set.get(group, version, kind) {
            return Some(Ok(s));
        }
        let served = set.versions(group, kind);
        if !served.is_empty() {
            return Some(Err(format!(
                "/apiVersion: the cluster serves {kind} in {group} as {}, not {version}",
                served.join(", ")
            )));
        }
    }
    None
}

/// Every problem of `obj` under the CRD schema of its kind and version, if a CRD defines it, as
/// (JSON pointer of the field, message starting with that pointer). `filled`: the pointers of the
/// fields the agent fills in ([`super::filled`]), whose absence is not a problem.
pub(super) fn problems(
    obj: &Value,
    rendered: &SchemaSet,
    cluster: &SchemaSet,
    filled: &[String],
) -> Vec<(String, String)> {
    let schema = match schema_for(obj, rendered, cluster) {
        None => return Vec::new(),
        Some(Err(message)) => return vec![("/apiVersion".to_string(), message)],
        Some(Ok(s)) => s,
    };
    let of = format!(
        "(the cluster's schema of {} {})",
        obj.get("kind").and_then(Value::as_str).unwrap_or(""),
        obj.get("apiVersion").and_then(Value::as_str).unwrap_or("")
    );
    let outcome = schema.validate(obj, FieldValidation::Strict);
    let unknown = outcome
        .unknown_fields
        .iter()
        .map(|f| (pointer_of(f), format!("unknown field \"{f}\" {of}")));
    let errors = outcome
        .errors
        .iter()
        .filter(|e| {
            !(e.error_type == ErrorType::Required && filled.contains(&pointer_of(&e.field)))
        })
        .map(|e| {
            (
                pointer_of(&e.field),
                format!("{} {of}", e.body_without_value()),
            )
        });
    unknown
        .chain(errors)
        .map(|(pointer, message)| {
            let message = format!("{pointer}: {message}");
            (pointer, message)
        })
        .collect()
}

/// The problems of `obj` (a custom resource as the agent is about to apply it, with the values it
/// fills in itself in place) under the cluster's schema of its kind and version, strictly; each a
/// message starting with the field's pointer, quoting no value. Empty when no CRD defines the kind.
pub fn cluster_problems(obj: &Value) -> Vec<String> {
    problems(obj, &SchemaSet::default(), &cluster_schemas(), &[])
        .into_iter()
        .map(|(_, message)| message)
        .collect()
}

/// Whether `pointer` is a field some earlier message already faulted (or lies inside one).
pub(super) fn covered(said: &[String], pointer: &str) -> bool {
    said.iter().any(|p| {
        pointer == p
            || (!p.is_empty()
                && pointer.starts_with(p.as_str())
                && pointer[p.len()..].starts_with('/'))
    })
}

/// The schemas of the CRDs among rendered objects.
pub(super) fn rendered_schemas<'a>(objects: impl Iterator<Item = &'a Value>) -> SchemaSet {
    let crds: Vec<&Value> = objects
        .filter(|o| {
            o.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
                && o.get("apiVersion")
                    .and_then(Value::as_str)
                    .is_some_and(|v| v.starts_with("apiextensions.k8s.io/"))
        })
        .collect();
    SchemaSet::from_crds(crds).0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn widgets() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"},
                "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "required": ["size"],
                            "properties": {"size": {"type": "integer"}}}}}}}]}
        })
    }

    #[test]
    fn field_paths_become_pointers() {
        assert_eq!(pointer_of("spec.items[0].name"), "/spec/items/0/name");
        assert_eq!(pointer_of("spec.a/b"), "/spec/a~1b");
        assert_eq!(pointer_of("spec.m[1][2]"), "/spec/m/1/2");
    }

    #[test]
    fn custom_resources_are_checked_strictly_without_quoting_values() {
        let crd = widgets();
        let rendered = rendered_schemas([&crd].into_iter());
        let empty = SchemaSet::default();
        let obj = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w"}, "spec": {"size": "s3cr3t", "extra": "s3cr3t"}});
        let found: Vec<String> = problems(&obj, &rendered, &empty, &[])
            .into_iter()
            .map(|(_, m)| m)
            .collect();
        assert_eq!(
            found,
            vec![
                "/spec/extra: unknown field \"spec.extra\" (the cluster's schema of Widget example.com/v1)",
                "/spec/size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\" (the cluster's schema of Widget example.com/v1)",
            ]
        );
        let other_version = json!({"apiVersion": "example.com/v2", "kind": "Widget",
            "metadata": {"name": "w"}, "spec": {"size": 1}});
        assert_eq!(
            problems(&other_version, &empty, &rendered, &[]),
            vec![(
                "/apiVersion".to_string(),
                "/apiVersion: the cluster serves Widget in example.com as v1, not v2".to_string()
            )]
        );
        let said = vec!["/spec".to_string()];
        assert!(covered(&said, "/spec/size"));
        assert!(covered(&said, "/spec"));
        assert!(!covered(&said, "/specs"));
        assert!(
            !covered(&[String::new()], "/spec"),
            "the root covers only itself"
        );
        let unknown_kind =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert!(problems(&unknown_kind, &rendered, &rendered, &[]).is_empty());
    }

    #[test]
    fn the_preloaded_crds_are_the_default_schemas() {
        let set = preloaded_schemas();
        assert!(
            set.get("infrastructure.cluster.x-k8s.io", "v1beta2", "AROCluster")
                .is_some()
        );
        assert!(!cluster_schemas().is_empty());
    }
}

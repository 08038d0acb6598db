//! The fields of built-in kinds, as kube-apiserver's typed decoding knows them.
//!
//! kube-apiserver decodes a built-in object into its Go type: a field the type does not declare is
//! dropped (warned about under `fieldValidation=Warn`, refused under `Strict`), in every mode. The
//! declared fields are the Kubernetes API's, which `k8s-openapi` (generated from the same API
//! definitions, of the same minor version) models as Rust types. [`unknown_builtin_fields`] decodes
//! the object into that type and encodes it back: a key the typed round trip loses was not declared.
//! The object itself is never replaced by its round trip (which would rewrite values, such as a
//! Secret's base64); only its unknown keys are removed.

use k8s_openapi::Resource;
use k8s_openapi::api::{apps, coordination, core, events, rbac};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Removes from `obj`, an object of the built-in kind `kind` in `group`/`version`, every field its
/// type does not declare, returning their paths in the order kube-apiserver's decoder meets them
/// (`bogus`, `spec.template.spec.containers[0].bogus`). `None` when the kind is not one of those
/// modelled here, or the object does not decode as its type (kube-apiserver then answers the
/// decode error, reported elsewhere): `obj` is left as it is.
pub fn unknown_builtin_fields(
    group: &str,
    version: &str,
    kind: &str,
    obj: &mut Value,
) -> Option<Vec<String>> {
    if version != "v1" {
        return None;
    }
    let typed = match (group, kind) {
        ("", "ConfigMap") => round_trip::<core::v1::ConfigMap>(obj),
        ("", "Secret") => round_trip::<core::v1::Secret>(obj),
        ("", "Namespace") => round_trip::<core::v1::Namespace>(obj),
        ("", "Service") => round_trip::<core::v1::Service>(obj),
        ("", "ServiceAccount") => round_trip::<core::v1::ServiceAccount>(obj),
        ("", "Endpoints") => round_trip::<core::v1::Endpoints>(obj),
        ("", "Event") => round_trip::<core::v1::Event>(obj),
        ("", "Pod") => round_trip::<core::v1::Pod>(obj),
        ("", "Node") => round_trip::<core::v1::Node>(obj),
        ("", "PersistentVolumeClaim") => round_trip::<core::v1::PersistentVolumeClaim>(obj),
        ("", "LimitRange") => round_trip::<core::v1::LimitRange>(obj),
        ("", "ResourceQuota") => round_trip::<core::v1::ResourceQuota>(obj),
        ("apps", "Deployment") => round_trip::<apps::v1::Deployment>(obj),
        ("apps", "StatefulSet") => round_trip::<apps::v1::StatefulSet>(obj),
        ("apps", "DaemonSet") => round_trip::<apps::v1::DaemonSet>(obj),
        ("apps", "ReplicaSet") => round_trip::<apps::v1::ReplicaSet>(obj),
        ("rbac.authorization.k8s.io", "ClusterRole") => round_trip::<rbac::v1::ClusterRole>(obj),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => {
            round_trip::<rbac::v1::ClusterRoleBinding>(obj)
        }
        ("rbac.authorization.k8s.io", "Role") => round_trip::<rbac::v1::Role>(obj),
        ("rbac.authorization.k8s.io", "RoleBinding") => round_trip::<rbac::v1::RoleBinding>(obj),
        ("events.k8s.io", "Event") => round_trip::<events::v1::Event>(obj),
        ("coordination.k8s.io", "Lease") => round_trip::<coordination::v1::Lease>(obj),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            round_trip::<apiextensions::v1::CustomResourceDefinition>(obj)
        }
        ("apiregistration.k8s.io", "APIService") => {
            round_trip::<apiregistration::v1::APIService>(obj)
        }
        _ => return None,
    }?;
    let mut found = Vec::new();
    prune_unknown(obj, &typed, "", &mut found);
    Some(found)
}

/// `obj` decoded as `T` and encoded again; `None` when it does not decode. `apiVersion` and
/// `kind` are the type's (the request's path names the kind; the body's may be absent).
fn round_trip<T: Resource + DeserializeOwned + Serialize>(obj: &Value) -> Option<Value> {
    let mut obj = obj.clone();
    let map = obj.as_object_mut()?;
    map.insert("apiVersion".into(), Value::from(T::API_VERSION));
    map.insert("kind".into(), Value::from(T::KIND));
    let typed: T = serde_json::from_value(obj).ok()?;
    serde_json::to_value(&typed).ok()
}

/// Removes from `obj` the keys its typed round trip `typed` lost, recording their paths. A key
/// whose value is `null` is kept: a declared field set to `null` is lost by the round trip too,
/// so its loss says nothing.
fn prune_unknown(obj: &mut Value, typed: &Value, path: &str, found: &mut Vec<String>) {
    match (obj, typed) {
        (Value::Object(map), Value::Object(known)) => {
            map.retain(|key, value| {
                let here = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match known.get(key) {
                    Some(typed) => {
                        prune_unknown(value, typed, &here, found);
                        true
                    }
                    None if value.is_null() => true,
                    None => {
                        found.push(here);
                        false
                    }
                }
            });
        }
        (Value::Array(items), Value::Array(known)) => {
            for (i, (item, typed)) in items.iter_mut().zip(known).enumerate() {
                prune_unknown(item, typed, &format!("{path}[{i}]"), found);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn unknown(group: &str, kind: &str, mut obj: Value) -> (Option<Vec<String>>, Value) {
        let found = unknown_builtin_fields(group, "v1", kind, &mut obj);
        (found, obj)
    }

    #[test]
    fn a_configmap_loses_its_unknown_fields_and_keeps_the_rest() {
        let (found, obj) = unknown(
            "",
            "ConfigMap",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "bogus": 1,
                   "metadata": {"name": "c", "labels": {"a": "b"}, "extra": {"x": 1}},
                   "data": {"a": "1"}, "binaryData": {"b": "AAE="}, "immutable": false}),
        );
        assert_eq!(found.unwrap(), vec!["bogus", "metadata.extra"]);
        assert_eq!(
            obj,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "c", "labels": {"a": "b"}},
                   "data": {"a": "1"}, "binaryData": {"b": "AAE="}, "immutable": false})
        );
    }

    #[test]
    fn paths_follow_lists_and_the_order_of_the_body() {
        let (found, obj) = unknown(
            "apps",
            "Deployment",
            json!({"metadata": {"name": "d"}, "zzz": true, "spec": {
                "selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [
                    {"name": "a", "image": "i"},
                    {"name": "b", "image": "i", "imagePullPolicy": "Always", "x": {"y": 1},
                     "resources": {"limits": {"cpu": "1"}}, "ports": [{"containerPort": 80, "q": 1}]}
                ]}}}, "aaa": 1}),
        );
        assert_eq!(
            found.unwrap(),
            vec![
                "zzz",
                "spec.template.spec.containers[1].x",
                "spec.template.spec.containers[1].ports[0].q",
                "aaa"
            ]
        );
        assert_eq!(
            obj["spec"]["template"]["spec"]["containers"][1],
            json!({"name": "b", "image": "i", "imagePullPolicy": "Always",
                   "resources": {"limits": {"cpu": "1"}}, "ports": [{"containerPort": 80}]})
        );
    }

    #[test]
    fn nulls_free_form_values_and_secret_data_are_kept_as_sent() {
        let body = json!({"metadata": {"name": "s", "creationTimestamp": null,
                                       "managedFields": [{"manager": "m", "fieldsV1": {"f:data": {"f:a": {}}}}]},
                          "data": {"a": "aGk="}, "stringData": {"b": "c"}, "type": "Opaque"});
        let (found, obj) = unknown("", "Secret", body.clone());
        assert_eq!(found.unwrap(), Vec::<String>::new());
        assert_eq!(obj, body);
    }

    #[test]
    fn crd_schemas_are_typed_too() {
        let (found, _) = unknown(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            json!({"metadata": {"name": "as.x.io"}, "spec": {"group": "x.io", "scope": "Namespaced",
                "names": {"plural": "as", "kind": "A"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": true, "bogus": 1,
                    "properties": {"s": {"type": "string", "default": {"any": "thing"},
                        "x-kubernetes-validations": [{"rule": "true"}]}}}}}]}}),
        );
        assert_eq!(
            found.unwrap(),
            vec!["spec.versions[0].schema.openAPIV3Schema.bogus"]
        );
    }

    #[test]
    fn an_object_that_does_not_decode_or_an_unmodelled_kind_is_left_alone() {
        let body = json!({"metadata": {"name": "c"}, "data": {"a": 1}, "bogus": 1});
        assert_eq!(unknown("", "ConfigMap", body.clone()), (None, body.clone()));
        assert_eq!(unknown("example.com", "Widget", body.clone()), (None, body));
    }
}

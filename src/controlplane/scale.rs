//! The `/scale` subresource of Deployments and ReplicaSets: an `autoscaling/v1` `Scale` view of
//! the object, read from it and written back into its `spec.replicas`, as kube-apiserver serves it.

use super::error::ApiError;
use super::objects::{PatchType, Target, check_resource_version};
use crate::machinery::field::FieldError;
use crate::machinery::patch::{self, MergeKeys};
use serde_json::{Map, Value, json};

/// Whether a kind serves `/scale`.
pub(super) fn serves_scale(group: &str, kind: &str, custom: bool) -> bool {
    !custom && matches!((group, kind), ("apps", "Deployment" | "ReplicaSet"))
}

/// The `Scale` view of a Deployment.
pub(super) fn scale_of(obj: &Value) -> Value {
    let mut meta = Map::new();
    for k in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = obj.get("metadata").and_then(|m| m.get(k)) {
            meta.insert(k.into(), v.clone());
        }
    }
    let mut spec = Map::new();
    if let Some(r) = obj
        .pointer("/spec/replicas")
        .filter(|r| r.as_i64().is_some_and(|n| n != 0))
    {
        spec.insert("replicas".into(), r.clone());
    }
    let mut status = Map::new();
    status.insert(
        "replicas".into(),
        obj.pointer("/status/replicas").cloned().unwrap_or(json!(0)),
    );
    let selector = obj
        .pointer("/spec/selector")
        .map(selector_string)
        .unwrap_or_default();
    if !selector.is_empty() {
        status.insert("selector".into(), json!(selector));
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": spec,
        "status": status,
    })
}

/// A label selector in its string form: one requirement per key, sorted by key, values sorted.
fn selector_string(sel: &Value) -> String {
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(labels) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in labels {
            reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or(""))));
        }
    }
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let mut values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        values.dedup();
        let text = match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        reqs.push((key.to_string(), text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    reqs.into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(",")
}

/// The Deployment a `/scale` write (`patch_type` None for PUT) leaves: `old` with the Scale's
/// replicas, after the Scale's precondition and validation.
pub(super) fn scaled(
    target: &Target,
    name: &str,
    old: &Value,
    patch_type: Option<PatchType>,
    body: &Value,
) -> Result<Value, ApiError> {
    let current = scale_of(old);
    let requested = match patch_type {
        None => body.clone(),
        Some(pt) => {
            let mut s = current.clone();
            match pt {
                PatchType::Merge => patch::merge_patch(&mut s, body)?,
                PatchType::Json => {
                    patch::json_patch_with(&mut s, body, patch::MissingReplace::Add)?
                }
                PatchType::Strategic => {
                    patch::strategic_merge_patch(&mut s, body, &MergeKeys::default())?
                }
                PatchType::Apply => return Err(ApiError::unsupported_patch_type()),
            }
            s
        }
    };
    let rv = requested
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    check_resource_version(target, name, rv, old)?;
    let replicas = match requested.pointer("/spec/replicas") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_i64().ok_or_else(|| {
            ApiError::bad_request(format!(
                "Scale in version \"v1\" cannot be handled as a Scale: json: cannot unmarshal {} into Go struct field ScaleSpec.spec.replicas of type int32",
                go_type_name(v)
            ))
        })?,
    };
    if replicas < 0 {
        return Err(ApiError::invalid_object(
            "Scale",
            "autoscaling",
            name,
            &[FieldError::invalid_raw(
                "spec.replicas",
                replicas,
                "must be greater than or equal to 0",
            )],
        ));
    }
    let mut new = old.clone();
    new["spec"]["replicas"] = json!(replicas);
    Ok(new)
}

fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        _ => "number",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scale_shows_the_deployments_identity_replicas_and_selector() {
        let d = json!({"metadata": {"name": "d", "namespace": "n", "uid": "u", "resourceVersion": "5", "creationTimestamp": "t", "generation": 2, "labels": {"a": "b"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"b": "1", "a": "2"}, "matchExpressions": [{"key": "c", "operator": "In", "values": ["y", "x"]}, {"key": "aa", "operator": "DoesNotExist"}]}}});
        let s = scale_of(&d);
        assert_eq!(
            s,
            json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {"name": "d", "namespace": "n", "uid": "u", "resourceVersion": "5", "creationTimestamp": "t"},
                "spec": {"replicas": 2},
                "status": {"replicas": 0, "selector": "a=2,!aa,b=1,c in (x,y)"}})
        );
    }

    fn deployments() -> Target {
        let reg = crate::controlplane::registry::Registry::new([]);
        let mut t = Target::of(&reg, "apps", "deployments", Some("n"));
        t.subresource = Some(super::super::objects::Subresource::Scale);
        t
    }

    #[test]
    fn a_scale_write_sets_replicas_after_its_precondition_and_validation() {
        let t = deployments();
        let old =
            json!({"metadata": {"name": "d", "resourceVersion": "7"}, "spec": {"replicas": 1}});
        let put = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "d"}, "spec": {"replicas": 4}});
        let new = scaled(&t, "d", &old, None, &put).unwrap();
        assert_eq!(new["spec"]["replicas"], 4);
        let patched = scaled(
            &t,
            "d",
            &old,
            Some(PatchType::Merge),
            &json!({"spec": {"replicas": 0}}),
        );
        assert_eq!(patched.unwrap()["spec"]["replicas"], 0);
        let stale =
            json!({"metadata": {"name": "d", "resourceVersion": "6"}, "spec": {"replicas": 4}});
        let err = scaled(&t, "d", &old, None, &stale).unwrap_err();
        assert_eq!(err.to_status()["code"], 409);
        let negative = scaled(
            &t,
            "d",
            &old,
            Some(PatchType::Merge),
            &json!({"spec": {"replicas": -1}}),
        );
        assert_eq!(
            negative.unwrap_err().to_status()["message"],
            "Scale.autoscaling \"d\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
    }

    #[test]
    fn zero_replicas_are_left_out_of_the_spec() {
        let s = scale_of(&json!({"metadata": {"name": "d"}, "spec": {"replicas": 0}}));
        assert_eq!(s["spec"], json!({}));
    }
}

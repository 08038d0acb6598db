//! kube-apiserver's validation of Deployments, as far as the local control plane serves them:
//! a pod template with containers, a selector that selects the template's labels and never
//! changes, and a strategy whose fields fit its type.

use crate::machinery::field::FieldError;
use serde_json::{Map, Value, json};

/// The errors of a Deployment, and of an update from `old` when there is one.
pub fn deployment_errors(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let spec = &obj["spec"];
    if let Some(old) = old
        && old["spec"]["selector"] != spec["selector"]
    {
        errors.push(FieldError::invalid_raw(
            "spec.selector",
            selector_json(&spec["selector"]),
            "field is immutable",
        ));
    }
    let labels = spec
        .pointer("/template/metadata/labels")
        .cloned()
        .unwrap_or(json!({}));
    if !selects(&spec["selector"], &labels) {
        errors.push(FieldError::invalid_raw(
            "spec.template.metadata.labels",
            serde_json::to_string(&labels).expect("JSON values serialise"),
            "`selector` does not match template `labels`",
        ));
    }
    let containers = spec
        .pointer("/template/spec/containers")
        .and_then(Value::as_array);
    if containers.is_none_or(Vec::is_empty) {
        errors.push(FieldError::required("spec.template.spec.containers", ""));
    }
    if spec.pointer("/strategy/type").and_then(Value::as_str) == Some("Recreate")
        && spec
            .pointer("/strategy/rollingUpdate")
            .is_some_and(|r| !r.is_null())
    {
        errors.push(FieldError::forbidden(
            "spec.strategy.rollingUpdate",
            "may not be specified when strategy `type` is 'Recreate'",
        ));
    }
    errors
}

/// A label selector as upstream renders it in a message: JSON, fields in the Go struct's order.
fn selector_json(selector: &Value) -> String {
    let mut m = Map::new();
    for field in ["matchLabels", "matchExpressions"] {
        if let Some(v) = selector.get(field).filter(|v| !v.is_null()) {
            m.insert(field.into(), v.clone());
        }
    }
    serde_json::to_string(&Value::Object(m)).expect("JSON values serialise")
}

/// Whether `selector` (matchLabels and matchExpressions) selects `labels`. An empty selector
/// selects nothing here, as upstream's validation of a Deployment's selector.
fn selects(selector: &Value, labels: &Value) -> bool {
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    let match_labels = selector.get("matchLabels").and_then(Value::as_object);
    let expressions = selector.get("matchExpressions").and_then(Value::as_array);
    if match_labels.is_none_or(Map::is_empty) && expressions.is_none_or(Vec::is_empty) {
        return false;
    }
    let labels_ok = match_labels
        .into_iter()
        .flatten()
        .all(|(k, v)| label(k) == v.as_str());
    let expressions_ok = expressions.into_iter().flatten().all(|e| {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match e.get("operator").and_then(Value::as_str) {
            Some("In") => label(key).is_some_and(|v| values.contains(&v)),
            Some("NotIn") => label(key).is_none_or(|v| !values.contains(&v)),
            Some("Exists") => label(key).is_some(),
            Some("DoesNotExist") => label(key).is_none(),
            _ => false,
        }
    });
    labels_ok && expressions_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(selector: Value, labels: Value, containers: Value) -> Value {
        json!({"spec": {"selector": selector, "template": {
            "metadata": {"labels": labels}, "spec": {"containers": containers}}}})
    }

    fn messages(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn a_deployment_selects_its_template_and_has_containers() {
        let ok = deployment(
            json!({"matchLabels": {"app": "d"}}),
            json!({"app": "d", "x": "1"}),
            json!([{"name": "c"}]),
        );
        assert!(deployment_errors(&ok, None).is_empty());
        let bad = deployment(
            json!({"matchLabels": {"app": "d"}}),
            json!({"app": "other"}),
            json!([]),
        );
        assert_eq!(
            messages(&deployment_errors(&bad, None)),
            vec![
                "spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`",
                "spec.template.spec.containers: Required value",
            ]
        );
        let exprs = deployment(
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["d"]}]}),
            json!({"app": "d"}),
            json!([{"name": "c"}]),
        );
        assert!(deployment_errors(&exprs, None).is_empty());
    }

    #[test]
    fn its_selector_never_changes_and_recreate_takes_no_rolling_update() {
        let old = deployment(
            json!({"matchLabels": {"app": "d"}}),
            json!({"app": "d", "v": "1"}),
            json!([{"name": "c"}]),
        );
        let mut new = deployment(
            json!({"matchLabels": {"app": "d", "v": "1"}}),
            json!({"app": "d", "v": "1"}),
            json!([{"name": "c"}]),
        );
        new["spec"]["strategy"] = json!({"type": "Recreate", "rollingUpdate": {"maxSurge": 1}});
        assert_eq!(
            messages(&deployment_errors(&new, Some(&old))),
            vec![
                "spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"d\",\"v\":\"1\"}}: field is immutable",
                "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'",
            ]
        );
    }
}

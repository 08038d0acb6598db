//! kube-apiserver's validation of the workload kinds the local control plane stores without
//! controllers, as far as a create needs it: a pod spec's containers (a name that is a DNS
//! label, an image), a Job's restart policy, a claim's access modes and storage request.
//! ReplicaSets are held to the Deployment's rules (see [`super::apps`]).

use super::{NameRule, name_messages};
use crate::machinery::field::FieldError;
use serde_json::Value;

/// The errors of a Pod.
pub fn pod_errors(obj: &Value) -> Vec<FieldError> {
    pod_spec_errors("spec", &obj["spec"])
}

/// The errors of a Job: its pod template's, and a restart policy a finished pod keeps.
pub fn job_errors(obj: &Value) -> Vec<FieldError> {
    let path = "spec.template.spec";
    let spec = obj.pointer("/spec/template/spec").unwrap_or(&Value::Null);
    let mut errors = pod_spec_errors(path, spec);
    let policy = spec["restartPolicy"].as_str().unwrap_or("");
    if !matches!(policy, "OnFailure" | "Never") {
        errors.push(FieldError::required(
            &format!("{path}.restartPolicy"),
            "valid values: \"OnFailure\", \"Never\"",
        ));
    }
    errors
}

/// The errors of a PersistentVolumeClaim.
pub fn claim_errors(obj: &Value) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let mut errors = Vec::new();
    if spec["accessModes"].as_array().is_none_or(Vec::is_empty) {
        errors.push(FieldError::required(
            "spec.accessModes",
            "at least 1 access mode is required",
        ));
    }
    if spec
        .pointer("/resources/requests/storage")
        .is_none_or(Value::is_null)
    {
        errors.push(FieldError::required("spec.resources[storage]", ""));
    }
    errors
}

/// The errors of a pod spec at `path`: at least one container, each named by a DNS label and
/// with an image.
fn pod_spec_errors(path: &str, spec: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let containers = spec["containers"].as_array();
    if containers.is_none_or(Vec::is_empty) {
        errors.push(FieldError::required(&format!("{path}.containers"), ""));
    }
    for (i, c) in containers.into_iter().flatten().enumerate() {
        let at = format!("{path}.containers[{i}]");
        match c["name"].as_str().unwrap_or("") {
            "" => errors.push(FieldError::required(&format!("{at}.name"), "")),
            name => errors.extend(
                name_messages(NameRule::Label, name)
                    .iter()
                    .map(|m| FieldError::invalid(&format!("{at}.name"), name, m)),
            ),
        }
        if c["image"].as_str().unwrap_or("").trim().is_empty() {
            errors.push(FieldError::required(&format!("{at}.image"), ""));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn a_pod_needs_named_containers_with_images() {
        assert_eq!(
            messages(&pod_errors(&json!({"spec": {"containers": []}}))),
            ["spec.containers: Required value"]
        );
        assert_eq!(
            messages(&pod_errors(
                &json!({"spec": {"containers": [{"name": "c"}, {"image": "i"}]}})
            )),
            [
                "spec.containers[0].image: Required value",
                "spec.containers[1].name: Required value"
            ]
        );
        assert!(
            pod_errors(&json!({"spec": {"containers": [{"name": "c", "image": "i"}]}})).is_empty()
        );
    }

    #[test]
    fn a_job_restarts_its_pods_on_failure_or_never() {
        let job = |policy: &str| {
            json!({"spec": {"template": {"spec": {"restartPolicy": policy,
                "containers": [{"name": "c", "image": "i"}]}}}})
        };
        assert!(job_errors(&job("Never")).is_empty());
        assert_eq!(
            messages(&job_errors(&job("Always"))),
            [
                "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
            ]
        );
    }

    #[test]
    fn a_claim_needs_an_access_mode_and_a_size() {
        assert_eq!(
            messages(&claim_errors(&json!({"spec": {}}))),
            [
                "spec.accessModes: Required value: at least 1 access mode is required",
                "spec.resources[storage]: Required value"
            ]
        );
    }
}

//! Tests of the status sequences over an object's life: `provisioningState` from create to delete,
//! transient failures, and the generation lag after a spec change (each rendered status is fed back
//! as the control plane would store it).

use super::tests::*;
use super::*;
use serde_json::json;

/// Feeds each rendered status back, as the control plane would, and returns the object after.
fn step(obj: &Value, owner: Option<&Value>, provisioned: bool) -> Value {
    with_status(obj.clone(), desired_status(obj, owner, provisioned, NOW))
}

fn state(obj: &Value) -> (&str, Option<&str>) {
    (
        obj["status"]["provisioningState"].as_str().unwrap_or("-"),
        obj.pointer("/status/properties/provisioningState")
            .and_then(Value::as_str),
    )
}

#[test]
fn provisioning_state_sequence_create_update_delete() {
    let owner = provisioned_rg();
    let owner = Some(&owner);
    let accepted = step(&cluster(1), owner, false);
    assert_eq!(state(&accepted), ("-", Some("Accepted")));
    let provisioning = step(&accepted, owner, false);
    assert_eq!(state(&provisioning), ("-", Some("Provisioning")));
    let succeeded = step(&provisioning, owner, true);
    assert_eq!(state(&succeeded), ("-", Some("Succeeded")));

    let mut bumped = succeeded.clone();
    bumped["metadata"]["generation"] = json!(2);
    let updating = step(&bumped, owner, false);
    assert_eq!(state(&updating), ("-", Some("Updating")));
    assert_eq!(
        state(&step(&updating, owner, true)),
        ("-", Some("Succeeded"))
    );

    let mut deleting = succeeded;
    deleting["metadata"]["deletionTimestamp"] = json!(NOW);
    assert_eq!(
        state(&step(&deleting, owner, true)),
        ("-", Some("Deleting"))
    );

    // A resource group carries it in its properties too, as in ASO's status.
    let rg_accepted = step(&rg(), None, false);
    assert_eq!(state(&rg_accepted), ("-", Some("Accepted")));
    let failed = step(
        &step(&with_fail(rg(), "QuotaExceeded"), None, false),
        None,
        true,
    );
    assert_eq!(state(&failed), ("-", Some("Failed")));
}

#[test]
fn transient_failure_then_success_once_the_annotation_is_gone() {
    let provisioning = step(
        &step(&with_warning(rg(), "TooManyRequests"), None, false),
        None,
        false,
    );
    let retrying = step(&provisioning, None, true);
    let c = ready_at(&retrying["status"]);
    assert_eq!(
        (
            c["status"].as_str(),
            c["severity"].as_str(),
            c["reason"].as_str()
        ),
        (Some("False"), Some("Warning"), Some("TooManyRequests"))
    );
    let message = c["message"].as_str().unwrap();
    assert!(
        message.contains("transient") && message.contains(WARN_ANNOTATION),
        "{message}"
    );
    assert!(!is_settled(&retrying), "a warning is retried, not final");
    let mut fixed = retrying;
    fixed["metadata"]["annotations"] = json!({});
    let done = step(&fixed, None, true);
    assert_eq!(ready_at(&done["status"])["status"], "True");
    assert_eq!(
        done["status"]["properties"]["provisioningState"],
        "Succeeded"
    );
}

#[test]
fn readiness_lags_a_spec_change_until_the_simulator_catches_up() {
    use crate::reconcile::readiness::aso_readiness;
    let owner = provisioned_rg();
    let owner = Some(&owner);
    let settled = step(
        &step(&step(&cluster(1), owner, false), owner, false),
        owner,
        true,
    );
    assert!(aso_readiness(&settled).is_ready());

    // The spec changes: the control plane bumps the generation; the status still speaks of 1.
    let mut changed = settled;
    changed["metadata"]["generation"] = json!(2);
    assert_eq!(ready_at(&changed["status"])["observedGeneration"], 1);
    assert_eq!(ready_at(&changed["status"])["status"], "True");
    let stale = aso_readiness(&changed);
    assert!(!stale.is_ready() && !stale.is_failed(), "{stale}");
    assert!(!is_settled(&changed));

    // The simulator reacts: Reconciling for generation 2, still not ready.
    let reconciling = step(&changed, owner, false);
    let c = ready_at(&reconciling["status"]);
    assert_eq!(
        (c["reason"].as_str(), c["observedGeneration"].as_i64()),
        (Some("Reconciling"), Some(2))
    );
    assert!(!aso_readiness(&reconciling).is_ready());

    // The delay has passed: ready for generation 2.
    assert!(aso_readiness(&step(&reconciling, owner, true)).is_ready());
}

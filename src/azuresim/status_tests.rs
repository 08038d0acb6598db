//! Table-driven tests of the status the simulator writes.

use super::*;
use serde_json::json;

pub(super) const NOW: &str = "2026-01-02T03:04:05Z";
pub(super) const EARLIER: &str = "2025-12-31T00:00:00Z";
pub(super) const RG_ID: &str =
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg";

pub(super) fn object(
    api_version: &str,
    kind: &str,
    name: &str,
    generation: i64,
    spec: Value,
) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": "ns", "generation": generation},
        "spec": spec,
    })
}

pub(super) fn rg() -> Value {
    object(
        "resources.azure.com/v1api20200601",
        "ResourceGroup",
        "rg",
        1,
        json!({"location": "eastus"}),
    )
}

pub(super) fn vnet() -> Value {
    object(
        "network.azure.com/v1api20201101",
        "VirtualNetwork",
        "vnet",
        1,
        json!({"owner": {"name": "rg"}}),
    )
}

pub(super) fn cluster(generation: i64) -> Value {
    object(
        "redhatopenshift.azure.com/v1api20240610preview",
        "HcpOpenShiftCluster",
        "c1",
        generation,
        json!({"owner": {"name": "rg"}, "location": "eastus", "properties": {"version": {"id": "4.20", "channelGroup": "stable"}}}),
    )
}

pub(super) fn with_status(mut obj: Value, status: Value) -> Value {
    obj["status"] = status;
    obj
}

pub(super) fn with_fail(mut obj: Value, code: &str) -> Value {
    obj["metadata"]["annotations"] = json!({FAIL_ANNOTATION: code});
    obj
}

pub(super) fn with_warning(mut obj: Value, code: &str) -> Value {
    let annotations = obj["metadata"]
        .as_object_mut()
        .unwrap()
        .entry("annotations")
        .or_insert_with(|| json!({}));
    annotations[WARN_ANNOTATION] = json!(code);
    obj
}

pub(super) fn ready(status: &str, reason: &str, generation: i64, since: &str) -> Value {
    json!({"type": "Ready", "status": status, "reason": reason, "observedGeneration": generation, "lastTransitionTime": since})
}

pub(super) fn provisioned_rg() -> Value {
    with_status(
        rg(),
        json!({"id": RG_ID, "conditions": [ready("True", "Succeeded", 1, EARLIER)]}),
    )
}

struct Case {
    name: &'static str,
    obj: Value,
    owner: Option<Value>,
    provisioned: bool,
    /// JSON pointers into the rendered status and the value each must have.
    want: Vec<(&'static str, Value)>,
    /// JSON pointers that must be absent.
    absent: Vec<&'static str>,
}

pub(super) fn ready_at(status: &Value) -> &Value {
    status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .expect("a Ready condition")
}

#[test]
fn desired_status_table() {
    let succeeded_cluster = with_status(
        cluster(1),
        json!({
            "id": format!("{RG_ID}/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1"),
            "properties": {"provisioningState": "Succeeded", "api": {"url": "https://api.old:443"}},
            "conditions": [ready("True", "Succeeded", 1, EARLIER)],
        }),
    );
    let mut bumped_cluster = succeeded_cluster.clone();
    bumped_cluster["metadata"]["generation"] = json!(2);
    let waiting_vnet = with_status(
        vnet(),
        json!({"conditions": [{"type": "Ready", "status": "False", "severity": "Warning", "reason": "WaitingForOwner", "observedGeneration": 1, "lastTransitionTime": EARLIER}]}),
    );
    let subnet_without_owner = object(
        "network.azure.com/v1api20201101",
        "VirtualNetworksSubnet",
        "s",
        1,
        json!({}),
    );
    let mut deleting = provisioned_rg();
    deleting["metadata"]["deletionTimestamp"] = json!(NOW);
    let pool = object(
        "redhatopenshift.azure.com/v1api20240610preview",
        "HcpOpenShiftClustersNodePool",
        "p1",
        1,
        json!({"owner": {"name": "c1"}, "properties": {"replicas": 3}}),
    );
    let provisioned_cluster = with_status(cluster(1), json!({"id": "/x/hcpOpenShiftClusters/c1"}));

    let cases = vec![
        Case {
            name: "new resource group starts reconciling",
            obj: rg(),
            owner: None,
            provisioned: false,
            want: vec![
                ("/status", json!("False")),
                ("/severity", json!("Info")),
                ("/reason", json!("Reconciling")),
                ("/observedGeneration", json!(1)),
                ("/lastTransitionTime", json!(NOW)),
            ],
            absent: vec!["id"],
        },
        Case {
            name: "provisioned resource group is ready with an id",
            obj: rg(),
            owner: None,
            provisioned: true,
            want: vec![
                ("/status", json!("True")),
                ("/reason", json!("Succeeded")),
                ("/message", json!(SUCCEEDED_MESSAGE)),
                ("id", json!(RG_ID)),
                ("type", json!("Microsoft.Resources/resourceGroups")),
                ("location", json!("eastus")),
                ("properties/provisioningState", json!("Succeeded")),
            ],
            absent: vec!["/severity", "provisioningState"],
        },
        Case {
            name: "missing owner waits with a warning",
            obj: vnet(),
            owner: None,
            provisioned: true,
            want: vec![
                ("/status", json!("False")),
                ("/severity", json!("Warning")),
                ("/reason", json!("WaitingForOwner")),
            ],
            absent: vec!["id"],
        },
        Case {
            name: "owner without an Azure id keeps the child reconciling, transition time kept",
            obj: waiting_vnet,
            owner: Some(rg()),
            provisioned: false,
            want: vec![
                ("/severity", json!("Info")),
                ("/reason", json!("Reconciling")),
                ("/lastTransitionTime", json!(EARLIER)),
            ],
            absent: vec![],
        },
        Case {
            name: "child id nests under the owner's id",
            obj: vnet(),
            owner: Some(provisioned_rg()),
            provisioned: true,
            want: vec![
                ("/status", json!("True")),
                (
                    "id",
                    json!(format!(
                        "{RG_ID}/providers/Microsoft.Network/virtualNetworks/vnet"
                    )),
                ),
            ],
            absent: vec![],
        },
        Case {
            name: "fail annotation waits for the delay",
            obj: with_fail(rg(), "QuotaExceeded"),
            owner: None,
            provisioned: false,
            want: vec![("/reason", json!("Reconciling"))],
            absent: vec![],
        },
        Case {
            name: "fail annotation fails with the ARM code",
            obj: with_fail(rg(), "QuotaExceeded"),
            owner: None,
            provisioned: true,
            want: vec![
                ("/status", json!("False")),
                ("/severity", json!("Error")),
                ("/reason", json!("QuotaExceeded")),
            ],
            absent: vec!["id"],
        },
        Case {
            name: "fail annotation that is not an ARM code still fails",
            obj: with_fail(rg(), "not a code!"),
            owner: None,
            provisioned: true,
            want: vec![
                ("/severity", json!("Error")),
                ("/reason", json!("ReconciliationFailedPermanently")),
            ],
            absent: vec![],
        },
        Case {
            name: "failed cluster reports provisioningState Failed",
            obj: with_fail(cluster(1), "InvalidTemplateDeployment"),
            owner: Some(provisioned_rg()),
            provisioned: true,
            want: vec![
                ("/reason", json!("InvalidTemplateDeployment")),
                ("properties/provisioningState", json!("Failed")),
            ],
            absent: vec![],
        },
        Case {
            name: "provisioned cluster reports id, URLs, version and state",
            obj: cluster(1),
            owner: Some(provisioned_rg()),
            provisioned: true,
            want: vec![
                ("/status", json!("True")),
                (
                    "id",
                    json!(format!(
                        "{RG_ID}/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1"
                    )),
                ),
                (
                    "properties/api/url",
                    json!("https://api.c1.eastus.aro-hcp.azuresim.invalid:443"),
                ),
                (
                    "properties/console/url",
                    json!(
                        "https://console-openshift-console.apps.c1.eastus.aro-hcp.azuresim.invalid"
                    ),
                ),
                ("properties/version/id", json!("4.20.0")),
                ("properties/provisioningState", json!("Succeeded")),
            ],
            absent: vec![],
        },
        Case {
            name: "new cluster is Accepted first",
            obj: cluster(1),
            owner: Some(provisioned_rg()),
            provisioned: false,
            want: vec![
                ("/reason", json!("Reconciling")),
                ("/severity", json!("Info")),
                ("properties/provisioningState", json!("Accepted")),
            ],
            absent: vec!["id"],
        },
        Case {
            name: "accepted cluster is Provisioning while the delay runs",
            obj: with_status(
                cluster(1),
                json!({"properties": {"provisioningState": "Accepted"}}),
            ),
            owner: Some(provisioned_rg()),
            provisioned: false,
            want: vec![
                ("/reason", json!("Reconciling")),
                ("properties/provisioningState", json!("Provisioning")),
            ],
            absent: vec!["id"],
        },
        Case {
            name: "warning annotation is a transient failure, still provisioning",
            obj: with_status(
                with_warning(rg(), "TooManyRequests"),
                json!({"properties": {"provisioningState": "Provisioning"}}),
            ),
            owner: None,
            provisioned: true,
            want: vec![
                ("/status", json!("False")),
                ("/severity", json!("Warning")),
                ("/reason", json!("TooManyRequests")),
                ("properties/provisioningState", json!("Provisioning")),
            ],
            absent: vec!["id"],
        },
        Case {
            name: "error annotation wins over the warning one",
            obj: with_warning(with_fail(rg(), "QuotaExceeded"), "TooManyRequests"),
            owner: None,
            provisioned: true,
            want: vec![
                ("/severity", json!("Error")),
                ("/reason", json!("QuotaExceeded")),
                ("properties/provisioningState", json!("Failed")),
            ],
            absent: vec![],
        },
        Case {
            name: "spec change goes back to reconciling, Updating, keeping what Azure reported",
            obj: bumped_cluster,
            owner: Some(provisioned_rg()),
            provisioned: false,
            want: vec![
                ("/status", json!("False")),
                ("/reason", json!("Reconciling")),
                ("/observedGeneration", json!(2)),
                ("/lastTransitionTime", json!(NOW)),
                ("properties/provisioningState", json!("Updating")),
                ("properties/api/url", json!("https://api.old:443")),
                (
                    "id",
                    json!(format!(
                        "{RG_ID}/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1"
                    )),
                ),
            ],
            absent: vec![],
        },
        Case {
            name: "transition time is kept while status stays True",
            obj: succeeded_cluster,
            owner: Some(provisioned_rg()),
            provisioned: true,
            want: vec![
                ("/lastTransitionTime", json!(EARLIER)),
                (
                    "properties/api/url",
                    json!("https://api.c1.eastus.aro-hcp.azuresim.invalid:443"),
                ),
            ],
            absent: vec![],
        },
        Case {
            name: "empty owner is an error a person must fix",
            obj: subnet_without_owner,
            owner: None,
            provisioned: true,
            want: vec![
                ("/severity", json!("Error")),
                ("/reason", json!("OwnerNotSet")),
            ],
            absent: vec![],
        },
        Case {
            name: "deleting object says so",
            obj: deleting,
            owner: None,
            provisioned: true,
            want: vec![
                ("/status", json!("False")),
                ("/severity", json!("Info")),
                ("/reason", json!("Deleting")),
                ("id", json!(RG_ID)),
                ("properties/provisioningState", json!("Deleting")),
            ],
            absent: vec![],
        },
        Case {
            name: "node pool reports replicas and state",
            obj: pool,
            owner: Some(provisioned_cluster),
            provisioned: true,
            want: vec![
                ("properties/replicas", json!(3)),
                ("properties/provisioningState", json!("Succeeded")),
                ("id", json!("/x/hcpOpenShiftClusters/c1/nodePools/p1")),
                (
                    "type",
                    json!("Microsoft.RedHatOpenShift/hcpOpenShiftClusters/nodePools"),
                ),
            ],
            absent: vec![],
        },
        Case {
            name: "owner given by ARM id needs no object",
            obj: object(
                "keyvault.azure.com/v1api20230701",
                "Vault",
                "kv",
                1,
                json!({"owner": {"armId": "/subscriptions/s/resourceGroups/ext"}}),
            ),
            owner: None,
            provisioned: true,
            want: vec![
                ("/status", json!("True")),
                (
                    "id",
                    json!(
                        "/subscriptions/s/resourceGroups/ext/providers/Microsoft.KeyVault/vaults/kv"
                    ),
                ),
            ],
            absent: vec![],
        },
    ];

    for case in cases {
        let status = desired_status(&case.obj, case.owner.as_ref(), case.provisioned, NOW);
        // Paths starting with '/' are read in the Ready condition, the others in the status.
        let resolve = |path: &str| -> Option<Value> {
            if path.starts_with('/') {
                ready_at(&status).pointer(path).cloned()
            } else {
                status.pointer(&format!("/{path}")).cloned()
            }
        };
        for (path, want) in &case.want {
            assert_eq!(
                resolve(path).as_ref(),
                Some(want),
                "{}: {path} in {status:#}",
                case.name
            );
        }
        for path in &case.absent {
            assert_eq!(
                resolve(path),
                None,
                "{}: {path} should be absent in {status:#}",
                case.name
            );
        }
        let message = ready_at(&status)["message"].as_str().unwrap();
        assert!(
            message.contains("simulator"),
            "{}: message must say it is simulated: {message}",
            case.name
        );
        assert!(
            message.contains("no real Azure"),
            "{}: {message}",
            case.name
        );
    }
}

#[test]
fn rendering_the_written_status_again_changes_nothing() {
    for (obj, owner, provisioned) in [
        // (A new object goes Accepted, then Provisioning: a deliberate second write.)
        (
            with_status(
                rg(),
                json!({"properties": {"provisioningState": "Accepted"}}),
            ),
            None,
            false,
        ),
        (rg(), None, true),
        (vnet(), None, true),
        (cluster(1), Some(provisioned_rg()), true),
        (
            with_fail(cluster(1), "QuotaExceeded"),
            Some(provisioned_rg()),
            true,
        ),
        (with_warning(rg(), "TooManyRequests"), None, true),
    ] {
        let first = desired_status(&obj, owner.as_ref(), provisioned, NOW);
        let written = with_status(obj.clone(), first.clone());
        let second = desired_status(
            &written,
            owner.as_ref(),
            provisioned,
            "2030-01-01T00:00:00Z",
        );
        assert_eq!(first, second, "a second pass must not produce a new write");
    }
}

#[test]
fn other_conditions_are_kept_and_ready_replaced_in_place() {
    let obj = with_status(
        rg(),
        json!({"conditions": [{"type": "Other", "status": "True"}, ready("False", "Reconciling", 1, EARLIER)]}),
    );
    let status = desired_status(&obj, None, true, NOW);
    let conditions = status["conditions"].as_array().unwrap();
    assert_eq!(conditions.len(), 2);
    assert_eq!(conditions[0], json!({"type": "Other", "status": "True"}));
    assert_eq!(conditions[1]["status"], "True");
    assert_eq!(conditions[1]["lastTransitionTime"], NOW);
}

#[test]
fn settled_means_final_for_the_current_generation() {
    let error = json!({"type": "Ready", "status": "False", "severity": "Error", "reason": "QuotaExceeded", "observedGeneration": 1});
    let warning = json!({"type": "Ready", "status": "False", "severity": "Warning", "reason": "TooManyRequests", "observedGeneration": 1});
    let failing = with_fail(rg(), "QuotaExceeded");
    let cases = [
        (
            rg(),
            json!([ready("True", "Succeeded", 1, EARLIER)]),
            1,
            true,
        ),
        (
            rg(),
            json!([ready("True", "Succeeded", 1, EARLIER)]),
            2,
            false,
        ),
        (failing.clone(), json!([error.clone()]), 1, true),
        // The failure is no longer asked for (annotation removed or changed): provision again.
        (rg(), json!([error.clone()]), 1, false),
        (with_fail(rg(), "Conflict"), json!([error]), 1, false),
        (
            with_warning(rg(), "TooManyRequests"),
            json!([warning]),
            1,
            false,
        ),
        (
            rg(),
            json!([ready("False", "Reconciling", 1, EARLIER)]),
            1,
            false,
        ),
        (rg(), json!([]), 1, false),
    ];
    for (obj, conditions, generation, want) in cases {
        let mut obj = with_status(obj, json!({"conditions": conditions}));
        obj["metadata"]["generation"] = json!(generation);
        assert_eq!(is_settled(&obj), want, "{obj}");
    }
    assert!(!is_settled(&rg()));
}

#[test]
fn phase_order_owner_then_delay_then_failure() {
    let failing_vnet = with_fail(vnet(), "Conflict");
    assert_eq!(
        phase(&failing_vnet, None, true),
        Phase::WaitingForOwner {
            kind: "ResourceGroup".into(),
            name: "rg".into()
        }
    );
    assert_eq!(
        phase(&failing_vnet, Some(&rg()), true),
        Phase::WaitingForOwnerProvisioning {
            kind: "ResourceGroup".into(),
            name: "rg".into()
        }
    );
    assert_eq!(
        phase(&failing_vnet, Some(&provisioned_rg()), false),
        Phase::Accepted
    );
    let accepted = with_status(
        failing_vnet.clone(),
        json!({"provisioningState": "Accepted"}),
    );
    assert_eq!(
        phase(&accepted, Some(&provisioned_rg()), false),
        Phase::Provisioning
    );
    assert_eq!(
        phase(&failing_vnet, Some(&provisioned_rg()), true),
        Phase::Failed {
            code: "Conflict".into()
        }
    );
    assert_eq!(
        phase(&vnet(), Some(&provisioned_rg()), true),
        Phase::Succeeded
    );
}

/// `provisioningState` sits where ASO's status of the kind has it: in `status.properties` for
/// resource groups, vaults and the ARO HCP kinds, in `status` for the network kinds, nowhere for
/// identities and role assignments, whose phase their `Ready` condition tells.
#[test]
fn provisioning_state_sits_where_aso_s_status_has_it() {
    for (kind, at) in [
        (
            "ResourceGroup",
            Some("/status/properties/provisioningState"),
        ),
        ("Vault", Some("/status/properties/provisioningState")),
        (
            "HcpOpenShiftClustersNodePool",
            Some("/status/properties/provisioningState"),
        ),
        ("VirtualNetwork", Some("/status/provisioningState")),
        ("UserAssignedIdentity", None),
        ("RoleAssignment", None),
    ] {
        assert_eq!(state_pointer(kind), at, "{kind}");
    }
    let mut identity = rg();
    identity["apiVersion"] = json!("managedidentity.azure.com/v1api20230131");
    identity["kind"] = json!("UserAssignedIdentity");
    identity["spec"]["owner"] = json!({"armId": RG_ID});
    assert_eq!(previous_state(&identity), None);
    let accepted = with_status(
        identity.clone(),
        desired_status(&identity, None, false, NOW),
    );
    assert!(accepted["status"].get("provisioningState").is_none());
    assert!(accepted["status"].get("properties").is_none());
    assert_eq!(previous_state(&accepted), Some("Provisioning"));
    assert_eq!(phase(&accepted, None, false), Phase::Provisioning);
    let done = with_status(accepted.clone(), desired_status(&accepted, None, true, NOW));
    assert_eq!(previous_state(&done), Some("Succeeded"));
}

//! The simulator's Azure Resource Manager endpoint (`management.<cloud>.azure-sim.invalid`):
//! reads only, answered from the simulated inventory, for tests and the demo. Nothing here is
//! Azure's state.
//!
//! `GET /subscriptions/{s}/resourceGroups/{rg}[/providers/...]?api-version=V`, with a bearer token
//! the simulated Entra ID issued for this cloud's Resource Manager:
//! - 200 with `id`, `name`, `type` (and `location` when the record has one) when the inventory
//!   holds the id;
//! - 404 `ResourceGroupNotFound` when its resource group is not there, else `ResourceNotFound`;
//! - 400 `MissingApiVersionParameter` without an api-version; 401 `InvalidAuthenticationToken`
//!   without a valid token (or one for another resource); 405 for anything but GET.
//!
//! Every simulated resource lives in the all-zero subscription ([`crate::arm::SUBSCRIPTION_ID`]):
//! the endpoint answers an id in any subscription from its zero-subscription record, and names the
//! id as it was asked for.
//!
//! Faults, for tests: queued in process ([`SimArm::push_faults`]), answered in order, one per
//! authenticated request, instead of serving it: 403 `AuthorizationFailed`, 429 with
//! `Retry-After`, or any status. Through the cluster, a record annotated [`READ_FAULT_ANNOTATION`]
//! (`403`, `429:<secs>` or a status) answers every read of its id so.

use super::{SimResponse, SimServices, json_response};
use crate::apply::azure_view::{NAMESPACE, record_name, resource};
use crate::azure::cloud::AzureEnvironment;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// Annotation on an inventory record: the fault every read of its id is answered with.
pub const READ_FAULT_ANNOTATION: &str = "aro-gitops.dev/simulate-arm-read";

/// Where the endpoint looks an ARM id up: the record (`spec`: `armId`, `type`, `location`...;
/// its `metadata.annotations`).
#[async_trait::async_trait]
pub trait ArmInventory: Send + Sync + 'static {
    async fn get(&self, arm_id: &str) -> Result<Option<Value>, String>;
}

/// The inventory records in the cluster a client reaches.
pub struct ClusterInventory(pub kube::Client);

#[async_trait::async_trait]
impl ArmInventory for ClusterInventory {
    async fn get(&self, arm_id: &str) -> Result<Option<Value>, String> {
        let api: kube::Api<kube::api::DynamicObject> =
            kube::Api::namespaced_with(self.0.clone(), NAMESPACE, &resource());
        match api.get_opt(&record_name(arm_id)).await {
            Ok(found) => Ok(found.map(|r| {
                json!({"metadata": {"annotations": r.metadata.annotations.unwrap_or_default()},
                       "spec": r.data.get("spec").cloned().unwrap_or(Value::Null)})
            })),
            // No record kind served: an empty inventory.
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// A fault the endpoint answers instead of serving a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArmFault {
    /// 403 `AuthorizationFailed`: the identity may not read the resource.
    Forbidden,
    /// 429 with `Retry-After: secs`.
    Throttle { retry_after_secs: u64 },
    /// Any status, with ARM's error body.
    Status(u16),
}

impl ArmFault {
    /// A fault as [`READ_FAULT_ANNOTATION`] writes it: `403`, `429:<secs>` (or `429`: 1 s), a status.
    pub fn parse(text: &str) -> Option<ArmFault> {
        let text = text.trim();
        match text.split_once(':') {
            Some(("429", secs)) => secs.trim().parse().ok().map(|s| ArmFault::Throttle {
                retry_after_secs: s,
            }),
            Some(_) => None,
            None if text == "403" => Some(ArmFault::Forbidden),
            None if text == "429" => Some(ArmFault::Throttle {
                retry_after_secs: 1,
            }),
            None => text
                .parse::<u16>()
                .ok()
                .filter(|c| (400..=599).contains(c))
                .map(ArmFault::Status),
        }
    }
}

/// The endpoint's inventory and its pending faults.
pub struct SimArm {
    inventory: Arc<dyn ArmInventory>,
    faults: Mutex<VecDeque<ArmFault>>,
}

impl SimArm {
    pub fn new(inventory: Arc<dyn ArmInventory>) -> SimArm {
        SimArm {
            inventory,
            faults: Mutex::default(),
        }
    }

    /// Queues `faults`, answered one per authenticated request from now on.
    pub fn push_faults(&self, faults: impl IntoIterator<Item = ArmFault>) {
        self.faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(faults);
    }

    /// Drops the pending faults.
    pub fn clear_faults(&self) {
        self.faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    fn next_fault(&self) -> Option<ArmFault> {
        self.faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front()
    }
}

fn arm_error(status: u16, code: &str, message: &str) -> SimResponse {
    json_response(
        status,
        &json!({"error": {"code": code, "message": message}}),
    )
}

/// `arm_id` as the simulator files it: in the all-zero subscription.
pub fn simulated_id(arm_id: &str) -> String {
    let parts: Vec<&str> = arm_id.trim_start_matches('/').splitn(3, '/').collect();
    match parts.as_slice() {
        [s, _, rest] if s.eq_ignore_ascii_case("subscriptions") => {
            format!("/subscriptions/{}/{rest}", crate::arm::SUBSCRIPTION_ID)
        }
        _ => arm_id.to_string(),
    }
}

/// The resource group's id of `arm_id` (`/subscriptions/s/resourceGroups/rg`), when it has one.
pub fn resource_group_of(arm_id: &str) -> Option<(String, String)> {
    let parts: Vec<&str> = arm_id.trim_start_matches('/').split('/').collect();
    match parts.as_slice() {
        [s, sub, g, rg, ..]
            if s.eq_ignore_ascii_case("subscriptions")
                && g.eq_ignore_ascii_case("resourceGroups") =>
        {
            Some((
                format!("/subscriptions/{sub}/resourceGroups/{rg}"),
                rg.to_string(),
            ))
        }
        _ => None,
    }
}

fn fault_response(fault: &ArmFault, client_id: &str, arm_id: &str) -> SimResponse {
    match fault {
        ArmFault::Forbidden => arm_error(
            403,
            "AuthorizationFailed",
            &format!(
                "The client '{client_id}' does not have authorization to read '{arm_id}' or the scope is invalid (simulated)."
            ),
        ),
        ArmFault::Throttle { retry_after_secs } => {
            let mut r = arm_error(
                429,
                "TooManyRequests",
                "The request is being throttled (simulated).",
            );
            r.headers_mut().insert(
                http::header::RETRY_AFTER,
                http::HeaderValue::from(*retry_after_secs),
            );
            r
        }
        ArmFault::Status(code) => arm_error(
            *code,
            "SimulatedFault",
            "The Azure simulator failed the request (simulated fault).",
        ),
    }
}

/// Serves one request to `environment`'s Resource Manager.
pub async fn handle(
    services: &SimServices,
    arm: &SimArm,
    environment: AzureEnvironment,
    method: &http::Method,
    uri: &http::Uri,
    headers: &http::HeaderMap,
) -> SimResponse {
    let authorization = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let claims = match services.tokens.validate_bearer(authorization) {
        Ok(c) => c,
        Err(e) => return arm_error(401, "InvalidAuthenticationToken", &e.to_string()),
    };
    let audience = services.endpoints(environment).resource_manager_resource();
    if !claims.resource.eq_ignore_ascii_case(&audience) {
        return arm_error(
            401,
            "InvalidAuthenticationTokenAudience",
            &format!(
                "The access token is for '{}', not '{audience}'.",
                claims.resource
            ),
        );
    }
    if method != http::Method::GET {
        return arm_error(
            405,
            "MethodNotAllowed",
            "The Azure simulator's Resource Manager serves reads only.",
        );
    }
    let arm_id = uri.path().to_string();
    let has_version = uri.query().unwrap_or_default().split('&').any(|p| {
        p.strip_prefix("api-version=")
            .is_some_and(|v| !v.is_empty())
    });
    if !has_version {
        return arm_error(
            400,
            "MissingApiVersionParameter",
            "The api-version query parameter (?api-version=) is required for all requests.",
        );
    }
    if let Some(fault) = arm.next_fault() {
        return fault_response(&fault, &claims.client_id, &arm_id);
    }
    let lookup = simulated_id(&arm_id);
    match arm.inventory.get(&lookup).await {
        Ok(Some(record)) => {
            let fault = record
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(READ_FAULT_ANNOTATION))
                .and_then(Value::as_str)
                .and_then(ArmFault::parse);
            if let Some(fault) = fault {
                return fault_response(&fault, &claims.client_id, &arm_id);
            }
            let spec = record.get("spec").cloned().unwrap_or(Value::Null);
            let name = arm_id.rsplit('/').next().unwrap_or_default();
            let mut body = json!({"id": arm_id, "name": name,
                "type": spec.get("type").cloned().unwrap_or(Value::Null),
                "properties": {"provisioningState": "Succeeded"}});
            if let Some(location) = spec.get("location") {
                body["location"] = location.clone();
            }
            json_response(200, &body)
        }
        Ok(None) => not_found(arm, &arm_id).await,
        Err(e) => arm_error(
            500,
            "InternalServerError",
            &format!("the simulated inventory could not be read: {e}"),
        ),
    }
}

async fn not_found(arm: &SimArm, arm_id: &str) -> SimResponse {
    let Some((group_id, group)) = resource_group_of(arm_id) else {
        return arm_error(
            404,
            "ResourceNotFound",
            &format!("The resource '{arm_id}' was not found."),
        );
    };
    let is_group = group_id.eq_ignore_ascii_case(arm_id);
    let group_exists = !is_group
        && matches!(
            arm.inventory.get(&simulated_id(&group_id)).await,
            Ok(Some(_))
        );
    if group_exists {
        arm_error(
            404,
            "ResourceNotFound",
            &format!("The Resource '{arm_id}' under resource group '{group}' was not found."),
        )
    } else {
        arm_error(
            404,
            "ResourceGroupNotFound",
            &format!("Resource group '{group}' could not be found."),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_subscription_reads_the_simulated_one() {
        assert_eq!(
            simulated_id("/subscriptions/8f1c/resourceGroups/rg"),
            format!(
                "/subscriptions/{}/resourceGroups/rg",
                crate::arm::SUBSCRIPTION_ID
            )
        );
        assert_eq!(simulated_id("/tenants/x"), "/tenants/x");
    }

    #[test]
    fn annotated_faults_parse() {
        assert_eq!(ArmFault::parse("403"), Some(ArmFault::Forbidden));
        assert_eq!(
            ArmFault::parse("429:7"),
            Some(ArmFault::Throttle {
                retry_after_secs: 7
            })
        );
        assert_eq!(
            ArmFault::parse("429"),
            Some(ArmFault::Throttle {
                retry_after_secs: 1
            })
        );
        assert_eq!(ArmFault::parse("503"), Some(ArmFault::Status(503)));
        assert_eq!(ArmFault::parse("200"), None);
        assert_eq!(ArmFault::parse("x:1"), None);
    }

    #[test]
    fn the_resource_group_of_an_id() {
        assert_eq!(
            resource_group_of(
                "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v"
            ),
            Some(("/subscriptions/s/resourceGroups/rg".into(), "rg".into()))
        );
        assert_eq!(resource_group_of("/subscriptions/s"), None);
    }
}

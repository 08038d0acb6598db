//! The Azure simulator: plays Azure Service Operator (ASO) against the local control plane.
//!
//! No real Azure is reachable where aro-gitops is developed and demonstrated, so something has to do
//! what ASO does: watch ASO resources (every kind in a group ending in `.azure.com`) and write what
//! ASO would write. The simulator:
//! - reports `WaitingForOwner` (severity Warning) while `spec.owner` names a missing object;
//! - moves a new resource through `provisioningState` `Accepted` → `Provisioning` → `Succeeded`
//!   (`Ready` False/`Reconciling`/Info, then True/`Succeeded`) over [`SimConfig::provisioning_delay`],
//!   and a changed spec through `Updating`; until it has reacted to a spec change, the `Ready`
//!   condition's `observedGeneration` lags behind `metadata.generation` (see [`status`]);
//! - writes the observed status of HcpOpenShiftClusters and their node pools, and the kubeconfig
//!   Secret an HcpOpenShiftCluster asks for (not under [`secret::WITHHOLD_ANNOTATION`]);
//! - serves, when asked to ([`AzureSimulator::serving_guests`]), each provisioned cluster's guest
//!   API (its APIServices, for the aggregated-APIServices gate) on one loopback HTTPS listener,
//!   at the address its kubeconfig Secret names, with a CA of its own that the kubeconfig
//!   carries ([`guest`], [`guest_api`], [`guest_tls`]); the annotations
//!   [`guest_api::UNAVAILABLE_ANNOTATION`], [`guest_api::MISSING_ANNOTATION`] and
//!   [`guest_api::READ_ERROR_ANNOTATION`] on the HcpOpenShiftCluster make it unhealthy on demand;
//! - puts [`FINALIZER`] on every ASO object, so deletes take time: under policy `manage` the object
//!   shows `Deleting` for the delay, then its simulated Azure resource is removed from the
//!   [`inventory`] and the finalizer released; `detach-on-delete` and `skip` release it at once and
//!   keep the simulated Azure resource ([`policy`]);
//! - under `skip`, only reads: `Ready` when the simulated Azure resource exists;
//! - fails on request: [`FAIL_ANNOTATION`] (a terminal failure, severity Error, `provisioningState`
//!   `Failed`) and [`WARN_ANNOTATION`] (a transient one, severity Warning, retried on every change
//!   until the annotation is removed). Either annotation's value is an ARM error code, used as the
//!   reason.
//!
//! - honours ASO's per-resource credential ([`credential`]): a resource whose
//!   `serviceoperator.azure.com/credential-from` Secret is missing, in another namespace or
//!   incomplete gets `Ready` False `SecretNotFound` and is not provisioned, nor deleted in the
//!   simulated Azure under `manage` (retried);
//!
//! Like the real ASO it only writes `status`, its finalizer and those Secrets, never a spec. Nothing
//! it writes pretends to be real: messages say "simulator", ARM ids use the all-zero subscription,
//! host names end in `.invalid`, tokens are fake, and Secrets carry
//! [`secret::SIMULATED_ANNOTATION`].
//!
//! Layout: [`azure`] (ids, URLs, owner kinds), [`credential`] (the credential check, pure),
//! [`status`] (what status to write, pure), [`secret`] (the kubeconfig Secrets, pure),
//! [`guest_api`] (the guest API's answers, pure) and [`guest`] (its listener), [`guest_tls`] (its
//! CA and certificate), [`inventory`] (which simulated Azure resources exist),
//! [`policy`] (reconcile policy and finalizer, pure), [`runner`] (the loop and its writes), `watch`
//! (discovery and watches), [`standalone`] (the simulator on its own against any API server,
//! `aro-gitops azure-simulator`).

pub mod azure;
pub mod credential;
pub mod guest;
pub mod guest_api;
pub mod guest_tls;
pub mod https;
pub mod inventory;
pub mod keyvault;
pub mod operator_identities;
pub mod policy;
pub mod runner;
pub mod secret;
pub mod standalone;
pub mod status;
mod watch;

pub use runner::AzureSimulator;
pub use status::{Phase, desired_status};

use std::time::Duration;

/// Annotation that makes the simulator fail a resource for good once the provisioning delay has
/// passed; its value is an ARM error code, e.g. `InvalidTemplateDeployment` or `QuotaExceeded`,
/// which becomes the `Ready` condition's reason. `Ready` False with severity Error (a person must
/// act), `provisioningState` `Failed`. Removing it makes the simulator provision the resource again.
pub const FAIL_ANNOTATION: &str = "aro-gitops.dev/simulate-arm-error";

/// Annotation that makes the simulator report a transient ARM failure once the provisioning delay
/// has passed; its value is an ARM error code (e.g. `TooManyRequests`), which becomes the `Ready`
/// condition's reason. `Ready` False with severity Warning: not given up, retried on every change
/// to the object, and `provisioningState` stays `Provisioning`/`Updating`. Removing the annotation
/// (a change) lets the next attempt succeed.
/// [`FAIL_ANNOTATION`] wins when both are set.
pub const WARN_ANNOTATION: &str = "aro-gitops.dev/simulate-arm-warning";

/// The finalizer ASO (and so the simulator) puts on the objects it reconciles.
pub const FINALIZER: &str = "serviceoperator.azure.com/finalizer";

/// The field manager of every write the simulator makes.
pub const FIELD_MANAGER: &str = "aro-gitops-azure-simulator";

/// ASO's per-resource reconcile policy: `manage` (default), `detach-on-delete`, `skip`
/// (see [`policy::ReconcilePolicy`]).
pub const RECONCILE_POLICY_ANNOTATION: &str = "serviceoperator.azure.com/reconcile-policy";

/// How the simulator behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimConfig {
    /// How long a resource stays `Reconciling` before it is `Succeeded` (or fails, when asked to),
    /// and how long a deleted resource under policy `manage` stays `Deleting`. Zero in tests (every
    /// step still happens, as a separate write); a few seconds in a demo so the progression shows.
    pub provisioning_delay: Duration,
}

impl SimConfig {
    /// No delay: every step happens as soon as the simulator sees the object (tests).
    pub fn instant() -> Self {
        SimConfig {
            provisioning_delay: Duration::ZERO,
        }
    }
}

impl Default for SimConfig {
    /// A few visible seconds per resource, for demonstrations.
    fn default() -> Self {
        SimConfig {
            provisioning_delay: Duration::from_secs(3),
        }
    }
}

//! The Azure simulator: plays Azure Service Operator (ASO) against the local control plane.
//!
//! No real Azure is reachable where aro-gitops is developed and demonstrated, so something has to do
//! what ASO does: watch ASO resources (every kind in a group ending in `.azure.com`) and write what
//! ASO would write. The simulator moves resources from `Reconciling` to `Succeeded` after a
//! configurable delay, reports `WaitingForOwner` while `spec.owner` names a missing object, writes the
//! observed status of HcpOpenShiftClusters and their node pools, writes the kubeconfig Secrets an
//! HcpOpenShiftCluster asks for, and fails a resource on request ([`FAIL_ANNOTATION`]).
//!
//! Like the real ASO it only writes `status` and those Secrets, never a spec. Nothing it writes
//! pretends to be real: messages say "simulator", ARM ids use the all-zero subscription, host names
//! end in `.invalid`, tokens are fake, and Secrets carry [`secret::SIMULATED_ANNOTATION`].
//!
//! Layout: [`azure`] (ids, URLs, owner kinds), [`status`] (what status to write, pure),
//! [`secret`] (the kubeconfig Secrets, pure), [`inventory`] (which simulated Azure resources exist),
//! [`runner`] (discovery, watches and writes).

pub mod azure;
pub mod inventory;
pub mod runner;
pub mod secret;
pub mod status;

pub use runner::AzureSimulator;
pub use status::{Phase, desired_status};

use std::time::Duration;

/// Annotation that makes the simulator fail a resource; its value is an ARM error code, e.g.
/// `InvalidTemplateDeployment` or `QuotaExceeded`, which becomes the `Ready` condition's reason.
pub const FAIL_ANNOTATION: &str = "aro-gitops.dev/simulate-arm-error";

/// The field manager of every write the simulator makes.
pub const FIELD_MANAGER: &str = "aro-gitops-azure-simulator";

/// ASO's per-resource reconcile policy; `skip` leaves the resource alone, as ASO does.
pub const RECONCILE_POLICY_ANNOTATION: &str = "serviceoperator.azure.com/reconcile-policy";

/// How the simulator behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimConfig {
    /// How long a resource stays `Reconciling` before it is `Succeeded` (or fails, when asked to).
    /// Zero in tests; a few seconds in a demo so the progression is visible.
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

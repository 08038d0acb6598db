//! The reconcile stage: the embedded ARO reconcilers, the readiness rule they share, and the
//! AzureClusterIdentity model (`identity`).

pub mod aro;
pub mod identity;
pub mod readiness;

//! The reconcile stage: the embedded ARO reconcilers, the readiness rule they share, and how a
//! cluster's identity reaches Azure Service Operator (`credentials`; the AzureClusterIdentity model
//! itself is `crate::identity`).

pub mod aro;
pub mod credentials;
pub mod readiness;

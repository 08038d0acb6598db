//! The reconcile stage: the embedded ARO reconcilers and the readiness rule they share.

pub mod aro;
pub mod readiness;

//! aro-gitops: a GitOps reconciliation agent for ARO HCP clusters.

pub mod object;
pub mod yaml;
pub mod controlplane;
pub mod cli;
pub mod plan;
pub mod reconcile;

//! aro-gitops: a GitOps reconciliation agent for ARO HCP clusters.

pub mod cli;
pub mod controlplane;
pub mod object;
pub mod plan;
pub mod reconcile;
pub mod source;
pub mod validate;
pub mod yaml;

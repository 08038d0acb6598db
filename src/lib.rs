//! aro-gitops: a GitOps reconciliation agent for ARO HCP clusters.

pub mod azuresim;
pub mod cli;
pub mod controlplane;
pub mod object;
pub mod plan;
pub mod reconcile;
pub mod render;
pub mod source;
pub mod validate;
pub mod yaml;

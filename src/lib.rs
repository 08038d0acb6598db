//! aro-gitops: a GitOps reconciliation agent for ARO HCP clusters.

pub mod object;
pub mod yaml;

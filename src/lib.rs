//! aro-gitops: a GitOps reconciliation agent for ARO HCP clusters.

pub mod agent;
pub mod apply;
pub mod azure;
pub mod azuresim;
pub mod cli;
pub mod controlplane;
pub mod crdschema;
pub mod decrypt;
pub mod health;
pub mod keyvault;
pub mod metrics;
pub mod object;
pub mod output;
pub mod plan;
pub mod reconcile;
pub mod redact;
pub mod render;
pub mod report;
pub mod secrets;
pub mod selector;
pub mod serving;
pub mod source;
pub mod trigger;
pub mod unit;
pub mod validate;
pub mod yaml;

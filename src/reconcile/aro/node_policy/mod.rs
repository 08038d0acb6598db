//! The AutoNodePolicy in the reconcilers. Which policy counts and the merge into a node pool are
//! pure decisions that `validate` also takes before anything is applied: they live in
//! [`crate::validate::node_policy`] and are re-exported here. What is the reconcilers' own: the
//! policies' status (`status`).

mod status;

pub use crate::validate::node_policy::*;
pub use status::{
    NODE_POOLS_NOT_UPDATED, NOT_DEFAULT, POLICY_APPLIED, ignored, policy_status_patches,
};

#[cfg(test)]
mod tests;

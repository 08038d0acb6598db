//! The safety guarantees, end to end through the binary, on copies of `examples-repo/` in real git
//! repositories and the embedded local control plane (Azure simulated). Each test is named after
//! the case it guards (`case_NN_...`): `ownership` has objects owned by one unit, inventories only
//! the agent writes and empty renders; `azure_names` two objects mapping to one Azure resource;
//! `drift` like compared with like; `output` redaction, errors where the user looks, paths and the
//! command line; `unit_validation` a unit validated whole before its first write; `control_plane`
//! the local control plane's limits; `sops` SOPS-encrypted files (issue 16).

#[path = "safety/azure_names.rs"]
mod azure_names;
mod common;
#[path = "safety/control_plane.rs"]
mod control_plane;
#[path = "safety/drift.rs"]
mod drift;
#[path = "safety/fleets.rs"]
mod fleets;
#[path = "safety/output.rs"]
mod output;
#[path = "safety/ownership.rs"]
mod ownership;
#[path = "safety/secrets.rs"]
mod secrets;
#[path = "safety/sops.rs"]
mod sops;
#[path = "safety/unit_validation.rs"]
mod unit_validation;

pub use common::fleet::{DEV, Fleet, Output, PROD};
pub use common::git;

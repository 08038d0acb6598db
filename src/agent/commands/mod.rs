//! The CLI glue of the agent's commands: `run`, `plan`, `drift` and `rollout` (each builds what its command needs
//! and hands it to the controller, or reads and reports).

pub mod drift;
pub mod plan;
pub mod rollout;
pub mod run;

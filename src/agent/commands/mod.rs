//! The CLI glue of the agent's commands: `run`, `plan` and `drift` (each builds what its command needs
//! and hands it to the controller, or reads and reports).

pub mod drift;
pub mod plan;
pub mod run;

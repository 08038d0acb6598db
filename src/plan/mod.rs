//! The plan stage: compares what git wants with what is live, object by object, and orders each unit's
//! objects by their dependencies. Pure decisions, no IO: the apply stage acts on what this stage returns.

pub mod azure_identity;
pub mod decide;
pub mod diff;
pub mod drift;
pub mod graph;
pub mod normalize;
pub mod ownership;
pub mod policy;
pub mod preview;
pub mod prune;

pub use diff::{Action, ObjectDiff, UnitSummary, diff_object, diff_revisions};
pub use graph::{CycleError, Graph, Node, build};
pub use normalize::comparable;

//! The status page (`run --status-bind-address`): a read-only web page served by the running
//! agent, showing every unit and cluster (phase, step on the ARO dependency chain, conditions,
//! revision, drift, errors; failed first), a page per cluster with its history on the status
//! branch, live updates over server-sent events, and the snapshot as JSON.
//!
//! The agent feeds a [`Feed`] where outcomes are produced; the page reads its snapshot and never
//! reads the cluster or the remote. The HTML is rendered on the server (it works with JavaScript
//! off); the script and style are embedded in the binary; every value from the repository or a
//! cluster is redacted and escaped ([`html::text`]).

mod cluster;
mod feed;
mod history;
pub mod html;
mod published;
pub mod rendered;
mod rollout;
mod server;

pub use feed::{DESCRIPTION, Feed, LeaderReport, Snapshot, UnitView, annotations_of};
pub use history::{History, HistoryEntry, HistoryError};
pub use published::{Published, report_of};
pub use rendered::{RenderedObject, rendered_objects};
pub use server::{CSP, router, serve};

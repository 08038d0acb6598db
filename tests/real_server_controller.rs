//! The controller's features end to end on the real server: the binary run as deploy/base's
//! ServiceAccount against kube-apiserver v1.37 and etcd (`scripts/real-cluster`), so the real RBAC
//! authorizer holds it to the shipped ClusterRole and Role and a missing permission fails the
//! test. The fleet is small (`common::real_agent`: a unit of plain objects, no Azure): these tests
//! are about the controller, `tests/real_server.rs` has the fleet's core flows.
//!
//! `sops` decrypts with the age identities of a Secret (`--decryption-secret`) and of a file
//! (`--decryption-key-file`); `signatures` refuses an unsigned head (`--verify-signatures`);
//! `webhook` fetches on a signed GitHub push and shows the units on the status page; `leader`
//! runs two agents on one real Lease (a kill -9 handover, then a SIGTERM that releases it);
//! `in_cluster` runs `--in-cluster` with the service account's files laid out as in a pod, in a
//! private mount namespace.
//!
//! Each test starts its own cluster (about 7 s).

mod common;

#[path = "real_server_controller/in_cluster.rs"]
mod in_cluster;
#[path = "real_server_controller/leader.rs"]
mod leader;
#[path = "real_server_controller/signatures.rs"]
mod signatures;
#[path = "real_server_controller/sops.rs"]
mod sops;
#[path = "real_server_controller/webhook.rs"]
mod webhook;

use common::real_agent::{RealFleet, all_output};
use std::time::Duration;

/// How long a long-running agent may take to start serving and to converge the small fleet (a
/// debug build, a shared machine).
const DEADLINE: Duration = Duration::from_secs(120);
/// The unit every test's fleet has: `clusters/app` (Namespace `app`, ConfigMap `app/settings`).
const APP: &str = "app";

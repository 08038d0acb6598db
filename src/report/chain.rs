//! Where a cluster stands on the seed's dependency chain, judged from the live objects of its unit.
//!
//! The steps are numbered 1 to 10 by this agent:
//! 1 infrastructure created, 2 ResourcesReady, 3 HcpOpenShiftCluster created, 4 HcpClusterReady,
//! 5 kubeconfig Secret written, 6 AROControlPlane ready, 7 AROCluster ready, 8 AROCluster
//! provisioned, 9 node pools ready, 10 ExternalAuth ready. The seed's own steps 9 and 10 (CAPI's
//! `InfrastructureProvisioned`, CAPI connecting to the cluster) belong to Cluster API and are not
//! tracked here; our 9 and 10 are the node pools and the ExternalAuth that follow them.
//!
//! The chain's `step` is the first failed step, else the first step not done (a step that does not
//! apply counts as done), else the last step when all are done.

mod live;
mod steps;

#[cfg(test)]
#[path = "chain_tests.rs"]
mod tests;

use crate::object::ObjectKey;
use serde::Serialize;
use serde_json::Value;

/// The number of steps this agent tracks.
pub const CHAIN_STEPS: u32 = 10;

/// The steps' names, in order (step `i + 1` is `STEP_NAMES[i]`).
pub const STEP_NAMES: [&str; CHAIN_STEPS as usize] = [
    "infrastructure created",
    "ResourcesReady",
    "HcpOpenShiftCluster created",
    "HcpClusterReady",
    "kubeconfig Secret written",
    "AROControlPlane ready",
    "AROCluster ready",
    "AROCluster provisioned",
    "node pools ready",
    "ExternalAuth ready",
];

/// What the cluster is waiting for at each step, for a person.
const WAITING_FOR: [&str; CHAIN_STEPS as usize] = [
    "creating the infrastructure",
    "waiting for the infrastructure to be ready",
    "waiting for the HcpOpenShiftCluster to be created",
    "waiting for the hosted control plane to be ready",
    "waiting for the kubeconfig Secret",
    "waiting for the AROControlPlane to be ready",
    "waiting for the AROCluster to be ready",
    "waiting for the AROCluster to be provisioned",
    "waiting for the node pools to be ready",
    "waiting for the ExternalAuth to be ready",
];

/// Where a cluster stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Chain {
    /// The step the cluster is at (see the module header); 0 when no cluster is known.
    pub step: u32,
    pub total: u32,
    /// A short description of `step`, for a person.
    pub stage: String,
    pub steps: Vec<ChainStep>,
}

/// One step and how far it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainStep {
    pub step: u32,
    pub name: &'static str,
    /// Done or not applicable.
    pub done: bool,
    pub state: StepState,
    /// What was seen: counts, names, the condition's message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// How far one step is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum StepState {
    Done,
    Waiting,
    /// An object of this step failed (ASO severity `Error`): a person has to act.
    Failed,
    /// Nothing to do for this cluster (no node pool, no ExternalAuth).
    NotApplicable,
}

impl StepState {
    pub fn as_str(self) -> &'static str {
        match self {
            StepState::Done => "done",
            StepState::Waiting => "waiting",
            StepState::Failed => "failed",
            StepState::NotApplicable => "not applicable",
        }
    }
}

impl Chain {
    /// The step the cluster is at, unless no cluster is known.
    pub fn current(&self) -> Option<&ChainStep> {
        self.steps.iter().find(|s| s.step == self.step)
    }

    /// Whether a step failed.
    pub fn is_failed(&self) -> bool {
        self.steps.iter().any(|s| s.state == StepState::Failed)
    }

    /// Whether every step is done (or does not apply).
    pub fn is_complete(&self) -> bool {
        !self.steps.is_empty() && self.steps.iter().all(|s| s.done)
    }

    /// `4/10 HcpClusterReady`, `2/10 ResourcesReady failed`, `10/10 complete`: for a terminal column.
    pub fn short(&self) -> String {
        let at = format!("{}/{}", self.step, self.total);
        match self.current() {
            None => format!("{at} unknown"),
            Some(_) if self.is_complete() => format!("{at} complete"),
            Some(s) if s.state == StepState::Failed => format!("{at} {} failed", s.name),
            Some(s) => format!("{at} {}", s.name),
        }
    }

    /// The chain of a unit whose cluster is not known.
    fn unknown() -> Chain {
        Chain {
            step: 0,
            total: CHAIN_STEPS,
            stage: "no cluster known".to_string(),
            steps: STEP_NAMES
                .iter()
                .zip(1..)
                .map(|(name, step)| ChainStep {
                    step,
                    name,
                    done: false,
                    state: StepState::Waiting,
                    detail: None,
                })
                .collect(),
        }
    }
}

/// Places the cluster on the dependency chain, judging each step from `live`.
///
/// `cluster` is the CAPI Cluster; when `None`, the one CAPI Cluster (else the one AROCluster) among
/// `live` is taken, and without one the chain says no cluster is known.
pub fn chain(live: &[Value], cluster: Option<&ObjectKey>) -> Chain {
    let target = match cluster {
        Some(c) => Some((c.namespace.as_deref().map(str::to_string), c.name.clone())),
        None => infer_cluster(live),
    };
    let Some((namespace, name)) = target else {
        return Chain::unknown();
    };
    let context = steps::Context::resolve(live::Live::new(live, namespace.as_deref()), &name);
    let steps: Vec<ChainStep> = context
        .judge()
        .into_iter()
        .zip(STEP_NAMES)
        .zip(1..)
        .map(|((judged, name), step)| ChainStep {
            step,
            name,
            done: matches!(judged.state, StepState::Done | StepState::NotApplicable),
            state: judged.state,
            detail: judged.detail,
        })
        .collect();
    let at = steps
        .iter()
        .find(|s| s.state == StepState::Failed)
        .or_else(|| steps.iter().find(|s| !s.done));
    let (step, stage) = match at {
        None => (CHAIN_STEPS, "complete: all steps done".to_string()),
        Some(s) => (s.step, stage_of(s)),
    };
    Chain {
        step,
        total: CHAIN_STEPS,
        stage,
        steps,
    }
}

fn stage_of(s: &ChainStep) -> String {
    let detail = s.detail.as_deref().unwrap_or_default();
    if s.state == StepState::Failed {
        return format!("failed at step {}: {detail}", s.step);
    }
    let waiting = WAITING_FOR[(s.step - 1) as usize];
    if detail.is_empty() {
        waiting.to_string()
    } else {
        format!("{waiting} ({detail})")
    }
}

/// The cluster of a unit whose Cluster key is unknown: the only CAPI Cluster, else the only AROCluster.
fn infer_cluster(live: &[Value]) -> Option<(Option<String>, String)> {
    let only = |group: &str, kind: &str| {
        let mut found = live.iter().filter(|o| live::is_kind(o, group, kind));
        match (found.next(), found.next()) {
            (Some(o), None) => live::cluster_name_of(o)
                .map(|name| (live::namespace_of(o).map(str::to_string), name.to_string())),
            _ => None,
        }
    };
    only(live::CAPI_GROUP, "Cluster").or_else(|| only(live::INFRA_GROUP, "AROCluster"))
}

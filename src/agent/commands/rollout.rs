//! `aro-gitops rollout resume --revision SHA`: records on the fleet's rollout Lease (see
//! [`crate::agent::rollout_record`]) that the paused rollout of that revision goes on: the units
//! failing when it paused no longer hold it. The agent reads the record before it decides, so the
//! decision survives restarts and leader handovers.

use crate::agent::commands::drift::fleet_at_head;
use crate::agent::controller::rollout_record::{self, RecordError, sha7};
use crate::agent::{AgentError, Environment, LiveTarget};
use crate::plan::ownership::scope::FleetNaming;
use crate::rollout::Resume;
use crate::source::GitRef;
use std::path::Path;

/// Why `rollout resume` did not resume.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    #[error(transparent)]
    Agent(#[from] AgentError),
    #[error(transparent)]
    Record(#[from] RecordError),
}

/// Resumes the paused rollout of `revision` of the fleet the flags and the branch `reference`
/// name (as `drift` names it), on `target`.
pub async fn resume(
    repo: &str,
    reference: GitRef,
    naming: &FleetNaming,
    state_dir: &Path,
    target: &LiveTarget,
    revision: &str,
) -> Result<Resume, ResumeError> {
    crate::agent::env::prepare_state_dir(state_dir)?;
    let scope = fleet_at_head(repo, reference, naming, state_dir).await?;
    let env = Environment::start(state_dir, target, None).await?;
    let result = rollout_record::record_resume(env.cluster.client(), &scope.name, revision).await;
    env.shutdown().await;
    Ok(result?)
}

/// The line `rollout resume` prints: `rollout of <sha7> resumed: N failing units forgiven (...)`.
pub fn resumed_line(resume: &Resume) -> String {
    let units: Vec<&str> = resume.forgiven.iter().map(String::as_str).collect();
    format!(
        "rollout of {} resumed: {} failing units forgiven ({})",
        sha7(&resume.revision),
        units.len(),
        units.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_the_revision_and_the_units() {
        let r = Resume {
            revision: "0123456789abcdef".into(),
            forgiven: ["clusters/dev-2".to_string(), "clusters/dev-1".to_string()].into(),
        };
        assert_eq!(
            resumed_line(&r),
            "rollout of 0123456 resumed: 2 failing units forgiven (clusters/dev-1, clusters/dev-2)"
        );
    }
}

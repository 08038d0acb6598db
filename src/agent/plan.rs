//! `aro-gitops plan`: render every unit of a revision and diff it against live state, object by
//! object, without writing anything.

use super::{AgentError, Environment, prepare};
use crate::object::ObjectKey;
use crate::plan::{ObjectDiff, UnitSummary, diff_object};
use crate::report::UnitError;
use crate::source::{GitRef, Source, SourceConfig};
use std::collections::HashMap;
use std::path::Path;

/// The plan of one unit.
#[derive(Debug)]
pub struct UnitPlan {
    pub unit: String,
    pub diffs: Vec<ObjectDiff>,
    pub summary: UnitSummary,
    pub errors: Vec<UnitError>,
}

/// The plan of a revision.
#[derive(Debug)]
pub struct PlanOutput {
    pub commit: String,
    /// What the desired state was compared with.
    pub against: String,
    pub units: Vec<UnitPlan>,
}

impl PlanOutput {
    pub fn has_changes(&self) -> bool {
        self.units.iter().any(|u| u.summary.has_changes())
    }

    pub fn has_errors(&self) -> bool {
        self.units.iter().any(|u| !u.errors.is_empty())
    }
}

/// Plans `repo` at `reference` against the cluster in `kubeconfig`, or against the embedded
/// control plane's state in `state_dir`.
pub async fn plan(
    repo: &str,
    reference: GitRef,
    state_dir: &Path,
    kubeconfig: Option<&Path>,
) -> Result<PlanOutput, AgentError> {
    let env = Environment::start(state_dir, kubeconfig, None).await?;
    let config = SourceConfig {
        url: repo.to_string(),
        reference,
        state_dir: state_dir.join("source"),
    };
    let revision = tokio::task::spawn_blocking(move || -> Result<_, AgentError> {
        let mut source = Source::open(config)?;
        Ok(source.sync()?.revision().clone())
    })
    .await
    .map_err(|e| AgentError::Task(e.to_string()))??;
    let root = revision.checkout.clone();
    let prepared = tokio::task::spawn_blocking(move || -> Result<_, AgentError> {
        Ok(crate::unit::discover(&root)?
            .into_iter()
            .map(|u| (u.clone(), prepare::prepare(&root, &u)))
            .collect::<Vec<_>>())
    })
    .await
    .map_err(|e| AgentError::Task(e.to_string()))??;
    let against = match kubeconfig {
        Some(k) => format!("the cluster in {}", k.display()),
        None => format!(
            "the embedded local control plane in {}",
            state_dir.join("control-plane").display()
        ),
    };
    let mut units = Vec::new();
    for (unit, p) in prepared {
        let p = match p {
            Ok(p) => p,
            Err(errors) => {
                units.push(UnitPlan {
                    unit: unit.name(),
                    diffs: vec![],
                    summary: UnitSummary::default(),
                    errors,
                });
                continue;
            }
        };
        let mut live: HashMap<ObjectKey, serde_json::Value> = HashMap::new();
        let mut errors = Vec::new();
        let mut listed = std::collections::BTreeSet::new();
        for o in &p.objects {
            if !listed.insert((
                o.key.group.clone(),
                o.key.version.clone(),
                o.key.kind.clone(),
                o.key.namespace.clone(),
            )) {
                continue;
            }
            match env.cluster.list(&o.key, None).await {
                Ok(items) => {
                    for item in items {
                        if let Ok(k) = ObjectKey::from_object(&item) {
                            live.insert(
                                ObjectKey {
                                    version: o.key.version.clone(),
                                    ..k
                                },
                                item,
                            );
                        }
                    }
                }
                Err(e) => errors.push(UnitError {
                    object: Some(o.key.clone()),
                    file: Some(o.origin.file.clone()),
                    message: e.to_string(),
                }),
            }
        }
        let diffs: Vec<ObjectDiff> = p
            .order
            .iter()
            .map(|&i| diff_object(Some(&p.objects[i].object), live.get(&p.objects[i].key)))
            .collect();
        let summary = UnitSummary::from_diffs(&diffs);
        units.push(UnitPlan {
            unit: unit.name(),
            diffs,
            summary,
            errors,
        });
    }
    env.shutdown().await;
    Ok(PlanOutput {
        commit: revision.commit,
        against,
        units,
    })
}

//! `aro-gitops drift`: compares live state with the revision last applied to each unit (from its
//! inventory), and lists the fields that drifted and the field managers that changed them. It
//! changes nothing. Secret fields are named, never shown.

use crate::agent::commands::plan::view::{AzureFindings, ListedView};
use crate::agent::pass::prepare::{self, PreparedUnit};
use crate::agent::{AgentError, Environment, LiveTarget};
use crate::apply::inventory::{self, Inventory};
use crate::apply::live_index::LiveIndex;
use crate::plan::decide;
use crate::plan::ownership::FleetScope;
use crate::plan::ownership::scope::{FleetNaming, foreign_line};
use crate::plan::policy::Policy;
use crate::source::{GitRef, Source, SourceConfig};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

/// Drift of every unit the agent has applied.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DriftReport {
    /// What live state was read from.
    pub against: String,
    pub units: Vec<UnitDrift>,
    /// Other fleets' inventories found and left alone (see [`crate::plan::ownership::scope`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Drift of one unit.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnitDrift {
    pub unit: String,
    /// The revision last applied (what live state is compared with).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    pub objects: Vec<ObjectDrift>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// One drifted object.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectDrift {
    /// `Kind/namespace/name`.
    pub object: String,
    pub api_version: String,
    /// The object is gone from the cluster.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub missing: bool,
    pub fields: Vec<FieldDrift>,
}

/// One drifted field.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldDrift {
    pub path: String,
    /// What was applied; absent for Secrets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied: Option<Value>,
    /// What is live; absent when the field is gone, and for Secrets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<Value>,
    /// The field managers that own the field live, other than aro-gitops (who changed it).
    pub managers: Vec<String>,
}

impl DriftReport {
    pub fn has_drift(&self) -> bool {
        self.units.iter().any(|u| !u.objects.is_empty())
    }

    pub fn has_errors(&self) -> bool {
        self.units.iter().any(|u| !u.errors.is_empty())
    }

    /// 1 on an error, else 2 when something drifted, else 0 (as `plan`).
    pub fn exit_code(&self) -> u8 {
        if self.has_errors() {
            1
        } else if self.has_drift() {
            2
        } else {
            0
        }
    }

    /// The report for a terminal.
    pub fn text(&self) -> String {
        let mut out = format!("Drift against {}\n", self.against);
        for w in &self.warnings {
            let _ = writeln!(out, "{w}");
        }
        for u in &self.units {
            let rev = u
                .revision
                .as_deref()
                .map(|r| &r[..r.len().min(12)])
                .unwrap_or("?");
            let _ = writeln!(out, "\n{} (applied {rev}):", u.unit);
            for e in &u.errors {
                let _ = writeln!(out, "  error: {e}");
            }
            if u.objects.is_empty() && u.errors.is_empty() {
                out.push_str("  no drift\n");
            }
            for o in &u.objects {
                if o.missing {
                    let _ = writeln!(out, "  {}: deleted from the cluster", o.object);
                    continue;
                }
                let _ = writeln!(out, "  {}:", o.object);
                for f in &o.fields {
                    let show = |v: &Option<Value>| match v {
                        Some(v) => v.to_string(),
                        None => "(absent or hidden)".into(),
                    };
                    let by = if f.managers.is_empty() {
                        String::from("no other field manager recorded")
                    } else {
                        format!("changed by {}", f.managers.join(", "))
                    };
                    let _ = writeln!(
                        out,
                        "    {}: applied {} → live {} ({by})",
                        f.path,
                        show(&f.applied),
                        show(&f.live)
                    );
                }
            }
        }
        let drifted: usize = self.units.iter().map(|u| u.objects.len()).sum();
        let _ = writeln!(
            out,
            "\n{drifted} object(s) drifted in {} unit(s).",
            self.units.iter().filter(|u| !u.objects.is_empty()).count()
        );
        out
    }
}

/// The drift of one unit: `prepared` is the unit rendered at its last applied revision, `live` the
/// cluster's objects by identity. Each object is decided as a pass would decide it then
/// ([`crate::plan::decide`]): what it finds drifted, or missing, is the drift.
pub fn unit_drift(
    inv: &Inventory,
    prepared: &prepare::Prepared,
    live: &LiveIndex,
    fleet: &str,
) -> Vec<ObjectDrift> {
    let name = prepared.unit.name();
    let no_findings = AzureFindings::new();
    let view = ListedView::new(&name, prepared, inv, live, &no_findings);
    let mut view = view.of_fleet(fleet).at_applied_revision();
    let steps = decide::decide_unit(&prepared.order, &mut view);
    let mut out = Vec::new();
    for (i, step) in steps {
        let o = &prepared.objects[i];
        // Only what the agent applied, and writes, can drift.
        let applied = inv.get(&o.key).is_some_and(|e| e.applied.is_some());
        if !applied || step.decision.is_none_or(|d| d.policy == Policy::Skip) {
            continue;
        }
        let missing = view.current(i).is_none();
        let fields: Vec<FieldDrift> = step
            .drift
            .into_iter()
            .map(|f| FieldDrift {
                path: f.path,
                applied: f.desired,
                live: f.live,
                managers: f.managers,
            })
            .collect();
        if !missing && fields.is_empty() {
            continue;
        }
        out.push(ObjectDrift {
            object: o.key.to_string(),
            api_version: o.key.api_version(),
            missing,
            fields,
        });
    }
    out
}

/// Renders `repo` at `commit`, from the run's own git mirror (a plain folder's commits exist only
/// there), checked out under `state_dir/drift`.
async fn render_commit(
    repo: &str,
    commit: &str,
    state_dir: &Path,
    owners: Arc<BTreeMap<String, crate::apply::inventory::Inventory>>,
) -> Result<Vec<PreparedUnit>, AgentError> {
    let config = SourceConfig {
        url: repo.to_string(),
        reference: GitRef::Commit(commit.to_string()),
        state_dir: state_dir.join("source"),
    };
    let into = state_dir.join("drift");
    let commit = commit.to_string();
    tokio::task::spawn_blocking(move || -> Result<_, AgentError> {
        let source = Source::open(config)?;
        let checkout = source.materialize_commit(&commit, &into)?;
        let units = crate::unit::discover(&checkout)?;
        let mut units = prepare::prepare_all(&checkout, units);
        crate::agent::fleet::check(&mut units, crate::agent::fleet::owner_in(&owners), None);
        Ok(units)
    })
    .await
    .map_err(|e| AgentError::Task(e.to_string()))?
}

/// The fleet the branch `reference` names (its aro-gitops.yaml), with the flags.
pub(in crate::agent) async fn fleet_at_head(
    repo: &str,
    reference: GitRef,
    naming: &FleetNaming,
    state_dir: &Path,
) -> Result<FleetScope, AgentError> {
    let config = SourceConfig {
        url: repo.to_string(),
        reference,
        state_dir: state_dir.join("source"),
    };
    let setting = tokio::task::spawn_blocking(move || -> Result<_, AgentError> {
        let mut source = Source::open(config)?;
        let revision = source.sync()?.revision().clone();
        Ok(crate::unit::fleet_setting(&revision.checkout)?)
    })
    .await
    .map_err(|e| AgentError::Task(e.to_string()))??;
    Ok(naming.at(setting.as_deref(), repo))
}

/// Runs `aro-gitops drift`: every unit with an inventory, against the revision last applied to it.
/// `use_azure_simulator` (`--use-azure-simulator`) only checks that the simulator runs: drift reads
/// no Azure.
/// Drift is judged against what was applied, whatever the branch says now.
/// `naming`: the fleet flags; the fleet's name is read from the branch `reference` names (its
/// aro-gitops.yaml), as `run` reads it.
pub async fn drift(
    repo: &str,
    reference: GitRef,
    naming: &FleetNaming,
    state_dir: &Path,
    target: &LiveTarget,
    use_azure_simulator: bool,
) -> Result<DriftReport, AgentError> {
    crate::agent::env::prepare_state_dir(state_dir)?;
    let _ = std::fs::remove_dir_all(state_dir.join("drift"));
    let mut env = Environment::start(state_dir, target, None).await?;
    if use_azure_simulator {
        env.use_azure_simulator(state_dir).await?;
    }
    let against = match target {
        LiveTarget::Kubeconfig(k) => format!("the cluster in {}", k.display()),
        LiveTarget::InCluster => "the cluster this pod runs in".to_string(),
        LiveTarget::Embedded => format!(
            "the embedded local control plane in {}",
            state_dir.join("control-plane").display()
        ),
    };
    let scope = fleet_at_head(repo, reference, naming, state_dir).await?;
    let result = async {
        let (inventories, broken, foreign) =
            inventory::read_all(&env.cluster, &scope, |_| true).await?;
        let keys = inventories
            .values()
            .flat_map(|i| i.entries.values().map(|e| e.key()));
        let mut live = LiveIndex::default();
        if let Some(e) = live.read(&env.cluster, keys).await.into_iter().next() {
            return Err(e.into());
        }
        let owners = Arc::new(inventories.clone());
        let mut by_revision: BTreeMap<String, Vec<PreparedUnit>> = BTreeMap::new();
        let mut units = Vec::new();
        for (name, inv) in &inventories {
            let Some(rev) = &inv.revision else {
                units.push(UnitDrift {
                    unit: name.clone(),
                    revision: None,
                    objects: vec![],
                    errors: vec!["no revision was fully applied to this unit yet".into()],
                });
                continue;
            };
            if !by_revision.contains_key(rev) {
                let rendered = render_commit(repo, rev, state_dir, owners.clone()).await?;
                by_revision.insert(rev.clone(), rendered);
            }
            let rendered = &by_revision[rev];
            let found = rendered.iter().find(|(u, _)| &u.name() == name);
            let (objects, errors) = match found {
                Some((_, Ok(p))) => (unit_drift(inv, p, &live, &scope.name), vec![]),
                Some((_, Err(errs))) => (vec![], errs.iter().map(|e| e.message.clone()).collect()),
                None => (vec![], vec![format!("the unit is not in revision {rev}")]),
            };
            units.push(UnitDrift {
                unit: name.clone(),
                revision: Some(rev.clone()),
                objects,
                errors,
            });
        }
        for e in broken {
            units.push(UnitDrift {
                unit: String::from("?"),
                revision: None,
                objects: vec![],
                errors: vec![e.to_string()],
            });
        }
        let warnings = (foreign.iter())
            .map(|(fleet, units)| foreign_line(fleet, units))
            .collect();
        Ok::<_, AgentError>((units, warnings))
    }
    .await;
    env.shutdown().await;
    let (units, warnings) = result?;
    Ok(DriftReport {
        against,
        units,
        warnings,
    })
}

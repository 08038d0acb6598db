//! `aro-gitops plan`: what a revision would do, per cluster, without writing anything.
//!
//! Head is rendered and compared with live state when a cluster is reachable (deletions come from
//! the agent's inventories, adoption from what is live but not recorded), or with the base
//! revision's render otherwise (a pull request's preview in CI, where no cluster is reachable).
//! Either way the same decisions as a run are shown: reconcile policies, adoption, and deletions
//! blocked by deletion safety. Reading live state costs one LIST per kind and no per-object GET.

mod against_live;
mod base;
mod cache;
mod rollout;
mod side;
mod verify;
pub(crate) mod view;

use against_live::against_live;
use base::{changed_paths, render};
use side::{Checkout, checkout_revision, render_cache};

use crate::agent::pass::prepare::{self, PreparedUnit};
use crate::agent::pass::prune::UnitPruning;
use crate::agent::{AgentError, Environment, LiveTarget, Safety};
use crate::apply::inventory::{self, Identity, Inventory};
use crate::apply::live_index::LiveIndex;
use crate::apply::{AzureView, Cluster};
use crate::object::ObjectKey;
use crate::plan::decide;
use crate::plan::policy::{self, Policy, Provenance};
use crate::plan::preview::{
    Adoption, Against, BlockedDeletion, Change, ChangeAction, ClusterPreview, Counts, ObjectRef,
    PendingValue, PolicyEffect, Preview, Problem, Revision as PreviewRevision,
};
use crate::plan::prune::{self, Verdict};
use crate::plan::{Action, ObjectDiff, diff_object};
use crate::reconcile::aro::node_policy;
use crate::report::UnitError;
use crate::source::GitRef;
use crate::unit::Unit;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// What to plan.
#[derive(Debug, Clone)]
pub struct PlanRequest {
    pub repo: String,
    /// The revision to plan.
    pub head: GitRef,
    /// The revision the change starts from; compared with when no cluster is reachable.
    pub base: Option<GitRef>,
    pub state_dir: PathBuf,
    pub kubeconfig: Option<PathBuf>,
    /// Live state is the cluster this process runs in (`--in-cluster`; not with `kubeconfig`).
    pub in_cluster: bool,
    pub safety: Safety,
    /// `--use-azure-simulator`: on a cluster, Azure is the simulator running against it.
    pub use_azure_simulator: bool,
    /// `--fleet` and `--take-over-fleet`.
    pub fleet: crate::plan::ownership::scope::FleetNaming,
    /// `--verify-signatures`: head is verified as a run verifies a revision.
    pub verify_signatures: Option<std::sync::Arc<crate::source::signature::Verification>>,
}

/// One side of a plan, rendered.
struct Rendered {
    revision: PreviewRevision,
    units: Vec<PreparedUnit>,
    /// The input closure of each unit's render (base only; head's render reads them).
    inputs: BTreeMap<Unit, crate::render::Inputs>,
    /// The units this side rendered (the others took the base's preparation).
    rendered: Vec<String>,
    /// The units whose preparation is base's, moved here (head only): unchanged by construction.
    kept: BTreeSet<String>,
    /// The units failed by the fleet check (a conflict with another unit): head renders them
    /// again rather than keep base's failure.
    conflicted: BTreeSet<String>,
    /// What each unit that prepared declares, in the units' order (before the fleet check failed
    /// any): head takes base's for the units it keeps.
    claims: Vec<std::sync::Arc<crate::plan::ownership::UnitClaims>>,
}

/// A unit error as the preview shows it: location (`file:line:column`) and object in their own
/// fields, and the message (redacted) without them.
fn problem(e: &UnitError) -> Problem {
    Problem {
        file: e.file_name(),
        line: e.line,
        column: e.column,
        object: e.object.as_ref().map(ObjectRef::from),
        message: e.text(),
    }
}

/// A plan, and how it read live state.
#[derive(Debug)]
pub struct PlanRun {
    pub preview: Preview,
    /// Requests sent to the cluster, by `METHOD path` (empty when compared with base).
    pub requests: BTreeMap<String, u64>,
    /// Units rendered at each side (compared with base: base renders every unit, head only those
    /// whose input closure changed).
    pub rendered: RenderedUnits,
    /// The units rendered at each side, by name (base's empty when compared with live state).
    pub rendered_names: RenderedNames,
}

/// Which units a plan rendered, per side.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RenderedNames {
    pub base: Vec<String>,
    pub head: Vec<String>,
}

/// How many units a plan rendered, per side.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RenderedUnits {
    pub base: usize,
    pub head: usize,
}

/// The cluster a plan compares with, when one is reachable: the embedded control plane unless a
/// base revision is given, else the cluster of `target` (a base revision stands in when it cannot
/// be reached).
async fn live_environment(
    req: &PlanRequest,
    target: &LiveTarget,
) -> Result<Option<Environment>, AgentError> {
    let unreachable = |e: &dyn std::fmt::Display| {
        tracing::warn!(error = %e, "the cluster is not reachable: planning against the base revision");
    };
    match (target, &req.base) {
        (LiveTarget::Embedded, Some(_)) => Ok(None),
        (LiveTarget::Embedded, None) => Ok(Some(
            Environment::start(&req.state_dir, target, None).await?,
        )),
        (_, base) => match Environment::start(&req.state_dir, target, None).await {
            Ok(mut env) => match env.cluster.kind("", "v1", "Namespace").await {
                Ok(_) => {
                    if req.use_azure_simulator {
                        env.use_azure_simulator(&req.state_dir).await?;
                    }
                    Ok(Some(env))
                }
                Err(e) if base.is_some() => {
                    unreachable(&e);
                    Ok(None)
                }
                Err(e) => Err(e.into()),
            },
            Err(e) if base.is_some() => {
                unreachable(&e);
                Ok(None)
            }
            Err(e) => Err(e),
        },
    }
}

/// Head against the live state of `env` (shut down after): the preview's clusters, errors and
/// fleet notices; returns the requests it sent.
async fn against_live_state(
    req: &PlanRequest,
    env: Environment,
    target: &LiveTarget,
    head: Checkout,
    preview: &mut Preview,
) -> Result<BTreeMap<String, u64>, AgentError> {
    preview.against_description = match target {
        LiveTarget::Kubeconfig(k) => format!("live state of the cluster in {}", k.display()),
        LiveTarget::InCluster => "live state of the cluster this pod runs in".to_string(),
        LiveTarget::Embedded => format!(
            "live state of the embedded local control plane in {} (Azure simulated)",
            req.state_dir.join("control-plane").display()
        ),
    };
    let setting = crate::unit::fleet_setting(&head.root)?;
    let scope = req.fleet.at(setting.as_deref(), &req.repo);
    let result = against_live(&env.cluster, &env.azure_view, head, req.safety, &scope).await;
    let requests = env.cluster.counter().requests();
    tracing::info!(
        reads = env.cluster.counter().reads(),
        writes = env.cluster.counter().writes(),
        "live state read"
    );
    env.shutdown().await;
    let (clusters, errors, notices) = result?;
    preview.clusters = clusters;
    preview.errors = errors;
    preview.notices = notices;
    Ok(requests)
}

/// Base checked out and rendered. Its mirror reads head's objects (the repository's history is
/// fetched once) and its checkout is head's, linked, with the files the two differ in written.
/// `Err` holds the refusal of `--verify-signatures` (a commit between base and head it refuses).
async fn base_rendered(
    req: &PlanRequest,
    plan_state: &std::path::Path,
    head: &Checkout,
    base: &GitRef,
    digests: bool,
) -> Result<Result<Rendered, crate::source::signature::Refusal>, AgentError> {
    let (base_state, head_state) = (plan_state.join("base"), plan_state.join("head"));
    if let Err(e) = crate::source::share_objects(&base_state, &head_state) {
        tracing::warn!(error = %e, "base fetches its own copy of the repository");
    }
    let checkout = checkout_revision(
        &req.repo,
        base,
        base_state.clone(),
        None,
        Some(head_state.clone()),
    )
    .await?;
    if let Some(v) = &req.verify_signatures
        && let Some(refusal) = verify::since_base(
            v,
            &req.repo,
            &head_state,
            &head.revision.commit,
            &checkout.revision.commit,
        )
    {
        return Ok(Err(refusal));
    }
    let cache = render_cache(plan_state, &base_state, &checkout, digests);
    Ok(Ok(render(checkout, None, cache).await?.0))
}

/// Head against the base revision's render: the preview's clusters and rollout (and an error for
/// bad rollout settings); returns which units each side rendered. `digests`: with no key, the
/// ciphertexts' digests stand in for encrypted values (the description says so once base used
/// them).
async fn against_base_revision(
    req: &PlanRequest,
    plan_state: &std::path::Path,
    head: Checkout,
    base: Rendered,
    digests: Option<&crate::decrypt::Registration>,
    preview: &mut Preview,
) -> Result<(RenderedUnits, RenderedNames), AgentError> {
    preview.against_description = format!(
        "the base revision {} ({})",
        base.revision.reference,
        short(&base.revision.commit)
    );
    if digests.is_some_and(|d| d.digests_used()) {
        preview.against_description = format!(
            "{}; {}",
            preview.against_description,
            crate::decrypt::DIGESTS_NOTE
        );
    }
    let changed = changed_paths(
        &req.repo,
        &req.head,
        plan_state.join("head"),
        base.revision.commit.clone(),
        head.revision.commit.clone(),
    )
    .await;
    // Head's rollout settings (a bad `rollout:` is an error of the plan, as of a run).
    let settings = match crate::rollout::rollout_setting(&head.root) {
        Ok(settings) => settings,
        Err(e) => {
            // The message names the file and the field.
            preview.errors.push(Problem {
                message: e.to_string(),
                ..Default::default()
            });
            None
        }
    };
    let changed_for_rollout = settings.as_ref().and(changed.clone());
    let cache = render_cache(
        plan_state,
        &plan_state.join("head"),
        &head,
        digests.is_some(),
    );
    let (head, base) = render(head, Some((base, changed)), cache).await?;
    let base = base.expect("render gives base back");
    let rendered = RenderedUnits {
        base: base.rendered.len(),
        head: head.rendered.len(),
    };
    tracing::info!(
        base = base.rendered.len(),
        head = head.rendered.len(),
        units = head.units.len(),
        "units rendered"
    );
    preview.clusters = base::against_base(&base, &head, req.safety);
    if let Some(settings) = &settings {
        preview.rollout = rollout::foresee(
            settings,
            &base,
            &head,
            &preview.clusters,
            changed_for_rollout.as_deref(),
            chrono::Utc::now(),
        );
    }
    Ok((
        rendered,
        RenderedNames {
            base: base.rendered,
            head: head.rendered,
        },
    ))
}

/// Plans `req`.
pub async fn plan(req: PlanRequest) -> Result<PlanRun, AgentError> {
    crate::agent::env::prepare_state_dir(&req.state_dir)?;
    let plan_state = req.state_dir.join("plan");
    let tip_check = req.verify_signatures.as_deref().map(verify::of_tip);
    let head = match checkout_revision(
        &req.repo,
        &req.head,
        plan_state.join("head"),
        tip_check,
        None,
    )
    .await
    {
        Ok(head) => head,
        Err(e) => match verify::refusal(&e) {
            Some(refusal) => return Ok(refused(&req, refusal)),
            None => return Err(e),
        },
    };
    // Live state when a cluster is reachable; the base revision otherwise.
    let target = LiveTarget::select(req.kubeconfig.as_deref(), req.in_cluster)?;
    let env = live_environment(&req, &target).await?;
    // Compared with base and no key: the ciphertexts' digests stand in for encrypted values.
    let digests = (env.is_none() && !crate::decrypt::has_keys(&plan_state))
        .then(|| crate::decrypt::register(&plan_state, crate::decrypt::Decryption::digests()));
    let base = match (&env, &req.base) {
        (None, Some(b)) => {
            match base_rendered(&req, &plan_state, &head, b, digests.is_some()).await? {
                Ok(base) => Some(base),
                Err(refusal) => return Ok(refused(&req, &refusal)),
            }
        }
        _ => None,
    };
    let base_revision = base.as_ref().map(|b| b.revision.clone());
    let mut preview = Preview {
        format_version: crate::plan::preview::FORMAT_VERSION,
        repo: req.repo.clone(),
        base: base_revision,
        head: head.revision.clone(),
        against: if env.is_some() {
            Against::Live
        } else {
            Against::Base
        },
        against_description: String::new(),
        notices: vec![],
        clusters: vec![],
        errors: vec![],
        rollout: None,
    };
    let mut requests = BTreeMap::new();
    let mut rendered = RenderedUnits::default();
    let mut rendered_names = RenderedNames::default();
    match (env, base) {
        (Some(env), _) => {
            rendered.head = head.units.len();
            rendered_names.head = head.units.iter().map(Unit::name).collect();
            requests = against_live_state(&req, env, &target, head, &mut preview).await?;
        }
        (None, Some(base)) => {
            (rendered, rendered_names) = against_base_revision(
                &req,
                &plan_state,
                head,
                base,
                digests.as_ref(),
                &mut preview,
            )
            .await?;
        }
        (None, None) => unreachable!("without a cluster there is always a base"),
    }
    Ok(PlanRun {
        preview,
        requests,
        rendered,
        rendered_names,
    })
}

/// The plan of a head `--verify-signatures` refused: nothing planned, the refusal its error.
fn refused(req: &PlanRequest, refusal: &crate::source::signature::Refusal) -> PlanRun {
    tracing::warn!(commit = %refusal.commit, revision = %refusal.tip, "{refusal}");
    PlanRun {
        preview: Preview {
            format_version: crate::plan::preview::FORMAT_VERSION,
            repo: req.repo.clone(),
            base: None,
            head: verify::refused_revision(req.head.to_string(), refusal),
            against: if req.base.is_some() {
                Against::Base
            } else {
                Against::Live
            },
            against_description: "nothing: head was refused by --verify-signatures".into(),
            notices: vec![],
            clusters: vec![],
            errors: vec![verify::refused_problem(refusal)],
            rollout: None,
        },
        requests: BTreeMap::new(),
        rendered: RenderedUnits::default(),
        rendered_names: RenderedNames::default(),
    }
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// The CAPI Cluster of a prepared unit as `namespace/name`.
fn cluster_name(p: &prepare::Prepared) -> Option<String> {
    p.cluster
        .as_ref()
        .map(|c| format!("{}/{}", c.namespace.as_deref().unwrap_or("default"), c.name))
}

/// Whether the unit's CAPI Cluster in git allows its deletions.
fn unit_consents(p: &prepare::Prepared) -> bool {
    p.cluster
        .as_ref()
        .and_then(|c| p.objects.iter().find(|o| &o.key == c))
        .is_some_and(|o| prune::consents(&o.object()))
}

/// Adds one object's planned diff to a cluster preview.
fn add_diff(c: &mut ClusterPreview, d: ObjectDiff, detach: bool) {
    let action = match d.action {
        Action::Create => ChangeAction::Create,
        Action::Update => ChangeAction::Update,
        Action::Delete => ChangeAction::Delete,
        Action::Unchanged => {
            c.counts.unchanged += 1;
            return;
        }
    };
    match action {
        ChangeAction::Create => c.counts.create += 1,
        ChangeAction::Update => c.counts.update += 1,
        ChangeAction::Delete => c.counts.delete += 1,
    }
    c.changes.push(Change {
        secret: d.key.group.is_empty() && d.key.kind == "Secret",
        object: ObjectRef::from(&d.key),
        action,
        diff: d.diff,
        detach,
    });
}

/// Adds the deletion verdicts of a unit's candidates (`old` holds the object as it is now: live, or
/// in the base revision).
fn add_deletions(
    c: &mut ClusterPreview,
    keys: &[ObjectKey],
    old: &[Option<&Value>],
    verdicts: Vec<Verdict>,
    against: &str,
) {
    // Listed in the order pruning deletes them: dependents first.
    let order = crate::agent::pass::prune::dependents_first(
        &crate::agent::pass::prune::deletion_graph(keys, old),
    );
    let mut verdicts: Vec<Option<Verdict>> = verdicts.into_iter().map(Some).collect();
    for i in order {
        let (key, obj) = (&keys[i], &old[i]);
        let Some(verdict) = verdicts[i].take() else {
            continue;
        };
        let object = ObjectRef::from(key);
        match verdict {
            Verdict::Gone => {}
            Verdict::Keep { reason } => c.policy_effects.push(PolicyEffect {
                object,
                policy: Policy::Skip.as_str().into(),
                effect: format!("left git but is not deleted: {reason}"),
            }),
            Verdict::Blocked { reason } => {
                c.counts.blocked += 1;
                c.blocked_deletions.push(BlockedDeletion { object, reason });
            }
            Verdict::Delete { detach } => {
                if detach {
                    c.policy_effects.push(PolicyEffect {
                        object: object.clone(),
                        policy: Policy::DetachOnDelete.as_str().into(),
                        effect: "the Kubernetes object is deleted; the Azure resource is kept"
                            .into(),
                    });
                }
                let mut d = diff_object(None, *obj);
                d.diff = d.diff.replacen("--- live/", &format!("--- {against}/"), 1);
                add_diff(c, d, detach);
            }
        }
    }
}

fn policy_effect(c: &mut ClusterPreview, key: &ObjectKey, policy: Policy, effect: &str) {
    c.policy_effects.push(PolicyEffect {
        object: ObjectRef::from(key),
        policy: policy.as_str().into(),
        effect: effect.into(),
    });
}

/// Notes the values the agent fills in itself into object `i` of `p` that `desired` (the object
/// as the plan compares it) does not carry yet: the plan cannot know them.
fn pending_values(c: &mut ClusterPreview, p: &prepare::Prepared, i: usize, desired: &Value) {
    let o = &p.objects[i];
    let Some(owner) = o.embedded_in.map(|pi| p.objects[pi].object()) else {
        return;
    };
    if let Some((field, reason)) = crate::reconcile::aro::keyvault::unknown_version(&owner, desired)
    {
        c.pending_values.push(PendingValue {
            object: ObjectRef::from(&o.key),
            field,
            reason,
        });
    }
}

fn empty_cluster(unit: &str, cluster: Option<String>) -> ClusterPreview {
    ClusterPreview {
        unit: unit.to_string(),
        cluster,
        counts: Counts::default(),
        changes: vec![],
        blocked_deletions: vec![],
        adopted: vec![],
        policy_effects: vec![],
        pending_values: vec![],
        errors: vec![],
    }
}

/// The process's resident memory in MB (Linux; `None` elsewhere), logged at a plan's phases.
fn resident_mb() -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .ok()
        .map(|kb| kb / 1024)
}

/// The preview of a unit that did not render or validate: its errors.
fn failed_unit(unit: &str, errors: &[UnitError]) -> ClusterPreview {
    let mut c = empty_cluster(unit, None);
    c.errors = errors.iter().map(problem).collect();
    c
}

/// Nothing of the unit is deleted now: each candidate is blocked with the reason, and a hold that
/// fails the unit (an empty render) is its error.
fn held(c: &mut ClusterPreview, keys: &[ObjectKey], hold: &prune::Hold) {
    if hold.fails_unit() {
        c.errors.push(Problem {
            file: None,
            object: None,
            message: hold.to_string(),
            ..Default::default()
        });
    }
    for key in keys {
        c.counts.blocked += 1;
        c.blocked_deletions.push(BlockedDeletion {
            object: ObjectRef::from(key),
            reason: hold.object_reason(),
        });
    }
}

//! `aro-gitops plan`: what a revision would do, per cluster, without writing anything.
//!
//! Head is rendered and compared with live state when a cluster is reachable (deletions come from
//! the agent's inventories, adoption from what is live but not recorded), or with the base
//! revision's render otherwise (a pull request's preview in CI, where no cluster is reachable).
//! Either way the same decisions as a run are shown: reconcile policies, adoption, and deletions
//! blocked by deletion safety. Reading live state costs one LIST per kind and no per-object GET.

mod base;

use base::{changed_paths, render};

use super::prepare::{self, PreparedUnit};
use super::prune::UnitPruning;
use super::{AgentError, Environment, Safety};
use crate::apply::inventory::{self, Identity, Inventory};
use crate::apply::live::LiveIndex;
use crate::apply::{AzureView, Cluster};
use crate::object::ObjectKey;
use crate::plan::policy::{self, Policy, Provenance};
use crate::plan::preview::{
    Adoption, Against, BlockedDeletion, Change, ChangeAction, ClusterPreview, Counts, ObjectRef,
    PolicyEffect, Preview, Problem, Revision as PreviewRevision,
};
use crate::plan::prune::{self, Verdict};
use crate::plan::{Action, ObjectDiff, diff_object};
use crate::reconcile::aro::node_policy;
use crate::report::UnitError;
use crate::source::{GitRef, Source, SourceConfig};
use crate::unit::Unit;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
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
    pub safety: Safety,
}

/// One side of a plan, rendered.
struct Rendered {
    revision: PreviewRevision,
    units: Vec<PreparedUnit>,
    /// The input closure of each unit's render.
    inputs: BTreeMap<Unit, crate::render::Inputs>,
    /// How many units this side rendered (the others took the base's preparation).
    rendered: usize,
    /// The units failed by the fleet check (a conflict with another unit): head renders them
    /// again rather than keep base's failure.
    conflicted: BTreeSet<String>,
}

/// A revision checked out, its units found but not rendered yet.
struct Checkout {
    revision: PreviewRevision,
    root: PathBuf,
    units: Vec<Unit>,
}

/// Fetches `reference` into its own mirror under `state_dir` (never the run's source state),
/// checks it out and finds its units.
async fn checkout_revision(
    repo: &str,
    reference: &GitRef,
    state_dir: PathBuf,
) -> Result<Checkout, AgentError> {
    let config = SourceConfig {
        url: repo.to_string(),
        reference: reference.clone(),
        state_dir,
    };
    let shown = reference.to_string();
    tokio::task::spawn_blocking(move || -> Result<Checkout, AgentError> {
        let mut source = Source::open(config)?;
        let revision = match source.sync()? {
            crate::source::SyncOutcome::Stale { error, .. } => return Err(error.into()),
            outcome => outcome.revision().clone(),
        };
        let units = crate::unit::discover(&revision.checkout)?;
        Ok(Checkout {
            revision: PreviewRevision {
                reference: shown,
                commit: revision.commit,
            },
            root: revision.checkout,
            units,
        })
    })
    .await
    .map_err(|e| AgentError::Task(e.to_string()))?
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
}

/// How many units a plan rendered, per side.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RenderedUnits {
    pub base: usize,
    pub head: usize,
}

/// Plans `req`.
pub async fn plan(req: PlanRequest) -> Result<PlanRun, AgentError> {
    let plan_state = req.state_dir.join("plan");
    let head = checkout_revision(&req.repo, &req.head, plan_state.join("head")).await?;
    // Live state when a cluster is reachable; the base revision otherwise.
    let env = match (&req.kubeconfig, &req.base) {
        (None, Some(_)) => None,
        (Some(k), base) => match Environment::start(&req.state_dir, Some(k), None).await {
            Ok(env) => match env.cluster.kind("", "v1", "Namespace").await {
                Ok(_) => Some(env),
                Err(e) if base.is_some() => {
                    tracing::warn!(error = %e, "the cluster is not reachable: planning against the base revision");
                    None
                }
                Err(e) => return Err(e.into()),
            },
            Err(e) if base.is_some() => {
                tracing::warn!(error = %e, "the cluster is not reachable: planning against the base revision");
                None
            }
            Err(e) => return Err(e),
        },
        (None, None) => Some(Environment::start(&req.state_dir, None, None).await?),
    };
    let base = match (&env, &req.base) {
        (None, Some(b)) => {
            let checkout = checkout_revision(&req.repo, b, plan_state.join("base")).await?;
            Some(render(checkout, None).await?.0)
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
        clusters: vec![],
        errors: vec![],
    };
    let mut requests = BTreeMap::new();
    let mut rendered = RenderedUnits::default();
    match (env, base) {
        (Some(env), _) => {
            preview.against_description = match &req.kubeconfig {
                Some(k) => format!("live state of the cluster in {}", k.display()),
                None => format!(
                    "live state of the embedded local control plane in {} (Azure simulated)",
                    req.state_dir.join("control-plane").display()
                ),
            };
            rendered.head = head.units.len();
            let result = against_live(&env.cluster, &env.azure_view, head, req.safety).await;
            requests = env.cluster.counter().requests();
            tracing::info!(
                reads = env.cluster.counter().reads(),
                writes = env.cluster.counter().writes(),
                "live state read"
            );
            env.shutdown().await;
            let (clusters, errors) = result?;
            preview.clusters = clusters;
            preview.errors = errors;
        }
        (None, Some(base)) => {
            preview.against_description = format!(
                "the base revision {} ({})",
                base.revision.reference,
                short(&base.revision.commit)
            );
            let changed = changed_paths(
                &req.repo,
                &req.head,
                plan_state.join("head"),
                base.revision.commit.clone(),
                head.revision.commit.clone(),
            )
            .await;
            let (head, base) = render(head, Some((base, changed))).await?;
            let base = base.expect("render gives base back");
            rendered = RenderedUnits {
                base: base.rendered,
                head: head.rendered,
            };
            tracing::info!(
                base = base.rendered,
                head = head.rendered,
                units = head.units.len(),
                "units rendered"
            );
            preview.clusters = base::against_base(&base, &head, req.safety);
        }
        (None, None) => unreachable!("without a cluster there is always a base"),
    }
    Ok(PlanRun {
        preview,
        requests,
        rendered,
    })
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
        .is_some_and(|o| prune::consents(&o.object))
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
    let order = super::prune::dependents_first(&super::prune::deletion_graph(keys, old));
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

/// The prepared unit, or (when it failed) a cluster preview holding its errors.
fn prepared_or_errors<'a>(
    prepared: &'a prepare::Preparation,
    unit: &str,
    clusters: &mut Vec<ClusterPreview>,
) -> Option<&'a prepare::Prepared> {
    match prepared {
        Ok(p) => Some(p),
        Err(errors) => {
            clusters.push(failed_unit(unit, errors));
            None
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

fn empty_cluster(unit: &str, cluster: Option<String>) -> ClusterPreview {
    ClusterPreview {
        unit: unit.to_string(),
        cluster,
        counts: Counts::default(),
        changes: vec![],
        blocked_deletions: vec![],
        adopted: vec![],
        policy_effects: vec![],
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

/// A unit of head compared with live state, or kept for a second round: it has objects of a kind
/// not listed yet, or a `reconcile-policy-if-exists` decision that needs the Azure view.
enum UnitPlan {
    Done(Box<(ClusterPreview, Leaving)>),
    Later(Box<prepare::Prepared>),
}

/// The inventory members a unit no longer renders, and whether the unit consents to deletions:
/// judged once every unit is rendered (ownership's deletion guard needs the whole fleet).
#[derive(Default)]
struct Leaving {
    entries: Vec<inventory::Entry>,
    /// How many objects the unit rendered.
    rendered: usize,
    /// The unit's CAPI Cluster in git allows its deletions.
    unit_consent: bool,
}

/// What `reconcile-policy-if-exists` found in Azure, for each object that asks (and is neither live
/// nor decided already).
type AzureFindings = HashMap<ObjectKey, Result<bool, String>>;

/// The objects of `p` whose decision needs the Azure view.
fn asks_azure<'a>(
    p: &'a prepare::Prepared,
    inv: &'a Inventory,
    live: &'a LiveIndex,
) -> impl Iterator<Item = &'a prepare::PlannedObject> + 'a {
    p.objects.iter().filter(|o| {
        inv.get(&o.key).is_none()
            && policy::if_exists(&o.object).is_some()
            && !live.contains(&Identity::from(&o.key))
    })
}

/// Head against live state. Live state is read first (ConfigMaps across namespaces, which hold the
/// inventories, then every kind an inventory names: one LIST each), kept as JSON text; then every
/// unit is rendered and compared on every core, and dropped once compared, so a plan's memory
/// does not grow with the fleet's rendered objects.
async fn against_live(
    cluster: &Cluster,
    azure_view: &AzureView,
    head: Checkout,
    safety: Safety,
) -> Result<(Vec<ClusterPreview>, Vec<Problem>), AgentError> {
    tracing::info!(rss_mb = resident_mb(), "reading live state");
    let mut live = LiveIndex::default();
    let config_maps = inventory::config_map_key("");
    let mut read_errors = live.read(cluster, [config_maps.clone()]).await;
    if live.failure(&config_maps).is_some() {
        return Err(read_errors.remove(0).into());
    }
    let (inventories, broken) =
        inventory::from_config_maps(live.select("", "ConfigMap", inventory::NAMESPACE));
    // AutoNodePolicies too (node pools are merged with them), whether an inventory names them.
    let recorded_kinds: Vec<ObjectKey> = inventories
        .values()
        .flat_map(|i| i.entries.values().map(|e| e.key()))
        .chain([node_policy::list_key(None)])
        .collect();
    read_errors.extend(live.read(cluster, recorded_kinds).await);
    tracing::info!(
        objects = live.len(),
        rss_mb = resident_mb(),
        "live state listed"
    );

    let Checkout {
        revision: _,
        root,
        units,
    } = head;
    let present: BTreeSet<String> = units.iter().map(Unit::name).collect();
    let no_findings = AzureFindings::new();
    // spawn_blocking needs 'static data: live state and the inventories move in and back out.
    let (first, live, units, inventories) = tokio::task::spawn_blocking(move || {
        let empty = Inventory::default();
        let first = prepare::on_every_core(&units, |u| {
            let name = u.name();
            match prepare::prepare(&root, u) {
                Err(errors) => (
                    UnitPlan::Done(Box::new((failed_unit(&name, &errors), Leaving::default()))),
                    None,
                ),
                Ok(p) => {
                    let claims = super::fleet::claims(&p);
                    let inv = inventories.get(&name).unwrap_or(&empty);
                    let unlisted = p.objects.iter().any(|o| !live.has_kind(&o.key));
                    let planned = if unlisted || asks_azure(&p, inv, &live).next().is_some() {
                        UnitPlan::Later(Box::new(p))
                    } else {
                        UnitPlan::Done(Box::new(plan_unit(&name, &p, inv, &live, &no_findings)))
                    };
                    (planned, Some(claims))
                }
            }
        });
        (first, live, units, inventories)
    })
    .await
    .map_err(|e| AgentError::Task(e.to_string()))?;
    let mut live = live;
    tracing::info!(
        units = units.len(),
        rss_mb = resident_mb(),
        "units rendered and compared"
    );
    // The fleet-wide ownership check, on the small summaries the units left.
    let (first, claims): (
        Vec<UnitPlan>,
        Vec<Option<crate::plan::ownership::UnitClaims>>,
    ) = first.into_iter().unzip();
    let claims: Vec<crate::plan::ownership::UnitClaims> = claims.into_iter().flatten().collect();
    let mut conflicts = super::fleet::conflict_errors(&claims);
    let fleet = crate::plan::ownership::Fleet::new(&claims);
    drop(claims);
    // Units whose inventory the agent does not act on.
    for (unit, e) in super::fleet::refused(&broken) {
        conflicts.entry(unit).or_default().push(e);
    }
    // Second round: kinds nobody recorded yet, and the Azure view.
    let later_kinds: Vec<ObjectKey> = first
        .iter()
        .filter_map(|u| match u {
            UnitPlan::Later(p) => Some(p.objects.iter().map(|o| o.key.clone())),
            UnitPlan::Done(_) => None,
        })
        .flatten()
        .collect();
    read_errors.extend(live.read(cluster, later_kinds).await);
    // Live ASO objects no unit declares that stand for an Azure resource a unit declares.
    let live_ids = super::fleet::live_aso_identities(super::fleet::identity_objects(&live));
    for (unit, errors) in super::fleet::live_conflict_errors(&fleet, &live_ids, &inventories) {
        conflicts.entry(unit).or_default().extend(errors);
    }
    let fleet = fleet.with_live(&live_ids);
    let empty = Inventory::default();
    let mut clusters = Vec::with_capacity(first.len());
    for (u, planned) in units.iter().zip(first) {
        let name = u.name();
        if let Some(errors) = conflicts.remove(&name) {
            clusters.push(failed_unit(&name, &errors));
            continue;
        }
        let inv = inventories.get(&name).unwrap_or(&empty);
        let (mut c, leaving) = match planned {
            UnitPlan::Done(c) => *c,
            UnitPlan::Later(p) => {
                let unit_objects: Vec<&Value> = p.objects.iter().map(|o| &o.object).collect();
                let mut findings = AzureFindings::new();
                for o in asks_azure(&p, inv, &live) {
                    findings.insert(
                        o.key.clone(),
                        azure_view.exists(&o.object, &unit_objects).await,
                    );
                }
                plan_unit(&name, &p, inv, &live, &findings)
            }
        };
        if !leaving.entries.is_empty() {
            let how = UnitPruning {
                rendered: Some(leaving.rendered),
                stale_source: None,
                unit_consent: leaving.unit_consent,
                safety,
            };
            let refs: Vec<&inventory::Entry> = leaving.entries.iter().collect();
            let total = inv.entries.len();
            leaving_inventory(&mut c, how, inv, &refs, &live, total, &fleet);
        }
        clusters.push(c);
    }
    // Units that left git: everything in their inventory goes (with the unit's consent).
    if !units.is_empty() {
        for (name, inv) in inventories.iter().filter(|(n, _)| !present.contains(*n)) {
            let mut c = empty_cluster(name, None);
            if let Some(errors) = conflicts.remove(name) {
                c.errors = errors.iter().map(problem).collect();
                clusters.push(c);
                continue;
            }
            let leaving: Vec<&inventory::Entry> = inv.entries.values().collect();
            let how = UnitPruning {
                rendered: None,
                stale_source: None,
                unit_consent: false,
                safety,
            };
            leaving_inventory(&mut c, how, inv, &leaving, &live, leaving.len(), &fleet);
            clusters.push(c);
        }
    }
    let global = broken
        .iter()
        .map(|e| e.to_string())
        .chain(read_errors.iter().map(|e| e.to_string()))
        .map(|message| Problem {
            file: None,
            object: None,
            message,
            ..Default::default()
        })
        .collect();
    Ok((clusters, global))
}

/// The preview of a unit that did not render or validate: its errors.
fn failed_unit(unit: &str, errors: &[UnitError]) -> ClusterPreview {
    let mut c = empty_cluster(unit, None);
    c.errors = errors.iter().map(problem).collect();
    c
}

/// One unit of head against live state: the same decisions as a pass (policies, adoption,
/// deletion safety), each object parsed from `live` only while it is compared.
fn plan_unit(
    name: &str,
    p: &prepare::Prepared,
    inv: &Inventory,
    live: &LiveIndex,
    azure: &AzureFindings,
) -> (ClusterPreview, Leaving) {
    let mut c = empty_cluster(name, cluster_name(p));
    let mut parents: HashMap<usize, Option<Value>> = HashMap::new();
    for &i in &p.order {
        let o = &p.objects[i];
        if let Some(why) = live.failure(&o.key) {
            c.errors.push(Problem {
                file: Some(o.origin.file.display().to_string()),
                object: Some(ObjectRef::from(&o.key)),
                message: format!("live state of its kind could not be read: {why}"),
                ..Default::default()
            });
            continue;
        }
        let current = live.get(&Identity::from(&o.key));
        let current = current.as_ref();
        let recorded = inv.get(&o.key).map(|e| e.decision());
        let decision = match current {
            Some(l) => policy::decide_live(&o.object, l, recorded),
            None => {
                let exists = azure.get(&o.key).cloned().unwrap_or(Ok(false));
                match policy::decide_create(&o.object, recorded, exists) {
                    Ok(d) => d,
                    Err(e) => {
                        c.errors.push(Problem {
                            file: Some(o.origin.file.display().to_string()),
                            object: Some(ObjectRef::from(&o.key)),
                            message: e.to_string(),
                            ..Default::default()
                        });
                        continue;
                    }
                }
            }
        };
        if decision.policy == Policy::Skip && !policy::skip_needs_write(current, &decision) {
            policy_effect(
                &mut c,
                &o.key,
                Policy::Skip,
                if current.is_some() {
                    "not applied: reconcile-policy skip (read and reported only)"
                } else {
                    "not created: reconcile-policy skip"
                },
            );
            continue;
        }
        if decision.provenance == Provenance::Adopted
            && inv.get(&o.key).and_then(|e| e.applied.as_ref()).is_none()
        {
            c.counts.adopted += 1;
            c.adopted.push(Adoption {
                object: ObjectRef::from(&o.key),
                reason: if current.is_some() {
                    "live and not created by aro-gitops: taken over".into()
                } else {
                    format!(
                        "the Azure resource already exists: reconcile-policy-if-exists makes the policy {}",
                        decision.policy
                    )
                },
            });
        }
        if decision.policy == Policy::DetachOnDelete {
            policy_effect(
                &mut c,
                &o.key,
                Policy::DetachOnDelete,
                "applied; when it leaves git, the Azure resource is kept",
            );
        }
        let mut desired =
            crate::plan::ownership::mark(policy::with_decision(o.object.clone(), &decision), name);
        // As a pass applies it: an embedded resource is controlled by its live ARO object (parsed
        // once for all it embeds).
        if let Some(pi) = o.embedded_in
            && let Some(parent) = parents
                .entry(pi)
                .or_insert_with(|| live.get(&Identity::from(&p.objects[pi].key)))
        {
            crate::reconcile::aro::set_controller(&mut desired, parent);
        }
        // As a pass applies it: a node pool with its namespace's AutoNodePolicy merged in.
        let desired = match p.with_node_policy(i, desired, |ns| {
            live.select(node_policy::POLICY_GROUP, node_policy::POLICY_KIND, ns)
                .collect()
        }) {
            Ok(d) => d,
            Err(e) => {
                c.errors.push(Problem {
                    file: Some(o.origin.file.display().to_string()),
                    object: Some(ObjectRef::from(&o.key)),
                    message: format!("not applied: {e}"),
                    ..Default::default()
                });
                continue;
            }
        };
        add_diff(&mut c, diff_object(Some(&desired), current), false);
    }
    // Deletions: inventory members no longer rendered.
    let desired_keys: Vec<ObjectKey> = p.objects.iter().map(|o| o.key.clone()).collect();
    let leaving = Leaving {
        entries: super::prune::candidates(inv, &desired_keys)
            .into_iter()
            .cloned()
            .collect(),
        rendered: p.objects.len(),
        unit_consent: unit_consents(p),
    };
    (c, leaving)
}

/// Adds the deletions of inventory members that left git, judged against live state as a pass
/// judges them (one decision: [`super::prune::decide`]); `total` is the share guard's
/// denominator. An empty render without consent is the unit's error, as in a run.
fn leaving_inventory(
    c: &mut ClusterPreview,
    how: UnitPruning,
    inv: &Inventory,
    leaving: &[&inventory::Entry],
    live: &LiveIndex,
    total: usize,
    fleet: &crate::plan::ownership::Fleet,
) {
    let super::prune::Decided {
        keys,
        bodies,
        verdicts,
    } = super::prune::decide(
        how,
        inv,
        leaving,
        |k| live.get(&Identity::from(k)),
        total,
        fleet,
    );
    let old: Vec<Option<&Value>> = bodies.iter().map(Option::as_ref).collect();
    match verdicts {
        Ok(verdicts) => add_deletions(c, &keys, &old, verdicts, "live"),
        Err(hold) => held(c, &keys, &hold),
    }
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

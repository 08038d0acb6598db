//! A plan against live state: head compared with what a reachable cluster holds, as a pass would
//! judge it (policies, adoption, ownership, deletion safety), each live object kept as JSON text
//! and parsed only while it is compared.

use super::view::{AzureFindings, ListedView};
use super::*;
use crate::plan::ownership::{FleetScope, scope};

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

/// The objects of `p` whose decision needs the Azure view.
fn asks_azure<'a>(
    p: &'a prepare::Prepared,
    inv: &'a Inventory,
    live: &'a LiveIndex,
) -> impl Iterator<Item = &'a prepare::PlannedObject> + 'a {
    p.objects.iter().filter(|o| {
        inv.get(&o.key).is_none()
            && policy::if_exists(&o.object()).is_some()
            && !live.contains(&Identity::from(&o.key))
    })
}

/// Live state as a plan first lists it: ConfigMaps across namespaces (the inventories are among
/// them), then every kind an inventory records, and the AutoNodePolicies.
struct Listed {
    live: LiveIndex,
    inventories: BTreeMap<String, Inventory>,
    broken: Vec<inventory::InventoryError>,
    /// Other fleets' inventories, left alone.
    foreign: inventory::Foreign,
    read_errors: Vec<crate::apply::ApplyError>,
}

async fn list_live(
    cluster: &Cluster,
    scope: &FleetScope,
    present: &BTreeSet<String>,
) -> Result<Listed, AgentError> {
    tracing::info!(rss_mb = resident_mb(), "reading live state");
    let mut live = LiveIndex::default();
    let config_maps = inventory::config_map_key("");
    let mut read_errors = live.read(cluster, [config_maps.clone()]).await;
    if live.failure(&config_maps).is_some() {
        return Err(read_errors.remove(0).into());
    }
    let config_maps = live.select("", "ConfigMap", crate::marks::AGENT_NAMESPACE);
    let declared = |u: &str| present.contains(u);
    let (inventories, broken, foreign) = inventory::from_config_maps(config_maps, scope, declared);
    // AutoNodePolicies too (node pools are merged with them), whether an inventory names them.
    let recorded_kinds: Vec<ObjectKey> = inventories
        .values()
        .flat_map(|i| i.entries.values().map(|e| e.key()))
        .chain([node_policy::list_key(None)])
        .chain(identity_kinds())
        .collect();
    read_errors.extend(live.read(cluster, recorded_kinds).await);
    tracing::info!(
        objects = live.len(),
        rss_mb = resident_mb(),
        "live state listed"
    );
    Ok(Listed {
        live,
        inventories,
        broken,
        foreign,
        read_errors,
    })
}

/// The kinds the identity check reads (the identities, the Namespaces, and Secrets for the
/// identities' own), listed like every other kind.
fn identity_kinds() -> impl Iterator<Item = ObjectKey> {
    let secret = (
        crate::object::Sym::new(""),
        crate::object::Sym::new("v1"),
        crate::object::Sym::new("Secret"),
    );
    crate::agent::pass::identity_check::read_kinds()
        .into_iter()
        .chain([secret])
        .map(|(group, version, kind)| ObjectKey {
            group,
            version,
            kind,
            namespace: None,
            name: String::new(),
        })
}

/// The errors of the clusters of `p` that their identities refuse (the run's own identity check,
/// on live state as listed): nothing of such a cluster is applied.
async fn identity_refusals(
    p: &prepare::Prepared,
    live: &LiveIndex,
    fleet: &crate::plan::ownership::Fleet,
) -> Vec<UnitError> {
    let reads = crate::agent::pass::identity_check::Reads::Listed(live);
    let mut errors = Vec::new();
    crate::agent::pass::identity_check::check(reads, None, p, fleet, &mut errors).await;
    errors
}

/// The preview of a unit whose identities refuse a cluster: refused, with the reasons, and
/// nothing planned (a run applies none of the cluster's Azure resources and fails the unit).
fn refused_unit(name: &str, p: &prepare::Prepared, errors: &[UnitError]) -> ClusterPreview {
    let mut c = empty_cluster(name, cluster_name(p));
    c.errors = errors.iter().map(problem).collect();
    c
}

/// The preview of a unit that left git: its fleet conflicts, or everything in its inventory
/// deleted as deletion safety allows (it needs the unit's consent).
fn left_git(
    name: &str,
    inv: &Inventory,
    conflicts: Option<Vec<UnitError>>,
    safety: Safety,
    live: &LiveIndex,
    fleet: &crate::plan::ownership::Fleet,
) -> ClusterPreview {
    let mut c = empty_cluster(name, None);
    if let Some(errors) = conflicts {
        c.errors = errors.iter().map(problem).collect();
        return c;
    }
    let leaving: Vec<&inventory::Entry> = inv.entries.values().collect();
    let how = UnitPruning {
        rendered: None,
        stale_source: None,
        unit_consent: false,
        safety,
        fleet,
    };
    leaving_inventory(&mut c, how, inv, &leaving, live, leaving.len(), fleet);
    // As in a run: blocked deletions fail the unit that left.
    let blocked = c.blocked_deletions.iter().map(|b| b.reason.as_str());
    if let Some(message) = crate::agent::pass::prune::left_git_blocked(name, blocked) {
        c.errors.push(Problem {
            file: Some(name.to_string()),
            message,
            ..Default::default()
        });
    }
    c
}

/// A unit in the first round: rendered and compared now, or kept for the second round (a kind
/// not listed yet, or a question for the Azure view); with what it declares (the fleet check).
fn first_round(
    root: &std::path::Path,
    u: &Unit,
    inv: &Inventory,
    live: &LiveIndex,
    fleet: &FleetScope,
) -> (UnitPlan, Option<crate::plan::ownership::UnitClaims>) {
    let name = u.name();
    let p = match prepare::prepare(root, u) {
        Ok(p) => p,
        Err(errors) => {
            let failed = (failed_unit(&name, &errors), Leaving::default());
            return (UnitPlan::Done(Box::new(failed)), None);
        }
    };
    let claims = crate::agent::fleet::claims(&p);
    let unlisted = p.objects.iter().any(|o| !live.has_kind(&o.key));
    // Judged on listed state and with no token asked, the check never waits: it ends at its first
    // poll. Without the fleet, an identity another unit declares counts as missing: a refusal
    // here is judged again in the second round, with the fleet.
    let refused = !futures::executor::block_on(identity_refusals(
        &p,
        live,
        &crate::plan::ownership::Fleet::default(),
    ))
    .is_empty();
    let planned = if unlisted || refused || asks_azure(&p, inv, live).next().is_some() {
        UnitPlan::Later(Box::new(std::sync::Arc::unwrap_or_clone(p)))
    } else {
        UnitPlan::Done(Box::new(plan_unit(
            &name,
            &p,
            inv,
            live,
            &AzureFindings::new(),
            fleet,
        )))
    };
    (planned, Some(claims))
}

/// A unit of the second round: refused by its identities (judged with the fleet), or the Azure
/// view asked what its objects need, then compared.
async fn second_round(
    name: &str,
    p: &prepare::Prepared,
    inv: &Inventory,
    live: &LiveIndex,
    azure_view: &AzureView,
    fleet: &crate::plan::ownership::Fleet,
) -> (ClusterPreview, Leaving) {
    let refusals = identity_refusals(p, live, fleet).await;
    if !refusals.is_empty() {
        return (refused_unit(name, p, &refusals), Leaving::default());
    }
    let bodies = p.thawed();
    let unit_objects: Vec<&Value> = bodies.iter().map(|b| &**b).collect();
    let mut findings = AzureFindings::new();
    for o in asks_azure(p, inv, live) {
        let found = azure_view.exists(&o.object(), &unit_objects).await;
        findings.insert(o.key.clone(), found);
    }
    plan_unit(name, p, inv, live, &findings, &fleet.scope)
}

/// Head against live state. Live state is read first (ConfigMaps across namespaces, which hold the
/// inventories, then every kind an inventory names: one LIST each), kept as JSON text; then every
/// unit is rendered and compared on every core, and dropped once compared, so a plan's memory
/// does not grow with the fleet's rendered objects.
/// `scope`: the fleet planned for (another fleet's inventories are left alone, and said in the
/// notices returned).
pub(super) async fn against_live(
    cluster: &Cluster,
    azure_view: &AzureView,
    head: Checkout,
    safety: Safety,
    scope: &FleetScope,
) -> Result<(Vec<ClusterPreview>, Vec<Problem>, Vec<String>), AgentError> {
    let Checkout {
        revision: _,
        root,
        units,
    } = head;
    let present: BTreeSet<String> = units.iter().map(Unit::name).collect();
    let Listed {
        live,
        inventories,
        broken,
        foreign,
        mut read_errors,
    } = list_live(cluster, scope, &present).await?;
    let notices = fleet_notices(scope, &inventories, &foreign);
    let fleet_scope = scope.clone();
    // spawn_blocking needs 'static data: live state and the inventories move in and back out.
    let (first, live, units, inventories) = tokio::task::spawn_blocking(move || {
        let empty = Inventory::default();
        let first = prepare::on_every_core(&units, |u| {
            let inv = inventories.get(&u.name()).unwrap_or(&empty);
            first_round(&root, u, inv, &live, &fleet_scope)
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
    let claims = claims
        .into_iter()
        .flatten()
        .map(std::sync::Arc::new)
        .collect();
    let fleet = crate::plan::ownership::Fleet::new(claims).named(scope.clone());
    let owner_of = crate::agent::fleet::owner_in(&inventories);
    let mut conflicts = crate::agent::fleet::conflict_errors(&fleet, owner_of);
    // Units whose inventory the agent does not act on.
    for (unit, e) in crate::agent::fleet::refused(&broken) {
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
    let live_ids =
        crate::agent::fleet::live_aso_identities(crate::agent::fleet::identity_objects(&live));
    let fleet = fleet.with_live(&live_ids);
    for (unit, errors) in crate::agent::fleet::live_conflict_errors(&fleet, |k| {
        crate::agent::fleet::inventory_holding(&inventories, k)
    }) {
        conflicts.entry(unit).or_default().extend(errors);
    }
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
            UnitPlan::Later(p) => second_round(&name, &p, inv, &live, azure_view, &fleet).await,
        };
        if !leaving.entries.is_empty() {
            let how = UnitPruning {
                rendered: Some(leaving.rendered),
                stale_source: None,
                unit_consent: leaving.unit_consent,
                safety,
                fleet: &fleet,
            };
            let refs: Vec<&inventory::Entry> = leaving.entries.iter().collect();
            let total = inv.entries.len();
            leaving_inventory(&mut c, how, inv, &refs, &live, total, &fleet);
        }
        clusters.push(c);
    }
    // Units that left git: everything in their inventory goes (with the unit's consent).
    if !units.is_empty() {
        let gone = inventories.iter().filter(|(n, _)| !present.contains(*n));
        for (name, inv) in gone {
            let errors = conflicts.remove(name);
            clusters.push(left_git(name, inv, errors, safety, &live, &fleet));
        }
    }
    let global = broken
        .iter()
        .map(|e| e.to_string())
        .chain(read_errors.iter().map(|e| e.to_string()))
        .map(|message| Problem {
            message,
            ..Default::default()
        })
        .collect();
    Ok((clusters, global, notices))
}

/// What the plan says of fleets: the one taken over (how many of its inventories), and each
/// other fleet found, left alone.
fn fleet_notices(
    scope: &FleetScope,
    inventories: &BTreeMap<String, Inventory>,
    foreign: &inventory::Foreign,
) -> Vec<String> {
    let taken_over = (inventories.values())
        .filter(|i| i.read_from.is_some() && scope.take_over.is_some())
        .count();
    let others = (foreign.iter()).map(|(f, units)| scope::foreign_line(f, units));
    (scope::take_over_line(scope, taken_over).into_iter())
        .chain(others)
        .collect()
}

/// One unit of head against live state: the decisions a pass takes ([`decide::decide_unit`]),
/// shown as changes, adoptions and policy effects.
fn plan_unit(
    name: &str,
    p: &prepare::Prepared,
    inv: &Inventory,
    live: &LiveIndex,
    azure: &AzureFindings,
    fleet: &FleetScope,
) -> (ClusterPreview, Leaving) {
    let mut view = ListedView::new(name, p, inv, live, azure).of_fleet(&fleet.name);
    // As a pass: an object of another fleet's, or of another unit's without consent, refuses
    // the unit.
    let taken = crate::agent::fleet::taken_over(fleet, p, |i| view.current(i));
    if !taken.is_empty() {
        return (failed_unit(name, &taken), Leaving::default());
    }
    let mut c = empty_cluster(name, cluster_name(p));
    for (i, step) in decide::decide_unit(&p.order, &mut view) {
        show_step(&mut c, p, i, view.current(i), inv, step);
    }
    // Deletions: inventory members no longer rendered.
    let desired_keys: Vec<ObjectKey> = p.objects.iter().map(|o| o.key.clone()).collect();
    let leaving = Leaving {
        entries: crate::agent::pass::prune::candidates(inv, &desired_keys)
            .into_iter()
            .cloned()
            .collect(),
        rendered: p.objects.len(),
        unit_consent: unit_consents(p),
    };
    (c, leaving)
}

/// Adds one decided step of object `i` to the unit's preview.
fn show_step(
    c: &mut ClusterPreview,
    p: &prepare::Prepared,
    i: usize,
    current: Option<&Value>,
    inv: &Inventory,
    step: decide::Step,
) {
    let o = &p.objects[i];
    let Some(decision) = step.decision else {
        let message = step.error.or(step.message).or(step.reason);
        c.errors.push(Problem {
            file: Some(o.origin.file.display().to_string()),
            object: Some(ObjectRef::from(&o.key)),
            message: message.unwrap_or_default(),
            ..Default::default()
        });
        return;
    };
    if step.verb == decide::Verb::Skip {
        let effect = if current.is_some() {
            "not applied: reconcile-policy skip (read and reported only)"
        } else {
            "not created: reconcile-policy skip"
        };
        policy_effect(c, &o.key, Policy::Skip, effect);
        return;
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
            c,
            &o.key,
            Policy::DetachOnDelete,
            "applied; when it leaves git, the Azure resource is kept",
        );
    }
    if let Some(body) = &step.body {
        pending_values(c, p, i, body);
    }
    if let Some(diff) = step.diff {
        add_diff(c, diff, false);
    }
}

/// Adds the deletions of inventory members that left git, judged against live state as a pass
/// judges them (one decision: [`crate::agent::pass::prune::decide`]); `total` is the share guard's
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
    let crate::agent::pass::prune::Decided {
        keys,
        bodies,
        verdicts,
    } = crate::agent::pass::prune::decide(
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

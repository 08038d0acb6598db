//! From a unit's outcome to its [`ClusterReport`]: the phase, the chain, and the objects and errors
//! in a fixed order, so that the same state always gives the same report.

use super::chain::Chain;
use super::model::{
    Action, ClusterRef, ClusterReport, ObjectAction, ObjectOutcome, Phase, REPORT_API_VERSION,
    REPORT_KIND, ReportError, ReportObject, UnitOutcome,
};
use super::standing::PassState;
use crate::object::ObjectKey;

/// Stands for a message about a Secret: such messages may quote the Secret's data (API servers echo
/// invalid values), and a report must never hold it.
pub const WITHHELD: &str = "message withheld: messages about a Secret may quote its data";

/// The namespace of a cluster key without one (where Kubernetes puts such objects).
pub(super) const DEFAULT_NAMESPACE: &str = "default";

/// A core Secret.
fn is_secret(key: &ObjectKey) -> bool {
    key.group.is_empty() && key.kind == "Secret"
}

/// What a report says when the revision is not known.
const UNKNOWN_REVISION: &str = "unknown";

/// Builds the report of one unit.
pub fn build(outcome: &UnitOutcome) -> ClusterReport {
    let chain = &outcome.standing.chain;
    let phase = phase_on(outcome, chain);
    let mut objects: Vec<(&ObjectOutcome, ReportObject)> = outcome
        .objects
        .iter()
        .map(|o| (o, report_object(o)))
        .collect();
    objects.sort_by(|(a, _), (b, _)| object_order(&a.key).cmp(&object_order(&b.key)));
    let mut errors: Vec<ReportError> = outcome
        .errors
        .iter()
        .map(|e| ReportError {
            object: e.object.as_ref().map(ToString::to_string),
            file: e.file_name(),
            line: e.line,
            column: e.column,
            message: if e.object.as_ref().is_some_and(is_secret) {
                WITHHELD.to_string()
            } else {
                e.text()
            },
        })
        .collect();
    errors.sort();
    errors.dedup();
    ClusterReport {
        api_version: REPORT_API_VERSION,
        kind: REPORT_KIND,
        unit: outcome.unit.clone(),
        cluster: outcome.cluster.as_ref().map(|c| ClusterRef {
            namespace: c
                .namespace
                .as_deref()
                .unwrap_or(DEFAULT_NAMESPACE)
                .to_string(),
            name: c.name.clone(),
        }),
        revision: match outcome.reported_revision().trim() {
            "" => UNKNOWN_REVISION.to_string(),
            r => r.to_string(),
        },
        stale_source: outcome.stale_source.clone(),
        held: outcome.held.clone(),
        azure: outcome.azure,
        phase,
        pass: outcome.standing.pass.why().map(str::to_string),
        chain: chain.clone(),
        objects: objects.into_iter().map(|(_, o)| o).collect(),
        conditions: outcome.standing.conditions.clone(),
        errors,
    }
}

/// The phase of a unit: NotStarted or Interrupted when no pass reached it (and no check failed
/// it) or its pass was cut short (nothing else can be said of it); else Failed on an error, a failed object or a failed
/// step of the dependency chain; else Blocked when an object waits for another; else Converged
/// when every object (but the deleted ones) is ready and, for a cluster the pass writes ARO
/// objects of, the chain's last step holds; else Progressing.
pub fn phase(outcome: &UnitOutcome) -> Phase {
    phase_on(outcome, &outcome.standing.chain)
}

fn phase_on(outcome: &UnitOutcome, chain: &Chain) -> Phase {
    match outcome.standing.pass {
        // A check that failed the unit before any pass says more than "not started".
        PassState::NotStarted(_) if outcome.errors.is_empty() => return Phase::NotStarted,
        PassState::Interrupted(_) => return Phase::Interrupted,
        PassState::NotStarted(_) | PassState::Ended => {}
    }
    let action = |f: fn(&ObjectAction) -> bool| outcome.objects.iter().any(|o| f(&o.action));
    if !outcome.errors.is_empty() || action(|a| *a == ObjectAction::Failed) || chain.is_failed() {
        Phase::Failed
    } else if action(|a| matches!(a, ObjectAction::Blocked { .. })) {
        Phase::Blocked
    } else if outcome
        .objects
        .iter()
        .all(|o| o.ready || waits_for_a_person(&o.action))
        && chain_holds(outcome, chain)
    {
        Phase::Converged
    } else {
        Phase::Progressing
    }
}

/// Deletions waiting for consent, and objects the agent never writes, wait for a person, not for
/// the agent: they do not hold convergence (the report lists them).
fn waits_for_a_person(action: &ObjectAction) -> bool {
    matches!(
        action,
        ObjectAction::Deleted
            | ObjectAction::DeletionBlocked
            | ObjectAction::Kept
            | ObjectAction::Skipped
    )
}

/// Whether the cluster's dependency chain backs a claim of convergence: when the pass writes ARO
/// objects of a cluster the chain places, that cluster converged only once the chain's last step
/// holds (with no cluster known, the chain says nothing).
fn chain_holds(outcome: &UnitOutcome, chain: &Chain) -> bool {
    let writes_aro = outcome.objects.iter().any(|o| {
        crate::kinds::is_aro_kind(&o.key.group, &o.key.kind) && !waits_for_a_person(&o.action)
    });
    !writes_aro || chain.current().is_none() || chain.is_complete()
}

fn report_object(o: &ObjectOutcome) -> ReportObject {
    let (action, mut blocked_on) = match &o.action {
        ObjectAction::Created => (Action::Created, Vec::new()),
        ObjectAction::Updated => (Action::Updated, Vec::new()),
        ObjectAction::Unchanged => (Action::Unchanged, Vec::new()),
        ObjectAction::Blocked { on } => (
            Action::Blocked,
            on.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ),
        ObjectAction::Failed => (Action::Failed, Vec::new()),
        ObjectAction::Deleted => (Action::Deleted, Vec::new()),
        ObjectAction::Adopted => (Action::Adopted, Vec::new()),
        ObjectAction::Skipped => (Action::Skipped, Vec::new()),
        ObjectAction::Drifted => (Action::Drifted, Vec::new()),
        ObjectAction::Deleting => (Action::Deleting, Vec::new()),
        ObjectAction::DeletionBlocked => (Action::DeletionBlocked, Vec::new()),
        ObjectAction::Kept => (Action::Kept, Vec::new()),
    };
    blocked_on.sort();
    blocked_on.dedup();
    let text = |s: &Option<String>| {
        s.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    ReportObject {
        api_version: o.key.api_version(),
        kind: o.key.kind.to_string(),
        namespace: o.key.namespace.as_deref().map(str::to_string),
        name: o.key.name.clone(),
        action,
        blocked_on,
        ready: o.ready,
        reason: text(&o.reason),
        message: match text(&o.message) {
            Some(_) if is_secret(&o.key) => Some(WITHHELD.to_string()),
            message => message,
        },
    }
}

/// Kinds in the order of the dependency chain; other kinds follow, by name.
const KIND_ORDER: [&str; 19] = [
    "Namespace",
    "AzureClusterIdentity",
    "AutoNodePolicy",
    "Cluster",
    "AROCluster",
    "ResourceGroup",
    "VirtualNetwork",
    "NetworkSecurityGroup",
    "VirtualNetworksSubnet",
    "Vault",
    "UserAssignedIdentity",
    "RoleAssignment",
    "AROControlPlane",
    "HcpOpenShiftCluster",
    "Secret",
    "MachinePool",
    "AROMachinePool",
    "HcpOpenShiftClustersNodePool",
    "HcpOpenShiftClustersExternalAuth",
];

/// The report's order of objects: by kind along the chain, then namespace, name, group, version.
fn object_order(key: &ObjectKey) -> (usize, &str, Option<&str>, &str, &str, &str) {
    let rank = KIND_ORDER
        .iter()
        .position(|k| *k == key.kind)
        .unwrap_or(KIND_ORDER.len());
    (
        rank,
        &key.kind,
        key.namespace.as_deref(),
        &key.name,
        &key.group,
        &key.version,
    )
}

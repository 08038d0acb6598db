//! What a report needs of a unit's live objects (ARO kinds, ASO kinds including embedded ones,
//! the kubeconfig Secret's metadata), taken at the end of each pass: where the cluster stands on
//! its dependency chain, and its ARO objects' conditions. The objects themselves are not kept in
//! the unit's outcome: across a large fleet they would be a second copy of everything live.

use super::chain::{Chain, chain};
use crate::object::ObjectKey;
use serde::Serialize;
use serde_json::Value;

/// Where a unit's cluster stood at the end of its last pass.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    pub chain: Chain,
    pub conditions: Vec<ObjectConditions>,
    /// The identity the cluster uses, once the identity check let it through (its ASO credential
    /// Secret is live and no ARO object says the namespace is not allowed).
    pub identity: Option<IdentityInUse>,
    /// How far the passes over the unit got: whether this is the standing a pass ended with.
    pub pass: PassState,
}

/// The chain's stage of a unit no pass reached.
pub const NOT_READ: &str = "not started: nothing of the cluster was read";

/// How far the passes over a unit got.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PassState {
    /// A pass ran to its end: the outcome is what it did.
    #[default]
    Ended,
    /// No pass reached the unit; why (e.g. the run's deadline passed first).
    NotStarted(String),
    /// The unit's pass was cut short; why. What it did is not known: the standing is that of the
    /// pass before (the step it had reached).
    Interrupted(String),
}

impl PassState {
    /// Why the unit got no pass or only part of one; `None` when its pass ended.
    pub fn why(&self) -> Option<&str> {
        match self {
            PassState::Ended => None,
            PassState::NotStarted(why) | PassState::Interrupted(why) => Some(why),
        }
    }
}

/// The AzureClusterIdentity a cluster uses, as its live objects show it (no secret: names only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityInUse {
    /// `namespace/name` of the AzureClusterIdentity.
    pub identity: String,
    /// Its `spec.type`, when the identity is among the unit's live objects.
    pub kind: Option<String>,
    /// The cluster's namespace, which the identity allows.
    pub namespace: String,
    /// The cluster's ASO credential Secret (`<cluster>-aso-secret`).
    pub secret: String,
}

impl Standing {
    /// Where the cluster `cluster` stands, judged from `live` (in any order).
    pub fn of(live: &[Value], cluster: Option<&ObjectKey>) -> Standing {
        Standing {
            chain: chain(live, cluster),
            conditions: aro_conditions(live),
            identity: identity_in_use(live),
            pass: PassState::Ended,
        }
    }

    /// A unit nothing live is known of (it failed before reading live state).
    pub fn unknown(cluster: Option<&ObjectKey>) -> Standing {
        Standing::of(&[], cluster)
    }

    /// A unit no pass has reached yet (`why` says what kept it): nothing of its cluster was read,
    /// so the chain places it nowhere.
    pub fn not_started(why: String) -> Standing {
        let mut standing = Standing::unknown(None);
        standing.chain.stage = NOT_READ.to_string();
        standing.pass = PassState::NotStarted(why);
        standing
    }
}

/// The conditions of one ARO object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectConditions {
    /// `Kind/namespace/name`.
    pub object: String,
    pub conditions: Vec<ReportCondition>,
}

/// One condition, without its transition time (reports hold no timestamps).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReportCondition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The conditions of the ARO objects among `live`, in chain order (AROCluster, AROControlPlane,
/// AROMachinePools), then by name.
fn aro_conditions(live: &[serde_json::Value]) -> Vec<ObjectConditions> {
    let mut found: Vec<(usize, String, ObjectConditions)> = live
        .iter()
        .filter_map(|obj| {
            let key = ObjectKey::from_object(obj).ok()?;
            if !crate::kinds::is_aro_kind(&key.group, &key.kind) {
                return None;
            }
            let rank = match key.kind.as_str() {
                "AROCluster" => 0,
                "AROControlPlane" => 1,
                _ => 2,
            };
            let text = |c: &serde_json::Value, f: &str| {
                c.get(f)
                    .and_then(serde_json::Value::as_str)
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
            };
            let conditions: Vec<ReportCondition> = obj
                .pointer("/status/conditions")
                .and_then(serde_json::Value::as_array)?
                .iter()
                .map(|c| ReportCondition {
                    type_: text(c, "type").unwrap_or_default(),
                    status: text(c, "status").unwrap_or_else(|| "Unknown".into()),
                    reason: text(c, "reason"),
                    message: text(c, "message"),
                })
                .collect();
            (!conditions.is_empty()).then(|| {
                (
                    rank,
                    key.name.clone(),
                    ObjectConditions {
                        object: key.to_string(),
                        conditions,
                    },
                )
            })
        })
        .collect();
    found.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    found.into_iter().map(|(_, _, c)| c).collect()
}

/// The identity the cluster of `live` uses: its AROControlPlane's `identityRef` (CAPZ's
/// AROCluster has none), when its ASO credential Secret is live and no ARO object carries
/// `NamespaceNotAllowedByIdentity`.
fn identity_in_use(live: &[Value]) -> Option<IdentityInUse> {
    use crate::identity::{NOT_ALLOWED_REASON, identity_ref_of};
    use crate::reconcile::credentials as aso;
    fn kind_of(o: &Value) -> &str {
        o.get("kind").and_then(Value::as_str).unwrap_or_default()
    }
    let referrer = live
        .iter()
        .find(|o| kind_of(o) == "AROControlPlane" && identity_ref_of(o).is_some())?;
    let (id_ns, id_name) = identity_ref_of(referrer)?;
    let key = ObjectKey::from_object(referrer).ok()?;
    let namespace = key.namespace.as_deref().unwrap_or_default().to_string();
    let refused = live.iter().any(|o| {
        o.pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| cs.iter().any(|c| c["reason"] == NOT_ALLOWED_REASON))
    });
    let cluster = referrer
        .pointer("/metadata/labels/cluster.x-k8s.io~1cluster-name")
        .and_then(Value::as_str)
        .unwrap_or(&key.name);
    let secret = aso::secret_name(cluster);
    let secret_live = live.iter().any(|o| {
        kind_of(o) == "Secret"
            && o.pointer("/metadata/name").and_then(Value::as_str) == Some(secret.as_str())
            && o.pointer("/metadata/namespace").and_then(Value::as_str) == Some(namespace.as_str())
    });
    if refused || !secret_live {
        return None;
    }
    let kind = live
        .iter()
        .find(|o| {
            kind_of(o) == "AzureClusterIdentity"
                && o.pointer("/metadata/name").and_then(Value::as_str) == Some(id_name.as_str())
                && o.pointer("/metadata/namespace").and_then(Value::as_str) == Some(id_ns.as_str())
        })
        .and_then(|o| o.pointer("/spec/type").and_then(Value::as_str))
        .map(str::to_string);
    Some(IdentityInUse {
        identity: format!("{id_ns}/{id_name}"),
        kind,
        namespace,
        secret,
    })
}

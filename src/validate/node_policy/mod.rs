//! The AutoNodePolicy merged into ARO node pools (`policies.md` §3, after the seed
//! `autonode-policy-proposal.md`), as pure functions: which policy counts for a node pool, the
//! HcpOpenShiftClustersNodePool body with the policy merged in, or why it cannot be applied.
//!
//! - **Which policy.** Only the AutoNodePolicy named `default` in the node pool's namespace
//!   counts; others are ignored (their status says so, see `reconcile::aro::node_policy`). The one the unit renders
//!   counts over the live one ([`effective_policy`]): a policy in git is merged before it is live,
//!   so the first apply of a node pool is already compliant. One being deleted does not count.
//! - **Requirements** (`requirements`: operators, key mapping, the architecture rule). The policy
//!   is the allowed set; the node pool's own vmSize, zone, and the architecture its VM size
//!   implies must fall inside it (the intersection). A node pool that sets no vmSize takes the
//!   first value listed by an `In` requirement on `node.kubernetes.io/instance-type` that every
//!   requirement allows; no other field is ever filled in (a pool without a zone stays regional).
//!   Outside the set: [`NodePolicyError`], the node pool is not applied and its AROMachinePool
//!   shows `NodePoolReady` False, reason [`NODE_POLICY_VIOLATION`] (or [`NODE_POLICY_INVALID`] for
//!   a policy that cannot be read). No policy, or one with no requirements: everything allowed.
//! - **Hidden fields.** `spec.azureNodeClassDefaults.rootVolume` becomes the node pool's
//!   `spec.properties.platform.osDisk` and replaces the whole osDisk the user wrote: `volumeSize`
//!   (a Kubernetes quantity, rounded up to whole GiB) → `sizeGiB`, `volumeType` →
//!   `diskStorageAccountType`. `encrypted`: Azure managed disks are always encrypted at rest, so
//!   `true` needs nothing and `false` cannot be honoured; `iops` and `throughput` have no ARO
//!   field (both noted in the policy's status). Without a policy, or for what its `rootVolume`
//!   leaves out, fixed defaults: [`DEFAULT_OS_DISK_GIB`] GiB [`DEFAULT_OS_DISK_TYPE`].

mod requirements;

pub use requirements::{Field, Operator, Requirement, arch_of};

use crate::object::ObjectKey;
use serde_json::{Map, Value, json};

pub const POLICY_GROUP: &str = "karpenter.hypershift.openshift.io";
pub const POLICY_VERSION: &str = "v1beta1";
pub const POLICY_KIND: &str = "AutoNodePolicy";
/// The only AutoNodePolicy name that counts.
pub const DEFAULT_POLICY_NAME: &str = "default";
/// `NodePoolReady` reason (and the hold's): the node pool falls outside the policy.
pub const NODE_POLICY_VIOLATION: &str = "NodePolicyViolation";
/// `NodePoolReady` reason (and the hold's): the policy itself cannot be read.
pub const NODE_POLICY_INVALID: &str = "NodePolicyInvalid";
/// The OS disk size every node gets when no policy says otherwise.
pub const DEFAULT_OS_DISK_GIB: u64 = 128;
/// The OS disk type every node gets when no policy says otherwise.
pub const DEFAULT_OS_DISK_TYPE: &str = "Premium_LRS";

/// Why a node pool cannot be applied under its namespace's policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodePolicyError {
    #[error("AutoNodePolicy {policy} does not allow {field} {value} ({requirement})")]
    NotAllowed {
        /// `namespace/name`.
        policy: String,
        field: &'static str,
        value: String,
        requirement: String,
    },
    #[error("AutoNodePolicy {policy} requires {field} to be set ({requirement})")]
    Unset {
        policy: String,
        field: &'static str,
        requirement: String,
    },
    #[error(
        "AutoNodePolicy {policy} requires at least {min} values of {field}, and a node pool has one ({requirement})"
    )]
    MinValues {
        policy: String,
        field: &'static str,
        min: u64,
        requirement: String,
    },
    #[error("AutoNodePolicy {policy} cannot be merged: {message}")]
    Invalid { policy: String, message: String },
    #[error(
        "no AutoNodePolicy can be merged: the node pool's spec.properties.platform is not an object"
    )]
    NotAnObject,
}

impl NodePolicyError {
    /// The condition reason this error shows as.
    pub fn reason(&self) -> &'static str {
        match self {
            NodePolicyError::Invalid { .. } | NodePolicyError::NotAnObject => NODE_POLICY_INVALID,
            _ => NODE_POLICY_VIOLATION,
        }
    }
}

/// The OS disk the hidden fields give every node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OsDisk {
    pub size_gib: u64,
    pub storage_type: String,
}

impl Default for OsDisk {
    fn default() -> Self {
        OsDisk {
            size_gib: DEFAULT_OS_DISK_GIB,
            storage_type: DEFAULT_OS_DISK_TYPE.into(),
        }
    }
}

/// An AutoNodePolicy as the merge reads it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodePolicy {
    /// `namespace/name`; empty for "no policy".
    pub name: String,
    pub requirements: Vec<Requirement>,
    pub os_disk: OsDisk,
    /// What the policy says that ARO node pools cannot carry (ignored), for its status.
    pub notes: Vec<String>,
}

use crate::object::str_at;

/// `namespace/name` of an object.
fn ns_name(obj: &Value) -> String {
    format!(
        "{}/{}",
        str_at(obj, "/metadata/namespace").unwrap_or("default"),
        str_at(obj, "/metadata/name").unwrap_or("")
    )
}

/// Whether `obj` is an AutoNodePolicy (any version).
pub fn is_policy(obj: &Value) -> bool {
    str_at(obj, "/kind") == Some(POLICY_KIND)
        && str_at(obj, "/apiVersion").is_some_and(|a| a.starts_with(&format!("{POLICY_GROUP}/")))
}

/// Whether `key` names an AutoNodePolicy (any version).
pub fn is_policy_key(key: &ObjectKey) -> bool {
    key.kind == POLICY_KIND && key.group == POLICY_GROUP
}

/// The key that lists the AutoNodePolicies of `namespace` (every namespace when `None`).
pub fn list_key(namespace: Option<&str>) -> ObjectKey {
    ObjectKey {
        group: POLICY_GROUP.into(),
        version: POLICY_VERSION.into(),
        kind: POLICY_KIND.into(),
        namespace: namespace.map(crate::object::Sym::new),
        name: String::new(),
    }
}

/// The AutoNodePolicy that counts for the node pools of `namespace`: the one named `default`
/// that the unit renders (`rendered`), else the live one (`live`) unless it is being deleted.
pub fn effective_policy<'a>(
    namespace: &str,
    rendered: &[&'a Value],
    live: &'a [Value],
) -> Option<&'a Value> {
    let counts = |o: &&Value| {
        is_policy(o)
            && str_at(o, "/metadata/name") == Some(DEFAULT_POLICY_NAME)
            && str_at(o, "/metadata/namespace").unwrap_or("default") == namespace
    };
    rendered.iter().copied().find(counts).or_else(|| {
        live.iter()
            .filter(|o| o.pointer("/metadata/deletionTimestamp").is_none())
            .find(counts)
    })
}

/// A volume size (a Kubernetes quantity: a number of bytes with an optional binary or decimal
/// suffix) in whole GiB, rounded up; `None` when it is not a positive quantity.
fn gib_of(q: &Value) -> Option<u64> {
    let text = match q {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let n: f64 = number.parse().ok()?;
    let unit: f64 = match suffix {
        "" => 1.0,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        _ => return None,
    };
    let gib = (n * unit / 1024f64.powi(3)).ceil();
    (gib.is_finite() && gib >= 1.0 && gib < u64::MAX as f64).then_some(gib as u64)
}

/// Reads an AutoNodePolicy; the error names it and what is wrong.
pub fn parse(policy: &Value) -> Result<NodePolicy, NodePolicyError> {
    let name = ns_name(policy);
    let invalid = |message: String| NodePolicyError::Invalid {
        policy: name.clone(),
        message,
    };
    let mut notes = Vec::new();
    let requirements = match policy.pointer("/spec/nodePoolDefaults/requirements") {
        None | Some(Value::Null) => vec![],
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(i, r)| Requirement::parse(r, i))
            .collect::<Result<Vec<_>, _>>()
            .map_err(invalid)?,
        Some(_) => {
            return Err(invalid(
                "spec.nodePoolDefaults.requirements must be a list".into(),
            ));
        }
    };
    for r in requirements.iter().filter(|r| r.field.is_none()) {
        notes.push(format!(
            "requirement {} ignored: no ARO node pool field",
            r.key
        ));
    }
    let mut os_disk = OsDisk::default();
    if let Some(volume) = policy.pointer("/spec/azureNodeClassDefaults/rootVolume") {
        if let Some(size) = volume.get("volumeSize") {
            os_disk.size_gib = gib_of(size).ok_or_else(|| {
                invalid(format!(
                    "spec.azureNodeClassDefaults.rootVolume.volumeSize {size} is not a positive quantity"
                ))
            })?;
        }
        if let Some(t) = volume.get("volumeType") {
            os_disk.storage_type = t.as_str().filter(|t| !t.is_empty()).map(str::to_string).ok_or_else(|| {
                invalid("spec.azureNodeClassDefaults.rootVolume.volumeType must be a disk type such as Premium_LRS".into())
            })?;
        }
        if volume.get("encrypted") == Some(&json!(false)) {
            notes.push(
                "rootVolume.encrypted false ignored: Azure managed OS disks are always encrypted at rest"
                    .into(),
            );
        }
        for field in ["iops", "throughput"] {
            if volume.get(field).is_some() {
                notes.push(format!(
                    "rootVolume.{field} ignored: no ARO node pool field"
                ));
            }
        }
    }
    if let Some(spec) = policy.get("spec").and_then(Value::as_object) {
        for k in spec
            .keys()
            .filter(|k| k.ends_with("NodeClassDefaults") && k.as_str() != "azureNodeClassDefaults")
        {
            notes.push(format!("{k} ignored: not the Azure platform"));
        }
    }
    Ok(NodePolicy {
        name,
        requirements,
        os_disk,
        notes,
    })
}

/// `spec.properties.platform` of a node pool, created when missing; `None` when something on
/// the way is not an object.
fn platform_mut(pool: &mut Value) -> Option<&mut Map<String, Value>> {
    let mut at = pool;
    for k in ["spec", "properties", "platform"] {
        let next = at.as_object_mut()?.entry(k).or_insert_with(|| json!({}));
        if next.is_null() {
            *next = json!({});
        }
        at = next;
    }
    at.as_object_mut()
}

/// A platform field as text: strings as they are, numbers written out; unset or empty: `None`.
fn text(platform: &Map<String, Value>, field: &str) -> Option<String> {
    match platform.get(field)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl NodePolicy {
    /// The vmSize for a node pool that sets none: the first value of the first `In` requirement
    /// on the instance type that every vmSize and architecture requirement allows.
    fn pick_vm_size(&self) -> Option<String> {
        let listed = self
            .requirements
            .iter()
            .find(|r| r.field == Some(Field::VmSize) && r.operator == Operator::In)?;
        listed
            .values
            .iter()
            .find(|v| {
                self.requirements.iter().all(|r| match r.field {
                    Some(Field::VmSize) => r.allows(Some(v)),
                    Some(Field::Arch) => r.allows(Some(arch_of(v))),
                    _ => true,
                })
            })
            .cloned()
    }

    /// Checks a node pool's platform against every requirement, in the policy's order.
    fn check(&self, platform: &Map<String, Value>) -> Result<(), NodePolicyError> {
        let vm_size = text(platform, "vmSize");
        let zone = text(platform, "availabilityZone");
        for r in &self.requirements {
            let Some(field) = r.field else { continue };
            let value = match field {
                Field::VmSize => vm_size.clone(),
                Field::Zone => zone.clone(),
                Field::Arch => vm_size.as_deref().map(|s| arch_of(s).to_string()),
            };
            if !r.allows(value.as_deref()) {
                return Err(match value {
                    None => NodePolicyError::Unset {
                        policy: self.name.clone(),
                        field: if field == Field::Arch {
                            Field::VmSize.name()
                        } else {
                            field.name()
                        },
                        requirement: r.describe(),
                    },
                    Some(v) => NodePolicyError::NotAllowed {
                        policy: self.name.clone(),
                        field: field.name(),
                        value: match (field, &vm_size) {
                            (Field::Arch, Some(size)) => format!("{v} (vmSize {size})"),
                            _ => v,
                        },
                        requirement: r.describe(),
                    },
                });
            }
            if let Some(min) = r.min_values.filter(|m| *m > 1) {
                return Err(NodePolicyError::MinValues {
                    policy: self.name.clone(),
                    field: field.name(),
                    min,
                    requirement: r.describe(),
                });
            }
        }
        Ok(())
    }

    /// `pool` with this policy merged in (see the module header).
    pub fn merge(&self, pool: &Value) -> Result<Value, NodePolicyError> {
        let mut out = pool.clone();
        let Some(platform) = platform_mut(&mut out) else {
            return Err(NodePolicyError::NotAnObject);
        };
        if text(platform, "vmSize").is_none()
            && let Some(size) = self.pick_vm_size()
        {
            platform.insert("vmSize".into(), json!(size));
        }
        self.check(platform)?;
        platform.insert(
            "osDisk".into(),
            json!({"sizeGiB": self.os_disk.size_gib, "diskStorageAccountType": self.os_disk.storage_type}),
        );
        Ok(out)
    }

    /// Whether the live node pool `pool` carries this policy already: it is inside the allowed
    /// set and its platform is what the merge makes of it.
    pub fn carried_by(&self, pool: &Value) -> bool {
        self.merge(pool).is_ok_and(|m| {
            m.pointer("/spec/properties/platform") == pool.pointer("/spec/properties/platform")
        })
    }
}

/// `pool` (an HcpOpenShiftClustersNodePool as it is to be applied) with `policy` (the
/// AutoNodePolicy that counts, see [`effective_policy`]; `None`: no policy) merged in.
pub fn merge(pool: &Value, policy: Option<&Value>) -> Result<Value, NodePolicyError> {
    match policy {
        Some(p) => parse(p)?.merge(pool),
        None => NodePolicy::default().merge(pool),
    }
}

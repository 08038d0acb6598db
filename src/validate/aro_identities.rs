//! The operator identities an ARO HCP cluster's OpenShift version requires, and the roles they need
//! (pure).
//!
//! The table is `aro_identities.yaml`, kept by the project per OpenShift minor version: what the
//! service's `hcpOperatorIdentityRoleSets` publishes (Azure/ARO-HCP's public role definition set:
//! the built-in role of each control plane operator, data plane operator and the service managed
//! identity), with the scopes (VNet, subnet, NSG, Key Vault) that ARO HCP's documentation and the
//! public Cluster API Provider Azure template for ARO HCP assign them on. Source and date are in the
//! file's header (read 2026-11-29).
//!
//! [`problems`] checks one HcpOpenShiftCluster against the ASO resources of its unit:
//! - its `operatorsAuthentication.userAssignedIdentities` names every identity its version requires
//!   (kms only with a customer-managed etcd key), each a UserAssignedIdentity of the unit or an ARM id;
//! - the control plane operators and the service managed identity are also the cluster's own
//!   (`identity.userAssignedIdentities`), as the service requires;
//! - for each identity declared in the unit, a RoleAssignment (`authorization.azure.com`) owned by
//!   the scope gives it the role: its `principalIdFromConfig` is the ConfigMap the identity exports
//!   (`operatorSpec.configMaps.principalId`), its `roleDefinitionReference.armId` the role's id.
//!
//! An identity or a scope given by ARM id lives outside the unit: its role assignments are not the
//! unit's to declare, and are not checked. The Azure simulator refuses what [`Problem::refused`]
//! says the service refuses at creation, and fails provisioning on the rest.

use crate::arm::OwnerRef;
use crate::object::text_at;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;

/// Where the table comes from, as messages name it.
pub const TABLE_FILE: &str = "src/validate/aro_identities.yaml";

const USER_ASSIGNED_IDENTITY: &str = "UserAssignedIdentity";
const ROLE_ASSIGNMENT: &str = "RoleAssignment";
const AUTH: &str = "/spec/properties/platform/operatorsAuthentication/userAssignedIdentities";

/// A built-in Azure role.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Role {
    /// The role definition's GUID.
    pub id: String,
    pub name: String,
}

/// A resource of the cluster a role is given on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    Vnet,
    Subnet,
    Nsg,
    KeyVault,
}

impl Scope {
    /// The ASO kind of the scope.
    pub fn kind(self) -> &'static str {
        match self {
            Scope::Vnet => crate::arm::VIRTUAL_NETWORK,
            Scope::Subnet => crate::arm::SUBNET,
            Scope::Nsg => "NetworkSecurityGroup",
            Scope::KeyVault => "Vault",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scope::Vnet => "VNet",
            Scope::Subnet => "subnet",
            Scope::Nsg => "NSG",
            Scope::KeyVault => "Key Vault",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Condition {
    CustomerManagedEtcd,
}

#[derive(Debug, Deserialize)]
struct Need {
    role: String,
    scopes: Vec<Scope>,
    #[serde(default)]
    when: Option<Condition>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RoleSet {
    versions: Vec<String>,
    control_plane_operators: BTreeMap<String, Need>,
    data_plane_operators: BTreeMap<String, Need>,
    service_managed_identity: Need,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Table {
    roles: BTreeMap<String, Role>,
    role_sets: Vec<RoleSet>,
}

static TABLE: LazyLock<Table> = LazyLock::new(|| {
    let value = crate::yaml::from_str(include_str!("aro_identities.yaml"))
        .expect("aro_identities.yaml is YAML");
    serde_json::from_value(value).expect("aro_identities.yaml has the table's shape")
});

/// Which of the cluster's identities an operator identity is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Plane {
    ControlPlane,
    DataPlane,
    Service,
}

impl Plane {
    /// The field of `operatorsAuthentication.userAssignedIdentities` that names it (ASO's).
    pub fn field(self) -> &'static str {
        match self {
            Plane::ControlPlane => "controlPlaneOperatorsReferences",
            Plane::DataPlane => "dataPlaneOperatorsReferences",
            Plane::Service => "serviceManagedIdentityReference",
        }
    }

    fn words(self) -> &'static str {
        match self {
            Plane::ControlPlane => "control plane operator",
            Plane::DataPlane => "data plane operator",
            Plane::Service => "service managed",
        }
    }
}

/// One identity a version requires, with its role and scopes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Required {
    pub plane: Plane,
    /// The operator's name (`ingress`); empty for the service managed identity.
    pub operator: String,
    pub role: Role,
    pub scopes: Vec<Scope>,
    /// Required only with a customer-managed etcd key (checked whenever named).
    pub only_with_kms: bool,
}

impl Required {
    /// `control plane operator identity "ingress"`, `service managed identity`.
    pub fn describe(&self) -> String {
        match self.plane {
            Plane::Service => "service managed identity".to_string(),
            plane => format!("{} identity {:?}", plane.words(), self.operator),
        }
    }

    /// The pointer of the field that names it, under the cluster.
    pub fn pointer(&self) -> String {
        match self.plane {
            Plane::Service => format!("{AUTH}/{}", self.plane.field()),
            plane => format!("{AUTH}/{}/{}", plane.field(), self.operator),
        }
    }
}

/// The OpenShift minor versions the table has a role set for, in order.
pub fn known_versions() -> Vec<&'static str> {
    let mut all: Vec<&str> = TABLE
        .role_sets
        .iter()
        .flat_map(|s| s.versions.iter().map(String::as_str))
        .collect();
    all.sort_by_key(|v| minor_number(v));
    all
}

fn minor_number(v: &str) -> (u32, u32) {
    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// The minor version (`4.20`) of a version id (`4.20`, `4.20.3`); `None` when it is not one.
pub fn minor_of(version: &str) -> Option<String> {
    let mut parts = version.split('.');
    let (major, minor) = (parts.next()?, parts.next()?);
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (numeric(major) && numeric(minor)).then(|| format!("{major}.{minor}"))
}

/// The identities OpenShift `minor` requires; `None` for a minor the table has no role set for.
pub fn required(minor: &str) -> Option<Vec<Required>> {
    let set = TABLE
        .role_sets
        .iter()
        .find(|s| s.versions.iter().any(|v| v == minor))?;
    let entry = |plane, operator: &str, need: &Need| Required {
        plane,
        operator: operator.to_string(),
        role: TABLE.roles[&need.role].clone(),
        scopes: need.scopes.clone(),
        only_with_kms: need.when == Some(Condition::CustomerManagedEtcd),
    };
    let mut out: Vec<Required> = set
        .control_plane_operators
        .iter()
        .map(|(op, need)| entry(Plane::ControlPlane, op, need))
        .chain(
            set.data_plane_operators
                .iter()
                .map(|(op, need)| entry(Plane::DataPlane, op, need)),
        )
        .collect();
    out.push(entry(Plane::Service, "", &set.service_managed_identity));
    Some(out)
}

/// What is wrong with a cluster's operator identities. Each names the field (a JSON pointer under
/// the HcpOpenShiftCluster) and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    #[error(
        "{pointer}: OpenShift {minor} has no operator identity role set in the project's table ({TABLE_FILE} knows {known}): the service publishes none, so it refuses the version"
    )]
    UnknownVersion {
        pointer: String,
        minor: String,
        known: String,
    },
    #[error(
        "{pointer}: OpenShift {minor} requires the {what} (rule: the service's operator identity role set for {minor}, {TABLE_FILE})"
    )]
    Missing {
        pointer: String,
        minor: String,
        what: String,
    },
    #[error(
        "{pointer}: the {what} names UserAssignedIdentity {name:?}, which the unit does not declare (rule: an operator identity is a UserAssignedIdentity of the unit or an ARM id)"
    )]
    Unresolved {
        pointer: String,
        what: String,
        name: String,
    },
    #[error(
        "{pointer}: an identity reference's kind is {kind} (group {group:?}), not UserAssignedIdentity (group \"managedidentity.azure.com\") (rule: operator and cluster identities are user-assigned managed identities)"
    )]
    WrongKind {
        pointer: String,
        group: String,
        kind: String,
    },
    #[error(
        "/spec/identity/userAssignedIdentities: the {what} ({name}) is not among the cluster's own identities (rule: the service requires the control plane operators' and the service managed identity to be assigned to the cluster)"
    )]
    NotAssigned { what: String, name: String },
    #[error(
        "{pointer}: the {what} ({name}) exports no principal ID (operatorSpec.configMaps.principalId of the UserAssignedIdentity), so no RoleAssignment can give it its role {role:?} (rule: {TABLE_FILE})"
    )]
    NoPrincipal {
        pointer: String,
        what: String,
        name: String,
        role: String,
    },
    #[error(
        "{pointer}: the {what} ({name}) needs the role {role:?} ({role_id}) on the {scope} {scope_name}, and no RoleAssignment of the unit gives it: one owned by {scope_kind} {scope_name} whose principalIdFromConfig is ConfigMap {config_map:?} and whose roleDefinitionReference.armId ends in /roleDefinitions/{role_id} (rule: {TABLE_FILE})"
    )]
    MissingRole {
        pointer: String,
        what: String,
        name: String,
        role: String,
        role_id: String,
        scope: Scope,
        scope_kind: &'static str,
        scope_name: String,
        config_map: String,
    },
}

impl Problem {
    /// True when the service refuses the cluster's creation for it (the request is invalid);
    /// otherwise the cluster is accepted and its provisioning fails (a missing role).
    pub fn refused(&self) -> bool {
        !matches!(
            self,
            Problem::MissingRole { .. } | Problem::NoPrincipal { .. }
        )
    }
}

/// How the cluster refers to a resource: a name in the unit or an ARM id.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ref {
    Named(String),
    Arm(String),
}

impl fmt::Display for Ref {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ref::Named(n) => write!(f, "{n}"),
            Ref::Arm(id) => write!(f, "{id}"),
        }
    }
}

fn reference(value: Option<&Value>) -> Option<Ref> {
    let value = value?;
    if let Some(id) = text_at(value, "/armId") {
        return Some(Ref::Arm(id.to_string()));
    }
    text_at(value, "/name").map(|n| Ref::Named(n.to_string()))
}

fn same(a: &Ref, b: &Ref) -> bool {
    match (a, b) {
        (Ref::Named(x), Ref::Named(y)) => x == y,
        (Ref::Arm(x), Ref::Arm(y)) => x.eq_ignore_ascii_case(y),
        _ => false,
    }
}

fn kind_of(v: &Value) -> &str {
    text_at(v, "/kind").unwrap_or_default()
}

fn named<'a>(resources: &[&'a Value], kind: &str, name: &str) -> Option<&'a Value> {
    resources
        .iter()
        .copied()
        .find(|r| kind_of(r) == kind && text_at(r, "/metadata/name") == Some(name))
}

/// The scopes' objects in the unit (by kind), as far as the cluster names them by name.
fn scopes_of<'a>(cluster: &Value, resources: &[&'a Value]) -> BTreeMap<Scope, &'a Value> {
    let mut out = BTreeMap::new();
    let platform = cluster.pointer("/spec/properties/platform");
    let by_ref = |field: &str, kind: &str| match reference(platform.and_then(|p| p.get(field))) {
        Some(Ref::Named(n)) => named(resources, kind, &n),
        _ => None,
    };
    if let Some(subnet) = by_ref("subnetReference", crate::arm::SUBNET) {
        out.insert(Scope::Subnet, subnet);
        if let OwnerRef::Named { name, .. } = crate::arm::owner_of(subnet)
            && let Some(vnet) = named(resources, crate::arm::VIRTUAL_NETWORK, &name)
        {
            out.insert(Scope::Vnet, vnet);
        }
    }
    if let Some(nsg) = by_ref("networkSecurityGroupReference", "NetworkSecurityGroup") {
        out.insert(Scope::Nsg, nsg);
    }
    if let Some(vault) = text_at(
        cluster,
        "/spec/properties/etcd/dataEncryption/customerManaged/kms/vaultName",
    ) && let Some(v) = resources
        .iter()
        .copied()
        .find(|r| kind_of(r) == "Vault" && crate::arm::azure_name(r) == vault)
    {
        out.insert(Scope::KeyVault, v);
    }
    out
}

fn customer_managed_etcd(cluster: &Value) -> bool {
    text_at(
        cluster,
        "/spec/properties/etcd/dataEncryption/keyManagementMode",
    ) == Some("CustomerManaged")
}

/// The ConfigMap (name, key) an identity exports its principal ID to.
fn principal_export(identity: &Value) -> Option<(&str, &str)> {
    let at = identity.pointer("/spec/operatorSpec/configMaps/principalId")?;
    Some((text_at(at, "/name")?, text_at(at, "/key")?))
}

/// Whether a RoleAssignment of `resources` gives the principal exported to `config_map` the role
/// `role_id` on `scope` (owned by it).
fn assigned(resources: &[&Value], config_map: (&str, &str), role_id: &str, scope: &Value) -> bool {
    let scope_kind = kind_of(scope);
    let scope_name = text_at(scope, "/metadata/name").unwrap_or_default();
    let suffix = format!("/roledefinitions/{}", role_id.to_ascii_lowercase());
    resources.iter().any(|r| {
        kind_of(r) == ROLE_ASSIGNMENT
            && matches!(crate::arm::owner_of(r),
                OwnerRef::Named { kind, name, .. } if kind == scope_kind && name == scope_name)
            && text_at(r, "/spec/principalIdFromConfig/name") == Some(config_map.0)
            && text_at(r, "/spec/principalIdFromConfig/key") == Some(config_map.1)
            && text_at(r, "/spec/roleDefinitionReference/armId")
                .is_some_and(|id| id.to_ascii_lowercase().ends_with(&suffix))
    })
}

/// Identity references (under `pointer`) whose kind or group is given and is not a
/// UserAssignedIdentity's.
fn wrong_kinds(cluster: &Value) -> Vec<Problem> {
    let mut refs: Vec<(String, &Value)> = Vec::new();
    if let Some(own) = cluster
        .pointer("/spec/identity/userAssignedIdentities")
        .and_then(Value::as_array)
    {
        for (i, e) in own.iter().enumerate() {
            if let Some(r) = e.get("reference") {
                refs.push((
                    format!("/spec/identity/userAssignedIdentities/{i}/reference"),
                    r,
                ));
            }
        }
    }
    for plane in [Plane::ControlPlane, Plane::DataPlane] {
        let at = format!("{AUTH}/{}", plane.field());
        if let Some(map) = cluster.pointer(&at).and_then(Value::as_object) {
            refs.extend(map.iter().map(|(op, r)| (format!("{at}/{op}"), r)));
        }
    }
    let smi = format!("{AUTH}/{}", Plane::Service.field());
    if let Some(r) = cluster.pointer(&smi) {
        refs.push((smi, r));
    }
    refs.into_iter()
        .filter_map(|(pointer, r)| {
            let kind = text_at(r, "/kind");
            let group = text_at(r, "/group");
            let wrong = kind.is_some_and(|k| k != USER_ASSIGNED_IDENTITY)
                || group.is_some_and(|g| g != "managedidentity.azure.com");
            wrong.then(|| Problem::WrongKind {
                pointer,
                group: group.unwrap_or_default().to_string(),
                kind: kind.unwrap_or(USER_ASSIGNED_IDENTITY).to_string(),
            })
        })
        .collect()
}

/// The problems of `cluster` (an HcpOpenShiftCluster) among `resources`, the ASO resources of its
/// unit. A version that is not `x.y[.z]` is left to the version check.
pub fn problems(cluster: &Value, resources: &[&Value]) -> Vec<Problem> {
    let Some(minor) = text_at(cluster, "/spec/properties/version/id").and_then(minor_of) else {
        return Vec::new();
    };
    let Some(required) = required(&minor) else {
        return vec![Problem::UnknownVersion {
            pointer: "/spec/properties/version/id".into(),
            minor,
            known: known_versions().join(", "),
        }];
    };
    let wrong = wrong_kinds(cluster);
    if !wrong.is_empty() {
        return wrong;
    }
    let auth = cluster.pointer(AUTH);
    let own: Vec<Ref> = cluster
        .pointer("/spec/identity/userAssignedIdentities")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| reference(e.get("reference")))
        .collect();
    let scopes = scopes_of(cluster, resources);
    let kms = customer_managed_etcd(cluster);
    let mut out = Vec::new();
    for need in &required {
        let field = auth.and_then(|a| a.get(need.plane.field()));
        let given = match need.plane {
            Plane::Service => reference(field),
            _ => reference(field.and_then(|f| f.get(&need.operator))),
        };
        let Some(given) = given else {
            if !need.only_with_kms || kms {
                out.push(Problem::Missing {
                    pointer: need.pointer(),
                    minor: minor.clone(),
                    what: need.describe(),
                });
            }
            continue;
        };
        if need.plane != Plane::DataPlane && !own.iter().any(|o| same(o, &given)) {
            out.push(Problem::NotAssigned {
                what: need.describe(),
                name: given.to_string(),
            });
        }
        let Ref::Named(name) = &given else { continue };
        let Some(identity) = named(resources, USER_ASSIGNED_IDENTITY, name) else {
            out.push(Problem::Unresolved {
                pointer: need.pointer(),
                what: need.describe(),
                name: name.clone(),
            });
            continue;
        };
        let in_unit: Vec<(Scope, &Value)> = need
            .scopes
            .iter()
            .filter_map(|s| scopes.get(s).map(|v| (*s, *v)))
            .collect();
        if in_unit.is_empty() {
            continue;
        }
        let Some(export) = principal_export(identity) else {
            out.push(Problem::NoPrincipal {
                pointer: need.pointer(),
                what: need.describe(),
                name: name.clone(),
                role: need.role.name.clone(),
            });
            continue;
        };
        for (scope, object) in in_unit {
            if !assigned(resources, export, &need.role.id, object) {
                out.push(Problem::MissingRole {
                    pointer: need.pointer(),
                    what: need.describe(),
                    name: name.clone(),
                    role: need.role.name.clone(),
                    role_id: need.role.id.clone(),
                    scope,
                    scope_kind: scope.kind(),
                    scope_name: text_at(object, "/metadata/name")
                        .unwrap_or_default()
                        .to_string(),
                    config_map: export.0.to_string(),
                });
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "aro_identities_tests.rs"]
mod tests;

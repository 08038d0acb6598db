//! The Azure Resource Manager model of Azure Service Operator resources: where `spec.owner` points,
//! the ARM type of a kind and the ARM id of a resource under its owner. Pure. The plan names Azure
//! resources by these ids (two units may not declare one resource), and the Azure simulator files
//! what it makes up under them.

use crate::kinds::{EXTERNAL_AUTH, HCP_CLUSTER, NODE_POOL};
use crate::object::text_at;
use serde_json::Value;

/// The subscription of an id whose owner chain ends without one (the all-zero subscription, which
/// no real resource lives in; every simulated resource lives there).
pub const SUBSCRIPTION_ID: &str = "00000000-0000-0000-0000-000000000000";

pub const RESOURCE_GROUP: &str = "ResourceGroup";
pub const VIRTUAL_NETWORK: &str = "VirtualNetwork";
pub const SUBNET: &str = "VirtualNetworksSubnet";

const RESOURCES_GROUP: &str = "resources.azure.com";
const NETWORK_GROUP: &str = "network.azure.com";
const REDHAT_GROUP: &str = "redhatopenshift.azure.com";

/// Where `spec.owner` of an ASO object points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnerRef {
    /// The kind lives directly in the subscription (ResourceGroup) and has no owner.
    NotNeeded,
    /// `spec.owner` names neither an object nor an ARM id.
    NotSet { implied_kind: &'static str },
    /// `spec.owner.armId`: an Azure resource outside the control plane, taken as existing.
    ArmId(String),
    /// An object in the same namespace. `group` is `None` when given neither explicitly nor implied
    /// by the kind (the runner then looks the kind up).
    Named {
        group: Option<String>,
        kind: String,
        name: String,
    },
}

/// The owner kind (and its group) a child kind implies when `spec.owner.kind` is not given.
pub fn implied_owner_kind(kind: &str) -> (&'static str, &'static str) {
    match kind {
        SUBNET => (NETWORK_GROUP, VIRTUAL_NETWORK),
        NODE_POOL | EXTERNAL_AUTH => (REDHAT_GROUP, HCP_CLUSTER),
        _ => (RESOURCES_GROUP, RESOURCE_GROUP),
    }
}

/// The group ASO serves `kind` in, for the kinds the simulator knows by name.
fn known_group(kind: &str) -> Option<&'static str> {
    match kind {
        RESOURCE_GROUP => Some(RESOURCES_GROUP),
        VIRTUAL_NETWORK | SUBNET | "NetworkSecurityGroup" => Some(NETWORK_GROUP),
        HCP_CLUSTER | NODE_POOL | EXTERNAL_AUTH => Some(REDHAT_GROUP),
        "Vault" => Some("keyvault.azure.com"),
        "UserAssignedIdentity" => Some("managedidentity.azure.com"),
        "RoleAssignment" => Some("authorization.azure.com"),
        _ => None,
    }
}

/// Reads `spec.owner` of `obj`; an explicit `spec.owner.kind` wins over the kind implied by `obj`'s kind.
pub fn owner_of(obj: &Value) -> OwnerRef {
    let kind = text_at(obj, "/kind").unwrap_or_default();
    if kind == RESOURCE_GROUP {
        return OwnerRef::NotNeeded;
    }
    let owner = obj.pointer("/spec/owner");
    let field = |f: &str| {
        owner
            .and_then(|o| o.get(f))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    if let Some(arm_id) = field("armId") {
        return OwnerRef::ArmId(arm_id.to_string());
    }
    let (implied_group, implied_kind) = implied_owner_kind(kind);
    let Some(name) = field("name") else {
        return OwnerRef::NotSet { implied_kind };
    };
    let (group, kind) = match (field("group"), field("kind")) {
        (group, Some(kind)) => (
            group.or_else(|| known_group(kind)).map(str::to_string),
            kind.to_string(),
        ),
        (group, None) => (
            Some(group.unwrap_or(implied_group).to_string()),
            implied_kind.to_string(),
        ),
    };
    OwnerRef::Named {
        group,
        kind,
        name: name.to_string(),
    }
}

/// The name of the resource in Azure: `spec.azureName`, else `metadata.name`.
pub fn azure_name(obj: &Value) -> &str {
    text_at(obj, "/spec/azureName")
        .or_else(|| text_at(obj, "/metadata/name"))
        .unwrap_or_default()
}

/// How an ARM id of a kind is formed under its parent.
enum Segment {
    /// `/subscriptions/{sub}/resourceGroups/{name}`.
    ResourceGroup,
    /// `{parent}/providers/{type}/{name}` (resource-group scoped or extension resources).
    Provider(String),
    /// `{parent}/{segment}/{name}` (child resources such as subnets and node pools).
    Child(&'static str),
}

fn segment(group: &str, kind: &str) -> Segment {
    let provider = |t: &str| Segment::Provider(t.to_string());
    match kind {
        RESOURCE_GROUP => Segment::ResourceGroup,
        VIRTUAL_NETWORK => provider("Microsoft.Network/virtualNetworks"),
        "NetworkSecurityGroup" => provider("Microsoft.Network/networkSecurityGroups"),
        SUBNET => Segment::Child("subnets"),
        "Vault" => provider("Microsoft.KeyVault/vaults"),
        "UserAssignedIdentity" => provider("Microsoft.ManagedIdentity/userAssignedIdentities"),
        "RoleAssignment" => provider("Microsoft.Authorization/roleAssignments"),
        HCP_CLUSTER => provider("Microsoft.RedHatOpenShift/hcpOpenShiftClusters"),
        NODE_POOL => Segment::Child("nodePools"),
        EXTERNAL_AUTH => Segment::Child("externalAuths"),
        _ => {
            // An ASO kind the simulator has no table entry for: `Microsoft.<Group>/<kinds>`.
            let service = group.split('.').next().unwrap_or(group);
            let mut chars = service.chars();
            let service = chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect::<String>())
                .unwrap_or_default();
            Segment::Provider(format!("Microsoft.{service}/{}s", lower_first(kind)))
        }
    }
}

/// The ARM resource type (`Microsoft.X/y[/z]`) of a kind, as ASO reports it in `status.type`.
pub fn arm_type(group: &str, kind: &str) -> String {
    match segment(group, kind) {
        Segment::ResourceGroup => "Microsoft.Resources/resourceGroups".to_string(),
        Segment::Provider(t) => t,
        Segment::Child(child) => {
            let (owner_group, owner_kind) = implied_owner_kind(kind);
            format!("{}/{child}", arm_type(owner_group, owner_kind))
        }
    }
}

/// The ARM id of `obj` under the resource `parent_id` (ignored for resource groups). Without a
/// parent id the resource is placed directly in the simulated subscription.
pub fn arm_id(obj: &Value, parent_id: Option<&str>) -> String {
    let (group, _) =
        crate::object::split_api_version(text_at(obj, "/apiVersion").unwrap_or_default());
    let kind = text_at(obj, "/kind").unwrap_or_default();
    let name = azure_name(obj);
    let subscription = format!("/subscriptions/{SUBSCRIPTION_ID}");
    let parent = parent_id.unwrap_or(&subscription).trim_end_matches('/');
    match segment(group, kind) {
        Segment::ResourceGroup => format!("{subscription}/resourceGroups/{name}"),
        Segment::Provider(t) => format!("{parent}/providers/{t}/{name}"),
        Segment::Child(child) => format!("{parent}/{child}/{name}"),
    }
}

/// The ARM id `obj` will have in Azure, following `spec.owner` names through `unit`
/// (the objects of the same unit). `None` when the owner chain cannot be resolved.
pub fn arm_id_in(obj: &Value, unit: &[&Value]) -> Option<String> {
    arm_id_depth(obj, unit, 0)
}

fn arm_id_depth(obj: &Value, unit: &[&Value], depth: usize) -> Option<String> {
    if depth > 16 {
        return None;
    }
    match owner_of(obj) {
        OwnerRef::NotNeeded => Some(arm_id(obj, None)),
        OwnerRef::ArmId(parent) => Some(arm_id(obj, Some(&parent))),
        OwnerRef::NotSet { .. } => None,
        OwnerRef::Named { kind, name, .. } => {
            let ns = obj.pointer("/metadata/namespace");
            let owner = unit.iter().find(|o| {
                o.get("kind").and_then(Value::as_str) == Some(kind.as_str())
                    && o.pointer("/metadata/name").and_then(Value::as_str) == Some(name.as_str())
                    && o.pointer("/metadata/namespace") == ns
            })?;
            let parent = arm_id_depth(owner, unit, depth + 1)?;
            Some(arm_id(obj, Some(&parent)))
        }
    }
}

/// The ARM api-version of an ASO object's `apiVersion` (`group/v1api20200601` or just the version):
/// ASO names its versions after the ARM api-version they speak, `v1api` (or the older `v1beta`)
/// then the date, then `preview` when it is one: `v1api20240610preview` is `2024-06-10-preview`.
/// `None` for a version that names no ARM api-version (a storage version, `v1`).
pub fn arm_api_version(api_version: &str) -> Option<String> {
    let version = api_version.rsplit('/').next().unwrap_or(api_version);
    let rest = version
        .strip_prefix("v1api")
        .or_else(|| version.strip_prefix("v1beta"))?;
    let (date, preview) = match rest.strip_suffix("preview") {
        Some(d) => (d, true),
        None => (rest, false),
    };
    if date.len() != 8 || !date.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let dated = format!("{}-{}-{}", &date[..4], &date[4..6], &date[6..]);
    Some(if preview {
        format!("{dated}-preview")
    } else {
        dated
    })
}

/// `arm_id` with the simulated subscription ([`SUBSCRIPTION_ID`], what an owner chain without one
/// ends in) replaced by `subscription`; an id in another subscription is returned as it is.
pub fn in_subscription(arm_id: &str, subscription: &str) -> String {
    let prefix = format!("/subscriptions/{SUBSCRIPTION_ID}");
    match arm_id.get(..prefix.len()) {
        Some(head) if head.eq_ignore_ascii_case(&prefix) => {
            format!("/subscriptions/{subscription}{}", &arm_id[prefix.len()..])
        }
        _ => arm_id.to_string(),
    }
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_lowercase().chain(chars).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(api_version: &str, kind: &str, spec: Value) -> Value {
        json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "n1", "namespace": "ns"}, "spec": spec})
    }

    #[test]
    fn owner_kind_is_implied_by_the_child_kind_and_explicit_kind_wins() {
        let cases = [
            (
                SUBNET,
                json!({"owner": {"name": "vnet"}}),
                Some(("network.azure.com", VIRTUAL_NETWORK, "vnet")),
            ),
            (
                NODE_POOL,
                json!({"owner": {"name": "c"}}),
                Some(("redhatopenshift.azure.com", HCP_CLUSTER, "c")),
            ),
            (
                EXTERNAL_AUTH,
                json!({"owner": {"name": "c"}}),
                Some(("redhatopenshift.azure.com", HCP_CLUSTER, "c")),
            ),
            (
                VIRTUAL_NETWORK,
                json!({"owner": {"name": "rg"}}),
                Some(("resources.azure.com", RESOURCE_GROUP, "rg")),
            ),
            (
                "RoleAssignment",
                json!({"owner": {"name": "id", "kind": "UserAssignedIdentity"}}),
                Some(("managedidentity.azure.com", "UserAssignedIdentity", "id")),
            ),
            (
                "RoleAssignment",
                json!({"owner": {"name": "x", "kind": "Thing", "group": "things.azure.com"}}),
                Some(("things.azure.com", "Thing", "x")),
            ),
        ];
        for (kind, spec, want) in cases {
            let got = owner_of(&obj("g/v", kind, spec));
            let (g, k, n) = want.unwrap();
            assert_eq!(
                got,
                OwnerRef::Named {
                    group: Some(g.into()),
                    kind: k.into(),
                    name: n.into()
                },
                "{kind}"
            );
        }
        assert_eq!(
            owner_of(&obj("g/v", RESOURCE_GROUP, json!({}))),
            OwnerRef::NotNeeded
        );
        assert_eq!(
            owner_of(&obj("g/v", SUBNET, json!({}))),
            OwnerRef::NotSet {
                implied_kind: VIRTUAL_NETWORK
            }
        );
        assert_eq!(
            owner_of(&obj(
                "g/v",
                "Vault",
                json!({"owner": {"armId": "/subscriptions/x/resourceGroups/y"}})
            )),
            OwnerRef::ArmId("/subscriptions/x/resourceGroups/y".into())
        );
        assert_eq!(
            owner_of(&obj(
                "g/v",
                "Vault",
                json!({"owner": {"name": "o", "kind": "Unheard"}})
            )),
            OwnerRef::Named {
                group: None,
                kind: "Unheard".into(),
                name: "o".into()
            }
        );
    }

    #[test]
    fn arm_ids_nest_under_their_parent_in_the_zero_subscription() {
        let rg = obj(
            "resources.azure.com/v1api20200601",
            RESOURCE_GROUP,
            json!({"azureName": "my-rg"}),
        );
        let rg_id = arm_id(&rg, None);
        assert_eq!(
            rg_id,
            "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/my-rg"
        );
        let vnet = obj(
            "network.azure.com/v1api20201101",
            VIRTUAL_NETWORK,
            json!({}),
        );
        let vnet_id = arm_id(&vnet, Some(&rg_id));
        assert_eq!(
            vnet_id,
            format!("{rg_id}/providers/Microsoft.Network/virtualNetworks/n1")
        );
        let subnet = obj("network.azure.com/v1api20201101", SUBNET, json!({}));
        assert_eq!(
            arm_id(&subnet, Some(&vnet_id)),
            format!("{vnet_id}/subnets/n1")
        );
        let pool = obj(
            "redhatopenshift.azure.com/v1api20240610preview",
            NODE_POOL,
            json!({}),
        );
        assert_eq!(arm_id(&pool, Some("/c")), "/c/nodePools/n1");
        let other = obj("cache.azure.com/v1", "RedisEnterprise", json!({}));
        assert_eq!(
            arm_id(&other, Some("/rg")),
            "/rg/providers/Microsoft.Cache/redisEnterprises/n1"
        );
        assert_eq!(
            arm_type("redhatopenshift.azure.com", NODE_POOL),
            "Microsoft.RedHatOpenShift/hcpOpenShiftClusters/nodePools"
        );
    }

    #[test]
    fn arm_ids_follow_owner_names_through_the_unit() {
        let rg = json!({"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup",
                        "metadata": {"name": "rg", "namespace": "dev"}, "spec": {"azureName": "dev-rg"}});
        let vnet = json!({"apiVersion": "network.azure.com/v1api20201101", "kind": "VirtualNetwork",
                          "metadata": {"name": "vnet", "namespace": "dev"}, "spec": {"owner": {"name": "rg"}}});
        let subnet = json!({"apiVersion": "network.azure.com/v1api20201101", "kind": "VirtualNetworksSubnet",
                            "metadata": {"name": "sn", "namespace": "dev"}, "spec": {"owner": {"name": "vnet"}}});
        let unit = [&rg, &vnet, &subnet];
        assert_eq!(
            arm_id_in(&subnet, &unit).unwrap(),
            format!(
                "/subscriptions/{}/resourceGroups/dev-rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/sn",
                SUBSCRIPTION_ID
            )
        );
        let orphan = json!({"apiVersion": "network.azure.com/v1api20201101", "kind": "VirtualNetwork",
                            "metadata": {"name": "v2", "namespace": "dev"}, "spec": {"owner": {"name": "nope"}}});
        assert_eq!(arm_id_in(&orphan, &unit), None);
    }
    #[test]
    fn api_versions_follow_the_aso_version_name() {
        let cases = [
            ("resources.azure.com/v1api20200601", Some("2020-06-01")),
            ("v1api20200601", Some("2020-06-01")),
            (
                "redhatopenshift.azure.com/v1api20240610preview",
                Some("2024-06-10-preview"),
            ),
            ("network.azure.com/v1beta20201101", Some("2020-11-01")),
            ("resources.azure.com/v1api20200601storage", None),
            ("resources.azure.com/v1", None),
            ("v1api2020", None),
            ("", None),
        ];
        for (input, want) in cases {
            assert_eq!(arm_api_version(input).as_deref(), want, "{input}");
        }
    }

    #[test]
    fn only_the_simulated_subscription_is_replaced() {
        let zero = format!("/subscriptions/{SUBSCRIPTION_ID}/resourceGroups/rg");
        assert_eq!(
            in_subscription(&zero, "8f1c"),
            "/subscriptions/8f1c/resourceGroups/rg"
        );
        let other = "/subscriptions/abc/resourceGroups/rg";
        assert_eq!(in_subscription(other, "8f1c"), other);
        assert_eq!(in_subscription("/x", "8f1c"), "/x");
    }
}

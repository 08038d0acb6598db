//! The shared applier's decisions: which ASO resources an ARO object embeds, as they are to be
//! applied (namespace forced to the owner's, mutators applied), and how ownership is recorded.

use super::{CONTROL_PLANE_GROUP, EXTERNAL_AUTH, HCP_CLUSTER, INFRA_GROUP, NODE_POOL, str_at};
use crate::object::{ObjectKey, split_api_version};
use serde_json::{Value, json};

/// Annotation on the owner listing the kinds it ever applied, recorded before the first one.
pub const OWNED_KINDS_ANNOTATION: &str = "sigs.k8s.io/cluster-api-provider-azure-owned-aso-kinds";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbeddedError {
    #[error("{owner}: spec.resources[{index}]: {message}")]
    Invalid {
        owner: Box<ObjectKey>,
        index: usize,
        message: String,
    },
    #[error(
        "{owner}: incompatible value: value at spec.resources[{index}].{path} set by user to {user} but must be {want}"
    )]
    Incompatible {
        owner: Box<ObjectKey>,
        index: usize,
        path: String,
        user: String,
        want: String,
    },
}

/// `Kind.version.group`, the form the owned-kinds annotation records.
pub fn owned_kinds_entry(obj: &Value) -> String {
    let (group, version) = split_api_version(str_at(obj, "/apiVersion").unwrap_or(""));
    format!("{}.{version}.{group}", str_at(obj, "/kind").unwrap_or(""))
}

/// A controller ownerReference to `owner` (which must be live: it needs the uid).
pub fn controller_ref(owner: &Value) -> Option<Value> {
    Some(json!({
        "apiVersion": str_at(owner, "/apiVersion")?,
        "kind": str_at(owner, "/kind")?,
        "name": str_at(owner, "/metadata/name")?,
        "uid": str_at(owner, "/metadata/uid")?,
        "controller": true,
        "blockOwnerDeletion": true,
    }))
}

/// Makes `owner` the controller of `desired` (its only ownerReference), when `owner` has a uid.
pub fn set_controller(desired: &mut Value, owner: &Value) {
    if let Some(r) = controller_ref(owner) {
        desired["metadata"]["ownerReferences"] = json!([r]);
    }
}

/// The CAPI cluster an ARO object belongs to: its `cluster.x-k8s.io/cluster-name` label, else its name.
pub fn cluster_name(owner: &Value) -> &str {
    str_at(owner, "/metadata/labels/cluster.x-k8s.io~1cluster-name")
        .or_else(|| str_at(owner, "/metadata/name"))
        .unwrap_or("")
}

/// Annotation that pauses a CAPI object (CAPI's own key).
pub const PAUSED_ANNOTATION: &str = "cluster.x-k8s.io/paused";

/// Whether `owner` is paused: it carries [`PAUSED_ANNOTATION`], or `cluster` (its CAPI Cluster,
/// when known) has `spec.paused: true` or the annotation.
pub fn is_paused(owner: &Value, cluster: Option<&Value>) -> bool {
    let annotated = |o: &Value| {
        o.pointer("/metadata/annotations")
            .and_then(|a| a.get(PAUSED_ANNOTATION))
            .is_some()
    };
    annotated(owner)
        || cluster.is_some_and(|c| {
            annotated(c) || c.pointer("/spec/paused").and_then(Value::as_bool) == Some(true)
        })
}

/// The resources `owner` embeds in `spec.resources`, ready to apply. `hcp_name` is the name of the
/// cluster's HcpOpenShiftCluster, needed to own node pools (known from the AROControlPlane).
/// `paused`: the shared applier's pause, `reconcile-policy: skip` on every embedded resource (a
/// different policy the user set is an incompatible value).
pub fn embedded_resources(
    owner: &Value,
    hcp_name: Option<&str>,
    paused: bool,
) -> Result<Vec<Value>, EmbeddedError> {
    let owner_key = ObjectKey::from_object(owner).map_err(|e| EmbeddedError::Invalid {
        owner: Box::new(ObjectKey {
            group: String::new(),
            version: String::new(),
            kind: "?".into(),
            namespace: None,
            name: "?".into(),
        }),
        index: 0,
        message: e.to_string(),
    })?;
    let Some(list) = owner.pointer("/spec/resources").and_then(Value::as_array) else {
        return Ok(vec![]);
    };
    let namespace = owner_key
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    let own_hcp = list
        .iter()
        .find(|r| str_at(r, "/kind") == Some(HCP_CLUSTER))
        .and_then(|r| str_at(r, "/metadata/name"));
    let mut out = Vec::with_capacity(list.len());
    for (index, entry) in list.iter().enumerate() {
        let invalid = |message: String| EmbeddedError::Invalid {
            owner: Box::new(owner_key.clone()),
            index,
            message,
        };
        let mut obj = entry.clone();
        for field in ["apiVersion", "kind"] {
            if str_at(&obj, &format!("/{field}")).is_none_or(str::is_empty) {
                return Err(invalid(format!("{field} is required")));
            }
        }
        let name = str_at(&obj, "/metadata/name")
            .filter(|n| !n.is_empty())
            .ok_or_else(|| invalid("metadata.name is required".into()))?;
        let lower = name.to_ascii_lowercase();
        if lower.contains("microsoft") || lower.contains("windows") {
            return Err(invalid(format!(
                "metadata.name {name:?} must not contain \"microsoft\" or \"windows\""
            )));
        }
        obj["metadata"]["namespace"] = json!(namespace);
        let kind = str_at(&obj, "/kind").unwrap_or("").to_string();
        match (
            owner_key.group.as_str(),
            owner_key.kind.as_str(),
            kind.as_str(),
        ) {
            (CONTROL_PLANE_GROUP, "AROControlPlane", HCP_CLUSTER) => {
                let has_creds = obj
                    .pointer("/spec/operatorSpec/secrets/adminCredentials")
                    .is_some()
                    || obj
                        .pointer("/spec/operatorSpec/secrets/userCredentials")
                        .is_some();
                if !has_creds {
                    obj["spec"]["operatorSpec"]["secrets"]["adminCredentials"] = json!({"name": format!("{}-kubeconfig", cluster_name(owner)), "key": "value"});
                }
            }
            (CONTROL_PLANE_GROUP, "AROControlPlane", EXTERNAL_AUTH) => {
                if let Some(hcp) = own_hcp.or(hcp_name) {
                    set_owner(&mut obj, hcp, &owner_key, index)?;
                }
            }
            (INFRA_GROUP, "AROMachinePool", NODE_POOL) => {
                if let Some(hcp) = hcp_name {
                    set_owner(&mut obj, hcp, &owner_key, index)?;
                }
            }
            _ => {}
        }
        if paused {
            pause(&mut obj, &owner_key, index)?;
        }
        out.push(obj);
    }
    Ok(out)
}

/// Mutator while paused: `reconcile-policy: skip`; another policy the user set is incompatible.
fn pause(obj: &mut Value, owner: &ObjectKey, index: usize) -> Result<(), EmbeddedError> {
    const POLICY: &str = crate::validate::RECONCILE_POLICY;
    let path = format!("metadata.annotations.{POLICY}");
    match obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(POLICY))
        .and_then(Value::as_str)
    {
        Some(user) if user != "skip" => Err(EmbeddedError::Incompatible {
            owner: Box::new(owner.clone()),
            index,
            path,
            user: format!("{user:?}"),
            want: "\"skip\"".into(),
        }),
        _ => {
            obj["metadata"]["annotations"][POLICY] = json!("skip");
            Ok(())
        }
    }
}

/// Mutator: `spec.owner = {name}`; a different name the user set is an incompatible value.
fn set_owner(
    obj: &mut Value,
    want: &str,
    owner: &ObjectKey,
    index: usize,
) -> Result<(), EmbeddedError> {
    match str_at(obj, "/spec/owner/name") {
        Some(user) if user != want => Err(EmbeddedError::Incompatible {
            owner: Box::new(owner.clone()),
            index,
            path: "spec.owner.name".into(),
            user: format!("{user:?}"),
            want: format!("{want:?}"),
        }),
        _ => {
            obj["spec"]["owner"]["name"] = json!(want);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acp(resources: Value) -> Value {
        json!({"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "AROControlPlane",
            "metadata": {"name": "dev-cp", "namespace": "aro-dev", "labels": {"cluster.x-k8s.io/cluster-name": "dev"}},
            "spec": {"resources": resources}})
    }

    #[test]
    fn control_plane_mutators() {
        let owner = acp(json!([
            {"apiVersion": "redhatopenshift.azure.com/v1api20240610preview", "kind": "HcpOpenShiftCluster", "metadata": {"name": "dev-hcp", "namespace": "elsewhere"}, "spec": {}},
            {"apiVersion": "redhatopenshift.azure.com/v1api20240610preview", "kind": "HcpOpenShiftClustersExternalAuth", "metadata": {"name": "dev-auth"}, "spec": {}}
        ]));
        let out = embedded_resources(&owner, None, false).unwrap();
        assert_eq!(
            out[0]["metadata"]["namespace"], "aro-dev",
            "namespace forced to the owner's"
        );
        assert_eq!(
            out[0]["spec"]["operatorSpec"]["secrets"]["adminCredentials"],
            json!({"name": "dev-kubeconfig", "key": "value"})
        );
        assert_eq!(out[1]["spec"]["owner"]["name"], "dev-hcp");
        assert_eq!(
            owned_kinds_entry(&out[0]),
            "HcpOpenShiftCluster.v1api20240610preview.redhatopenshift.azure.com"
        );
    }

    #[test]
    fn user_credentials_are_left_alone_and_conflicts_are_errors() {
        let owner = acp(json!([
            {"apiVersion": "redhatopenshift.azure.com/v1api20240610preview", "kind": "HcpOpenShiftCluster", "metadata": {"name": "h"},
             "spec": {"operatorSpec": {"secrets": {"userCredentials": {"name": "u", "key": "k"}}}}},
            {"apiVersion": "redhatopenshift.azure.com/v1api20240610preview", "kind": "HcpOpenShiftClustersExternalAuth", "metadata": {"name": "a"}, "spec": {"owner": {"name": "other"}}}
        ]));
        let err = embedded_resources(&owner, None, false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "AROControlPlane/aro-dev/dev-cp: incompatible value: value at spec.resources[1].spec.owner.name set by user to \"other\" but must be \"h\""
        );
    }

    #[test]
    fn invalid_entries_are_named() {
        let owner = acp(
            json!([{"apiVersion": "x/v1", "kind": "Vault", "metadata": {"name": "my-windows-vault"}}]),
        );
        assert!(
            embedded_resources(&owner, None, false)
                .unwrap_err()
                .to_string()
                .contains("spec.resources[0]: metadata.name \"my-windows-vault\"")
        );
        let owner = acp(json!([{"kind": "Vault", "metadata": {"name": "v"}}]));
        assert!(
            embedded_resources(&owner, None, false)
                .unwrap_err()
                .to_string()
                .contains("apiVersion is required")
        );
    }

    #[test]
    fn a_paused_cluster_skips_every_embedded_resource_and_conflicts_are_errors() {
        let owner = acp(json!([
            {"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup", "metadata": {"name": "rg"}},
            {"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup", "metadata": {"name": "rg2",
              "annotations": {"serviceoperator.azure.com/reconcile-policy": "skip"}}}
        ]));
        let out = embedded_resources(&owner, None, true).unwrap();
        for o in &out {
            assert_eq!(
                o["metadata"]["annotations"]["serviceoperator.azure.com/reconcile-policy"],
                "skip"
            );
        }
        let owner = acp(json!([
            {"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup", "metadata": {"name": "rg",
              "annotations": {"serviceoperator.azure.com/reconcile-policy": "manage"}}}
        ]));
        assert_eq!(
            embedded_resources(&owner, None, true)
                .unwrap_err()
                .to_string(),
            "AROControlPlane/aro-dev/dev-cp: incompatible value: value at spec.resources[0].metadata.annotations.serviceoperator.azure.com/reconcile-policy set by user to \"manage\" but must be \"skip\""
        );
        assert!(embedded_resources(&owner, None, false).is_ok());
        // Paused by the annotation on the owner, or by the Cluster.
        let cluster = json!({"spec": {"paused": true}});
        assert!(is_paused(&acp(json!([])), Some(&cluster)));
        assert!(!is_paused(&acp(json!([])), None));
        let mut annotated = acp(json!([]));
        annotated["metadata"]["annotations"] = json!({PAUSED_ANNOTATION: ""});
        assert!(is_paused(&annotated, None));
    }

    #[test]
    fn controller_ref_needs_a_live_owner() {
        assert!(controller_ref(&acp(json!([]))).is_none());
        let mut live = acp(json!([]));
        live["metadata"]["uid"] = json!("u-1");
        assert_eq!(controller_ref(&live).unwrap()["controller"], true);
    }
}

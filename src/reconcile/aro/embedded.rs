//! Which ASO resources an ARO object embeds, as they are to be applied: entries validated
//! (webhook rules), namespace forced to the owner's, mutators applied (credentials, owners, the
//! key version, pause), with "incompatible value" errors when the user set something else; and
//! the terminal errors of the ARO reconcilers.

use super::str_at;

use crate::kinds::{CONTROL_PLANE_GROUP, EXTERNAL_AUTH, HCP_CLUSTER, INFRA_GROUP, NODE_POOL};
use crate::object::ObjectKey;
use serde_json::{Value, json};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AroError {
    #[error(
        "{owner}: AROCluster cannot be used without AROControlPlane (Cluster {cluster}'s controlPlaneRef is a {found})"
    )]
    WithoutControlPlane {
        owner: Box<ObjectKey>,
        cluster: String,
        found: String,
    },
    #[error("{owner}: spec.resources must hold exactly one {kind}; it holds {count}")]
    NotExactlyOne {
        owner: Box<ObjectKey>,
        kind: &'static str,
        count: usize,
    },
    #[error("{owner}: spec.resources must not be empty")]
    NoResources { owner: Box<ObjectKey> },
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
) -> Result<Vec<Value>, AroError> {
    let owner_key = ObjectKey::from_object(owner).map_err(|e| AroError::Invalid {
        owner: Box::new(ObjectKey {
            group: Default::default(),
            version: Default::default(),
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
        let invalid = |message: String| AroError::Invalid {
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
fn pause(obj: &mut Value, owner: &ObjectKey, index: usize) -> Result<(), AroError> {
    let pointer = format!(
        "/metadata/annotations/{}",
        crate::validate::RECONCILE_POLICY.replace('/', "~1")
    );
    force(obj, &pointer, "skip", owner, index)
}

/// Mutator: `spec.owner = {name}`; a different name the user set is an incompatible value.
fn set_owner(obj: &mut Value, want: &str, owner: &ObjectKey, index: usize) -> Result<(), AroError> {
    force(obj, "/spec/owner/name", want, owner, index)
}

/// Mutator: the etcd key version the agent found, at `kms.activeKey.version` of the
/// HcpOpenShiftCluster `spec.resources[index]`; a different version the user wrote is incompatible.
pub fn set_key_version(
    obj: &mut Value,
    version: &str,
    owner: &ObjectKey,
    index: usize,
) -> Result<(), AroError> {
    let pointer = format!("{}/activeKey/version", super::keys::KMS_POINTER);
    force(obj, &pointer, version, owner, index)
}

/// The one mutator rule: the string at `pointer` becomes `want`; a different value the user set
/// there is an error naming `spec.resources[index].<path>`.
fn force(
    obj: &mut Value,
    pointer: &str,
    want: &str,
    owner: &ObjectKey,
    index: usize,
) -> Result<(), AroError> {
    let segments: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    let incompatible = |user: String| AroError::Incompatible {
        owner: Box::new(owner.clone()),
        index,
        path: segments.join("."),
        user,
        want: format!("{want:?}"),
    };
    match obj.pointer(pointer) {
        Some(Value::String(user)) if user == want => return Ok(()),
        Some(Value::Null) | None => {}
        Some(user) => return Err(incompatible(user.to_string())),
    }
    let mut at = obj;
    for s in &segments {
        if !(at.is_object() || at.is_null()) {
            return Err(incompatible(at.to_string()));
        }
        at = &mut at[s.as_str()];
    }
    *at = json!(want);
    Ok(())
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
}

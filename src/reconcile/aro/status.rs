//! The status the reconcilers write on AROCluster, AROControlPlane and AROMachinePool, computed
//! from the live objects of the cluster. Pure: `now` is given, and conditions keep their
//! transition time while their status holds, so unchanged state yields an unchanged status.

use super::conditions::{Condition, mirror_aso_ready, set_condition};
use super::embedded::cluster_name;
use super::{EXTERNAL_AUTH, HCP_CLUSTER, NODE_POOL, str_at};
use crate::object::split_api_version;
use crate::reconcile::readiness::{Readiness, aso_readiness};
use serde_json::{Value, json};

fn same_ns<'a>(a: &Value, b: &'a Value) -> Option<&'a Value> {
    (str_at(a, "/metadata/namespace") == str_at(b, "/metadata/namespace")).then_some(b)
}

fn find<'a>(live: &'a [Value], near: &Value, kind: &str, name: &str) -> Option<&'a Value> {
    live.iter()
        .filter_map(|o| same_ns(near, o))
        .find(|o| str_at(o, "/kind") == Some(kind) && str_at(o, "/metadata/name") == Some(name))
}

/// The live counterparts of `owner`'s embedded resources: `(entry, live object if any)`.
fn embedded_live<'a>(owner: &'a Value, live: &'a [Value]) -> Vec<(&'a Value, Option<&'a Value>)> {
    owner
        .pointer("/spec/resources")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|e| {
                    let found = find(
                        live,
                        owner,
                        str_at(e, "/kind").unwrap_or(""),
                        str_at(e, "/metadata/name").unwrap_or(""),
                    );
                    (e, found)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn resource_entry(entry: &Value, found: Option<&Value>) -> (Value, bool) {
    let (group, version) = split_api_version(str_at(entry, "/apiVersion").unwrap_or(""));
    let (ready, message) = match found.map(aso_readiness) {
        None => (false, "not created yet".to_string()),
        Some(Readiness::Ready) => (true, String::new()),
        Some(r) => (
            false,
            r.message()
                .filter(|m| !m.is_empty())
                .map(str::to_string)
                .unwrap_or_else(|| r.to_string()),
        ),
    };
    let mut v = json!({
        "resource": {"group": group, "version": version, "kind": str_at(entry, "/kind"), "name": str_at(entry, "/metadata/name")},
        "ready": ready,
    });
    if !message.is_empty() {
        v["message"] = json!(message);
    }
    (v, ready)
}

/// The CAPI Cluster of an ARO object: named by its cluster-name label, else pointing at it.
fn capi_cluster<'a>(obj: &Value, live: &'a [Value]) -> Option<&'a Value> {
    let name = cluster_name(obj);
    live.iter()
        .filter_map(|o| same_ns(obj, o))
        .filter(|o| {
            str_at(o, "/kind") == Some("Cluster")
                && str_at(o, "/apiVersion").is_some_and(|a| a.starts_with("cluster.x-k8s.io/"))
        })
        .find(|c| {
            str_at(c, "/metadata/name") == Some(name)
                || [
                    str_at(c, "/spec/infrastructureRef/name"),
                    str_at(c, "/spec/controlPlaneRef/name"),
                ]
                .contains(&str_at(obj, "/metadata/name"))
        })
}

/// The AROControlPlane of the cluster `obj` belongs to.
fn control_plane<'a>(obj: &Value, live: &'a [Value]) -> Option<&'a Value> {
    if let Some(name) =
        capi_cluster(obj, live).and_then(|c| str_at(c, "/spec/controlPlaneRef/name"))
    {
        return find(live, obj, "AROControlPlane", name);
    }
    let cluster = cluster_name(obj);
    live.iter()
        .filter_map(|o| same_ns(obj, o))
        .find(|o| str_at(o, "/kind") == Some("AROControlPlane") && cluster_name(o) == cluster)
}

fn hcp_name(acp: &Value) -> Option<&str> {
    acp.pointer("/spec/resources")?
        .as_array()?
        .iter()
        .find(|r| str_at(r, "/kind") == Some(HCP_CLUSTER))
        .and_then(|r| str_at(r, "/metadata/name"))
}

/// `https://api.example:6443` → `("api.example", 6443)`; no port means 443 (a decision of this
/// project: CAPZ treats a port-less URL as an error).
pub fn parse_endpoint(url: &str) -> Option<(String, u16)> {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let authority = rest.split(['/', '?', '#']).next()?;
    if authority.is_empty() {
        return None;
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() => Some((host.to_string(), port.parse().ok()?)),
        Some(_) => None,
        None => Some((authority.to_string(), 443)),
    }
}

fn finish(mut status: serde_json::Map<String, Value>, conditions: Vec<Value>) -> Value {
    let mut conditions = conditions;
    conditions.sort_by(|a, b| a["type"].as_str().cmp(&b["type"].as_str()));
    status.insert("conditions".into(), Value::Array(conditions));
    Value::Object(status)
}

/// AROCluster: `ResourcesReady`, `NetworkInfrastructureReady`, `status.resources`, `ready`,
/// `initialization.provisioned`, and the endpoint to mirror into `spec.controlPlaneEndpoint`.
pub fn aro_cluster_status(
    arocluster: &Value,
    live: &[Value],
    now: &str,
) -> (Value, Option<(String, u16)>) {
    let previous = arocluster.get("status");
    let entries = embedded_live(arocluster, live);
    let total = entries.len();
    let (resources, ready_flags): (Vec<Value>, Vec<bool>) =
        entries.iter().map(|(e, f)| resource_entry(e, *f)).unzip();
    let ready_count = ready_flags.iter().filter(|r| **r).count();
    let mut conditions = Vec::new();
    let resources_ready = ready_count == total;
    let cond = if resources_ready {
        Condition::new(
            "ResourcesReady",
            "True",
            "InfrastructureReady",
            format!("All {total} infrastructure resources are ready"),
        )
    } else {
        Condition::new(
            "ResourcesReady",
            "False",
            "ProvisioningInfrastructure",
            format!("Waiting for infrastructure resources: {ready_count}/{total} ready"),
        )
    };
    set_condition(&mut conditions, previous, &cond, now);
    let acp = control_plane(arocluster, live);
    let endpoint = acp
        .and_then(|cp| str_at(cp, "/status/apiURL"))
        .and_then(parse_endpoint);
    let cond = if endpoint.is_some() {
        Condition::new("NetworkInfrastructureReady", "True", "Succeeded", "")
    } else {
        Condition::new(
            "NetworkInfrastructureReady",
            "False",
            "ExternallyManagedControlPlane",
            "Waiting for the Control Plane to get ready",
        )
    };
    set_condition(&mut conditions, previous, &cond, now);
    let cp_ready = acp
        .and_then(|cp| cp.pointer("/status/ready"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let ready = cp_ready && endpoint.is_some();
    let mut status = serde_json::Map::new();
    status.insert("ready".into(), json!(ready));
    status.insert(
        "initialization".into(),
        json!({"provisioned": resources_ready && ready}),
    );
    status.insert("resources".into(), json!(resources));
    (finish(status, conditions), endpoint)
}

/// Per embedded kind, the condition type the AROControlPlane reports for it.
fn kind_condition(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "ResourceGroup" => "ResourceGroupReady",
        "VirtualNetwork" => "VNetReady",
        "NetworkSecurityGroup" => "SecurityGroupsReady",
        "VirtualNetworksSubnet" => "SubnetsReady",
        "Vault" => "VaultReady",
        "UserAssignedIdentity" => "UserAssignedIdentitiesReady",
        "RoleAssignment" => "RoleAssignmentReady",
        _ => return None,
    })
}

/// The manual-mode encryption-key condition, when the HcpOpenShiftCluster configures KMS.
fn encryption_key_condition(hcp: &Value) -> Option<Condition> {
    let kms = hcp.pointer("/spec/properties/etcd/dataEncryption/customerManaged/kms")?;
    let t = "EncryptionKeyReady";
    Some(match kms.get("activeKey") {
        None => Condition::new(
            t,
            "False",
            "ActiveKeyMissing",
            "spec.properties.etcd.dataEncryption.customerManaged.kms.activeKey is not set",
        ),
        Some(key)
            if key
                .get("version")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty) =>
        {
            Condition::new(
                t,
                "False",
                "KeyVersionMissing",
                "the KMS active key has no version; give the key version to use",
            )
        }
        Some(key) => Condition::new(
            t,
            "Unknown",
            "ManualKeyManagement",
            format!(
                "Encryption key '{}' version '{}' is managed by the user",
                key.get("name").and_then(Value::as_str).unwrap_or(""),
                key.get("version").and_then(Value::as_str).unwrap_or("")
            ),
        ),
    })
}

/// AROControlPlane: `HcpClusterReady`, per-kind conditions, `EncryptionKeyReady`,
/// `ExternalAuthReady`, the URLs and version mirrored from the HcpOpenShiftCluster, and `ready`.
pub fn aro_control_plane_status(acp: &Value, live: &[Value], now: &str) -> Value {
    let previous = acp.get("status");
    let entries = embedded_live(acp, live);
    let mut conditions = Vec::new();
    let mut status = serde_json::Map::new();
    let hcp_entry = entries
        .iter()
        .find(|(e, _)| str_at(e, "/kind") == Some(HCP_CLUSTER));
    let hcp_live = hcp_entry.and_then(|(_, f)| *f);
    let hcp_ready = match hcp_live {
        None => {
            set_condition(
                &mut conditions,
                previous,
                &Condition::new(
                    "HcpClusterReady",
                    "False",
                    "HcpOpenShiftClusterNotFound",
                    "HcpOpenShiftCluster not found",
                ),
                now,
            );
            false
        }
        Some(hcp) => {
            for (field, pointer) in [
                ("id", "/status/id"),
                ("apiURL", "/status/properties/api/url"),
                ("consoleURL", "/status/properties/console/url"),
                ("version", "/status/properties/version/id"),
            ] {
                if let Some(v) = str_at(hcp, pointer) {
                    status.insert(field.into(), json!(v));
                }
            }
            let cond = mirror_aso_ready(
                "HcpClusterReady",
                hcp,
                "Provisioning",
                "HcpOpenShiftCluster is not yet ready",
            );
            set_condition(&mut conditions, previous, &cond, now);
            cond.is_true()
        }
    };
    if let Some(cond) = hcp_entry.and_then(|(e, _)| encryption_key_condition(e)) {
        set_condition(&mut conditions, previous, &cond, now);
    }
    let mut kinds: Vec<&str> = entries
        .iter()
        .filter_map(|(e, _)| str_at(e, "/kind"))
        .filter(|k| kind_condition(k).is_some())
        .collect();
    kinds.sort();
    kinds.dedup();
    for kind in kinds {
        let waiting: Vec<&str> = entries
            .iter()
            .filter(|(e, f)| {
                str_at(e, "/kind") == Some(kind) && !f.is_some_and(|o| aso_readiness(o).is_ready())
            })
            .filter_map(|(e, _)| str_at(e, "/metadata/name"))
            .collect();
        let t = kind_condition(kind).expect("filtered above");
        let cond = if waiting.is_empty() {
            Condition::new(t, "True", "Succeeded", "")
        } else {
            Condition::new(
                t,
                "False",
                "Creating",
                format!("Waiting for {kind} to be ready: [{}]", waiting.join(", ")),
            )
        };
        set_condition(&mut conditions, previous, &cond, now);
    }
    if let Some((_, auth)) = entries
        .iter()
        .find(|(e, _)| str_at(e, "/kind") == Some(EXTERNAL_AUTH))
    {
        let cond = match auth {
            Some(a) => mirror_aso_ready(
                "ExternalAuthReady",
                a,
                "Provisioning",
                "ExternalAuth is not yet ready",
            ),
            None if !node_pool_ready(acp, live) => Condition::new(
                "ExternalAuthReady",
                "False",
                "WaitingForNodePool",
                "ExternalAuth creation deferred until at least one node pool is ready",
            ),
            None => Condition::new(
                "ExternalAuthReady",
                "False",
                "Provisioning",
                "ExternalAuth is not yet created",
            ),
        };
        set_condition(&mut conditions, previous, &cond, now);
    }
    let secret = hcp_entry
        .and_then(|(e, _)| str_at(e, "/spec/operatorSpec/secrets/adminCredentials/name"))
        .map(str::to_string)
        .unwrap_or_else(|| format!("{}-kubeconfig", cluster_name(acp)));
    let kubeconfig = find(live, acp, "Secret", &secret).is_some();
    let ready = hcp_ready && kubeconfig;
    status.insert("ready".into(), json!(ready));
    status.insert(
        "initialization".into(),
        json!({"controlPlaneInitialized": ready}),
    );
    finish(status, conditions)
}

/// Whether a node pool of this control plane's cluster (owned by its HcpOpenShiftCluster) is Ready.
fn node_pool_ready(acp: &Value, live: &[Value]) -> bool {
    let Some(hcp) = hcp_name(acp) else {
        return false;
    };
    live.iter()
        .filter_map(|o| same_ns(acp, o))
        .filter(|o| {
            str_at(o, "/kind") == Some(NODE_POOL) && str_at(o, "/spec/owner/name") == Some(hcp)
        })
        .any(|np| aso_readiness(np).is_ready())
}

/// AROMachinePool: `NodePoolReady`, `AROMachinePoolReady`, `AgentPoolsReady`, `replicas`, `ready`.
pub fn aro_machine_pool_status(amp: &Value, live: &[Value], now: &str) -> Value {
    let previous = amp.get("status");
    let mut conditions = Vec::new();
    let mut status = serde_json::Map::new();
    let pool = embedded_live(amp, live)
        .into_iter()
        .find(|(e, _)| str_at(e, "/kind") == Some(NODE_POOL));
    let ready = match pool.and_then(|(_, f)| f) {
        None => {
            for t in ["NodePoolReady", "AROMachinePoolReady"] {
                set_condition(
                    &mut conditions,
                    previous,
                    &Condition::new(
                        t,
                        "False",
                        "NodePoolNotFound",
                        "HcpOpenShiftClustersNodePool not found",
                    ),
                    now,
                );
            }
            set_condition(
                &mut conditions,
                previous,
                &Condition::new("AgentPoolsReady", "False", "Failed", "node pool not found"),
                now,
            );
            false
        }
        Some(np) => {
            let state = str_at(np, "/status/properties/provisioningState").unwrap_or("");
            if let Some(state) = Some(state).filter(|s| !s.is_empty()) {
                status.insert("provisioningState".into(), json!(state));
            }
            if let Some(r) = np
                .pointer("/status/properties/replicas")
                .and_then(Value::as_i64)
            {
                status.insert("replicas".into(), json!(r));
            }
            for t in ["NodePoolReady", "AROMachinePoolReady"] {
                let cond = mirror_aso_ready(
                    t,
                    np,
                    "Provisioning",
                    "HcpOpenShiftClustersNodePool is not yet ready",
                );
                set_condition(&mut conditions, previous, &cond, now);
            }
            let readiness = aso_readiness(np);
            let agent = match &readiness {
                Readiness::Failed { message, .. } => {
                    Condition::new("AgentPoolsReady", "False", "Failed", message.clone())
                }
                _ if readiness.is_ready() => {
                    Condition::new("AgentPoolsReady", "True", "Succeeded", "")
                }
                _ => Condition::new(
                    "AgentPoolsReady",
                    "False",
                    "Provisioning",
                    "node pool is not yet ready",
                ),
            };
            set_condition(&mut conditions, previous, &agent, now);
            readiness.is_ready() && matches!(state, "Succeeded" | "Updating")
        }
    };
    status.insert("ready".into(), json!(ready));
    status.insert("initialization".into(), json!({"provisioned": ready}));
    finish(status, conditions)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_true(status: &Value, type_: &str) -> bool {
        status
            .get("conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c.get("type").and_then(Value::as_str) == Some(type_)
                        && c.get("status").and_then(Value::as_str) == Some("True")
                })
            })
    }

    fn aso(kind: &str, name: &str, ready: bool, extra: Value) -> Value {
        let mut o = json!({"apiVersion": "x.azure.com/v1", "kind": kind, "metadata": {"name": name, "namespace": "ns", "generation": 1},
            "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }, "reason": if ready { "Succeeded" } else { "Reconciling" }, "observedGeneration": 1}]}});
        if let Value::Object(m) = extra {
            for (k, v) in m {
                o[k] = v;
            }
        }
        o
    }

    fn entry(kind: &str, name: &str) -> Value {
        json!({"apiVersion": "x.azure.com/v1", "kind": kind, "metadata": {"name": name}})
    }

    #[test]
    fn endpoints_default_to_443() {
        assert_eq!(
            parse_endpoint("https://api.dev.example:6443"),
            Some(("api.dev.example".into(), 6443))
        );
        assert_eq!(
            parse_endpoint("https://api.dev.example/"),
            Some(("api.dev.example".into(), 443))
        );
        assert_eq!(parse_endpoint("https://:443"), None);
    }

    #[test]
    fn aro_cluster_counts_ready_infrastructure_and_mirrors_the_endpoint() {
        let ac = json!({"kind": "AROCluster", "metadata": {"name": "dev", "namespace": "ns"},
            "spec": {"resources": [entry("ResourceGroup", "rg"), entry("VirtualNetwork", "vnet")]}});
        let live = vec![
            aso("ResourceGroup", "rg", true, json!({})),
            aso("VirtualNetwork", "vnet", false, json!({})),
        ];
        let (s, endpoint) = aro_cluster_status(&ac, &live, "t");
        assert_eq!(endpoint, None);
        let rr = &s["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "ResourcesReady")
            .unwrap();
        assert_eq!(
            (rr["status"].as_str(), rr["message"].as_str()),
            (
                Some("False"),
                Some("Waiting for infrastructure resources: 1/2 ready")
            )
        );
        assert_eq!(s["ready"], false);

        let mut live = vec![
            aso("ResourceGroup", "rg", true, json!({})),
            aso("VirtualNetwork", "vnet", true, json!({})),
        ];
        live.push(json!({"kind": "AROControlPlane", "metadata": {"name": "dev", "namespace": "ns"}, "status": {"ready": true, "apiURL": "https://api.dev:443"}}));
        let (s, endpoint) = aro_cluster_status(&ac, &live, "t");
        assert_eq!(endpoint, Some(("api.dev".into(), 443)));
        assert_eq!(
            (
                s["ready"].as_bool(),
                s["initialization"]["provisioned"].as_bool()
            ),
            (Some(true), Some(true))
        );
        assert!(is_true(&s, "NetworkInfrastructureReady") && is_true(&s, "ResourcesReady"));
    }

    #[test]
    fn control_plane_readiness_needs_the_kubeconfig_secret() {
        let acp = json!({"kind": "AROControlPlane", "metadata": {"name": "dev", "namespace": "ns"},
            "spec": {"resources": [entry("HcpOpenShiftCluster", "hcp"), entry("ResourceGroup", "rg"), entry("HcpOpenShiftClustersExternalAuth", "auth")]}});
        let hcp = aso(
            "HcpOpenShiftCluster",
            "hcp",
            true,
            json!({"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Succeeded", "observedGeneration": 1}],
            "id": "/subscriptions/0/x", "properties": {"api": {"url": "https://api:443"}, "console": {"url": "https://console"}, "version": {"id": "4.20.0"}}}}),
        );
        let mut live = vec![hcp, aso("ResourceGroup", "rg", false, json!({}))];
        let s = aro_control_plane_status(&acp, &live, "t");
        assert!(is_true(&s, "HcpClusterReady"));
        assert_eq!(
            (
                s["ready"].as_bool(),
                s["apiURL"].as_str(),
                s["version"].as_str()
            ),
            (Some(false), Some("https://api:443"), Some("4.20.0"))
        );
        let rg = s["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "ResourceGroupReady")
            .unwrap();
        assert_eq!(
            (rg["reason"].as_str(), rg["message"].as_str()),
            (
                Some("Creating"),
                Some("Waiting for ResourceGroup to be ready: [rg]")
            )
        );
        let auth = s["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "ExternalAuthReady")
            .unwrap();
        assert_eq!(auth["reason"], "WaitingForNodePool");
        live.push(
            json!({"kind": "Secret", "metadata": {"name": "dev-kubeconfig", "namespace": "ns"}}),
        );
        assert_eq!(aro_control_plane_status(&acp, &live, "t")["ready"], true);
        let missing = aro_control_plane_status(&acp, &[], "t");
        let hcp = missing["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "HcpClusterReady")
            .unwrap();
        assert_eq!(hcp["reason"], "HcpOpenShiftClusterNotFound");
    }

    #[test]
    fn machine_pool_ready_needs_a_succeeded_pool() {
        let amp = json!({"kind": "AROMachinePool", "metadata": {"name": "mp", "namespace": "ns"}, "spec": {"resources": [entry("HcpOpenShiftClustersNodePool", "np")]}});
        let np = aso("HcpOpenShiftClustersNodePool", "np", true, json!({}));
        let mut np = np;
        np["status"]["properties"] = json!({"provisioningState": "Succeeded", "replicas": 3});
        let s = aro_machine_pool_status(&amp, &[np], "t");
        assert_eq!(
            (s["ready"].as_bool(), s["replicas"].as_i64()),
            (Some(true), Some(3))
        );
        assert!(is_true(&s, "NodePoolReady") && is_true(&s, "AgentPoolsReady"));
        let s = aro_machine_pool_status(&amp, &[], "t");
        assert_eq!(s["conditions"][0]["reason"], "NodePoolNotFound");
    }
}

//! The AROCluster decision (`aro-reconcilers.md`, "AROCluster"): apply the infrastructure through
//! the shared applier (no gate), `ResourcesReady` and `NetworkInfrastructureReady`, the control
//! plane endpoint mirrored into `spec.controlPlaneEndpoint` (port 443 when the URL has none), and
//! `status.ready` / `status.initialization.provisioned`.

use super::applier::{self, Decision, hold_all, live_owner};
use super::conditions::{Condition, finish_status, set_condition};
use super::embedded::{AroError, embedded_resources, is_paused};
use super::world::{capi_cluster, control_plane, embedded_live};
use super::{owner_key, str_at};
use crate::reconcile::readiness::aso_readiness;
use serde_json::{Value, json};

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

/// `ResourcesReady` of an AROCluster (`arocluster`'s `spec.resources` judged in `live`). An
/// AROCluster without resources has all of its none ready. The AROControlPlane's infrastructure
/// gate reads the same condition.
pub fn resources_ready(arocluster: &Value, live: &[Value]) -> Condition {
    let entries = embedded_live(arocluster, live);
    let total = entries.len();
    let ready = entries
        .iter()
        .filter(|(_, f)| f.is_some_and(|o| aso_readiness(o).is_ready()))
        .count();
    if ready == total {
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
            format!("Waiting for infrastructure resources: {ready}/{total} ready"),
        )
    }
}

/// The AROCluster `desired` (as in git) against the world `live`.
pub fn decide_cluster(desired: &Value, live: &[Value], now: &str) -> Decision {
    let key = owner_key(desired);
    let owner = live_owner(desired, live);
    let cluster = capi_cluster(desired, live);
    let mut error = None;
    if let Some(c) = cluster {
        let found = str_at(c, "/spec/controlPlaneRef/kind").unwrap_or("");
        if !found.is_empty() && found != "AROControlPlane" {
            error = Some(AroError::WithoutControlPlane {
                owner: Box::new(key.clone()),
                cluster: str_at(c, "/metadata/name").unwrap_or("").into(),
                found: found.into(),
            });
        }
    }
    let paused = is_paused(owner.unwrap_or(desired), cluster);
    let resources = match embedded_resources(desired, None, paused) {
        Ok(r) if error.is_none() => r,
        Ok(_) => vec![],
        Err(e) => {
            error = Some(e);
            vec![]
        }
    };
    let held = match owner {
        None => hold_all(
            &resources,
            &key,
            "WaitingForOwner",
            &format!("{key} is not created yet"),
        ),
        Some(_) => vec![],
    };
    let applied = applier::apply(desired, owner.unwrap_or(desired), resources, &held, live);

    let previous = owner.and_then(|o| o.get("status"));
    let mut conditions = Vec::new();
    let rr = resources_ready(desired, live);
    set_condition(&mut conditions, previous, &rr, now);
    let acp = control_plane(desired, live);
    let endpoint = acp
        .and_then(|cp| str_at(cp, "/status/apiURL"))
        .and_then(parse_endpoint);
    let network = if endpoint.is_some() {
        Condition::new("NetworkInfrastructureReady", "True", "Succeeded", "")
    } else {
        Condition::new(
            "NetworkInfrastructureReady",
            "False",
            "ExternallyManagedControlPlane",
            "Waiting for the Control Plane to get ready",
        )
    };
    set_condition(&mut conditions, previous, &network, now);
    let cp_ready = acp
        .and_then(|cp| cp.pointer("/status/ready"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let ready = cp_ready && endpoint.is_some() && error.is_none();
    let mut status = serde_json::Map::new();
    status.insert("ready".into(), json!(ready));
    status.insert(
        "initialization".into(),
        json!({"provisioned": rr.is_true() && ready}),
    );
    status.insert("resources".into(), json!(applied.resources));

    let mut patches = Vec::new();
    if let (Some((host, port)), Some(o)) = (endpoint, owner) {
        let want = json!({"host": host, "port": port});
        if o.pointer("/spec/controlPlaneEndpoint") != Some(&want) {
            patches.push(json!({"apiVersion": o["apiVersion"], "kind": o["kind"],
                "metadata": {"name": key.name, "namespace": key.namespace},
                "spec": {"controlPlaneEndpoint": want}}));
        }
    }
    Decision::assemble(
        key,
        applied,
        held,
        finish_status(status, conditions),
        patches,
        error,
    )
}

#[cfg(test)]
#[allow(clippy::type_complexity)] // tables of tuples
mod tests {
    use super::super::fixtures::*;
    use super::*;

    #[test]
    fn endpoints_default_to_443() {
        let cases = [
            (
                "https://api.dev.example:6443",
                Some(("api.dev.example", 6443)),
            ),
            ("https://api.dev.example/", Some(("api.dev.example", 443))),
            ("https://api.dev.example", Some(("api.dev.example", 443))),
            ("api.dev.example:8443/x", Some(("api.dev.example", 8443))),
            ("https://:443", None),
            ("https://", None),
            ("https://host:port", None),
        ];
        for (url, want) in cases {
            assert_eq!(
                parse_endpoint(url),
                want.map(|(h, p)| (h.to_string(), p)),
                "{url}"
            );
        }
    }

    #[test]
    fn resources_ready_table() {
        let ac = aro_cluster_obj(&[("ResourceGroup", "rg"), ("VirtualNetwork", "vnet")]);
        let cases: Vec<(&str, Value, Vec<Value>, (&str, &str, &str))> = vec![
            (
                "none live",
                ac.clone(),
                vec![],
                (
                    "False",
                    "ProvisioningInfrastructure",
                    "Waiting for infrastructure resources: 0/2 ready",
                ),
            ),
            (
                "one of two",
                ac.clone(),
                vec![
                    aso("ResourceGroup", "rg", Ready::Yes),
                    aso("VirtualNetwork", "vnet", Ready::No),
                ],
                (
                    "False",
                    "ProvisioningInfrastructure",
                    "Waiting for infrastructure resources: 1/2 ready",
                ),
            ),
            (
                "stale generation is not ready",
                ac.clone(),
                vec![
                    aso("ResourceGroup", "rg", Ready::Yes),
                    aso("VirtualNetwork", "vnet", Ready::Stale),
                ],
                (
                    "False",
                    "ProvisioningInfrastructure",
                    "Waiting for infrastructure resources: 1/2 ready",
                ),
            ),
            (
                "all",
                ac.clone(),
                vec![
                    aso("ResourceGroup", "rg", Ready::Yes),
                    aso("VirtualNetwork", "vnet", Ready::Yes),
                ],
                (
                    "True",
                    "InfrastructureReady",
                    "All 2 infrastructure resources are ready",
                ),
            ),
            (
                "no resources counts as ready",
                aro_cluster_obj(&[]),
                vec![],
                (
                    "True",
                    "InfrastructureReady",
                    "All 0 infrastructure resources are ready",
                ),
            ),
        ];
        for (name, ac, live, want) in cases {
            let c = resources_ready(&ac, &live);
            assert_eq!(
                (c.status, c.reason.as_str(), c.message.as_str()),
                want,
                "case {name}"
            );
            let d = decide_cluster(&ac, &with_owner(&ac, live), "t");
            assert_cond(&d.status, "ResourcesReady", want.0, want.1, want.2);
        }
    }

    #[test]
    fn network_readiness_endpoint_and_ready_table() {
        let ac = aro_cluster_obj(&[("ResourceGroup", "rg")]);
        let rg = aso("ResourceGroup", "rg", Ready::Yes);
        // (case, control plane status, NetworkInfrastructureReady, endpoint patched, ready, provisioned)
        type Row<'a> = (
            &'a str,
            Option<Value>,
            (&'a str, &'a str, &'a str),
            Option<Value>,
            bool,
            bool,
        );
        let rows: Vec<Row> = vec![
            (
                "no control plane",
                None,
                (
                    "False",
                    "ExternallyManagedControlPlane",
                    "Waiting for the Control Plane to get ready",
                ),
                None,
                false,
                false,
            ),
            (
                "control plane without URL",
                Some(json!({"ready": false})),
                (
                    "False",
                    "ExternallyManagedControlPlane",
                    "Waiting for the Control Plane to get ready",
                ),
                None,
                false,
                false,
            ),
            (
                "URL known, control plane not ready",
                Some(json!({"ready": false, "apiURL": "https://api.dev:6443"})),
                ("True", "Succeeded", ""),
                Some(json!({"host": "api.dev", "port": 6443})),
                false,
                false,
            ),
            (
                "ready, port 443 by default",
                Some(json!({"ready": true, "apiURL": "https://api.dev"})),
                ("True", "Succeeded", ""),
                Some(json!({"host": "api.dev", "port": 443})),
                true,
                true,
            ),
        ];
        for (name, cp_status, net, endpoint, ready, provisioned) in rows {
            let mut live = with_owner(&ac, vec![rg.clone(), capi("dev", Some("AROControlPlane"))]);
            if let Some(s) = cp_status {
                let mut cp = control_plane_obj(&[("HcpOpenShiftCluster", "hcp")]);
                cp["status"] = s;
                live.push(cp);
            }
            let d = decide_cluster(&ac, &live, "t");
            assert_cond(&d.status, "NetworkInfrastructureReady", net.0, net.1, net.2);
            assert_eq!(
                d.patches
                    .first()
                    .map(|p| p["spec"]["controlPlaneEndpoint"].clone()),
                endpoint,
                "case {name}"
            );
            assert_eq!(d.status["ready"], ready, "case {name}");
            assert_eq!(
                d.status["initialization"]["provisioned"], provisioned,
                "case {name}"
            );
        }
        // Mirrored already: no patch.
        let mut owner = ac.clone();
        owner["spec"]["controlPlaneEndpoint"] = json!({"host": "api.dev", "port": 443});
        let mut cp = control_plane_obj(&[("HcpOpenShiftCluster", "hcp")]);
        cp["status"] = json!({"ready": true, "apiURL": "https://api.dev:443"});
        let d = decide_cluster(&ac, &with_owner(&owner, vec![cp]), "t");
        assert!(d.patches.is_empty(), "{:?}", d.patches);
    }

    #[test]
    fn applies_owned_kinds_and_terminal_errors() {
        let ac = aro_cluster_obj(&[("ResourceGroup", "rg"), ("VirtualNetwork", "vnet")]);
        let d = decide_cluster(&ac, &with_owner(&ac, vec![]), "t");
        assert_eq!(d.applies.len(), 2);
        assert!(d.held.is_empty() && d.error.is_none());
        assert_eq!(d.applies[0]["metadata"]["namespace"], NS);
        assert_eq!(
            d.applies[0]["metadata"]["ownerReferences"][0]["uid"],
            "uid-AROCluster-dev"
        );
        assert!(d.record_owned_kinds.is_some());
        // Not live yet: everything waits for it.
        let d = decide_cluster(&ac, &[], "t");
        assert!(d.applies.is_empty());
        assert_eq!(d.held.len(), 2);
        assert_eq!(d.held[0].reason, "WaitingForOwner");
        // A Cluster whose control plane is not an AROControlPlane: terminal.
        let d = decide_cluster(
            &ac,
            &with_owner(&ac, vec![capi("dev", Some("KubeadmControlPlane"))]),
            "t",
        );
        assert!(d.applies.is_empty() && d.record_owned_kinds.is_none());
        assert_eq!(
            d.error.unwrap().to_string(),
            "AROCluster/aro-dev/dev: AROCluster cannot be used without AROControlPlane (Cluster dev's controlPlaneRef is a KubeadmControlPlane)"
        );
        assert_eq!(d.status["ready"], false);
    }
}

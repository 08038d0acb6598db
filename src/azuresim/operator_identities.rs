//! What the service says of an HcpOpenShiftCluster's operator identities, simulated (pure).
//!
//! ARO HCP refuses to create a cluster that lacks an identity its OpenShift version requires (or
//! names one that does not exist, or does not assign the control plane operators' identities to the
//! cluster), with `InvalidRequestContent`; a cluster whose identities lack their roles on the VNet,
//! subnet, NSG or Key Vault is accepted and its provisioning fails. The rules are `validate`'s
//! ([`crate::validate::aro_identities`], from the project's table of the service's role sets); here
//! they are checked against the live ASO objects of the cluster's namespace, where a RoleAssignment
//! counts once it is provisioned (`Ready` True).

use crate::reconcile::readiness::ready_condition;
use crate::validate::aro_identities::{self, Problem};
use serde_json::{Value, json};

/// The service's code for a request it refuses as invalid.
pub const REFUSED_CODE: &str = "InvalidRequestContent";
/// The code of a provisioning that fails for lack of a role.
pub const ROLE_CODE: &str = "AuthorizationFailed";

/// What the simulated service does with a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every required identity is there, with its roles.
    Accepted,
    /// The request is refused: nothing is created.
    Refused(String),
    /// Accepted, but provisioning fails until the roles are given.
    RolesMissing(String),
}

/// Decides the verdict for `cluster` among `namespace`, the ASO objects of its namespace.
pub fn verdict(cluster: &Value, namespace: &[&Value]) -> Verdict {
    let provisioned: Vec<&Value> = namespace
        .iter()
        .copied()
        .filter(|o| {
            o.get("kind").and_then(Value::as_str) != Some("RoleAssignment")
                || ready_condition(o)
                    .is_some_and(|c| c.get("status").and_then(Value::as_str) == Some("True"))
        })
        .collect();
    let problems = aro_identities::problems(cluster, &provisioned);
    let say = |ps: Vec<&Problem>| {
        ps.iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join("; ")
    };
    let (refused, roles): (Vec<&Problem>, Vec<&Problem>) =
        problems.iter().partition(|p| p.refused());
    if !refused.is_empty() {
        Verdict::Refused(say(refused))
    } else if !roles.is_empty() {
        Verdict::RolesMissing(say(roles))
    } else {
        Verdict::Accepted
    }
}

/// `obj`'s status for a refused or failing verdict (`Accepted` leaves it as it is): `Ready` False
/// with the code as reason, severity Error when refused (a person must change the cluster),
/// Warning when roles are missing (retried); `provisioningState` Failed for the latter only,
/// since a refused request creates nothing. `lastTransitionTime` is kept while nothing changes.
pub fn status(obj: &Value, verdict: &Verdict, now: &str) -> Value {
    let mut status = obj
        .get("status")
        .filter(|s| s.is_object())
        .cloned()
        .unwrap_or_else(|| json!({}));
    let (code, severity, detail) = match verdict {
        Verdict::Accepted => return status,
        Verdict::Refused(m) => (REFUSED_CODE, "Error", m),
        Verdict::RolesMissing(m) => {
            let props = status
                .as_object_mut()
                .map(|s| s.entry("properties").or_insert_with(|| json!({})));
            if let Some(p) = props.filter(|p| p.is_object()) {
                p["provisioningState"] = json!("Failed");
            }
            (ROLE_CODE, "Warning", m)
        }
    };
    let message = format!("{detail} (aro-gitops Azure simulator; no real Azure call was made)");
    super::credential::with_ready_false(obj, status, code, severity, &message, now)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uai(name: &str) -> Value {
        json!({"apiVersion": "managedidentity.azure.com/v1api20230131", "kind": "UserAssignedIdentity",
            "metadata": {"name": name},
            "spec": {"operatorSpec": {"configMaps": {"principalId": {"name": name, "key": "principalId"}}}}})
    }

    fn r(name: &str) -> Value {
        json!({"group": "managedidentity.azure.com", "kind": "UserAssignedIdentity", "name": name})
    }

    /// A 4.20 cluster naming every identity, on subnet `s` of VNet `v` (no NSG), and its namespace
    /// with the identities and, when `roles`, the role assignments (provisioned or not).
    fn fixture(roles: Option<bool>) -> (Value, Vec<Value>) {
        let required = aro_identities::required("4.20").unwrap();
        let name = |r: &aro_identities::Required| format!("{:?}-{}", r.plane, r.operator);
        let mut cp = serde_json::Map::new();
        let mut dp = serde_json::Map::new();
        let mut own = vec![];
        let mut ns = vec![
            json!({"kind": "VirtualNetwork", "metadata": {"name": "v"}, "spec": {"owner": {"name": "rg"}}}),
            json!({"kind": "VirtualNetworksSubnet", "metadata": {"name": "s"}, "spec": {"owner": {"name": "v"}}}),
        ];
        let mut smi = Value::Null;
        for need in &required {
            let n = name(need);
            ns.push(uai(&n));
            match need.plane {
                aro_identities::Plane::ControlPlane => {
                    cp.insert(need.operator.clone(), r(&n));
                    own.push(json!({"reference": r(&n)}));
                }
                aro_identities::Plane::DataPlane => {
                    dp.insert(need.operator.clone(), r(&n));
                }
                aro_identities::Plane::Service => {
                    smi = r(&n);
                    own.push(json!({"reference": r(&n)}));
                }
            }
            for scope in need.scopes.iter().filter(|s| {
                matches!(
                    s,
                    aro_identities::Scope::Vnet | aro_identities::Scope::Subnet
                )
            }) {
                if let Some(ready) = roles {
                    let owner = if scope.kind() == "VirtualNetwork" {
                        "v"
                    } else {
                        "s"
                    };
                    ns.push(json!({"kind": "RoleAssignment", "metadata": {"name": format!("{n}-{owner}")},
                        "spec": {"owner": {"kind": scope.kind(), "name": owner},
                            "principalIdFromConfig": {"name": n, "key": "principalId"},
                            "roleDefinitionReference": {"armId": format!("/subscriptions/x/providers/Microsoft.Authorization/roleDefinitions/{}", need.role.id)}},
                        "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}}));
                }
            }
        }
        let cluster = json!({"kind": "HcpOpenShiftCluster", "metadata": {"name": "c", "generation": 3},
            "spec": {"identity": {"userAssignedIdentities": own}, "properties": {"version": {"id": "4.20"},
                "platform": {"subnetReference": {"kind": "VirtualNetworksSubnet", "name": "s"},
                    "operatorsAuthentication": {"userAssignedIdentities": {
                        "controlPlaneOperatorsReferences": cp, "dataPlaneOperatorsReferences": dp,
                        "serviceManagedIdentityReference": smi}}}}}});
        (cluster, ns)
    }

    fn verdict_of(cluster: &Value, ns: &[Value]) -> Verdict {
        verdict(cluster, &ns.iter().collect::<Vec<_>>())
    }

    #[test]
    fn a_cluster_with_its_identities_and_provisioned_roles_is_accepted() {
        let (c, ns) = fixture(Some(true));
        assert_eq!(verdict_of(&c, &ns), Verdict::Accepted);
    }

    #[test]
    fn roles_not_yet_provisioned_or_absent_fail_provisioning() {
        for roles in [Some(false), None] {
            let (c, ns) = fixture(roles);
            let Verdict::RolesMissing(m) = verdict_of(&c, &ns) else {
                panic!("{roles:?}")
            };
            assert!(
                m.contains("Azure Red Hat OpenShift Network Operator"),
                "{m}"
            );
        }
    }

    #[test]
    fn a_missing_identity_is_refused_before_the_roles_are_looked_at() {
        let (mut c, ns) = fixture(None);
        c.pointer_mut("/spec/properties/platform/operatorsAuthentication/userAssignedIdentities/dataPlaneOperatorsReferences")
            .unwrap()
            .as_object_mut()
            .unwrap()
            .remove("file-csi-driver");
        let v = verdict_of(&c, &ns);
        let Verdict::Refused(m) = &v else {
            panic!("{v:?}")
        };
        assert!(
            m.contains("requires the data plane operator identity \"file-csi-driver\""),
            "{m}"
        );
        let s = status(&c, &v, "t1");
        let ready = &s["conditions"][0];
        assert_eq!(
            (
                &ready["reason"],
                &ready["severity"],
                &ready["observedGeneration"]
            ),
            (&json!(REFUSED_CODE), &json!("Error"), &json!(3))
        );
        assert!(s.pointer("/properties/provisioningState").is_none());
        let mut again = c.clone();
        again["status"] = s.clone();
        assert_eq!(status(&again, &v, "t2"), s);
    }

    #[test]
    fn missing_roles_fail_the_provisioning_and_are_retried() {
        let (c, ns) = fixture(None);
        let v = verdict_of(&c, &ns);
        let s = status(&c, &v, "t1");
        assert_eq!(s["properties"]["provisioningState"], "Failed");
        assert_eq!(s["conditions"][0]["reason"], ROLE_CODE);
        assert_eq!(s["conditions"][0]["severity"], "Warning");
        assert_eq!(status(&c, &Verdict::Accepted, "t1"), json!({}));
    }
}

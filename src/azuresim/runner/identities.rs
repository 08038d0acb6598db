//! The service's check of an HcpOpenShiftCluster's operator identities and their roles
//! ([`operator_identities`]), against the live ASO objects of the cluster's namespace: a refused
//! cluster is never created, and a cluster whose identities lack their roles fails its provisioning.
//! Both are looked at again after a while (the identities and roles are other objects, whose changes
//! do not wake the cluster), as ASO retries.

use super::{CREDENTIAL_RETRY, Runner, timestamp, write_status};
use crate::azuresim::operator_identities::{self, Verdict};
use crate::azuresim::status::Phase;
use crate::azuresim::watch::{Key, to_value};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde_json::Value;
use std::cmp::Reverse;
use tokio::time::Instant;

/// The kinds whose objects the check reads: identities, role assignments and their scopes.
const READ: &[&str] = &[
    "UserAssignedIdentity",
    "RoleAssignment",
    "VirtualNetwork",
    "VirtualNetworksSubnet",
    "NetworkSecurityGroup",
    "Vault",
];

impl Runner {
    /// True when the cluster `obj` stops here, after writing why: refused (whatever its phase), or
    /// its provisioning ended (`phase` Succeeded) without the roles. A cluster Azure already holds
    /// (`status.id`) is not judged again.
    pub(super) async fn identities_stop(
        &self,
        key: &Key,
        ar: &ApiResource,
        api: &Api<DynamicObject>,
        obj: &Value,
        phase: &Phase,
    ) -> Result<bool, kube::Error> {
        if obj.pointer("/status/id").is_some() {
            return Ok(false);
        }
        let namespace = self.namespace_objects(&key.namespace).await?;
        let refs: Vec<&Value> = namespace.iter().collect();
        let verdict = operator_identities::verdict(obj, &refs);
        let code = match &verdict {
            Verdict::Accepted => return Ok(false),
            Verdict::RolesMissing(_) if *phase != Phase::Succeeded => return Ok(false),
            Verdict::Refused(_) => operator_identities::REFUSED_CODE,
            Verdict::RolesMissing(_) => operator_identities::ROLE_CODE,
        };
        tracing::debug!(namespace = %key.namespace, name = %key.name, ?verdict, "operator identities refused");
        let desired = operator_identities::status(obj, &verdict, &timestamp());
        write_status(api, ar, key, obj, &desired, code).await?;
        let mut state = self.state();
        state.timers.remove(key);
        state
            .wakeups
            .push(Reverse((Instant::now() + CREDENTIAL_RETRY, key.clone())));
        Ok(true)
    }

    /// The objects of [`READ`]'s kinds in `namespace`, as the API server has them.
    async fn namespace_objects(&self, namespace: &str) -> Result<Vec<Value>, kube::Error> {
        let mut out = Vec::new();
        let ars: Vec<ApiResource> = self
            .kinds
            .iter()
            .filter(|((_, kind), _)| READ.contains(&kind.as_str()))
            .map(|(_, w)| w.ar.clone())
            .collect();
        for ar in ars {
            let list = self
                .api(&ar, namespace)
                .list(&ListParams::default())
                .await?;
            out.extend(list.items.into_iter().map(|o| to_value(o, &ar)));
        }
        Ok(out)
    }
}

//! Judging each step of the dependency chain from the live objects of one cluster.
//!
//! Each step is judged on its own (a later step can be done while an earlier one is not, after a
//! drift); the chain then says where the cluster stands. Embedded ASO resources are judged by the one
//! readiness rule, [`crate::reconcile::readiness::aso_readiness`].

use super::StepState;
use super::live::{
    ARO_GROUP, CAPI_GROUP, CONTROLPLANE_GROUP, EXTERNAL_AUTH, HCP_CLUSTER, INFRA_GROUP, Live,
    NODE_POOL, condition, condition_is_true, condition_text, embedded, flag, group_of, is_kind,
    kind_of, labelled_for, list_names, name_of, owned_by,
};
use crate::object::text_at;
use crate::reconcile::readiness::{Readiness, aso_readiness};
use serde_json::Value;

/// The verdict on one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Judged {
    pub state: StepState,
    pub detail: Option<String>,
}

fn done(detail: impl Into<String>) -> Judged {
    Judged {
        state: StepState::Done,
        detail: Some(detail.into()),
    }
}

fn waiting(detail: impl Into<String>) -> Judged {
    Judged {
        state: StepState::Waiting,
        detail: Some(detail.into()),
    }
}

fn failed(detail: impl Into<String>) -> Judged {
    Judged {
        state: StepState::Failed,
        detail: Some(detail.into()),
    }
}

fn not_applicable(detail: impl Into<String>) -> Judged {
    Judged {
        state: StepState::NotApplicable,
        detail: Some(detail.into()),
    }
}

/// A set of ASO resources a step waits for: each by its `Kind/name`, and the live object when it exists.
struct Members<'a> {
    items: Vec<(String, Option<&'a Value>)>,
}

impl<'a> Members<'a> {
    /// Resolves `(group, kind, name)` triples against the live objects, without repeats.
    fn resolve(live: &Live<'a>, wanted: Vec<(String, String, String)>) -> Self {
        let mut wanted = wanted;
        wanted.sort_by(|a, b| (&a.1, &a.2, &a.0).cmp(&(&b.1, &b.2, &b.0)));
        wanted.dedup();
        let items = wanted
            .into_iter()
            .map(|(group, kind, name)| {
                let found = live.find(&group, &kind, &name);
                (format!("{kind}/{name}"), found)
            })
            .collect();
        Members { items }
    }

    fn total(&self) -> usize {
        self.items.len()
    }

    fn missing(&self) -> Vec<String> {
        self.items
            .iter()
            .filter(|(_, o)| o.is_none())
            .map(|(n, _)| n.clone())
            .collect()
    }

    fn readiness(&self) -> impl Iterator<Item = (&str, Readiness)> {
        self.items
            .iter()
            .filter_map(|(n, o)| o.map(|o| (n.as_str(), aso_readiness(o))))
    }

    /// The first failed member, described as `Kind/name: reason: message`.
    fn failure(&self) -> Option<String> {
        self.readiness()
            .find(|(_, r)| r.is_failed())
            .map(|(name, r)| describe(name, &r))
    }

    fn ready_count(&self) -> usize {
        self.readiness().filter(|(_, r)| r.is_ready()).count()
    }

    /// The first member not ready, with why.
    fn first_not_ready(&self) -> Option<String> {
        self.items.iter().find_map(|(name, o)| match o {
            None => Some(format!("{name} does not exist yet")),
            Some(o) => {
                let r = aso_readiness(o);
                (!r.is_ready()).then(|| describe(name, &r))
            }
        })
    }
}

/// `Kind/name: reason: message`, leaving out what is empty.
fn describe(name: &str, readiness: &Readiness) -> String {
    let parts: Vec<&str> = [readiness.reason(), readiness.message()]
        .into_iter()
        .flatten()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if parts.is_empty() {
        format!("{name}: {readiness}")
    } else {
        format!("{name}: {}", parts.join(": "))
    }
}

fn triple(entry: &Value) -> Option<(String, String, String)> {
    let name = name_of(entry)?;
    Some((
        group_of(entry).to_string(),
        kind_of(entry).to_string(),
        name.to_string(),
    ))
}

/// The objects of one cluster that the chain looks at.
pub(super) struct Context<'a> {
    live: Live<'a>,
    cluster: String,
    aro_cluster_name: String,
    aro_cluster: Option<&'a Value>,
    control_plane_name: String,
    control_plane: Option<&'a Value>,
    hcp_name: Option<String>,
    hcp: Option<&'a Value>,
}

impl<'a> Context<'a> {
    /// Finds the AROCluster and AROControlPlane through the CAPI Cluster's references (the
    /// cluster's own name when the Cluster is not live or has none), and the HcpOpenShiftCluster
    /// embedded in the control plane.
    pub fn resolve(live: Live<'a>, cluster: &str) -> Self {
        let capi = live.find(CAPI_GROUP, "Cluster", cluster);
        let reference = |field: &str, kind: &str| {
            capi.and_then(|c| c.pointer(&format!("/spec/{field}")))
                .filter(|r| {
                    r.get("kind")
                        .and_then(Value::as_str)
                        .is_none_or(|k| k == kind)
                })
                .and_then(|r| text_at(r, "/name"))
                .unwrap_or(cluster)
                .to_string()
        };
        let aro_cluster_name = reference("infrastructureRef", "AROCluster");
        let control_plane_name = reference("controlPlaneRef", "AROControlPlane");
        let aro_cluster = live.find(INFRA_GROUP, "AROCluster", &aro_cluster_name);
        let control_plane = live.find(CONTROLPLANE_GROUP, "AROControlPlane", &control_plane_name);
        let hcp_name = control_plane
            .and_then(|cp| embedded(cp).find(|e| is_kind(e, ARO_GROUP, HCP_CLUSTER)))
            .and_then(name_of)
            .or_else(|| {
                live.of_kind(ARO_GROUP, HCP_CLUSTER)
                    .find(|h| owned_by(h, "AROControlPlane", &control_plane_name))
                    .and_then(name_of)
            })
            .map(str::to_string);
        let hcp = hcp_name
            .as_deref()
            .and_then(|n| live.find(ARO_GROUP, HCP_CLUSTER, n));
        Context {
            live,
            cluster: cluster.to_string(),
            aro_cluster_name,
            aro_cluster,
            control_plane_name,
            control_plane,
            hcp_name,
            hcp,
        }
    }

    /// The ten steps, in order.
    pub fn judge(&self) -> [Judged; 10] {
        [
            self.infrastructure_created(),
            self.resources_ready(),
            self.hcp_created(),
            self.hcp_ready(),
            self.kubeconfig_written(),
            self.control_plane_ready(),
            self.aro_cluster_ready(),
            self.aro_cluster_provisioned(),
            self.node_pools_ready(),
            self.external_auth_ready(),
        ]
    }

    fn aro_cluster_missing(&self) -> Judged {
        waiting(format!("AROCluster/{} not found", self.aro_cluster_name))
    }

    fn control_plane_missing(&self) -> Judged {
        waiting(format!(
            "AROControlPlane/{} not found",
            self.control_plane_name
        ))
    }

    /// The infrastructure: the AROCluster's `spec.resources`, found live by group, kind and name.
    fn infrastructure(&self, aro_cluster: &'a Value) -> Members<'a> {
        Members::resolve(
            &self.live,
            embedded(aro_cluster).filter_map(triple).collect(),
        )
    }

    /// Step 1: every resource of the AROCluster's `spec.resources` exists.
    fn infrastructure_created(&self) -> Judged {
        let Some(ac) = self.aro_cluster else {
            return self.aro_cluster_missing();
        };
        let infra = self.infrastructure(ac);
        let missing = infra.missing();
        let total = infra.total();
        let exist = total - missing.len();
        if missing.is_empty() {
            done(format!("{exist}/{total} infrastructure resources exist"))
        } else {
            waiting(format!(
                "{exist}/{total} infrastructure resources exist; missing {}",
                list_names(&missing)
            ))
        }
    }

    /// Step 2: the AROCluster's `ResourcesReady` is True, or every infrastructure resource is Ready.
    fn resources_ready(&self) -> Judged {
        let Some(ac) = self.aro_cluster else {
            return self.aro_cluster_missing();
        };
        let infra = self.infrastructure(ac);
        if let Some(failure) = infra.failure() {
            return failed(failure);
        }
        let (ready, total) = (infra.ready_count(), infra.total());
        if condition_is_true(ac, "ResourcesReady") || ready == total {
            return done(format!("{total}/{total} infrastructure resources ready"));
        }
        waiting(
            condition_text(ac, "ResourcesReady")
                .unwrap_or_else(|| format!("{ready}/{total} infrastructure resources ready")),
        )
    }

    /// Step 3: the HcpOpenShiftCluster embedded in the AROControlPlane exists.
    fn hcp_created(&self) -> Judged {
        if self.control_plane.is_none() {
            return self.control_plane_missing();
        }
        match (&self.hcp_name, self.hcp) {
            (Some(name), Some(_)) => done(format!("{HCP_CLUSTER}/{name} exists")),
            (Some(name), None) => waiting(format!("{HCP_CLUSTER}/{name} not created yet")),
            (None, _) => waiting(format!(
                "AROControlPlane/{} embeds no {HCP_CLUSTER}",
                self.control_plane_name
            )),
        }
    }

    /// Step 4: the AROControlPlane's `HcpClusterReady` is True, or the HcpOpenShiftCluster is Ready.
    fn hcp_ready(&self) -> Judged {
        let readiness = self.hcp.map(aso_readiness);
        let name = format!("{HCP_CLUSTER}/{}", self.hcp_name.as_deref().unwrap_or("?"));
        if let Some(r) = readiness.as_ref().filter(|r| r.is_failed()) {
            return failed(describe(&name, r));
        }
        let condition = self
            .control_plane
            .filter(|cp| condition_is_true(cp, "HcpClusterReady"));
        if condition.is_some() || readiness.as_ref().is_some_and(Readiness::is_ready) {
            return done(format!("{name} ready"));
        }
        if let Some(text) = self
            .control_plane
            .and_then(|cp| condition_text(cp, "HcpClusterReady"))
        {
            return waiting(text);
        }
        match readiness {
            Some(r) => waiting(describe(&name, &r)),
            None => waiting(format!("{name} not created yet")),
        }
    }

    /// The kubeconfig Secret's name: the HcpOpenShiftCluster's admin credentials, or the default.
    fn kubeconfig_name(&self) -> String {
        const POINTER: &str = "/spec/operatorSpec/secrets/adminCredentials/name";
        let embedded_hcp = self
            .control_plane
            .and_then(|cp| embedded(cp).find(|e| is_kind(e, ARO_GROUP, HCP_CLUSTER)));
        self.hcp
            .and_then(|h| text_at(h, POINTER))
            .or_else(|| embedded_hcp.and_then(|h| text_at(h, POINTER)))
            .map(str::to_string)
            .unwrap_or_else(|| format!("{}-kubeconfig", self.cluster))
    }

    /// Step 5: the kubeconfig Secret exists (only its name is looked at).
    fn kubeconfig_written(&self) -> Judged {
        let name = self.kubeconfig_name();
        if self.live.find("", "Secret", &name).is_some() {
            done(format!("Secret/{name} exists"))
        } else {
            waiting(format!("Secret/{name} not written yet"))
        }
    }

    /// Step 6: the AROControlPlane's `status.ready`, and its `Available` (the aggregated-APIServices
    /// gate) where it reports one.
    fn control_plane_ready(&self) -> Judged {
        match self.control_plane {
            None => self.control_plane_missing(),
            Some(cp)
                if flag(cp, "/status/ready")
                    && condition(cp, "Available").is_some()
                    && !condition_is_true(cp, "Available") =>
            {
                waiting(format!(
                    "AROControlPlane/{} not available: {}",
                    self.control_plane_name,
                    condition_text(cp, "Available").unwrap_or_default()
                ))
            }
            Some(cp) if flag(cp, "/status/ready") => {
                done(format!("AROControlPlane/{} ready", self.control_plane_name))
            }
            Some(_) => waiting(format!(
                "AROControlPlane/{} not ready",
                self.control_plane_name
            )),
        }
    }

    /// Step 7: the AROCluster's `status.ready`.
    fn aro_cluster_ready(&self) -> Judged {
        match self.aro_cluster {
            None => self.aro_cluster_missing(),
            Some(ac) if flag(ac, "/status/ready") => {
                done(format!("AROCluster/{} ready", self.aro_cluster_name))
            }
            Some(ac) => waiting(
                condition_text(ac, "NetworkInfrastructureReady")
                    .filter(|_| !condition_is_true(ac, "NetworkInfrastructureReady"))
                    .unwrap_or_else(|| format!("AROCluster/{} not ready", self.aro_cluster_name)),
            ),
        }
    }

    /// Step 8: the AROCluster's `status.initialization.provisioned`.
    fn aro_cluster_provisioned(&self) -> Judged {
        match self.aro_cluster {
            None => self.aro_cluster_missing(),
            Some(ac) if flag(ac, "/status/initialization/provisioned") => {
                done(format!("AROCluster/{} provisioned", self.aro_cluster_name))
            }
            Some(_) => waiting(format!(
                "AROCluster/{} not provisioned",
                self.aro_cluster_name
            )),
        }
    }

    /// The AROMachinePools of this cluster: labelled for it, or named by one of its MachinePools.
    fn machine_pools(&self) -> Vec<&'a Value> {
        let referenced: Vec<&str> = self
            .live
            .of_kind(CAPI_GROUP, "MachinePool")
            .filter(|mp| {
                text_at(mp, "/spec/clusterName") == Some(self.cluster.as_str())
                    || labelled_for(mp, &self.cluster)
            })
            .filter_map(|mp| text_at(mp, "/spec/template/spec/infrastructureRef/name"))
            .collect();
        self.live
            .of_kind(INFRA_GROUP, "AROMachinePool")
            .filter(|amp| {
                labelled_for(amp, &self.cluster)
                    || name_of(amp).is_some_and(|n| referenced.contains(&n))
            })
            .collect()
    }

    /// Live resources of a kind that belong to this cluster's HcpOpenShiftCluster (`spec.owner`).
    fn owned_by_hcp(&self, kind: &str) -> Vec<(String, String, String)> {
        let Some(hcp) = self.hcp_name.as_deref() else {
            return Vec::new();
        };
        self.live
            .of_kind(ARO_GROUP, kind)
            .filter(|o| text_at(o, "/spec/owner/name") == Some(hcp))
            .filter_map(triple)
            .collect()
    }

    /// Step 9: every node pool of the cluster is Ready.
    fn node_pools_ready(&self) -> Judged {
        let mut wanted = self.owned_by_hcp(NODE_POOL);
        for amp in self.machine_pools() {
            wanted.extend(
                embedded(amp)
                    .filter(|e| is_kind(e, ARO_GROUP, NODE_POOL))
                    .filter_map(triple),
            );
            let amp_name = name_of(amp).unwrap_or_default();
            wanted.extend(
                self.live
                    .of_kind(ARO_GROUP, NODE_POOL)
                    .filter(|np| owned_by(np, "AROMachinePool", amp_name))
                    .filter_map(triple),
            );
        }
        let pools = Members::resolve(&self.live, wanted);
        group_step(&pools, "node pools", "no node pools defined", None)
    }

    /// Step 10: every ExternalAuth of the cluster is Ready; not applicable when none is embedded.
    fn external_auth_ready(&self) -> Judged {
        let mut wanted = self.owned_by_hcp(EXTERNAL_AUTH);
        if let Some(cp) = self.control_plane {
            wanted.extend(
                embedded(cp)
                    .filter(|e| is_kind(e, ARO_GROUP, EXTERNAL_AUTH))
                    .filter_map(triple),
            );
        }
        let auths = Members::resolve(&self.live, wanted);
        let said = self.control_plane.map(|cp| Said {
            ready: condition_is_true(cp, "ExternalAuthReady"),
            text: condition_text(cp, "ExternalAuthReady"),
        });
        group_step(&auths, "ExternalAuths", "no ExternalAuth embedded", said)
    }
}

/// What an owner's condition says about a group of resources.
struct Said {
    ready: bool,
    text: Option<String>,
}

/// A step over a group of resources: not applicable when the group is empty; failed if one failed;
/// done when all are Ready or the owner's condition says so; else waiting, with the condition's
/// message when there is one.
fn group_step(members: &Members<'_>, what: &str, when_empty: &str, said: Option<Said>) -> Judged {
    let total = members.total();
    if total == 0 {
        return not_applicable(when_empty);
    }
    if let Some(failure) = members.failure() {
        return failed(failure);
    }
    let ready = members.ready_count();
    if ready == total || said.as_ref().is_some_and(|s| s.ready) {
        return done(format!("{total}/{total} {what} ready"));
    }
    if let Some(text) = said.and_then(|s| s.text) {
        return waiting(text);
    }
    let first = members.first_not_ready().unwrap_or_default();
    waiting(format!("{ready}/{total} {what} ready; {first}"))
}

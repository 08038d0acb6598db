//! The dependency graph of one unit: which objects must exist before which, and the order to apply in.
//!
//! An edge "a depends on b" comes from (all resolved within the unit; unresolved references are no edge):
//! - an ASO `spec.owner`: an explicit `{group, kind, name}` owner, else `{name}` with the owner's kind
//!   implied by the child's kind (see [`implied_owner`]); a RoleAssignment's `{name}` owner may be any
//!   ASO resource of that name;
//! - a reference object anywhere in `spec` (`{group|apiGroup|apiVersion, kind, name, namespace?}`, or
//!   `{kind, name}` under a `...Ref`/`...Reference(s)` key), same namespace unless it names one;
//! - an embedded resource on the object it is embedded in;
//! - the ARO chain, per cluster: resources embedded in the AROCluster (infrastructure), then the
//!   HcpOpenShiftCluster (and anything else) embedded in the AROControlPlane, then the node pools embedded
//!   in AROMachinePools, then the ExternalAuth (`aro-reconcilers.md`, "Dependency chain");
//! - an ASO resource on the credential Secret its `serviceoperator.azure.com/credential-from`
//!   annotation names (in its namespace);
//! - a namespaced object on its Namespace; an instance of a custom kind on its CustomResourceDefinition;
//! - Endpoints/EndpointSlices on their Service; an APIService on the Service (and its Endpoints) its
//!   `spec.service` names (`policies.md` §4).
//!
//! [`Graph::order`] is a stable topological order: among the objects ready to go, Namespaces and CRDs
//! first, then input order.

use crate::object::{ObjectKey, split_api_version};
use serde_json::{Map, Value};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};
use std::fmt;

/// One object of the unit. `embedded_in` is the key of the object whose `spec.resources` holds it.
#[derive(Debug, Clone)]
pub struct Node<'a> {
    pub key: ObjectKey,
    pub object: &'a Value,
    pub embedded_in: Option<ObjectKey>,
}

/// Nodes (in input order) and edges "a depends on b", both by node index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    keys: Vec<ObjectKey>,
    deps: Vec<Vec<usize>>,
    rdeps: Vec<Vec<usize>>,
    rank: Vec<u8>,
}

/// The unit's dependencies loop; `members` in dependency order, starting with the earliest in input order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("dependency cycle: {}", cycle_text(members))]
pub struct CycleError {
    pub members: Vec<ObjectKey>,
}

fn cycle_text(members: &[ObjectKey]) -> String {
    let mut parts: Vec<String> = members.iter().map(ToString::to_string).collect();
    if let Some(first) = parts.first().cloned() {
        parts.push(first);
    }
    parts.join(" -> ")
}

impl Graph {
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn key(&self, i: usize) -> &ObjectKey {
        &self.keys[i]
    }

    /// The nodes `i` depends on (must exist before it), ascending.
    pub fn dependencies(&self, i: usize) -> &[usize] {
        &self.deps[i]
    }

    /// The nodes that depend on `i`, ascending.
    pub fn dependents(&self, i: usize) -> Vec<usize> {
        self.rdeps[i].clone()
    }

    /// A topological order (dependencies first). Ties: Namespaces and CRDs first, then input order.
    pub fn order(&self) -> Result<Vec<usize>, CycleError> {
        let n = self.len();
        let mut waiting: Vec<usize> = self.deps.iter().map(Vec::len).collect();
        let mut ready: BinaryHeap<Reverse<(u8, usize)>> = (0..n)
            .filter(|&i| waiting[i] == 0)
            .map(|i| Reverse((self.rank[i], i)))
            .collect();
        let mut out = Vec::with_capacity(n);
        while let Some(Reverse((_, i))) = ready.pop() {
            out.push(i);
            for &d in &self.rdeps[i] {
                waiting[d] -= 1;
                if waiting[d] == 0 {
                    ready.push(Reverse((self.rank[d], d)));
                }
            }
        }
        if out.len() == n {
            return Ok(out);
        }
        let left: Vec<bool> = waiting.iter().map(|&w| w > 0).collect();
        Err(CycleError {
            members: self
                .find_cycle(&left)
                .into_iter()
                .map(|i| self.keys[i].clone())
                .collect(),
        })
    }

    /// Walks from the first node left over, along dependencies that are left over too, until it loops.
    fn find_cycle(&self, left: &[bool]) -> Vec<usize> {
        let Some(mut at) = left.iter().position(|&l| l) else {
            return Vec::new();
        };
        let mut path: Vec<usize> = Vec::new();
        loop {
            if let Some(pos) = path.iter().position(|&p| p == at) {
                let mut cycle = path.split_off(pos);
                let min = (0..cycle.len()).min_by_key(|&k| cycle[k]).unwrap_or(0);
                cycle.rotate_left(min);
                return cycle;
            }
            path.push(at);
            // Every node left over waits on at least one other node left over.
            match self.deps[at].iter().copied().find(|&d| left[d]) {
                Some(next) => at = next,
                None => return path,
            }
        }
    }
}

/// Builds the dependency graph of one unit (see the module header for the edges).
pub fn build(nodes: &[Node]) -> Graph {
    let index = Index::new(nodes);
    let mut deps: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); nodes.len()];
    for (i, node) in nodes.iter().enumerate() {
        let d = &mut deps[i];
        d.extend(aso_owner(&index, i));
        d.extend(spec_references(&index, i));
        d.extend(kind_rules(&index, i));
        if let Some(parent) = &node.embedded_in {
            d.extend(index.by_key(parent));
        }
    }
    for (i, prereqs) in aro_chain(&index).into_iter().enumerate() {
        deps[i].extend(prereqs);
    }
    let deps: Vec<Vec<usize>> = deps
        .into_iter()
        .enumerate()
        .map(|(i, d)| d.into_iter().filter(|&x| x != i).collect())
        .collect();
    let mut rdeps = vec![Vec::new(); nodes.len()];
    for (i, d) in deps.iter().enumerate() {
        for &x in d {
            rdeps[x].push(i);
        }
    }
    Graph {
        keys: nodes.iter().map(|n| n.key.clone()).collect(),
        deps,
        rdeps,
        rank: nodes
            .iter()
            .map(|n| {
                if is_namespace(&n.key) || is_crd(&n.key) {
                    0
                } else {
                    1
                }
            })
            .collect(),
    }
}

/// Lookup of the unit's nodes by kind and name.
struct Index<'n, 'a> {
    nodes: &'n [Node<'a>],
    by_kind_name: HashMap<(&'n str, &'n str), Vec<usize>>,
}

impl<'n, 'a> Index<'n, 'a> {
    fn new(nodes: &'n [Node<'a>]) -> Self {
        let mut by_kind_name: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
        for (i, n) in nodes.iter().enumerate() {
            by_kind_name
                .entry((n.key.kind.as_str(), n.key.name.as_str()))
                .or_default()
                .push(i);
        }
        Index {
            nodes,
            by_kind_name,
        }
    }

    fn by_key(&self, key: &ObjectKey) -> Vec<usize> {
        self.resolve(
            Some(&key.group),
            &key.kind,
            &key.name,
            key.namespace.as_deref(),
        )
    }

    /// Nodes of that kind and name (and group, when given) in `namespace`; failing that, cluster-scoped ones.
    fn resolve(
        &self,
        group: Option<&str>,
        kind: &str,
        name: &str,
        namespace: Option<&str>,
    ) -> Vec<usize> {
        let Some(candidates) = self.by_kind_name.get(&(kind, name)) else {
            return Vec::new();
        };
        let matching = |ns: Option<&str>| -> Vec<usize> {
            candidates
                .iter()
                .copied()
                .filter(|&i| group.is_none_or(|g| self.nodes[i].key.group == g))
                .filter(|&i| self.nodes[i].key.namespace.as_deref() == ns)
                .collect()
        };
        let found = matching(namespace);
        if found.is_empty() && namespace.is_some() {
            matching(None)
        } else {
            found
        }
    }
}

fn is_aso(key: &ObjectKey) -> bool {
    key.group.ends_with(".azure.com")
}

fn is_namespace(key: &ObjectKey) -> bool {
    key.group.is_empty() && key.kind == "Namespace"
}

fn is_crd(key: &ObjectKey) -> bool {
    key.group == "apiextensions.k8s.io" && key.kind == "CustomResourceDefinition"
}

use crate::object::text_at;

const RESOURCE_GROUP: (&str, &str) = ("resources.azure.com", "ResourceGroup");
const HCP_CLUSTER: (&str, &str) = ("redhatopenshift.azure.com", "HcpOpenShiftCluster");
const NODE_POOL: &str = "HcpOpenShiftClustersNodePool";
const EXTERNAL_AUTH: &str = "HcpOpenShiftClustersExternalAuth";

/// The `(group, kind)` of the owner an ASO `spec.owner: {name}` points at, implied by the child's kind:
/// a Subnet's is a VirtualNetwork, a NodePool's or ExternalAuth's an HcpOpenShiftCluster; a child kind
/// named `<Parent>s<Child>` (ASO's naming of child resources) has a `<Parent>` of the unit; anything else
/// lives in a ResourceGroup. A ResourceGroup's owner (a subscription) is outside the unit.
pub fn implied_owner(child: &ObjectKey, unit_kinds: &[(&str, &str)]) -> Option<(String, String)> {
    let fixed = match child.kind.as_str() {
        "ResourceGroup" => return None,
        "VirtualNetworksSubnet" => Some(("network.azure.com", "VirtualNetwork")),
        NODE_POOL | EXTERNAL_AUTH => Some(HCP_CLUSTER),
        _ => None,
    };
    let nested = || {
        unit_kinds
            .iter()
            .filter(|(g, k)| *g == child.group && child.kind.len() > k.len() + 1)
            .filter(|(_, k)| child.kind.starts_with(k) && child.kind[k.len()..].starts_with('s'))
            .max_by_key(|(_, k)| k.len())
            .copied()
    };
    let (g, k) = fixed.or_else(nested).unwrap_or(RESOURCE_GROUP);
    Some((g.to_string(), k.to_string()))
}

fn aso_owner(index: &Index, i: usize) -> Vec<usize> {
    let node = &index.nodes[i];
    if !is_aso(&node.key) {
        return Vec::new();
    }
    let Some(owner) = node.object.pointer("/spec/owner") else {
        return Vec::new();
    };
    let Some(name) = text_at(owner, "/name") else {
        return Vec::new();
    }; // an armId owner is outside the unit
    let ns = node.key.namespace.as_deref();
    if let Some(kind) = text_at(owner, "/kind") {
        return index.resolve(text_at(owner, "/group"), kind, name, ns);
    }
    if node.key.kind == "RoleAssignment" {
        return (0..index.nodes.len())
            .filter(|&j| {
                j != i && is_aso(&index.nodes[j].key) && index.nodes[j].key.kind != "RoleAssignment"
            })
            .filter(|&j| {
                index.nodes[j].key.name == name && index.nodes[j].key.namespace.as_deref() == ns
            })
            .collect();
    }
    let kinds: BTreeSet<(&str, &str)> = index
        .nodes
        .iter()
        .filter(|n| is_aso(&n.key))
        .map(|n| (n.key.group.as_str(), n.key.kind.as_str()))
        .collect();
    let kinds: Vec<(&str, &str)> = kinds.into_iter().collect();
    match implied_owner(&node.key, &kinds) {
        Some((group, kind)) => index.resolve(Some(&group), &kind, name, ns),
        None => Vec::new(),
    }
}

/// A reference found in a spec.
struct Reference<'v> {
    group: Option<&'v str>,
    kind: &'v str,
    name: &'v str,
    namespace: Option<&'v str>,
}

fn spec_references(index: &Index, i: usize) -> Vec<usize> {
    let node = &index.nodes[i];
    let Some(spec) = node.object.get("spec").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut refs = Vec::new();
    for (k, v) in spec {
        if k == "owner" && is_aso(&node.key) {
            continue; // handled by aso_owner, with the implied kinds
        }
        collect_refs(v, k, &mut refs);
    }
    let own_ns = node.key.namespace.as_deref();
    refs.iter()
        .flat_map(|r| index.resolve(r.group, r.kind, r.name, r.namespace.or(own_ns)))
        .collect()
}

fn is_ref_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    ["ref", "refs", "reference", "references"]
        .iter()
        .any(|s| k.ends_with(s))
}

fn collect_refs<'v>(v: &'v Value, parent_key: &str, out: &mut Vec<Reference<'v>>) {
    match v {
        Value::Object(m) => {
            if m.contains_key("kind") && m.contains_key("metadata") {
                return; // an embedded object: its references are its own node's
            }
            if let Some(r) = as_reference(m, parent_key) {
                out.push(r);
                return;
            }
            for (k, child) in m {
                collect_refs(child, k, out);
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| collect_refs(item, parent_key, out)),
        _ => {}
    }
}

fn as_reference<'v>(m: &'v Map<String, Value>, parent_key: &str) -> Option<Reference<'v>> {
    let s = |k: &str| m.get(k).and_then(Value::as_str);
    let kind = s("kind").filter(|k| !k.is_empty())?;
    let name = s("name").filter(|n| !n.is_empty())?;
    let group = s("group")
        .or_else(|| s("apiGroup"))
        .or_else(|| s("apiVersion").map(|av| split_api_version(av).0));
    if group.is_none() && !is_ref_key(parent_key) {
        return None;
    }
    Some(Reference {
        group,
        kind,
        name,
        namespace: s("namespace").filter(|n| !n.is_empty()),
    })
}

/// Namespace and CRD prerequisites; Service → Endpoints → APIService.
fn kind_rules(index: &Index, i: usize) -> Vec<usize> {
    let node = &index.nodes[i];
    let key = &node.key;
    let mut out = Vec::new();
    if let Some(ns) = &key.namespace {
        out.extend(index.resolve(Some(""), "Namespace", ns, None));
    }
    out.extend(
        index
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| is_crd(&n.key))
            .filter_map(|(j, n)| {
                let defines = text_at(n.object, "/spec/group") == Some(key.group.as_str())
                    && text_at(n.object, "/spec/names/kind") == Some(key.kind.as_str());
                defines.then_some(j)
            }),
    );
    let ns = key.namespace.as_deref();
    if is_aso(key)
        && let Some(secret) = text_at(
            node.object,
            "/metadata/annotations/serviceoperator.azure.com~1credential-from",
        )
    {
        out.extend(index.resolve(Some(""), "Secret", secret, ns));
    }
    match (key.group.as_str(), key.kind.as_str()) {
        ("", "Endpoints") => out.extend(index.resolve(Some(""), "Service", &key.name, ns)),
        ("discovery.k8s.io", "EndpointSlice") => {
            if let Some(svc) = text_at(node.object, "/metadata/labels/kubernetes.io~1service-name")
            {
                out.extend(index.resolve(Some(""), "Service", svc, ns));
            }
        }
        ("apiregistration.k8s.io", "APIService") => {
            if let (Some(svc_ns), Some(svc)) = (
                text_at(node.object, "/spec/service/namespace"),
                text_at(node.object, "/spec/service/name"),
            ) {
                out.extend(index.resolve(Some(""), "Service", svc, Some(svc_ns)));
                out.extend(index.resolve(Some(""), "Endpoints", svc, Some(svc_ns)));
                out.extend(index.nodes.iter().enumerate().filter_map(|(j, n)| {
                    let slice = n.key.group == "discovery.k8s.io" && n.key.kind == "EndpointSlice";
                    let of_svc = n.key.namespace.as_deref() == Some(svc_ns)
                        && text_at(n.object, "/metadata/labels/kubernetes.io~1service-name")
                            == Some(svc);
                    (slice && of_svc).then_some(j)
                }));
            }
        }
        _ => {}
    }
    out
}

/// Which cluster an embedded node belongs to: namespace, and the cluster's name when known.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ClusterId<'n> {
    namespace: Option<&'n str>,
    name: Option<&'n str>,
}

impl ClusterId<'_> {
    /// An unnamed cluster (no label, no referencing Cluster) matches any cluster of its namespace.
    fn matches(&self, other: &ClusterId) -> bool {
        self.namespace == other.namespace
            && (self.name.is_none() || other.name.is_none() || self.name == other.name)
    }
}

const CLUSTER_NAME_LABEL: &str = "/metadata/labels/cluster.x-k8s.io~1cluster-name";

fn cluster_of<'n>(index: &Index<'n, '_>, parent: &'n ObjectKey) -> ClusterId<'n> {
    let namespace = parent.namespace.as_deref();
    let points_at_parent = |r: Option<&Value>| {
        r.is_some_and(|r| {
            text_at(r, "/kind") == Some(parent.kind.as_str())
                && text_at(r, "/name") == Some(parent.name.as_str())
                && text_at(r, "/namespace").is_none_or(|ns| Some(ns) == namespace)
        })
    };
    let capi = |n: &Node, kind: &str| {
        n.key.group == "cluster.x-k8s.io"
            && n.key.kind == kind
            && n.key.namespace.as_deref() == namespace
    };
    let labelled = index
        .by_key(parent)
        .into_iter()
        .find_map(|j| text_at(index.nodes[j].object, CLUSTER_NAME_LABEL));
    let by_cluster = || {
        index.nodes.iter().find_map(|n| {
            let refs = [
                n.object.pointer("/spec/infrastructureRef"),
                n.object.pointer("/spec/controlPlaneRef"),
            ];
            (capi(n, "Cluster") && refs.into_iter().any(points_at_parent))
                .then_some(n.key.name.as_str())
        })
    };
    let by_machine_pool = || {
        index.nodes.iter().find_map(|n| {
            let r = n.object.pointer("/spec/template/spec/infrastructureRef");
            if capi(n, "MachinePool") && points_at_parent(r) {
                text_at(n.object, "/spec/clusterName")
            } else {
                None
            }
        })
    };
    ClusterId {
        namespace,
        name: labelled.or_else(by_cluster).or_else(by_machine_pool),
    }
}

/// The ARO stage of an embedded node: 0 infrastructure, 1 control plane, 2 node pools, 3 external auth.
fn aro_stage(node: &Node) -> Option<usize> {
    let parent = node.embedded_in.as_ref()?;
    match parent.kind.as_str() {
        "AROCluster" => Some(0),
        "AROControlPlane" if node.key.kind == EXTERNAL_AUTH => Some(3),
        "AROControlPlane" => Some(1),
        "AROMachinePool" => Some(2),
        _ => None,
    }
}

/// For each node, the nodes of the nearest earlier ARO stage of the same cluster.
fn aro_chain(index: &Index) -> Vec<Vec<usize>> {
    let placed: Vec<Option<(usize, ClusterId)>> = index
        .nodes
        .iter()
        .map(|n| Some((aro_stage(n)?, cluster_of(index, n.embedded_in.as_ref()?))))
        .collect();
    placed
        .iter()
        .map(|p| {
            let Some((stage, cluster)) = p else {
                return Vec::new();
            };
            (0..*stage)
                .rev()
                .map(|earlier| {
                    let in_stage = |q: &Option<(usize, ClusterId)>| {
                        q.as_ref()
                            .is_some_and(|(s, c)| *s == earlier && c.matches(cluster))
                    };
                    placed
                        .iter()
                        .enumerate()
                        .filter(|(_, q)| in_stage(q))
                        .map(|(j, _)| j)
                        .collect::<Vec<_>>()
                })
                .find(|found| !found.is_empty())
                .unwrap_or_default()
        })
        .collect()
}

impl fmt::Display for Graph {
    /// One line per node: `Kind/ns/name <- dep, dep`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, key) in self.keys.iter().enumerate() {
            let deps: Vec<String> = self.deps[i]
                .iter()
                .map(|&d| self.keys[d].to_string())
                .collect();
            writeln!(f, "{key} <- {}", deps.join(", "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "graph_tests.rs"]
mod tests;

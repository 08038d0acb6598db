//! Preparing a unit for a pass: render it, validate it, expand the ASO resources its ARO objects
//! embed, and order everything by the dependency graph. Any error stops this unit only.

use crate::kinds::HCP_CLUSTER;
use crate::object::{ObjectKey, Origin, SourcedObject};
use crate::packed::Frozen;
use crate::plan::graph::{self, Node};
use crate::reconcile::aro::{self, node_policy};
use crate::reconcile::credentials;
use crate::report::UnitError;
use crate::unit::Unit;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

/// One object the unit wants live: from git, or embedded in an ARO object from git. Its body is
/// kept as text between passes (see [`Frozen`]): a pass holds it parsed while it runs
/// ([`Prepared::thawed`]).
#[derive(Debug, Clone)]
pub struct PlannedObject {
    pub key: ObjectKey,
    body: Frozen,
    pub origin: Origin,
    /// Index (in [`Prepared::objects`]) of the ARO object this one is embedded in.
    pub embedded_in: Option<usize>,
}

impl PlannedObject {
    pub fn new(
        key: ObjectKey,
        object: &Value,
        origin: Origin,
        embedded_in: Option<usize>,
    ) -> PlannedObject {
        PlannedObject {
            key,
            body: Frozen::new(object),
            origin,
            embedded_in,
        }
    }

    /// The object's body, parsed.
    pub fn object(&self) -> Arc<Value> {
        self.body.get()
    }

    /// The object as compact JSON text, unparsed (what a writer copies without reading it).
    pub fn text(&self) -> Vec<u8> {
        self.body.text()
    }

    /// Whether `other` has the same body.
    pub fn same_body(&self, other: &PlannedObject) -> bool {
        self.body == other.body
    }
}

/// A unit ready for passes: its objects, their dependencies and the order to apply them in.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub unit: Unit,
    pub objects: Vec<PlannedObject>,
    /// `deps[i]`: indexes of the objects `objects[i]` depends on.
    pub deps: Vec<Vec<usize>>,
    pub order: Vec<usize>,
    /// The unit's CAPI Cluster, which names its report.
    pub cluster: Option<ObjectKey>,
    /// What the rollout decision reads of its objects.
    pub rollout: RolloutFacts,
}

/// What the rollout decision reads of a unit's objects (see [`crate::rollout::units`]), kept
/// with its preparation so a decision over the fleet parses no object.
#[derive(Debug, Clone, Default)]
pub struct RolloutFacts {
    /// The labels of its CAPI Cluster.
    pub labels: std::collections::BTreeMap<String, String>,
    /// The revision its `apply-now` annotation names.
    pub apply_now: Option<String>,
}

impl RolloutFacts {
    pub fn of(bodies: &[Value]) -> RolloutFacts {
        RolloutFacts {
            labels: crate::rollout::units::cluster_labels(bodies),
            apply_now: crate::rollout::units::apply_now(bodies),
        }
    }
}

impl Prepared {
    /// The AutoNodePolicies the unit renders (they count before they are live).
    pub fn node_policies(&self) -> Vec<Arc<Value>> {
        (self.objects.iter())
            .filter(|o| node_policy::is_policy_key(&o.key))
            .map(PlannedObject::object)
            .collect()
    }

    /// The clusters of the unit's objects from git that name an identity.
    pub fn cluster_refs(&self) -> Vec<credentials::ClusterIdentityRef> {
        let of_git: Vec<Arc<Value>> = (self.objects.iter())
            .filter(|o| o.embedded_in.is_none())
            .map(PlannedObject::object)
            .collect();
        credentials::cluster_refs(of_git.iter().map(|b| &**b), aro_cluster_name)
    }

    /// Every object's body, parsed: held while a pass runs, so its reads share one parse.
    pub fn thawed(&self) -> Vec<Arc<Value>> {
        self.objects.iter().map(PlannedObject::object).collect()
    }

    /// The namespaces whose node pools the unit reconciles (those holding its AROMachinePools),
    /// and those of the AutoNodePolicies it renders: where it writes the policies' status.
    pub fn node_policy_namespaces(&self) -> BTreeSet<String> {
        self.objects
            .iter()
            .filter(|o| {
                (o.key.kind == "AROMachinePool" && o.key.group == crate::kinds::INFRA_GROUP)
                    || node_policy::is_policy_key(&o.key)
            })
            .filter_map(|o| o.key.namespace.as_deref().map(str::to_string))
            .collect()
    }

    /// The body of the unit's object `i` as a pass applies it, as far as the merge of the node
    /// pool policy goes: an embedded node pool with the AutoNodePolicy that counts in its
    /// namespace merged in (the unit's, else one of `live_policies(namespace)`); anything else as
    /// it is. The plan and the drift report show what a pass applies with it.
    pub fn with_node_policy(
        &self,
        i: usize,
        body: Value,
        live_policies: impl FnOnce(&str) -> Vec<Value>,
    ) -> Result<Value, node_policy::NodePolicyError> {
        let o = &self.objects[i];
        if o.embedded_in.is_none() || o.key.kind != crate::kinds::NODE_POOL {
            return Ok(body);
        }
        let ns = o.key.namespace.as_deref().unwrap_or("default");
        let live = live_policies(ns);
        let rendered = self.node_policies();
        let rendered: Vec<&Value> = rendered.iter().map(|p| &**p).collect();
        let policy = node_policy::effective_policy(ns, &rendered, &live);
        node_policy::merge(&body, policy)
    }
}

fn error(origin: Option<&Origin>, object: Option<ObjectKey>, message: String) -> UnitError {
    UnitError::new(object, origin.map(|o| o.file.clone()), message)
}

/// Renders, decrypts (SOPS files, see [`crate::decrypt`]), validates, expands and orders `unit`
/// from the checkout at `root`. The secret values of
/// the rendered objects are learnt for redaction ([`crate::redact::learn`]) before anything is
/// checked, so no message about them can show them.
pub fn prepare(root: &Path, unit: &Unit) -> Preparation {
    prepare_traced(root, unit).0
}

/// [`prepare`], and the input closure of the unit's render (what a later revision must change for
/// the preparation to change: the rest of preparing reads nothing but the rendered objects).
pub fn prepare_traced(root: &Path, unit: &Unit) -> (Preparation, crate::render::Inputs) {
    let (rendered, inputs) = crate::render::render_traced(root, &unit.path);
    (prepare_rendered(root, unit, rendered), inputs)
}

fn prepare_rendered(
    root: &Path,
    unit: &Unit,
    rendered: Result<Vec<SourcedObject>, crate::render::RenderError>,
) -> Preparation {
    let mut rendered = rendered.map_err(|e| {
        let (line, column) = e.position();
        vec![UnitError::new(None, Some(e.file().to_path_buf()), e.detail()).at(line, column)]
    })?;
    // SOPS files: decrypted (all or nothing) before anything reads their values.
    crate::decrypt::decrypt_rendered(root, &mut rendered).map_err(|errors| {
        errors
            .into_iter()
            .map(|e| UnitError::new(e.object, Some(e.file), e.message))
            .collect::<Vec<_>>()
    })?;
    crate::redact::learn(rendered.iter().map(|s| &s.object));
    let problems = crate::validate::validate(&rendered);
    if !problems.is_empty() {
        return Err(problems
            .into_iter()
            .map(|p| {
                let (line, column) = field_position(root, &p).unzip();
                error(p.origin.as_ref(), p.object.clone(), p.message.clone()).at(line, column)
            })
            .collect());
    }
    expand(unit, rendered).map(std::sync::Arc::new)
}

/// Where the field a validation problem names (its message starts with the field's JSON pointer)
/// is written in its file, when it is written there as such (not added by a patch, say).
fn field_position(root: &Path, p: &crate::validate::ValidationError) -> Option<(usize, usize)> {
    let origin = p.origin.as_ref()?;
    let pointer = p.message.split_once(": ")?.0;
    if !pointer.starts_with('/') {
        return None;
    }
    let text = std::fs::read_to_string(root.join(&origin.file)).ok()?;
    crate::render::field_position(&text, origin.document, pointer)
}

/// The HcpOpenShiftCluster name of each AROControlPlane, by (namespace, cluster name).
fn hcp_names(rendered: &[SourcedObject]) -> Vec<HcpName> {
    rendered
        .iter()
        .filter(|s| s.object.get("kind").and_then(Value::as_str) == Some("AROControlPlane"))
        .filter_map(|s| {
            let hcp = s
                .object
                .pointer("/spec/resources")?
                .as_array()?
                .iter()
                .find(|r| r.get("kind").and_then(Value::as_str) == Some(HCP_CLUSTER))?;
            let name = hcp.pointer("/metadata/name")?.as_str()?.to_string();
            let ns = s
                .object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .map(str::to_string);
            Some((ns, aro_cluster_name(&s.object).to_string(), name))
        })
        .collect()
}

/// The name of the cluster an ARO object belongs to: its cluster-name label, `spec.clusterName`,
/// else its own name.
pub fn aro_cluster_name(obj: &Value) -> &str {
    obj.pointer("/metadata/labels/cluster.x-k8s.io~1cluster-name")
        .or_else(|| obj.pointer("/spec/clusterName"))
        .and_then(Value::as_str)
        .or_else(|| obj.pointer("/metadata/name").and_then(Value::as_str))
        .unwrap_or("")
}

/// An AROControlPlane's HcpOpenShiftCluster: (namespace, cluster name, HcpOpenShiftCluster name).
type HcpName = (Option<String>, String, String);

/// The resources the ARO object `object` (`key`) embeds, given the unit's HcpOpenShiftClusters
/// (`hcp_names`), CAPI Clusters and identity references: each annotated with its cluster's
/// credential Secret when the cluster names an identity.
fn embedded_of(
    object: &Value,
    key: &ObjectKey,
    (hcps, clusters, credentials): (&[HcpName], &[&Value], &[credentials::ClusterIdentityRef]),
) -> Result<Vec<Value>, String> {
    let ns = key.namespace.as_deref().map(str::to_string);
    let cluster = aro_cluster_name(object).to_string();
    let in_ns: Vec<&HcpName> = hcps.iter().filter(|(n, _, _)| *n == ns).collect();
    let hcp = in_ns
        .iter()
        .find(|(_, c, _)| *c == cluster)
        .or(if in_ns.len() == 1 {
            in_ns.first()
        } else {
            None
        })
        .map(|(_, _, h)| h.as_str());
    let capi_cluster = clusters.iter().find(|c| {
        c.pointer("/metadata/namespace").and_then(Value::as_str) == ns.as_deref()
            && c.pointer("/metadata/name").and_then(Value::as_str) == Some(cluster.as_str())
    });
    let paused = aro::is_paused(object, capi_cluster.copied());
    let credential = credentials
        .iter()
        .find(|r| Some(&r.namespace) == ns.as_ref() && r.cluster == cluster);
    let mut e = aro::embedded_resources(object, hcp, paused).map_err(|e| e.to_string())?;
    if let Some(r) = credential {
        e.iter_mut()
            .for_each(|o| credentials::annotate(o, &r.secret_name()));
    }
    Ok(e)
}

/// An error for each object whose key an earlier object of the unit already has.
fn defined_twice(objects: &[PlannedObject]) -> Vec<UnitError> {
    let mut errors = Vec::new();
    let mut seen = std::collections::HashMap::new();
    for (i, o) in objects.iter().enumerate() {
        if let Some(first) = seen.insert(o.key.clone(), i) {
            errors.push(error(
                Some(&o.origin),
                Some(o.key.clone()),
                format!(
                    "{} is defined twice in the unit (also in {})",
                    o.key, objects[first].origin
                ),
            ));
        }
    }
    errors
}

fn expand(unit: &Unit, rendered: Vec<SourcedObject>) -> Result<Prepared, Vec<UnitError>> {
    let hcps = hcp_names(&rendered);
    // The CAPI Clusters of the unit (owned copies: `rendered` is consumed below).
    let cluster_objects: Vec<Value> = rendered
        .iter()
        .filter(|s| {
            s.object.get("kind").and_then(Value::as_str) == Some("Cluster")
                && s.object
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .is_some_and(|v| v.starts_with("cluster.x-k8s.io/"))
        })
        .map(|s| s.object.clone())
        .collect();
    let clusters: Vec<&Value> = cluster_objects.iter().collect();
    // The clusters that name an identity: their ASO resources use its credential Secret.
    let credentials =
        credentials::cluster_refs(rendered.iter().map(|s| &s.object), aro_cluster_name);
    // The objects, and their bodies parsed while the graph is built.
    let mut objects = Vec::new();
    let mut bodies = Vec::new();
    let mut errors = Vec::new();
    for s in rendered {
        let key = ObjectKey::from_object(&s.object).expect("validated objects have an identity");
        let parent = objects.len();
        let embedded = if crate::kinds::is_aro_kind(&key.group, &key.kind) {
            let found = (&hcps[..], &clusters[..], &credentials[..]);
            embedded_of(&s.object, &key, found).unwrap_or_else(|e| {
                errors.push(error(Some(&s.origin), Some(key.clone()), e));
                vec![]
            })
        } else {
            vec![]
        };
        let origin = s.origin.clone();
        objects.push(PlannedObject::new(key, &s.object, s.origin, None));
        bodies.push(s.object);
        for e in embedded {
            match ObjectKey::from_object(&e) {
                Ok(k) => {
                    objects.push(PlannedObject::new(k, &e, origin.clone(), Some(parent)));
                    bodies.push(e);
                }
                Err(err) => errors.push(error(
                    Some(&origin),
                    Some(objects[parent].key.clone()),
                    format!("embedded resource: {err}"),
                )),
            }
        }
    }
    for r in &credentials {
        let origin = objects
            .iter()
            .find(|o: &&PlannedObject| o.key == r.referrer)
            .map(|o| o.origin.clone());
        if let Some(origin) = origin {
            let placeholder = r.placeholder();
            objects.push(PlannedObject::new(
                r.secret_key(),
                &placeholder,
                origin,
                None,
            ));
            bodies.push(placeholder);
        }
    }
    errors.extend(defined_twice(&objects));
    if !errors.is_empty() {
        return Err(errors);
    }
    let nodes: Vec<Node> = (objects.iter().zip(&bodies))
        .map(|(o, body)| Node {
            key: o.key.clone(),
            object: body,
            embedded_in: o.embedded_in.map(|p| objects[p].key.clone()),
        })
        .collect();
    let g = graph::build(&nodes);
    let order = g.order().map_err(|cycle| {
        let first = cycle
            .members
            .first()
            .and_then(|k| objects.iter().find(|o| &o.key == k));
        vec![error(
            first.map(|o| &o.origin),
            first.map(|o| o.key.clone()),
            cycle.to_string(),
        )]
    })?;
    let deps = (0..objects.len())
        .map(|i| g.dependencies(i).to_vec())
        .collect();
    let cluster = objects
        .iter()
        .find(|o| o.key.kind == "Cluster" && o.key.group == "cluster.x-k8s.io")
        .map(|o| o.key.clone());
    Ok(Prepared {
        unit: unit.clone(),
        objects,
        deps,
        order,
        cluster,
        rollout: RolloutFacts::of(&bodies),
    })
}

/// How a unit's preparation went.
pub type Preparation = Result<std::sync::Arc<Prepared>, Vec<UnitError>>;

/// A unit and how its preparation went.
pub type PreparedUnit = (Unit, Preparation);

/// Prepares every unit of the checkout at `root`, on every core (units are independent),
/// keeping their order.
pub fn prepare_all(root: &Path, units: Vec<Unit>) -> Vec<PreparedUnit> {
    let prepared = on_every_core(&units, |u| prepare(root, u));
    units.into_iter().zip(prepared).collect()
}

/// `f` of every item, computed on as many threads as there are cores, in the items' order.
pub fn on_every_core<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(items.len().max(1));
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done: Vec<Vec<(usize, R)>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        out.push((i, f(item)));
                    }
                    out
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a worker thread panicked"))
            .collect()
    });
    let mut results: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    for (i, r) in done.into_iter().flatten() {
        results[i] = Some(r);
    }
    results
        .into_iter()
        .map(|r| r.expect("every item computed"))
        .collect()
}

#[cfg(test)]
mod parallel_tests {
    #[test]
    fn every_item_is_computed_once_in_order() {
        let items: Vec<u32> = (0..1000).collect();
        let out = super::on_every_core(&items, |i| i * 2);
        assert_eq!(out, items.iter().map(|i| i * 2).collect::<Vec<_>>());
        assert!(super::on_every_core(&[] as &[u32], |i| *i).is_empty());
    }
}

//! Validation of rendered objects before anything is planned or applied.
//!
//! Checks, for every object of a render:
//! - identity: `apiVersion`, `kind` and `metadata.name` are present;
//! - the JSON Schema of its kind (`schemas/<kind>.schema.json`: AROCluster, AROControlPlane,
//!   AROMachinePool, AzureClusterIdentity, AutoNodePolicy), which holds the ARO rules (embedded
//!   entries identified, exactly one HcpOpenShiftCluster / HcpOpenShiftClustersNodePool, reserved
//!   names);
//! - duplicates: one group/kind/namespace/name defined twice, counting ASO resources embedded in
//!   the ARO kinds (in their owner's namespace, where the agent applies them);
//! - the reconcile-policy annotations, on objects and on embedded resources;
//! - what kube-apiserver refuses of any object (`builtin`): names per kind, size, the string maps
//!   and base64 of ConfigMaps and Secrets, a namespace for namespaced kinds;
//! - the agent's namespace and marks ([`reserved`]): no unit may declare them;
//! - Azure's naming rules of each ASO resource type and a node pool's autoscaling bounds
//!   (`azure_names`);
//! - the ARO checks ([`aro`]): locations, CIDRs and subnets, OpenShift versions, the managed
//!   resource group, references between the unit's objects, VM sizes against the AutoNodePolicy;
//! - custom resources (and the resources ARO kinds embed) against the structural schema of the
//!   CRD the target cluster serves for their kind and version, strictly ([`crd`]), but for the
//!   fields the agent fills in itself ([`filled`]: the agent-managed etcd key's version), which
//!   are checked once filled in, before the object is applied.
//!
//! - the operator identities an HcpOpenShiftCluster's OpenShift version requires, and the
//!   RoleAssignments that give them their roles on the VNet, subnet, NSG and Key Vault
//!   ([`aro_identities`], from the table the project keeps per version).
//!
//! Messages name the file, the object and the JSON pointer of the field, never a Secret's data.

pub mod aro;
pub mod aro_identities;
mod azure_names;
pub mod builtin;
pub mod crd;
pub mod filled;
pub mod gotime;
pub mod node_policy;
pub mod reserved;
mod rules;
mod schema;

#[cfg(test)]
mod examples_tests;

use crate::object::{ObjectKey, Origin, SourcedObject};
use serde_json::Value;
use std::fmt;

pub use rules::{POLICY_VALUES, RECONCILE_POLICY, RECONCILE_POLICY_IF_EXISTS};

/// One problem found in the rendered objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    /// The file (and document) the object came from.
    pub origin: Option<Origin>,
    /// The object, when it can be identified.
    pub object: Option<ObjectKey>,
    /// What is wrong; starts with the JSON pointer of the field when one field is at fault.
    pub message: String,
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(origin) = &self.origin {
            write!(f, "{origin}: ")?;
        }
        if let Some(object) = &self.object {
            write!(f, "{object}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ValidationError {}

/// Validates rendered objects: identity, the schema of known kinds, duplicates (naming both
/// origins) and the reconcile-policy annotations, including on ASO resources embedded in the ARO
/// kinds' `spec.resources`. Returns every problem, in the order of the objects; empty when clean.
pub fn validate(objects: &[SourcedObject]) -> Vec<ValidationError> {
    validate_against(objects, &crd::cluster_schemas())
}

/// [`validate`] with the CRD schemas of the target cluster given (CRDs among `objects` count
/// first).
pub fn validate_against(
    objects: &[SourcedObject],
    cluster: &crate::crdschema::SchemaSet,
) -> Vec<ValidationError> {
    let rendered_crds = crd::rendered_schemas(objects.iter().map(|s| &s.object));
    let mut errors = Vec::new();
    let mut duplicates = rules::Duplicates::default();
    // The fields each object's own schema faulted, by object: not reported again.
    let mut said_of: Vec<Vec<String>> = vec![Vec::new(); objects.len()];
    let defined = builtin::defined_kinds(objects.iter().map(|s| &s.object));
    for (index, sourced) in objects.iter().enumerate() {
        let origin = &sourced.origin;
        let obj = &sourced.object;
        let error = |object: Option<&ObjectKey>, message: String| ValidationError {
            origin: Some(origin.clone()),
            object: object.cloned(),
            message,
        };
        let key = match ObjectKey::from_object(obj) {
            Ok(key) => key,
            Err(e) => {
                errors.push(error(None, e.to_string()));
                continue;
            }
        };
        let typed_metadata = schema::for_kind(&key.kind).is_some();
        let mut said: Vec<String> = Vec::new();
        if let Some(schema) = schema::for_kind(&key.kind) {
            for v in schema.check(obj) {
                said.extend(v.faulted_pointers());
                errors.push(error(Some(&key), v.to_string()));
            }
        }
        said_of[index].clone_from(&said);
        // A field the kind's own schema already faulted is not reported twice.
        errors.extend(
            crd::problems(obj, &rendered_crds, cluster, &[])
                .into_iter()
                .filter(|(pointer, _)| !crd::covered(&said, pointer))
                .map(|(_, m)| error(Some(&key), m)),
        );
        let scope = builtin::namespaced(&key.group, &key.kind).or_else(|| {
            defined
                .iter()
                .find(|(g, k, _)| (g.as_str(), k.as_str()) == (&*key.group, &*key.kind))
                .map(|(_, _, namespaced)| *namespaced)
        });
        errors.extend(
            builtin::object_problems(obj, scope, typed_metadata)
                .into_iter()
                .map(|m| error(Some(&key), m)),
        );
        errors.extend(
            rules::policy_problems(obj, "")
                .into_iter()
                .chain(reserved::problems(obj, ""))
                .chain(azure_names::problems(obj, ""))
                .map(|m| error(Some(&key), m)),
        );
        let place = rules::Place {
            origin: origin.clone(),
            owner: None,
        };
        if let Some(message) = duplicates.record(&key, place) {
            errors.push(error(Some(&key), message));
        }
        for (index, entry) in rules::embedded(obj) {
            let prefix = rules::embedded_pointer(index, entry);
            errors.extend(
                rules::policy_problems(entry, &prefix)
                    .into_iter()
                    .chain(
                        builtin::object_problems(entry, None, typed_metadata)
                            .into_iter()
                            .map(|m| format!("{prefix}: {m}")),
                    )
                    .chain(reserved::problems(entry, &prefix))
                    .chain(azure_names::problems(entry, &prefix))
                    .map(|m| error(Some(&key), m)),
            );
            let at = format!("/spec/resources/{index}");
            let filled = filled::filled_by_agent(obj, entry);
            errors.extend(
                crd::problems(entry, &rendered_crds, cluster, &filled)
                    .into_iter()
                    .map(|(pointer, m)| (format!("{at}{pointer}"), format!("{at}{m}")))
                    .filter(|(pointer, _)| !crd::covered(&said, pointer))
                    .map(|(_, m)| error(Some(&key), m)),
            );
            // Entries without identity are reported by the owner's schema.
            if let Ok(mut embedded_key) = ObjectKey::from_object(entry) {
                embedded_key.namespace = key.namespace.clone();
                let place = rules::Place {
                    origin: origin.clone(),
                    owner: Some((key.clone(), index)),
                };
                if let Some(message) = duplicates.record(&embedded_key, place) {
                    errors.push(error(Some(&embedded_key), message));
                }
            }
        }
    }
    errors.extend(aro_problems(objects, &said_of));
    errors.extend(identity_problems(objects));
    errors
}

/// The operator identity problems ([`aro_identities`]) of every HcpOpenShiftCluster of a unit,
/// embedded or not, checked against all the unit's ASO resources (embedded ones included).
fn identity_problems(objects: &[SourcedObject]) -> Vec<ValidationError> {
    let is_aso = |v: &Value| {
        v.get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|a| a.split('/').next().unwrap_or("").ends_with(".azure.com"))
    };
    let mut resources: Vec<&Value> = Vec::new();
    // (where, the object the error names, the cluster's pointer prefix, the cluster)
    let mut clusters = Vec::new();
    for sourced in objects {
        let obj = &sourced.object;
        let is_cluster =
            |v: &Value| v.get("kind").and_then(Value::as_str) == Some(crate::kinds::HCP_CLUSTER);
        if is_aso(obj) {
            resources.push(obj);
            if is_cluster(obj) {
                clusters.push((sourced, String::new(), obj));
            }
        }
        for (index, entry) in rules::embedded(obj) {
            resources.push(entry);
            if is_cluster(entry) {
                clusters.push((sourced, format!("/spec/resources/{index}"), entry));
            }
        }
    }
    let mut errors = Vec::new();
    for (sourced, prefix, cluster) in clusters {
        for problem in aro_identities::problems(cluster, &resources) {
            errors.push(ValidationError {
                origin: Some(sourced.origin.clone()),
                object: ObjectKey::from_object(&sourced.object).ok(),
                message: format!("{prefix}{problem}"),
            });
        }
    }
    errors
}

/// The ARO checks ([`aro`]) of the unit's objects, each on the object it names, but for fields
/// the object's schema faulted already (`said_of`).
fn aro_problems(objects: &[SourcedObject], said_of: &[Vec<String>]) -> Vec<ValidationError> {
    let values: Vec<&Value> = objects.iter().map(|s| &s.object).collect();
    aro::problems(&values)
        .into_iter()
        .filter(|p| {
            let pointer = p.message.split_once(": ").map_or("", |(at, _)| at);
            !crd::covered(&said_of[p.object], pointer)
        })
        .map(|p| {
            let sourced = &objects[p.object];
            ValidationError {
                origin: Some(sourced.origin.clone()),
                object: ObjectKey::from_object(&sourced.object).ok(),
                message: p.message,
            }
        })
        .collect()
}

/// Validates a machine-readable cluster report against `schemas/report.schema.json`, plus what a
/// schema cannot say (the chain's step is within its total). Each message starts with a JSON pointer.
pub fn validate_report(report: &Value) -> Vec<String> {
    let mut problems: Vec<String> = schema::report()
        .check(report)
        .iter()
        .map(ToString::to_string)
        .collect();
    let step = report.pointer("/chain/step").and_then(Value::as_u64);
    let total = report.pointer("/chain/total").and_then(Value::as_u64);
    if let (Some(step), Some(total)) = (step, total)
        && step > total
    {
        problems.push(format!(
            "/chain/step: step {step} is beyond the chain's {total} steps"
        ));
    }
    problems
}

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod kind_tests;
#[cfg(test)]
mod tests;

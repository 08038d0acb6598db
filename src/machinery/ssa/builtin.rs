//! The shapes of the built-in kinds the control plane serves, as Kubernetes declares them
//! (`+listType`, `+listMapKey`, `+mapType` markers of the upstream Go types): standard
//! `ObjectMeta`, Namespace, Secret, ConfigMap, Service, Endpoints, Event (core and
//! events.k8s.io), Lease, CustomResourceDefinition and APIService, plus the empty objects
//! creations are compared to.

use super::schema::{ListType, Schema, top_level};
use serde_json::Value;
use std::collections::BTreeMap;

mod deploy;
mod workloads;

impl Schema {
    /// The shape of a built-in kind served by the control plane. Unknown kinds get
    /// [`Schema::any_object`].
    pub fn builtin(group: &str, kind: &str) -> Schema {
        if let Some(schema) = deploy::schema(group, kind).or_else(|| workloads::schema(group, kind))
        {
            return schema;
        }
        match (group, kind) {
            ("", "Namespace") => object(vec![
                ("spec", strukt(vec![("finalizers", atomic_list())])),
                (
                    "status",
                    strukt(vec![
                        ("phase", Schema::Scalar),
                        ("conditions", conditions(&[])),
                    ]),
                ),
            ]),
            ("", "Secret") => object(vec![
                ("data", string_map()),
                ("stringData", string_map()),
                ("type", Schema::Scalar),
                ("immutable", Schema::Scalar),
            ]),
            ("", "ConfigMap") => object(vec![
                ("data", string_map()),
                ("binaryData", string_map()),
                ("immutable", Schema::Scalar),
            ]),
            ("", "Service") => object(vec![("spec", service_spec()), ("status", service_status())]),
            ("", "Endpoints") => object(vec![("subsets", atomic_list())]),
            ("", "Event") => object(vec![
                ("involvedObject", object_reference()),
                ("reason", Schema::Scalar),
                ("message", Schema::Scalar),
                (
                    "source",
                    strukt(vec![
                        ("component", Schema::Scalar),
                        ("host", Schema::Scalar),
                    ]),
                ),
                ("firstTimestamp", Schema::Scalar),
                ("lastTimestamp", Schema::Scalar),
                ("count", Schema::Scalar),
                ("type", Schema::Scalar),
                ("eventTime", Schema::Scalar),
                (
                    "series",
                    strukt(vec![
                        ("count", Schema::Scalar),
                        ("lastObservedTime", Schema::Scalar),
                    ]),
                ),
                ("action", Schema::Scalar),
                ("related", object_reference()),
                ("reportingComponent", Schema::Scalar),
                ("reportingInstance", Schema::Scalar),
            ]),
            ("events.k8s.io", "Event") => object(vec![
                ("eventTime", Schema::Scalar),
                (
                    "series",
                    strukt(vec![
                        ("count", Schema::Scalar),
                        ("lastObservedTime", Schema::Scalar),
                    ]),
                ),
                ("reportingController", Schema::Scalar),
                ("reportingInstance", Schema::Scalar),
                ("action", Schema::Scalar),
                ("reason", Schema::Scalar),
                ("regarding", object_reference()),
                ("related", object_reference()),
                ("note", Schema::Scalar),
                ("type", Schema::Scalar),
                (
                    "deprecatedSource",
                    strukt(vec![
                        ("component", Schema::Scalar),
                        ("host", Schema::Scalar),
                    ]),
                ),
                ("deprecatedFirstTimestamp", Schema::Scalar),
                ("deprecatedLastTimestamp", Schema::Scalar),
                ("deprecatedCount", Schema::Scalar),
            ]),
            ("coordination.k8s.io", "Lease") => object(vec![(
                "spec",
                scalars(&[
                    "holderIdentity",
                    "leaseDurationSeconds",
                    "acquireTime",
                    "renewTime",
                    "leaseTransitions",
                    "strategy",
                    "preferredHolder",
                ]),
            )]),
            ("apiextensions.k8s.io", "CustomResourceDefinition") => {
                object(vec![("spec", crd_spec()), ("status", crd_status())])
            }
            ("apiregistration.k8s.io", "APIService") => object(vec![
                (
                    "spec",
                    strukt(vec![
                        ("service", scalars(&["namespace", "name", "port"])),
                        ("group", Schema::Scalar),
                        ("version", Schema::Scalar),
                        ("insecureSkipTLSVerify", Schema::Scalar),
                        ("caBundle", Schema::Scalar),
                        ("groupPriorityMinimum", Schema::Scalar),
                        ("versionPriority", Schema::Scalar),
                    ]),
                ),
                ("status", strukt(vec![("conditions", conditions(&[]))])),
            ]),
            _ => Schema::any_object(),
        }
    }
}

/// `ObjectMeta`'s scalar fields, in Go's field order (its maps and lists follow them there:
/// labels, annotations, ownerReferences, finalizers, managedFields).
pub(crate) const OBJECT_META_SCALARS: [&str; 10] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// The standard `ObjectMeta` shape.
pub(crate) fn object_meta() -> Schema {
    let mut meta = scalar_fields(&OBJECT_META_SCALARS);
    meta.insert("labels".into(), string_map());
    meta.insert("annotations".into(), string_map());
    meta.insert(
        "ownerReferences".into(),
        map_list(
            &["uid"],
            scalars(&[
                "apiVersion",
                "kind",
                "name",
                "uid",
                "controller",
                "blockOwnerDeletion",
            ]),
        ),
    );
    meta.insert(
        "finalizers".into(),
        Schema::List {
            items: Box::new(Schema::Scalar),
            list_type: ListType::Set,
        },
    );
    meta.insert("managedFields".into(), atomic_list());
    Schema::Map {
        fields: meta,
        additional: None,
        atomic: false,
    }
}

fn object(fields: Vec<(&str, Schema)>) -> Schema {
    top_level(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        None,
    )
}

fn strukt(fields: Vec<(&str, Schema)>) -> Schema {
    Schema::Map {
        fields: fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        additional: None,
        atomic: false,
    }
}

fn scalar_fields(names: &[&str]) -> BTreeMap<String, Schema> {
    names
        .iter()
        .map(|n| (n.to_string(), Schema::Scalar))
        .collect()
}

fn scalars(names: &[&str]) -> Schema {
    Schema::Map {
        fields: scalar_fields(names),
        additional: None,
        atomic: false,
    }
}

fn string_map() -> Schema {
    Schema::Map {
        fields: BTreeMap::new(),
        additional: Some(Box::new(Schema::Scalar)),
        atomic: false,
    }
}

fn atomic_list() -> Schema {
    Schema::List {
        items: Box::new(Schema::Any),
        list_type: ListType::Atomic,
    }
}

fn map_list(keys: &[&str], items: Schema) -> Schema {
    Schema::List {
        items: Box::new(items),
        list_type: ListType::Map(keys.iter().map(|k| k.to_string()).collect()),
    }
}

/// A `conditions` list keyed by `type`, with the usual condition fields plus `extra`.
fn conditions(extra: &[&str]) -> Schema {
    let mut names = vec![
        "type",
        "status",
        "observedGeneration",
        "lastTransitionTime",
        "lastProbeTime",
        "reason",
        "message",
    ];
    names.extend_from_slice(extra);
    map_list(&["type"], scalars(&names))
}

/// A struct of scalars owned as a whole (`+structType=atomic` upstream).
fn atomic_scalars(names: &[&str]) -> Schema {
    Schema::Map {
        fields: scalar_fields(names),
        additional: None,
        atomic: true,
    }
}

/// A core ObjectReference: an atomic struct upstream.
fn object_reference() -> Schema {
    atomic_scalars(&[
        "kind",
        "namespace",
        "name",
        "uid",
        "apiVersion",
        "resourceVersion",
        "fieldPath",
    ])
}

fn service_spec() -> Schema {
    let mut spec = scalar_fields(&[
        "clusterIP",
        "type",
        "sessionAffinity",
        "loadBalancerIP",
        "externalName",
        "externalTrafficPolicy",
        "healthCheckNodePort",
        "publishNotReadyAddresses",
        "ipFamilyPolicy",
        "allocateLoadBalancerNodePorts",
        "loadBalancerClass",
        "internalTrafficPolicy",
        "trafficDistribution",
    ]);
    spec.insert(
        "ports".into(),
        map_list(
            &["port", "protocol"],
            scalars(&[
                "name",
                "protocol",
                "appProtocol",
                "port",
                "targetPort",
                "nodePort",
            ]),
        ),
    );
    spec.insert(
        "selector".into(),
        Schema::Map {
            fields: BTreeMap::new(),
            additional: Some(Box::new(Schema::Scalar)),
            atomic: true,
        },
    );
    for atomic in [
        "clusterIPs",
        "externalIPs",
        "loadBalancerSourceRanges",
        "ipFamilies",
    ] {
        spec.insert(atomic.into(), atomic_list());
    }
    spec.insert(
        "sessionAffinityConfig".into(),
        strukt(vec![("clientIP", scalars(&["timeoutSeconds"]))]),
    );
    Schema::Map {
        fields: spec,
        additional: None,
        atomic: false,
    }
}

fn service_status() -> Schema {
    strukt(vec![
        ("loadBalancer", strukt(vec![("ingress", atomic_list())])),
        ("conditions", conditions(&[])),
    ])
}

fn crd_names() -> Schema {
    strukt(vec![
        ("plural", Schema::Scalar),
        ("singular", Schema::Scalar),
        ("shortNames", atomic_list()),
        ("kind", Schema::Scalar),
        ("listKind", Schema::Scalar),
        ("categories", atomic_list()),
    ])
}

fn crd_spec() -> Schema {
    strukt(vec![
        ("group", Schema::Scalar),
        ("names", crd_names()),
        ("scope", Schema::Scalar),
        ("versions", atomic_list()),
        (
            "conversion",
            strukt(vec![
                ("strategy", Schema::Scalar),
                (
                    "webhook",
                    strukt(vec![
                        (
                            "clientConfig",
                            strukt(vec![
                                ("url", Schema::Scalar),
                                ("service", scalars(&["namespace", "name", "path", "port"])),
                                ("caBundle", Schema::Scalar),
                            ]),
                        ),
                        ("conversionReviewVersions", atomic_list()),
                    ]),
                ),
            ]),
        ),
        ("preserveUnknownFields", Schema::Scalar),
    ])
}

fn crd_status() -> Schema {
    strukt(vec![
        ("conditions", conditions(&[])),
        ("acceptedNames", crd_names()),
        ("storedVersions", atomic_list()),
    ])
}

/// The object an empty Go struct of a built-in kind serializes to (its non-pointer nested
/// structs present and empty); what Kubernetes compares a created object against when it records
/// the creator's fields. Custom resources start from nothing but `metadata`.
pub(crate) fn zero_object(group: &str, kind: &str) -> Value {
    if let Some(zero) = workloads::zero_object(group, kind) {
        return zero;
    }
    let empty = || Value::Object(serde_json::Map::new());
    let mut obj = serde_json::Map::new();
    obj.insert("metadata".into(), empty());
    let nested: &[(&str, &[&str])] = match (group, kind) {
        ("", "Namespace") => &[("spec", &[]), ("status", &[])],
        ("", "Service") => &[("spec", &[]), ("status", &["loadBalancer"])],
        ("", "Event") => &[("involvedObject", &[]), ("source", &[])],
        ("events.k8s.io", "Event") => &[("regarding", &[]), ("deprecatedSource", &[])],
        ("coordination.k8s.io", "Lease") => &[("spec", &[])],
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            &[("spec", &["names"]), ("status", &["acceptedNames"])]
        }
        ("apiregistration.k8s.io", "APIService") => &[("spec", &[]), ("status", &[])],
        ("apps", "Deployment") => &[("spec", &["template", "strategy"]), ("status", &[])],
        _ => &[],
    };
    for (field, inner) in nested {
        let mut m = serde_json::Map::new();
        for i in *inner {
            m.insert(i.to_string(), empty());
        }
        obj.insert(field.to_string(), Value::Object(m));
    }
    if (group, kind) == ("apps", "Deployment") {
        // The pod template's metadata and spec are non-pointer structs too, and its containers
        // (no `omitempty`) serialize as null.
        obj["spec"]["template"] = serde_json::json!({"metadata": {}, "spec": {"containers": null}});
    }
    Value::Object(obj)
}

//! The field tables of the kinds the protobuf decoder knows: for each message, its fields'
//! numbers (from the upstream `generated.proto` files of k8s.io/api core/v1 and coordination/v1
//! and k8s.io/apimachinery meta/v1), JSON names, types and cardinality. Fields not listed here
//! (status, managedFields, deprecated fields) are skipped when decoding.

/// How a field's payload is read and shown in JSON.
#[derive(Clone, Copy)]
pub enum Ty {
    Str,
    I32,
    I64,
    Bool,
    /// `meta/v1.Time`, shown as RFC 3339 with seconds.
    Time,
    /// `meta/v1.MicroTime`, shown as RFC 3339 with microseconds.
    MicroTime,
    IntOrString,
    /// `map<string, string>`.
    StrMap,
    /// `map<string, bytes>`, values shown as base64.
    BytesMap,
    Msg(&'static Message),
}

/// Cardinality, and whether a zero value is dropped.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Card {
    /// A non-pointer field upstream: always on the wire, its zero value means "unset".
    One,
    /// A pointer field upstream: on the wire only when set, so zero values are kept.
    Opt,
    /// A repeated field: a JSON array.
    Many,
}

pub struct Field {
    pub num: u32,
    pub json: &'static str,
    pub ty: Ty,
    pub card: Card,
}

pub struct Message {
    /// The upstream message name, for error messages.
    pub name: &'static str,
    pub fields: &'static [Field],
}

const fn one(num: u32, json: &'static str, ty: Ty) -> Field {
    Field {
        num,
        json,
        ty,
        card: Card::One,
    }
}

const fn opt(num: u32, json: &'static str, ty: Ty) -> Field {
    Field {
        num,
        json,
        ty,
        card: Card::Opt,
    }
}

const fn many(num: u32, json: &'static str, ty: Ty) -> Field {
    Field {
        num,
        json,
        ty,
        card: Card::Many,
    }
}

use Ty::{Bool, BytesMap, I32, I64, IntOrString, MicroTime, Msg, Str, StrMap, Time};

/// What the "unsupported kind" error lists; keep in step with [`KINDS`].
pub const SUPPORTED: &str = "v1 Secret, ConfigMap, Namespace, Service, Endpoints and Event, and coordination.k8s.io/v1 Lease";

/// `(apiVersion, kind, message)` of every kind decoded.
pub static KINDS: &[(&str, &str, &Message)] = &[
    ("v1", "Secret", &SECRET),
    ("v1", "ConfigMap", &CONFIG_MAP),
    ("v1", "Namespace", &NAMESPACE),
    ("v1", "Service", &SERVICE),
    ("v1", "Endpoints", &ENDPOINTS),
    ("v1", "Event", &EVENT),
    ("coordination.k8s.io/v1", "Lease", &LEASE),
];

/// The message of `kind` in `api_version`, if decoded.
pub fn lookup(api_version: &str, kind: &str) -> Option<&'static Message> {
    KINDS
        .iter()
        .find(|(v, k, _)| *v == api_version && *k == kind)
        .map(|(_, _, m)| *m)
}

// ---- meta/v1 ----------------------------------------------------------------------------------

static OWNER_REFERENCE: Message = Message {
    name: "meta.v1.OwnerReference",
    fields: &[
        one(5, "apiVersion", Str),
        one(1, "kind", Str),
        one(3, "name", Str),
        one(4, "uid", Str),
        opt(6, "controller", Bool),
        opt(7, "blockOwnerDeletion", Bool),
    ],
};

static OBJECT_META: Message = Message {
    name: "meta.v1.ObjectMeta",
    fields: &[
        one(1, "name", Str),
        one(2, "generateName", Str),
        one(3, "namespace", Str),
        one(5, "uid", Str),
        one(6, "resourceVersion", Str),
        one(7, "generation", I64),
        one(8, "creationTimestamp", Time),
        opt(9, "deletionTimestamp", Time),
        opt(10, "deletionGracePeriodSeconds", I64),
        one(11, "labels", StrMap),
        one(12, "annotations", StrMap),
        many(13, "ownerReferences", Msg(&OWNER_REFERENCE)),
        many(14, "finalizers", Str),
    ],
};

// ---- core/v1 ----------------------------------------------------------------------------------

static OBJECT_REFERENCE: Message = Message {
    name: "core.v1.ObjectReference",
    fields: &[
        one(1, "kind", Str),
        one(2, "namespace", Str),
        one(3, "name", Str),
        one(4, "uid", Str),
        one(5, "apiVersion", Str),
        one(6, "resourceVersion", Str),
        one(7, "fieldPath", Str),
    ],
};

static SECRET: Message = Message {
    name: "core.v1.Secret",
    fields: &[
        one(1, "metadata", Msg(&OBJECT_META)),
        opt(5, "immutable", Bool),
        one(2, "data", BytesMap),
        one(4, "stringData", StrMap),
        one(3, "type", Str),
    ],
};

static CONFIG_MAP: Message = Message {
    name: "core.v1.ConfigMap",
    fields: &[
        one(1, "metadata", Msg(&OBJECT_META)),
        opt(4, "immutable", Bool),
        one(2, "data", StrMap),
        one(3, "binaryData", BytesMap),
    ],
};

static NAMESPACE_SPEC: Message = Message {
    name: "core.v1.NamespaceSpec",
    fields: &[many(1, "finalizers", Str)],
};

static NAMESPACE_STATUS: Message = Message {
    name: "core.v1.NamespaceStatus",
    fields: &[one(1, "phase", Str)],
};

static NAMESPACE: Message = Message {
    name: "core.v1.Namespace",
    fields: &[
        one(1, "metadata", Msg(&OBJECT_META)),
        one(2, "spec", Msg(&NAMESPACE_SPEC)),
        one(3, "status", Msg(&NAMESPACE_STATUS)),
    ],
};

static SERVICE_PORT: Message = Message {
    name: "core.v1.ServicePort",
    fields: &[
        one(1, "name", Str),
        one(2, "protocol", Str),
        opt(6, "appProtocol", Str),
        opt(3, "port", I32),
        one(4, "targetPort", IntOrString),
        one(5, "nodePort", I32),
    ],
};

static CLIENT_IP_CONFIG: Message = Message {
    name: "core.v1.ClientIPConfig",
    fields: &[opt(1, "timeoutSeconds", I32)],
};

static SESSION_AFFINITY_CONFIG: Message = Message {
    name: "core.v1.SessionAffinityConfig",
    fields: &[opt(1, "clientIP", Msg(&CLIENT_IP_CONFIG))],
};

static SERVICE_SPEC: Message = Message {
    name: "core.v1.ServiceSpec",
    fields: &[
        many(1, "ports", Msg(&SERVICE_PORT)),
        one(2, "selector", StrMap),
        one(3, "clusterIP", Str),
        many(18, "clusterIPs", Str),
        one(4, "type", Str),
        many(5, "externalIPs", Str),
        one(7, "sessionAffinity", Str),
        one(8, "loadBalancerIP", Str),
        many(9, "loadBalancerSourceRanges", Str),
        one(10, "externalName", Str),
        one(11, "externalTrafficPolicy", Str),
        one(12, "healthCheckNodePort", I32),
        one(13, "publishNotReadyAddresses", Bool),
        opt(14, "sessionAffinityConfig", Msg(&SESSION_AFFINITY_CONFIG)),
        many(19, "ipFamilies", Str),
        opt(17, "ipFamilyPolicy", Str),
        opt(20, "allocateLoadBalancerNodePorts", Bool),
        opt(21, "loadBalancerClass", Str),
        opt(22, "internalTrafficPolicy", Str),
        opt(23, "trafficDistribution", Str),
    ],
};

static SERVICE: Message = Message {
    name: "core.v1.Service",
    fields: &[
        one(1, "metadata", Msg(&OBJECT_META)),
        one(2, "spec", Msg(&SERVICE_SPEC)),
    ],
};

static ENDPOINT_ADDRESS: Message = Message {
    name: "core.v1.EndpointAddress",
    fields: &[
        one(1, "ip", Str),
        one(3, "hostname", Str),
        opt(4, "nodeName", Str),
        opt(2, "targetRef", Msg(&OBJECT_REFERENCE)),
    ],
};

static ENDPOINT_PORT: Message = Message {
    name: "core.v1.EndpointPort",
    fields: &[
        one(1, "name", Str),
        opt(2, "port", I32),
        one(3, "protocol", Str),
        opt(4, "appProtocol", Str),
    ],
};

static ENDPOINT_SUBSET: Message = Message {
    name: "core.v1.EndpointSubset",
    fields: &[
        many(1, "addresses", Msg(&ENDPOINT_ADDRESS)),
        many(2, "notReadyAddresses", Msg(&ENDPOINT_ADDRESS)),
        many(3, "ports", Msg(&ENDPOINT_PORT)),
    ],
};

static ENDPOINTS: Message = Message {
    name: "core.v1.Endpoints",
    fields: &[
        one(1, "metadata", Msg(&OBJECT_META)),
        many(2, "subsets", Msg(&ENDPOINT_SUBSET)),
    ],
};

static EVENT_SOURCE: Message = Message {
    name: "core.v1.EventSource",
    fields: &[one(1, "component", Str), one(2, "host", Str)],
};

static EVENT_SERIES: Message = Message {
    name: "core.v1.EventSeries",
    fields: &[one(1, "count", I32), one(2, "lastObservedTime", MicroTime)],
};

static EVENT: Message = Message {
    name: "core.v1.Event",
    fields: &[
        one(1, "metadata", Msg(&OBJECT_META)),
        one(2, "involvedObject", Msg(&OBJECT_REFERENCE)),
        one(3, "reason", Str),
        one(4, "message", Str),
        one(5, "source", Msg(&EVENT_SOURCE)),
        one(6, "firstTimestamp", Time),
        one(7, "lastTimestamp", Time),
        one(8, "count", I32),
        one(9, "type", Str),
        one(10, "eventTime", MicroTime),
        opt(11, "series", Msg(&EVENT_SERIES)),
        one(12, "action", Str),
        opt(13, "related", Msg(&OBJECT_REFERENCE)),
        one(14, "reportingComponent", Str),
        one(15, "reportingInstance", Str),
    ],
};

// ---- coordination.k8s.io/v1 -------------------------------------------------------------------

static LEASE_SPEC: Message = Message {
    name: "coordination.v1.LeaseSpec",
    fields: &[
        opt(1, "holderIdentity", Str),
        opt(2, "leaseDurationSeconds", I32),
        opt(3, "acquireTime", MicroTime),
        opt(4, "renewTime", MicroTime),
        opt(5, "leaseTransitions", I32),
        opt(6, "strategy", Str),
        opt(7, "preferredHolder", Str),
    ],
};

static LEASE: Message = Message {
    name: "coordination.v1.Lease",
    fields: &[
        one(1, "metadata", Msg(&OBJECT_META)),
        one(2, "spec", Msg(&LEASE_SPEC)),
    ],
};

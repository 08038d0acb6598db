//! What a fleet left on an API server, in a form two servers can be compared by: every object of
//! the kinds a management cluster holds for aro-gitops (Namespaces, ConfigMaps, Secrets, and the
//! Cluster API, CAPZ, ASO, Karpenter and simulator kinds), keyed `Kind namespace/name`, with what
//! differs between any two servers normalised away: uids, resourceVersions, timestamps, generated
//! key versions, commits, server addresses; and what only a real cluster's own controllers create left out
//! (`kube-root-ca.crt`, the `kube-*` and `default` namespaces), as is the simulator's publication.

use base64::Engine as _;
use kube::api::{Api, DynamicObject};
use kube::discovery::{Discovery, Scope};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One object, normalised.
#[derive(Debug, Clone, PartialEq)]
pub struct Snap {
    pub kind: String,
    /// What the agent applied (labels, annotations, spec, data), normalised; `None` for objects
    /// the agent does not own (no unit annotation).
    pub applied: Option<Value>,
    /// `status.conditions` (type, status, reason, message) and `status.ready`, normalised.
    pub conditions: Value,
}

/// The namespaces only a real cluster has, or that Kubernetes itself owns.
const SYSTEM_NAMESPACES: [&str; 4] = ["default", "kube-node-lease", "kube-public", "kube-system"];
/// Objects that only one kind of server has: the ConfigMap every real namespace gets from the
/// controller manager, and the simulator's publication when it runs beside a real server.
const SERVER_SPECIFIC: [(&str, &str); 2] = [
    ("ConfigMap", "kube-root-ca.crt"),
    ("ConfigMap", "aro-gitops-azure-simulator"),
];
const UNIT_ANNOTATION: &str = "aro-gitops.dev/unit";

/// Whether the API group is one the fleet's kinds live in.
fn fleet_group(group: &str) -> bool {
    group.is_empty()
        || group.ends_with("cluster.x-k8s.io")
        || group.ends_with(".azure.com")
        || group.ends_with("openshift.io")
        || group.ends_with("aro-gitops.dev")
}

/// Every object of the fleet's kinds the client sees, keyed `Kind namespace/name`.
pub async fn take(client: kube::Client) -> BTreeMap<String, Snap> {
    let discovery = Discovery::new(client.clone())
        .run()
        .await
        .expect("discovery");
    let mut out = BTreeMap::new();
    for group in discovery.groups() {
        if !fleet_group(group.name()) {
            continue;
        }
        for (resource, caps) in group.recommended_resources() {
            if group.name().is_empty()
                && !["Namespace", "ConfigMap", "Secret"].contains(&resource.kind.as_str())
            {
                continue;
            }
            let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
            let list = api
                .list(&Default::default())
                .await
                .unwrap_or_else(|e| panic!("list {}: {e}", resource.kind));
            for o in list.items {
                let o = serde_json::to_value(&o).expect("JSON");
                let name = o["metadata"]["name"].as_str().unwrap_or_default();
                let ns = o["metadata"]["namespace"].as_str().unwrap_or_default();
                let in_system = |n: &str| SYSTEM_NAMESPACES.contains(&n);
                if in_system(ns)
                    || (resource.kind == "Namespace" && in_system(name))
                    || SERVER_SPECIFIC.contains(&(resource.kind.as_str(), name))
                {
                    continue;
                }
                let key = match caps.scope {
                    Scope::Namespaced => format!("{} {ns}/{name}", resource.kind),
                    Scope::Cluster => format!("{} {name}", resource.kind),
                };
                out.insert(key, snap(&resource.kind, o));
            }
        }
    }
    out
}

fn snap(kind: &str, mut o: Value) -> Snap {
    if kind == "Secret" {
        decode_secret(&mut o);
    }
    if kind == "Namespace" {
        // kube-apiserver labels every namespace with its name; the embedded control plane does not.
        if let Some(labels) = o
            .pointer_mut("/metadata/labels")
            .and_then(Value::as_object_mut)
        {
            labels.remove("kubernetes.io/metadata.name");
        }
    }
    let owned = o
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(UNIT_ANNOTATION))
        .is_some();
    let applied = owned.then(|| {
        let mut m = Map::new();
        for (field, value) in [
            ("labels", o.pointer("/metadata/labels")),
            ("annotations", o.pointer("/metadata/annotations")),
            ("spec", o.get("spec")),
            ("data", o.get("data")),
        ] {
            if let Some(v) = value {
                m.insert(field.into(), normalise(v.clone()));
            }
        }
        Value::Object(m)
    });
    let mut conditions = Map::new();
    if let Some(cs) = o.pointer("/status/conditions").and_then(Value::as_array) {
        let mut cs: Vec<Value> = cs
            .iter()
            .map(|c| {
                let mut kept = Map::new();
                for k in ["type", "status", "reason", "message"] {
                    if let Some(v) = c.get(k) {
                        kept.insert(k.into(), normalise(v.clone()));
                    }
                }
                Value::Object(kept)
            })
            .collect();
        cs.sort_by_key(|c| c["type"].as_str().unwrap_or_default().to_string());
        conditions.insert("conditions".into(), Value::Array(cs));
    }
    if let Some(ready) = o.pointer("/status/ready") {
        conditions.insert("ready".into(), ready.clone());
    }
    Snap {
        kind: kind.to_string(),
        applied,
        conditions: Value::Object(conditions),
    }
}

/// A Secret's `data` decoded where it is text (so that addresses inside, such as a kubeconfig's
/// server, can be normalised).
fn decode_secret(o: &mut Value) {
    let Some(data) = o.get_mut("data").and_then(Value::as_object_mut) else {
        return;
    };
    for v in data.values_mut() {
        if let Some(text) = v
            .as_str()
            .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
            .and_then(|b| String::from_utf8(b).ok())
        {
            *v = Value::String(text);
        }
    }
}

/// `v` with what differs between servers replaced by placeholders.
pub fn normalise(v: Value) -> Value {
    match v {
        Value::String(s) => Value::String(normalise_text(&s)),
        Value::Array(a) => Value::Array(a.into_iter().map(normalise).collect()),
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| {
                    let v = match k.as_str() {
                        "uid" | "resourceVersion" | "lastTransitionTime" => {
                            Value::String(format!("<{k}>"))
                        }
                        _ => normalise(v),
                    };
                    (k, v)
                })
                .collect(),
        ),
        other => other,
    }
}

/// A text with loopback addresses (`127.0.0.1:PORT`, `localhost:PORT`), RFC 3339 timestamps
/// 32-digit hex strings (Key Vault key versions) and 40-digit ones (commits) replaced.
pub fn normalise_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while !rest.is_empty() {
        if let Some(n) = loopback_len(rest) {
            out.push_str("<server>");
            rest = &rest[n..];
            continue;
        }
        if let Some(n) = timestamp_len(rest) {
            out.push_str("<time>");
            rest = &rest[n..];
            continue;
        }
        let hex = rest.bytes().take_while(u8::is_ascii_hexdigit).count();
        let boundary = |i: usize| {
            rest.as_bytes()
                .get(i)
                .is_none_or(|b| !b.is_ascii_alphanumeric())
        };
        let after_word = out.ends_with(|c: char| c.is_ascii_alphanumeric());
        if (hex == 32 || hex == 40) && boundary(hex) && !after_word {
            // A key version, or a commit (two fleets are two repositories).
            out.push_str(if hex == 32 { "<hex32>" } else { "<commit>" });
            rest = &rest[hex..];
            continue;
        }
        let c = rest.chars().next().expect("not empty");
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

fn loopback_len(s: &str) -> Option<usize> {
    let host = ["127.0.0.1:", "localhost:"]
        .into_iter()
        .find(|h| s.starts_with(h))?;
    let digits = s[host.len()..]
        .bytes()
        .take_while(u8::is_ascii_digit)
        .count();
    (digits > 0).then_some(host.len() + digits)
}

/// `YYYY-MM-DDTHH:MM:SS` with optional fraction and zone.
fn timestamp_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let shape = b"dddd-dd-ddTdd:dd:dd";
    if b.len() < shape.len() {
        return None;
    }
    for (i, want) in shape.iter().enumerate() {
        let ok = if *want == b'd' {
            b[i].is_ascii_digit()
        } else {
            b[i] == *want
        };
        if !ok {
            return None;
        }
    }
    let mut n = shape.len();
    if b.get(n) == Some(&b'.') {
        n += 1 + b[n + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
    }
    if b.get(n) == Some(&b'Z') {
        n += 1;
    } else if matches!(b.get(n), Some(b'+' | b'-')) && b.len() >= n + 6 {
        n += 6;
    }
    Some(n)
}

/// The differences between two snapshots, one line each (empty when they agree): keys only one
/// has, then what the agent applied, then conditions.
pub fn differences(
    left_name: &str,
    left: &BTreeMap<String, Snap>,
    right_name: &str,
    right: &BTreeMap<String, Snap>,
) -> Vec<String> {
    let mut out = Vec::new();
    for k in left.keys().filter(|k| !right.contains_key(*k)) {
        out.push(format!("only on {left_name}: {k}"));
    }
    for k in right.keys().filter(|k| !left.contains_key(*k)) {
        out.push(format!("only on {right_name}: {k}"));
    }
    for (k, l) in left {
        let Some(r) = right.get(k) else { continue };
        let applied = (
            l.applied.clone().unwrap_or_default(),
            r.applied.clone().unwrap_or_default(),
        );
        for (what, l, r) in [
            ("applied", &applied.0, &applied.1),
            ("status", &l.conditions, &r.conditions),
        ] {
            let mut fields = Vec::new();
            leaf_differences(l, r, "", &mut fields);
            for (path, lv, rv) in fields {
                out.push(format!(
                    "{k}: {what} {path}: {left_name} {lv}, {right_name} {rv}"
                ));
            }
        }
    }
    out
}

/// The paths (`.a.b[0]`) where `l` and `r` differ, with both values (`-` for absent).
fn leaf_differences(l: &Value, r: &Value, path: &str, out: &mut Vec<(String, String, String)>) {
    match (l, r) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let (x, y) = (a.get(k), b.get(k));
                let p = format!("{path}.{k}");
                match (x, y) {
                    (Some(x), Some(y)) => leaf_differences(x, y, &p, out),
                    _ => out.push((p, shown(x), shown(y))),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                leaf_differences(x, y, &format!("{path}[{i}]"), out);
            }
        }
        _ if l != r => out.push((path.to_string(), shown(Some(l)), shown(Some(r)))),
        _ => {}
    }
}

fn shown(v: Option<&Value>) -> String {
    v.map_or("-".to_string(), |v| serde_json::to_string(v).expect("JSON"))
}

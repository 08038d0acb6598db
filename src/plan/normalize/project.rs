//! Projection of a live object onto what the agent cares about: the fields the desired object
//! sets, plus the fields the agent's server-side-apply entry manages (so a field removed from
//! git but still owned by the agent shows as a removal). Everything else (server defaults,
//! other managers' fields) is dropped.
//!
//! Maps keep the desired keys in desired order, then managed-only keys in live order. List
//! items are matched to desired items by the associative key the managed fields use
//! (`k:{"name":"x"}`), by value for sets (`v:"x"`), by a well-known merge key (`name`, `type`,
//! `containerPort`, ...) when nothing is recorded, else by position; matched items are
//! projected the same way, unmatched live items stay only when the agent owns them.

use super::format::adopt_spelling;
use crate::machinery::ssa::FieldSet;
use crate::machinery::ssa::PathElement;
use crate::machinery::ssa::path::values_equal;
use serde_json::{Map, Value};

/// Fields that identify list items when no managed fields say how the list is keyed, tried in
/// order: the first one every desired item sets, with distinct scalar values, is used.
const MERGE_KEYS: &[&str] = &[
    "name",
    "type",
    "containerPort",
    "port",
    "mountPath",
    "devicePath",
    "ip",
    "uid",
    "conditionType",
    "topologyKey",
];

/// Field ownership at one point of the live object.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Owned<'a> {
    /// What the agent's Apply entries own below this point.
    agent: Option<&'a FieldSet>,
    /// What any manager owns below this point (tells how list items are keyed).
    all: Option<&'a FieldSet>,
    /// The agent owns this point as one field (an atomic map or list, a set value).
    whole: bool,
    /// Some manager owns this point (or a point above) as one field: applying replaces it whole.
    atomic: bool,
}

impl<'a> Owned<'a> {
    pub(crate) fn root(agent: &'a FieldSet, all: &'a FieldSet) -> Owned<'a> {
        Owned {
            agent: Some(agent),
            all: Some(all),
            whole: false,
            atomic: false,
        }
    }

    /// Ownership below `pe`.
    pub(crate) fn below(&self, pe: &PathElement) -> Owned<'a> {
        let agent = self
            .agent
            .and_then(|s| s.child(pe))
            .filter(|c| !c.is_empty());
        let all = self.all.and_then(|s| s.child(pe)).filter(|c| !c.is_empty());
        let whole = self.whole || (agent.is_none() && self.agent.is_some_and(|s| s.has_member(pe)));
        Owned {
            agent,
            all,
            whole,
            atomic: whole
                || self.atomic
                || (all.is_none() && self.all.is_some_and(|s| s.has_member(pe))),
        }
    }

    /// Whether this point is owned as one field (by the agent or another manager).
    pub(crate) fn is_atomic(&self) -> bool {
        self.atomic
    }

    /// Whether the agent owns `pe` (or something below it).
    fn owns(&self, pe: &PathElement) -> bool {
        self.whole
            || self
                .agent
                .is_some_and(|s| s.has_member(pe) || s.child(pe).is_some_and(|c| !c.is_empty()))
    }

    /// The elements any manager records directly below this point.
    fn recorded(&self) -> impl Iterator<Item = &'a PathElement> {
        self.all
            .into_iter()
            .flat_map(|s| s.members().chain(s.children().map(|(pe, _)| pe)))
    }
}

/// How a projection runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx {
    /// Keep what the agent manages but the desired object does not set.
    extras: bool,
    /// Let equal quantities and timestamps take the desired spelling (off inside free-form
    /// string maps: ConfigMap and Secret data, labels, annotations).
    formats: bool,
    level: Level,
}

#[derive(Debug, Clone, Copy)]
enum Level {
    Root { data_is_opaque: bool },
    Metadata,
    Inner,
}

impl Ctx {
    /// At the top of `desired`; `extras` as in [`Ctx::extras`].
    pub(crate) fn root(desired: &Value, extras: bool) -> Ctx {
        let kind = desired.get("kind").and_then(Value::as_str);
        let core = desired.get("apiVersion").and_then(Value::as_str) == Some("v1");
        Ctx {
            extras,
            formats: true,
            level: Level::Root {
                data_is_opaque: core && matches!(kind, Some("ConfigMap" | "Secret")),
            },
        }
    }

    /// Below the map key `key`.
    pub(crate) fn field(self, key: &str) -> Ctx {
        let (opaque, level) = match self.level {
            Level::Root { data_is_opaque } => (
                data_is_opaque && matches!(key, "data" | "binaryData" | "stringData"),
                if key == "metadata" {
                    Level::Metadata
                } else {
                    Level::Inner
                },
            ),
            Level::Metadata => (matches!(key, "labels" | "annotations"), Level::Inner),
            Level::Inner => (false, Level::Inner),
        };
        Ctx {
            formats: self.formats && !opaque,
            level,
            ..self
        }
    }

    /// Below a list item.
    pub(crate) fn item(self) -> Ctx {
        Ctx {
            level: Level::Inner,
            ..self
        }
    }
}

/// The part of `live` the agent cares about, given what `desired` sets at the same point (None:
/// nothing, the point is kept because the agent manages it).
pub(crate) fn project(live: &Value, desired: Option<&Value>, o: Owned, cx: Ctx) -> Value {
    if desired.is_none() && o.whole {
        return live.clone();
    }
    match (live, desired) {
        (Value::Object(l), None | Some(Value::Object(_))) => {
            project_map(l, desired.and_then(Value::as_object), o, cx)
        }
        (Value::Array(l), None | Some(Value::Array(_))) => {
            let d = desired
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice);
            let items = match_items(l, d, o, cx.extras)
                .into_iter()
                .filter_map(|p| {
                    let live_item = &l[p.live?];
                    let desired_item = p.desired.map(|i| &d[i]);
                    Some(project(
                        live_item,
                        desired_item,
                        o.below(&p.element),
                        cx.item(),
                    ))
                })
                .collect();
            Value::Array(items)
        }
        (_, Some(d)) if cx.formats => adopt_spelling(live, d),
        _ => live.clone(),
    }
}

fn project_map(l: &Map<String, Value>, d: Option<&Map<String, Value>>, o: Owned, cx: Ctx) -> Value {
    let mut out = Map::new();
    for (k, dv) in d.into_iter().flatten() {
        let pe = PathElement::Field(k.clone());
        match l.get(k) {
            Some(lv) => {
                out.insert(k.clone(), project(lv, Some(dv), o.below(&pe), cx.field(k)));
            }
            // The server omits empty maps and lists.
            None if is_empty_container(dv) => {
                out.insert(k.clone(), dv.clone());
            }
            None => {}
        }
    }
    // A non-empty map some manager owns as one field is atomic: applying replaces it, so every
    // live key counts. (An empty map is owned as one field for being empty: defaults may fill it.)
    let atomic = o.atomic && d.is_some_and(|d| !d.is_empty());
    for (k, lv) in l {
        if d.is_some_and(|d| d.contains_key(k)) {
            continue;
        }
        let pe = PathElement::Field(k.clone());
        if atomic {
            out.insert(k.clone(), lv.clone());
        } else if cx.extras && !o.whole && o.owns(&pe) {
            out.insert(k.clone(), project(lv, None, o.below(&pe), cx.field(k)));
        }
    }
    Value::Object(out)
}

/// `{}` or `[]`.
pub(crate) fn is_empty_container(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// A desired list item and the live item it is compared with, named as managedFields name it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ItemPair {
    pub element: PathElement,
    pub desired: Option<usize>,
    pub live: Option<usize>,
}

/// How list items are matched.
enum Matching {
    /// By these key fields (associative list).
    Key(Vec<String>),
    /// By value (set).
    Value,
    /// By position; `keep_rest`: unmatched live items stay even if no one says the agent owns
    /// them (a list of scalars nothing is recorded about: compared whole).
    Index { keep_rest: bool },
}

/// Pairs desired items with live items: every desired item in order (with its live match, if
/// any), then the unmatched live items the agent owns (when `extras`) or that belong to an
/// atomic list (always), in live order.
pub(crate) fn match_items(
    live: &[Value],
    desired: &[Value],
    o: Owned,
    extras: bool,
) -> Vec<ItemPair> {
    let matching = matching(live, desired, o);
    let element = |item: &Value, index: usize| match &matching {
        Matching::Key(names) => key_element(item, names).unwrap_or(PathElement::Index(index)),
        Matching::Value => PathElement::Value(item.clone()),
        Matching::Index { .. } => PathElement::Index(index),
    };
    let mut used = vec![false; live.len()];
    let mut out = Vec::new();
    for (i, d) in desired.iter().enumerate() {
        let found = match &matching {
            Matching::Key(names) => key_element(d, names).and_then(|k| {
                (0..live.len())
                    .find(|&j| !used[j] && key_element(&live[j], names) == Some(k.clone()))
            }),
            Matching::Value => (0..live.len()).find(|&j| !used[j] && values_equal(&live[j], d)),
            Matching::Index { .. } => (i < live.len()).then_some(i),
        };
        if let Some(j) = found {
            used[j] = true;
        }
        let element = match found {
            Some(j) if matches!(matching, Matching::Value) => element(&live[j], j),
            _ => element(d, i),
        };
        out.push(ItemPair {
            element,
            desired: Some(i),
            live: found,
        });
    }
    // An atomic list is one value: its extra items differ from what is desired.
    let atomic = o.atomic || matches!(matching, Matching::Index { keep_rest: true });
    if extras || atomic {
        for (j, item) in live.iter().enumerate().filter(|(j, _)| !used[*j]) {
            let element = element(item, j);
            if atomic || o.owns(&element) {
                out.push(ItemPair {
                    element,
                    desired: None,
                    live: Some(j),
                });
            }
        }
    }
    out
}

fn matching(live: &[Value], desired: &[Value], o: Owned) -> Matching {
    let mut recorded = o.recorded().peekable();
    if recorded.peek().is_some() {
        let mut by_value = false;
        for pe in recorded {
            match pe {
                PathElement::Key(fields) => {
                    return Matching::Key(fields.iter().map(|(n, _)| n.clone()).collect());
                }
                PathElement::Value(_) => by_value = true,
                _ => {}
            }
        }
        return if by_value {
            Matching::Value
        } else {
            Matching::Index { keep_rest: false }
        };
    }
    if o.atomic {
        return Matching::Index { keep_rest: false };
    }
    let items = if desired.is_empty() { live } else { desired };
    if !items.iter().any(Value::is_object) {
        return Matching::Index { keep_rest: true };
    }
    MERGE_KEYS
        .iter()
        .find(|key| unique_scalar_field(desired, key))
        .map(|key| Matching::Key(vec![key.to_string()]))
        .unwrap_or(Matching::Index { keep_rest: false })
}

/// Whether every item is a map with a scalar `key`, all values distinct.
fn unique_scalar_field(items: &[Value], key: &str) -> bool {
    let mut seen: Vec<&Value> = Vec::new();
    for item in items {
        match item.get(key) {
            Some(v) if !v.is_object() && !v.is_array() && !v.is_null() => {
                if seen.iter().any(|s| values_equal(s, v)) {
                    return false;
                }
                seen.push(v);
            }
            _ => return false,
        }
    }
    !items.is_empty()
}

/// The `k:` element naming `item` by `names` (sorted by name); a missing `protocol` is `"TCP"`,
/// as Kubernetes defaults it on every port list. None when the item sets none of them.
fn key_element(item: &Value, names: &[String]) -> Option<PathElement> {
    let obj = item.as_object()?;
    if !names.iter().any(|n| obj.contains_key(n)) {
        return None;
    }
    let mut fields: Vec<(String, Value)> = Vec::new();
    for name in names {
        match obj.get(name) {
            Some(v) => fields.push((name.clone(), v.clone())),
            None if name == "protocol" => fields.push((name.clone(), Value::from("TCP"))),
            None => {}
        }
    }
    fields.sort_by(|a, b| a.0.cmp(&b.0));
    Some(PathElement::Key(fields))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Projects `live` onto `desired` with `agent` owning `agent_fields` and, besides, other
    /// managers owning `other_fields`.
    fn proj(live: Value, desired: Value, agent_fields: Value, other_fields: Value) -> Value {
        let agent = FieldSet::from_fields_v1(&agent_fields).unwrap();
        let all = agent.union(&FieldSet::from_fields_v1(&other_fields).unwrap());
        project(
            &live,
            Some(&desired),
            Owned::root(&agent, &all),
            Ctx::root(&desired, true),
        )
    }

    #[test]
    fn set_lists_keep_desired_and_agent_values_only() {
        let live = json!({"metadata": {"finalizers": ["theirs", "gone", "kept"]}});
        let desired = json!({"metadata": {"finalizers": ["kept"]}});
        let out = proj(
            live,
            desired,
            json!({"f:metadata": {"f:finalizers": {"v:\"kept\"": {}, "v:\"gone\"": {}}}}),
            json!({"f:metadata": {"f:finalizers": {"v:\"theirs\"": {}}}}),
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["kept", "gone"]));
    }

    #[test]
    fn keyed_items_match_with_the_default_protocol_and_keep_desired_order() {
        let live = json!({"spec": {"ports": [
            {"port": 443, "protocol": "TCP", "targetPort": 8443, "name": "https"},
            {"port": 53, "protocol": "UDP", "targetPort": 53},
            {"port": 80, "protocol": "TCP", "targetPort": 8080, "nodePort": 30080}
        ]}});
        let desired = json!({"spec": {"ports": [{"port": 80, "targetPort": 8080},
                                                {"port": 443, "targetPort": 8443}]}});
        let key = |p: u16| format!("k:{{\"port\":{p},\"protocol\":\"TCP\"}}");
        let agent = json!({"f:spec": {"f:ports": {
            key(80): {".": {}, "f:port": {}, "f:targetPort": {}},
            key(443): {".": {}, "f:port": {}, "f:targetPort": {}, "f:name": {}}}}});
        let other =
            json!({"f:spec": {"f:ports": {"k:{\"port\":53,\"protocol\":\"UDP\"}": {".": {}}}}});
        let out = proj(live, desired, agent, other);
        assert_eq!(
            out["spec"]["ports"],
            json!([{"port": 80, "targetPort": 8080},
                   {"port": 443, "targetPort": 8443, "name": "https"}])
        );
    }

    #[test]
    fn atomic_lists_and_maps_owned_whole_count_whole() {
        let live =
            json!({"spec": {"args": ["a", "b", "c"], "hosts": [{"ip": "1", "x": 1}, {"ip": "2"}]}});
        let desired = json!({"spec": {"args": ["a"], "hosts": [{"ip": "1"}]}});
        let out = proj(
            live,
            desired,
            json!({"f:spec": {"f:args": {}, "f:hosts": {}}}),
            json!({}),
        );
        assert_eq!(out["spec"]["args"], json!(["a", "b", "c"]));
        assert_eq!(
            out["spec"]["hosts"],
            json!([{"ip": "1", "x": 1}, {"ip": "2"}])
        );
        // An atomic map counts whole; an empty map owned for being empty does not.
        let live =
            json!({"spec": {"selector": {"app": "a", "tier": "t"}, "ctx": {"runAsUser": 1}}});
        let desired = json!({"spec": {"selector": {"app": "a"}, "ctx": {}}});
        let out = proj(
            live.clone(),
            desired,
            json!({"f:spec": {"f:selector": {}, "f:ctx": {}}}),
            json!({}),
        );
        assert_eq!(out["spec"]["selector"], live["spec"]["selector"]);
        assert_eq!(out["spec"]["ctx"], json!({}));
    }

    #[test]
    fn merge_keys_without_managed_fields() {
        let live = json!({"spec": {
            "containers": [{"name": "injected", "image": "x"},
                           {"name": "app", "image": "a", "tty": false}],
            "volumes": [{"configMap": {"name": "a"}}, {"configMap": {"name": "b"}}]
        }});
        let desired = json!({"spec": {
            "containers": [{"name": "app", "image": "a"}],
            // No unique merge key: by position.
            "volumes": [{"configMap": {"name": "a"}}]
        }});
        let out = proj(live, desired.clone(), json!({}), json!({}));
        assert_eq!(out, desired);
        assert!(!unique_scalar_field(
            &[json!({"name": "a"}), json!({"name": "a"})],
            "name"
        ));
        assert!(!unique_scalar_field(&[], "name"));
    }

    #[test]
    fn desired_items_missing_live_leave_no_gap() {
        let live = json!({"spec": {"containers": [{"name": "b", "image": "b"}]}});
        let desired = json!({"spec": {"containers": [{"name": "a", "image": "a"},
                                                     {"name": "b", "image": "b"}]}});
        let out = proj(live.clone(), desired.clone(), json!({}), json!({}));
        assert_eq!(out, live);
        let pairs = match_items(
            live["spec"]["containers"].as_array().unwrap(),
            desired["spec"]["containers"].as_array().unwrap(),
            Owned::root(&FieldSet::new(), &FieldSet::new()).below(&PathElement::Field("x".into())),
            true,
        );
        assert_eq!(
            pairs.iter().map(|p| p.live).collect::<Vec<_>>(),
            vec![None, Some(0)]
        );
        assert_eq!(
            pairs[0].element,
            PathElement::Key(vec![("name".into(), json!("a"))])
        );
    }
}

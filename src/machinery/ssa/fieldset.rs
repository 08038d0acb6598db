//! Sets of fields, as `metadata.managedFields` records them.
//!
//! A [`FieldSet`] is a trie of [`PathElement`]s. Each node holds the elements that are members of
//! the set at that level and the children below it; an element can be both (a list item owned as
//! such and also its fields), which FieldsV1 writes as a `"."` entry. Set operations work per
//! node, exactly like structured-merge-diff's: `difference` removes exact members, not subtrees.

use super::path::{FieldPath, PathElement};
use super::schema::Schema;
use super::walk;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// A set of field paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, FieldSet>,
}

/// A FieldsV1 value that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldSetError {
    #[error("fieldsV1 at {at:?} is not a JSON object")]
    NotAnObject { at: String },
    #[error("fieldsV1 key {key:?} is not a path element (f:, k:, v:, i: or .)")]
    BadElement { key: String },
}

impl FieldSet {
    pub fn new() -> FieldSet {
        FieldSet::default()
    }

    /// Every field `obj` sets, by `schema`, leaving out what the server owns: `apiVersion`,
    /// `kind`, and `metadata.{name, namespace, uid, resourceVersion, generation,
    /// creationTimestamp, deletionTimestamp, deletionGracePeriodSeconds, managedFields,
    /// selfLink}`.
    pub fn from_object(obj: &Value, schema: &Schema) -> FieldSet {
        walk::raw_field_set(obj, schema).difference(&server_owned())
    }

    /// Decodes a FieldsV1 value (`{"f:spec":{"f:replicas":{}}}`).
    pub fn from_fields_v1(v: &Value) -> Result<FieldSet, FieldSetError> {
        let (set, _self_member) = decode_node(v, "")?;
        Ok(set)
    }

    /// Encodes as FieldsV1, exactly as Kubernetes does (keys in path-element order).
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.encode_node(false))
    }

    pub fn union(&self, o: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.members.extend(o.members.iter().cloned());
        for (pe, child) in &o.children {
            let merged = match out.children.get(pe) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.children.insert(pe.clone(), merged);
        }
        out
    }

    /// Members of `self` that are not members of `o` (per node; a member of `o` does not remove
    /// the paths below it).
    pub fn difference(&self, o: &FieldSet) -> FieldSet {
        let members = self.members.difference(&o.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            let d = match o.children.get(pe) {
                Some(other) => child.difference(other),
                None => child.clone(),
            };
            if !d.is_empty() {
                children.insert(pe.clone(), d);
            }
        }
        FieldSet { members, children }
    }

    pub fn intersection(&self, o: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&o.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if let Some(other) = o.children.get(pe) {
                let i = child.intersection(other);
                if !i.is_empty() {
                    children.insert(pe.clone(), i);
                }
            }
        }
        FieldSet { members, children }
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(FieldSet::is_empty)
    }

    /// The member paths that have no member below them, in document order.
    pub fn leaves(&self) -> Vec<FieldPath> {
        let mut out = Vec::new();
        self.collect_leaves(&mut Vec::new(), &mut out);
        out
    }

    /// Every member path: at each level the members first, then the paths below, as
    /// structured-merge-diff iterates them (the order of conflict messages).
    pub fn paths(&self) -> Vec<FieldPath> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    /// Adds one path.
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether `path` is a member.
    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    pub(crate) fn has_member(&self, pe: &PathElement) -> bool {
        self.members.contains(pe)
    }

    /// The set below `pe` (paths relative to it), if any.
    pub(crate) fn child(&self, pe: &PathElement) -> Option<&FieldSet> {
        self.children.get(pe)
    }

    pub(crate) fn members(&self) -> impl Iterator<Item = &PathElement> {
        self.members.iter()
    }

    pub(crate) fn children(&self) -> impl Iterator<Item = (&PathElement, &FieldSet)> {
        self.children.iter()
    }

    pub(crate) fn from_parts(
        members: BTreeSet<PathElement>,
        children: BTreeMap<PathElement, FieldSet>,
    ) -> FieldSet {
        FieldSet { members, children }
    }

    fn collect_leaves(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<FieldPath>) {
        for pe in self.ordered_elements() {
            prefix.push(pe.clone());
            match self.children.get(pe) {
                Some(child) if !child.is_empty() => child.collect_leaves(prefix, out),
                _ => out.push(FieldPath(prefix.clone())),
            }
            prefix.pop();
        }
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<FieldPath>) {
        for pe in &self.members {
            prefix.push(pe.clone());
            out.push(FieldPath(prefix.clone()));
            prefix.pop();
        }
        for (pe, child) in &self.children {
            prefix.push(pe.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// Members and children, merged in element order, each once.
    fn ordered_elements(&self) -> Vec<&PathElement> {
        let mut all: Vec<&PathElement> = self.members.iter().collect();
        all.extend(
            self.children
                .iter()
                .filter(|(pe, c)| !c.is_empty() && !self.members.contains(*pe))
                .map(|(pe, _)| pe),
        );
        all.sort();
        all
    }

    fn encode_node(&self, include_self: bool) -> Map<String, Value> {
        let mut out = Map::new();
        if include_self {
            out.insert(".".into(), Value::Object(Map::new()));
        }
        for pe in self.ordered_elements() {
            let value = match self.children.get(pe) {
                Some(child) if !child.is_empty() => child.encode_node(self.members.contains(pe)),
                _ => Map::new(),
            };
            out.insert(pe.to_fields_v1_key(), Value::Object(value));
        }
        out
    }
}

/// The fields the server owns, never recorded for a manager.
fn server_owned() -> FieldSet {
    let mut s = FieldSet::new();
    let f = |n: &str| PathElement::Field(n.to_string());
    s.insert(&[f("apiVersion")]);
    s.insert(&[f("kind")]);
    s.insert(&[f("metadata")]);
    for name in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    ] {
        s.insert(&[f("metadata"), f(name)]);
    }
    s
}

pub(crate) fn strip_server_owned(set: &FieldSet) -> FieldSet {
    set.difference(&server_owned())
}

/// Decodes one FieldsV1 node; also says whether it marks its own path as a member (`"."`).
fn decode_node(v: &Value, at: &str) -> Result<(FieldSet, bool), FieldSetError> {
    let obj = v
        .as_object()
        .ok_or_else(|| FieldSetError::NotAnObject { at: at.to_string() })?;
    let mut set = FieldSet::new();
    let mut self_member = false;
    for (key, child) in obj {
        if key == "." {
            self_member = true;
            continue;
        }
        let pe = parse_element(key)?;
        let (sub, member) = decode_node(child, key)?;
        let is_leaf = child.as_object().is_some_and(Map::is_empty);
        if member || is_leaf {
            set.members.insert(pe.clone());
        }
        if !sub.is_empty() {
            set.children.insert(pe, sub);
        }
    }
    Ok((set, self_member))
}

fn parse_element(key: &str) -> Result<PathElement, FieldSetError> {
    let bad = || FieldSetError::BadElement {
        key: key.to_string(),
    };
    let (kind, rest) = key.split_at_checked(2).ok_or_else(bad)?;
    match kind {
        "f:" => Ok(PathElement::Field(rest.to_string())),
        "v:" => serde_json::from_str(rest)
            .map(PathElement::Value)
            .map_err(|_| bad()),
        "k:" => {
            let v: Value = serde_json::from_str(rest).map_err(|_| bad())?;
            let Value::Object(m) = v else {
                return Err(bad());
            };
            let mut fields: Vec<(String, Value)> = m.into_iter().collect();
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(PathElement::Key(fields))
        }
        "i:" => rest.parse().map(PathElement::Index).map_err(|_| bad()),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(n: &str) -> PathElement {
        PathElement::Field(n.to_string())
    }

    #[test]
    fn fields_v1_round_trip_with_self_membership() {
        let v = json!({
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:ports": {
                "k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}, "f:targetPort": {}}
            }},
            "f:status": {"f:tags": {"v:\"a\"": {}, "i:0": {}}}
        });
        let set = FieldSet::from_fields_v1(&v).unwrap();
        let key = PathElement::Key(vec![
            ("port".into(), json!(80)),
            ("protocol".into(), json!("TCP")),
        ]);
        assert!(set.has(&[f("spec"), f("ports"), key.clone()]));
        assert!(set.has(&[f("spec"), f("ports"), key, f("targetPort")]));
        assert!(!set.has(&[f("spec")]));
        assert_eq!(set.to_fields_v1(), v);
        assert_eq!(
            serde_json::to_string(&set.to_fields_v1()).unwrap(),
            r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{},"f:targetPort":{}}}},"f:status":{"f:tags":{"v:\"a\"":{},"i:0":{}}}}"#
        );
    }

    #[test]
    fn key_fields_are_sorted_on_decode() {
        let set =
            FieldSet::from_fields_v1(&json!({"k:{\"protocol\":\"TCP\",\"port\":80}": {}})).unwrap();
        assert_eq!(
            serde_json::to_string(&set.to_fields_v1()).unwrap(),
            r#"{"k:{\"port\":80,\"protocol\":\"TCP\"}":{}}"#
        );
    }

    #[test]
    fn bad_fields_v1_is_an_error() {
        assert!(FieldSet::from_fields_v1(&json!({"x:y": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).is_err());
        assert!(FieldSet::from_fields_v1(&json!([])).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"k:[1]": {}})).is_err());
    }

    #[test]
    fn set_operations_per_node() {
        let mut a = FieldSet::new();
        a.insert(&[f("spec"), f("a")]);
        a.insert(&[f("spec"), f("b")]);
        a.insert(&[f("spec")]);
        let mut b = FieldSet::new();
        b.insert(&[f("spec"), f("b")]);
        b.insert(&[f("data")]);
        let d = a.difference(&b);
        assert!(d.has(&[f("spec"), f("a")]) && d.has(&[f("spec")]));
        assert!(!d.has(&[f("spec"), f("b")]));
        let i = a.intersection(&b);
        assert_eq!(i.paths().len(), 1);
        assert!(i.has(&[f("spec"), f("b")]));
        let u = a.union(&b);
        assert_eq!(u.paths().len(), 4);
        assert!(FieldSet::new().is_empty());
        assert!(a.difference(&a).is_empty());
        let leaves: Vec<String> = a.leaves().iter().map(|p| p.to_string()).collect();
        assert_eq!(leaves, vec![".spec.a", ".spec.b"]);
        let paths: Vec<String> = a.paths().iter().map(|p| p.to_string()).collect();
        assert_eq!(paths, vec![".spec", ".spec.a", ".spec.b"]);
    }
}

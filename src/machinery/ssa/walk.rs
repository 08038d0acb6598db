//! Schema-driven walks over JSON values: field sets, merge, comparison and removal.
//!
//! These follow structured-merge-diff's semantics: a map field is its own member only when it is
//! a free-form key or its value is null or `{}`; list items are members and so are their fields;
//! atomic maps and lists, scalars, and pairs of empty or null containers are leaves. Merging
//! keeps the live order of list items and inserts applied items where structured-merge-diff does.

use super::fieldset::FieldSet;
use super::path::{PathElement, values_equal};
use super::schema::{ANY, ListType, Schema};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// What a value is, given its schema.
enum Node<'s> {
    /// Owned as one field: scalar, atomic map or list, or a value of the wrong shape.
    Leaf,
    /// Null where a granular map or list is expected.
    Null,
    /// A granular map; children follow `Schema::field`.
    Map(&'s Schema),
    /// A granular list (set or associative).
    List(&'s Schema, &'s ListType),
}

fn classify<'s>(schema: &'s Schema, v: &Value) -> Node<'s> {
    match schema {
        Schema::Scalar | Schema::Map { atomic: true, .. } => Node::Leaf,
        Schema::Map { .. } => match v {
            Value::Object(_) => Node::Map(schema),
            Value::Null => Node::Null,
            _ => Node::Leaf,
        },
        Schema::List {
            list_type: ListType::Atomic,
            ..
        } => Node::Leaf,
        Schema::List { items, list_type } => match v {
            Value::Array(_) => Node::List(items, list_type),
            Value::Null => Node::Null,
            _ => Node::Leaf,
        },
        Schema::Any => match v {
            Value::Object(_) => Node::Map(&ANY),
            _ => Node::Leaf,
        },
    }
}

/// The path element naming `item` in a granular list. Associative-list keys are sorted by name;
/// a missing `protocol` key defaults to `"TCP"` as on every built-in port list; an item with no
/// key field at all is named by its value.
pub(crate) fn item_element(list_type: &ListType, item: &Value) -> PathElement {
    if let (ListType::Map(keys), Some(obj)) = (list_type, item.as_object()) {
        let mut fields: Vec<(String, Value)> = Vec::new();
        for key in keys {
            match obj.get(key) {
                Some(v) => fields.push((key.clone(), v.clone())),
                None if key == "protocol" => fields.push((key.clone(), Value::from("TCP"))),
                None => {}
            }
        }
        if !fields.is_empty() {
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            return PathElement::Key(fields);
        }
    }
    PathElement::Value(item.clone())
}

fn is_emptyish(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    }
}

/// Every field `obj` sets, server-owned fields included.
pub(crate) fn raw_field_set(obj: &Value, schema: &Schema) -> FieldSet {
    let mut out = FieldSet::new();
    to_set(obj, schema, &mut Vec::new(), &mut out);
    out
}

fn to_set(v: &Value, s: &Schema, path: &mut Vec<PathElement>, out: &mut FieldSet) {
    match classify(s, v) {
        Node::Leaf => out.insert(path),
        Node::Null => {}
        Node::Map(ms) => {
            for (k, child) in v.as_object().into_iter().flatten() {
                let (cs, declared) = ms.field(k);
                path.push(PathElement::Field(k.clone()));
                to_set(child, cs, path, out);
                let empty_map = child.as_object().is_some_and(Map::is_empty);
                if child.is_null() || empty_map || !declared {
                    out.insert(path);
                }
                path.pop();
            }
        }
        Node::List(items, lt) => {
            for item in v.as_array().into_iter().flatten() {
                path.push(item_element(lt, item));
                to_set(item, items, path, out);
                out.insert(path);
                path.pop();
            }
        }
    }
}

/// Merges `applied` into `live`: maps merge key by key, leaves and atomic values are replaced,
/// granular lists merge item by item.
pub(crate) fn merge(live: &Value, applied: &Value, s: &Schema) -> Value {
    let (kl, kr) = (classify(s, live), classify(s, applied));
    if matches!(kl, Node::Leaf)
        || matches!(kr, Node::Leaf)
        || (is_emptyish(Some(live)) && is_emptyish(Some(applied)))
    {
        return applied.clone();
    }
    match (kl, kr, live, applied) {
        (Node::Map(ms), Node::Map(_), Value::Object(lo), Value::Object(ro)) => {
            let mut out = Map::new();
            for (k, lv) in lo {
                let merged = match ro.get(k) {
                    Some(rv) => merge(lv, rv, ms.field(k).0),
                    None => lv.clone(),
                };
                out.insert(k.clone(), merged);
            }
            for (k, rv) in ro {
                if !lo.contains_key(k) {
                    out.insert(k.clone(), rv.clone());
                }
            }
            Value::Object(out)
        }
        (Node::List(items, lt), Node::List(..), Value::Array(la), Value::Array(ra)) => {
            Value::Array(merge_list(la, ra, items, lt))
        }
        (Node::Null, ..) => applied.clone(),
        _ => live.clone(),
    }
}

/// First occurrence of each element, in list order.
fn index_items<'v>(
    items: &'v [Value],
    lt: &ListType,
) -> (Vec<PathElement>, BTreeMap<PathElement, &'v Value>) {
    let mut order = Vec::new();
    let mut by_pe = BTreeMap::new();
    for item in items {
        let pe = item_element(lt, item);
        if !by_pe.contains_key(&pe) {
            by_pe.insert(pe.clone(), item);
            order.push(pe);
        }
    }
    (order, by_pe)
}

/// Live items stay where they are; applied items come in applied order, each shared item at the
/// point where the applied list places it relative to the other shared items.
fn merge_list(live: &[Value], applied: &[Value], items: &Schema, lt: &ListType) -> Vec<Value> {
    let live_pes: Vec<PathElement> = live.iter().map(|i| item_element(lt, i)).collect();
    let (rhs_order, rhs) = index_items(applied, lt);
    let (_, lhs) = index_items(live, lt);
    let shared: Vec<&PathElement> = rhs_order.iter().filter(|pe| lhs.contains_key(pe)).collect();
    let mut next_shared = 0;
    let mut emitted: BTreeSet<PathElement> = BTreeSet::new();
    let mut out = Vec::with_capacity(live.len().max(applied.len()));
    let (mut li, mut ri) = (0, 0);
    while li < live.len() || ri < rhs_order.len() {
        if li < live.len() {
            let pe = &live_pes[li];
            if !rhs.contains_key(pe) {
                out.push(live[li].clone());
                li += 1;
                continue;
            }
            if emitted.contains(pe) || shared.get(next_shared) != Some(&pe) {
                // Merged already, or shared but placed later by the applied list.
                li += 1;
                continue;
            }
        }
        if ri >= rhs_order.len() {
            li += 1;
            continue;
        }
        let pe = &rhs_order[ri];
        let merged = match lhs.get(pe) {
            Some(l) => merge(l, rhs[pe], items),
            None => rhs[pe].clone(),
        };
        out.push(merged);
        emitted.insert(pe.clone());
        if shared.get(next_shared) == Some(&pe) {
            next_shared += 1;
        }
        ri += 1;
    }
    out
}

/// Paths added, changed and removed between two versions of an object.
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

pub(crate) fn compare(old: &Value, new: &Value, s: &Schema) -> Comparison {
    let mut c = Comparison::default();
    compare_walk(Some(old), Some(new), s, &mut Vec::new(), &mut c);
    c
}

fn compare_walk(
    l: Option<&Value>,
    r: Option<&Value>,
    s: &Schema,
    path: &mut Vec<PathElement>,
    c: &mut Comparison,
) {
    let kl = l.map(|v| classify(s, v));
    let kr = r.map(|v| classify(s, v));
    let leaf = matches!(kl, Some(Node::Leaf))
        || matches!(kr, Some(Node::Leaf))
        || (is_emptyish(l) && is_emptyish(r));
    if leaf {
        match (l, r) {
            (None, Some(_)) => c.added.insert(path),
            (Some(_), None) => c.removed.insert(path),
            (Some(a), Some(b)) if !values_equal(a, b) => c.modified.insert(path),
            _ => {}
        }
        return;
    }
    let is_list = matches!(kl, Some(Node::List(..))) || matches!(kr, Some(Node::List(..)));
    if is_list {
        let lt = match (&kl, &kr) {
            (Some(Node::List(_, lt)), _) | (_, Some(Node::List(_, lt))) => *lt,
            _ => &ListType::Atomic,
        };
        let empty = Vec::new();
        let la = l.and_then(Value::as_array).unwrap_or(&empty);
        let ra = r.and_then(Value::as_array).unwrap_or(&empty);
        let (lorder, lidx) = index_items(la, lt);
        let (rorder, ridx) = index_items(ra, lt);
        for pe in &lorder {
            path.push(pe.clone());
            compare_walk(Some(lidx[pe]), ridx.get(pe).copied(), s.items(), path, c);
            path.pop();
        }
        for pe in rorder.iter().filter(|pe| !lidx.contains_key(pe)) {
            path.push(pe.clone());
            compare_walk(None, Some(ridx[pe]), s.items(), path, c);
            path.pop();
        }
    } else {
        let empty = Map::new();
        let lo = l.and_then(Value::as_object).unwrap_or(&empty);
        let ro = r.and_then(Value::as_object).unwrap_or(&empty);
        for (k, lv) in lo {
            path.push(PathElement::Field(k.clone()));
            compare_walk(Some(lv), ro.get(k), s.field(k).0, path, c);
            path.pop();
        }
        for (k, rv) in ro.iter().filter(|(k, _)| !lo.contains_key(*k)) {
            path.push(PathElement::Field(k.clone()));
            compare_walk(None, Some(rv), s.field(k).0, path, c);
            path.pop();
        }
    }
    match (l, r) {
        (None, Some(_)) => c.added.insert(path),
        (Some(_), None) => c.removed.insert(path),
        _ => {}
    }
}

/// `v` without the members of `set` (each with everything below it). A map or list emptied by
/// the removal goes too (`None`).
pub(crate) fn remove_items(v: &Value, set: &FieldSet, s: &Schema) -> Option<Value> {
    match (classify(s, v), v) {
        (Node::Map(ms), Value::Object(obj)) if !obj.is_empty() => {
            let mut out = Map::new();
            for (k, child) in obj {
                let pe = PathElement::Field(k.clone());
                if set.has_member(&pe) {
                    continue;
                }
                let kept = match set.child(&pe) {
                    Some(sub) => remove_items(child, sub, ms.field(k).0),
                    None => Some(child.clone()),
                };
                if let Some(kept) = kept {
                    out.insert(k.clone(), kept);
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        (Node::List(items, lt), Value::Array(arr)) if !arr.is_empty() => {
            let mut out = Vec::new();
            for item in arr {
                let pe = item_element(lt, item);
                if set.has_member(&pe) {
                    continue;
                }
                let kept = match set.child(&pe) {
                    Some(sub) => remove_items(item, sub, items),
                    None => Some(item.clone()),
                };
                out.extend(kept);
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        _ => Some(v.clone()),
    }
}

/// `set` plus every declared field (struct member) that has something below it in `set`: owning
/// `.spec.a` then also means owning `.spec` when `spec` is a declared field, but not `.data` for
/// owning `.data.key` (a free-form key).
pub(crate) fn ensure_named_fields_are_members(set: &FieldSet, s: &Schema) -> FieldSet {
    let mut members: BTreeSet<PathElement> = set.members().cloned().collect();
    let mut children = BTreeMap::new();
    for (pe, child) in set.children() {
        let cs = match pe {
            PathElement::Field(name) => {
                let (cs, declared) = s.field(name);
                if declared {
                    members.insert(pe.clone());
                }
                cs
            }
            _ => s.items(),
        };
        children.insert(pe.clone(), ensure_named_fields_are_members(child, cs));
    }
    FieldSet::from_parts(members, children)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn paths(set: &FieldSet) -> Vec<String> {
        set.paths().iter().map(|p| p.to_string()).collect()
    }

    fn crd_schema() -> Schema {
        Schema::from_openapi_v3(&json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {
                    "args": {"type": "array", "items": {"type": "string"}},
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "items": {"type": "array", "x-kubernetes-list-type": "map",
                              "x-kubernetes-list-map-keys": ["name"],
                              "items": {"type": "object", "properties": {
                                  "name": {"type": "string"}, "v": {"type": "integer"}}}},
                    "opts": {"type": "object", "properties": {"a": {"type": "string"}}},
                    "free": {"type": "object", "additionalProperties": {"type": "object",
                             "properties": {"x": {"type": "string"}}}}
                }}
            }
        }))
    }

    #[test]
    fn field_set_membership_rules() {
        let s = crd_schema();
        let obj = json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "labels": {"app": "x"}},
            "spec": {
                "args": ["a", "b"],
                "tags": ["t1"],
                "items": [{"name": "one", "v": 1}],
                "opts": {},
                "free": {"k": {"x": "y"}}
            }
        });
        let set = FieldSet::from_object(&obj, &s);
        assert_eq!(
            paths(&set),
            vec![
                ".metadata.labels.app",
                ".spec.args",
                ".spec.opts",
                ".spec.free.k",
                ".spec.free.k.x",
                r#".spec.items[name="one"]"#,
                r#".spec.items[name="one"].name"#,
                r#".spec.items[name="one"].v"#,
                r#".spec.tags[="t1"]"#,
            ]
        );
    }

    #[test]
    fn list_merge_keeps_live_order_and_places_new_items() {
        let lt = ListType::Map(vec!["name".into()]);
        let item = |n: &str| json!({"name": n});
        let live = vec![item("a"), item("b"), item("c")];
        let applied = vec![item("c"), item("a")];
        let out = merge_list(&live, &applied, &Schema::Any, &lt);
        assert_eq!(out, vec![item("b"), item("c"), item("a")]);
        let applied = vec![item("a"), item("x"), item("c")];
        let out = merge_list(&live, &applied, &Schema::Any, &lt);
        assert_eq!(out, vec![item("a"), item("b"), item("x"), item("c")]);
        let out = merge_list(&[], &applied, &Schema::Any, &lt);
        assert_eq!(out, applied);
    }

    #[test]
    fn compare_finds_added_modified_removed() {
        let s = crd_schema();
        let old = json!({"spec": {"args": ["a"], "items": [{"name": "one", "v": 1}], "opts": {"a": "1"}}});
        let new =
            json!({"spec": {"args": ["b"], "items": [{"name": "two", "v": 2}], "tags": ["t"]}});
        let c = compare(&old, &new, &s);
        assert_eq!(paths(&c.modified), vec![".spec.args"]);
        assert_eq!(
            paths(&c.added),
            vec![
                ".spec.tags",
                r#".spec.items[name="two"]"#,
                r#".spec.items[name="two"].name"#,
                r#".spec.items[name="two"].v"#,
                r#".spec.tags[="t"]"#,
            ]
        );
        assert_eq!(
            paths(&c.removed),
            vec![
                ".spec.opts",
                r#".spec.items[name="one"]"#,
                r#".spec.items[name="one"].name"#,
                r#".spec.items[name="one"].v"#,
                ".spec.opts.a",
            ]
        );
    }

    #[test]
    fn remove_items_drops_emptied_containers() {
        let s = crd_schema();
        let v = json!({"spec": {"items": [{"name": "one"}], "opts": {"a": "1"}, "args": ["x"]}});
        let mut set = FieldSet::new();
        let f = |n: &str| PathElement::Field(n.into());
        set.insert(&[
            f("spec"),
            f("items"),
            PathElement::Key(vec![("name".into(), json!("one"))]),
        ]);
        set.insert(&[f("spec"), f("opts"), f("a")]);
        assert_eq!(
            remove_items(&v, &set, &s),
            Some(json!({"spec": {"args": ["x"]}}))
        );
    }
}

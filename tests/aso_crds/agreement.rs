//! The project's ASO CRDs against ASO's: for every field the project declares (what it reads and
//! types) and every field it writes (found in the objects it makes), the same type, the same
//! list/map shape, at least ASO's required fields, and ASO's value rules (enum, pattern, lengths,
//! bounds, format); served only at versions ASO serves. The project's CRDs may keep unknown fields
//! elsewhere (they stay smaller than ASO's), but accept nothing ASO refuses in the fields used.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// One step of a field path, as ASO's schema reads it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Field(String),
    /// An item of a list.
    Item,
    /// A value of a map (`additionalProperties`).
    Value,
}

fn show(path: &[Step]) -> String {
    let mut out = String::new();
    for s in path {
        match s {
            Step::Field(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Step::Item => out.push_str("[]"),
            Step::Value => out.push_str(".*"),
        }
    }
    out
}

/// (group, kind, version).
type Gkv = (String, String, String);

/// The field paths of the objects the project makes, by group, kind and version.
#[derive(Default)]
pub struct Used {
    paths: BTreeMap<Gkv, BTreeSet<Vec<Step>>>,
    objects: Vec<Value>,
}

impl Used {
    /// Records the fields of `obj` (an ASO object); their paths are read along ASO's schema once
    /// it is known ([`disagreements`]).
    pub fn add(&mut self, obj: &Value) {
        self.objects.push(obj.clone());
    }

    fn resolve(&mut self, reference: &BTreeMap<Gkv, Value>) {
        for obj in std::mem::take(&mut self.objects) {
            let api = obj["apiVersion"].as_str().unwrap_or_default();
            let (group, version) = api.rsplit_once('/').unwrap_or(("", api));
            let kind = obj["kind"].as_str().unwrap_or_default();
            let key = (group.to_string(), kind.to_string(), version.to_string());
            let Some(schema) = reference.get(&key) else {
                continue;
            };
            let set = self.paths.entry(key).or_default();
            let Some(map) = obj.as_object() else { continue };
            for (k, v) in map {
                if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                if let Some(child) = schema.pointer(&format!("/properties/{k}")) {
                    walk(v, child, vec![Step::Field(k.clone())], set);
                }
            }
        }
    }
}

/// Records the path of `v` and of everything under it that `schema` (ASO's) declares.
fn walk(v: &Value, schema: &Value, path: Vec<Step>, set: &mut BTreeSet<Vec<Step>>) {
    set.insert(path.clone());
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let mut next = path.clone();
                if let Some(s) = schema.pointer(&format!("/properties/{}", escape(k))) {
                    next.push(Step::Field(k.clone()));
                    walk(child, s, next, set);
                } else if let Some(s) = schema.get("additionalProperties").filter(|s| s.is_object())
                {
                    next.push(Step::Value);
                    walk(child, s, next, set);
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for it in items {
                    let mut next = path.clone();
                    next.push(Step::Item);
                    walk(it, s, next, set);
                }
            }
        }
        _ => {}
    }
}

fn escape(k: &str) -> String {
    k.replace('~', "~0").replace('/', "~1")
}

/// The versions served, by group and kind.
type Served = BTreeMap<(String, String), Vec<String>>;

/// Every version's `openAPIV3Schema` of every CRD, by group, kind and version; and the versions
/// served, by group and kind.
fn schemas(crds: &[Value]) -> (BTreeMap<Gkv, Value>, Served) {
    let mut out = BTreeMap::new();
    let mut served = BTreeMap::new();
    for crd in crds {
        let s = |p: &str| {
            crd.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let (group, kind) = (s("/spec/group"), s("/spec/names/kind"));
        for v in crd["spec"]["versions"].as_array().into_iter().flatten() {
            let name = v["name"].as_str().unwrap_or("").to_string();
            if v["served"] == true {
                served
                    .entry((group.clone(), kind.clone()))
                    .or_insert_with(Vec::new)
                    .push(name.clone());
            }
            if let Some(schema) = v.pointer("/schema/openAPIV3Schema") {
                out.insert((group.clone(), kind.clone(), name), schema.clone());
            }
        }
    }
    (out, served)
}

/// What differs between the `project`'s CRDs and ASO's (`reference`) for the fields `used` and the
/// fields the project declares, one line each naming the kind, the version and the field.
pub fn disagreements(project: &[Value], reference: &[Value], used: &Used) -> Vec<String> {
    let (aso, aso_served) = schemas(reference);
    let (ours, our_served) = schemas(project);
    let mut used_paths = Used {
        paths: used.paths.clone(),
        objects: used.objects.clone(),
    };
    used_paths.resolve(&aso);
    let mut out = Vec::new();
    for ((group, kind), versions) in &our_served {
        let Some(theirs) = aso_served.get(&(group.clone(), kind.clone())) else {
            out.push(format!("{kind} ({group}): ASO has no such kind"));
            continue;
        };
        for version in versions {
            let at = format!("{kind} {version}");
            if !theirs.contains(version) {
                out.push(format!(
                    "{at}: served, but ASO does not serve it (ASO serves {})",
                    theirs.join(", ")
                ));
                continue;
            }
            let key = (group.clone(), kind.clone(), version.clone());
            let (Some(mine), Some(asos)) = (ours.get(&key), aso.get(&key)) else {
                continue;
            };
            let mut found = Vec::new();
            for field in ["spec", "status"] {
                if let (Some(m), Some(a)) = (
                    mine.pointer(&format!("/properties/{field}")),
                    asos.pointer(&format!("/properties/{field}")),
                ) {
                    compare(m, a, &[Step::Field(field.into())], &mut found);
                } else if mine.pointer(&format!("/properties/{field}")).is_some() {
                    found.push(format!("{field}: declared, but ASO has no such field"));
                }
            }
            for path in used_paths.paths.get(&key).into_iter().flatten() {
                if !declared(mine, path) {
                    found.push(format!("{}: used but not declared", show(path)));
                }
            }
            out.extend(found.into_iter().map(|f| format!("{at}: {f}")));
        }
    }
    out
}

/// Whether `schema` (the project's) declares `path`: every step a declared field, list item or
/// map value.
fn declared(schema: &Value, path: &[Step]) -> bool {
    let mut node = schema;
    for step in path {
        let next = match step {
            Step::Field(k) => node.pointer(&format!("/properties/{}", escape(k))),
            Step::Item => node.get("items"),
            Step::Value => node.get("additionalProperties").filter(|s| s.is_object()),
        };
        match next {
            Some(n) => node = n,
            None => return false,
        }
    }
    true
}

/// The rules of a node that must be ASO's: (keyword, value).
const RULES: [&str; 10] = [
    "pattern",
    "maxLength",
    "minLength",
    "maximum",
    "minimum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "format",
    "maxItems",
    "minItems",
];

/// Compares the project's node `mine` with ASO's `asos` at `path`, and what `mine` declares
/// under it.
fn compare(mine: &Value, asos: &Value, path: &[Step], found: &mut Vec<String>) {
    let here = show(path);
    let ty = |n: &Value| {
        n.get("type")
            .and_then(Value::as_str)
            .unwrap_or("(none)")
            .to_string()
    };
    if ty(mine) != ty(asos) {
        found.push(format!("{here}: type {}, ASO's {}", ty(mine), ty(asos)));
        return;
    }
    for rule in RULES {
        if let Some(a) = asos.get(rule)
            && mine.get(rule) != Some(a)
        {
            found.push(format!(
                "{here}: {rule} {}, ASO's {a}",
                mine.get(rule)
                    .map_or("(none)".to_string(), Value::to_string)
            ));
        }
    }
    if let Some(Value::Array(allowed)) = asos.get("enum") {
        match mine.get("enum") {
            Some(Value::Array(ours)) if ours.iter().all(|v| allowed.contains(v)) => {}
            other => found.push(format!(
                "{here}: enum {}, ASO's {}",
                other.map_or("(none)".to_string(), Value::to_string),
                Value::Array(allowed.clone())
            )),
        }
    }
    let strings = |n: &Value, k: &str| -> BTreeSet<String> {
        n.get(k)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    let ours_required = strings(mine, "required");
    for r in strings(asos, "required").difference(&ours_required) {
        found.push(format!("{here}: does not require {r}, ASO does"));
    }
    for r in ours_required.difference(&strings(asos, "required")) {
        found.push(format!("{here}: requires {r}, ASO does not"));
    }
    for k in ["x-kubernetes-list-type", "x-kubernetes-list-map-keys"] {
        if asos.get(k).is_some() && mine.get(k) != asos.get(k) {
            found.push(format!(
                "{here}: {k} {:?}, ASO's {:?}",
                mine.get(k),
                asos.get(k)
            ));
        }
    }
    if let Some(props) = mine.get("properties").and_then(Value::as_object) {
        for (k, m) in props {
            let mut next = path.to_vec();
            next.push(Step::Field(k.clone()));
            match asos.pointer(&format!("/properties/{}", escape(k))) {
                Some(a) => compare(m, a, &next, found),
                None if asos["x-kubernetes-preserve-unknown-fields"] == true => {}
                None => found.push(format!(
                    "{}: declared, but ASO has no such field",
                    show(&next)
                )),
            }
        }
    }
    if let Some(m) = mine.get("additionalProperties").filter(|s| s.is_object()) {
        let mut next = path.to_vec();
        next.push(Step::Value);
        match asos.get("additionalProperties").filter(|s| s.is_object()) {
            Some(a) => compare(m, a, &next, found),
            None => found.push(format!("{here}: a map, ASO's is not")),
        }
    }
    if let (Some(m), Some(a)) = (mine.get("items"), asos.get("items")) {
        let mut next = path.to_vec();
        next.push(Step::Item);
        compare(m, a, &next, found);
    }
}

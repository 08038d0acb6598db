//! `replacements`: copy a field of one object into fields of others.
//!
//! Each replacement (inline, or from a file listing them) has a `source` (an object chosen by group,
//! version, kind, name and namespace, matched against its current or any previous identity, exactly one;
//! a `fieldPath`, `metadata.name` by default; `options.delimiter`/`index` to take one part of the value)
//! and `targets`, each with `select` (and `reject`) selectors (with label and annotation selectors too),
//! `fieldPaths` (dotted; `[key=value]` picks list elements, `*` every element, a number one element), and
//! `options` (`create` missing fields, `delimiter`/`index` to replace one part of the target value). A
//! target scalar keeps its type when it can (`replicas: 1` stays a number).

use super::Renderer;
use super::error::RenderError;
use super::kustomization::{Selector, selector};
use super::resid::{GvkSelector, ResId};
use super::resources::{ResMap, Resource};
use super::selector::Matcher;
use super::target::{Target, build_error};
use serde_json::{Map, Value};

/// Applies the kustomization's `replacements`, in order.
pub fn apply_all(r: &Renderer, t: &Target, resources: &mut ResMap) -> Result<(), RenderError> {
    apply_entries(r, t, resources, &t.k.replacements, "replacements")
}

/// Applies replacement entries (each a replacement, or `path` to a file of them); `field` names the list
/// in errors.
pub fn apply_entries(
    r: &Renderer,
    t: &Target,
    resources: &mut ResMap,
    entries: &[Value],
    field: &str,
) -> Result<(), RenderError> {
    for (i, entry) in entries.iter().enumerate() {
        let what = format!("{field} entry {}", i + 1);
        let path = entry.get("path").and_then(Value::as_str);
        let list: Vec<(Value, String)> = match path {
            Some(path) if entry.as_object().is_some_and(|m| m.len() == 1) => {
                let (_, text, shown) = r.read_in(t.dir, t.file, path)?;
                let docs = crate::yaml::from_multi_str(&text)
                    .map_err(|e| super::documents::yaml_error(&shown, e, 1))?;
                let mut items = Vec::new();
                for doc in docs {
                    match doc {
                        Value::Array(list) => items.extend(list),
                        other => items.push(other),
                    }
                }
                items
                    .into_iter()
                    .enumerate()
                    .map(|(j, v)| (v, format!("{what} ({} item {})", shown.display(), j + 1)))
                    .collect()
            }
            _ => vec![(entry.clone(), what)],
        };
        for (replacement, what) in list {
            apply(resources, &replacement)
                .map_err(|p| build_error(t.file, format!("{what}: {p}")))?;
        }
    }
    Ok(())
}

/// Applies one replacement.
pub fn apply(resources: &mut ResMap, replacement: &Value) -> Result<(), String> {
    let map = replacement
        .as_object()
        .ok_or_else(|| "a replacement must be a mapping".to_string())?;
    if let Some(k) = map
        .keys()
        .find(|k| !matches!(k.as_str(), "source" | "targets"))
    {
        return Err(format!("unknown replacement field `{k}`"));
    }
    let source = map
        .get("source")
        .and_then(Value::as_object)
        .ok_or_else(|| "a replacement needs a `source`".to_string())?;
    let value = source_value(resources.resources(), source)?;
    let targets = match map.get("targets") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(t)) => t,
        Some(_) => return Err("`targets` must be a list".into()),
    };
    for target in targets {
        apply_target(resources, &value, target)?;
    }
    Ok(())
}

/// A selector's identity part (group, version, kind, name, namespace) from a mapping.
fn id_selector(map: &Map<String, Value>) -> Result<ResId, String> {
    let get = |k: &str| -> Result<String, String> {
        match map.get(k) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(format!("`{k}` must be a string")),
        }
    };
    let gvk = GvkSelector::new(&get("group")?, &get("version")?, &get("kind")?);
    Ok(ResId {
        gvk: super::resid::Gvk {
            group: gvk.group,
            version: gvk.version,
            kind: gvk.kind,
        },
        name: get("name")?,
        namespace: get("namespace")?,
    })
}

/// kustomize's `IsSelectedBy`: every non-empty part of `sel` matches `id`.
fn selected_by(id: &ResId, sel: &ResId) -> bool {
    (sel.name.is_empty() || sel.name == id.name)
        && (sel.namespace.is_empty() || sel.effective_namespace() == id.effective_namespace())
        && id.gvk.selected_by(&GvkSelector::new(
            &sel.gvk.group,
            &sel.gvk.version,
            &sel.gvk.kind,
        ))
}

fn all_ids(res: &Resource) -> Vec<ResId> {
    let mut ids = vec![res.cur_id()];
    ids.extend(res.prev_ids());
    ids
}

fn source_value(list: &[Resource], source: &Map<String, Value>) -> Result<Value, String> {
    for k in source.keys() {
        if !matches!(
            k.as_str(),
            "group" | "version" | "kind" | "name" | "namespace" | "fieldPath" | "options"
        ) {
            return Err(format!("unknown source field `{k}`"));
        }
    }
    let sel = id_selector(source)?;
    let found: Vec<&Resource> = list
        .iter()
        .filter(|r| all_ids(r).iter().any(|id| selected_by(id, &sel)))
        .collect();
    let res = match found.as_slice() {
        [one] => *one,
        [] => return Err(format!("nothing selected by source {}", describe(&sel))),
        _ => {
            return Err(format!(
                "several objects selected by source {}",
                describe(&sel)
            ));
        }
    };
    let path = source
        .get("fieldPath")
        .and_then(Value::as_str)
        .unwrap_or("metadata.name");
    let parts = split_path(path);
    let mut found = Vec::new();
    let mut obj = res.object().clone();
    visit(&mut obj, &parts, false, &mut |v| {
        found.push(v.clone());
        Ok(())
    })?;
    let value = match found.as_slice() {
        [one] if !is_empty(one) => one.clone(),
        _ => {
            return Err(format!(
                "fieldPath `{path}` is missing in replacement source {}",
                res.cur_id()
            ));
        }
    };
    let options = options(source.get("options"))?;
    match options.delimiter {
        Some(delim) => {
            let text = scalar_text(&value)
                .ok_or("delimiter option can only be used with scalar values")?;
            let parts: Vec<&str> = text.split(delim.as_str()).collect();
            let part = usize::try_from(options.index)
                .ok()
                .and_then(|i| parts.get(i))
                .ok_or_else(|| {
                    format!(
                        "options.index {} is out of bounds for the source value",
                        options.index
                    )
                })?;
            Ok(Value::String(part.to_string()))
        }
        None => Ok(value),
    }
}

fn describe(sel: &ResId) -> String {
    let mut parts = Vec::new();
    for (k, v) in [
        ("group", &sel.gvk.group),
        ("version", &sel.gvk.version),
        ("kind", &sel.gvk.kind),
        ("name", &sel.name),
        ("namespace", &sel.namespace),
    ] {
        if !v.is_empty() {
            parts.push(format!("{k} {v}"));
        }
    }
    parts.join(", ")
}

struct Options {
    delimiter: Option<String>,
    index: i64,
    create: bool,
}

fn options(v: Option<&Value>) -> Result<Options, String> {
    let mut o = Options {
        delimiter: None,
        index: 0,
        create: false,
    };
    let Some(map) = v.and_then(Value::as_object) else {
        return Ok(o);
    };
    for (k, v) in map {
        match (k.as_str(), v) {
            ("delimiter", Value::String(s)) if !s.is_empty() => o.delimiter = Some(s.clone()),
            ("delimiter", _) => {}
            ("index", Value::Number(n)) => o.index = n.as_i64().unwrap_or(0),
            ("create", Value::Bool(b)) => o.create = *b,
            (other, _) => return Err(format!("option `{other}` is unknown or mistyped")),
        }
    }
    Ok(o)
}

fn apply_target(resources: &mut ResMap, value: &Value, target: &Value) -> Result<(), String> {
    let map = target
        .as_object()
        .ok_or_else(|| "a target must be a mapping".to_string())?;
    let select = map
        .get("select")
        .ok_or_else(|| "a target must specify resources to `select`".to_string())?;
    let select_sel = selector(select).map_err(|e| format!("`select` {e}"))?;
    let rejects: Vec<Selector> = match map.get("reject") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| selector(v).map_err(|e| format!("`reject` {e}")))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("`reject` must be a list".into()),
    };
    let field_paths: Vec<String> = match map.get("fieldPaths") {
        None | Some(Value::Null) => vec!["metadata.name".into()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or("`fieldPaths` must hold strings")
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("`fieldPaths` must be a list".into()),
    };
    let options = options(map.get("options"))?;
    let wanted = select_id(&select_sel);
    let labels = Matcher::new(&Selector {
        label_selector: select_sel.label_selector.clone(),
        annotation_selector: select_sel.annotation_selector.clone(),
        ..Default::default()
    })?;
    let reject_ids: Vec<(ResId, Matcher)> = rejects
        .iter()
        .map(|r| {
            Ok((
                select_id(r),
                Matcher::new(&Selector {
                    label_selector: r.label_selector.clone(),
                    annotation_selector: r.annotation_selector.clone(),
                    ..Default::default()
                })?,
            ))
        })
        .collect::<Result<_, String>>()?;
    for res in resources.resources_mut() {
        if !labels.matches(res) {
            continue;
        }
        let ids = all_ids(res);
        if !ids.iter().any(|id| selected_by(id, &wanted)) {
            continue;
        }
        let rejected = reject_ids.iter().any(|(rid, m)| {
            let by_id = rid.name.is_empty()
                && rid.namespace.is_empty()
                && rid.gvk == super::resid::Gvk::default()
                || ids.iter().any(|id| selected_by(id, rid));
            by_id && m.matches(res)
        });
        if rejected {
            continue;
        }
        let id = res.cur_id();
        for path in &field_paths {
            let parts = split_path(path);
            let found = visit(res.object_mut(), &parts, options.create, &mut |field| {
                set_value(field, value, &options)
            })
            .map_err(|e| format!("{id}: field {path}: {e}"))?;
            if found == 0 {
                return Err(format!(
                    "unable to {} field {path:?} in replacement target {id}",
                    if options.create {
                        "find or create"
                    } else {
                        "find"
                    }
                ));
            }
        }
    }
    Ok(())
}

fn select_id(s: &Selector) -> ResId {
    ResId {
        gvk: super::resid::Gvk {
            group: s.group.clone(),
            version: s.version.clone(),
            kind: s.kind.clone(),
        },
        name: s.name.clone(),
        namespace: s.namespace.clone(),
    }
}

fn set_value(field: &mut Value, value: &Value, options: &Options) -> Result<(), String> {
    let mut value = value.clone();
    if let Some(delim) = &options.delimiter {
        let current =
            scalar_text(field).ok_or("delimiter option can only be used with scalar values")?;
        let v = scalar_text(&value).unwrap_or_default();
        let mut parts: Vec<String> = current.split(delim.as_str()).map(str::to_string).collect();
        if options.index < 0 {
            parts.insert(0, v);
        } else if options.index as usize >= parts.len() {
            parts.push(v);
        } else {
            parts[options.index as usize] = v;
        }
        value = Value::String(parts.join(delim));
    }
    *field = match (&*field, &value) {
        (Value::Object(_) | Value::Array(_) | Value::Null, _) => value,
        (_, Value::Object(_) | Value::Array(_)) => value,
        (Value::String(_), v) => Value::String(scalar_text(v).unwrap_or_default()),
        (Value::Number(_), v) => {
            let text = scalar_text(v).unwrap_or_default();
            serde_json::from_str::<serde_json::Number>(&text)
                .map(Value::Number)
                .unwrap_or(Value::String(text))
        }
        (Value::Bool(_), v) => {
            let text = scalar_text(v).unwrap_or_default();
            match text.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => Value::String(text),
            }
        }
    };
    Ok(())
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some(String::new()),
        _ => None,
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::String(_) | Value::Number(_) | Value::Bool(_) => false,
    }
}

/// Splits a field path at dots outside brackets.
pub fn split_path(path: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut depth = 0;
    for c in path.chars() {
        match c {
            '[' => {
                depth += 1;
                current.push(c);
            }
            ']' => {
                depth -= 1;
                current.push(c);
            }
            '.' if depth == 0 => parts.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    parts.push(current);
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

/// Calls `f` on every node a path designates, creating missing ones when asked; returns how many.
fn visit(
    v: &mut Value,
    parts: &[String],
    create: bool,
    f: &mut dyn FnMut(&mut Value) -> Result<(), String>,
) -> Result<usize, String> {
    let Some((first, rest)) = parts.split_first() else {
        f(v)?;
        return Ok(1);
    };
    let first = first.as_str();
    if let Some(sel) = first.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        let (key, want) = sel
            .split_once('=')
            .ok_or_else(|| format!("`{first}` must have the form [key=value]"))?;
        if v.is_null() && create {
            *v = Value::Array(Vec::new());
        }
        let Value::Array(items) = v else {
            return Ok(0);
        };
        let mut count = 0;
        let mut matched = false;
        for item in items.iter_mut() {
            if want == "*" || item.get(key).and_then(scalar_text_ref).as_deref() == Some(want) {
                matched = true;
                count += visit(item, rest, create, f)?;
            }
        }
        if !matched && create && want != "*" {
            let mut element = Map::new();
            element.insert(key.to_string(), Value::String(want.to_string()));
            items.push(Value::Object(element));
            let last = items.last_mut().expect("just pushed");
            count += visit(last, rest, create, f)?;
        }
        return Ok(count);
    }
    match v {
        Value::Array(items) => {
            let mut count = 0;
            if first == "*" {
                for item in items.iter_mut() {
                    count += visit(item, rest, create, f)?;
                }
            } else if let Ok(i) = first.parse::<usize>()
                && let Some(item) = items.get_mut(i)
            {
                count += visit(item, rest, create, f)?;
            }
            Ok(count)
        }
        Value::Object(map) => {
            if first == "*" {
                let mut count = 0;
                for child in map.values_mut() {
                    count += visit(child, rest, create, f)?;
                }
                return Ok(count);
            }
            if !map.contains_key(first) {
                if !create {
                    return Ok(0);
                }
                let fresh = if rest.first().is_some_and(|r| r.starts_with('[')) {
                    Value::Array(Vec::new())
                } else if rest.is_empty() {
                    Value::Null
                } else {
                    Value::Object(Map::new())
                };
                map.insert(first.to_string(), fresh);
            }
            let child = map.get_mut(first).expect("present");
            visit(child, rest, create, f)
        }
        Value::Null if create => {
            *v = Value::Object(Map::new());
            visit(v, parts, create, f)
        }
        _ => Ok(0),
    }
}

fn scalar_text_ref(v: &Value) -> Option<String> {
    scalar_text(v)
}

#[cfg(test)]
#[path = "replacements_tests.rs"]
mod tests;

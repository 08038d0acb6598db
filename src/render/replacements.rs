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
use super::fieldpath::{Found, NodeKind, node_mut, write_value};
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
    let parts = super::fieldpath::parse(path);
    let found = super::fieldpath::get(res.object(), &parts)
        .map_err(|e| format!("{}: fieldPath `{path}`: {e}", res.cur_id()))?;
    let value = match found {
        Some(one) if !is_empty(one) => one.clone(),
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
            let parts = super::fieldpath::parse(path);
            let create = options.create.then(|| NodeKind::of(value));
            let obj = res.object_mut();
            let found = super::fieldpath::find(obj, &parts, create)
                .map_err(|e| format!("{id}: field {path}: {e}"))?;
            if found.is_empty() {
                return Err(format!(
                    "unable to {} field {path:?} in replacement target {id}",
                    if options.create {
                        "find or create"
                    } else {
                        "find"
                    }
                ));
            }
            for f in found {
                let Found::Node { path: at, untagged } = f else {
                    continue;
                };
                let Some(node) = node_mut(obj, &at) else {
                    continue;
                };
                let text = delimited_text(node, value, &options)?;
                *node = write_value(node, untagged, value, text)
                    .map_err(|e| format!("{id}: field {path}: {e}"))?;
            }
        }
    }
    Ok(())
}

/// With `options.delimiter`: the target's text with its `index`-th part replaced by the value (a negative
/// index puts it first, one past the end appends it), as kustomize does.
fn delimited_text(
    node: &Value,
    value: &Value,
    options: &Options,
) -> Result<Option<String>, String> {
    let Some(delim) = &options.delimiter else {
        return Ok(None);
    };
    let current =
        scalar_text(node).ok_or("delimiter option can only be used with scalar values")?;
    let v = scalar_text(value).unwrap_or_default();
    let mut parts: Vec<String> = current.split(delim.as_str()).map(str::to_string).collect();
    if options.index < 0 {
        parts.insert(0, v);
    } else if options.index as usize >= parts.len() {
        parts.push(v);
    } else {
        parts[options.index as usize] = v;
    }
    Ok(Some(parts.join(delim)))
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

#[cfg(test)]
#[path = "replacements_tests.rs"]
mod tests;

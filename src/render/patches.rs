//! `patchesStrategicMerge`, `patches` and `patchesJson6902`, as kustomize v5.5 applies them.
//!
//! - A `patchesStrategicMerge` entry is inline YAML or a file of patches; each patch applies to the object
//!   its own `apiVersion`/`kind`/`metadata` name (found by original, else current, identity: exactly one
//!   must match).
//! - A `patches` entry (inline `patch` or a `path`) is a strategic merge patch or a JSON 6902 patch (it may
//!   not read as both). With a `target`, it applies to every selected object (none is fine); a strategic
//!   merge patch without one applies to the object it names; a JSON patch needs a target.
//! - A `patchesJson6902` entry is a JSON 6902 patch (JSON or YAML) for its `target`.
//!
//! A strategic merge patch keeps the object's name, namespace and kind (unless `allowNameChange` /
//! `allowKindChange`), and deletes the object when it says `$patch: delete` at the top.

use super::Renderer;
use super::error::RenderError;
use super::kustomization::{PatchEntry, Selector};
use super::openapi::Schema;
use super::resid::ResId;
use super::resources::ResMap;
use super::selector::Matcher;
use super::smp::{self, Outcome};
use super::target::{Target, build_error};
use crate::machinery::patch::{MissingReplace, json_patch_with};
use serde_json::Value;

/// A strategic merge patch document, with what it may change and the custom schema it merges with.
struct SmPatch<'a> {
    doc: Value,
    schema: Option<&'a Schema>,
    allow_name_change: bool,
    allow_kind_change: bool,
}

/// Applies `patchesStrategicMerge`.
pub fn strategic_merge_patches(
    r: &Renderer,
    t: &Target,
    resources: &mut ResMap,
) -> Result<(), RenderError> {
    if t.k.patches_strategic_merge.is_empty() {
        return Ok(());
    }
    strategic_merge_list(
        r,
        t,
        resources,
        &t.k.patches_strategic_merge,
        "patchesStrategicMerge",
    )
}

/// Applies a list of strategic merge patches (each inline or a file), as `patchesStrategicMerge` does;
/// `field` names the list in errors.
pub fn strategic_merge_list(
    r: &Renderer,
    t: &Target,
    resources: &mut ResMap,
    entries: &[String],
    field: &str,
) -> Result<(), RenderError> {
    let mut all = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let what = format!("{field} entry {}", i + 1);
        let docs = match inline_patches(entry) {
            Some(docs) => docs,
            None => {
                let (_, text, shown) = r.read_in(t.dir, t.file, entry)?;
                let docs = crate::yaml::from_multi_str(&text)
                    .map_err(|e| super::documents::yaml_error(&shown, e, 1))?;
                sm_documents(docs).map_err(|e| build_error(&shown, format!("{what}: {e}")))?
            }
        };
        all.extend(docs.into_iter().map(|doc| (what.clone(), doc)));
    }
    if all.is_empty() {
        return Err(build_error(
            t.file,
            format!("{field}: the patches are empty"),
        ));
    }
    for (what, doc) in all {
        let patch = SmPatch {
            doc,
            schema: r.custom_schema(),
            allow_name_change: false,
            allow_kind_change: false,
        };
        apply_to_named(resources, &patch)
            .map_err(|e| build_error(t.file, format!("{what}: {e}")))?;
    }
    Ok(())
}

/// Applies `patches`.
pub fn patches(r: &Renderer, t: &Target, resources: &mut ResMap) -> Result<(), RenderError> {
    for (i, entry) in t.k.patches.iter().enumerate() {
        let what = format!("patches entry {}", i + 1);
        apply_patch_entry(r, t, resources, entry, &what, false)?;
    }
    Ok(())
}

/// Applies `patchesJson6902`.
pub fn json6902_patches(
    r: &Renderer,
    t: &Target,
    resources: &mut ResMap,
) -> Result<(), RenderError> {
    for (i, entry) in t.k.patches_json6902.iter().enumerate() {
        let what = format!("patchesJson6902 entry {}", i + 1);
        apply_patch_entry(r, t, resources, entry, &what, true)?;
    }
    Ok(())
}

pub fn apply_patch_entry(
    r: &Renderer,
    t: &Target,
    resources: &mut ResMap,
    entry: &PatchEntry,
    what: &str,
    json_only: bool,
) -> Result<(), RenderError> {
    let err = |problem: String| build_error(t.file, format!("{what}: {problem}"));
    let inline = entry
        .patch
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty());
    let (content, shown) = match (inline, &entry.path) {
        (Some(_), Some(_)) => return Err(err("`patch` and `path` cannot both be set".into())),
        (None, None) => return Err(err("one of `patch` and `path` is required".into())),
        (Some(p), None) => (p.to_string(), None),
        (None, Some(path)) => {
            let (_, text, shown) = r.read_in(t.dir, t.file, path)?;
            (text, Some(shown))
        }
    };
    // The text is read as YAML once, for both readings (a JSON-only patch in JSON needs no YAML).
    let yaml =
        (!(json_only && content.starts_with('['))).then(|| crate::yaml::from_multi_str(&content));
    // A YAML syntax error in a patch file is reported against the file, with its line.
    if let (Some(shown), Some(Err(e))) = (&shown, &yaml)
        && !content.trim_start().starts_with('[')
    {
        return Err(super::documents::yaml_error(shown, e.clone(), 1));
    }

    let json = parse_json_patch(&content, yaml.as_ref());
    if json_only {
        let json = json.map_err(|e| err(format!("not a JSON 6902 patch: {e}")))?;
        let target = entry
            .target
            .as_ref()
            .ok_or_else(|| err("a JSON 6902 patch needs a `target`".into()))?;
        let ops = match json {
            JsonPatch::Ops(ops) => ops,
            JsonPatch::Document => yaml
                .and_then(Result::ok)
                .and_then(|mut docs| docs.pop())
                .unwrap_or(Value::Null),
        };
        return apply_json(resources, target, &ops, false).map_err(err);
    }
    let sm = match &yaml {
        Some(Ok(docs)) => check_sm(docs),
        Some(Err(e)) => Err(e.to_string()),
        None => parse_sm(&content).map(drop),
    };
    let docs = match yaml {
        Some(Ok(docs)) => docs,
        _ => Vec::new(),
    };
    match (sm, json) {
        (Ok(_), Ok(_)) => Err(err(
            "the patch reads both as a strategic merge patch and as a JSON 6902 patch".into(),
        )),
        (Err(sm), Err(js)) => Err(err(format!(
            "the patch is neither a strategic merge patch ({sm}) nor a JSON 6902 patch ({js})"
        ))),
        (Err(_), Ok(json)) => {
            let target = entry
                .target
                .as_ref()
                .ok_or_else(|| err("a JSON 6902 patch needs a `target`".into()))?;
            let ops = match json {
                JsonPatch::Document => &docs[0],
                JsonPatch::Ops(ref ops) => ops,
            };
            apply_json(resources, target, ops, true).map_err(err)
        }
        (Ok(_), Err(_)) => {
            for doc in docs {
                let patch = SmPatch {
                    doc,
                    schema: r.custom_schema(),
                    allow_name_change: entry.allow_name_change,
                    allow_kind_change: entry.allow_kind_change,
                };
                match &entry.target {
                    None => apply_to_named(resources, &patch).map_err(err)?,
                    Some(target) => apply_to_selected(resources, target, &patch).map_err(err)?,
                }
            }
            Ok(())
        }
    }
}

/// The patches of an entry written inline, or `None` when the entry is a file name.
fn inline_patches(entry: &str) -> Option<Vec<Value>> {
    let docs = crate::yaml::from_multi_str(entry).ok()?;
    (!docs.is_empty() && docs.iter().all(Value::is_object)).then_some(docs)
}

/// Strategic merge patches: every document a mapping (no document at all is fine).
fn parse_sm(text: &str) -> Result<Vec<Value>, String> {
    sm_documents(crate::yaml::from_multi_str(text).map_err(|e| e.to_string())?)
}

/// The documents of a file of strategic merge patches, each checked to be a mapping.
fn sm_documents(docs: Vec<Value>) -> Result<Vec<Value>, String> {
    check_sm(&docs)?;
    Ok(docs)
}

fn check_sm(docs: &[Value]) -> Result<(), String> {
    match docs.iter().find(|d| !d.is_object()) {
        Some(bad) => Err(format!(
            "a patch document is {}, not a mapping",
            super::documents::type_name(bad)
        )),
        None => Ok(()),
    }
}

/// A JSON 6902 patch as read: its list of operations, or "the one YAML document of the text" (which is
/// a list), when the text's reading as a YAML stream already has it.
#[derive(Debug)]
enum JsonPatch {
    Ops(Value),
    Document,
}

/// A JSON 6902 patch (JSON, or YAML when it does not start with `[`): a list of operations. `yaml` is the
/// text read as a YAML stream ([`crate::yaml::from_multi_str`]), if it was: a stream of one document
/// holds what reading the text as one document ([`crate::yaml::from_str`]) gives.
fn parse_json_patch(
    text: &str,
    yaml: Option<&Result<Vec<Value>, crate::yaml::YamlError>>,
) -> Result<JsonPatch, String> {
    if text.is_empty() {
        return Err("empty".into());
    }
    let value = if text.starts_with('[') {
        serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?
    } else {
        match yaml {
            Some(Ok(docs)) if docs.len() == 1 && !has_document_markers(text) => {
                return match &docs[0] {
                    Value::Array(_) => Ok(JsonPatch::Document),
                    other => Err(not_a_list(other)),
                };
            }
            _ => crate::yaml::from_str(text).map_err(|e| e.to_string())?,
        }
    };
    match value {
        Value::Array(_) => Ok(JsonPatch::Ops(value)),
        Value::Null => Ok(JsonPatch::Ops(Value::Array(Vec::new()))),
        other => Err(not_a_list(&other)),
    }
}

fn not_a_list(v: &Value) -> String {
    format!(
        "is {}, not a list of operations",
        super::documents::type_name(v)
    )
}

/// Whether a line of `text` may start or end a document (`---`, `...`): without one, a YAML stream holds
/// at most one document.
fn has_document_markers(text: &str) -> bool {
    // Most patches hold neither sequence anywhere: a fast search settles it.
    if !text.contains("---") && !text.contains("...") {
        return false;
    }
    let bytes = text.as_bytes();
    let mut line_starts = std::iter::once(0).chain(
        bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| matches!(b, b'\n' | b'\r'))
            .map(|(i, _)| i + 1),
    );
    line_starts.any(|start| {
        let line = &bytes[start..];
        let line = line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line);
        line.starts_with(b"---") || line.starts_with(b"...")
    })
}

/// The identity a patch document names.
fn patch_id(doc: &Value) -> ResId {
    ResId::of(doc)
}

/// Applies a patch to the one object its identity names.
fn apply_to_named(resources: &mut ResMap, patch: &SmPatch) -> Result<(), String> {
    let id = patch_id(&patch.doc);
    let i = resources
        .index_by_id(&id)
        .map_err(|e| format!("no unique target for patch {id}: {e}"))?;
    apply_sm(resources, i, patch)
}

fn apply_to_selected(
    resources: &mut ResMap,
    target: &Selector,
    patch: &SmPatch,
) -> Result<(), String> {
    let matcher = Matcher::new(target)?;
    let selected: Vec<usize> = (0..resources.len())
        .filter(|&i| matcher.matches(&resources.resources()[i]))
        .collect();
    // Indices shift when an object is deleted: go from the end.
    for i in selected.into_iter().rev() {
        apply_sm(resources, i, patch)?;
    }
    Ok(())
}

fn apply_sm(resources: &mut ResMap, i: usize, patch: &SmPatch) -> Result<(), String> {
    let res = &mut resources.resources_mut()[i];
    let id = res.cur_id();
    let (name, namespace, kind) = (
        res.name().to_string(),
        res.namespace().to_string(),
        res.kind().to_string(),
    );
    if patch.allow_name_change || patch.allow_kind_change {
        res.store_previous_id();
    }
    // The patch is applied as if written for the target's apiVersion (usually it is).
    let api_version = res.object().get("apiVersion");
    let doc = match patch.doc.as_object() {
        Some(map) if map.get("apiVersion") != Some(api_version.unwrap_or(&Value::Null)) => {
            let mut doc = patch.doc.clone();
            if let Some(map) = doc.as_object_mut() {
                map.insert(
                    "apiVersion".into(),
                    api_version.cloned().unwrap_or(Value::Null),
                );
            }
            std::borrow::Cow::Owned(doc)
        }
        _ => std::borrow::Cow::Borrowed(&patch.doc),
    };
    match smp::apply(res.object_mut(), &doc, patch.schema)
        .map_err(|e| format!("patching {id}: {e}"))?
    {
        Outcome::Deleted => {
            resources.remove(i);
            return Ok(());
        }
        Outcome::Patched => {}
    }
    if !res.object().is_object() || res.object().as_object().is_some_and(|m| m.is_empty()) {
        resources.remove(i);
        return Ok(());
    }
    if !patch.allow_kind_change {
        res.set_kind(&kind);
    }
    if !patch.allow_name_change {
        res.set_name(&name);
    }
    res.set_namespace(&namespace);
    Ok(())
}

fn apply_json(
    resources: &mut ResMap,
    target: &Selector,
    ops: &Value,
    store_previous: bool,
) -> Result<(), String> {
    let matcher = Matcher::new(target)?;
    let selected: Vec<usize> = (0..resources.len())
        .filter(|&i| matcher.matches(&resources.resources()[i]))
        .collect();
    for i in selected {
        let res = &mut resources.resources_mut()[i];
        let id = res.cur_id();
        if store_previous {
            res.store_previous_id();
        }
        json_patch_with(res.object_mut(), ops, MissingReplace::Add)
            .map_err(|e| format!("patching {id}: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_kinds_are_told_apart() {
        // Read alone, and with the text's reading as a YAML stream (as `apply_patch_entry` does).
        let json = |text: &str| {
            let alone = parse_json_patch(text, None).map(|_| ());
            let yaml = crate::yaml::from_multi_str(text);
            assert_eq!(
                parse_json_patch(text, Some(&yaml)).map(|_| ()),
                alone,
                "{text:?}"
            );
            alone
        };
        assert!(parse_sm("").unwrap().is_empty());
        assert!(json("").is_err());
        // Comments only: both readings succeed, which kustomize refuses.
        assert!(parse_sm("# c\n").is_ok() && json("# c\n").is_ok());
        assert!(parse_sm("- op: add\n  path: /a\n  value: 1\n").is_err());
        assert!(json("- op: add\n  path: /a\n  value: 1\n").is_ok());
        assert!(json("[{\"op\": \"remove\", \"path\": \"/a\"}]").is_ok());
        assert!(json("kind: X\n").is_err());
        // Several documents: not one list of operations, whatever the stream holds.
        assert!(json("---\n- op: add\n  path: /a\n  value: 1\n---\n").is_err());
        assert!(
            json("- op: add\n  path: /a\n  value: 1\n---\n- op: remove\n  path: /a\n").is_err()
        );
        assert!(!has_document_markers(
            "- op: add\n  path: /a--- \n  value: x...\n"
        ));
        for text in [
            "---\n- a\n",
            "- a\n...\n",
            "- a\r--- \n- b",
            "\u{feff}---\n- a\n",
        ] {
            assert!(has_document_markers(text), "{text:?}");
        }
        assert_eq!(inline_patches("patch.yaml"), None);
        assert_eq!(
            inline_patches("kind: X\nmetadata: {name: a}\n").map(|d| d.len()),
            Some(1)
        );
    }
}

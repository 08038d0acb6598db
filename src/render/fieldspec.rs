//! Field specs: which field of which types a transformer reads or writes, and walking to that field.
//!
//! A field spec is a type selector (`group`, `version`, `kind`, empty parts matching anything), a path of
//! `/`-separated field names (`\/` for a `/` inside a name, a `[]` suffix marking a list), and whether a
//! missing field is created. Walking follows kustomize: lists met on the way apply the rest of the path to
//! each element, a missing field ends the walk (or is created, as a mapping on the way and as the
//! requested kind at the end), and null on the way ends it.

use super::resid::{Gvk, GvkSelector};
use serde_json::{Map, Value};

/// One field spec.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldSpec {
    pub gvk: GvkSelector,
    pub path: String,
    pub create: bool,
}

impl FieldSpec {
    pub fn new(path: &str, create: bool) -> Self {
        FieldSpec {
            gvk: GvkSelector::default(),
            path: path.to_string(),
            create,
        }
    }

    pub fn for_kind(group: &str, version: &str, kind: &str, path: &str, create: bool) -> Self {
        FieldSpec {
            gvk: GvkSelector::new(group, version, kind),
            path: path.to_string(),
            create,
        }
    }

    /// Reads a field spec from a mapping (`path`, `create`, `group`, `version`, `kind`).
    pub fn from_value(v: &Value) -> Result<Self, String> {
        let map = v
            .as_object()
            .ok_or_else(|| "a field spec must be a mapping".to_string())?;
        for key in map.keys() {
            if !matches!(
                key.as_str(),
                "path" | "create" | "group" | "version" | "kind" | "apiVersion"
            ) {
                return Err(format!("unknown field spec field `{key}`"));
            }
        }
        let path = map
            .get("path")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .ok_or_else(|| "a field spec needs a `path`".to_string())?;
        let create = match map.get("create") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err("`create` of a field spec must be true or false".into()),
        };
        Ok(FieldSpec {
            gvk: GvkSelector::from_map(map),
            path: path.to_string(),
            create,
        })
    }

    /// The path split into field names (`\/` kept as `/` inside a name).
    pub fn parts(&self) -> Vec<String> {
        split_path(&self.path)
    }

    pub fn applies_to(&self, gvk: &Gvk) -> bool {
        gvk.selected_by(&self.gvk)
    }
}

/// Splits a field-spec path at unescaped `/`.
pub fn split_path(path: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'/') => {
                chars.next();
                parts.last_mut().expect("never empty").push('/');
            }
            '/' => parts.push(String::new()),
            c => parts.last_mut().expect("never empty").push(c),
        }
    }
    parts
}

/// Adds `spec` unless an identical one is there; the same type and path with another `create` is an
/// error (as kustomize's `MergeOne`).
pub fn merge_one(specs: &mut Vec<FieldSpec>, spec: FieldSpec) -> Result<(), String> {
    if let Some(existing) = specs
        .iter()
        .find(|s| s.gvk == spec.gvk && s.path == spec.path)
    {
        if existing.create != spec.create {
            return Err(format!(
                "conflicting field specs for path {}: create is both {} and {}",
                spec.path, existing.create, spec.create
            ));
        }
        return Ok(());
    }
    specs.push(spec);
    Ok(())
}

pub fn merge_all(specs: &mut Vec<FieldSpec>, more: &[FieldSpec]) -> Result<(), String> {
    for spec in more {
        merge_one(specs, spec.clone())?;
    }
    Ok(())
}

/// What a missing last field is created as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Create {
    Scalar,
    Mapping,
}

/// Calls `set` on every field `spec` designates in `obj` (whose type is `gvk`), creating missing ones
/// when the spec says so (as `create`). Errors name the path.
pub fn apply(
    obj: &mut Value,
    gvk: &Gvk,
    spec: &FieldSpec,
    create: Create,
    set: &mut dyn FnMut(&mut Value) -> Result<(), String>,
) -> Result<(), String> {
    if !spec.applies_to(gvk) {
        return Ok(());
    }
    let parts = spec.parts();
    let create = spec.create.then_some(create);
    walk(obj, &parts, create, set).map_err(|e| format!("field {}: {e}", spec.path))
}

/// Walks `parts` from `node`, calling `set` on what it reaches.
pub fn walk(
    node: &mut Value,
    parts: &[String],
    create: Option<Create>,
    set: &mut dyn FnMut(&mut Value) -> Result<(), String>,
) -> Result<(), String> {
    let Some((first, rest)) = parts.split_first() else {
        return set(node);
    };
    match node {
        Value::Null => Ok(()),
        Value::Array(items) => {
            for item in items {
                walk(item, parts, create, set)?;
            }
            Ok(())
        }
        Value::Object(map) => {
            let (name, is_list) = match first.strip_suffix("[]") {
                Some(name) => (name, true),
                None => (first.as_str(), false),
            };
            if name.is_empty() {
                return Err("empty field name in path".into());
            }
            let kind = match create {
                Some(_) if is_list => None,
                Some(c) if rest.is_empty() => Some(c),
                Some(_) => Some(Create::Mapping),
                None => None,
            };
            let field = match kind {
                None => match map.get_mut(name) {
                    Some(f) => f,
                    None => return Ok(()),
                },
                Some(kind) => map.entry(name).or_insert_with(|| empty(kind)),
            };
            if field.is_null() {
                match kind {
                    Some(kind) => *field = empty(kind),
                    None if is_list => *field = Value::Array(Vec::new()),
                    None => {}
                }
            }
            walk(field, rest, create, set)
        }
        _ => Err(format!(
            "expected a mapping or a list at `{first}`, found a scalar"
        )),
    }
}

fn empty(kind: Create) -> Value {
    match kind {
        Create::Scalar => Value::Null,
        Create::Mapping => Value::Object(Map::new()),
    }
}

/// Reads a list of field specs (`fieldSpecs:` of a configuration).
pub fn list_from_value(v: &Value) -> Result<Vec<FieldSpec>, String> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items.iter().map(FieldSpec::from_value).collect(),
        _ => Err("field specs must be a list".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set_all(
        obj: &mut Value,
        path: &str,
        create: bool,
        kind: Create,
        to: &str,
    ) -> Result<(), String> {
        let gvk = Gvk::of(obj);
        let spec = FieldSpec::new(path, create);
        apply(obj, &gvk, &spec, kind, &mut |v| {
            *v = json!(to);
            Ok(())
        })
    }

    #[test]
    fn paths_split_with_escapes() {
        assert_eq!(split_path("a/b\\/c/d[]"), vec!["a", "b/c", "d[]"]);
        assert_eq!(split_path("metadata/name"), vec!["metadata", "name"]);
    }

    #[test]
    fn walks_lists_and_creates_when_asked() {
        let mut obj = json!({"kind": "X", "spec": {"containers": [{"image": "a"}, {"name": "b"}]}});
        set_all(
            &mut obj,
            "spec/containers/image",
            false,
            Create::Scalar,
            "z",
        )
        .unwrap();
        assert_eq!(
            obj["spec"]["containers"],
            json!([{"image": "z"}, {"name": "b"}])
        );
        set_all(
            &mut obj,
            "spec/containers[]/image",
            true,
            Create::Scalar,
            "y",
        )
        .unwrap();
        assert_eq!(
            obj["spec"]["containers"],
            json!([{"image": "y"}, {"name": "b", "image": "y"}])
        );
        // Missing on the way: created as mappings when asked, else left alone.
        set_all(&mut obj, "spec/template/x", false, Create::Scalar, "no").unwrap();
        assert!(obj["spec"].get("template").is_none());
        set_all(&mut obj, "spec/template/x", true, Create::Scalar, "yes").unwrap();
        assert_eq!(obj["spec"]["template"], json!({"x": "yes"}));
        // A list marked `[]` is never created.
        set_all(&mut obj, "spec/other[]/x", true, Create::Scalar, "no").unwrap();
        assert!(obj["spec"].get("other").is_none());
        // Through a scalar: an error.
        assert!(set_all(&mut obj, "kind/x", false, Create::Scalar, "no").is_err());
    }

    #[test]
    fn merging_specs_refuses_conflicts() {
        let mut specs = vec![FieldSpec::new("metadata/labels", true)];
        merge_one(&mut specs, FieldSpec::new("metadata/labels", true)).unwrap();
        assert_eq!(specs.len(), 1);
        assert!(merge_one(&mut specs, FieldSpec::new("metadata/labels", false)).is_err());
        merge_one(
            &mut specs,
            FieldSpec::for_kind("", "", "X", "metadata/labels", false),
        )
        .unwrap();
        assert_eq!(specs.len(), 2);
    }
}

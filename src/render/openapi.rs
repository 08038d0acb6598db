//! `openapi`: the schema kustomize merges strategic merge patches with, when a kustomization names its own.
//!
//! kustomize holds one schema for the whole build. The first kustomization met (the one built, then each
//! `resources` folder and component as it is loaded) whose `openapi` says `path` or `version` sets it, and
//! later ones change nothing. `version` may only name the schema kustomize v5.5 has built in (v1.21.2,
//! whose merge keys are this renderer's own tables), so it changes nothing but does take the place.
//!
//! A custom schema (`path`: a Swagger 2.0 document, JSON or YAML) replaces the built-in one entirely:
//! - a type is described by the definition carrying its `x-kubernetes-group-version-kind`; a patch on a type
//!   it does not describe (a Deployment included) merges no list;
//! - a list merges when its schema's `x-kubernetes-patch-strategy` includes `merge`: by its
//!   `x-kubernetes-patch-merge-key` (or a single `x-kubernetes-list-map-keys` entry), as a set of values
//!   without one. Fields and list elements are followed through `$ref` and map values
//!   (`additionalProperties`); a list's elements have a schema only when the list says `type: array`;
//! - a type its `paths` serve only outside `namespaces/{namespace}` is cluster-scoped, unless kustomize's
//!   own table of built-in types already knows it (see [`super::namespace`]).

use crate::machinery::patch::MergeKeys;
use serde_json::{Map, Value};
use std::rc::Rc;

/// Which schema the build merges with.
#[derive(Debug, Clone, Default)]
pub enum Choice {
    /// No kustomization has said yet: the built-in schema, and the next `openapi` decides.
    #[default]
    Unset,
    /// `version` named the built-in schema.
    Builtin,
    Custom(Rc<Schema>),
}

impl Choice {
    /// The custom schema, if the build has one.
    pub fn custom(&self) -> Option<&Schema> {
        match self {
            Choice::Custom(schema) => Some(schema),
            _ => None,
        }
    }

    /// Takes in a kustomization's `openapi` (its `path` already read into `schema`): the first one saying
    /// something decides, later ones change nothing (not even checked, as in kustomize).
    pub fn offer(&mut self, version: Option<&str>, schema: Option<Schema>) -> Result<(), String> {
        if !matches!(self, Choice::Unset) {
            return Ok(());
        }
        match (version, schema) {
            (Some(_), Some(_)) => Err(
                "`openapi`: a built-in `version` and a custom schema `path` cannot both be set"
                    .into(),
            ),
            (None, Some(schema)) => {
                *self = Choice::Custom(Rc::new(schema));
                Ok(())
            }
            (Some(v), None) if v == BUILTIN_VERSION => {
                *self = Choice::Builtin;
                Ok(())
            }
            (Some(v), None) => Err(format!(
                "`openapi`: version `{v}` is not built in (kustomize v5.5 has only {BUILTIN_VERSION})"
            )),
            (None, None) => Ok(()),
        }
    }
}

/// The built-in schema version `openapi.version` may name.
pub const BUILTIN_VERSION: &str = "v1.21.2";

/// A custom OpenAPI schema: its definitions, which describes each type, and the types it says are
/// cluster-scoped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schema {
    definitions: Map<String, Value>,
    /// (apiVersion, kind, definition name).
    types: Vec<(String, String, String)>,
    /// (apiVersion, kind) of each type served only at a cluster-wide path.
    cluster_scoped: Vec<(String, String)>,
}

impl Schema {
    /// Reads a schema document.
    pub fn from_value(doc: &Value) -> Result<Self, String> {
        let doc = doc
            .as_object()
            .ok_or_else(|| "an OpenAPI schema must be a mapping".to_string())?;
        let definitions = match doc.get("definitions") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(defs)) => defs.clone(),
            Some(_) => return Err("`definitions` must be a mapping".into()),
        };
        let mut types = Vec::new();
        for (name, def) in &definitions {
            for (api_version, kind) in gvks(def.get("x-kubernetes-group-version-kind")) {
                types.push((api_version, kind, name.clone()));
            }
        }
        let mut namespaced: Vec<(String, String)> = Vec::new();
        let mut cluster: Vec<(String, String)> = Vec::new();
        if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
            for (path, item) in paths {
                let gvk = item
                    .get("get")
                    .and_then(|get| get.get("x-kubernetes-group-version-kind"));
                for t in gvks(gvk) {
                    if path.contains("namespaces/{namespace}") {
                        namespaced.push(t);
                    } else {
                        cluster.push(t);
                    }
                }
            }
        }
        cluster.retain(|t| !namespaced.contains(t));
        Ok(Schema {
            definitions,
            types,
            cluster_scoped: cluster,
        })
    }

    /// The (apiVersion, kind) of the types the schema's paths say are cluster-scoped.
    pub fn cluster_scoped(&self) -> Vec<(String, String)> {
        self.cluster_scoped.clone()
    }

    /// The lists `patch` merges in an object of `apiVersion`/`kind`, as dotted paths (list indices left
    /// out) with their keys; empty when the schema does not describe the type.
    pub fn merge_keys(
        &self,
        api_version: &str,
        kind: &str,
        patch: &Value,
    ) -> Result<MergeKeys, String> {
        let mut keys = MergeKeys::new();
        let Some((_, _, name)) = self
            .types
            .iter()
            .find(|(a, k, _)| a == api_version && k == kind)
        else {
            return Ok(keys);
        };
        let root = self.definitions.get(name).and_then(|d| self.resolve(d));
        if let Some(root) = root {
            self.walk(root, patch, "", &mut keys)?;
        }
        Ok(keys)
    }

    /// `schema` with its `$ref`s followed (`None` when one leads nowhere or they go round).
    fn resolve<'a>(&'a self, mut schema: &'a Value) -> Option<&'a Value> {
        for _ in 0..64 {
            let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
                return Some(schema);
            };
            schema = self
                .definitions
                .get(reference.strip_prefix("#/definitions/")?)?;
        }
        None
    }

    /// The schema of the field `name` of an object of `schema`.
    fn field<'a>(&'a self, schema: &'a Value, name: &str) -> Option<&'a Value> {
        let found = match schema.get("properties").and_then(|p| p.get(name)) {
            Some(s) => s,
            None => schema
                .get("additionalProperties")
                .filter(|s| s.is_object())?,
        };
        self.resolve(found)
    }

    /// The schema of the elements of a list of `schema`.
    fn elements<'a>(&'a self, schema: &'a Value) -> Option<&'a Value> {
        let is_array = match schema.get("type") {
            Some(Value::String(t)) => t == "array",
            Some(Value::Array(t)) => t.len() == 1 && t[0] == "array",
            _ => false,
        };
        if !is_array {
            return None;
        }
        self.resolve(schema.get("items").filter(|s| s.is_object())?)
    }

    /// Records the merging lists the patch value `v` (of schema `schema`, at `path`) reaches.
    fn walk(
        &self,
        schema: &Value,
        v: &Value,
        path: &str,
        keys: &mut MergeKeys,
    ) -> Result<(), String> {
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    if k.starts_with('$') {
                        continue;
                    }
                    if let Some(s) = self.field(schema, k) {
                        let child_path = if path.is_empty() {
                            k.clone()
                        } else {
                            format!("{path}.{k}")
                        };
                        self.walk(s, child, &child_path, keys)?;
                    }
                }
            }
            Value::Array(items) => {
                let ext = |k: &str| schema.get(k).and_then(Value::as_str);
                let merges = ext("x-kubernetes-patch-strategy")
                    .is_some_and(|s| s.split(',').any(|p| p == "merge"));
                if !merges {
                    return Ok(());
                }
                let key = match schema.get("x-kubernetes-list-map-keys") {
                    Some(Value::Array(list)) if list.len() > 1 => {
                        return Err(format!(
                            "the OpenAPI schema keys the list `{path}` by several fields \
                             (x-kubernetes-list-map-keys); only one merge key is supported"
                        ));
                    }
                    Some(Value::Array(list)) => list.first().and_then(Value::as_str),
                    _ => ext("x-kubernetes-patch-merge-key"),
                };
                *keys = match key {
                    Some(key) => std::mem::take(keys).with_key(path, key),
                    None => std::mem::take(keys).with_set(path),
                };
                if let Some(element) = self.elements(schema) {
                    for item in items {
                        self.walk(element, item, path, keys)?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The (apiVersion, kind) pairs an `x-kubernetes-group-version-kind` extension names (a list, or one).
fn gvks(ext: Option<&Value>) -> Vec<(String, String)> {
    let one = |v: &Value| -> Option<(String, String)> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
        if s("kind").is_empty() || s("version").is_empty() {
            return None;
        }
        Some((
            crate::object::join_api_version(s("group"), s("version")),
            s("kind").to_string(),
        ))
    };
    match ext {
        Some(Value::Array(list)) => list.iter().filter_map(one).collect(),
        Some(v @ Value::Object(_)) => one(v).into_iter().collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Schema {
        Schema::from_value(&json!({
            "paths": {
                "/apis/example.com/v1/widgets/{name}": {"get": {
                    "x-kubernetes-group-version-kind": {"group": "example.com", "version": "v1", "kind": "Widget"}}},
                "/apis/example.com/v1/namespaces/{namespace}/gadgets/{name}": {"get": {
                    "x-kubernetes-group-version-kind": {"group": "example.com", "version": "v1", "kind": "Gadget"}}}
            },
            "definitions": {
                "W": {"x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "Widget"}],
                      "properties": {"spec": {"$ref": "#/definitions/Spec"}}},
                "Spec": {"properties": {
                    "items": {"type": "array", "x-kubernetes-patch-strategy": "merge",
                              "x-kubernetes-patch-merge-key": "id", "items": {"$ref": "#/definitions/Item"}},
                    "tags": {"type": "array", "x-kubernetes-patch-strategy": "merge"},
                    "keyOnly": {"type": "array", "x-kubernetes-patch-merge-key": "name"},
                    "replaced": {"type": "array", "x-kubernetes-patch-strategy": "replace",
                                 "x-kubernetes-patch-merge-key": "name"},
                    "byZone": {"type": "object", "additionalProperties": {"$ref": "#/definitions/Zone"}}}},
                "Item": {"properties": {"subs": {"type": "array", "x-kubernetes-patch-strategy": "merge,retainKeys",
                                                 "x-kubernetes-patch-merge-key": "name"}}},
                "Zone": {"properties": {"hosts": {"type": "array", "x-kubernetes-patch-strategy": "merge",
                                                  "x-kubernetes-list-map-keys": ["host"]}}}
            }
        }))
        .unwrap()
    }

    #[test]
    fn merge_keys_follow_refs_elements_and_map_values() {
        let patch = json!({"spec": {"items": [{"id": "a", "subs": [{"name": "x"}]}], "tags": ["t"],
            "keyOnly": [{"name": "n"}], "replaced": [{"name": "r"}], "byZone": {"eu": {"hosts": [{"host": "h"}]}}}});
        let keys = schema()
            .merge_keys("example.com/v1", "Widget", &patch)
            .unwrap();
        assert_eq!(keys.merge_key("spec.items"), Some("id"));
        assert_eq!(keys.merge_key("spec.items.subs"), Some("name"));
        assert!(keys.is_set("spec.tags"));
        assert_eq!(keys.merge_key("spec.keyOnly"), None);
        assert_eq!(keys.merge_key("spec.replaced"), None);
        assert_eq!(keys.merge_key("spec.byZone.eu.hosts"), Some("host"));
    }

    #[test]
    fn types_it_does_not_describe_merge_no_list() {
        let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}});
        let keys = schema()
            .merge_keys("apps/v1", "Deployment", &patch)
            .unwrap();
        assert_eq!(keys, MergeKeys::new());
    }

    #[test]
    fn paths_decide_cluster_scope() {
        assert_eq!(
            schema().cluster_scoped(),
            [("example.com/v1".to_string(), "Widget".to_string())]
        );
    }

    fn render_err(files: &[(&str, &str)]) -> String {
        let t = crate::render::tests::tree(files);
        crate::render::render(t.path(), std::path::Path::new("k"))
            .unwrap_err()
            .to_string()
    }

    const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n";

    #[test]
    fn version_must_be_the_built_in_one_and_not_with_a_path() {
        let ok = crate::render::tests::tree(&[
            (
                "k/kustomization.yaml",
                "openapi: {version: v1.21.2}\nresources: [cm.yaml]\n",
            ),
            ("k/cm.yaml", CM),
        ]);
        assert_eq!(
            crate::render::render(ok.path(), std::path::Path::new("k"))
                .unwrap()
                .len(),
            1
        );
        let err = render_err(&[
            (
                "k/kustomization.yaml",
                "openapi: {version: v1.30.4}\nresources: [cm.yaml]\n",
            ),
            ("k/cm.yaml", CM),
        ]);
        assert_eq!(
            err,
            "k/kustomization.yaml: `openapi`: version `v1.30.4` is not built in (kustomize v5.5 has only v1.21.2)"
        );
        let err = render_err(&[
            (
                "k/kustomization.yaml",
                "openapi: {version: v1.21.2, path: s.json}\nresources: [cm.yaml]\n",
            ),
            ("k/s.json", "{\"definitions\": {}}"),
            ("k/cm.yaml", CM),
        ]);
        assert!(err.contains("cannot both be set"), "{err}");
    }

    #[test]
    fn a_missing_or_malformed_schema_file_names_the_file() {
        let err = render_err(&[
            (
                "k/kustomization.yaml",
                "openapi: {path: none.json}\nresources: [cm.yaml]\n",
            ),
            ("k/cm.yaml", CM),
        ]);
        assert!(err.contains("none.json"), "{err}");
        let err = render_err(&[
            (
                "k/kustomization.yaml",
                "openapi: {path: s.json}\nresources: [cm.yaml]\n",
            ),
            ("k/s.json", "[1, 2]"),
            ("k/cm.yaml", CM),
        ]);
        assert!(err.starts_with("k/s.json"), "{err}");
        assert!(err.contains("must be a mapping"), "{err}");
    }

    #[test]
    fn smp_merges_custom_kinds_by_the_schema_keys() {
        let target = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"items": [{"id": "a", "v": 1}, {"id": "b", "v": 2}], "tags": ["x"]}});
        let patch = json!({"spec": {"items": [{"id": "b", "v": 3}, {"id": "c"}], "tags": ["y"]}});
        let mut merged = target.clone();
        crate::render::smp::apply(&mut merged, &patch, Some(&schema())).unwrap();
        assert_eq!(
            merged["spec"],
            json!({"items": [{"id": "b", "v": 3}, {"id": "c"}, {"id": "a", "v": 1}], "tags": ["y", "x"]})
        );
        let mut replaced = target;
        crate::render::smp::apply(&mut replaced, &patch, None).unwrap();
        assert_eq!(replaced["spec"], patch["spec"]);
    }

    #[test]
    fn several_list_map_keys_are_refused() {
        let s = Schema::from_value(&json!({"definitions": {"W": {
            "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "W"}],
            "properties": {"l": {"x-kubernetes-patch-strategy": "merge", "x-kubernetes-list-map-keys": ["a", "b"]}}}}}))
        .unwrap();
        let err = s
            .merge_keys("v1", "W", &json!({"l": [{"a": 1}]}))
            .unwrap_err();
        assert!(err.contains("`l`"), "{err}");
    }
}

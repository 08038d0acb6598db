//! The objects a render accumulates ([`ResMap`]), each with what kustomize remembers of it ([`Resource`]).
//!
//! kustomize keeps, besides the object, the identities it had before transformers renamed or moved it
//! (used to fix references, match patches and merge generators), the name prefixes and suffixes applied to
//! it (to choose between several possible referrals), and for generated objects how they merge and whether
//! their name gets a content hash. A [`ResMap`] holds objects in the order added with no identity twice, as
//! kustomize compares identities (group, version, kind, name, effective namespace).

use super::error::RenderError;
use super::generators::{self, Behavior};
use super::resid::{Gvk, IdKey, ResId, field_str, metadata_str};
use crate::object::SourcedObject;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// What kustomize remembers of a generated object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    pub behavior: Behavior,
    /// Whether the name gets a content-hash suffix at the end of the build.
    pub hash_suffix: bool,
    /// The `metadata.name` of the plugin configuration that generated it (`generators` field), if any.
    pub configured_by: Option<String>,
}

/// A transformer that ran over an object, as kustomize's `alpha.config.kubernetes.io/transformations`
/// annotation names it (`buildMetadata: [transformerAnnotations]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transformation {
    /// The file configuring it (repository-relative): a kustomization, or a plugin configuration's file.
    pub configured_in: std::path::PathBuf,
    pub api_version: String,
    pub kind: String,
    /// The plugin configuration's name and namespace (empty for a kustomization field).
    pub name: String,
    pub namespace: String,
}

/// A previous identity: kind, name and effective namespace (group and version are always the current ones).
#[derive(Debug, Clone, PartialEq, Eq)]
struct PreviousId {
    kind: String,
    name: String,
    namespace: String,
}

impl PreviousId {
    /// The identity, with the group and version of `current`.
    fn id(&self, current: &Gvk) -> ResId {
        ResId {
            gvk: Gvk {
                group: current.group.clone(),
                version: current.version.clone(),
                kind: self.kind.clone(),
            },
            name: self.name.clone(),
            namespace: self.namespace.clone(),
        }
    }
}

/// An object being rendered, with its history.
#[derive(Debug, Clone)]
pub struct Resource {
    pub sourced: SourcedObject,
    previous: Vec<PreviousId>,
    /// Name prefixes applied, innermost first.
    pub prefixes: Vec<String>,
    /// Name suffixes applied, innermost first.
    pub suffixes: Vec<String>,
    /// Set for objects made by a generator.
    pub generated: Option<Generated>,
    /// The `vars` whose value is read from this object.
    pub var_names: Vec<String>,
    /// The transformers that ran over it, in order (recorded only when the build asks for them).
    pub transformations: Vec<Transformation>,
}

impl Resource {
    pub fn loaded(sourced: SourcedObject) -> Self {
        Resource {
            sourced,
            previous: Vec::new(),
            prefixes: Vec::new(),
            suffixes: Vec::new(),
            generated: None,
            var_names: Vec::new(),
            transformations: Vec::new(),
        }
    }

    pub fn object(&self) -> &Value {
        &self.sourced.object
    }

    pub fn object_mut(&mut self) -> &mut Value {
        &mut self.sourced.object
    }

    pub fn gvk(&self) -> Gvk {
        Gvk::of(self.object())
    }

    pub fn name(&self) -> &str {
        metadata_str(self.object(), "name")
    }

    pub fn namespace(&self) -> &str {
        metadata_str(self.object(), "namespace")
    }

    pub fn kind(&self) -> &str {
        field_str(self.object(), "kind")
    }

    /// The current identity.
    pub fn cur_id(&self) -> ResId {
        ResId::of(self.object())
    }

    /// The identities the object had before, oldest first (not including the current one).
    pub fn prev_ids(&self) -> Vec<ResId> {
        let gvk = self.gvk();
        self.previous.iter().map(|p| p.id(&gvk)).collect()
    }

    /// Whether the current or a previous identity is `id` ([`ResId::same_as`]).
    pub fn has_id(&self, id: &ResId) -> bool {
        let gvk = self.gvk();
        if gvk.group != id.gvk.group || gvk.version != id.gvk.version {
            return false;
        }
        ResId::of(self.object()).same_as(id) || self.previous.iter().any(|p| p.id(&gvk).same_as(id))
    }

    /// The identity the object was loaded with.
    pub fn org_id(&self) -> ResId {
        match self.previous.first() {
            Some(p) => p.id(&self.gvk()),
            None => self.cur_id(),
        }
    }

    /// Records the current identity as a previous one (before a transformer changes it).
    pub fn store_previous_id(&mut self) {
        let id = self.cur_id();
        self.previous.push(PreviousId {
            kind: id.gvk.kind.clone(),
            name: id.name.clone(),
            namespace: id.effective_namespace().to_string(),
        });
    }

    /// Whether the name prefixes and suffixes of the two end alike (kustomize's `PrefixesSuffixesEquals`).
    pub fn prefixes_suffixes_equal(&self, other: &Resource) -> bool {
        same_ending(&self.prefixes, &other.prefixes) && same_ending(&self.suffixes, &other.suffixes)
    }

    pub fn set_name(&mut self, name: &str) {
        metadata(self.object_mut()).insert("name".into(), Value::String(name.to_string()));
    }

    pub fn set_namespace(&mut self, namespace: &str) {
        let meta = metadata(self.object_mut());
        if namespace.is_empty() {
            meta.shift_remove("namespace");
        } else {
            meta.insert("namespace".into(), Value::String(namespace.to_string()));
        }
    }

    pub fn set_kind(&mut self, kind: &str) {
        if let Some(map) = self.object_mut().as_object_mut() {
            map.insert("kind".into(), Value::String(kind.to_string()));
        }
    }

    /// Whether the object says it is local configuration, never to be output.
    pub fn is_local_config(&self) -> bool {
        self.object()
            .get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get("config.kubernetes.io/local-config"))
            .and_then(Value::as_str)
            == Some("true")
    }
}

/// `obj.metadata`, created when missing.
pub fn metadata(obj: &mut Value) -> &mut Map<String, Value> {
    let map = obj.as_object_mut().expect("objects are mappings");
    let slot = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut().expect("just made a mapping")
}

/// Whether the shorter list is a suffix of the longer one.
fn same_ending(a: &[String], b: &[String]) -> bool {
    a.iter().rev().zip(b.iter().rev()).all(|(x, y)| x == y)
}

/// Objects in the order added, with no identity twice.
#[derive(Debug, Default, Clone)]
pub struct ResMap {
    list: Vec<Resource>,
    /// Current identities to positions, kept while objects are only appended (dropped when they may change).
    index: Option<HashMap<IdKey, usize>>,
}

impl ResMap {
    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn resources(&self) -> &[Resource] {
        &self.list
    }

    pub fn resources_mut(&mut self) -> &mut [Resource] {
        self.index = None;
        &mut self.list
    }

    pub fn into_vec(self) -> Vec<Resource> {
        self.list
    }

    #[cfg(test)]
    pub fn from_vec(list: Vec<Resource>) -> Self {
        ResMap { list, index: None }
    }

    /// Adds `res`, or says where its identity was first defined.
    pub fn append(&mut self, res: Resource) -> Result<(), RenderError> {
        let list = &self.list;
        let index = self.index.get_or_insert_with(|| {
            let mut index = HashMap::with_capacity(list.len());
            for (i, r) in list.iter().enumerate() {
                index.entry(r.cur_id().key()).or_insert(i);
            }
            index
        });
        let id = res.cur_id();
        let key = id.key();
        if let Some(&first) = index.get(&key) {
            return Err(RenderError::Duplicate {
                id: id.to_string(),
                first: self.list[first].sourced.origin.clone(),
                second: res.sourced.origin,
            });
        }
        index.insert(key, self.list.len());
        self.list.push(res);
        Ok(())
    }

    pub fn append_all(&mut self, other: ResMap) -> Result<(), RenderError> {
        for res in other.list {
            self.append(res)?;
        }
        Ok(())
    }

    /// Adds a generated object: appended if its identity is new (unless it asks to merge or replace),
    /// else merged into or replacing the object it names (found by original, else current, identity), as
    /// its `behavior` says. Errors are problems to report against the kustomization that generated it.
    pub fn absorb(&mut self, res: Resource) -> Result<(), String> {
        self.index = None;
        let id = res.cur_id();
        let mut matches: Vec<usize> = self.indices(|r| r.org_id().same_as(&id));
        if matches.is_empty() {
            matches = self.indices(|r| r.cur_id().same_as(&id));
        }
        let generated = res.generated.clone().unwrap_or(Generated {
            behavior: Behavior::Create,
            hash_suffix: false,
            configured_by: None,
        });
        match (matches.as_slice(), generated.behavior) {
            ([], Behavior::Create) => {
                self.list.push(res);
                Ok(())
            }
            ([], behavior) => Err(format!(
                "{id} does not exist; cannot {} it",
                behavior_name(behavior)
            )),
            ([i], behavior) => {
                let old = &mut self.list[*i];
                // The origin stays the first generator's on a merge, becomes this one's on a replace.
                let mut configured_by =
                    old.generated.as_ref().and_then(|g| g.configured_by.clone());
                if behavior == Behavior::Replace {
                    old.sourced.origin = res.sourced.origin.clone();
                    configured_by = generated.configured_by.clone();
                }
                generators::merge_into(old.object_mut(), res.object(), behavior)
                    .map_err(|e| e.to_string())?;
                let old_hash = old.generated.as_ref().is_some_and(|g| g.hash_suffix);
                old.generated = Some(Generated {
                    behavior,
                    hash_suffix: generators::hash_after_merge(old_hash, generated.hash_suffix),
                    configured_by,
                });
                Ok(())
            }
            (several, _) => Err(format!(
                "found {} objects that could accept the merge of {id}",
                several.len()
            )),
        }
    }

    fn indices(&self, f: impl Fn(&Resource) -> bool) -> Vec<usize> {
        (0..self.list.len()).filter(|&i| f(&self.list[i])).collect()
    }

    /// The one object whose current or any previous identity is `id` (kustomize's `GetById`).
    pub fn index_by_id(&self, id: &ResId) -> Result<usize, String> {
        let found = self.indices(|r| r.has_id(id));
        match found.as_slice() {
            [one] => Ok(*one),
            [] => Err(format!("no object {id} ({})", id.gvk.api_version())),
            _ => Err(format!(
                "{} objects match {id} ({})",
                found.len(),
                id.gvk.api_version()
            )),
        }
    }

    /// Drops the objects for which `f` is false.
    pub fn retain(&mut self, f: impl FnMut(&Resource) -> bool) {
        self.index = None;
        self.list.retain(f);
    }

    /// Removes the object at `i`.
    pub fn remove(&mut self, i: usize) -> Resource {
        self.index = None;
        self.list.remove(i)
    }
}

fn behavior_name(b: Behavior) -> &'static str {
    match b {
        Behavior::Create => "create",
        Behavior::Merge => "merge",
        Behavior::Replace => "replace",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::Origin;
    use serde_json::json;
    use std::path::PathBuf;

    fn obj(api_version: &str, kind: &str, ns: Option<&str>, name: &str) -> Resource {
        let mut meta = json!({"name": name});
        if let Some(ns) = ns {
            meta["namespace"] = json!(ns);
        }
        Resource::loaded(SourcedObject {
            object: json!({"apiVersion": api_version, "kind": kind, "metadata": meta}),
            origin: Origin {
                file: PathBuf::from(format!("{name}.yaml")),
                document: 0,
            },
        })
    }

    #[test]
    fn refuses_a_second_object_with_the_same_identity() {
        let mut set = ResMap::default();
        set.append(obj("apps/v1", "Deployment", None, "d")).unwrap();
        set.append(obj("apps/v1", "Deployment", Some("other"), "d"))
            .unwrap();
        set.append(obj("v1", "Service", None, "d")).unwrap();
        // Another version is another identity for kustomize.
        set.append(obj("apps/v1beta1", "Deployment", None, "d"))
            .unwrap();
        let mut second = obj("apps/v1", "Deployment", Some("default"), "d");
        second.sourced.origin = Origin {
            file: "b.yaml".into(),
            document: 1,
        };
        let err = set.append(second).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Deployment/default/d: may not add resource with an already registered id: defined in d.yaml and again in b.yaml (document 2)"
        );
        // Cluster-scoped: the namespace field does not make a different object.
        set.append(obj(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            None,
            "c",
        ))
        .unwrap();
        assert!(
            set.append(obj(
                "rbac.authorization.k8s.io/v1",
                "ClusterRole",
                Some("x"),
                "c"
            ))
            .is_err()
        );
        assert_eq!(set.len(), 5);
    }

    #[test]
    fn previous_ids_and_prefix_suffix_matching() {
        let mut r = obj("v1", "ConfigMap", None, "cm");
        assert_eq!(r.org_id(), r.cur_id());
        r.store_previous_id();
        r.set_name("p-cm");
        r.set_namespace("ns");
        r.prefixes.push("p-".into());
        assert_eq!(r.org_id().name, "cm");
        assert_eq!(r.org_id().namespace, "default");
        assert_eq!(r.cur_id().to_string(), "ConfigMap/ns/p-cm");
        let mut other = obj("v1", "Secret", None, "s");
        assert!(r.prefixes_suffixes_equal(&other));
        other.prefixes = vec!["q-".into()];
        assert!(!r.prefixes_suffixes_equal(&other));
        other.prefixes = vec!["p-".into(), "p-".into()];
        assert!(r.prefixes_suffixes_equal(&other));
    }

    #[test]
    fn generated_objects_merge_replace_or_conflict() {
        let mut map = ResMap::default();
        let mut base = obj("v1", "ConfigMap", None, "cm");
        base.sourced.object["data"] = json!({"a": "1", "b": "2"});
        base.sourced.object["metadata"]["labels"] = json!({"x": "base", "y": "base"});
        base.store_previous_id();
        base.set_name("p-cm");
        map.append(base).unwrap();

        let mut merge = obj("v1", "ConfigMap", None, "cm");
        merge.sourced.object["data"] = json!({"b": "3"});
        merge.sourced.object["metadata"]["labels"] = json!({"y": "overlay"});
        merge.generated = Some(Generated {
            behavior: Behavior::Merge,
            hash_suffix: true,
            configured_by: None,
        });
        map.absorb(merge).unwrap();
        let got = map.resources()[0].object();
        assert_eq!(got["metadata"]["name"], "p-cm");
        assert_eq!(got["data"], json!({"a": "1", "b": "3"}));
        assert_eq!(
            got["metadata"]["labels"],
            json!({"x": "base", "y": "overlay"})
        );

        let mut create = obj("v1", "ConfigMap", None, "cm");
        create.generated = Some(Generated {
            behavior: Behavior::Create,
            hash_suffix: true,
            configured_by: None,
        });
        assert!(map.absorb(create).unwrap_err().contains("already exists"));
        let mut replace = obj("v1", "ConfigMap", None, "nope");
        replace.generated = Some(Generated {
            behavior: Behavior::Replace,
            hash_suffix: false,
            configured_by: None,
        });
        assert!(map.absorb(replace).unwrap_err().contains("does not exist"));
    }
}

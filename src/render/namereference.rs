//! kustomize's name-reference fix-up: after a build, references to objects that were renamed or moved (by
//! prefixes, suffixes, hash suffixes, namespaces or patches) are rewritten to the objects' new names.
//!
//! The fields that hold references are the `nameReference` table of the transformer configuration (a
//! Deployment's ConfigMap volumes, a RoleBinding's `roleRef` and `subjects`, a webhook's service...). A
//! reference is a name (a string, or each string of a list), or a mapping with `name` and maybe
//! `namespace`. It is matched as kustomize v5.5 matches it: among the objects the referrer can see (all
//! for a cluster-scoped referrer; else cluster-scoped ones, those in its namespace, and for a RoleBinding
//! those in the namespaces its ServiceAccount subjects name), the objects of the referenced type that had
//! the name before being renamed (in the namespace the reference names, when it names one), in the
//! referrer's namespace unless cluster-scoped or a ServiceAccount; if several remain, those renamed with
//! the same prefixes and suffixes as the referrer; several different ones left is an error.

use super::config::NameBackReference;
use super::error::RenderError;
use super::fieldspec::{self, FieldSpec};
use super::resid::GvkSelector;
use super::resid::ResId;
use super::resources::{ResMap, Resource};
use serde_json::Value;
use std::collections::HashMap;

/// What is looked up of every object while fixing references (computed once).
struct Snapshot {
    cur: ResId,
    prev: Vec<ResId>,
    /// Effective namespace the object was loaded with (`None` when cluster-scoped).
    org_namespace: Option<String>,
}

/// The objects, their identities, and indexes by previous name and by original namespace.
struct Index<'a> {
    list: &'a [Resource],
    snaps: Vec<Snapshot>,
    by_prev_name: HashMap<String, Vec<usize>>,
    by_org_namespace: HashMap<String, Vec<usize>>,
}

impl<'a> Index<'a> {
    fn new(list: &'a [Resource]) -> Self {
        let snaps: Vec<Snapshot> = list
            .iter()
            .map(|r| {
                let prev = r.prev_ids();
                let org = prev.first().cloned().unwrap_or_else(|| r.cur_id());
                Snapshot {
                    cur: r.cur_id(),
                    org_namespace: (!org.cluster_scoped())
                        .then(|| org.effective_namespace().to_string()),
                    prev,
                }
            })
            .collect();
        let mut by_prev_name: HashMap<String, Vec<usize>> = HashMap::new();
        let mut by_org_namespace: HashMap<String, Vec<usize>> = HashMap::new();
        for (j, snap) in snaps.iter().enumerate() {
            let mut names: Vec<&str> = snap.prev.iter().map(|id| id.name.as_str()).collect();
            names.sort_unstable();
            names.dedup();
            for name in names {
                by_prev_name.entry(name.to_string()).or_default().push(j);
            }
            if let Some(ns) = &snap.org_namespace {
                by_org_namespace.entry(ns.clone()).or_default().push(j);
            }
        }
        Index {
            list,
            snaps,
            by_prev_name,
            by_org_namespace,
        }
    }
}

/// Rewrites, in place, references to renamed or moved objects.
pub fn fix(resources: &mut ResMap, backrefs: &[NameBackReference]) -> Result<(), RenderError> {
    let mut updates = Vec::new();
    {
        let index = Index::new(resources.resources());
        for i in 0..index.list.len() {
            let referrer = &index.list[i];
            let org_gvk = index.snaps[i]
                .prev
                .first()
                .map(|id| id.gvk.clone())
                .unwrap_or_else(|| index.snaps[i].cur.gvk.clone());
            let filters: Vec<(&NameBackReference, &FieldSpec)> = backrefs
                .iter()
                .flat_map(|b| b.referrers.iter().map(move |s| (b, s)))
                .filter(|(_, spec)| org_gvk.selected_by(&spec.gvk))
                .collect();
            if filters.is_empty() {
                continue;
            }
            let visible = Visibility::of(&index, i);
            let mut object = referrer.object().clone();
            for (backref, spec) in filters {
                let fixer = Fixer {
                    index: &index,
                    referrer: i,
                    target: &backref.gvk,
                    spec,
                    visible: &visible,
                };
                let parts = spec.parts();
                fieldspec::walk(&mut object, &parts, None, &mut |node| fixer.set(node)).map_err(
                    |problem| RenderError::Reference {
                        origin: referrer.sourced.origin.clone(),
                        id: index.snaps[i].cur.to_string(),
                        problem: format!("field {}: {problem}", spec.path),
                    },
                )?;
            }
            if &object != referrer.object() {
                updates.push((i, object));
            }
        }
    }
    for (i, object) in updates {
        resources.resources_mut()[i].sourced.object = object;
    }
    Ok(())
}

/// Which objects a referrer can refer to: all for a cluster-scoped referrer; else cluster-scoped ones,
/// those in its namespace, and for a RoleBinding those in the namespaces its ServiceAccount subjects name.
struct Visibility {
    all: bool,
    namespace: String,
    subject_namespaces: Vec<String>,
}

impl Visibility {
    fn of(index: &Index, referrer: usize) -> Self {
        let me = &index.snaps[referrer].cur;
        let mut subject_namespaces = Vec::new();
        let obj = index.list[referrer].object();
        if me.gvk.kind == "RoleBinding"
            && let Some(subjects) = obj.get("subjects").and_then(Value::as_array)
        {
            for s in subjects {
                if s.get("kind").and_then(Value::as_str) == Some("ServiceAccount")
                    && let Some(ns) = s.get("namespace").and_then(Value::as_str)
                {
                    subject_namespaces.push(ns.to_string());
                }
            }
        }
        Visibility {
            all: me.cluster_scoped(),
            namespace: me.effective_namespace().to_string(),
            subject_namespaces,
        }
    }

    fn sees(&self, index: &Index, j: usize) -> bool {
        let id = &index.snaps[j].cur;
        self.all
            || id.cluster_scoped()
            || id.effective_namespace() == self.namespace
            || self
                .subject_namespaces
                .iter()
                .any(|ns| ns == index.list[j].namespace())
    }
}

struct Fixer<'a> {
    index: &'a Index<'a>,
    referrer: usize,
    target: &'a GvkSelector,
    spec: &'a FieldSpec,
    visible: &'a Visibility,
}

impl Fixer<'_> {
    fn set(&self, node: &mut Value) -> Result<(), String> {
        match node {
            Value::Null => Ok(()),
            Value::String(_) => self.set_scalar(node),
            Value::Object(_) => self.set_mapping(node),
            Value::Array(items) => {
                for item in items {
                    match item {
                        Value::String(_) => self.set_scalar(item)?,
                        Value::Object(_) => self.set_mapping(item)?,
                        _ => {}
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The visible objects that had the name `old`.
    fn named(&self, old: &str) -> Vec<usize> {
        self.index
            .by_prev_name
            .get(old)
            .map(|js| {
                js.iter()
                    .copied()
                    .filter(|&j| self.visible.sees(self.index, j))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn set_scalar(&self, node: &mut Value) -> Result<(), String> {
        let Value::String(old) = node else {
            return Ok(());
        };
        let candidates = self.named(old);
        if let Some(r) = self.select(old, candidates, false)? {
            *node = Value::String(self.index.list[r].name().to_string());
        }
        Ok(())
    }

    fn set_mapping(&self, node: &mut Value) -> Result<(), String> {
        let Value::Object(map) = node else {
            return Ok(());
        };
        let Some(old) = map.get("name").and_then(Value::as_str).map(str::to_string) else {
            return Err("a reference has no `name`".into());
        };
        let mut candidates = self.named(&old);
        if let Some(ns) = map.get("namespace") {
            let ns = ns.as_str().unwrap_or_default();
            // kustomize looks in the namespace as loaded when any visible object was loaded there, else
            // in the namespace as it is now.
            let loaded_there = self
                .index
                .by_org_namespace
                .get(ns)
                .is_some_and(|js| js.iter().any(|&j| self.visible.sees(self.index, j)));
            let snaps = &self.index.snaps;
            if loaded_there {
                candidates.retain(|&j| snaps[j].org_namespace.as_deref() == Some(ns));
            } else {
                candidates.retain(|&j| {
                    !snaps[j].cur.cluster_scoped() && snaps[j].cur.effective_namespace() == ns
                });
            }
        }
        let Some(r) = self.select(&old, candidates, true)? else {
            return Ok(());
        };
        let list = self.index.list;
        let (name, namespace) = (list[r].name(), list[r].namespace());
        if name == old && namespace.is_empty() {
            return Ok(());
        }
        map.insert("name".into(), Value::String(name.to_string()));
        if !namespace.is_empty() {
            map.insert("namespace".into(), Value::String(namespace.to_string()));
        }
        Ok(())
    }

    /// kustomize's `selectReferral`, over candidates that had the name `old`.
    fn select(
        &self,
        old: &str,
        mut c: Vec<usize>,
        with_namespace: bool,
    ) -> Result<Option<usize>, String> {
        let (list, snaps) = (self.index.list, &self.index.snaps);
        c.retain(|&j| {
            snaps[j]
                .prev
                .iter()
                .any(|id| id.gvk.selected_by(self.target))
        });
        if let Some(role) = self.role_ref_gvk() {
            c.retain(|&j| snaps[j].prev.iter().any(|id| id.gvk.selected_by(&role)));
        }
        let me = &snaps[self.referrer].cur;
        if !me.cluster_scoped() {
            c.retain(|&j| {
                let id = &snaps[j].cur;
                id.cluster_scoped() || id.gvk.kind == "ServiceAccount" || id.same_namespace(me)
            });
        }
        if c.len() == 1 {
            return Ok(Some(c[0]));
        }
        c.retain(|&j| list[j].prefixes_suffixes_equal(&list[self.referrer]));
        match c.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(*one)),
            [first, rest @ ..] => {
                let same = |j: usize| {
                    list[j].name() == list[*first].name()
                        && (!with_namespace || list[j].namespace() == list[*first].namespace())
                };
                if rest.iter().all(|&j| same(j)) {
                    return Ok(Some(*first));
                }
                Err(format!(
                    "reference to {old} could be any of {}: found multiple possible referrals",
                    c.iter()
                        .map(|&j| format!("{} ({})", snaps[j].cur, list[j].sourced.origin))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
        }
    }

    /// For `roleRef/name`, the group and kind the roleRef names.
    fn role_ref_gvk(&self) -> Option<GvkSelector> {
        if !self.spec.path.ends_with("roleRef/name") {
            return None;
        }
        let role_ref = self.index.list[self.referrer].object().get("roleRef")?;
        let group = role_ref.get("apiGroup")?.as_str()?;
        let kind = role_ref.get("kind")?.as_str()?;
        Some(GvkSelector::new(group, "", kind))
    }
}

#[cfg(test)]
#[path = "namereference_tests.rs"]
mod tests;

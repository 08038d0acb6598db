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
use super::resources::{ResMap, Resource};
use serde_json::Value;

/// Rewrites, in place, references to renamed or moved objects.
pub fn fix(resources: &mut ResMap, backrefs: &[NameBackReference]) -> Result<(), RenderError> {
    for i in 0..resources.len() {
        let list = resources.resources();
        let referrer = &list[i];
        let org_gvk = referrer.org_id().gvk;
        let filters: Vec<(&NameBackReference, &FieldSpec)> = backrefs
            .iter()
            .flat_map(|b| b.referrers.iter().map(move |s| (b, s)))
            .filter(|(_, spec)| org_gvk.selected_by(&spec.gvk))
            .collect();
        if filters.is_empty() {
            continue;
        }
        let candidates = visible_to(list, i);
        let mut object = referrer.object().clone();
        for (backref, spec) in filters {
            let fixer = Fixer {
                list,
                referrer: i,
                target: &backref.gvk,
                spec,
                candidates: &candidates,
            };
            let parts = spec.parts();
            fieldspec::walk(&mut object, &parts, None, &mut |node| fixer.set(node)).map_err(
                |problem| RenderError::Reference {
                    origin: referrer.sourced.origin.clone(),
                    id: referrer.cur_id().to_string(),
                    problem: format!("field {}: {problem}", spec.path),
                },
            )?;
        }
        resources.resources_mut()[i].sourced.object = object;
    }
    Ok(())
}

/// The objects `list[referrer]` can refer to.
fn visible_to(list: &[Resource], referrer: usize) -> Vec<usize> {
    let me = list[referrer].cur_id();
    if me.cluster_scoped() {
        return (0..list.len()).collect();
    }
    let mut subject_namespaces = Vec::new();
    let obj = list[referrer].object();
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
    (0..list.len())
        .filter(|&j| {
            let id = list[j].cur_id();
            id.cluster_scoped()
                || id.same_namespace(&me)
                || subject_namespaces
                    .iter()
                    .any(|ns| ns == list[j].namespace())
        })
        .collect()
}

struct Fixer<'a> {
    list: &'a [Resource],
    referrer: usize,
    target: &'a GvkSelector,
    spec: &'a FieldSpec,
    candidates: &'a [usize],
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

    fn set_scalar(&self, node: &mut Value) -> Result<(), String> {
        let Value::String(old) = node else {
            return Ok(());
        };
        let candidates = self.candidates.to_vec();
        if let Some(r) = self.select(old, candidates, false)? {
            *node = Value::String(self.list[r].name().to_string());
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
        let candidates: Vec<usize> = match map.get("namespace") {
            None => self.candidates.to_vec(),
            Some(ns) => {
                let ns = ns.as_str().unwrap_or_default();
                let by_original: Vec<usize> = self
                    .candidates
                    .iter()
                    .copied()
                    .filter(|&j| {
                        let id = self.list[j].org_id();
                        !id.cluster_scoped() && id.effective_namespace() == ns
                    })
                    .collect();
                if by_original.is_empty() {
                    self.candidates
                        .iter()
                        .copied()
                        .filter(|&j| {
                            let id = self.list[j].cur_id();
                            !id.cluster_scoped() && id.effective_namespace() == ns
                        })
                        .collect()
                } else {
                    by_original
                }
            }
        };
        let Some(r) = self.select(&old, candidates, true)? else {
            return Ok(());
        };
        let (name, namespace) = (self.list[r].name(), self.list[r].namespace());
        if name == old && namespace.is_empty() {
            return Ok(());
        }
        map.insert("name".into(), Value::String(name.to_string()));
        if !namespace.is_empty() {
            map.insert("namespace".into(), Value::String(namespace.to_string()));
        }
        Ok(())
    }

    /// kustomize's `selectReferral`.
    fn select(
        &self,
        old: &str,
        mut c: Vec<usize>,
        with_namespace: bool,
    ) -> Result<Option<usize>, String> {
        let list = self.list;
        c.retain(|&j| list[j].prev_ids().iter().any(|id| id.name == old));
        c.retain(|&j| {
            list[j]
                .prev_ids()
                .iter()
                .any(|id| id.gvk.selected_by(self.target))
        });
        if let Some(role) = self.role_ref_gvk() {
            c.retain(|&j| {
                list[j]
                    .prev_ids()
                    .iter()
                    .any(|id| id.gvk.selected_by(&role))
            });
        }
        let me = list[self.referrer].cur_id();
        if !me.cluster_scoped() {
            c.retain(|&j| {
                let id = list[j].cur_id();
                id.cluster_scoped() || id.gvk.kind == "ServiceAccount" || id.same_namespace(&me)
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
                        .map(|&j| format!("{} ({})", list[j].cur_id(), list[j].sourced.origin))
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
        let role_ref = self.list[self.referrer].object().get("roleRef")?;
        let group = role_ref.get("apiGroup")?.as_str()?;
        let kind = role_ref.get("kind")?.as_str()?;
        Some(GvkSelector::new(group, "", kind))
    }
}

#[cfg(test)]
#[path = "namereference_tests.rs"]
mod tests;

//! The transformers that change identities: `namespace`, `namePrefix` and `nameSuffix`.
//!
//! Each records the identity an object had before (kustomize's previous ids), which later lets references
//! to the old name be fixed, patches in overlays find the object by the name they know, and generators merge
//! into it. Prefixes and suffixes are also remembered per object (empty ones too, one per kustomization the
//! object went through): when several renamed objects could be the target of one reference, the one renamed
//! alike wins. As in kustomize, CRDs, `apiregistration.k8s.io`
//! APIServices and Namespaces keep their names.

use super::error::RenderError;
use super::fieldspec::{self, Create, FieldSpec};
use super::namespace;
use super::resid::GvkSelector;
use super::resources::{ResMap, Resource};
use serde_json::Value;
use std::path::Path;

/// Applies a kustomization's `namespace` to every object, then checks no two objects became one.
pub fn set_namespace(
    resources: &mut ResMap,
    ns: &str,
    specs: &[FieldSpec],
    file: &Path,
) -> Result<(), RenderError> {
    set_namespace_with(resources, ns, specs, file, &namespace::Options::default())
}

/// [`set_namespace`] with `NamespaceTransformer`'s options.
pub fn set_namespace_with(
    resources: &mut ResMap,
    ns: &str,
    specs: &[FieldSpec],
    file: &Path,
    options: &namespace::Options,
) -> Result<(), RenderError> {
    // The built-in namespace field specs are applied by `namespace::set_namespace_with` with kustomize's
    // special cases; further ones come from `configurations` or a `NamespaceTransformer`. As in kustomize,
    // `metadata/namespace` and role binding subjects are always handled by the special cases.
    let builtin = super::config::TransformerConfig::builtin();
    let mut options = *options;
    for (present, spec) in options.builtin_specs.iter_mut().zip(&builtin.namespace) {
        *present = specs.contains(spec);
    }
    let options = &options;
    let binding =
        |s: &FieldSpec| ["RoleBinding", "ClusterRoleBinding"].contains(&s.gvk.kind.as_str());
    let custom: Vec<&FieldSpec> = specs
        .iter()
        .filter(|s| !builtin.namespace.contains(s))
        .filter(|s| s.path != "metadata/namespace")
        .filter(|s| !(binding(s) && s.path == "subjects/namespace"))
        .collect();
    for res in resources.resources_mut() {
        res.store_previous_id();
        namespace::set_namespace_with(res.object_mut(), ns, options);
        let gvk = res.gvk();
        let id = res.cur_id();
        for spec in &custom {
            fieldspec::apply(res.object_mut(), &gvk, spec, Create::Scalar, &mut |v| {
                if v.is_array() || v.is_object() {
                    return Err("namespace field specs must target scalar values".into());
                }
                options.set(v, ns);
                Ok(())
            })
            .map_err(|problem| RenderError::Build {
                file: file.to_path_buf(),
                problem: format!("namespace: {id}: {problem}"),
            })?;
        }
    }
    let list = resources.resources();
    let mut seen = std::collections::HashMap::with_capacity(list.len());
    for (i, res) in list.iter().enumerate() {
        let id = res.cur_id();
        if let Some(&first) = seen.get(&id.key()) {
            let first: &Resource = &list[first];
            return Err(RenderError::NamespaceConflict {
                file: file.to_path_buf(),
                id: id.to_string(),
                first: first.sourced.origin.clone(),
                second: res.sourced.origin.clone(),
            });
        }
        seen.insert(id.key(), i);
    }
    Ok(())
}

/// Kinds whose names a prefix or suffix never changes.
fn keeps_its_name(res: &Resource) -> bool {
    let id = res.org_id();
    [
        GvkSelector::kind("CustomResourceDefinition"),
        GvkSelector::new("apiregistration.k8s.io", "", "APIService"),
        GvkSelector::kind("Namespace"),
    ]
    .iter()
    .any(|s| id.gvk.selected_by(s))
}

/// Applies `namePrefix`.
pub fn add_prefix(resources: &mut ResMap, prefix: &str, specs: &[FieldSpec]) -> Result<(), String> {
    rename(resources, specs, prefix, true)
}

/// Applies `nameSuffix`.
pub fn add_suffix(resources: &mut ResMap, suffix: &str, specs: &[FieldSpec]) -> Result<(), String> {
    rename(resources, specs, suffix, false)
}

fn rename(
    resources: &mut ResMap,
    specs: &[FieldSpec],
    affix: &str,
    prefix: bool,
) -> Result<(), String> {
    for res in resources.resources_mut() {
        if keeps_its_name(res) {
            continue;
        }
        let gvk = res.org_id().gvk;
        for spec in specs.iter().filter(|s| s.applies_to(&gvk)) {
            if spec.path == "metadata/name" {
                // Recorded even when empty: it tells which kustomizations an object went through.
                if prefix {
                    res.prefixes.push(affix.to_string());
                } else {
                    res.suffixes.push(affix.to_string());
                }
                if !affix.is_empty() {
                    res.store_previous_id();
                }
            }
            if affix.is_empty() {
                continue;
            }
            let current = res.gvk();
            fieldspec::apply(res.object_mut(), &current, spec, Create::Scalar, &mut |v| {
                let text = match v {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    _ => return Err("expected a scalar".into()),
                };
                *v = Value::String(if prefix {
                    format!("{affix}{text}")
                } else {
                    format!("{text}{affix}")
                });
                Ok(())
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::{Origin, SourcedObject};
    use serde_json::json;

    fn res(obj: Value) -> Resource {
        Resource::loaded(SourcedObject {
            object: obj,
            origin: Origin {
                file: "a.yaml".into(),
                document: 0,
            },
        })
    }

    #[test]
    fn prefixes_and_suffixes_record_history_and_skip_some_kinds() {
        let mut map = ResMap::from_vec(vec![
            res(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}})),
            res(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})),
        ]);
        let specs = vec![FieldSpec::new("metadata/name", false)];
        add_prefix(&mut map, "p-", &specs).unwrap();
        add_suffix(&mut map, "-s", &specs).unwrap();
        let cm = &map.resources()[0];
        assert_eq!(cm.name(), "p-cm-s");
        assert_eq!(cm.org_id().name, "cm");
        assert_eq!(cm.prev_ids().len(), 2);
        assert_eq!(
            (cm.prefixes.as_slice(), cm.suffixes.as_slice()),
            (&["p-".to_string()][..], &["-s".to_string()][..])
        );
        assert_eq!(map.resources()[1].name(), "ns");
    }

    #[test]
    fn namespace_moves_objects_and_refuses_collisions() {
        let mut map = ResMap::from_vec(vec![
            res(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "a"}}),
            ),
            res(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "b"}}),
            ),
        ]);
        let err = set_namespace(&mut map, "t", &[], Path::new("k.yaml")).unwrap_err();
        assert!(
            matches!(err, RenderError::NamespaceConflict { .. }),
            "{err}"
        );
        let mut map = ResMap::from_vec(vec![res(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}),
        )]);
        let custom = vec![FieldSpec::for_kind("", "", "ConfigMap", "data/ns", true)];
        set_namespace(&mut map, "t", &custom, Path::new("k.yaml")).unwrap();
        let cm = &map.resources()[0];
        assert_eq!(cm.object()["data"]["ns"], "t");
        assert_eq!(cm.org_id().namespace, "default");
        assert_eq!(cm.namespace(), "t");
    }
}

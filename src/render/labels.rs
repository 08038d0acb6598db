//! `commonLabels`, `labels` and `commonAnnotations`: string pairs set on every object, at the fields the
//! transformer configuration names (metadata, and for labels also selectors and pod templates).
//!
//! `commonLabels` writes selectors too (a Service without a selector gets one, as in kustomize). A `labels`
//! entry writes `metadata.labels` only, plus pod-template labels with `includeTemplates`, or everything
//! `commonLabels` writes with `includeSelectors`, plus the entry's own `fields`.

use super::config::TransformerConfig;
use super::fieldspec::{self, Create, FieldSpec};
use super::kustomization::Label;
use super::resources::ResMap;
use serde_json::{Map, Value};

/// Sets `pairs` as labels at `specs` on every object.
pub fn set_labels(
    resources: &mut ResMap,
    pairs: &[(String, String)],
    specs: &[FieldSpec],
) -> Result<(), String> {
    set_pairs(resources, pairs, specs)
}

/// Sets `pairs` as annotations at `specs` on every object.
pub fn set_annotations(
    resources: &mut ResMap,
    pairs: &[(String, String)],
    specs: &[FieldSpec],
) -> Result<(), String> {
    set_pairs(resources, pairs, specs)
}

/// Applies one `labels` entry.
pub fn apply_label_entry(
    resources: &mut ResMap,
    label: &Label,
    config: &TransformerConfig,
) -> Result<(), String> {
    let mut specs = label.fields.clone();
    if label.include_selectors {
        fieldspec::merge_all(&mut specs, &config.common_labels)?;
    } else {
        fieldspec::merge_one(&mut specs, FieldSpec::new("metadata/labels", true))?;
        if label.include_templates {
            fieldspec::merge_all(&mut specs, &config.template_labels)?;
        }
    }
    set_pairs(resources, &label.pairs, &specs)
}

fn set_pairs(
    resources: &mut ResMap,
    pairs: &[(String, String)],
    specs: &[FieldSpec],
) -> Result<(), String> {
    if pairs.is_empty() {
        return Ok(());
    }
    for res in resources.resources_mut() {
        let gvk = res.gvk();
        let id = res.cur_id();
        // The specs for other types change nothing: skip them once, not for every pair.
        let specs: Vec<&FieldSpec> = specs.iter().filter(|s| s.applies_to(&gvk)).collect();
        for (key, value) in pairs {
            for spec in &specs {
                fieldspec::apply(res.object_mut(), &gvk, spec, Create::Mapping, &mut |node| {
                    set_entry(node, key, value)
                })
                .map_err(|e| format!("{id}: {e}"))?;
            }
        }
    }
    Ok(())
}

/// Sets `key: value` in a mapping (null becomes a mapping).
fn set_entry(node: &mut Value, key: &str, value: &str) -> Result<(), String> {
    if node.is_null() {
        *node = Value::Object(Map::new());
    }
    match node {
        Value::Object(map) => {
            map.insert(key.to_string(), Value::String(value.to_string()));
            Ok(())
        }
        _ => Err("expected a mapping of labels or annotations".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::{Origin, SourcedObject};
    use crate::render::resources::Resource;
    use serde_json::json;

    fn map(objs: Vec<Value>) -> ResMap {
        ResMap::from_vec(
            objs.into_iter()
                .map(|object| {
                    Resource::loaded(SourcedObject {
                        object,
                        origin: Origin {
                            file: "a.yaml".into(),
                            document: 0,
                        },
                    })
                })
                .collect(),
        )
    }

    #[test]
    fn common_labels_reach_selectors_and_templates() {
        let mut m = map(vec![
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                   "spec": {"template": {"spec": {}}}}),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}),
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}}),
        ]);
        let config = TransformerConfig::builtin();
        set_labels(&mut m, &[("app".into(), "x".into())], &config.common_labels).unwrap();
        let d = m.resources()[0].object();
        assert_eq!(d["metadata"]["labels"], json!({"app": "x"}));
        assert_eq!(d["spec"]["selector"]["matchLabels"], json!({"app": "x"}));
        assert_eq!(
            d["spec"]["template"]["metadata"]["labels"],
            json!({"app": "x"})
        );
        assert_eq!(
            m.resources()[1].object()["spec"]["selector"],
            json!({"app": "x"})
        );
        // Job selectors are not created; templates are.
        let j = m.resources()[2].object();
        assert!(j["spec"].get("selector").is_none());
        assert_eq!(
            j["spec"]["template"]["metadata"]["labels"],
            json!({"app": "x"})
        );
    }

    #[test]
    fn label_entries_choose_their_fields() {
        let config = TransformerConfig::builtin();
        let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {}});
        let mut m = map(vec![deploy.clone()]);
        let label = Label {
            pairs: vec![("a".into(), "b".into())],
            include_templates: true,
            ..Default::default()
        };
        apply_label_entry(&mut m, &label, &config).unwrap();
        let d = m.resources()[0].object();
        assert_eq!(
            d["spec"]["template"]["metadata"]["labels"],
            json!({"a": "b"})
        );
        assert!(d["spec"].get("selector").is_none());
        let mut m = map(vec![deploy]);
        let label = Label {
            pairs: vec![("a".into(), "b".into())],
            ..Default::default()
        };
        apply_label_entry(&mut m, &label, &config).unwrap();
        assert_eq!(m.resources()[0].object()["spec"], json!({}));
    }
}

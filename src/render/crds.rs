//! `crds`: OpenAPI definitions of custom types (the Go `OpenAPIDefinition` map kustomize reads, JSON or
//! YAML, keyed by type name) that tell the transformers where a custom type keeps references, labels,
//! annotations and its name.
//!
//! A definition whose properties include `kind`, `apiVersion` and `metadata` is a type (its kind is the
//! last `.`-separated part of its name). Walking its properties (and the definitions they `$ref`), a
//! property marked `x-kubernetes-annotation` gets `commonAnnotations`, `x-kubernetes-label-selector` gets
//! `commonLabels`, `x-kubernetes-identity` gets `namePrefix`, and `x-kubernetes-object-ref-api-version` with
//! `x-kubernetes-object-ref-kind` is a reference to that type by the field `x-kubernetes-object-ref-name-key`
//! (`name` by default).

use super::config::{NameBackReference, TransformerConfig};
use super::fieldspec::FieldSpec;
use super::resid::GvkSelector;
use serde_json::{Map, Value};

/// The transformer configuration a `crds` file declares.
pub fn config_from_definitions(doc: &Value) -> Result<TransformerConfig, String> {
    let defs = doc
        .as_object()
        .ok_or_else(|| "expected a mapping of type names to OpenAPI definitions".to_string())?;
    let mut names: Vec<&String> = defs.keys().collect();
    names.sort();
    let mut config = TransformerConfig::default();
    for name in names {
        let Some(props) = properties(defs, name) else {
            continue;
        };
        if !["kind", "apiVersion", "metadata"]
            .iter()
            .all(|k| props.contains_key(*k))
        {
            continue;
        }
        let kind = name.rsplit('.').next().unwrap_or(name);
        let mut found = TransformerConfig::default();
        walk(defs, name, kind, &mut Vec::new(), &mut found, 0);
        config.merge(&found)?;
    }
    Ok(config)
}

/// The `properties` of the definition `name` (its schema under `Schema`, any case, or the definition itself).
fn properties<'a>(defs: &'a Map<String, Value>, name: &str) -> Option<&'a Map<String, Value>> {
    let def = defs.get(name)?.as_object()?;
    let schema = def
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("schema"))
        .map(|(_, v)| v)
        .and_then(Value::as_object)
        .unwrap_or(def);
    schema.get("properties")?.as_object()
}

fn walk(
    defs: &Map<String, Value>,
    type_name: &str,
    kind: &str,
    path: &mut Vec<String>,
    config: &mut TransformerConfig,
    depth: usize,
) {
    // Definitions may refer to each other in a cycle.
    if depth > 32 {
        return;
    }
    let Some(props) = properties(defs, type_name) else {
        return;
    };
    let mut names: Vec<&String> = props.keys().collect();
    names.sort();
    for prop in names {
        let Some(schema) = props[prop].as_object() else {
            continue;
        };
        let ext = |k: &str| schema.get(k).and_then(Value::as_str);
        let spec = |extra: &[&str]| {
            let mut parts = path.clone();
            parts.push(prop.clone());
            parts.extend(extra.iter().map(|s| s.to_string()));
            FieldSpec::for_kind("", "", kind, &parts.join("/"), false)
        };
        if ext("x-kubernetes-annotation").is_some() {
            config.common_annotations.push(spec(&[]));
        }
        if ext("x-kubernetes-label-selector").is_some() {
            config.common_labels.push(spec(&[]));
        }
        if ext("x-kubernetes-identity").is_some() {
            config.name_prefix.push(spec(&[]));
        }
        if let (Some(version), Some(target)) = (
            ext("x-kubernetes-object-ref-api-version"),
            ext("x-kubernetes-object-ref-kind"),
        ) {
            let name_key = ext("x-kubernetes-object-ref-name-key").unwrap_or("name");
            let reference = NameBackReference {
                gvk: GvkSelector::new("", version, target),
                referrers: vec![spec(&[name_key])],
            };
            match config
                .name_reference
                .iter_mut()
                .find(|n| n.gvk == reference.gvk)
            {
                Some(existing) => existing.referrers.extend(reference.referrers),
                None => config.name_reference.push(reference),
            }
        }
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let target = reference.trim_start_matches("#/definitions/");
            path.push(prop.clone());
            walk(defs, target, kind, path, config, depth + 1);
            path.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_references_labels_and_identities() {
        let doc = json!({
            "example.com/v1.Bee": {"Schema": {"properties": {
                "apiVersion": {}, "kind": {}, "metadata": {},
                "spec": {"$ref": "example.com/v1.BeeSpec"}}}},
            "example.com/v1.BeeSpec": {"Schema": {"properties": {
                "secretRef": {"x-kubernetes-object-ref-api-version": "v1", "x-kubernetes-object-ref-kind": "Secret"},
                "selector": {"x-kubernetes-label-selector": ""},
                "alias": {"x-kubernetes-identity": ""}}}}
        });
        let config = config_from_definitions(&doc).unwrap();
        assert_eq!(config.name_reference.len(), 1);
        assert_eq!(
            config.name_reference[0].gvk,
            GvkSelector::new("", "v1", "Secret")
        );
        assert_eq!(
            config.name_reference[0].referrers[0].path,
            "spec/secretRef/name"
        );
        assert_eq!(config.name_reference[0].referrers[0].gvk.kind, "Bee");
        assert_eq!(config.common_labels[0].path, "spec/selector");
        assert_eq!(config.name_prefix[0].path, "spec/alias");
    }
}

//! The schema definitions of the OpenAPI documents (`/openapi/v2` `definitions`, `/openapi/v3`
//! `components.schemas`).
//!
//! Built-in kinds are described by the `k8s-openapi` crate (its `schemars` feature yields each
//! type's schema, descriptions included), reshaped as kube-apiserver serves them: definitions
//! named `io.k8s.api.core.v1.ConfigMap`, a kind's `x-kubernetes-group-version-kind`, `metadata`
//! not required. A custom kind is described by its CRD's structural schema, converted as
//! apiextensions-apiserver's OpenAPI builder does (see [`crd_definition`]).

use super::registry::ResourceType;
use k8s_openapi::schemars::{JsonSchema, SchemaGenerator, generate::SchemaSettings};
use serde_json::{Map, Value, json};

/// Which document a definition is for: Swagger 2.0 refs are `#/definitions/...`, OpenAPI 3
/// refs `#/components/schemas/...` and a ref with siblings is wrapped in `allOf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flavour {
    V2,
    V3,
}

const V2_PREFIX: &str = "#/definitions/";
const V3_PREFIX: &str = "#/components/schemas/";
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
/// The definition a PATCH body refers to.
pub(super) const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";

struct Builtin {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    name: fn() -> std::borrow::Cow<'static, str>,
    add: fn(&mut SchemaGenerator) -> k8s_openapi::schemars::Schema,
}

fn add<T: JsonSchema>(g: &mut SchemaGenerator) -> k8s_openapi::schemars::Schema {
    g.subschema_for::<T>()
}

fn entry<T: k8s_openapi::Resource + JsonSchema>() -> Builtin {
    Builtin {
        group: T::GROUP,
        version: T::VERSION,
        kind: T::KIND,
        name: T::schema_name,
        add: add::<T>,
    }
}

/// The `k8s-openapi` type of each built-in kind the registry may serve; the registry decides
/// which are described.
fn builtins() -> Vec<Builtin> {
    use k8s_openapi::api::{apps, batch, coordination, core, events, networking, policy, rbac};
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions;
    vec![
        entry::<core::v1::ConfigMap>(),
        entry::<core::v1::Secret>(),
        entry::<core::v1::Namespace>(),
        entry::<core::v1::Service>(),
        entry::<core::v1::ServiceAccount>(),
        entry::<core::v1::Endpoints>(),
        entry::<core::v1::Event>(),
        entry::<core::v1::Pod>(),
        entry::<core::v1::Node>(),
        entry::<core::v1::PersistentVolumeClaim>(),
        entry::<core::v1::PersistentVolume>(),
        entry::<core::v1::ReplicationController>(),
        entry::<core::v1::LimitRange>(),
        entry::<core::v1::ResourceQuota>(),
        entry::<core::v1::PodTemplate>(),
        entry::<apps::v1::Deployment>(),
        entry::<apps::v1::ReplicaSet>(),
        entry::<apps::v1::StatefulSet>(),
        entry::<apps::v1::DaemonSet>(),
        entry::<apps::v1::ControllerRevision>(),
        entry::<batch::v1::Job>(),
        entry::<batch::v1::CronJob>(),
        entry::<rbac::v1::Role>(),
        entry::<rbac::v1::RoleBinding>(),
        entry::<rbac::v1::ClusterRole>(),
        entry::<rbac::v1::ClusterRoleBinding>(),
        entry::<coordination::v1::Lease>(),
        entry::<events::v1::Event>(),
        entry::<networking::v1::Ingress>(),
        entry::<networking::v1::NetworkPolicy>(),
        entry::<policy::v1::PodDisruptionBudget>(),
        entry::<apiextensions::v1::CustomResourceDefinition>(),
    ]
}

/// The name of the definition describing a kind at `version`, if there is one.
pub(super) fn definition_name(t: &ResourceType, version: &str) -> Option<String> {
    if t.custom {
        return Some(crd_definition_name(&t.group, version, &t.kind));
    }
    builtins()
        .iter()
        .find(|b| b.group == t.group && b.version == version && b.kind == t.kind)
        .map(|b| (b.name)().into_owned())
}

/// The definitions describing `kinds` (each with the version it is served at), with everything
/// they refer to and the PATCH body, keyed by definition name.
pub(super) fn definitions(kinds: &[(&ResourceType, &str)], flavour: Flavour) -> Map<String, Value> {
    let settings = SchemaSettings::draft07().with(|s| {
        s.definitions_path = "/definitions".into();
        s.transforms = Vec::new();
        s.meta_schema = None;
    });
    let mut generator = settings.into_generator();
    let table = builtins();
    let mut gvks: Vec<(String, Value)> = Vec::new();
    let mut custom = Map::new();
    add::<k8s_openapi::apimachinery::pkg::apis::meta::v1::Patch>(&mut generator);
    for (t, version) in kinds {
        if t.custom {
            let (name, def) = crd_definition(t, version, flavour, &type_meta());
            custom.insert(name, def);
            add::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>(&mut generator);
            continue;
        }
        let Some(b) = table
            .iter()
            .find(|b| b.group == t.group && b.version == *version && b.kind == t.kind)
        else {
            continue;
        };
        let reference = (b.add)(&mut generator);
        if let Some(name) = reference
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix(V2_PREFIX))
        {
            gvks.push((
                name.to_string(),
                json!([{"group": b.group, "kind": b.kind, "version": b.version}]),
            ));
        }
    }
    let mut defs = generator.take_definitions(false);
    for (name, gvk) in gvks {
        if let Some(Value::Object(def)) = defs.get_mut(&name) {
            // kube-apiserver never requires a kind's metadata; k8s-openapi's types do.
            if let Some(Value::Array(req)) = def.get_mut("required") {
                req.retain(|r| r != "metadata");
                if req.is_empty() {
                    def.remove("required");
                }
            }
            def.insert("x-kubernetes-group-version-kind".into(), gvk);
            if flavour == Flavour::V3 {
                default_top_level_structs(def);
            }
        }
    }
    let mut out: Map<String, Value> = defs
        .into_iter()
        .map(|(k, v)| (k, reshape(v, flavour)))
        .collect();
    out.extend(custom);
    out
}

/// OpenAPI 3 documents give a kind's `metadata`, `spec` and `status` (Go structs held by value)
/// an empty default.
fn default_top_level_structs(def: &mut Map<String, Value>) {
    let Some(Value::Object(props)) = def.get_mut("properties") else {
        return;
    };
    for key in ["metadata", "spec", "status"] {
        if let Some(Value::Object(p)) = props.get_mut(key)
            && p.contains_key("$ref")
        {
            p.insert("default".into(), json!({}));
        }
    }
}

/// A schema as the flavour writes it: v3 refs point into `components.schemas`, and a `$ref`
/// with sibling keys becomes `allOf: [{$ref}]` beside them.
fn reshape(v: Value, flavour: Flavour) -> Value {
    if flavour == Flavour::V2 {
        return v;
    }
    match v {
        Value::Object(mut m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                let r = r.replacen(V2_PREFIX, V3_PREFIX, 1);
                if m.len() == 1 {
                    return json!({"$ref": r});
                }
                m.remove("$ref");
                m.insert("allOf".into(), json!([{"$ref": r}]));
            }
            Value::Object(
                m.into_iter()
                    .map(|(k, x)| (k, reshape(x, flavour)))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.into_iter().map(|x| reshape(x, flavour)).collect()),
        other => other,
    }
}

/// The `apiVersion` and `kind` properties every kind has, and the description of `metadata`,
/// as the built-in types describe them.
pub(super) struct TypeMeta {
    api_version: Value,
    kind: Value,
    metadata_description: Value,
}

fn type_meta() -> TypeMeta {
    let mut generator = SchemaSettings::draft07().into_generator();
    let cm = k8s_openapi::api::core::v1::ConfigMap::json_schema(&mut generator);
    let prop = |k: &str| cm.get("properties").and_then(|p| p.get(k)).cloned();
    TypeMeta {
        api_version: prop("apiVersion").unwrap_or(json!({"type": "string"})),
        kind: prop("kind").unwrap_or(json!({"type": "string"})),
        metadata_description: prop("metadata")
            .and_then(|m| m.get("description").cloned())
            .unwrap_or(Value::Null),
    }
}

/// kube-apiserver's definition name of a custom kind: the group's labels reversed, then
/// version and kind (`com.example.v1.Widget`).
pub(super) fn crd_definition_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

/// The definition of a custom kind at `version`, from its CRD's schema, as apiextensions-apiserver
/// builds it: the structural schema (int-or-string unfolded to its `anyOf`), for v2 reduced to
/// what Swagger 2.0 clients can read (no `allOf`/`anyOf`/`oneOf`/`not`, no `nullable`, nothing
/// under preserved unknown fields, no defaults), then `apiVersion`, `kind` and `metadata`
/// added and the group/version/kind named.
pub(super) fn crd_definition(
    t: &ResourceType,
    version: &str,
    flavour: Flavour,
    meta: &TypeMeta,
) -> (String, Value) {
    let name = crd_definition_name(&t.group, version, &t.kind);
    let schema = t.crd.as_ref().and_then(|crd| {
        crd.pointer("/spec/versions")?
            .as_array()?
            .iter()
            .find(|v| v.get("name").and_then(Value::as_str) == Some(version))?
            .pointer("/schema/openAPIV3Schema")
            .cloned()
    });
    let gvk = json!([{"group": t.group, "kind": t.kind, "version": version}]);
    let preserved = |s: &Value| s.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true));
    let mut def = match schema {
        Some(s) if !(flavour == Flavour::V2 && preserved(&s)) => {
            let mut s = structural(&s, flavour);
            let prefix = if flavour == Flavour::V2 {
                V2_PREFIX
            } else {
                V3_PREFIX
            };
            let metadata = match flavour {
                Flavour::V2 => {
                    json!({"description": meta.metadata_description, "$ref": format!("{prefix}{OBJECT_META}")})
                }
                Flavour::V3 => {
                    json!({"description": meta.metadata_description, "allOf": [{"$ref": format!("{prefix}{OBJECT_META}")}]})
                }
            };
            let props = s
                .as_object_mut()
                .map(|m| m.entry("properties").or_insert_with(|| json!({})));
            if let Some(Value::Object(props)) = props {
                props.insert("metadata".into(), metadata);
                props.insert("apiVersion".into(), meta.api_version.clone());
                props.insert("kind".into(), meta.kind.clone());
            }
            s
        }
        _ => json!({"type": "object"}),
    };
    def["x-kubernetes-group-version-kind"] = gvk;
    (name, def)
}

/// Keys a structural schema holds as booleans and omits when false.
const FALSE_OMITTED: &[&str] = &[
    "nullable",
    "uniqueItems",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
];

/// One node of a CRD schema as the flavour serves it (see [`crd_definition`]).
fn structural(s: &Value, flavour: Flavour) -> Value {
    let Value::Object(m) = s else {
        return s.clone();
    };
    let mut out = m.clone();
    out.retain(|k, v| match v {
        Value::Bool(false) => !FALSE_OMITTED.contains(&k.as_str()),
        Value::String(text) => k != "description" || !text.is_empty(),
        _ => true,
    });
    let flag = |k: &str| m.get(k) == Some(&json!(true));
    if flag("x-kubernetes-int-or-string") {
        unfold_int_or_string(&mut out);
    }
    if flavour == Flavour::V2 {
        for k in ["allOf", "oneOf", "anyOf", "not", "default"] {
            out.remove(k);
        }
        if flag("nullable") {
            for k in ["type", "nullable", "items", "properties"] {
                out.remove(k);
            }
        }
        if flag("x-kubernetes-preserve-unknown-fields") {
            out.remove("items");
            out.remove("properties");
        }
        let typed = |t: &str| out.get("type").and_then(Value::as_str) == Some(t);
        if (typed("array") && !out.contains_key("items"))
            || (typed("object") && flag("x-kubernetes-preserve-unknown-fields"))
        {
            out.remove("type");
        }
        let nullable_props: Vec<String> = m
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(_, p)| p.get("nullable") == Some(&json!(true)))
            .map(|(k, _)| k.clone())
            .collect();
        let nullable_values = s.pointer("/additionalProperties/nullable") == Some(&json!(true));
        if let Some(Value::Array(req)) = out.get_mut("required") {
            req.retain(|r| !nullable_values && !nullable_props.iter().any(|p| r == p));
            if req.is_empty() {
                out.remove("required");
            }
        }
    }
    if let Some(Value::Object(props)) = out.get_mut("properties") {
        for p in props.values_mut() {
            *p = structural(p, flavour);
        }
    }
    for k in ["items", "additionalProperties"] {
        if let Some(x @ Value::Object(_)) = out.get_mut(k) {
            *x = structural(x, flavour);
        }
    }
    Value::Object(out)
}

/// `x-kubernetes-int-or-string` spelled out as `anyOf: [integer, string]`, unless the schema
/// already says so (as a CRD may, in `anyOf` or in `allOf`'s first entry).
fn unfold_int_or_string(out: &mut Map<String, Value>) {
    let pattern = json!([{"type": "integer"}, {"type": "string"}]);
    if out.get("anyOf") == Some(&pattern) || first_all_of_any_of(out) == Some(&pattern) {
        return;
    }
    if out.contains_key("anyOf") {
        let mut all = vec![json!({"anyOf": pattern})];
        if let Some(Value::Array(rest)) = out.remove("allOf") {
            all.extend(rest);
        }
        out.insert("allOf".into(), Value::Array(all));
    } else {
        out.insert("anyOf".into(), pattern);
    }
}

fn first_all_of_any_of(m: &Map<String, Value>) -> Option<&Value> {
    m.get("allOf")?.get(0)?.get("anyOf")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controlplane::registry::Registry;

    fn widget_crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                            "properties": {"conditions": {"type": "array", "items": {"type": "object", "required": ["type"],
                                "properties": {"type": {"type": "string"}}}}}},
                        "size": {"x-kubernetes-int-or-string": true, "default": 1},
                        "note": {"type": "string", "nullable": true}},
                    "required": ["note"]}}}]}
        })
    }

    #[test]
    fn a_crd_schema_is_reduced_for_swagger_2() {
        let crd = widget_crd();
        let reg = Registry::new([&crd]);
        let t = reg.by_kind("example.com", "Widget").unwrap();
        let (name, v2) = crd_definition(&t, "v1", Flavour::V2, &type_meta());
        assert_eq!(name, "com.example.v1.Widget");
        assert_eq!(
            v2["properties"]["spec"],
            json!({"x-kubernetes-preserve-unknown-fields": true})
        );
        assert_eq!(
            v2["properties"]["status"],
            json!({"x-kubernetes-preserve-unknown-fields": true})
        );
        assert_eq!(
            v2["properties"]["size"],
            json!({"x-kubernetes-int-or-string": true})
        );
        assert_eq!(v2["properties"]["note"], json!({}));
        assert!(v2.get("required").is_none());
        assert_eq!(
            v2["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        let (_, v3) = crd_definition(&t, "v1", Flavour::V3, &type_meta());
        assert_eq!(
            v3["properties"]["size"]["anyOf"],
            json!([{"type": "integer"}, {"type": "string"}])
        );
        assert_eq!(v3["properties"]["size"]["default"], 1);
        assert_eq!(
            v3["properties"]["status"]["properties"]["conditions"]["items"]["required"],
            json!(["type"])
        );
        assert_eq!(v3["x-kubernetes-group-version-kind"][0]["kind"], "Widget");
        assert_eq!(v3["required"], json!(["note"]));
    }

    #[test]
    fn built_in_kinds_are_described_with_their_references() {
        let reg = Registry::new([]);
        let cm = reg.by_kind("", "ConfigMap").unwrap();
        let v2 = definitions(&[(&cm, "v1")], Flavour::V2);
        let def = &v2["io.k8s.api.core.v1.ConfigMap"];
        assert!(def.get("required").is_none());
        assert_eq!(
            def["x-kubernetes-group-version-kind"][0]["kind"],
            "ConfigMap"
        );
        assert!(v2.contains_key(OBJECT_META) && v2.contains_key(PATCH));
        let v3 = definitions(&[(&cm, "v1")], Flavour::V3);
        let meta = &v3["io.k8s.api.core.v1.ConfigMap"]["properties"]["metadata"];
        assert_eq!(
            meta["allOf"][0]["$ref"],
            format!("{V3_PREFIX}{OBJECT_META}")
        );
        assert_eq!(meta["default"], json!({}));
    }
}

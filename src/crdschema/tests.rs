use super::*;
use serde_json::json;

fn crd(schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": schema}}]
        }
    })
}

fn widget_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}},
            "spec": {
                "type": "object",
                "required": ["foo"],
                "properties": {
                    "foo": {"type": "string"},
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 5},
                    "ratio": {"type": "number", "exclusiveMaximum": true, "maximum": 1},
                    "x": {"type": "string", "enum": ["b", "c"]},
                    "name": {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 5},
                    "when": {"type": "string", "format": "date-time"},
                    "id": {"type": "string", "format": "uuid"},
                    "port": {"x-kubernetes-int-or-string": true},
                    "note": {"type": "string", "nullable": true},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2,
                        "x-kubernetes-list-type": "set"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"},
                        "maxProperties": 2},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                        "properties": {"known": {"type": "boolean"}}},
                    "items": {"type": "array", "items": {"type": "object",
                        "properties": {"name": {"type": "string"}}}},
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                        "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}},
                    "conditions": {"type": "array", "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["type"],
                        "items": {"type": "object", "required": ["type"],
                            "properties": {"type": {"type": "string"}}}}
                }
            },
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
        }
    })
}

fn schema() -> StructuralSchema {
    StructuralSchema::from_crd(&crd(widget_schema()), "v1").unwrap()
}

fn widget(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "ns", "labels": {"a": "b"}, "uid": "u"},
        "spec": spec})
}

fn messages(o: &Outcome) -> Vec<String> {
    o.errors.iter().map(ToString::to_string).collect()
}

#[test]
fn a_valid_object_passes_unchanged() {
    let obj = widget(
        json!({"foo": "a", "replicas": 3, "port": "http", "note": null,
        "labels": {"k": "v"}, "tags": ["a", "b"], "when": "2024-01-01T00:00:00Z",
        "status": null}),
    );
    // `status` inside spec is unknown: pruned, reported.
    let o = schema().validate(&obj, FieldValidation::Warn);
    assert!(o.errors.is_empty(), "{:?}", messages(&o));
    assert_eq!(o.unknown_fields, vec!["spec.status"]);
    assert!(o.accepted());
    let mut expected = obj.clone();
    expected["spec"].as_object_mut().unwrap().remove("status");
    assert_eq!(o.pruned, expected);
}

#[test]
fn errors_are_worded_like_kube_apiserver() {
    let obj = widget(json!({"replicas": "string", "x": "a", "name": "ABC",
        "when": "yesterday", "ratio": 1, "port": true}));
    let o = schema().validate(&obj, FieldValidation::Strict);
    assert_eq!(
        messages(&o),
        vec![
            "spec.foo: Required value",
            "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
            "spec.x: Unsupported value: \"a\": supported values: \"b\", \"c\"",
            "spec.name: Invalid value: \"ABC\": spec.name in body should match '^[a-z]+$'",
            "spec.when: Invalid value: \"yesterday\": spec.when in body must be of type date-time: \"yesterday\"",
            "spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1",
            "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
        ]
    );
    assert_eq!(o.errors[0].reason(), "FieldValueRequired");
    assert_eq!(o.errors[1].reason(), "FieldValueTypeInvalid");
    assert_eq!(o.errors[2].reason(), "FieldValueNotSupported");
    assert_eq!(o.errors[3].reason(), "FieldValueInvalid");
    assert_eq!(o.errors[0].field, "spec.foo");
    assert_eq!(
        o.errors[1].body(),
        "Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
    );
    assert!(!o.accepted());
}

#[test]
fn bounds_lengths_and_counts() {
    let obj = widget(json!({"foo": "a", "replicas": 0, "name": "abcdefg",
        "tags": ["a", "b", "a"], "labels": {"a": "1", "b": "2", "c": 3}}));
    let o = schema().validate(&obj, FieldValidation::Strict);
    assert_eq!(
        messages(&o),
        vec![
            "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
            "spec.name: Too long: may not be more than 5 bytes",
            "spec.tags: Too many: 3: must have at most 2 items",
            "spec.tags[2]: Duplicate value: \"a\"",
            "spec.labels: Too many: 3: must have at most 2 items",
            "spec.labels.c: Invalid value: \"integer\": spec.labels.c in body must be of type string: \"integer\"",
        ]
    );
    let short = schema().validate(
        &widget(json!({"foo": "a", "name": "a"})),
        FieldValidation::Strict,
    );
    assert_eq!(
        messages(&short),
        vec!["spec.name: Invalid value: \"a\": spec.name in body should be at least 2 chars long"]
    );
}

#[test]
fn unknown_fields_are_pruned_everywhere_but_preserved_subtrees_and_metadata() {
    let obj = widget(json!({"foo": "a", "extra": 1,
        "free": {"anything": {"deep": [1]}, "known": true},
        "items": [{"name": "a", "bogus": 1}],
        "template": {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "labels": {"x": "y"}}, "spec": {"a": "b", "z": 1}, "data": {}}}));
    let mut obj = obj;
    obj["metadata"]["whatever"] = json!(1);
    obj["top"] = json!("level");
    let o = schema().validate(&obj, FieldValidation::Warn);
    assert!(o.errors.is_empty(), "{:?}", messages(&o));
    assert_eq!(
        o.unknown_fields,
        vec![
            "spec.extra",
            "spec.items[0].bogus",
            "spec.template.data",
            "spec.template.spec.z",
            "top",
        ]
    );
    assert_eq!(
        o.warnings(),
        vec![
            "unknown field \"spec.extra\"",
            "unknown field \"spec.items[0].bogus\"",
            "unknown field \"spec.template.data\"",
            "unknown field \"spec.template.spec.z\"",
            "unknown field \"top\"",
        ]
    );
    let p = &o.pruned;
    assert_eq!(p["metadata"]["whatever"], 1, "root metadata is not pruned");
    assert_eq!(p["spec"]["free"]["anything"]["deep"], json!([1]));
    assert_eq!(p["spec"]["template"]["metadata"]["labels"]["x"], "y");
    assert_eq!(p["spec"]["template"]["kind"], "ConfigMap");
    assert!(p.get("top").is_none());
    assert!(p["spec"]["items"][0].get("bogus").is_none());

    // Strict refuses, Ignore prunes silently.
    let strict = schema().validate(&obj, FieldValidation::Strict);
    assert!(!strict.accepted());
    assert!(strict.warnings().is_empty());
    assert_eq!(strict.unknown_field_messages().len(), 5);
    let ignore = schema().validate(&obj, FieldValidation::Ignore);
    assert!(ignore.accepted());
    assert!(ignore.unknown_fields.is_empty());
    assert_eq!(ignore.pruned, o.pruned);
}

#[test]
fn embedded_resources_need_api_version_and_kind() {
    let obj = widget(json!({"foo": "a", "template": {"metadata": {"name": "x"}}}));
    let o = schema().validate(&obj, FieldValidation::Strict);
    assert_eq!(
        messages(&o),
        vec![
            "spec.template.apiVersion: Required value",
            "spec.template.kind: Required value",
        ]
    );
}

#[test]
fn nulls_of_non_nullable_fields_are_dropped_and_null_items_refused() {
    let obj = widget(json!({"foo": "a", "replicas": null, "note": null, "tags": [null]}));
    let o = schema().validate(&obj, FieldValidation::Strict);
    assert!(o.pruned["spec"].get("replicas").is_none());
    assert_eq!(o.pruned["spec"]["note"], Value::Null);
    assert!(o.unknown_fields.is_empty());
    assert_eq!(
        messages(&o),
        vec![
            "spec.tags[0]: Invalid value: \"null\": spec.tags[0] in body must be of type string: \"null\""
        ]
    );
}

#[test]
fn root_metadata_name_follows_the_schema_and_list_maps_are_unique() {
    let mut obj = widget(json!({"foo": "a",
        "conditions": [{"type": "Ready"}, {"type": "Ready"}]}));
    obj["metadata"]["name"] = json!("far-too-long-a-name");
    let o = schema().validate(&obj, FieldValidation::Strict);
    assert_eq!(
        messages(&o),
        vec![
            "metadata.name: Too long: may not be more than 10 bytes",
            "spec.conditions[1]: Duplicate value: {\"type\":\"Ready\"}",
        ]
    );
}

#[test]
fn combinators_and_integral_floats() {
    let s = StructuralSchema::from_openapi(&json!({"type": "object", "properties": {
    "spec": {"type": "object", "properties": {
        "n": {"type": "integer"},
        "q": {"x-kubernetes-int-or-string": true,
            "anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^[0-9]+m$"}]},
        "one": {"type": "string", "oneOf": [{"enum": ["a"]}, {"pattern": "^a"}]},
        "no": {"type": "string", "not": {"enum": ["x"]}}
    }}}}))
    .unwrap();
    let ok = s.validate(
        &json!({"spec": {"n": 2.0, "q": "5m", "one": "b"}}),
        FieldValidation::Strict,
    );
    assert!(
        ok.errors.iter().all(|e| e.field == "spec.one"),
        "{:?}",
        messages(&ok)
    );
    let bad = s.validate(
        &json!({"spec": {"n": 2.5, "q": "lots", "one": "a", "no": "x"}}),
        FieldValidation::Strict,
    );
    assert_eq!(
        messages(&bad),
        vec![
            "spec.n: Invalid value: \"number\": spec.n in body must be of type integer: \"number\"",
            "spec.q: Invalid value: \"lots\": spec.q in body must validate at least one schema (anyOf)",
            "spec.one: Invalid value: \"a\": spec.one in body must validate one and only one schema (oneOf)",
            "spec.no: Invalid value: \"x\": spec.no in body must not validate the schema (not)",
        ]
    );
}

#[test]
fn bodies_without_values_keep_types_and_limits() {
    let obj = widget(json!({"foo": "a", "x": "secret-ish", "when": "secret-ish",
        "name": "SECRETISH", "replicas": "s"}));
    let o = schema().validate(&obj, FieldValidation::Strict);
    let redacted: Vec<String> = o
        .errors
        .iter()
        .map(FieldError::body_without_value)
        .collect();
    for r in &redacted {
        assert!(!r.to_lowercase().contains("secret"), "{r}");
    }
    assert!(
        redacted.contains(
            &"Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
                .to_string()
        )
    );
    assert!(redacted.contains(&"Unsupported value: supported values: \"b\", \"c\"".to_string()));
}

#[test]
fn crds_and_versions_are_looked_up() {
    let c = crd(widget_schema());
    assert!(matches!(
        StructuralSchema::from_crd(&c, "v2"),
        Err(SchemaError::NoVersion { .. })
    ));
    let bad =
        crd(json!({"type": "object", "properties": {"spec": {"type": "string", "pattern": "("}}}));
    let e = StructuralSchema::from_crd(&bad, "v1").unwrap_err();
    assert!(e.to_string().contains(".properties[spec].pattern"), "{e}");
    let (set, problems) = SchemaSet::from_crds([&c, &bad]);
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].0, "widgets.example.com");
    assert!(set.get("example.com", "v1", "Widget").is_some());
    assert_eq!(set.versions("example.com", "Widget"), vec!["v1"]);
    assert!(set.get("example.com", "v2", "Widget").is_none());
    let keep = StructuralSchema::keep_everything();
    let o = keep.validate(&json!({"a": {"b": 1}}), FieldValidation::Strict);
    assert!(o.accepted());
    assert_eq!(o.pruned, json!({"a": {"b": 1}}));
}

#[test]
fn field_validation_parses_the_query_parameter() {
    assert_eq!(FieldValidation::parse(None), Ok(FieldValidation::Warn));
    assert_eq!(
        FieldValidation::parse(Some("Strict")),
        Ok(FieldValidation::Strict)
    );
    assert_eq!(
        FieldValidation::parse(Some("Ignore")),
        Ok(FieldValidation::Ignore)
    );
    assert!(
        FieldValidation::parse(Some("strict"))
            .unwrap_err()
            .contains("Unsupported value")
    );
}

#[test]
fn a_string_reports_its_first_failing_check_and_numbers_report_multiple_of_first() {
    let s = StructuralSchema::from_openapi(&json!({"type": "object", "properties": {"spec": {
        "type": "object", "properties": {
            "name": {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 3},
            "n": {"type": "number", "multipleOf": 0.5, "maximum": 1}}}}}))
    .unwrap();
    let errors = |spec: Value| -> Vec<String> {
        s.validate(&json!({"spec": spec}), FieldValidation::Strict)
            .errors
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    assert_eq!(
        errors(json!({"name": "A"})),
        vec!["spec.name: Invalid value: \"A\": spec.name in body should be at least 2 chars long"]
    );
    assert_eq!(
        errors(json!({"name": "ABCD"})),
        vec!["spec.name: Too long: may not be more than 3 bytes"]
    );
    assert_eq!(
        errors(json!({"n": 1.7})),
        vec![
            "spec.n: Invalid value: 1.7: spec.n in body should be a multiple of 0.5",
            "spec.n: Invalid value: 1.7: spec.n in body should be less than or equal to 1"
        ]
    );
}

#[test]
fn unique_items_is_not_structural() {
    let err = StructuralSchema::from_openapi(&json!({"type": "object", "properties": {
        "tags": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}}}))
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "openAPIV3Schema.properties[tags].uniqueItems: Forbidden: uniqueItems cannot be set to \
         true since the runtime complexity becomes quadratic"
    );
}

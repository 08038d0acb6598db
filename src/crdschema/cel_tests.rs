use super::super::{FieldValidation, StructuralSchema};
use super::kube_field_path;
use serde_json::{Value, json};

fn schema(spec: Value) -> StructuralSchema {
    StructuralSchema::from_openapi(&json!({"type": "object", "properties": {"spec": spec}}))
        .unwrap()
}

fn messages(s: &StructuralSchema, obj: Value, old: Option<Value>) -> Vec<String> {
    s.validate_update(&obj, old.as_ref(), FieldValidation::Strict)
        .errors
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn replicas_schema() -> StructuralSchema {
    schema(json!({"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.min <= self.max", "message": "min must not exceed max"},
            {"rule": "!has(self.mode) || self.mode != 'off'", "messageExpression": "'mode is ' + self.mode"},
            {"rule": "!has(self.owner) || has(self.team)", "reason": "FieldValueRequired",
             "fieldPath": ".team", "message": "team is required"}],
        "properties": {"min": {"type": "integer"}, "max": {"type": "integer"},
            "mode": {"type": "string"}, "owner": {"type": "string"}, "team": {"type": "string"},
            "level": {"type": "integer", "x-kubernetes-validations": [
                {"rule": "self >= oldSelf", "message": "level may not decrease"}]},
            "host": {"type": "string", "x-kubernetes-validations": [
                {"rule": "self.endsWith('.example.com') && self.matches('^[a-z.]+$')"}]},
            "names": {"type": "array", "items": {"type": "string"}, "x-kubernetes-validations": [
                {"rule": "self.all(n, n.size() <= 3) && self.isSorted()", "message": "short and sorted"}]}}}))
}

#[test]
fn failing_rules_are_worded_as_kube_words_them() {
    let s = replicas_schema();
    assert_eq!(
        messages(&s, json!({"spec": {"min": 3, "max": 2}}), None),
        vec!["spec: Invalid value: min must not exceed max"]
    );
    assert_eq!(
        messages(
            &s,
            json!({"spec": {"min": 1, "max": 2, "mode": "off"}}),
            None
        ),
        vec!["spec: Invalid value: mode is off"]
    );
    assert_eq!(
        messages(
            &s,
            json!({"spec": {"min": 1, "max": 2, "owner": "x"}}),
            None
        ),
        vec!["spec.team: Required value: team is required"]
    );
    assert_eq!(
        messages(
            &s,
            json!({"spec": {"min": 1, "max": 2, "host": "a.example.org"}}),
            None
        ),
        vec![
            "spec.host: Invalid value: \"a.example.org\": failed rule: self.endsWith('.example.com') && self.matches('^[a-z.]+$')"
        ]
    );
    assert_eq!(
        messages(
            &s,
            json!({"spec": {"min": 1, "max": 2, "names": ["b", "a"]}}),
            None
        ),
        vec!["spec.names: Invalid value: short and sorted"]
    );
    assert!(
        messages(
            &s,
            json!({"spec": {"min": 1, "max": 2, "names": ["a", "b"]}}),
            None
        )
        .is_empty()
    );
}

#[test]
fn an_evaluation_error_names_the_rule() {
    let s = replicas_schema();
    assert_eq!(
        messages(&s, json!({"spec": {"min": 1}}), None),
        vec![
            "spec: Invalid value: \"object\": no such key: max evaluating rule: min must not exceed max"
        ]
    );
}

#[test]
fn transition_rules_run_on_updates_only_and_unchanged_values_ratchet() {
    let s = replicas_schema();
    let new = json!({"spec": {"min": 1, "max": 2, "level": 1}});
    assert!(messages(&s, new.clone(), None).is_empty());
    let old = json!({"spec": {"min": 1, "max": 2, "level": 2}});
    assert_eq!(
        messages(&s, new, Some(old)),
        vec!["spec.level: Invalid value: 1: level may not decrease"]
    );
    // Already invalid and unchanged: a warning, not an error.
    let bad = json!({"spec": {"min": 3, "max": 2, "level": 1}});
    let out = s.validate_update(&bad, Some(&bad), FieldValidation::Strict);
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(
        out.warnings(),
        vec!["spec: Invalid value: min must not exceed max"]
    );
}

#[test]
fn optional_old_self_sees_an_absent_old_value() {
    let s = schema(
        json!({"type": "object", "properties": {"once": {"type": "string",
        "x-kubernetes-validations": [{"rule": "!oldSelf.hasValue() || oldSelf.value() == self",
            "optionalOldSelf": true, "message": "once set, once stays"}]}}}),
    );
    assert!(messages(&s, json!({"spec": {"once": "a"}}), None).is_empty());
    assert_eq!(
        messages(
            &s,
            json!({"spec": {"once": "b"}}),
            Some(json!({"spec": {"once": "a"}}))
        ),
        vec!["spec.once: Invalid value: \"b\": once set, once stays"]
    );
}

#[test]
fn schema_errors_that_block_rules_skip_them() {
    let s = schema(json!({"type": "object", "required": ["a"],
        "x-kubernetes-validations": [{"rule": "false"}],
        "properties": {"a": {"type": "string"}}}));
    assert_eq!(
        messages(&s, json!({"spec": {}}), None),
        vec![
            "spec.a: Required value",
            "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
        ]
    );
}

#[test]
fn rules_that_do_not_compile_or_call_unknown_functions_refuse_the_schema() {
    for rule in [
        "self.a ==",
        "self.url().isAbsolute()",
        "quantity(self.q).isInteger()",
    ] {
        let err = StructuralSchema::from_openapi(&json!({"type": "object",
            "x-kubernetes-validations": [{"rule": rule}]}))
        .unwrap_err();
        assert!(
            err.to_string().contains("x-kubernetes-validations[0].rule"),
            "{err}"
        );
    }
    for rule in [
        "self.x.lowerAscii() == 'a'",
        "'a,b'.split(',').size() == 2",
        "[1, 2].isSorted()",
    ] {
        StructuralSchema::from_openapi(&json!({"type": "object",
            "x-kubernetes-validations": [{"rule": rule}]}))
        .unwrap_or_else(|e| panic!("{rule}: {e}"));
    }
}

#[test]
fn field_paths_become_kube_paths() {
    assert_eq!(kube_field_path(".a.b"), ".a.b");
    assert_eq!(kube_field_path(".m['k.x']"), ".m.k.x");
    assert_eq!(kube_field_path(""), "");
}

#[test]
fn a_failing_root_rule_is_reported_at_no_field() {
    let s = StructuralSchema::from_openapi(&json!({"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.metadata.name.startsWith('s')", "message": "name must start with s"},
            {"rule": "has(self.spec)", "fieldPath": ".spec", "reason": "FieldValueRequired", "message": "spec please"}],
        "properties": {"spec": {"type": "object"}}}))
    .unwrap();
    assert_eq!(
        messages(
            &s,
            json!({"metadata": {"name": "t", "labels": {"a": "b"}}}),
            None
        ),
        vec![
            "<nil>: Invalid value: name must start with s",
            "spec: Required value: spec please"
        ]
    );
}

#[test]
fn the_redacted_wording_of_a_message_expression_is_the_static_one() {
    let s = replicas_schema();
    let out = s.validate(
        &json!({"spec": {"min": 1, "max": 2, "mode": "off"}}),
        FieldValidation::Strict,
    );
    assert_eq!(out.errors[0].body(), "Invalid value: mode is off");
    assert_eq!(
        out.errors[0].body_without_value(),
        "Invalid value: failed rule: !has(self.mode) || self.mode != 'off'"
    );
}

//! Pruning and validation of a value against a structural schema node, in kube-apiserver's order:
//! prune first (unknown fields, `null`s of non-nullable fields), then validate what is left.

use super::node::{Bound, JsonType, ListType, Node, is_integer};
use super::{ErrorType, FieldError, format, go_float, render_value};
use serde_json::Value;

fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Removes from `v` what `node` does not declare, recording each removed field's path in
/// `unknown`. `resource` is true at the root and at embedded resources, whose `apiVersion`, `kind`
/// and `metadata` are always kept.
pub(super) fn prune(
    v: &mut Value,
    node: &Node,
    path: &str,
    resource: bool,
    unknown: &mut Vec<String>,
) {
    match v {
        Value::Object(map) => {
            let resource = resource || node.embedded;
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                let here = child_path(path, &k);
                if resource && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                match node.child(&k) {
                    Some(child) => {
                        let value = map.get_mut(&k).expect("key listed from the map");
                        if value.is_null() && !child.nullable && child.default.is_none() {
                            map.remove(&k);
                        } else {
                            prune(value, child, &here, false, unknown);
                        }
                    }
                    None if node.keeps_unknown() => {}
                    None => {
                        map.remove(&k);
                        unknown.push(here);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = &node.items {
                for (i, it) in items.iter_mut().enumerate() {
                    prune(it, item, &format!("{path}[{i}]"), false, unknown);
                }
            }
        }
        _ => {}
    }
}

/// Every violation of `node` by `v`, a value below the resource root (a schema's default) whose
/// errors are worded with paths relative to it.
pub(super) fn validate_value(v: &Value, node: &Node) -> Vec<FieldError> {
    let mut errors = Vec::new();
    check(v, node, "", false, &mut errors);
    errors
}

/// Every violation of `node` by the (pruned) root object `obj`.
pub(super) fn validate(obj: &Value, node: &Node) -> Vec<FieldError> {
    let mut errors = Vec::new();
    check(obj, node, "", true, &mut errors);
    errors
}

fn type_error(path: &str, found: &Value, expected: &str) -> FieldError {
    let found = type_of(found);
    FieldError::new(
        path,
        ErrorType::TypeInvalid,
        Some(Value::String(found.into())),
        format!("{path} in body must be of type {expected}: \"{found}\""),
    )
    .type_named()
}

/// The type name kube-openapi reports for a value.
fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) if is_integer(v) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn invalid(path: &str, v: &Value, detail: String) -> FieldError {
    FieldError::new(path, ErrorType::Invalid, Some(v.clone()), detail)
}

/// Checks `v` against `node`, appending to `errors`. `root` marks the resource root, whose
/// `apiVersion`/`kind` are the server's and whose `metadata` is checked for its name only.
fn check(v: &Value, node: &Node, path: &str, root: bool, errors: &mut Vec<FieldError>) {
    if v.is_null() {
        if !node.nullable && (node.types.is_some() || node.int_or_string) {
            let expected = node.types.map(JsonType::name).unwrap_or("integer,string");
            errors.push(type_error(path, v, expected));
        }
        return;
    }
    if let Some(t) = node.types
        && !t.matches(v)
    {
        errors.push(type_error(path, v, t.name()));
        return;
    }
    if node.int_or_string && node.types.is_none() && !(is_integer(v) || v.is_string()) {
        errors.push(type_error(path, v, "integer,string"));
        return;
    }
    if let (Some(f), Value::String(s)) = (&node.format, v)
        && !format::valid(f, s)
    {
        errors.push(
            FieldError::new(
                path,
                ErrorType::TypeInvalid,
                Some(v.clone()),
                format!("{path} in body must be of type {f}: {}", render_value(v)),
            )
            .redacted(format!("{path} in body must be of type {f}")),
        );
    }
    if let Some(options) = &node.enumeration
        && !options.iter().any(|o| same(o, v))
    {
        let listed: Vec<String> = options
            .iter()
            .map(|o| match o {
                Value::String(s) => format!("{s:?}"),
                other => format!("{:?}", other.to_string()),
            })
            .collect();
        let supported = format!("supported values: {}", listed.join(", "));
        errors.push(FieldError::new(
            path,
            ErrorType::NotSupported,
            Some(v.clone()),
            supported,
        ));
    }
    match v {
        Value::String(s) => check_string(s, v, node, path, errors),
        Value::Number(_) => check_number(v, node, path, errors),
        Value::Array(items) => check_array(items, node, path, errors),
        Value::Object(map) => check_object(map, node, path, root, errors),
        _ => {}
    }
    check_combinators(v, node, path, errors);
}

/// JSON equality, numbers compared by value.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// maxLength, minLength, pattern: only the first that fails is reported, as kube-openapi does.
fn check_string(s: &str, v: &Value, node: &Node, path: &str, errors: &mut Vec<FieldError>) {
    let len = s.chars().count() as u64;
    if let Some(max) = node.max_length
        && len > max
    {
        errors.push(FieldError::new(
            path,
            ErrorType::TooLong,
            None,
            format!(
                "may not be more than {max} {}",
                if max == 1 { "byte" } else { "bytes" }
            ),
        ));
        return;
    }
    if let Some(min) = node.min_length
        && len < min
    {
        errors.push(
            invalid(
                path,
                v,
                format!("{path} in body should be at least {min} chars long"),
            )
            .redacted(format!(
                "{path} in body should be at least {min} chars long"
            )),
        );
        return;
    }
    if let Some((text, re)) = &node.pattern
        && !re.is_match(s)
    {
        errors.push(invalid(
            path,
            v,
            format!("{path} in body should match '{text}'"),
        ));
    }
}

fn check_number(v: &Value, node: &Node, path: &str, errors: &mut Vec<FieldError>) {
    let Some(n) = v.as_f64() else { return };
    let bound = |b: &Bound, below: bool| -> Option<String> {
        let limit = go_float(b.value);
        let fails = match (below, b.exclusive) {
            (true, false) => n > b.value,
            (true, true) => n >= b.value,
            (false, false) => n < b.value,
            (false, true) => n <= b.value,
        };
        fails.then(|| match (below, b.exclusive) {
            (true, false) => format!("{path} in body should be less than or equal to {limit}"),
            (true, true) => format!("{path} in body should be less than {limit}"),
            (false, false) => format!("{path} in body should be greater than or equal to {limit}"),
            (false, true) => format!("{path} in body should be greater than {limit}"),
        })
    };
    if let Some(m) = node.multiple_of
        && m > 0.0
        && ((n / m) - (n / m).round()).abs() > 1e-9
    {
        errors.push(invalid(
            path,
            v,
            format!("{path} in body should be a multiple of {}", go_float(m)),
        ));
    }
    if let Some(detail) = node.maximum.as_ref().and_then(|b| bound(b, true)) {
        errors.push(invalid(path, v, detail));
    }
    if let Some(detail) = node.minimum.as_ref().and_then(|b| bound(b, false)) {
        errors.push(invalid(path, v, detail));
    }
}

fn check_array(items: &[Value], node: &Node, path: &str, errors: &mut Vec<FieldError>) {
    let len = items.len() as u64;
    if let Some(max) = node.max_items
        && len > max
    {
        errors.push(FieldError::new(
            path,
            ErrorType::TooMany,
            Some(Value::from(len)),
            format!("must have at most {max} items"),
        ));
    }
    if let Some(min) = node.min_items
        && len < min
    {
        errors.push(FieldError::new(
            path,
            ErrorType::Invalid,
            Some(Value::from(len)),
            format!("{path} in body should have at least {min} items"),
        ));
    }
    if node.list_type == ListType::Set {
        for (i, it) in items.iter().enumerate() {
            if items[..i].iter().any(|earlier| same(earlier, it)) {
                errors.push(FieldError::new(
                    &format!("{path}[{i}]"),
                    ErrorType::Duplicate,
                    Some(it.clone()),
                    "",
                ));
            }
        }
    }
    if let ListType::Map(keys) = &node.list_type {
        let key_of = |it: &Value| -> Value {
            let mut m = serde_json::Map::new();
            for k in keys {
                if let Some(x) = it.get(k) {
                    m.insert(k.clone(), x.clone());
                }
            }
            Value::Object(m)
        };
        for (i, it) in items.iter().enumerate() {
            let key = key_of(it);
            if items[..i].iter().any(|earlier| key_of(earlier) == key) {
                errors.push(FieldError::new(
                    &format!("{path}[{i}]"),
                    ErrorType::Duplicate,
                    Some(key),
                    "",
                ));
            }
        }
    }
    if let Some(item) = &node.items {
        for (i, it) in items.iter().enumerate() {
            check(it, item, &format!("{path}[{i}]"), false, errors);
        }
    }
}

fn check_object(
    map: &serde_json::Map<String, Value>,
    node: &Node,
    path: &str,
    root: bool,
    errors: &mut Vec<FieldError>,
) {
    let count = map.len() as u64;
    if let Some(max) = node.max_properties
        && count > max
    {
        errors.push(FieldError::new(
            path,
            ErrorType::TooMany,
            Some(Value::from(count)),
            format!("must have at most {max} items"),
        ));
    }
    if let Some(min) = node.min_properties
        && count < min
    {
        errors.push(FieldError::new(
            path,
            ErrorType::Invalid,
            Some(Value::from(count)),
            format!("{path} in body should have at least {min} properties"),
        ));
    }
    for k in &node.required {
        if root && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        if !map.contains_key(k) {
            errors.push(FieldError::new(
                &child_path(path, k),
                ErrorType::Required,
                None,
                "",
            ));
        }
    }
    if node.embedded {
        check_embedded(map, path, errors);
    }
    for (k, value) in map {
        let here = child_path(path, k);
        if (root || node.embedded) && matches!(k.as_str(), "apiVersion" | "kind") {
            if node.embedded
                && let Some(child) = node.properties.get(k)
            {
                check(value, child, &here, false, errors);
            }
            continue;
        }
        if (root || node.embedded) && k == "metadata" {
            check_metadata(value, node.properties.get(k), &here, errors);
            continue;
        }
        // Undeclared keys were pruned or are kept unchecked.
        if let Some(child) = node.child(k) {
            check(value, child, &here, false, errors);
        }
    }
}

/// An embedded resource needs `apiVersion` and `kind`, as strings.
fn check_embedded(map: &serde_json::Map<String, Value>, path: &str, errors: &mut Vec<FieldError>) {
    for k in ["apiVersion", "kind"] {
        let here = child_path(path, k);
        match map.get(k) {
            None => errors.push(FieldError::new(&here, ErrorType::Required, None, "")),
            Some(Value::String(s)) if s.is_empty() => errors.push(invalid(
                &here,
                &Value::String(String::new()),
                "must not be empty".into(),
            )),
            Some(Value::String(_)) => {}
            Some(other) => errors.push(invalid(&here, other, "must be a string".into())),
        }
    }
}

/// `metadata` of a resource: an object whose `name` and `generateName` follow the schema's
/// `metadata.properties.name` / `generateName` when it has them.
fn check_metadata(v: &Value, schema: Option<&Node>, path: &str, errors: &mut Vec<FieldError>) {
    let Value::Object(meta) = v else {
        errors.push(type_error(path, v, "object"));
        return;
    };
    let Some(schema) = schema else { return };
    for k in ["name", "generateName"] {
        if let (Some(value), Some(rule)) = (meta.get(k), schema.properties.get(k)) {
            check(value, rule, &child_path(path, k), false, errors);
        }
    }
}

fn check_combinators(v: &Value, node: &Node, path: &str, errors: &mut Vec<FieldError>) {
    let passes = |n: &Node| {
        let mut found = Vec::new();
        check(v, n, path, false, &mut found);
        found.is_empty()
    };
    for n in &node.all_of {
        check(v, n, path, false, errors);
    }
    if !node.any_of.is_empty() && !node.any_of.iter().any(passes) {
        errors.push(invalid(
            path,
            v,
            format!("{path} in body must validate at least one schema (anyOf)"),
        ));
    }
    if !node.one_of.is_empty() && node.one_of.iter().filter(|n| passes(n)).count() != 1 {
        errors.push(invalid(
            path,
            v,
            format!("{path} in body must validate one and only one schema (oneOf)"),
        ));
    }
    if let Some(n) = &node.not
        && passes(n)
    {
        errors.push(invalid(
            path,
            v,
            format!("{path} in body must not validate the schema (not)"),
        ));
    }
}

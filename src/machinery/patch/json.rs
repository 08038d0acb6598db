//! RFC 6902 JSON patch (`application/json-patch+json`) with RFC 6901 JSON pointers.
//!
//! The whole patch is checked for shape first (a malformed document is [`PatchError::Malformed`]),
//! then applied to a copy of the target that replaces it only when every operation succeeded, so a
//! failed `test` or a missing path ([`PatchError::Unprocessable`]) leaves the target unchanged.

use super::merge::kind_of;
use super::{PatchError, json_eq};
use serde_json::{Map, Value};

/// What a `replace` of a path that does not exist does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingReplace {
    /// An error, as RFC 6902 says.
    Fail,
    /// Adds the value to an object that lacks it, as kube-apiserver and kustomize do (both apply
    /// JSON patches with json-patch v4).
    Add,
}

/// Applies an RFC 6902 JSON patch (`add`, `remove`, `replace`, `move`, `copy`, `test`) to `target`,
/// atomically: on error `target` is unchanged.
pub fn json_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    json_patch_with(target, patch, MissingReplace::Fail)
}

/// [`json_patch`], with the given treatment of a `replace` of a missing path.
pub fn json_patch_with(
    target: &mut Value,
    patch: &Value,
    missing: MissingReplace,
) -> Result<(), PatchError> {
    let ops = parse_patch(patch)?;
    let mut doc = target.clone();
    for (index, op) in ops.iter().enumerate() {
        apply_op(&mut doc, op, missing).map_err(|why| {
            PatchError::Unprocessable(format!(
                "operation {index} ({} {:?}): {why}",
                op.name(),
                op.path_text
            ))
        })?;
    }
    *target = doc;
    Ok(())
}

/// One decoded operation.
struct Op<'a> {
    kind: OpKind<'a>,
    path: Vec<String>,
    path_text: &'a str,
}

enum OpKind<'a> {
    Add(&'a Value),
    Remove,
    Replace(&'a Value),
    Move {
        from: Vec<String>,
        from_text: &'a str,
    },
    Copy {
        from: Vec<String>,
    },
    Test(&'a Value),
}

impl Op<'_> {
    fn name(&self) -> &'static str {
        match self.kind {
            OpKind::Add(_) => "add",
            OpKind::Remove => "remove",
            OpKind::Replace(_) => "replace",
            OpKind::Move { .. } => "move",
            OpKind::Copy { .. } => "copy",
            OpKind::Test(_) => "test",
        }
    }
}

fn parse_patch(patch: &Value) -> Result<Vec<Op<'_>>, PatchError> {
    let Value::Array(items) = patch else {
        // Go's words, as kube-apiserver decodes a JSON patch (its default field validation).
        return Err(PatchError::Malformed(format!(
            "error decoding patch: json: cannot unmarshal {} into Go value of type []handlers.jsonPatchOp",
            crate::machinery::gojson::type_name(patch)
        )));
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            parse_op(item)
                .map_err(|why| PatchError::MalformedOp(format!("operation {index}: {why}")))
        })
        .collect()
}

fn parse_op(item: &Value) -> Result<Op<'_>, String> {
    let Value::Object(fields) = item else {
        return Err(format!("must be an object, got {}", kind_of(item)));
    };
    let op = string_member(fields, "op")?;
    let path_text = string_member(fields, "path")?;
    let path = parse_pointer(path_text).map_err(|why| format!("\"path\" {why}"))?;
    let value = || {
        fields
            .get("value")
            .ok_or_else(|| format!("{op} needs a \"value\""))
    };
    let from = || -> Result<(Vec<String>, &str), String> {
        let text = string_member(fields, "from")?;
        let from = parse_pointer(text).map_err(|why| format!("\"from\" {why}"))?;
        Ok((from, text))
    };
    let kind = match op {
        "add" => OpKind::Add(value()?),
        "remove" => OpKind::Remove,
        "replace" => OpKind::Replace(value()?),
        "test" => OpKind::Test(value()?),
        "move" => {
            let (from, from_text) = from()?;
            OpKind::Move { from, from_text }
        }
        "copy" => OpKind::Copy { from: from()?.0 },
        other => return Err(format!("unknown op {other:?}")),
    };
    Ok(Op {
        kind,
        path,
        path_text,
    })
}

fn string_member<'a>(fields: &'a Map<String, Value>, name: &str) -> Result<&'a str, String> {
    match fields.get(name) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(format!(
            "\"{name}\" must be a string, got {}",
            kind_of(other)
        )),
        None => Err(format!("missing \"{name}\"")),
    }
}

/// Parses an RFC 6901 JSON pointer into its unescaped reference tokens (`""` is the whole document).
fn parse_pointer(text: &str) -> Result<Vec<String>, String> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = text.strip_prefix('/') else {
        return Err(format!(
            "{text:?} is not a JSON pointer: it must be empty or start with '/'"
        ));
    };
    rest.split('/')
        .map(|token| {
            let mut out = String::with_capacity(token.len());
            let mut chars = token.chars();
            while let Some(c) = chars.next() {
                if c != '~' {
                    out.push(c);
                    continue;
                }
                match chars.next() {
                    Some('0') => out.push('~'),
                    Some('1') => out.push('/'),
                    _ => {
                        return Err(format!(
                            "{text:?} is not a JSON pointer: '~' must be followed by '0' or '1'"
                        ));
                    }
                }
            }
            Ok(out)
        })
        .collect()
}

fn apply_op(doc: &mut Value, op: &Op<'_>, missing: MissingReplace) -> Result<(), String> {
    match &op.kind {
        OpKind::Add(value) => add(doc, &op.path, (*value).clone()),
        OpKind::Remove => remove(doc, &op.path).map(drop),
        OpKind::Replace(value) => {
            let parent_is_object = || {
                resolve(doc, &op.path[..op.path.len().saturating_sub(1)])
                    .is_ok_and(Value::is_object)
            };
            if missing == MissingReplace::Add
                && resolve(doc, &op.path).is_err()
                && !op.path.is_empty()
                && parent_is_object()
            {
                return add(doc, &op.path, (*value).clone());
            }
            *resolve_mut(doc, &op.path)? = (*value).clone();
            Ok(())
        }
        OpKind::Move { from, from_text } => {
            if op.path.len() > from.len() && op.path.starts_with(from) {
                return Err(format!(
                    "cannot move {from_text:?} into one of its own children"
                ));
            }
            if op.path == *from {
                // Moving a location onto itself is a no-op, but the location must exist.
                resolve(doc, from)?;
                return Ok(());
            }
            let value = remove(doc, from).map_err(|why| format!("from: {why}"))?;
            add(doc, &op.path, value)
        }
        OpKind::Copy { from } => {
            let value = resolve(doc, from)
                .map_err(|why| format!("from: {why}"))?
                .clone();
            add(doc, &op.path, value)
        }
        OpKind::Test(expected) => {
            if json_eq(resolve(doc, &op.path)?, expected) {
                Ok(())
            } else {
                Err("test failed: the value differs".to_string())
            }
        }
    }
}

/// Parses an array index token: decimal digits without leading zeros.
fn array_index(token: &str) -> Option<usize> {
    let valid = !token.is_empty()
        && token.bytes().all(|b| b.is_ascii_digit())
        && (token == "0" || !token.starts_with('0'));
    if valid { token.parse().ok() } else { None }
}

/// Describes the location of `tokens[..=depth]` for messages.
fn location(tokens: &[String], depth: usize) -> String {
    let mut out = String::new();
    for token in &tokens[..=depth] {
        out.push('/');
        out.push_str(&token.replace('~', "~0").replace('/', "~1"));
    }
    out
}

fn step<'v>(value: &'v Value, tokens: &[String], depth: usize) -> Result<&'v Value, String> {
    let token = &tokens[depth];
    let found = match value {
        Value::Object(map) => map.get(token.as_str()),
        Value::Array(items) => array_index(token).and_then(|i| items.get(i)),
        _ => None,
    };
    found.ok_or_else(|| format!("path {:?} does not exist", location(tokens, depth)))
}

fn resolve<'v>(doc: &'v Value, tokens: &[String]) -> Result<&'v Value, String> {
    let mut current = doc;
    for depth in 0..tokens.len() {
        current = step(current, tokens, depth)?;
    }
    Ok(current)
}

fn resolve_mut<'v>(doc: &'v mut Value, tokens: &[String]) -> Result<&'v mut Value, String> {
    let mut current = doc;
    for (depth, token) in tokens.iter().enumerate() {
        let found = match current {
            Value::Object(map) => map.get_mut(token.as_str()),
            Value::Array(items) => array_index(token).and_then(|i| items.get_mut(i)),
            _ => None,
        };
        current =
            found.ok_or_else(|| format!("path {:?} does not exist", location(tokens, depth)))?;
    }
    Ok(current)
}

fn add(doc: &mut Value, tokens: &[String], value: Value) -> Result<(), String> {
    let Some((last, parent_tokens)) = tokens.split_last() else {
        *doc = value;
        return Ok(());
    };
    let depth = tokens.len() - 1;
    match resolve_mut(doc, parent_tokens)? {
        Value::Object(map) => {
            map.insert(last.clone(), value);
            Ok(())
        }
        Value::Array(items) => {
            let index = if last == "-" {
                items.len()
            } else {
                array_index(last)
                    .filter(|i| *i <= items.len())
                    .ok_or_else(|| {
                        format!("array index {:?} is out of bounds", location(tokens, depth))
                    })?
            };
            items.insert(index, value);
            Ok(())
        }
        _ => Err(format!(
            "cannot add {:?}: its parent is neither an object nor an array",
            location(tokens, depth)
        )),
    }
}

fn remove(doc: &mut Value, tokens: &[String]) -> Result<Value, String> {
    let Some((last, parent_tokens)) = tokens.split_last() else {
        return Err("cannot remove the whole document".to_string());
    };
    let depth = tokens.len() - 1;
    let missing = || format!("path {:?} does not exist", location(tokens, depth));
    match resolve_mut(doc, parent_tokens)? {
        Value::Object(map) => map.shift_remove(last.as_str()).ok_or_else(missing),
        Value::Array(items) => match array_index(last) {
            Some(i) if i < items.len() => Ok(items.remove(i)),
            _ => Err(missing()),
        },
        _ => Err(missing()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(target: Value, patch: Value) -> Value {
        let mut doc = target;
        json_patch(&mut doc, &patch).unwrap();
        doc
    }

    fn err(target: Value, patch: Value) -> PatchError {
        let mut doc = target.clone();
        let error = json_patch(&mut doc, &patch).unwrap_err();
        assert_eq!(
            doc, target,
            "a failed patch must leave the target unchanged"
        );
        error
    }

    #[test]
    fn kustomize_mode_adds_on_a_missing_replace() {
        let mut doc = json!({"data": {"a": "1"}, "list": [1]});
        let patch = json!([{"op": "replace", "path": "/data/missing", "value": "x"}]);
        assert!(
            json_patch(&mut doc.clone(), &patch).is_err(),
            "RFC 6902 mode refuses"
        );
        json_patch_with(&mut doc, &patch, MissingReplace::Add).unwrap();
        assert_eq!(doc["data"]["missing"], "x");
        let out_of_range = json!([{"op": "replace", "path": "/list/5", "value": 2}]);
        assert!(
            json_patch_with(&mut doc, &out_of_range, MissingReplace::Add).is_err(),
            "lists are not extended"
        );
    }

    #[test]
    fn a1_add_object_member() {
        let got = ok(
            json!({"foo": "bar"}),
            json!([{"op": "add", "path": "/baz", "value": "qux"}]),
        );
        assert_eq!(got, json!({"baz": "qux", "foo": "bar"}));
    }

    #[test]
    fn a2_add_array_element() {
        let got = ok(
            json!({"foo": ["bar", "baz"]}),
            json!([{"op": "add", "path": "/foo/1", "value": "qux"}]),
        );
        assert_eq!(got, json!({"foo": ["bar", "qux", "baz"]}));
    }

    #[test]
    fn a3_remove_object_member() {
        let got = ok(
            json!({"baz": "qux", "foo": "bar"}),
            json!([{"op": "remove", "path": "/baz"}]),
        );
        assert_eq!(got, json!({"foo": "bar"}));
    }

    #[test]
    fn a4_remove_array_element() {
        let got = ok(
            json!({"foo": ["bar", "qux", "baz"]}),
            json!([{"op": "remove", "path": "/foo/1"}]),
        );
        assert_eq!(got, json!({"foo": ["bar", "baz"]}));
    }

    #[test]
    fn a5_replace_value() {
        let got = ok(
            json!({"baz": "qux", "foo": "bar"}),
            json!([{"op": "replace", "path": "/baz", "value": "boo"}]),
        );
        assert_eq!(got, json!({"baz": "boo", "foo": "bar"}));
    }

    #[test]
    fn a6_move_value() {
        let got = ok(
            json!({"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}}),
            json!([{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}]),
        );
        assert_eq!(
            got,
            json!({"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}})
        );
    }

    #[test]
    fn a7_move_array_element() {
        let got = ok(
            json!({"foo": ["all", "grass", "cows", "eat"]}),
            json!([{"op": "move", "from": "/foo/1", "path": "/foo/3"}]),
        );
        assert_eq!(got, json!({"foo": ["all", "cows", "eat", "grass"]}));
    }

    #[test]
    fn a8_test_success() {
        let target = json!({"baz": "qux", "foo": ["a", 2, "c"]});
        let got = ok(
            target.clone(),
            json!([
                {"op": "test", "path": "/baz", "value": "qux"},
                {"op": "test", "path": "/foo/1", "value": 2}
            ]),
        );
        assert_eq!(got, target);
    }

    #[test]
    fn a9_test_failure_is_422_and_names_the_op() {
        let e = err(
            json!({"baz": "qux"}),
            json!([{"op": "test", "path": "/baz", "value": "bar"}]),
        );
        assert_eq!(e.http_status(), 422);
        let msg = e.to_string();
        assert!(msg.contains("test") && msg.contains("/baz"), "{msg}");
        assert!(
            !msg.contains("qux") && !msg.contains("bar"),
            "no values in messages: {msg}"
        );
    }

    #[test]
    fn a10_add_nested_member_object() {
        let got = ok(
            json!({"foo": "bar"}),
            json!([{"op": "add", "path": "/child", "value": {"grandchild": {}}}]),
        );
        assert_eq!(got, json!({"foo": "bar", "child": {"grandchild": {}}}));
    }

    #[test]
    fn a11_ignores_unrecognized_members() {
        let got = ok(
            json!({"foo": "bar"}),
            json!([{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}]),
        );
        assert_eq!(got, json!({"foo": "bar", "baz": "qux"}));
    }

    #[test]
    fn a12_add_to_nonexistent_target_fails() {
        let e = err(
            json!({"foo": "bar"}),
            json!([{"op": "add", "path": "/baz/bat", "value": "qux"}]),
        );
        assert!(matches!(e, PatchError::Unprocessable(_)), "{e}");
    }

    #[test]
    fn a14_escape_ordering() {
        let target = json!({"/": 9, "~1": 10});
        let got = ok(
            target.clone(),
            json!([{"op": "test", "path": "/~01", "value": 10}]),
        );
        assert_eq!(got, target);
    }

    #[test]
    fn a15_comparing_strings_and_numbers() {
        let e = err(
            json!({"/": 9, "~1": 10}),
            json!([{"op": "test", "path": "/~01", "value": "10"}]),
        );
        assert_eq!(e.http_status(), 422);
    }

    #[test]
    fn a16_add_array_value_with_dash_appends() {
        let got = ok(
            json!({"foo": ["bar"]}),
            json!([{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}]),
        );
        assert_eq!(got, json!({"foo": ["bar", ["abc", "def"]]}));
    }

    #[test]
    fn escaped_slash_in_annotation_key() {
        let got = ok(
            json!({"metadata": {"annotations": {}}}),
            json!([{"op": "add", "path": "/metadata/annotations/example.com~1owner", "value": "me"}]),
        );
        assert_eq!(
            got,
            json!({"metadata": {"annotations": {"example.com/owner": "me"}}})
        );
    }

    #[test]
    fn copy_and_replace_root() {
        let got = ok(
            json!({"a": {"b": 1}}),
            json!([{"op": "copy", "from": "/a", "path": "/c"}, {"op": "replace", "path": "/a/b", "value": 2}]),
        );
        assert_eq!(got, json!({"a": {"b": 2}, "c": {"b": 1}}));
        let got = ok(
            json!({"a": 1}),
            json!([{"op": "replace", "path": "", "value": {"z": 0}}]),
        );
        assert_eq!(got, json!({"z": 0}));
        let got = ok(
            json!({"a": 1}),
            json!([{"op": "add", "path": "", "value": [1]}]),
        );
        assert_eq!(got, json!([1]));
    }

    #[test]
    fn test_compares_numbers_by_value_and_objects_unordered() {
        ok(
            json!({"a": {"x": 1, "y": [1.0]}}),
            json!([{"op": "test", "path": "/a", "value": {"y": [1], "x": 1.0}}]),
        );
    }

    #[test]
    fn failure_after_successful_ops_rolls_everything_back() {
        let e = err(
            json!({"a": 1, "list": [1, 2]}),
            json!([
                {"op": "add", "path": "/b", "value": 2},
                {"op": "remove", "path": "/list/0"},
                {"op": "test", "path": "/a", "value": 5}
            ]),
        );
        assert!(e.to_string().contains("operation 2"), "{e}");
    }

    #[test]
    fn missing_paths_and_bad_indices_are_unprocessable() {
        for op in [
            json!({"op": "remove", "path": "/nope"}),
            json!({"op": "replace", "path": "/nope", "value": 1}),
            json!({"op": "test", "path": "/nope", "value": 1}),
            json!({"op": "move", "from": "/nope", "path": "/x"}),
            json!({"op": "copy", "from": "/nope", "path": "/x"}),
            json!({"op": "add", "path": "/list/3", "value": 1}),
            json!({"op": "add", "path": "/list/01", "value": 1}),
            json!({"op": "remove", "path": "/list/-"}),
            json!({"op": "remove", "path": "/list/2"}),
            json!({"op": "replace", "path": "/list/x", "value": 1}),
            json!({"op": "add", "path": "/a/b", "value": 1}),
            json!({"op": "remove", "path": ""}),
            json!({"op": "move", "from": "/m", "path": "/m/child"}),
        ] {
            let e = err(
                json!({"a": 1, "list": [1, 2], "m": {}}),
                json!([op.clone()]),
            );
            assert!(matches!(e, PatchError::Unprocessable(_)), "{op}: {e}");
        }
    }

    #[test]
    fn add_at_end_index_and_move_onto_itself() {
        let got = ok(
            json!({"l": [1]}),
            json!([{"op": "add", "path": "/l/1", "value": 2}]),
        );
        assert_eq!(got, json!({"l": [1, 2]}));
        let got = ok(
            json!({"a": 1}),
            json!([{"op": "move", "from": "/a", "path": "/a"}]),
        );
        assert_eq!(got, json!({"a": 1}));
    }

    #[test]
    fn a_document_that_is_no_list_is_400_a_malformed_operation_422() {
        let e = err(json!({"a": 1}), json!({"op": "add"}));
        assert_eq!(
            e,
            PatchError::Malformed(
                "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp".into()
            )
        );
        assert_eq!(e.http_status(), 400);
        for patch in [
            json!([1]),
            json!([{"path": "/a"}]),
            json!([{"op": "add", "value": 1}]),
            json!([{"op": "add", "path": "/a"}]),
            json!([{"op": "replace", "path": "/a"}]),
            json!([{"op": "test", "path": "/a"}]),
            json!([{"op": "move", "path": "/a"}]),
            json!([{"op": "copy", "path": "/a", "from": 3}]),
            json!([{"op": "frobnicate", "path": "/a"}]),
            json!([{"op": "add", "path": "a", "value": 1}]),
            json!([{"op": "add", "path": "/a~2", "value": 1}]),
            json!([{"op": "add", "path": "/a~", "value": 1}]),
            json!([{"op": "add", "path": 5, "value": 1}]),
        ] {
            let e = err(json!({"a": 1}), patch.clone());
            assert!(matches!(e, PatchError::MalformedOp(_)), "{patch}: {e}");
            assert_eq!(e.http_status(), 422);
        }
    }

    #[test]
    fn malformed_op_late_in_the_list_applies_nothing() {
        let e = err(
            json!({"a": 1}),
            json!([{"op": "add", "path": "/b", "value": 1}, {"op": "nope", "path": "/c"}]),
        );
        assert!(e.to_string().contains("operation 1"), "{e}");
    }

    #[test]
    fn empty_patch_is_a_no_op() {
        assert_eq!(ok(json!({"a": 1}), json!([])), json!({"a": 1}));
    }
}

//! kyaml field paths, as kustomize's replacements read and write them.
//!
//! A path is `.`-separated: `spec.template.spec.containers.[name=nginx].image`. Parts are a field (or map
//! key), a list index (`0`), `*` (every list item), or `[field=value]` (list items whose `field` matches).
//! `\.` escapes a dot, and `[a.b/c]` (brackets without `=`) is one map key with dots in it.
//!
//! Two readings, as in kyaml:
//! - [`get`] (kyaml's `PathGetter`, for a replacement source): `[field=value]` is an exact match and the
//!   first matching item is taken; `-` is the last item; `*` is refused.
//! - [`find`] (kyaml's `PathMatcher`, for targets): `[field=value]` is an *unanchored regular expression*
//!   (`[name=web]` also matches `webhook`) and every match is returned, as is every item under `*`. With
//!   `create`, missing fields, `[field=value]` items and the item just past the end of a list are created.

use super::scalar::{is_scalar, kind_name, resolve_plain, text_of};
use serde_json::Value;

mod matcher;

pub use matcher::find;

/// Why a path cannot be followed (kyaml's messages).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldPathError {
    #[error("wrong node kind: expected {expected} but got {got}")]
    WrongKind {
        expected: &'static str,
        got: &'static str,
    },
    #[error("index {index} specified but only {len} elements found")]
    IndexOutOfRange { index: usize, len: usize },
    #[error("array index {0} cannot be negative")]
    NegativeIndex(i64),
    #[error("wildcard is not supported in PathGetter")]
    Wildcard,
    #[error("list path element must contain fieldName=fieldValue for element to match")]
    NotFieldValue,
    #[error("error parsing regexp: {0}")]
    Regex(String),
}

/// One step from a node to a child.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// A node a target path reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// The node at `path` from the object's root. `untagged` when the node is a scalar this search
    /// created: its text will be typed afresh when set.
    Node { path: Vec<Step>, untagged: bool },
    /// kyaml "created" the node under a `null`, where nothing of it shows in the output.
    Detached,
}

/// The kind of node to create at the end of a path: that of the value to be written there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    Scalar,
    Mapping,
    Sequence,
}

impl NodeKind {
    pub fn of(value: &Value) -> Self {
        match value {
            Value::Object(_) => NodeKind::Mapping,
            Value::Array(_) => NodeKind::Sequence,
            _ => NodeKind::Scalar,
        }
    }
}

/// Splits a replacement field path into parts (kyaml's `SmarterPathSplitter`).
pub fn parse(path: &str) -> Vec<String> {
    // Escaped delimiters first: `a\.b` is one part.
    let mut split: Vec<String> = Vec::new();
    for piece in path.split('.') {
        match split.last_mut() {
            Some(last) if last.ends_with('\\') => {
                last.pop();
                last.push('.');
                last.push_str(piece);
            }
            _ => split.push(piece.to_string()),
        }
    }
    let mut parts = Vec::new();
    let mut i = 0;
    while i < split.len() {
        let elem = &split[i];
        if elem.starts_with('[') && !elem.ends_with(']') {
            let mut bracketed = vec![elem.clone()];
            while i < split.len() - 1 {
                i += 1;
                bracketed.push(split[i].clone());
                if split[i].ends_with(']') {
                    break;
                }
            }
            let joined = bracketed.join(".");
            if joined.contains('=') {
                parts.push(joined);
            } else {
                parts.push(joined.trim_matches(|c| c == '[' || c == ']').to_string());
            }
        } else {
            parts.push(elem.clone());
        }
        i += 1;
    }
    parts
}

/// Go's `strconv.Atoi`: optional sign, decimal digits, within 64 bits.
fn go_atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i64>().ok()
}

fn is_list_index(part: &str) -> bool {
    part.len() >= 2 && part.starts_with('[') && part.ends_with(']')
}

/// `[name=value]` → (`name`, `value`); the name is empty for `[=value]`.
fn split_field_value(part: &str) -> Result<(&str, &str), FieldPathError> {
    let inner = part.strip_prefix('[').unwrap_or(part);
    let inner = inner.strip_suffix(']').unwrap_or(inner);
    inner.split_once('=').ok_or(FieldPathError::NotFieldValue)
}

fn elements(node: &Value) -> Result<&[Value], FieldPathError> {
    match node {
        Value::Array(items) => Ok(items),
        Value::Null => Ok(&[]),
        other => Err(FieldPathError::WrongKind {
            expected: "SequenceNode",
            got: kind_name(other),
        }),
    }
}

/// The node at `parts` (from [`parse`]), as kyaml's `PathGetter` finds it;
/// `None` when some part is missing.
pub fn get<'v>(obj: &'v Value, parts: &[String]) -> Result<Option<&'v Value>, FieldPathError> {
    let mut cur = obj;
    for part in parts.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        let next = if let Some(i) = go_atoi(part) {
            if i < 0 {
                return Err(FieldPathError::NegativeIndex(i));
            }
            elements(cur)?.get(i as usize)
        } else if part == "-" {
            elements(cur)?.last()
        } else if part == "*" {
            return Err(FieldPathError::Wildcard);
        } else if is_list_index(part) {
            let (field, value) = split_field_value(part)?;
            elements(cur)?.iter().find(|item| {
                if field.is_empty() {
                    is_scalar(item) && text_of(item) == value
                } else {
                    item.get(field).is_some_and(|v| text_of(v) == value)
                }
            })
        } else {
            match cur {
                Value::Null => None,
                Value::Object(map) => map.get(part),
                other => {
                    return Err(FieldPathError::WrongKind {
                        expected: "MappingNode",
                        got: kind_name(other),
                    });
                }
            }
        };
        match next {
            Some(v) => cur = v,
            None => return Ok(None),
        }
    }
    Ok(Some(cur))
}

/// The node at `path` (from [`find`]).
pub fn node_mut<'v>(obj: &'v mut Value, path: &[Step]) -> Option<&'v mut Value> {
    let mut cur = obj;
    for step in path {
        cur = match step {
            Step::Key(k) => cur.as_object_mut()?.get_mut(k)?,
            Step::Index(i) => cur.as_array_mut()?.get_mut(*i)?,
        };
    }
    Some(cur)
}

/// Writes `value` at every node `parts` reaches, as a replacement (without `delimiter`) does: a scalar
/// keeps its type, anything else is replaced. Returns how many nodes were written.
#[cfg(test)]
pub fn set(
    obj: &mut Value,
    parts: &[String],
    value: &Value,
    create: bool,
) -> Result<usize, SetError> {
    let found = find(obj, parts, create.then(|| NodeKind::of(value)))?;
    let mut written = 0;
    for f in found {
        if let Found::Node { path, untagged } = f
            && let Some(node) = node_mut(obj, &path)
        {
            *node = write_value(node, untagged, value, None)?;
            written += 1;
        }
    }
    Ok(written)
}

/// A value could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetError {
    #[error(transparent)]
    Path(#[from] FieldPathError),
    #[error("cannot decode {resolved} as a {tag}")]
    Decode {
        resolved: &'static str,
        tag: &'static str,
    },
}

/// What a target node becomes when `value` is written to it (kustomize's `setTargetValue`): a scalar
/// takes the value's text (or `text`, when given) and keeps its type; a mapping or sequence is replaced.
pub fn write_value(
    node: &Value,
    untagged: bool,
    value: &Value,
    text: Option<String>,
) -> Result<Value, SetError> {
    if !is_scalar(node) {
        return Ok(value.clone());
    }
    let text = text.unwrap_or_else(|| text_of(value));
    if untagged {
        return Ok(resolve_plain(&text));
    }
    super::scalar::decode_as(super::scalar::tag_of(node), &text).map_err(|e| SetError::Decode {
        resolved: e.resolved,
        tag: e.tag,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(s: &str) -> Vec<String> {
        parse(s)
    }

    fn deployment() -> Value {
        json!({
            "metadata": {"name": "d", "annotations": {"a.b/c": "x", "q": "123"}},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [
                {"name": "VirtualNetworksSubnet", "image": "nginx", "ports": [{"containerPort": 80}]},
                {"name": "side", "image": "busybox", "args": ["--a", "--b"]}
            ]}}}
        })
    }

    #[test]
    fn splits_paths_like_kyaml() {
        assert_eq!(p("a.b.0.c"), ["a", "b", "0", "c"]);
        assert_eq!(
            p("spec.containers.[name=com.foo.app].image"),
            ["spec", "containers", "[name=com.foo.app]", "image"]
        );
        assert_eq!(
            p("metadata.labels.[app.kubernetes.io/name]"),
            ["metadata", "labels", "app.kubernetes.io/name"]
        );
        assert_eq!(
            p(r"metadata.annotations.a\.b/c"),
            ["metadata", "annotations", "a.b/c"]
        );
        assert_eq!(p("a.[q]"), ["a", "[q]"]);
    }

    #[test]
    fn get_is_exact_and_takes_the_first() {
        let d = deployment();
        let get_s = |s: &str| get(&d, &p(s)).unwrap().cloned();
        assert_eq!(
            get_s("spec.template.spec.containers.[name=side].image"),
            Some(json!("busybox"))
        );
        assert_eq!(
            get_s("spec.template.spec.containers.[name=sid].image"),
            None
        );
        assert_eq!(
            get_s("spec.template.spec.containers.-.name"),
            Some(json!("side"))
        );
        assert_eq!(get_s("spec.template.spec.containers.9.name"), None);
        assert_eq!(
            get_s("spec.template.spec.containers.1.args.[=--b]"),
            Some(json!("--b"))
        );
        assert_eq!(get_s("metadata.annotations.[a.b/c]"), Some(json!("x")));
        assert_eq!(
            get(&d, &p("spec.template.spec.containers.*.image")),
            Err(FieldPathError::Wildcard)
        );
        assert_eq!(
            get(&d, &p("spec.template.spec.containers.-1.image")),
            Err(FieldPathError::NegativeIndex(-1))
        );
        assert_eq!(
            get(&d, &p("spec.template.spec.containers.image")),
            Err(FieldPathError::WrongKind {
                expected: "MappingNode",
                got: "SequenceNode"
            })
        );
    }

    #[test]
    fn set_keeps_scalar_types_and_creates() {
        let mut d = deployment();
        assert_eq!(set(&mut d, &p("spec.replicas"), &json!("5"), false), Ok(1));
        assert_eq!(d["spec"]["replicas"], json!(5));
        assert_eq!(
            set(&mut d, &p("spec.replicas"), &json!("a.b"), false),
            Err(SetError::Decode {
                resolved: "!!str",
                tag: "!!int"
            })
        );
        set(&mut d, &p("metadata.annotations.q"), &json!(7), false).unwrap();
        assert_eq!(d["metadata"]["annotations"]["q"], json!("7"));
        // Created scalars are typed from their text.
        set(&mut d, &p("spec.new.a"), &json!("8080"), true).unwrap();
        assert_eq!(d["spec"]["new"]["a"], json!(8080));
        set(&mut d, &p("spec.lst.0.x"), &json!("v"), true).unwrap();
        assert_eq!(d["spec"]["lst"], json!([{"x": "v"}]));
        set(
            &mut d,
            &p("spec.template.spec.containers.[name=new].image"),
            &json!("img"),
            true,
        )
        .unwrap();
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][2],
            json!({"name": "new", "image": "img"})
        );
        set(
            &mut d,
            &p("spec.template.spec.containers.1.args.2"),
            &json!("9"),
            true,
        )
        .unwrap();
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][1]["args"],
            json!(["--a", "--b", 9])
        );
        // A map replaces whatever was there; written into a string it leaves "".
        set(&mut d, &p("spec.template"), &json!({"k": 1}), false).unwrap();
        assert_eq!(d["spec"]["template"], json!({"k": 1}));
        set(&mut d, &p("metadata.name"), &json!({"k": 1}), false).unwrap();
        assert_eq!(d["metadata"]["name"], json!(""));
    }
}

//! `vars` (deprecated in kustomize, still supported): `$(NAME)` in the fields of the `varReference`
//! configuration is replaced by a field of an object, once the whole build is done.
//!
//! A var names an object by `objref` (apiVersion, kind, name, maybe namespace), matched against the current
//! or any previous identity of the objects of the var's kustomization when it is built (so a var names the
//! object of its own kustomization even when another one later has the same original name), and a field by
//! `fieldref.fieldpath`
//! (dotted, with `[n]` list indices or `[key=value]` element selectors; `metadata.name` by default). A string
//! that is exactly `$(NAME)` takes the field's value with its type; elsewhere the value is written as text.
//! `$$` is a literal `$`, and references to unknown names are left as written.

use super::error::RenderError;
use super::fieldspec::{self, FieldSpec};
use super::kustomization::Var;
use super::resid::{Gvk, ResId};
use super::resources::{ResMap, Resource};
use crate::object::split_api_version;
use serde_json::Value;
use std::path::PathBuf;

/// Replaces var references in every object.
pub fn resolve(
    resources: &mut ResMap,
    vars: &[(Var, PathBuf)],
    specs: &[FieldSpec],
) -> Result<(), RenderError> {
    if vars.is_empty() {
        return Ok(());
    }
    let mut values: Vec<(String, Value)> = Vec::new();
    for (var, file) in vars {
        let err = |problem: String| RenderError::Build {
            file: file.clone(),
            problem: format!("var `{}`: {problem}", var.name),
        };
        let target = find_target(resources.resources(), var).map_err(&err)?;
        let value = field_value(target.object(), &var.field_path).ok_or_else(|| {
            err(format!(
                "field {} not found in {}",
                var.field_path,
                target.cur_id()
            ))
        })?;
        values.push((var.name.clone(), value));
    }
    let lookup = |name: &str| {
        values
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    for res in resources.resources_mut() {
        let gvk = res.gvk();
        let id = res.cur_id();
        for spec in specs {
            fieldspec::apply(
                res.object_mut(),
                &gvk,
                spec,
                fieldspec::Create::Scalar,
                &mut |node| substitute(node, &lookup),
            )
            .map_err(|problem| RenderError::Reference {
                origin: res.sourced.origin.clone(),
                id: id.to_string(),
                problem: format!("replacing vars: {problem}"),
            })?;
        }
    }
    Ok(())
}

/// Binds `var` to the one object of `resources` its `objref` names (none is fine: the var then fails when
/// resolved, unless another object is bound to it).
pub fn bind(resources: &mut ResMap, var: &Var) -> Result<(), String> {
    let (group, version) = split_api_version(&var.api_version);
    let wanted = ResId {
        gvk: Gvk {
            group: group.to_string(),
            version: version.to_string(),
            kind: var.kind.clone(),
        },
        name: var.obj_name.clone(),
        namespace: var.namespace.clone(),
    };
    let matches = |id: &ResId| {
        id.name == wanted.name
            && id.gvk == wanted.gvk
            && (wanted.namespace.is_empty() || id.same_namespace(&wanted))
    };
    let found: Vec<usize> = (0..resources.len())
        .filter(|&i| {
            let r = &resources.resources()[i];
            matches(&r.cur_id()) || r.prev_ids().iter().any(matches)
        })
        .collect();
    match found.as_slice() {
        [] => Ok(()),
        [one] => {
            resources.resources_mut()[*one]
                .var_names
                .push(var.name.clone());
            Ok(())
        }
        several => Err(format!(
            "var `{}`: {} objects match {} {}/{}: cannot tell which one to take the value from",
            var.name,
            several.len(),
            var.api_version,
            var.kind,
            var.obj_name
        )),
    }
}

/// The object bound to a var.
fn find_target<'a>(list: &'a [Resource], var: &Var) -> Result<&'a Resource, String> {
    list.iter()
        .find(|r| r.var_names.contains(&var.name))
        .ok_or_else(|| {
            format!(
                "no object {} {}/{} to take the value from",
                var.api_version, var.kind, var.obj_name
            )
        })
}

/// The value at a dotted field path (`a.b[0].c`, `a[name=x].b`).
pub fn field_value(obj: &Value, path: &str) -> Option<Value> {
    let mut node = obj;
    for segment in path.split('.') {
        let (field, selectors) = match segment.find('[') {
            Some(i) => (&segment[..i], &segment[i..]),
            None => (segment, ""),
        };
        if !field.is_empty() {
            node = node.get(field)?;
        }
        for sel in selectors.split(']').filter(|s| !s.is_empty()) {
            let sel = sel.strip_prefix('[')?;
            let items = node.as_array()?;
            node = match sel.split_once('=') {
                Some((k, v)) => items.iter().find(|i| {
                    i.get(k)
                        .is_some_and(|x| scalar_text(x).as_deref() == Some(v))
                })?,
                None => items.get(sel.parse::<usize>().ok()?)?,
            };
        }
    }
    match node {
        Value::Array(_) | Value::Object(_) | Value::Null => None,
        v => Some(v.clone()),
    }
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Expands var references in a string, a list of strings, or the string values of a mapping.
fn substitute(node: &mut Value, lookup: &dyn Fn(&str) -> Option<Value>) -> Result<(), String> {
    match node {
        Value::String(s) => {
            *node = expand(s, lookup);
            Ok(())
        }
        Value::Object(map) => {
            for v in map.values_mut() {
                if let Value::String(s) = v {
                    *v = expand(s, lookup);
                }
            }
            Ok(())
        }
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::String(s) => *item = expand(s, lookup),
                    _ => return Err("a list with var references must hold strings".into()),
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Kubernetes' `$(VAR)` expansion, keeping the value's type when the whole string is one reference.
fn expand(input: &str, lookup: &dyn Fn(&str) -> Option<Value>) -> Value {
    let bytes = input.as_bytes();
    let mut out = String::new();
    let mut checkpoint = 0;
    let mut cursor = 0;
    while cursor < bytes.len() {
        if bytes[cursor] == b'$' && cursor + 1 < bytes.len() {
            out.push_str(&input[checkpoint..cursor]);
            let rest = &input[cursor + 1..];
            let advance = match rest.as_bytes()[0] {
                b'$' => {
                    out.push('$');
                    1
                }
                b'(' => match rest.find(')') {
                    Some(close) => {
                        let name = &rest[1..close];
                        let value = lookup(name);
                        if input.len() == close + 2 && cursor == 0 {
                            return value.unwrap_or_else(|| Value::String(input.to_string()));
                        }
                        match value {
                            Some(Value::String(s)) => out.push_str(&s),
                            Some(v) => out.push_str(&v.to_string()),
                            None => out.push_str(&format!("$({name})")),
                        }
                        close + 1
                    }
                    None => {
                        out.push_str("$(");
                        1
                    }
                },
                _ => {
                    let c = rest.chars().next().expect("not empty");
                    out.push('$');
                    out.push(c);
                    c.len_utf8()
                }
            };
            cursor += advance + 1;
            checkpoint = cursor;
        } else {
            cursor += 1;
        }
    }
    out.push_str(&input[checkpoint.min(input.len())..]);
    Value::String(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lookup(name: &str) -> Option<Value> {
        match name {
            "PORT" => Some(json!(8080)),
            "HOST" => Some(json!("db")),
            _ => None,
        }
    }

    #[test]
    fn expands_like_kubernetes() {
        assert_eq!(expand("$(PORT)", &lookup), json!(8080));
        assert_eq!(expand("$(HOST):$(PORT)", &lookup), json!("db:8080"));
        assert_eq!(expand("$(NOPE)", &lookup), json!("$(NOPE)"));
        assert_eq!(expand("x $(NOPE) y", &lookup), json!("x $(NOPE) y"));
        assert_eq!(expand("$$(HOST)", &lookup), json!("$(HOST)"));
        assert_eq!(expand("a$b", &lookup), json!("a$b"));
        assert_eq!(expand("$(HOST", &lookup), json!("$(HOST"));
        assert_eq!(expand("cost: 5$", &lookup), json!("cost: 5$"));
    }

    #[test]
    fn reads_field_paths() {
        let obj = json!({"spec": {"containers": [{"name": "a", "ports": [{"p": 1}, {"p": 2}]}]}});
        assert_eq!(
            field_value(&obj, "spec.containers[0].ports[1].p"),
            Some(json!(2))
        );
        assert_eq!(
            field_value(&obj, "spec.containers[name=a].name"),
            Some(json!("a"))
        );
        assert_eq!(field_value(&obj, "spec.missing"), None);
    }
}

//! kyaml's `PathMatcher`: every node a target path reaches, creating missing parts when asked.

use super::super::scalar::{kind_name, match_text, resolve_plain};
use super::{FieldPathError, Found, NodeKind, Step, go_atoi, is_list_index, split_field_value};
use serde_json::{Map, Value};

/// Every node `parts` reaches in `obj`, as kyaml's `PathMatcher` finds them; with `create`, the missing
/// parts are created on the way, the last one as a node of that kind. An empty result means not found.
pub fn find(
    obj: &mut Value,
    parts: &[String],
    create: Option<NodeKind>,
) -> Result<Vec<Found>, FieldPathError> {
    let mut matcher = Matcher {
        parts,
        create,
        untagged: Vec::new(),
    };
    let mut out = Vec::new();
    matcher.filter(obj, 0, &mut Vec::new(), &mut out)?;
    for found in &mut out {
        if let Found::Node { path, untagged } = found {
            *untagged = matcher.untagged.contains(path);
        }
    }
    Ok(out)
}

struct Matcher<'p> {
    parts: &'p [String],
    create: Option<NodeKind>,
    /// Scalars created by this search (untagged in kyaml).
    untagged: Vec<Vec<Step>>,
}

impl Matcher<'_> {
    fn filter(
        &mut self,
        node: &mut Value,
        i: usize,
        at: &mut Vec<Step>,
        out: &mut Vec<Found>,
    ) -> Result<(), FieldPathError> {
        let Some(part) = self.parts.get(i) else {
            out.push(Found::Node {
                path: at.clone(),
                untagged: false,
            });
            return Ok(());
        };
        if let Some(index) = go_atoi(part).filter(|n| *n >= 0) {
            self.index(node, index as usize, i, at, out)
        } else if is_list_index(part) {
            self.items(node, i, at, out, true)
        } else if part == "*" {
            self.every(node, i, at, out)
        } else {
            self.field(node, i, at, out)
        }
    }

    /// The kind of node to create for part `i`, from what follows it (kyaml's `getPathPartKind`).
    fn kind_for(&self, i: usize, create: NodeKind) -> NodeKind {
        match self.parts.get(i + 1) {
            None => create,
            Some(next) if is_list_index(next) || go_atoi(next).is_some_and(|n| n >= 0) => {
                NodeKind::Sequence
            }
            Some(_) => NodeKind::Mapping,
        }
    }

    /// A new node of `kind` at `path`; a scalar is recorded as untagged.
    fn new_node(&mut self, kind: NodeKind, path: Vec<Step>) -> Value {
        match kind {
            NodeKind::Mapping => Value::Object(Map::new()),
            NodeKind::Sequence => Value::Array(Vec::new()),
            NodeKind::Scalar => {
                self.untagged.push(path);
                Value::Null
            }
        }
    }

    fn field(
        &mut self,
        node: &mut Value,
        i: usize,
        at: &mut Vec<Step>,
        out: &mut Vec<Found>,
    ) -> Result<(), FieldPathError> {
        let name = &self.parts[i];
        let map = match node {
            Value::Object(map) => map,
            Value::Null => {
                if self.create.is_some() {
                    out.push(Found::Detached);
                }
                return Ok(());
            }
            other => {
                return Err(FieldPathError::WrongKind {
                    expected: "MappingNode",
                    got: kind_name(other),
                });
            }
        };
        if !map.contains_key(name.as_str()) {
            let Some(create) = self.create else {
                return Ok(());
            };
            let mut path = at.clone();
            path.push(Step::Key(name.clone()));
            let kind = self.kind_for(i, create);
            let child = self.new_node(kind, path);
            map.insert(name.clone(), child);
        }
        let child = map
            .get_mut(name.as_str())
            .expect("present or just inserted");
        at.push(Step::Key(name.clone()));
        let result = self.filter(child, i + 1, at, out);
        at.pop();
        result
    }

    fn index(
        &mut self,
        node: &mut Value,
        index: usize,
        i: usize,
        at: &mut Vec<Step>,
        out: &mut Vec<Found>,
    ) -> Result<(), FieldPathError> {
        let items = match node {
            Value::Array(items) => items,
            Value::Null => {
                if self.create.is_some() && index == 0 {
                    out.push(Found::Detached);
                    return Ok(());
                }
                return Err(FieldPathError::IndexOutOfRange { index, len: 0 });
            }
            other => {
                return Err(FieldPathError::WrongKind {
                    expected: "SequenceNode",
                    got: kind_name(other),
                });
            }
        };
        if let Some(create) = self.create
            && items.len() == index
        {
            let mut path = at.clone();
            path.push(Step::Index(index));
            let kind = self.kind_for(i, create);
            let item = self.new_node(kind, path);
            items.push(item);
        }
        if items.len() < index + 1 {
            return Err(FieldPathError::IndexOutOfRange {
                index,
                len: items.len(),
            });
        }
        at.push(Step::Index(index));
        let result = self.filter(&mut items[index], i + 1, at, out);
        at.pop();
        result
    }

    /// `[field=regex]`: every item whose `field` matches; `[=regex]`: every scalar item that matches.
    fn items(
        &mut self,
        node: &mut Value,
        i: usize,
        at: &mut Vec<Step>,
        out: &mut Vec<Found>,
        may_create: bool,
    ) -> Result<(), FieldPathError> {
        let part = &self.parts[i];
        let (field, pattern) = split_field_value(part)?;
        let items = match node {
            Value::Array(items) => items,
            Value::Null => {
                if self.create.is_some() {
                    out.push(Found::Detached);
                }
                return Ok(());
            }
            other => {
                return Err(FieldPathError::WrongKind {
                    expected: "SequenceNode",
                    got: kind_name(other),
                });
            }
        };
        let before = out.len();
        if !items.is_empty() {
            let re = crate::render::selector::cached_regex(pattern).map_err(|e| {
                // The regex crate's message ends with its reason (`error: unclosed group`).
                let message = e.to_string();
                let reason = message.lines().last().unwrap_or_default().trim();
                let reason = reason.trim_start_matches("error: ");
                FieldPathError::Regex(format!("{reason}: `{pattern}`"))
            })?;
            for (j, item) in items.iter_mut().enumerate() {
                if field.is_empty() {
                    // kyaml takes the matching item itself, whatever follows in the path.
                    if re.is_match(match_text(item).trim()) {
                        let mut path = at.clone();
                        path.push(Step::Index(j));
                        out.push(Found::Node {
                            path,
                            untagged: false,
                        });
                    }
                } else if item
                    .get(field)
                    .is_some_and(|v| re.is_match(match_text(v).trim()))
                {
                    at.push(Step::Index(j));
                    let result = self.filter(item, i + 1, at, out);
                    at.pop();
                    result?;
                }
            }
        }
        if out.len() > before || self.create.is_none() || !may_create {
            return Ok(());
        }
        let index = items.len();
        let mut path = at.clone();
        path.push(Step::Index(index));
        let value = resolve_plain(pattern);
        if field.is_empty() {
            items.push(value);
        } else {
            let mut item = Map::new();
            item.insert(field.to_string(), value);
            items.push(Value::Object(item));
            path.push(Step::Key(field.to_string()));
        }
        self.untagged.push(path);
        // Search again: the new item matches unless the pattern does not match itself.
        self.items(node, i, at, out, false)
    }

    fn every(
        &mut self,
        node: &mut Value,
        i: usize,
        at: &mut Vec<Step>,
        out: &mut Vec<Found>,
    ) -> Result<(), FieldPathError> {
        let items = match node {
            Value::Array(items) => items,
            Value::Null => return Ok(()),
            other => {
                return Err(FieldPathError::WrongKind {
                    expected: "SequenceNode",
                    got: kind_name(other),
                });
            }
        };
        for (j, item) in items.iter_mut().enumerate() {
            at.push(Step::Index(j));
            let result = self.filter(item, i + 1, at, out);
            at.pop();
            result?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse as p;
    use super::*;
    use serde_json::json;

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
    fn find_matches_unanchored_regexes_and_wildcards() {
        let mut d = deployment();
        let found = find(
            &mut d,
            &p("spec.template.spec.containers.[name=VirtualNetwork].image"),
            None,
        )
        .unwrap();
        assert_eq!(found.len(), 1);
        let found = find(&mut d, &p("spec.template.spec.containers.*.image"), None).unwrap();
        assert_eq!(found.len(), 2);
        // A wildcard item without the field is skipped; none at all is "not found".
        let found = find(&mut d, &p("spec.template.spec.containers.*.args"), None).unwrap();
        assert_eq!(found.len(), 1);
        assert!(find(&mut d, &p("spec.nothing"), None).unwrap().is_empty());
        assert_eq!(
            find(
                &mut d,
                &p("spec.template.spec.containers.0.ports.5.containerPort"),
                None
            ),
            Err(FieldPathError::IndexOutOfRange { index: 5, len: 1 })
        );
        assert_eq!(
            find(&mut d, &p("metadata.annotations.*"), None),
            Err(FieldPathError::WrongKind {
                expected: "SequenceNode",
                got: "MappingNode"
            })
        );
        assert_eq!(
            find(&mut d, &p("metadata.annotations.[q]"), None),
            Err(FieldPathError::NotFieldValue)
        );
        assert_eq!(
            find(
                &mut d,
                &p("spec.template.spec.containers.[name=(].image"),
                None
            ),
            Err(FieldPathError::Regex("unclosed group: `(`".into()))
        );
    }

    #[test]
    fn create_under_null_changes_nothing() {
        let mut d = json!({"spec": {"labels": null}});
        let found = find(&mut d, &p("spec.labels.x"), Some(NodeKind::Scalar)).unwrap();
        assert_eq!(found, vec![Found::Detached]);
        assert_eq!(d, json!({"spec": {"labels": null}}));
        assert!(find(&mut d, &p("spec.labels.x"), None).unwrap().is_empty());
    }
}

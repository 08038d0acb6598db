//! Server-side printing: the `Table` form `kubectl get` asks for, with a CRD's additional printer
//! columns evaluated by a small JSONPath subset (`.a.b`, `.a[0]`, `.a[?(@.k=="v")].b`).

use super::registry::ResourceType;
use serde_json::{Value, json};

/// How much of each object a Table row carries (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(v: Option<&str>) -> Self {
        match v {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        }
    }
}

struct Column {
    name: String,
    type_: String,
    format: String,
    priority: i64,
    json_path: Option<String>,
}

fn columns(rt: &ResourceType) -> Vec<Column> {
    let col = |name: &str, type_: &str, path: Option<&str>, priority: i64| Column {
        name: name.into(),
        type_: type_.into(),
        format: if name == "Name" {
            "name".into()
        } else {
            String::new()
        },
        priority,
        json_path: path.map(str::to_string),
    };
    let mut cols = vec![col("Name", "string", None, 0)];
    if rt.custom {
        let mut has_age = false;
        for pc in &rt.printer_columns {
            has_age |= pc.json_path == ".metadata.creationTimestamp";
            cols.push(col(&pc.name, &pc.type_, Some(&pc.json_path), pc.priority));
        }
        if !has_age {
            cols.push(col("Age", "date", Some(".metadata.creationTimestamp"), 0));
        }
        return cols;
    }
    match rt.kind.as_str() {
        "Secret" => {
            cols.push(col("Type", "string", Some(".type"), 0));
            cols.push(col("Data", "integer", Some("#data"), 0));
        }
        "ConfigMap" => cols.push(col("Data", "integer", Some("#data"), 0)),
        "Namespace" => cols.push(col("Status", "string", Some(".status.phase"), 0)),
        "Service" => {
            cols.push(col("Type", "string", Some(".spec.type"), 0));
            cols.push(col("Cluster-IP", "string", Some(".spec.clusterIP"), 0));
        }
        _ => {}
    }
    cols.push(col("Age", "date", Some(".metadata.creationTimestamp"), 0));
    cols
}

/// Builds a Table of `objects` (already in the requested version).
pub fn table(
    rt: &ResourceType,
    objects: &[Value],
    resource_version: &str,
    include: IncludeObject,
    now: chrono::DateTime<chrono::Utc>,
) -> Value {
    let cols = columns(rt);
    let defs: Vec<Value> = cols
        .iter()
        .map(|c| json!({"name": c.name, "type": c.type_, "format": c.format, "description": "", "priority": c.priority}))
        .collect();
    let rows: Vec<Value> = objects
        .iter()
        .map(|obj| {
            let cells: Vec<Value> = cols.iter().map(|c| cell(c, obj, now)).collect();
            let mut row = json!({"cells": cells});
            match include {
                IncludeObject::None => {}
                IncludeObject::Object => row["object"] = obj.clone(),
                IncludeObject::Metadata => {
                    row["object"] = json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata").cloned().unwrap_or(json!({}))});
                }
            }
            row
        })
        .collect();
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": resource_version}, "columnDefinitions": defs, "rows": rows})
}

fn cell(c: &Column, obj: &Value, now: chrono::DateTime<chrono::Utc>) -> Value {
    let Some(path) = &c.json_path else {
        return obj
            .pointer("/metadata/name")
            .cloned()
            .unwrap_or(Value::Null);
    };
    if path == "#data" {
        return json!(
            obj.get("data")
                .and_then(Value::as_object)
                .map(|m| m.len())
                .unwrap_or(0)
        );
    }
    let values = json_path(obj, path);
    let v = match values.len() {
        0 => return Value::Null,
        1 => values[0].clone(),
        _ => json!(
            values
                .iter()
                .map(|v| scalar_text(v))
                .collect::<Vec<_>>()
                .join(",")
        ),
    };
    if c.type_ == "date" {
        return match v
            .as_str()
            .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        {
            Some(t) => json!(human_age(
                now.signed_duration_since(t.with_timezone(&chrono::Utc))
            )),
            None => Value::Null,
        };
    }
    v
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// kubectl's short ages: 45s, 12m, 5h, 3d, 2y.
pub fn human_age(d: chrono::TimeDelta) -> String {
    let s = d.num_seconds().max(0);
    match s {
        0..120 => format!("{s}s"),
        120..7200 => format!("{}m", s / 60),
        7200..172_800 => format!("{}h", s / 3600),
        172_800..63_072_000 => format!("{}d", s / 86_400),
        _ => format!("{}y", s / 31_536_000),
    }
}

/// Evaluates the JSONPath subset printer columns use. Unsupported syntax yields no values.
pub fn json_path<'a>(obj: &'a Value, path: &str) -> Vec<&'a Value> {
    let path = path
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim_start_matches('$');
    let mut current = vec![obj];
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let field = &r[..end];
            current = current.into_iter().filter_map(|v| v.get(field)).collect();
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else {
                return vec![];
            };
            let inner = &r[..end];
            rest = &r[end + 1..];
            current = if inner == "*" {
                current
                    .into_iter()
                    .flat_map(|v| v.as_array().into_iter().flatten())
                    .collect()
            } else if let Ok(i) = inner.parse::<usize>() {
                current.into_iter().filter_map(|v| v.get(i)).collect()
            } else if let Some(filter) =
                inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')'))
            {
                let Some((field, want)) = filter.split_once("==") else {
                    return vec![];
                };
                let want = want.trim().trim_matches(|c| c == '"' || c == '\'');
                current
                    .into_iter()
                    .flat_map(|v| v.as_array().into_iter().flatten())
                    .filter(|item| item.get(field.trim()).map(scalar_text).as_deref() == Some(want))
                    .collect()
            } else {
                return vec![];
            };
        } else {
            return vec![];
        }
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_path_subset() {
        let obj = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Other", "status": "False"}]}, "spec": {"a": [1, 2]}});
        assert_eq!(
            json_path(&obj, ".status.conditions[?(@.type==\"Ready\")].status"),
            vec![&json!("True")]
        );
        assert_eq!(json_path(&obj, ".spec.a[1]"), vec![&json!(2)]);
        assert!(json_path(&obj, ".missing.x").is_empty());
    }

    #[test]
    fn ages_read_like_kubectl() {
        assert_eq!(human_age(chrono::TimeDelta::seconds(5)), "5s");
        assert_eq!(human_age(chrono::TimeDelta::seconds(600)), "10m");
        assert_eq!(human_age(chrono::TimeDelta::seconds(3 * 86_400)), "3d");
    }
}

//! Server-side printing: the `Table` form `kubectl get` asks for, with a CRD's additional printer
//! columns evaluated by a small JSONPath subset (`.a.b`, `.a[0]`, `.a[?(@.k=="v")].b`).

use super::registry::ResourceType;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
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
    description: String,
    priority: i64,
    /// How a cell is computed; `None` is the object's name.
    json_path: Option<String>,
    /// A date cell, shown as an age.
    age: bool,
}

fn columns(rt: &ResourceType) -> Vec<Column> {
    let col = |name: &str, type_: &str, path: Option<&str>, description: String| Column {
        name: name.into(),
        type_: type_.into(),
        format: if name == "Name" {
            "name".into()
        } else {
            String::new()
        },
        description,
        priority: 0,
        age: path == Some(".metadata.creationTimestamp"),
        json_path: path.map(str::to_string),
    };
    let meta = |field: &str| docs::field::<ObjectMeta>(field);
    let mut cols = vec![col("Name", "string", None, meta("name"))];
    if rt.custom {
        for pc in &rt.printer_columns {
            let mut c = col(&pc.name, &pc.type_, Some(&pc.json_path), String::new());
            c.description = format!(
                "Custom resource definition column (in JSONPath format): {}",
                pc.json_path
            );
            c.priority = pc.priority;
            c.age = pc.type_ == "date";
            cols.push(c);
        }
        // A CRD without printer columns is served one, its objects' age.
        if rt.printer_columns.is_empty() {
            let age = ".metadata.creationTimestamp";
            cols.push(col("Age", "date", Some(age), meta("creationTimestamp")));
        }
        return cols;
    }
    // Built-in kinds' columns as kube-apiserver prints them: every cell typed `string` in the
    // definitions (whatever the cell holds), described by the API's field documentation.
    match rt.kind.as_str() {
        "Secret" => {
            cols.push(col(
                "Type",
                "string",
                Some(".type"),
                docs::field::<Secret>("type"),
            ));
            cols.push(col(
                "Data",
                "string",
                Some("#data"),
                docs::field::<Secret>("data"),
            ));
        }
        "ConfigMap" => {
            let data = docs::field::<ConfigMap>("data");
            cols.push(col("Data", "string", Some("#data"), data));
        }
        "Namespace" => cols.push(col(
            "Status",
            "string",
            Some(".status.phase"),
            String::new(),
        )),
        "Service" => {
            let spec = |f: &str| docs::field::<ServiceSpec>(f);
            cols.push(col("Type", "string", Some(".spec.type"), spec("type")));
            cols.push(col(
                "Cluster-IP",
                "string",
                Some(".spec.clusterIP"),
                spec("clusterIP"),
            ));
        }
        _ => {
            cols.push(col(
                "Age",
                "date",
                Some(".metadata.creationTimestamp"),
                String::new(),
            ));
            return cols;
        }
    }
    let age = ".metadata.creationTimestamp";
    cols.push(col("Age", "string", Some(age), meta("creationTimestamp")));
    cols
}

/// The API's field documentation, as kube-apiserver's column descriptions quote it: read from
/// the JSON schemas of the `k8s-openapi` types (generated from the same Go comments).
mod docs {
    use k8s_openapi::schemars::{JsonSchema, SchemaGenerator};

    /// The description of `field` of `T`, empty when it has none.
    pub(super) fn field<T: JsonSchema>(field: &str) -> String {
        let schema = T::json_schema(&mut SchemaGenerator::default());
        schema
            .as_value()
            .pointer(&format!("/properties/{field}/description"))
            .and_then(|d| d.as_str())
            .unwrap_or("")
            .to_string()
    }
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
        .map(|c| json!({"name": c.name, "type": c.type_, "format": c.format, "description": c.description, "priority": c.priority}))
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
    if c.age {
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
    fn built_in_columns_are_typed_and_described_as_kube_apiserver_prints_them() {
        let reg = super::super::registry::Registry::new([]);
        let rt = reg.by_resource("", "v1", "configmaps").expect("served");
        let t = table(
            &rt,
            &[
                json!({"metadata": {"name": "a", "creationTimestamp": "2026-01-01T00:00:00Z"}, "data": {"x": "1"}}),
            ],
            "7",
            IncludeObject::None,
            chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:30Z")
                .unwrap()
                .with_timezone(&chrono::Utc),
        );
        let types: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["string", "string", "string"]);
        let described = |i: usize, start: &str| {
            let d = t["columnDefinitions"][i]["description"].as_str().unwrap();
            assert!(d.starts_with(start), "{d}");
        };
        described(0, "Name must be unique within a namespace.");
        described(1, "Data contains the configuration data.");
        described(2, "CreationTimestamp is a timestamp");
        assert_eq!(t["rows"][0]["cells"], json!(["a", 1, "30s"]));
    }

    #[test]
    fn ages_read_like_kubectl() {
        assert_eq!(human_age(chrono::TimeDelta::seconds(5)), "5s");
        assert_eq!(human_age(chrono::TimeDelta::seconds(600)), "10m");
        assert_eq!(human_age(chrono::TimeDelta::seconds(3 * 86_400)), "3d");
    }
}

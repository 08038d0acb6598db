//! The `paths` of the OpenAPI documents: every operation of every served kind, with the action
//! and group/version/kind kubectl looks operations up by, the query parameters it checks for
//! (`fieldValidation`), and the media types a PATCH consumes.

use super::discovery::{kinds_at, subresources};
use super::openapi_schemas::{Flavour, PATCH, definition_name};
use super::registry::{Registry, ResourceType};
use serde_json::{Map, Value, json};

/// The patch media types a kind accepts: strategic merge patch for built-in kinds only.
pub(super) fn patch_types(t: &ResourceType) -> Vec<&'static str> {
    let mut out = vec![
        "application/json-patch+json",
        "application/merge-patch+json",
    ];
    if !t.custom {
        out.push("application/strategic-merge-patch+json");
    }
    out.push("application/apply-patch+yaml");
    out
}

/// The API path of a kind's collection at `version` (`{namespace}` for namespaced kinds).
pub(super) fn collection_path(t: &ResourceType, version: &str) -> String {
    let base = if t.group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{}/{version}", t.group)
    };
    if t.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", t.plural)
    } else {
        format!("{base}/{}", t.plural)
    }
}

/// The operations of every kind served at `group/version`, by path.
pub(super) fn paths(
    reg: &Registry,
    group: &str,
    version: &str,
    flavour: Flavour,
) -> Map<String, Value> {
    let mut out = Map::new();
    for t in kinds_at(reg, group, version) {
        let op = Op {
            t,
            version,
            flavour,
        };
        let collection = collection_path(t, version);
        let item = format!("{collection}/{{name}}");
        let mut ops = Map::new();
        ops.insert("get".into(), op.build("list", None));
        ops.insert("post".into(), op.build("post", Some(Body::Object)));
        if super::limits::offers_delete_collection(t) {
            ops.insert("delete".into(), op.build("deletecollection", None));
        }
        out.insert(collection, Value::Object(ops));
        out.insert(item.clone(), op.object_ops(true));
        for sub in subresources(t, version) {
            let ops = match sub.name {
                "finalize" => json!({"put": op.build("put", Some(Body::Object))}),
                _ => op.object_ops(false),
            };
            out.insert(format!("{item}/{}", sub.name), ops);
        }
    }
    out
}

#[derive(Clone, Copy)]
enum Body {
    Object,
    Patch,
}

struct Op<'a> {
    t: &'a ResourceType,
    version: &'a str,
    flavour: Flavour,
}

impl Op<'_> {
    /// get, put, patch (and delete for the object itself).
    fn object_ops(&self, delete: bool) -> Value {
        let mut ops = Map::new();
        ops.insert("get".into(), self.build("get", None));
        ops.insert("put".into(), self.build("put", Some(Body::Object)));
        ops.insert("patch".into(), self.build("patch", Some(Body::Patch)));
        if delete {
            ops.insert("delete".into(), self.build("delete", None));
        }
        Value::Object(ops)
    }

    fn reference(&self, name: &str) -> Value {
        match self.flavour {
            Flavour::V2 => json!({"$ref": format!("#/definitions/{name}")}),
            Flavour::V3 => json!({"$ref": format!("#/components/schemas/{name}")}),
        }
    }

    fn build(&self, action: &str, body: Option<Body>) -> Value {
        let t = self.t;
        let param = |name: &str| match self.flavour {
            Flavour::V2 => {
                json!({"name": name, "in": "query", "type": "string", "uniqueItems": true})
            }
            Flavour::V3 => {
                json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}})
            }
        };
        let mut op = json!({
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": {"group": t.group, "version": self.version, "kind": t.kind},
            "parameters": [param("dryRun"), param("fieldManager"), param("fieldValidation"), param("force")],
        });
        let consumes: Vec<&str> = match body {
            Some(Body::Patch) => patch_types(t),
            _ if t.custom => vec!["application/json", "application/yaml"],
            _ => vec!["*/*"],
        };
        let kind_schema = definition_name(t, self.version).map(|n| self.reference(&n));
        let body_schema = match body {
            Some(Body::Patch) => Some(self.reference(PATCH)),
            Some(Body::Object) => kind_schema.clone(),
            None => None,
        };
        match self.flavour {
            Flavour::V2 => {
                op["consumes"] = json!(consumes);
                op["produces"] = json!(["application/json", "application/yaml"]);
                let mut ok = json!({"description": "OK"});
                if let Some(s) = &kind_schema {
                    ok["schema"] = s.clone();
                }
                op["responses"] = json!({"200": ok, "401": {"description": "Unauthorized"}});
            }
            Flavour::V3 => {
                if let (Some(_), Some(s)) = (body, &body_schema) {
                    let content: Map<String, Value> = consumes
                        .iter()
                        .map(|c| (c.to_string(), json!({"schema": s})))
                        .collect();
                    op["requestBody"] = json!({"content": content, "required": true});
                }
                let mut ok = json!({"description": "OK"});
                if let Some(s) = &kind_schema {
                    ok["content"] = json!({"application/json": {"schema": s}});
                }
                op["responses"] = json!({"200": ok, "401": {"description": "Unauthorized"}});
            }
        }
        op
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_consumes_what_the_kind_accepts() {
        let reg = Registry::new([]);
        let v3 = paths(&reg, "apps", "v1", Flavour::V3);
        let patch = &v3["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        let content = patch["requestBody"]["content"].as_object().unwrap();
        assert_eq!(content.len(), 4);
        assert_eq!(
            content["application/apply-patch+yaml"]["schema"]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
        );
        assert_eq!(patch["x-kubernetes-action"], "patch");
        let v2 = paths(&reg, "", "v1", Flavour::V2);
        assert!(v2["/api/v1/namespaces/{name}/finalize"]["put"].is_object());
        assert!(v2["/api/v1/namespaces"].get("delete").is_none());
    }
}

//! What a unit renders, for the page of a unit whose preparation failed (a validation error on
//! its first revision, say: no cluster is known, nothing was applied): the objects' kinds, names
//! and files, never their values (a render may hold a Secret's data).

use super::html::text;
use crate::object::SourcedObject;
use serde::Serialize;
use serde_json::Value;
use std::fmt::Write;

/// One rendered object, as the page names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RenderedObject {
    pub api_version: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    /// The repository-relative file it comes from, with its document when not the first.
    pub file: String,
}

/// The objects of a render, in its order; what has no kind or name is shown as such.
pub fn rendered_objects(objects: &[SourcedObject]) -> Vec<RenderedObject> {
    let field = |o: &Value, pointer: &str| {
        crate::object::str_at(o, pointer)
            .unwrap_or_default()
            .to_string()
    };
    objects
        .iter()
        .map(|s| RenderedObject {
            api_version: field(&s.object, "/apiVersion"),
            kind: field(&s.object, "/kind"),
            namespace: crate::object::str_at(&s.object, "/metadata/namespace").map(str::to_string),
            name: field(&s.object, "/metadata/name"),
            file: s.origin.to_string(),
        })
        .collect()
}

/// The page's table of `objects` (nothing when there are none).
pub fn section(out: &mut String, objects: &[RenderedObject]) {
    if objects.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<h3>Rendered objects</h3><p class=\"muted\">What the unit renders at this revision \
         ({} objects); nothing of this revision was applied to it.</p><table class=\"rendered\"><thead><tr>\
         <th>Kind</th><th>Object</th><th>File</th></tr></thead><tbody>",
        objects.len()
    );
    for o in objects {
        let name = match &o.namespace {
            Some(ns) => format!("{ns}/{}", o.name),
            None => o.name.clone(),
        };
        let missing = |s: &str| if s.is_empty() { "(none)" } else { s }.to_string();
        let _ = write!(
            out,
            "<tr><td title=\"{}\">{}</td><td>{}</td><td><code>{}</code></td></tr>",
            text(&o.api_version),
            text(&missing(&o.kind)),
            text(&missing(&name)),
            text(&o.file),
        );
    }
    out.push_str("</tbody></table>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::Origin;

    fn sourced(object: Value, file: &str, document: usize) -> SourcedObject {
        SourcedObject {
            object,
            origin: Origin {
                file: file.into(),
                document,
            },
        }
    }

    #[test]
    fn names_kinds_and_files_and_never_values() {
        let objects = [
            sourced(
                serde_json::json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
                    "metadata": {"name": "dev", "namespace": "aro-dev"}}),
                "clusters/dev/cluster.yaml",
                0,
            ),
            sourced(
                serde_json::json!({"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": "<b>s</b>"}, "stringData": {"password": "hunter2"}}),
                "clusters/dev/secret.yaml",
                1,
            ),
        ];
        let found = rendered_objects(&objects);
        assert_eq!(found[0].kind, "Cluster");
        assert_eq!(found[0].namespace.as_deref(), Some("aro-dev"));
        assert_eq!(found[0].file, "clusters/dev/cluster.yaml");
        assert_eq!(found[1].file, objects[1].origin.to_string());
        let mut page = String::new();
        section(&mut page, &found);
        assert!(page.contains("<td>aro-dev/dev</td>"), "{page}");
        assert!(page.contains("<td>&lt;b&gt;s&lt;/b&gt;</td>"), "{page}");
        assert!(!page.contains("hunter2"), "{page}");
        assert!(page.contains("(2 objects)"), "{page}");
        let mut none = String::new();
        section(&mut none, &[]);
        assert!(none.is_empty());
    }
}

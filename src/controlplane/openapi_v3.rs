//! `/openapi/v3` (where each group/version's document is) and `/openapi/v3/api/v1`,
//! `/openapi/v3/apis/{group}/{version}` (the document of one group/version). kubectl reads them
//! to learn that PATCH accepts `fieldValidation` (server-side validation) and for `explain`.

use super::discovery::{group_versions, kinds_at};
use super::openapi_paths::paths;
use super::openapi_schemas::{Flavour, definitions};
use super::registry::Registry;
use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use serde_json::{Value, json};

/// The document of `group/version`, or `None` when nothing is served there.
pub fn document(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    if !reg.serves_group_version(group, version) {
        return None;
    }
    let kinds: Vec<_> = kinds_at(reg, group, version)
        .map(|t| (t.as_ref(), version))
        .collect();
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "aro-gitops local control plane", "version": env!("CARGO_PKG_VERSION")},
        "paths": paths(reg, group, version, Flavour::V3),
        "components": {"schemas": definitions(&kinds, Flavour::V3)},
    }))
}

/// The bytes a document is served as; its hash names them in the root's URLs.
fn document_bytes(doc: &Value) -> Vec<u8> {
    serde_json::to_vec(doc).expect("JSON values serialise")
}

/// kube-openapi's hash of a document: the SHA-512 of its bytes, in upper-case hex.
fn hash(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA512, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}

/// `/openapi/v3`: each served group/version's document path, with the hash of its content.
pub fn root(reg: &Registry) -> Value {
    let mut paths = serde_json::Map::new();
    for (g, v) in group_versions(reg) {
        let p = if g.is_empty() {
            format!("api/{v}")
        } else {
            format!("apis/{g}/{v}")
        };
        let Some(doc) = document(reg, &g, &v) else {
            continue;
        };
        let url = format!("/openapi/v3/{p}?hash={}", hash(&document_bytes(&doc)));
        paths.insert(p, json!({"serverRelativeURL": url}));
    }
    json!({"paths": paths})
}

/// The root as kube-apiserver answers it: its JSON sniffed by Go's HTTP server as text.
pub fn root_response(reg: &Registry) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        document_bytes(&root(reg)),
    )
        .into_response()
}

/// One document, or a 404 with no body for a group/version nothing serves (kube-openapi's
/// handler writes no Status).
pub fn document_response(reg: &Registry, group: &str, version: &str) -> Response {
    match document(reg, group, version) {
        Some(doc) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            document_bytes(&doc),
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_names_each_document_by_its_hash() {
        let reg = Registry::new([]);
        let root = root(&reg);
        let url = root["paths"]["apis/apps/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        let doc = document(&reg, "apps", "v1").unwrap();
        assert_eq!(
            url,
            format!(
                "/openapi/v3/apis/apps/v1?hash={}",
                hash(&document_bytes(&doc))
            )
        );
        assert_eq!(hash(b"").len(), 128);
        assert!(document(&reg, "nope.example.com", "v1").is_none());
        assert!(doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"].is_object());
    }
}

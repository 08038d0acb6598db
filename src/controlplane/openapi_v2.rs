//! `/openapi/v2`: the Swagger 2.0 document. As JSON it describes every served kind: its
//! operations ([`super::openapi_paths`]) and definitions ([`super::openapi_schemas`]).
//!
//! kubectl asks for it as protobuf (gnostic's `openapi_v2.Document`) to validate what it cannot
//! send for server-side validation (a `v1 List`'s items); that form lists the served paths and
//! holds no definitions, so kubectl validates nothing client-side and leaves validation to the
//! server (`fieldValidation`), which knows every kind's schema.

use super::openapi_paths::collection_path;
use super::openapi_schemas::{Flavour, definitions};
use super::registry::Registry;
use serde_json::{Value, json};

/// The media type kubectl asks for the protobuf form with (`Accept`).
pub const PROTOBUF_ACCEPT: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
/// The media type the protobuf form is answered with, as upstream writes it (`Content-Type`
/// cannot carry the `@` of the Accept form).
pub const PROTOBUF_CONTENT_TYPE: &str =
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The API paths of every served kind, sorted.
fn paths(reg: &Registry) -> Vec<String> {
    let mut out = Vec::new();
    for t in reg.types() {
        for v in &t.versions {
            let scope = collection_path(t, v);
            out.push(format!("{scope}/{{name}}"));
            out.push(scope);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The document as JSON: every group/version's operations, and the definitions of every kind
/// at each version it is served at.
pub fn document(reg: &Registry) -> Value {
    let mut paths = serde_json::Map::new();
    for (g, v) in &super::discovery::group_versions(reg) {
        paths.extend(super::openapi_paths::paths(reg, g, v, Flavour::V2));
    }
    let kinds: Vec<_> = reg
        .types()
        .iter()
        .flat_map(|t| t.versions.iter().map(move |v| (t.as_ref(), v.as_str())))
        .collect();
    json!({
        "swagger": "2.0",
        "info": {"title": "aro-gitops local control plane", "version": env!("CARGO_PKG_VERSION")},
        "paths": paths,
        "definitions": definitions(&kinds, Flavour::V2),
    })
}

/// The document as gnostic's protobuf `openapi_v2.Document`: `swagger` (1), `info` (2: title 1,
/// version 2), `paths` (8: each path 2, a NamedPathItem of name 1 and an empty PathItem 2).
pub fn protobuf(reg: &Registry) -> Vec<u8> {
    let mut info = Vec::new();
    field(&mut info, 1, b"aro-gitops local control plane");
    field(&mut info, 2, env!("CARGO_PKG_VERSION").as_bytes());
    let mut paths_msg = Vec::new();
    for p in paths(reg) {
        let mut named = Vec::new();
        field(&mut named, 1, p.as_bytes());
        field(&mut named, 2, &[]);
        field(&mut paths_msg, 2, &named);
    }
    let mut doc = Vec::new();
    field(&mut doc, 1, b"2.0");
    field(&mut doc, 2, &info);
    field(&mut doc, 8, &paths_msg);
    doc
}

/// Appends a length-delimited field (wire type 2).
fn field(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
    varint(out, (number << 3) | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_lists_every_served_path() {
        let reg = Registry::new([]);
        let doc = document(&reg);
        assert_eq!(doc["swagger"], "2.0");
        assert!(
            doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"].is_object()
        );
        assert!(
            doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments"]["get"].is_object()
        );
        assert!(doc["definitions"]["io.k8s.api.apps.v1.Deployment"].is_object());
    }

    #[test]
    fn the_protobuf_form_is_well_formed() {
        let reg = Registry::new([]);
        let bytes = protobuf(&reg);
        // swagger = "2.0" first, then info.
        assert_eq!(&bytes[..5], &[0x0a, 3, b'2', b'.', b'0']);
        assert_eq!(bytes[5], 0x12);
        let mut long = Vec::new();
        varint(&mut long, 300);
        assert_eq!(long, vec![0xac, 0x02]);
    }
}

//! Entry points for the fuzz targets in `fuzz/` (not an API: hidden from the docs and free to
//! change): the request decoding the HTTP layer does before any state is read — bodies by content
//! type, DeleteOptions, patch content types, query strings, list/watch parameters and selectors.

use super::delete::DeleteOptions;
use super::http;
use super::objects::PatchType;
use super::params::{self, WatchFrom};
use serde_json::Value;
use std::time::Duration;

pub use super::error::ApiError;
pub use super::selector::{FieldSelector, LabelSelector};

/// A request body decoded as the HTTP layer decodes it for `content_type` (JSON, YAML or
/// Kubernetes protobuf).
pub fn decode_body(body: &[u8], content_type: &str) -> Result<Value, ApiError> {
    http::decode(body, content_type)
}

/// A DELETE body read as DeleteOptions.
pub fn delete_options(body: &Value) -> Result<(), ApiError> {
    DeleteOptions::from_body(body).map(|_| ())
}

/// Whether a PATCH with this content type is accepted (and as which patch type).
pub fn patch_type(content_type: &str) -> Option<&'static str> {
    PatchType::from_content_type(content_type).map(|p| match p {
        PatchType::Apply => "apply",
        PatchType::Merge => "merge",
        PatchType::Json => "json",
        PatchType::Strategic => "strategic",
    })
}

/// What a LIST or WATCH takes from its query string.
#[derive(Debug)]
pub struct ListRequest {
    pub limit: Option<usize>,
    /// The continue token's resourceVersion (negative: the latest) and last key.
    pub continue_after: Option<(i64, String)>,
    pub timeout: Duration,
    /// `None` for a watch from the current state.
    pub since: Option<u64>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

/// The query string `raw` (without `?`) parsed as the HTTP layer parses a LIST's and a WATCH's.
pub fn list_request(raw: &str) -> Result<ListRequest, ApiError> {
    let query = http::parse_query(raw);
    let selector = |k: &str| query.get(k).map(String::as_str).unwrap_or("").to_string();
    Ok(ListRequest {
        limit: params::limit(&query)?,
        continue_after: params::continue_token(&query)?.map(|t| (t.rv, t.start)),
        timeout: params::watch_timeout(&query)?,
        since: match params::watch_from(&query)? {
            WatchFrom::Current { .. } => None,
            WatchFrom::Since(rv) => Some(rv),
        },
        labels: LabelSelector::parse(&selector("labelSelector"))?,
        fields: FieldSelector::parse(&selector("fieldSelector"))?,
    })
}

//! Label and field selectors of LIST and WATCH requests, parsed once and matched against objects.
//! Label selectors are the shared [`crate::selector::LabelSelector`].

use super::error::ApiError;
use serde_json::Value;

pub use crate::selector::LabelSelector;

impl From<crate::selector::SelectorError> for ApiError {
    fn from(e: crate::selector::SelectorError) -> Self {
        ApiError::bad_request(e.to_string())
    }
}

/// A parsed `fieldSelector`; only `metadata.name` and `metadata.namespace` are supported, as for
/// custom resources upstream.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Whether it selects everything.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn parse(input: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        for part in input.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, equal, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (f, true, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid field selector {input:?}: {part:?} is not field=value"
                )));
            };
            let field = field.trim();
            if field != "metadata.name" && field != "metadata.namespace" {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {field}"
                )));
            }
            reqs.push((field.to_string(), equal, value.trim().to_string()));
        }
        Ok(FieldSelector(reqs))
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(field, equal, value)| {
            let pointer = if field == "metadata.name" {
                "/metadata/name"
            } else {
                "/metadata/namespace"
            };
            let actual = obj.pointer(pointer).and_then(Value::as_str).unwrap_or("");
            (actual == value) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn field_selectors() {
        let obj = json!({"metadata": {"name": "a", "namespace": "n"}});
        assert!(
            FieldSelector::parse("metadata.name=a")
                .unwrap()
                .matches(&obj)
        );
        assert!(
            !FieldSelector::parse("metadata.namespace!=n")
                .unwrap()
                .matches(&obj)
        );
        assert!(
            FieldSelector::parse("spec.x=1")
                .unwrap_err()
                .message
                .contains("not supported")
        );
    }
}

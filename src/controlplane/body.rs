//! Request bodies: decoded by content type (JSON, YAML or Kubernetes protobuf), and refused in
//! kube-apiserver's words when they cannot be: a create or update body that is not JSON names the
//! kind it should have been and Go's parse error; a patch that is not JSON is an `invalid JSON
//! patch`. A body without `kind`/`apiVersion` takes them from the URL.

use super::error::{ApiError, Reason};
use super::objects::Target;
use super::protobuf;
use crate::machinery::gojson;
use serde_json::Value;

/// Decodes a JSON, YAML or Kubernetes protobuf body by its content type.
pub(super) fn decode(body: &[u8], content_type: &str) -> Result<Value, ApiError> {
    if protobuf::is_protobuf(content_type) {
        return protobuf::decode(body).map_err(|e| {
            if e.is_unsupported_kind() {
                ApiError::new(415, Reason::UnsupportedMediaType, e.to_string())
            } else {
                ApiError::bad_request(format!("the request body is not valid protobuf: {e}"))
            }
        });
    }
    let text = std::str::from_utf8(body)
        .map_err(|_| ApiError::bad_request("the request body is not UTF-8"))?;
    if content_type.contains("yaml") {
        crate::yaml::from_str(text)
            .or_else(|e| crate::crdschema::yaml_last_wins(text).ok_or(e))
            .map_err(|e| ApiError::bad_request(format!("the request body is not valid YAML: {e}")))
    } else {
        serde_json::from_str(text)
            .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))
    }
}

/// Decodes the body of a create or update of `kind`. A JSON body kube-apiserver cannot read
/// for its `apiVersion` and `kind` is refused as it refuses it.
pub(super) fn decode_object(
    body: &[u8],
    content_type: &str,
    kind: &str,
) -> Result<Value, ApiError> {
    if is_json(content_type)
        && let Some(why) = unreadable_type_meta(body)
    {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {kind}): couldn't get version/kind; json parse error: {why} ({})",
            summary(body)
        )));
    }
    decode(body, content_type)
}

/// Decodes the body of a JSON, merge or strategic merge patch: it must be JSON.
pub(super) fn decode_patch(body: &[u8], content_type: &str) -> Result<Value, ApiError> {
    if gojson::syntax_error(body).is_some() {
        return Err(ApiError::bad_request("invalid JSON patch"));
    }
    decode(body, content_type)
}

/// An apply body must be of the URL's kind and version: kube-apiserver's field manager refuses
/// any other before it looks at anything else (`invalid object type: apps/v1, Kind=Deployment`).
pub(super) fn check_applied_type(body: &Value, target: &Target) -> Result<(), ApiError> {
    let field = |k: &str| body.get(k).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind) = (field("apiVersion"), field("kind"));
    if api_version == target.api_version() && kind == target.rt.kind {
        return Ok(());
    }
    let (group, version) = crate::object::split_api_version(api_version);
    Err(ApiError::bad_request(format!(
        "invalid object type: {group}/{version}, Kind={kind}"
    )))
}

/// A create or update body without `kind`/`apiVersion` takes them from the URL, as
/// kube-apiserver's decoder does; values that are there are left for admission to check.
pub(super) fn default_type_meta(body: &mut Value, target: &Target) {
    let Some(map) = body.as_object_mut() else {
        return;
    };
    for (field, value) in [
        ("kind", target.rt.kind.clone()),
        ("apiVersion", target.api_version()),
    ] {
        match map.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s.is_empty() => {}
            Some(_) => continue,
        }
        map.insert(field.into(), Value::String(value));
    }
}

fn is_json(content_type: &str) -> bool {
    content_type.starts_with("application/json")
}

/// Why Go cannot read `apiVersion` and `kind` from a JSON body: a syntax error, a body that is no
/// object, or either field not a string.
fn unreadable_type_meta(body: &[u8]) -> Option<String> {
    if let Some(e) = gojson::syntax_error(body) {
        return Some(e);
    }
    let v: Value = serde_json::from_slice(body).ok()?;
    let Value::Object(map) = &v else {
        return (!v.is_null()).then(|| {
            format!(
                "json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}",
                gojson::type_name(&v)
            )
        });
    };
    ["apiVersion", "kind"].iter().find_map(|field| {
        let value = map.get(*field)?;
        (!value.is_string() && !value.is_null()).then(|| {
            format!(
                "json: cannot unmarshal {} into Go struct field .{field} of type string",
                gojson::type_name(value)
            )
        })
    })
}

/// The start of a body as kube-apiserver quotes it: `<empty>`, up to 30 bytes of an object, or
/// the hex of up to 30 bytes of anything else.
fn summary(body: &[u8]) -> String {
    const MAX: usize = 30;
    let cut = &body[..body.len().min(MAX)];
    let more = if body.len() > MAX { " ..." } else { "" };
    match body.first() {
        None => "<empty>".to_string(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(cut)),
        Some(_) => {
            let hex: String = cut.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controlplane::registry::Registry;
    use serde_json::json;

    #[test]
    fn missing_kind_and_api_version_come_from_the_url() {
        let reg = Registry::new([]);
        let target = Target {
            rt: reg.by_resource("apps", "v1", "deployments").expect("known"),
            version: "v1".into(),
            namespace: Some("n".into()),
            name: None,
            subresource: None,
        };
        let mut body = json!({"metadata": {"name": "web"}});
        default_type_meta(&mut body, &target);
        assert_eq!(
            (body["kind"].as_str(), body["apiVersion"].as_str()),
            (Some("Deployment"), Some("apps/v1"))
        );
        let mut empty = json!({"kind": "", "apiVersion": null});
        default_type_meta(&mut empty, &target);
        assert_eq!(
            (empty["kind"].as_str(), empty["apiVersion"].as_str()),
            (Some("Deployment"), Some("apps/v1"))
        );
        // Values that are there are kept for admission to refuse (400) when they disagree.
        let mut other = json!({"kind": "Secret", "apiVersion": "v1"});
        default_type_meta(&mut other, &target);
        assert_eq!(other, json!({"kind": "Secret", "apiVersion": "v1"}));
        let mut not_an_object = json!([1]);
        default_type_meta(&mut not_an_object, &target);
        assert_eq!(not_an_object, json!([1]));
    }

    fn message(body: &str) -> String {
        decode_object(body.as_bytes(), "application/json", "ConfigMap")
            .unwrap_err()
            .message
    }

    #[test]
    fn bodies_that_are_not_json_objects_are_refused_as_kube_refuses_them() {
        let prefix = "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: ";
        assert_eq!(
            message("{not json"),
            format!(
                "{prefix}invalid character 'n' looking for beginning of object key string ({{not json)"
            )
        );
        assert_eq!(
            message(""),
            format!("{prefix}unexpected end of JSON input (<empty>)")
        );
        assert_eq!(
            message(r#"{"apiVersion": "v1", "kind": "ConfigMap""#),
            format!(
                "{prefix}unexpected end of JSON input ({{\"apiVersion\": \"v1\", \"kind\": \" ...)"
            )
        );
        assert!(message("[1]").ends_with(
            "json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" } (5b315d)"
        ));
        assert_eq!(
            message(r#"{"kind": 1}"#),
            format!(
                "{prefix}json: cannot unmarshal number into Go struct field .kind of type string ({{\"kind\": 1}})"
            )
        );
        let ok = decode_object(br#"{"kind": "ConfigMap"}"#, "application/json", "ConfigMap");
        assert!(ok.is_ok());
        // YAML keeps its own decoder.
        assert!(decode_object(b"kind: ConfigMap", "application/yaml", "ConfigMap").is_ok());
    }

    #[test]
    fn an_apply_body_names_the_url_kind_and_version() {
        let reg = Registry::new([]);
        let target = Target {
            rt: reg.by_resource("", "v1", "configmaps").expect("known"),
            version: "v1".into(),
            namespace: Some("n".into()),
            name: Some("a".into()),
            subresource: None,
        };
        let refused = |body: Value| check_applied_type(&body, &target).unwrap_err().message;
        assert_eq!(
            refused(json!({"apiVersion": "v1"})),
            "invalid object type: /v1, Kind="
        );
        assert_eq!(
            refused(json!({"apiVersion": "apps/v1", "kind": "Deployment"})),
            "invalid object type: apps/v1, Kind=Deployment"
        );
        assert!(
            check_applied_type(&json!({"apiVersion": "v1", "kind": "ConfigMap"}), &target).is_ok()
        );
    }

    #[test]
    fn a_patch_must_be_json() {
        assert_eq!(
            decode_patch(b"{x", "application/merge-patch+json")
                .unwrap_err()
                .message,
            "invalid JSON patch"
        );
        assert!(decode_patch(b"[]", "application/json-patch+json").is_ok());
    }
}

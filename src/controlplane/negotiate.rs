//! Content negotiation of resource requests: what the `Accept` header asks the answer to be, read
//! as kube-apiserver reads it, and the answer made so.
//!
//! A built-in kind's route first passes go-restful's check: one of the media types asked for,
//! parameters aside, must be one the route produces (or `*/*`). Then the API server's own
//! negotiation takes the clauses by `q` and specificity and picks the first that JSON, YAML or
//! protobuf serves, with an `as=` conversion it allows: a `meta.k8s.io` Table (JSON or YAML
//! only), PartialObjectMetadata or its list (anything). Custom resources skip the first check and
//! are never served as protobuf without a conversion. The local control plane encodes no protobuf:
//! what negotiates to it is answered as JSON.

use super::error::{ApiError, Reason};
use super::registry::ResourceType;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{StatusCode, header};
use serde_json::{Map, Value, json};

/// How the answer is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    Json,
    Yaml,
    Protobuf,
}

/// The form an answer is converted to (`as=`), all of group `meta.k8s.io`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Convert {
    Table,
    PartialObjectMetadata,
    PartialObjectMetadataList,
}

/// What the client is answered in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Output {
    pub format: Format,
    /// The conversion and its version of `meta.k8s.io` (`v1` or `v1beta1`).
    pub convert: Option<(Convert, String)>,
}

impl Output {
    pub fn table(&self) -> bool {
        matches!(self.convert, Some((Convert::Table, _)))
    }
}

/// The endpoint a request reaches.
#[derive(Debug, Clone, Copy)]
pub(super) struct Endpoint {
    /// A custom resource (served without go-restful, and without protobuf).
    pub custom: bool,
    /// A GET of a collection (its route also produces the watch stream types).
    pub list: bool,
    /// A watch: its stream is JSON or protobuf only.
    pub watch: bool,
}

/// The media types a resource is served in, in the API server's order.
const MEDIA: [(&str, Format); 3] = [
    ("json", Format::Json),
    ("yaml", Format::Yaml),
    ("vnd.kubernetes.protobuf", Format::Protobuf),
];

/// One clause of an Accept header.
#[derive(Debug, Clone, PartialEq)]
struct Clause {
    type_: String,
    subtype: String,
    q: f64,
    params: Vec<(String, String)>,
}

/// The clauses of an Accept header, best first, as goautoneg (which kube-apiserver uses) parses
/// and orders them: by `q`, then a concrete type before `*`, then a concrete subtype before `*`.
fn clauses(header: &str) -> Vec<Clause> {
    let trim = |s: &str| s.trim_matches(' ').to_string();
    let mut out = Vec::new();
    for part in header.split(',') {
        let part = part.trim_matches(' ');
        if part.is_empty() {
            continue;
        }
        let mut pieces = part.split(';');
        let media = pieces.next().unwrap_or("");
        let (type_, subtype) = match media.split_once('/') {
            None if trim(media) == "*" => ("*".to_string(), "*".to_string()),
            None => continue,
            Some((_, s)) if s.contains('/') => continue,
            Some((t, s)) => (trim(t), trim(s)),
        };
        let mut clause = Clause {
            type_,
            subtype,
            q: 1.0,
            params: Vec::new(),
        };
        for p in pieces {
            let Some((k, v)) = p.split_once('=') else {
                continue;
            };
            if v.contains('=') {
                continue;
            }
            match trim(k).as_str() {
                "q" => clause.q = v.parse::<f32>().map_or(0.0, f64::from),
                k => clause.params.push((k.to_string(), trim(v))),
            }
        }
        out.push(clause);
    }
    // Go sorts a short slice by insertion, with this (not quite consistent) order.
    let better = |a: &Clause, b: &Clause| {
        a.q > b.q || (a.type_ != "*" && b.type_ == "*") || (a.subtype != "*" && b.subtype == "*")
    };
    for i in 1..out.len() {
        let mut j = i;
        while j > 0 && better(&out[j], &out[j - 1]) {
            out.swap(j, j - 1);
            j -= 1;
        }
    }
    out
}

/// Whether go-restful finds the route for this Accept: a media type (parameters aside) the route
/// produces, or `*/*`. An empty header is `*/*`.
fn route_accepts(header: &str, produces: &[String]) -> bool {
    header.is_empty()
        || header.split(',').any(|clause| {
            let media = clause.split(';').next().unwrap_or("").trim_matches(' ');
            media == "*/*" || produces.iter().any(|p| p == media)
        })
}

fn media_types() -> Vec<String> {
    MEDIA
        .iter()
        .map(|(sub, _)| format!("application/{sub}"))
        .collect()
}

/// The Output a clause asks of one media type, when the endpoint allows it.
fn accepted(clause: &Clause, format: Format, endpoint: Endpoint) -> Option<Output> {
    let (mut kind, mut group, mut version) = (None, "", "");
    for (k, v) in &clause.params {
        match k.as_str() {
            "as" => kind = Some(v.as_str()),
            "g" => group = v,
            "v" => version = v,
            "stream" if !v.is_empty() && (v != "watch" || format == Format::Yaml) => return None,
            "sv" if !v.is_empty() && v != "v1" => return None,
            _ => {}
        }
    }
    let asked = !group.is_empty() || !version.is_empty() || kind.is_some();
    if !asked {
        // Custom resources are served as JSON and YAML only, unless converted.
        return (!endpoint.custom || format != Format::Protobuf).then_some(Output {
            format,
            convert: None,
        });
    }
    if group != "meta.k8s.io" || !matches!(version, "v1" | "v1beta1") {
        return None;
    }
    let convert = match kind.unwrap_or("") {
        "Table" if format != Format::Protobuf => Convert::Table,
        "PartialObjectMetadata" => Convert::PartialObjectMetadata,
        "PartialObjectMetadataList" => Convert::PartialObjectMetadataList,
        _ => return None,
    };
    Some(Output {
        format,
        convert: Some((convert, version.to_string())),
    })
}

/// kube-apiserver's negotiation: the first clause, best first, that a media type serves.
fn negotiate(header: &str, endpoint: Endpoint) -> Option<Output> {
    if header.is_empty() {
        return Some(Output {
            format: Format::Json,
            convert: None,
        });
    }
    clauses(header).iter().find_map(|clause| {
        MEDIA.iter().find_map(|(sub, format)| {
            let matches = (clause.type_ == "application"
                && (clause.subtype == *sub || clause.subtype == "*"))
                || (clause.type_ == "*" && clause.subtype == "*");
            matches
                .then(|| accepted(clause, *format, endpoint))
                .flatten()
        })
    })
}

fn not_acceptable(message: String) -> ApiError {
    ApiError::new(406, Reason::NotAcceptable, message)
}

/// What a resource request with this Accept header is answered in, or the 406 kube-apiserver
/// answers: go-restful's for a built-in kind's route, else the API server's.
pub(super) fn output(accept: &str, endpoint: Endpoint) -> Result<Output, ApiError> {
    if !endpoint.custom {
        let mut produces = media_types();
        if endpoint.list {
            produces.push("application/json;stream=watch".into());
            produces.push("application/vnd.kubernetes.protobuf;stream=watch".into());
        }
        if !route_accepts(accept, &produces) {
            return Err(not_acceptable(format!(
                "406: Not Acceptable\n\nAvailable representations: {}",
                produces.join(", ")
            ))
            .with_empty_details());
        }
    }
    let output = negotiate(accept, endpoint).ok_or_else(|| {
        not_acceptable(format!(
            "only the following media types are accepted: {}",
            media_types().join(", ")
        ))
    })?;
    if endpoint.watch && output.format == Format::Yaml {
        return Err(not_acceptable(
            "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch".into(),
        ));
    }
    Ok(output)
}

pub(super) fn json_response(code: StatusCode, body: &Value) -> Response {
    bytes_response(
        code,
        serde_json::to_vec(body).expect("JSON values serialise"),
    )
}

pub(super) fn bytes_response(code: StatusCode, body: impl Into<Bytes>) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        body.into(),
    )
        .into_response()
}

/// A `Warning` header's value: `299 - "text"`, the text quoted as kube-apiserver quotes it.
pub(super) fn warning_value(text: &str) -> String {
    format!("299 - {}", serde_json::Value::String(text.to_string()))
}

/// Adds each of `warnings` as a `Warning` header.
pub(super) fn add_warnings(resp: &mut Response, warnings: Vec<String>) {
    for w in warnings {
        if let Ok(v) = http::HeaderValue::from_str(&warning_value(&w)) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
}

/// The format an error's Status is written in: what the Accept header negotiates to, JSON when
/// it negotiates to nothing.
pub(super) fn error_format(accept: &str) -> Format {
    let endpoint = Endpoint {
        custom: false,
        list: false,
        watch: false,
    };
    negotiate(accept, endpoint).map_or(Format::Json, |o| o.format)
}

/// A body in `format`: YAML (keys sorted, as kube-apiserver's YAML encoder writes them) or JSON.
pub(super) fn encoded(code: StatusCode, body: &Value, format: Format) -> Response {
    match format {
        Format::Yaml => (
            code,
            [(header::CONTENT_TYPE, "application/yaml")],
            crate::yaml::to_string(&sorted(body)),
        )
            .into_response(),
        Format::Json | Format::Protobuf => json_response(code, body),
    }
}

fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// The answer of a (non-watch) resource request made as `output` asks: converted to
/// PartialObjectMetadata (or its list) and encoded as YAML when asked. Tables are built where the
/// objects are read; a Status is never converted.
pub(super) async fn finish(
    output: &Output,
    rt: &ResourceType,
    resp: Response,
) -> Result<Response, ApiError> {
    let partial = matches!(
        output.convert,
        Some((
            Convert::PartialObjectMetadata | Convert::PartialObjectMetadataList,
            _
        ))
    );
    if !partial && output.format != Format::Yaml {
        return Ok(resp);
    }
    let (parts, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .map_err(|e| ApiError::internal(format!("reading an answer to convert it: {e}")))?;
    let Ok(mut value) = serde_json::from_slice::<Value>(&bytes) else {
        return Ok(Response::from_parts(parts, Body::from(bytes)));
    };
    if let Some((convert, version)) = &output.convert
        && value["kind"] != "Status"
    {
        value = converted(&value, *convert, version, rt)?;
    }
    Ok(encoded(parts.status, &value, output.format))
}

/// An object or list as PartialObjectMetadata or PartialObjectMetadataList, refused (406) when
/// the one is asked of the other, in kube-apiserver's words.
fn converted(
    value: &Value,
    convert: Convert,
    version: &str,
    rt: &ResourceType,
) -> Result<Value, ApiError> {
    let api_version = format!("meta.k8s.io/{version}");
    let partial = |obj: &Value| json!({"kind": "PartialObjectMetadata", "apiVersion": api_version, "metadata": obj.get("metadata").cloned().unwrap_or(json!({}))});
    let is_list = value.get("items").is_some_and(Value::is_array);
    match (convert, is_list) {
        (Convert::PartialObjectMetadata, false) => Ok(partial(value)),
        (Convert::PartialObjectMetadataList, true) => {
            let items: Vec<Value> = value["items"]
                .as_array()
                .into_iter()
                .flatten()
                .map(partial)
                .collect();
            let mut metadata = Map::new();
            for k in ["resourceVersion", "continue", "remainingItemCount"] {
                match value["metadata"].get(k) {
                    None | Some(Value::Null) => {}
                    Some(Value::String(s)) if s.is_empty() => {}
                    Some(v) => {
                        metadata.insert(k.into(), v.clone());
                    }
                }
            }
            Ok(
                json!({"kind": "PartialObjectMetadataList", "apiVersion": api_version, "metadata": metadata, "items": items}),
            )
        }
        (Convert::PartialObjectMetadata, true) => Err(not_acceptable(format!(
            "you requested PartialObjectMetadata, but the requested object is a list ({})",
            go_type(rt, true)
        ))),
        (Convert::PartialObjectMetadataList, false) => Err(not_acceptable(format!(
            "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
            go_type(rt, false)
        ))),
        // Tables are built by the reads.
        (Convert::Table, _) => Ok(value.clone()),
    }
}

/// The Go type kube-apiserver names in a refused conversion: the internal type of a built-in
/// kind (`*core.ConfigMap`, `*apps.DeploymentList`), an unstructured one for a custom resource.
fn go_type(rt: &ResourceType, list: bool) -> String {
    let suffix = if list { "List" } else { "" };
    if rt.custom {
        return format!("*unstructured.Unstructured{suffix}");
    }
    let package = match rt.group.as_str() {
        "" | "events.k8s.io" => "core",
        g => g.split('.').next().unwrap_or(g),
    };
    let kind = if rt.group == "events.k8s.io" {
        "Event"
    } else {
        rt.kind.as_str()
    };
    format!("*{package}.{kind}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUILT_IN: Endpoint = Endpoint {
        custom: false,
        list: true,
        watch: false,
    };
    const CUSTOM: Endpoint = Endpoint {
        custom: true,
        list: false,
        watch: false,
    };

    fn format(accept: &str, endpoint: Endpoint) -> Result<(Format, Option<Convert>), String> {
        output(accept, endpoint)
            .map(|o| (o.format, o.convert.map(|(c, _)| c)))
            .map_err(|e| e.message)
    }

    #[test]
    fn clauses_are_taken_by_quality_then_specificity() {
        let c = clauses("text/*;q=0.5, application/yaml;q=0.9, */*, application/json; v=1");
        let order: Vec<String> = c
            .iter()
            .map(|c| format!("{}/{}", c.type_, c.subtype))
            .collect();
        assert_eq!(
            order,
            ["application/json", "*/*", "application/yaml", "text/*"]
        );
        assert_eq!(c[0].params, [("v".to_string(), "1".to_string())]);
        // A clause without a subtype (but `*`) or with two is dropped.
        assert_eq!(clauses("application, a/b/c, *").len(), 1);
    }

    #[test]
    fn what_kube_apiserver_serves_and_refuses() {
        assert_eq!(format("", BUILT_IN), Ok((Format::Json, None)));
        assert_eq!(
            format("application/yaml", BUILT_IN),
            Ok((Format::Yaml, None))
        );
        assert_eq!(
            format("text/csv, application/yaml;q=0.5", BUILT_IN),
            Ok((Format::Yaml, None))
        );
        assert_eq!(
            format(
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
                BUILT_IN
            ),
            Ok((Format::Json, Some(Convert::Table)))
        );
        assert_eq!(
            format(
                "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
                BUILT_IN
            ),
            Ok((Format::Json, Some(Convert::PartialObjectMetadataList)))
        );
        // go-restful's route check refuses a built-in kind first, listing what the route produces.
        assert_eq!(
            format("text/csv", BUILT_IN).unwrap_err(),
            "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf, application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
        );
        // ... and does not read `application/*`, which the API server would.
        assert!(format("application/*", BUILT_IN).is_err());
        assert_eq!(format("application/*", CUSTOM), Ok((Format::Json, None)));
        // A conversion no one serves is the API server's 406.
        assert_eq!(
            format("application/json;as=Foo;g=meta.k8s.io;v=v1", BUILT_IN).unwrap_err(),
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
        assert!(
            format(
                "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1",
                BUILT_IN
            )
            .is_err()
        );
        // Custom resources are not served as protobuf, built-in kinds are (answered as JSON here).
        assert!(format("application/vnd.kubernetes.protobuf", CUSTOM).is_err());
        assert_eq!(
            format("application/vnd.kubernetes.protobuf", BUILT_IN),
            Ok((Format::Protobuf, None))
        );
        let watch = Endpoint {
            watch: true,
            ..BUILT_IN
        };
        assert!(format("application/yaml", watch).is_err());
        assert_eq!(error_format("application/yaml"), Format::Yaml);
        assert_eq!(error_format("text/csv"), Format::Json);
    }

    #[test]
    fn partial_object_metadata_of_objects_and_lists() {
        let reg = super::super::registry::Registry::new([]);
        let rt = reg.by_resource("", "v1", "configmaps").expect("served");
        let cm = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "a"}, "data": {"x": "1"}});
        assert_eq!(
            converted(&cm, Convert::PartialObjectMetadata, "v1", &rt).unwrap(),
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "a"}})
        );
        let list = json!({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "5", "continue": ""}, "items": [cm]});
        assert_eq!(
            converted(&list, Convert::PartialObjectMetadataList, "v1", &rt).unwrap(),
            json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": "5"},
                "items": [{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "a"}}]})
        );
        assert_eq!(
            converted(&list, Convert::PartialObjectMetadata, "v1", &rt)
                .unwrap_err()
                .message,
            "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)"
        );
        assert_eq!(
            converted(&cm, Convert::PartialObjectMetadataList, "v1", &rt)
                .unwrap_err()
                .code,
            406
        );
    }
}

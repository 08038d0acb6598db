//! The HTTP face of the control plane: routes Kubernetes API paths to discovery, reads, writes
//! (`writes`) and watches; answers in what the client accepts (`negotiate`), errors as `Status`
//! bodies.

use super::Shared;
use super::delete::{self, DeleteOptions};
use super::discovery;
use super::error::ApiError;
use super::limits;
use super::negotiate::{self, Endpoint, Output};
pub(super) use super::negotiate::{bytes_response, json_response};
use super::objects::{PatchType, Subresource, Target};
pub(super) use super::params::Query;
use super::reads;
use super::registry::{Registry, ResourceType};
use super::selector::{FieldSelector, LabelSelector};
use super::table::IncludeObject;
pub(super) use super::writes::decode;
use super::writes::{content_type_of, now, read_body, run_write_many, write};
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, Method, Request, StatusCode, header};
use serde_json::{Value, json};
use std::sync::Arc;

/// Answers one request.
pub async fn handle(shared: Arc<Shared>, req: Request<Body>) -> Response {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let query = parse_query(req.uri().query().unwrap_or(""));
    let accept = accept_of(req.headers()).to_string();
    let result = serve(shared, req, &query).await;
    result.unwrap_or_else(|e| {
        tracing::debug!(%method, %path, code = e.code, reason = e.reason.as_str(), message = %e.message, "request refused");
        error_response(&e, &accept)
    })
}

/// An error as the answer's status and body, the `Status` written in what the client accepts
/// (JSON when that is nothing served).
fn error_response(e: &ApiError, accept: &str) -> Response {
    let code = StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if e.plain {
        // As Go's http.NotFound answers a path no handler serves.
        return (
            code,
            [
                (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            format!("{}\n", e.message),
        )
            .into_response();
    }
    negotiate::encoded(code, &e.to_status(), negotiate::error_format(accept))
}

/// Adds `warning` before the answer's other warnings (kube-apiserver warns of a deprecated API
/// before it serves the request, success or not).
fn with_first_warning(answer: Result<Response, ApiError>, warning: &str, accept: &str) -> Response {
    let mut resp = answer.unwrap_or_else(|e| error_response(&e, accept));
    let headers = resp.headers_mut();
    let others: Vec<_> = headers.get_all(header::WARNING).iter().cloned().collect();
    headers.remove(header::WARNING);
    if let Ok(v) = http::HeaderValue::from_str(&negotiate::warning_value(warning)) {
        headers.append(header::WARNING, v);
    }
    for v in others {
        headers.append(header::WARNING, v);
    }
    resp
}

/// The Accept header (the first one), empty when there is none.
fn accept_of(headers: &HeaderMap) -> &str {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

pub(super) fn parse_query(q: &str) -> Query {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |s: &str| {
                percent_encoding::percent_decode_str(&s.replace('+', " "))
                    .decode_utf8_lossy()
                    .into_owned()
            };
            (decode(k), decode(v))
        })
        .collect()
}

/// A parsed API path.
enum Route {
    OpenApiV2,
    Version,
    Health,
    CoreVersions,
    Groups,
    Group(String),
    Resources(String, String),
    OpenApiRoot,
    Compact,
    OpenApi(String, String),
    Object(ObjectPath),
}

/// The path of a collection or an object of a kind, with its subresource.
struct ObjectPath {
    group: String,
    version: String,
    namespace: Option<String>,
    plural: String,
    name: Option<String>,
    sub: Option<String>,
}

fn route(path: &str) -> Option<Route> {
    let segs: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    let (group, version, rest) = match segs.as_slice() {
        ["version"] => return Some(Route::Version),
        ["healthz" | "readyz" | "livez", ..] => return Some(Route::Health),
        // The store's admin: compact its history now, as an etcd compaction (not a kube path).
        ["debug", "compact"] => return Some(Route::Compact),
        ["api"] => return Some(Route::CoreVersions),
        ["openapi", "v2"] => return Some(Route::OpenApiV2),
        ["openapi", "v3"] => return Some(Route::OpenApiRoot),
        ["openapi", "v3", "api", v] => return Some(Route::OpenApi(String::new(), v.to_string())),
        ["openapi", "v3", "apis", g, v] => {
            return Some(Route::OpenApi(g.to_string(), v.to_string()));
        }
        ["apis"] => return Some(Route::Groups),
        ["apis", g] => return Some(Route::Group(g.to_string())),
        ["api", v] => return Some(Route::Resources(String::new(), v.to_string())),
        ["apis", g, v] => return Some(Route::Resources(g.to_string(), v.to_string())),
        ["api", v, rest @ ..] => (String::new(), v.to_string(), rest),
        ["apis", g, v, rest @ ..] => (g.to_string(), v.to_string(), rest),
        _ => return None,
    };
    let s = |x: &&str| x.to_string();
    let obj = |namespace: Option<String>, plural: &str, name: Option<&&str>, sub: Option<&&str>| {
        Route::Object(ObjectPath {
            group: group.clone(),
            version: version.clone(),
            namespace,
            plural: plural.to_string(),
            name: name.map(s),
            sub: sub.map(s),
        })
    };
    Some(match rest {
        // /api/v1/namespaces/{name}[/status] addresses a Namespace object itself.
        ["namespaces", name] if group.is_empty() => obj(None, "namespaces", Some(name), None),
        ["namespaces", name, sub @ ("status" | "finalize")] if group.is_empty() => {
            obj(None, "namespaces", Some(name), Some(sub))
        }
        ["namespaces", ns, plural] => obj(Some(ns.to_string()), plural, None, None),
        ["namespaces", ns, plural, name] => obj(Some(ns.to_string()), plural, Some(name), None),
        ["namespaces", ns, plural, name, sub] => {
            obj(Some(ns.to_string()), plural, Some(name), Some(sub))
        }
        [plural] => obj(None, plural, None, None),
        [plural, name] => obj(None, plural, Some(name), None),
        [plural, name, sub] => obj(None, plural, Some(name), Some(sub)),
        _ => return None,
    })
}

async fn serve(
    shared: Arc<Shared>,
    req: Request<Body>,
    query: &Query,
) -> Result<Response, ApiError> {
    // The deprecated watch paths are served as the watch of their collection.
    let legacy = super::watch::legacy_watch(req.uri().path(), query)?;
    let (path, query) = match &legacy {
        Some((path, query)) => (path.as_str(), query),
        None => (req.uri().path(), query),
    };
    if let Some(user) = super::authz::User::impersonated(req.headers()) {
        let state = shared.state.lock().expect("state lock");
        super::access::check_request(&state.begin(), &user, req.method(), path, query)?;
    }
    let route = route(path).ok_or_else(ApiError::page_not_found)?;
    let registry = shared.state.lock().expect("state lock").registry();
    let read_only = |m: &Method| m == Method::GET || m == Method::HEAD;
    match route {
        Route::Object(at) => object(shared, &registry, at, req, query).await,
        Route::Compact if req.method() == Method::POST => Ok(compact(&shared)),
        _ if !read_only(req.method()) => Err(ApiError::method_not_allowed()),
        route => described(route, &registry, req.headers()),
    }
}

/// A request to an object path: its kind, subresource and scope checked, then answered by
/// `resource`; recorded as served when the server records that, and warned of when its version
/// is deprecated.
async fn object(
    shared: Arc<Shared>,
    registry: &Registry,
    at: ObjectPath,
    req: Request<Body>,
    query: &Query,
) -> Result<Response, ApiError> {
    let served = req
        .extensions()
        .get::<Arc<super::served::Served>>()
        .cloned();
    let method = req.method().clone();
    let asked = super::served::Request {
        group: &at.group,
        plural: &at.plural,
        subresource: at.sub.as_deref(),
        method: &method,
        named: at.name.is_some(),
        watch: flag(query, "watch"),
    };
    if let Some(served) = &served {
        served.record(asked);
    }
    let rt = resource_type(registry, &at)?;
    let subresource = subresource_of(&rt, &at)?;
    limits::check_subresource_method(req.method(), at.sub.as_deref())?;
    check_scope(&rt, &at, req.method())?;
    let deprecated = super::strategy::deprecation_warning(&rt, &at.version);
    let accept = accept_of(req.headers()).to_string();
    let target = Target {
        rt,
        version: at.version,
        namespace: at.namespace,
        name: at.name,
        subresource,
    };
    let answer = resource(shared, target, req, query).await;
    if let (Some(served), Ok(resp)) = (&served, &answer) {
        served.record_answer(asked, resp.status());
    }
    match deprecated {
        Some(w) => Ok(with_first_warning(answer, &w, &accept)),
        None => answer,
    }
}

/// The kind served at `at`, or the error of a path that serves none.
fn resource_type(registry: &Registry, at: &ObjectPath) -> Result<Arc<ResourceType>, ApiError> {
    registry
        .by_resource(&at.group, &at.version, &at.plural)
        .ok_or_else(|| {
            // A group and version of built-in kinds, or any path of the core group, answer
            // a Status (go-restful serves them); anything else, a group of custom
            // resources included, is no API path.
            let built_in = registry
                .types()
                .iter()
                .any(|t| !t.custom && t.group == at.group && t.serves(&at.version));
            if built_in || at.group.is_empty() {
                ApiError::unknown_path()
            } else {
                ApiError::page_not_found()
            }
        })
}

/// The subresource `at` names on kind `rt`, `None` for the object itself (and a Namespace's
/// `finalize`), or the error of one the kind does not serve.
fn subresource_of(rt: &ResourceType, at: &ObjectPath) -> Result<Option<Subresource>, ApiError> {
    match at.sub.as_deref() {
        None => Ok(None),
        Some("status") if rt.status_subresource => Ok(Some(Subresource::Status)),
        Some("scale") if super::scale::serves_scale(&rt.group, &rt.kind, rt.custom) => {
            Ok(Some(Subresource::Scale))
        }
        Some("finalize") if rt.kind == "Namespace" && !rt.custom => Ok(None),
        // A custom resource's handler names the object for a subresource it lacks.
        Some(_) if rt.custom && at.name.is_some() => Err(ApiError::not_found(
            &rt.group,
            &rt.plural,
            at.name.as_deref().unwrap_or(""),
        )),
        Some(_) => Err(ApiError::unknown_path()),
    }
}

/// Refuses a path whose namespace does not fit the kind's scope.
fn check_scope(rt: &ResourceType, at: &ObjectPath, method: &Method) -> Result<(), ApiError> {
    // A namespaced resource without its namespace: kube-apiserver serves no such object
    // path, and no create there.
    if rt.namespaced && at.namespace.is_none() {
        if at.name.is_some() {
            return Err(ApiError::unknown_path());
        }
        if method == Method::POST {
            return Err(ApiError::method_not_allowed());
        }
    }
    if !rt.namespaced && at.namespace.is_some() {
        return Err(ApiError::unknown_path());
    }
    Ok(())
}

/// Compacts the store's history through its current version.
fn compact(shared: &Shared) -> Response {
    let through = {
        let mut state = shared.state.lock().expect("state lock");
        let now = state.resource_version();
        state.compact_history(now)
    };
    json_response(StatusCode::OK, &json!({"compacted": through.to_string()}))
}

/// A read of a path that describes the server: version, health, discovery and OpenAPI.
fn described(route: Route, registry: &Registry, headers: &HeaderMap) -> Result<Response, ApiError> {
    match route {
        Route::Version => Ok(json_response(StatusCode::OK, &discovery::version())),
        Route::Health => Ok((StatusCode::OK, "ok").into_response()),
        Route::CoreVersions | Route::Groups if aggregated_discovery(headers) => {
            let doc = match route {
                Route::CoreVersions => super::discovery_aggregated::core(registry),
                _ => super::discovery_aggregated::named_groups(registry),
            };
            let body = serde_json::to_vec(&doc).expect("JSON values serialise");
            let content_type = super::discovery_aggregated::CONTENT_TYPE;
            Ok((StatusCode::OK, [(header::CONTENT_TYPE, content_type)], body).into_response())
        }
        Route::CoreVersions => Ok(json_response(StatusCode::OK, &discovery::core_versions())),
        Route::Groups => Ok(json_response(
            StatusCode::OK,
            &discovery::group_list(registry),
        )),
        Route::Group(g) => discovery::group(registry, &g)
            .map(|d| json_response(StatusCode::OK, &d))
            .ok_or_else(ApiError::page_not_found),
        Route::OpenApiV2 => Ok(
            if accept_of(headers).contains(super::openapi_v2::PROTOBUF_ACCEPT) {
                (
                    StatusCode::OK,
                    [(
                        header::CONTENT_TYPE,
                        super::openapi_v2::PROTOBUF_CONTENT_TYPE,
                    )],
                    super::openapi_v2::protobuf(registry),
                )
                    .into_response()
            } else {
                json_response(StatusCode::OK, &super::openapi_v2::document(registry))
            },
        ),
        Route::OpenApiRoot => Ok(super::openapi_v3::root_response(registry)),
        Route::OpenApi(g, v) => Ok(super::openapi_v3::document_response(registry, &g, &v)),
        Route::Resources(g, v) => discovery::resource_list(registry, &g, &v)
            .map(|d| json_response(StatusCode::OK, &d))
            .ok_or_else(|| match g.as_str() {
                // The core group answers a Status for any version it does not serve.
                "" => ApiError::unknown_path(),
                _ => ApiError::page_not_found(),
            }),
        // Not read: the store compacts on a POST only, and `object` serves object paths.
        Route::Compact | Route::Object(_) => Err(ApiError::method_not_allowed()),
    }
}

fn aggregated_discovery(headers: &HeaderMap) -> bool {
    super::discovery_aggregated::wanted(accept_of(headers))
}

pub(super) fn flag(query: &Query, k: &str) -> bool {
    matches!(query.get(k).map(String::as_str), Some("true" | "1"))
}

async fn resource(
    shared: Arc<Shared>,
    target: Target,
    req: Request<Body>,
    query: &Query,
) -> Result<Response, ApiError> {
    let method = req.method().clone();
    // A PATCH of no patch type is refused before the Accept header is read (go-restful's route
    // consumes only patch types; the custom resource handler checks it first too).
    let patch_type = if method == Method::PATCH {
        let content_type = content_type_of(req.headers());
        Some(
            PatchType::from_content_type(content_type)
                .ok_or_else(ApiError::unsupported_patch_type)?,
        )
    } else {
        None
    };
    let watch = method == Method::GET && target.name.is_none() && flag(query, "watch");
    let endpoint = Endpoint {
        custom: target.rt.custom,
        list: method == Method::GET && target.name.is_none(),
        watch,
    };
    let output = negotiate::output(accept_of(req.headers()), endpoint)?;
    let rt = target.rt.clone();
    let answer = answer(shared, target, req, query, &output, patch_type).await?;
    if watch {
        return Ok(answer);
    }
    negotiate::finish(&output, &rt, answer).await
}

async fn answer(
    shared: Arc<Shared>,
    target: Target,
    req: Request<Body>,
    query: &Query,
    output: &Output,
    patch_type: Option<PatchType>,
) -> Result<Response, ApiError> {
    let method = req.method().clone();
    let table = output
        .table()
        .then(|| IncludeObject::parse(query.get("includeObject").map(String::as_str)));
    match (&method, target.name.is_some()) {
        (&Method::GET, true) if target.subresource == Some(Subresource::Scale) => {
            reads::get_scale(&shared, &target)
        }
        (&Method::GET, true) => reads::get(&shared, &target, table),
        (&Method::GET, false) if flag(query, "watch") => {
            reads::watch(&shared, target, query, table)
        }
        (&Method::GET, false) => reads::list(&shared, &target, query, table),
        (&Method::POST, false) | (&Method::PUT, true) | (&Method::PATCH, true) => {
            write(shared, target, req, query, patch_type).await
        }
        (&Method::DELETE, true) => delete_one(&shared, target, req, query).await,
        (&Method::DELETE, false) => delete_collection(&shared, target, query).await,
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// `DELETE` of the object `target` names, with the options of the body and the query.
async fn delete_one(
    shared: &Arc<Shared>,
    target: Target,
    req: Request<Body>,
    query: &Query,
) -> Result<Response, ApiError> {
    let body = read_body(shared, req).await?;
    let body = if body.is_empty() {
        json!({})
    } else {
        decode(&body, "application/json")?
    };
    let body = DeleteOptions::merged_with_query(&body, query);
    let dry = super::params::delete_dry_run(query, &body)?;
    let opts = DeleteOptions::from_body(&body)?;
    let name = target.name.clone().expect("matched with a name");
    limits::check_delete(&target, &name, &shared.config.protected_namespaces)?;
    let t = target.clone();
    let delete_opts = opts.clone();
    let deleted = run_write_many(shared, dry, move |txn| {
        delete::delete(txn, &t, &name, &delete_opts, &now())
    })
    .await?;
    let (code, body) = delete::delete_answer(&target, &deleted, &opts);
    let code = StatusCode::from_u16(code).expect("a valid status code");
    Ok(json_response(code, &body))
}

/// `DELETE` of the collection `target` names: every object its label and field selectors match,
/// answered as the list of what was deleted.
async fn delete_collection(
    shared: &Arc<Shared>,
    target: Target,
    query: &Query,
) -> Result<Response, ApiError> {
    limits::check_delete_collection(&target)?;
    let labels =
        LabelSelector::parse(query.get("labelSelector").map(String::as_str).unwrap_or(""))?;
    let fields = FieldSelector::parse_for(
        query.get("fieldSelector").map(String::as_str).unwrap_or(""),
        &target.rt,
    )?;
    let dry = super::params::delete_dry_run(query, &json!({}))?;
    let t = target.clone();
    let (read_version, deleted) = run_write_many(shared, dry, move |txn| {
        let read_version = txn.read_version();
        let prefix = prefix_of(&t);
        let mut out = Vec::new();
        for (_, obj) in txn.scan(&prefix) {
            if labels.matches(&obj) && fields.matches(&obj) {
                let name = obj
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                out.push(delete::delete(txn, &t, &name, &DeleteOptions::default(), &now())?.object);
            }
        }
        Ok((read_version, out))
    })
    .await?;
    let items: Vec<Value> = deleted
        .iter()
        .map(|o| super::reads::list_item(o, &target))
        .collect();
    Ok(json_response(
        StatusCode::OK,
        &json!({"apiVersion": target.rt.api_version(&target.version), "kind": target.rt.list_kind, "metadata": {"resourceVersion": read_version.to_string()}, "items": items}),
    ))
}

pub(super) fn prefix_of(target: &Target) -> String {
    match &target.namespace {
        Some(ns) => format!("{}{}/", target.rt.key_prefix(), ns),
        None => target.rt.key_prefix(),
    }
}

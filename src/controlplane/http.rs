//! The HTTP face of the control plane: routes Kubernetes API paths to discovery, reads, writes and
//! watches; decodes bodies (JSON, YAML or protobuf; bounded in size and time by `limits`); answers
//! errors as `Status` bodies.

use super::Shared;
use super::delete::{self, DeleteOptions};
use super::discovery;
use super::error::ApiError;
use super::limits;
use super::objects::{self, PatchType, Subresource, Target, WriteOptions, as_version};
use super::params::{WriteParams, WriteVerb, write_params};
use super::protobuf;
use super::reads;
use super::selector::{FieldSelector, LabelSelector};
use super::state::State;
use super::table::IncludeObject;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode, header};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// Answers one request.
pub async fn handle(shared: Arc<Shared>, req: Request<Body>) -> Response {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let query = parse_query(req.uri().query().unwrap_or(""));
    let result = serve(shared, req, &query).await;
    result.unwrap_or_else(|e| {
        tracing::debug!(%method, %path, code = e.code, reason = e.reason.as_str(), message = %e.message, "request refused");
        error_response(&e)
    })
}

/// An error as the answer's status and body.
fn error_response(e: &ApiError) -> Response {
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
    json_response(code, &e.to_status())
}

/// Adds `warning` before the answer's other warnings (kube-apiserver warns of a deprecated API
/// before it serves the request, success or not).
fn with_first_warning(answer: Result<Response, ApiError>, warning: &str) -> Response {
    let mut resp = answer.unwrap_or_else(|e| error_response(&e));
    let headers = resp.headers_mut();
    let others: Vec<_> = headers.get_all(header::WARNING).iter().cloned().collect();
    headers.remove(header::WARNING);
    if let Ok(v) = http::HeaderValue::from_str(&warning_value(warning)) {
        headers.append(header::WARNING, v);
    }
    for v in others {
        headers.append(header::WARNING, v);
    }
    resp
}

/// A `Warning` header's value: `299 - "text"`, the text quoted as kube-apiserver quotes it.
fn warning_value(text: &str) -> String {
    format!("299 - {}", serde_json::Value::String(text.to_string()))
}

pub(super) type Query = HashMap<String, String>;

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
    Object {
        group: String,
        version: String,
        namespace: Option<String>,
        plural: String,
        name: Option<String>,
        sub: Option<String>,
    },
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
        Route::Object {
            group: group.clone(),
            version: version.clone(),
            namespace,
            plural: plural.to_string(),
            name: name.map(s),
            sub: sub.map(s),
        }
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
        Route::Object {
            group,
            version,
            namespace,
            plural,
            name,
            sub,
        } => {
            let served = req
                .extensions()
                .get::<Arc<super::served::Served>>()
                .cloned();
            let method = req.method().clone();
            let asked = super::served::Request {
                group: &group,
                plural: &plural,
                subresource: sub.as_deref(),
                method: &method,
                named: name.is_some(),
                watch: flag(query, "watch"),
            };
            if let Some(served) = &served {
                served.record(asked);
            }
            let rt = registry
                .by_resource(&group, &version, &plural)
                .ok_or_else(|| {
                    // A served group and version, or any path of the core group, answer a
                    // Status; anything else is no API path.
                    let served = discovery::resource_list(&registry, &group, &version).is_some();
                    if served || group.is_empty() {
                        ApiError::unknown_path()
                    } else {
                        ApiError::page_not_found()
                    }
                })?;
            let subresource = match sub.as_deref() {
                None => None,
                Some("status") if rt.status_subresource => Some(Subresource::Status),
                Some("scale") if super::scale::serves_scale(&rt.group, &rt.kind, rt.custom) => {
                    Some(Subresource::Scale)
                }
                Some("finalize") if rt.kind == "Namespace" && !rt.custom => None,
                // A custom resource's handler names the object for a subresource it lacks.
                Some(_) if rt.custom && name.is_some() => {
                    return Err(ApiError::not_found(
                        &rt.group,
                        &rt.plural,
                        name.as_deref().unwrap_or(""),
                    ));
                }
                Some(_) => return Err(ApiError::unknown_path()),
            };
            limits::check_subresource_method(req.method(), sub.as_deref())?;
            // A namespaced resource without its namespace: kube-apiserver serves no such object
            // path, and no create there.
            if rt.namespaced && namespace.is_none() {
                if name.is_some() {
                    return Err(ApiError::unknown_path());
                }
                if req.method() == Method::POST {
                    return Err(ApiError::method_not_allowed());
                }
            }
            if !rt.namespaced && namespace.is_some() {
                return Err(ApiError::unknown_path());
            }
            let deprecated = super::strategy::deprecation_warning(&rt, &version);
            let target = Target {
                rt,
                version,
                namespace,
                name,
                subresource,
            };
            let answer = resource(shared, target, req, query).await;
            if let (Some(served), Ok(resp)) = (&served, &answer) {
                served.record_answer(asked, resp.status());
            }
            match deprecated {
                Some(w) => Ok(with_first_warning(answer, &w)),
                None => answer,
            }
        }
        Route::Compact if req.method() == Method::POST => {
            let through = {
                let mut state = shared.state.lock().expect("state lock");
                let now = state.resource_version();
                state.compact_history(now)
            };
            Ok(json_response(
                StatusCode::OK,
                &json!({"compacted": through.to_string()}),
            ))
        }
        _ if !read_only(req.method()) => Err(ApiError::method_not_allowed()),
        Route::Compact => Err(ApiError::method_not_allowed()),
        Route::Version => Ok(json_response(StatusCode::OK, &discovery::version())),
        Route::Health => Ok((StatusCode::OK, "ok").into_response()),
        Route::CoreVersions | Route::Groups if aggregated_discovery(req.headers()) => {
            let doc = match route {
                Route::CoreVersions => super::discovery_aggregated::core(&registry),
                _ => super::discovery_aggregated::named_groups(&registry),
            };
            let body = serde_json::to_vec(&doc).expect("JSON values serialise");
            let content_type = super::discovery_aggregated::CONTENT_TYPE;
            Ok((StatusCode::OK, [(header::CONTENT_TYPE, content_type)], body).into_response())
        }
        Route::CoreVersions => Ok(json_response(StatusCode::OK, &discovery::core_versions())),
        Route::Groups => Ok(json_response(
            StatusCode::OK,
            &discovery::group_list(&registry),
        )),
        Route::Group(g) => discovery::group(&registry, &g)
            .map(|d| json_response(StatusCode::OK, &d))
            .ok_or_else(ApiError::page_not_found),
        Route::OpenApiV2 => {
            let accept = req
                .headers()
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            Ok(if accept.contains(super::openapi_v2::PROTOBUF_ACCEPT) {
                (
                    StatusCode::OK,
                    [(
                        header::CONTENT_TYPE,
                        super::openapi_v2::PROTOBUF_CONTENT_TYPE,
                    )],
                    super::openapi_v2::protobuf(&registry),
                )
                    .into_response()
            } else {
                json_response(StatusCode::OK, &super::openapi_v2::document(&registry))
            })
        }
        Route::OpenApiRoot => Ok(super::openapi_v3::root_response(&registry)),
        Route::OpenApi(g, v) => Ok(super::openapi_v3::document_response(&registry, &g, &v)),
        Route::Resources(g, v) => discovery::resource_list(&registry, &g, &v)
            .map(|d| json_response(StatusCode::OK, &d))
            .ok_or_else(|| match g.as_str() {
                // The core group answers a Status for any version it does not serve.
                "" => ApiError::unknown_path(),
                _ => ApiError::page_not_found(),
            }),
    }
}

fn aggregated_discovery(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|a| a.to_str().ok())
        .is_some_and(super::discovery_aggregated::wanted)
}

fn wants_table(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|a| a.to_str().ok())
        .is_some_and(|a| a.contains("as=Table"))
}

pub(super) fn flag(query: &Query, k: &str) -> bool {
    matches!(query.get(k).map(String::as_str), Some("true" | "1"))
}

fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

async fn resource(
    shared: Arc<Shared>,
    target: Target,
    req: Request<Body>,
    query: &Query,
) -> Result<Response, ApiError> {
    let method = req.method().clone();
    let table = wants_table(req.headers())
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
            write(shared, target, req, query).await
        }
        (&Method::DELETE, true) => {
            let body = read_body(&shared, req).await?;
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
            let deleted = run_write_many(&shared, dry, move |txn| {
                delete::delete(txn, &t, &name, &delete_opts, &now())
            })
            .await?;
            let (code, body) = delete::delete_answer(&target, &deleted, &opts);
            let code = StatusCode::from_u16(code).expect("a valid status code");
            Ok(json_response(code, &body))
        }
        (&Method::DELETE, false) => {
            limits::check_delete_collection(&target)?;
            let labels =
                LabelSelector::parse(query.get("labelSelector").map(String::as_str).unwrap_or(""))?;
            let fields = FieldSelector::parse_for(
                query.get("fieldSelector").map(String::as_str).unwrap_or(""),
                &target.rt,
            )?;
            let dry = super::params::delete_dry_run(query, &json!({}))?;
            let t = target.clone();
            let (read_version, deleted) = run_write_many(&shared, dry, move |txn| {
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
                        out.push(
                            delete::delete(txn, &t, &name, &DeleteOptions::default(), &now())?
                                .object,
                        );
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
        _ => Err(ApiError::method_not_allowed()),
    }
}

pub(super) fn prefix_of(target: &Target) -> String {
    match &target.namespace {
        Some(ns) => format!("{}{}/", target.rt.key_prefix(), ns),
        None => target.rt.key_prefix(),
    }
}

async fn read_body(shared: &Shared, req: Request<Body>) -> Result<Bytes, ApiError> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    limits::read_body(
        req.into_body(),
        declared,
        shared.config.max_body_bytes,
        shared.config.request_body_timeout,
    )
    .await
}

pub(super) use super::body::decode;

/// The manager a write records: its `fieldManager`, else the client's User-Agent up to the first
/// `/`, as kube-apiserver names an unnamed manager.
fn field_manager(headers: &HeaderMap, params: &WriteParams) -> String {
    if !params.field_manager.is_empty() {
        return params.field_manager.clone();
    }
    let ua = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let prefix = ua.split('/').next().unwrap_or("").trim();
    if prefix.is_empty() {
        "unknown".into()
    } else {
        prefix.chars().take(128).collect()
    }
}

/// A write, its `Warning`s answered with its refusal too (as kube-apiserver warns about the
/// unknown fields of an object it refuses).
async fn write(
    shared: Arc<Shared>,
    target: Target,
    req: Request<Body>,
    query: &Query,
) -> Result<Response, ApiError> {
    let warnings = super::validation::Warnings::default();
    match write_warned(shared, target, req, query, warnings.clone()).await {
        Err(e) => {
            let found = warnings.take();
            if found.is_empty() {
                return Err(e);
            }
            let code = StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut resp = json_response(code, &e.to_status());
            add_warnings(&mut resp, found);
            Ok(resp)
        }
        ok => ok,
    }
}

/// Each warning as a `Warning: 299 - "text"` header, the text quoted as kube-apiserver quotes it.
fn add_warnings(resp: &mut Response, warnings: Vec<String>) {
    for w in warnings {
        if let Ok(v) = http::HeaderValue::from_str(&warning_value(&w)) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
}

async fn write_warned(
    shared: Arc<Shared>,
    target: Target,
    req: Request<Body>,
    query: &Query,
    warnings: super::validation::Warnings,
) -> Result<Response, ApiError> {
    let method = req.method().clone();
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    let patch_type = if method == Method::PATCH {
        Some(
            PatchType::from_content_type(&content_type)
                .ok_or_else(ApiError::unsupported_patch_type)?,
        )
    } else {
        if !(content_type.starts_with("application/json")
            || content_type.contains("yaml")
            || protobuf::is_protobuf(&content_type))
        {
            return Err(ApiError::unsupported_media_type(target.rt.custom));
        }
        None
    };
    let verb = match (method.as_str(), patch_type) {
        ("POST", _) => WriteVerb::Create,
        (_, Some(pt)) => WriteVerb::Patch {
            apply: pt == PatchType::Apply,
        },
        _ => WriteVerb::Update,
    };
    let params = write_params(query, verb)?;
    let opts = WriteOptions {
        field_manager: field_manager(req.headers(), &params),
        force: params.force,
        now: now(),
        field_validation: params.field_validation,
        warnings: warnings.clone(),
    };
    let dry = params.dry_run;
    let user = super::authz::User::impersonated(req.headers());
    let body = read_body(&shared, req).await?;
    super::validation::strict_duplicates(&target, &body, &content_type, patch_type, &opts)?;
    let mut body = match patch_type {
        None => super::body::decode_object(&body, &content_type, &target.rt.kind)?,
        Some(PatchType::Apply) => decode(&body, &content_type)?,
        Some(_) => super::body::decode_patch(&body, &content_type)?,
    };
    if patch_type.is_none() && target.subresource != Some(Subresource::Scale) {
        super::body::default_type_meta(&mut body, &target);
        super::admission::check_decodable(&target, &body)?;
    }
    let t = target.clone();
    let (obj, created) = run_write_many(&shared, dry, move |txn| {
        let existed = t
            .name
            .as_deref()
            .is_some_and(|n| txn.get(&t.key(n)).is_some());
        let obj = match (method.as_str(), patch_type) {
            ("POST", _) => objects::create(txn, &t, body, &opts),
            ("PUT", _) => objects::update(txn, &t, body, &opts),
            (_, Some(pt)) => objects::patch(txn, &t, pt, body, &opts),
            _ => Err(ApiError::method_not_allowed()),
        }?;
        if let Some(user) = &user {
            super::access::check_write(txn, user, &t, &method, !existed, &obj)?;
        }
        Ok((obj, !existed))
    })
    .await?;
    let code = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let mut out = match target.subresource {
        Some(Subresource::Scale) => super::scale::scale_of(&obj),
        _ => as_version(&obj, &target.rt, &target.version),
    };
    if dry && let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        // Like upstream, a dry run assigns no resourceVersion: an existing object keeps its own
        // (so `kubectl diff` shows no resourceVersion change), a new one has none.
        match live_resource_version(&shared, &target, &obj) {
            Some(rv) => meta.insert("resourceVersion".into(), rv),
            None => meta.remove("resourceVersion"),
        };
    }
    let mut resp = json_response(code, &out);
    add_warnings(&mut resp, warnings.take());
    Ok(resp)
}

fn live_resource_version(shared: &Shared, target: &Target, obj: &Value) -> Option<Value> {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let state = shared.state.lock().expect("state lock");
    state
        .get(&target.key(name))
        .and_then(|e| e.object().pointer("/metadata/resourceVersion").cloned())
}

/// Runs a write in a transaction on a blocking thread and stages it unless dry-run; answers once
/// the committer made it durable (see `commit`).
async fn run_write_many<F, R>(shared: &Arc<Shared>, dry: bool, f: F) -> Result<R, ApiError>
where
    F: FnOnce(&mut super::state::Txn) -> Result<R, ApiError> + Send + 'static,
    R: Send + 'static,
{
    let shared = shared.clone();
    let (result, durable) = tokio::task::spawn_blocking({
        let shared = shared.clone();
        move || {
            let mut state = shared.state.lock().expect("state lock");
            let (result, changes) = transact(&state, f);
            let changes = changes.filter(|_| !dry && result.is_ok());
            // An answer that read staged state (even a refusal or a no-op) waits until that
            // state is durable, so no client hears of a write a crash could still lose.
            if changes.is_none() && !state.has_pending() {
                return Ok::<_, ApiError>((result, None));
            }
            let staged = match changes {
                Some(changes) => state.stage(changes),
                None => state.barrier(),
            };
            let (done, durable) = tokio::sync::oneshot::channel();
            shared
                .queue
                .send(super::commit::Queued { staged, done })
                .map_err(|_| ApiError::internal("the store's committer has stopped"))?;
            Ok((result, Some(durable)))
        }
    })
    .await
    .map_err(|e| ApiError::internal(format!("write task failed: {e}")))??;
    if let Some(durable) = durable {
        durable
            .await
            .map_err(|_| ApiError::internal("the store's committer has stopped"))??;
    }
    result
}

fn transact<F, R>(state: &State, f: F) -> (Result<R, ApiError>, Option<super::state::TxnChanges>)
where
    F: FnOnce(&mut super::state::Txn) -> Result<R, ApiError>,
{
    let mut txn = state.begin();
    let r = f(&mut txn);
    let changes = txn.into_changes();
    (r, (!changes.is_empty()).then_some(changes))
}

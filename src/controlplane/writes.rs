//! The write side of the API: a create, update or patch decoded (its body, its options, its
//! field manager), run in a transaction on a blocking thread, and answered once durable.

use super::Shared;
use super::error::ApiError;
use super::limits;
use super::negotiate::{add_warnings, json_response};
use super::objects::{self, PatchType, Subresource, Target, WriteOptions, as_version};
use super::params::{Query, WriteParams, WriteVerb, write_params};
use super::protobuf;
use super::state::State;
use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode, header};
use serde_json::Value;
use std::sync::Arc;

pub(super) use super::body::decode;

pub(super) fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The Content-Type of a request body; JSON when none is given.
pub(super) fn content_type_of(headers: &HeaderMap) -> &str {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
}

pub(super) async fn read_body(shared: &Shared, req: Request<Body>) -> Result<Bytes, ApiError> {
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
pub(super) async fn write(
    shared: Arc<Shared>,
    target: Target,
    req: Request<Body>,
    query: &Query,
    patch_type: Option<PatchType>,
) -> Result<Response, ApiError> {
    let warnings = super::validation::Warnings::default();
    match write_warned(shared, target, req, query, patch_type, warnings.clone()).await {
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

async fn write_warned(
    shared: Arc<Shared>,
    target: Target,
    req: Request<Body>,
    query: &Query,
    patch_type: Option<PatchType>,
    warnings: super::validation::Warnings,
) -> Result<Response, ApiError> {
    let method = req.method().clone();
    let content_type = content_type_of(req.headers()).to_string();
    let decodable = content_type.starts_with("application/json")
        || content_type.contains("yaml")
        || protobuf::is_protobuf(&content_type);
    if patch_type.is_none() && !decodable {
        return Err(ApiError::unsupported_media_type(target.rt.custom));
    }
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
        Some(PatchType::Apply) => {
            let applied = decode(&body, &content_type)?;
            if target.subresource != Some(Subresource::Scale) {
                super::body::check_applied_type(&applied, &target)?;
            }
            applied
        }
        Some(_) => super::body::decode_patch(&body, &content_type)?,
    };
    if patch_type.is_none() && target.subresource != Some(Subresource::Scale) {
        super::body::default_type_meta(&mut body, &target);
        super::admission::check_decodable(&target, &body)?;
    }
    let t = target.clone();
    let (obj, created) = run_write_many(&shared, dry, move |txn| {
        let existed = t.name.as_deref().is_some_and(|n| txn.contains(&t.key(n)));
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
pub(super) async fn run_write_many<F, R>(
    shared: &Arc<Shared>,
    dry: bool,
    f: F,
) -> Result<R, ApiError>
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

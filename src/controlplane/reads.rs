//! The read side of the API: GET of one object, LIST (selectors, `limit`/`continue`, Tables for
//! `kubectl get`) served from the in-memory index by splicing cached JSON, and WATCH streams.

use super::Shared;
use super::error::ApiError;
use super::history::{self, TooOld};
use super::http::{Query, bytes_response, flag, json_response, prefix_of};
use super::objects::{Target, as_version};
use super::params::{self, ContinueToken};
use super::selector::{FieldSelector, LabelSelector};
use super::state::EventType;
use super::table::{IncludeObject, table};
use super::watch::{self, StreamSettings, WatchFilter, WatchStart};
use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{StatusCode, header};
use serde_json::{Value, json};

pub(super) fn get(
    shared: &Shared,
    target: &Target,
    table_fmt: Option<IncludeObject>,
) -> Result<Response, ApiError> {
    let name = target.name.as_deref().expect("GET with a name");
    let state = shared.state.lock().expect("state lock");
    let entry = state
        .get(&target.key(name))
        .ok_or_else(|| ApiError::not_found(&target.rt.group, &target.rt.plural, name))?;
    let table_fmt = table_fmt.filter(|_| target.subresource.is_none());
    if table_fmt.is_none() && target.rt.serves_stored_text(&target.version) {
        // The stored text is the answer: no parse.
        return Ok(bytes_response(StatusCode::OK, with_newline(&entry.json)));
    }
    let obj = as_version(&entry.object(), &target.rt, &target.version);
    let rv = state.resource_version().to_string();
    drop(state);
    let obj = match table_fmt {
        Some(include) => table(&target.rt, &[obj], &rv, include, chrono::Utc::now()),
        None => obj,
    };
    let text = serde_json::to_vec(&obj).expect("JSON values serialise");
    Ok(bytes_response(StatusCode::OK, with_newline(&text)))
}

/// An object's JSON as kube-apiserver's encoder writes it: followed by a newline (a client reading
/// a GET as a stream of lines, e.g. `?watch=true` on an object's path, sees a whole line).
fn with_newline(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len() + 1);
    out.extend_from_slice(json);
    out.push(b'\n');
    out
}

/// GET of a Deployment's `/scale`.
pub(super) fn get_scale(shared: &Shared, target: &Target) -> Result<Response, ApiError> {
    let name = target.name.as_deref().expect("GET with a name");
    let state = shared.state.lock().expect("state lock");
    let entry = state
        .get(&target.key(name))
        .ok_or_else(|| ApiError::not_found(&target.rt.group, &target.rt.plural, name))?;
    let scale = super::scale::scale_of(&entry.object());
    drop(state);
    Ok(json_response(StatusCode::OK, &scale))
}

pub(super) fn list(
    shared: &Shared,
    target: &Target,
    query: &Query,
    table_fmt: Option<IncludeObject>,
) -> Result<Response, ApiError> {
    let labels =
        LabelSelector::parse(query.get("labelSelector").map(String::as_str).unwrap_or(""))?;
    let fields = FieldSelector::parse_for(
        query.get("fieldSelector").map(String::as_str).unwrap_or(""),
        &target.rt,
    )?;
    let from = params::list_options(query, false)?;
    let limit = params::limit(query)?;
    let token = params::continue_token(query)?;
    let prefix = prefix_of(target);
    let state = shared.state.lock().expect("state lock");
    // A continue token lists at its version (a negative one: at the latest); an exact list at
    // the one asked for; any other list at the latest.
    let latest = state.resource_version();
    let list_rv = match (&token, from) {
        (Some(t), _) => u64::try_from(t.rv).map_or(latest, |rv| rv.min(latest)),
        (None, params::ListFrom::Exact(rv)) => rv.min(latest),
        (None, params::ListFrom::Latest) => latest,
    };
    let resume = token.as_ref().map(|t| t.last_key(&prefix));
    let mut entries = match history::range_at(&state, &prefix, resume.as_deref(), list_rv) {
        Ok(entries) => entries,
        Err(TooOld) => {
            return match &token {
                Some(t) => Ok(expired_continue(t)),
                None => Err(ApiError::gone(
                    "The resourceVersion for the provided list is too old.",
                )),
            };
        }
    };
    let same_version = target.rt.serves_stored_text(&target.version);
    let filtered = !(labels.is_empty() && fields.is_empty());
    let mut selected = Vec::new();
    let mut next = None;
    let mut remaining = None;
    while let Some((key, entry)) = entries.next() {
        if filtered {
            let obj = entry.object();
            if !labels.matches(&obj) || !fields.matches(&obj) {
                continue;
            }
        }
        selected.push((key.clone(), entry.clone()));
        if limit.is_some_and(|l| selected.len() >= l) {
            // As upstream's watch cache: a page that filled up continues if anything at all
            // follows it, matching or not; only an unfiltered list counts what is left.
            let rest = entries.by_ref().count();
            if rest > 0 {
                next = Some(ContinueToken::after(
                    &prefix,
                    &selected_last_key(&selected),
                    list_rv,
                ));
                remaining = (!filtered).then_some(rest);
            }
            break;
        }
    }
    drop(entries);
    drop(state);
    let mut metadata = json!({"resourceVersion": list_rv.to_string()});
    match next {
        Some(n) => metadata["continue"] = json!(n.encode()),
        // Upstream's unstructured lists (custom resources) always carry the field.
        None if target.rt.custom => metadata["continue"] = json!(""),
        None => {}
    }
    if let Some(n) = remaining {
        metadata["remainingItemCount"] = json!(n);
    }
    if let Some(include) = table_fmt {
        let objs: Vec<Value> = selected
            .iter()
            .map(|(_, e)| as_version(&e.object(), &target.rt, &target.version))
            .collect();
        let mut t = table(
            &target.rt,
            &objs,
            &list_rv.to_string(),
            include,
            chrono::Utc::now(),
        );
        t["metadata"] = metadata;
        return Ok(json_response(StatusCode::OK, &t));
    }
    // Splice the cached JSON of each object: LIST costs a copy, not a re-serialisation.
    let head = json!({"apiVersion": target.rt.api_version(&target.version), "kind": target.rt.list_kind, "metadata": metadata});
    let mut out = serde_json::to_vec(&head).expect("JSON values serialise");
    out.pop();
    out.extend_from_slice(b",\"items\":[");
    for (i, (_, e)) in selected.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if same_version && target.rt.custom {
            out.extend_from_slice(&e.json);
        } else {
            out.extend_from_slice(
                &serde_json::to_vec(&list_item(&e.object(), target))
                    .expect("JSON values serialise"),
            );
        }
    }
    out.extend_from_slice(b"]}");
    Ok(bytes_response(StatusCode::OK, out))
}

/// One item of a list in the version asked for. Custom resources keep their `apiVersion` and
/// `kind` (upstream serves them as unstructured objects); built-in kinds' items carry neither,
/// as upstream's typed lists.
pub(super) fn list_item(obj: &Value, target: &Target) -> Value {
    let mut item = as_version(obj, &target.rt, &target.version);
    if !target.rt.custom
        && let Some(map) = item.as_object_mut()
    {
        map.remove("apiVersion");
        map.remove("kind");
    }
    item
}

/// A continue token from before the last compaction: 410 Expired, with a token that continues
/// from the same key at the latest version (`rv` -1), as kube-apiserver answers it.
fn expired_continue(token: &ContinueToken) -> Response {
    let fresh = ContinueToken {
        rv: -1,
        ..token.clone()
    };
    let mut status = ApiError::gone(
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
    )
    .to_status();
    status["metadata"]["continue"] = json!(fresh.encode());
    json_response(StatusCode::GONE, &status)
}

fn selected_last_key(selected: &[(String, super::state::Entry)]) -> String {
    selected.last().map(|(k, _)| k.clone()).unwrap_or_default()
}

pub(super) fn watch(
    shared: &Shared,
    target: Target,
    query: &Query,
    table_fmt: Option<IncludeObject>,
) -> Result<Response, ApiError> {
    let labels =
        LabelSelector::parse(query.get("labelSelector").map(String::as_str).unwrap_or(""))?;
    let fields = FieldSelector::parse_for(
        query.get("fieldSelector").map(String::as_str).unwrap_or(""),
        &target.rt,
    )?;
    params::list_options(query, true)?;
    let timeout = params::watch_timeout(query)?;
    let bookmarks = flag(query, "allowWatchBookmarks");
    let from = params::watch_from(query)?;
    let filter = WatchFilter {
        rt: target.rt.clone(),
        version: target.version.clone(),
        namespace: target.namespace.clone(),
        labels,
        fields,
        table: table_fmt,
    };
    let settings = StreamSettings {
        timeout,
        bookmarks,
        bookmark_interval: shared.config.bookmark_interval,
    };

    let state = shared.state.lock().expect("state lock");
    let start = match from {
        params::WatchFrom::Current { initial_events_end } => {
            // Start with the current state as ADDED events, as upstream does for an unset/0 resourceVersion.
            let initial: Vec<Bytes> = state
                .range(&prefix_of(&target), None)
                .filter(|(_, e)| filter.selects(e))
                .flat_map(|(_, e)| filter.lines(EventType::Added, e))
                .collect();
            WatchStart {
                initial,
                replay: vec![],
                receiver: state.subscribe(),
                resource_version: state.resource_version(),
                initial_events_end,
            }
        }
        params::WatchFrom::Since(rv) => {
            match state.events_since(rv, watch_start(&state, &target)) {
                Ok(replay) => WatchStart {
                    initial: vec![],
                    replay,
                    receiver: state.subscribe(),
                    resource_version: rv,
                    initial_events_end: false,
                },
                Err(gone) => {
                    drop(state);
                    let lines = watch::expired_stream(&gone);
                    let stream = futures::stream::iter(
                        lines.into_iter().map(Ok::<_, std::convert::Infallible>),
                    );
                    return Ok(stream_response(Body::from_stream(stream)));
                }
            }
        }
    };
    drop(state);
    let rx = watch::spawn(filter, start, settings);
    Ok(stream_response(Body::from_stream(
        tokio_stream::wrappers::ReceiverStream::new(rx),
    )))
}

/// Where a watch of the target's kind may start from: after the last event of its kind the log
/// dropped, and for a custom resource, when its CRD began to be served (upstream's watch cache of
/// the kind starts then).
fn watch_start(state: &super::state::State, target: &Target) -> u64 {
    let trimmed = state.trimmed_for(&target.rt.key_prefix());
    if !target.rt.custom {
        return trimmed;
    }
    let crd = format!("{}.{}", target.rt.plural, target.rt.group);
    state.served_since(&crd).unwrap_or(0).max(trimmed)
}

fn stream_response(body: Body) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "no-cache, private")
        .body(body)
        .expect("static response parts are valid")
}

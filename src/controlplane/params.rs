//! Query parameters, parsed into values before any state is read: those of LIST and WATCH
//! requests (`limit`, `continue`, `timeoutSeconds`, `resourceVersion`, `sendInitialEvents`; a bad
//! value is a 400 naming the parameter) and the options of writes (`dryRun`, `fieldManager`,
//! `force`, `fieldValidation`; refused as kube-apiserver refuses its `CreateOptions`,
//! `UpdateOptions`, `PatchOptions` and `DeleteOptions`: 422 naming each field at fault).

use super::error::ApiError;
use crate::crdschema::FieldValidation;
use crate::machinery::field::{BadValue, FieldError};
use base64::Engine;
use std::time::Duration;

/// A request's query parameters, decoded.
pub(super) type Query = std::collections::HashMap<String, String>;

/// The watch timeout when the request sets none (upstream picks 30 to 60 minutes).
const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(1800);

/// The longest watch timeout honoured: larger values are served as this (about ten years), so
/// the deadline always fits in a clock reading.
const MAX_WATCH_TIMEOUT_SECS: u64 = 10 * 365 * 24 * 3600;

/// Where a LIST resumes, in upstream's own token format (so a client sees the same kind of
/// token from either server): the list's resourceVersion, and the key to start from relative
/// to the list's key prefix (the last key returned and a NUL).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) struct ContinueToken {
    /// Always `meta.k8s.io/v1`.
    pub v: String,
    /// The list's resourceVersion; negative for "the latest" (a token handed out with a 410).
    pub rv: i64,
    pub start: String,
}

impl ContinueToken {
    /// The token resuming a list of the keys under `prefix` after `last_key`, at `rv`.
    pub fn after(prefix: &str, last_key: &str, rv: u64) -> Self {
        let rv = i64::try_from(rv).unwrap_or(i64::MAX);
        let relative = last_key.strip_prefix(prefix).unwrap_or(last_key);
        ContinueToken {
            v: "meta.k8s.io/v1".into(),
            rv,
            start: format!("{relative}\0"),
        }
    }

    /// The storage key the list resumes after.
    pub fn last_key(&self, prefix: &str) -> String {
        format!("{prefix}{}", self.start.trim_end_matches('\0'))
    }

    /// The opaque `continue` value handed to the client.
    pub fn encode(&self) -> String {
        let raw = serde_json::to_vec(self).expect("token serialises");
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
    }
}

/// An integer parameter as Go's `strconv.ParseInt` reads it, refused in its words.
fn parse_int(value: &str) -> Result<i64, ApiError> {
    value.parse::<i64>().map_err(|e| {
        let why = match e.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                "value out of range"
            }
            _ => "invalid syntax",
        };
        ApiError::bad_request(format!(
            "strconv.ParseInt: parsing {}: {why}",
            crate::machinery::field::go_quote(value)
        ))
    })
}

/// `limit`: `None` when unset, empty, 0 or negative (everything).
pub(super) fn limit(query: &Query) -> Result<Option<usize>, ApiError> {
    match query.get("limit").filter(|l| !l.is_empty()) {
        Some(l) => Ok(usize::try_from(parse_int(l)?).ok().filter(|l| *l > 0)),
        None => Ok(None),
    }
}

/// `continue`: the token a previous page handed out; one that is not is refused in
/// kube-apiserver's words (Go's base64 and JSON errors, then what the token says).
pub(super) fn continue_token(query: &Query) -> Result<Option<ContinueToken>, ApiError> {
    let Some(c) = query.get("continue").filter(|c| !c.is_empty()) else {
        return Ok(None);
    };
    let invalid = |why: String| ApiError::bad_request(format!("invalid continue token: {why}"));
    let (v, rv, start) = super::continuation::decode(c).map_err(invalid)?;
    Ok(Some(ContinueToken { v, rv, start }))
}

/// `timeoutSeconds` of a watch.
pub(super) fn watch_timeout(query: &Query) -> Result<Duration, ApiError> {
    match query.get("timeoutSeconds").filter(|t| !t.is_empty()) {
        Some(t) => {
            let secs = u64::try_from(parse_int(t)?).unwrap_or(0);
            Ok(Duration::from_secs(secs.min(MAX_WATCH_TIMEOUT_SECS)))
        }
        None => Ok(DEFAULT_WATCH_TIMEOUT),
    }
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WatchFrom {
    /// The current state as ADDED events, then changes (unset or "0" resourceVersion, or
    /// `sendInitialEvents=true`); `initial_events_end` asks for the bookmark that ends them.
    Current { initial_events_end: bool },
    /// Changes after this resourceVersion.
    Since(u64),
}

/// `resourceVersion`, `sendInitialEvents` and `allowWatchBookmarks` of a watch.
pub(super) fn watch_from(query: &Query) -> Result<WatchFrom, ApiError> {
    let send_initial = query.get("sendInitialEvents").map(|v| v == "true");
    let rv = query
        .get("resourceVersion")
        .map(String::as_str)
        .unwrap_or("");
    if send_initial == Some(true) || rv.is_empty() || rv == "0" {
        return Ok(WatchFrom::Current {
            initial_events_end: send_initial == Some(true)
                && super::http::flag(query, "allowWatchBookmarks"),
        });
    }
    rv.parse().map(WatchFrom::Since).map_err(|_| {
        // Upstream's watch cache fails here with a 500 that gives no reason.
        ApiError::new(500, super::error::Reason::Unknown, format!(
            "resourceVersion: Invalid value: {rv:?}: strconv.ParseUint: parsing {rv:?}: invalid syntax"
        ))
    })
}

/// `resourceVersion` and `resourceVersionMatch` of a LIST: where it must start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ListFrom {
    /// Unset or `0`, or a version the list may be newer than (`NotOlderThan`, the default).
    Latest,
    /// Exactly this version (`resourceVersionMatch=Exact`).
    Exact(u64),
}

/// Checks the ListOptions of a LIST (`watch` false) or WATCH as upstream validates them (422
/// `ListOptions.meta.k8s.io "" is invalid`), and reads where a LIST starts.
pub(super) fn list_options(query: &Query, watch: bool) -> Result<ListFrom, ApiError> {
    let get = |k: &str| query.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let rv = get("resourceVersion");
    let rv_match = get("resourceVersionMatch");
    let has_continue = get("continue").is_some();
    let send_initial = query.contains_key("sendInitialEvents");
    let continue_forbidden = || {
        FieldError::forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden when continue is provided",
        )
    };
    let mut errors = Vec::new();
    if watch {
        if send_initial && rv_match != Some("NotOlderThan") {
            errors.push(FieldError::forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if let Some(m) = rv_match {
            if !send_initial {
                errors.push(FieldError::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if m != "NotOlderThan" {
                errors.push(FieldError::not_supported(
                    "resourceVersionMatch",
                    BadValue::Str(m.to_string()),
                    &["NotOlderThan"],
                ));
            }
            if has_continue {
                errors.push(continue_forbidden());
            }
        }
    } else {
        if let Some(m) = rv_match {
            if rv.is_none() {
                errors.push(FieldError::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if has_continue {
                errors.push(continue_forbidden());
            }
            if m != "Exact" && m != "NotOlderThan" {
                errors.push(FieldError::not_supported(
                    "resourceVersionMatch",
                    BadValue::Str(m.to_string()),
                    &["Exact", "NotOlderThan", ""],
                ));
            }
            if m == "Exact" && rv == Some("0") {
                errors.push(FieldError::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if send_initial {
            errors.push(FieldError::forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for list",
            ));
        }
    }
    if !errors.is_empty() {
        return Err(ApiError::invalid_options("ListOptions", &errors));
    }
    if watch {
        return Ok(ListFrom::Latest);
    }
    let Some(rv) = rv else {
        return Ok(ListFrom::Latest);
    };
    let parsed: u64 = rv.parse().map_err(|_| {
        ApiError::bad_request(format!(
            "invalid resource version: resourceVersion: Invalid value: {rv:?}: strconv.ParseUint: parsing {rv:?}: invalid syntax"
        ))
    })?;
    if has_continue && rv != "0" {
        return Err(ApiError::bad_request(
            "specifying resource version is not allowed when using continue",
        ));
    }
    Ok(match rv_match {
        Some("Exact") => ListFrom::Exact(parsed),
        _ => ListFrom::Latest,
    })
}

/// The longest `fieldManager` kube-apiserver accepts, in bytes.
const MAX_FIELD_MANAGER_BYTES: usize = 128;

/// What a write does, for the options it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WriteVerb {
    Create,
    Update,
    Patch { apply: bool },
}

impl WriteVerb {
    /// The kind of its options, as a 422 names it.
    fn options_kind(self) -> &'static str {
        match self {
            WriteVerb::Create => "CreateOptions",
            WriteVerb::Update => "UpdateOptions",
            WriteVerb::Patch { .. } => "PatchOptions",
        }
    }
}

/// The options of a create, update or patch, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct WriteParams {
    pub dry_run: bool,
    /// `fieldManager` as the query gives it (empty when unset).
    pub field_manager: String,
    pub force: bool,
    pub field_validation: FieldValidation,
}

/// Reads and checks the options of a write, in the order kube-apiserver checks them: `force`
/// (only for apply) or an apply's required `fieldManager`, the `fieldManager`'s length, `dryRun`
/// (only `All`), `fieldValidation`.
pub(super) fn write_params(query: &Query, verb: WriteVerb) -> Result<WriteParams, ApiError> {
    let field_manager = query.get("fieldManager").cloned().unwrap_or_default();
    let mut errors = Vec::new();
    match verb {
        WriteVerb::Patch { apply: true } if field_manager.is_empty() => {
            errors.push(FieldError::required(
                "fieldManager",
                "is required for apply patch",
            ));
        }
        WriteVerb::Patch { apply: false } if query.contains_key("force") => {
            errors.push(FieldError::forbidden(
                "force",
                "may not be specified for non-apply patch",
            ));
        }
        _ => {}
    }
    if field_manager.len() > MAX_FIELD_MANAGER_BYTES {
        errors.push(FieldError::too_long(
            "fieldManager",
            MAX_FIELD_MANAGER_BYTES,
        ));
    }
    let dry_run = query.get("dryRun");
    if let Some(d) = dry_run.filter(|d| *d != "All") {
        let listed = serde_json::to_string(&[d]).expect("strings serialise");
        errors.push(FieldError::not_supported(
            "dryRun",
            BadValue::Raw(listed),
            &["All"],
        ));
    }
    let validation = query.get("fieldValidation").map(String::as_str);
    if let Some(v) = validation.filter(|v| !["", "Ignore", "Strict", "Warn"].contains(v)) {
        errors.push(FieldError::not_supported(
            "fieldValidation",
            BadValue::Str(v.to_string()),
            &["", "Ignore", "Strict", "Warn"],
        ));
    }
    if !errors.is_empty() {
        return Err(ApiError::invalid_options(verb.options_kind(), &errors));
    }
    Ok(WriteParams {
        dry_run: dry_run.is_some(),
        field_manager,
        force: super::http::flag(query, "force"),
        field_validation: FieldValidation::parse(validation).map_err(ApiError::bad_request)?,
    })
}

/// The `dryRun` of a DELETE (the body's DeleteOptions, else the query's) after kube-apiserver's
/// checks of its DeleteOptions: a known `propagationPolicy`, not set with `orphanDependents`.
pub(super) fn delete_dry_run(query: &Query, body: &serde_json::Value) -> Result<bool, ApiError> {
    let mut errors = Vec::new();
    let policy = body.get("propagationPolicy").and_then(|p| p.as_str());
    if let Some(p) = policy {
        if body.get("orphanDependents").is_some_and(|o| !o.is_null()) {
            errors.push(FieldError::invalid(
                "propagationPolicy",
                p,
                "orphanDependents and deletionPropagation cannot be both set",
            ));
        }
        if !["Foreground", "Background", "Orphan"].contains(&p) {
            errors.push(FieldError::not_supported(
                "propagationPolicy",
                BadValue::Str(p.to_string()),
                &["Foreground", "Background", "Orphan", "nil"],
            ));
        }
    }
    let from_body: Option<Vec<String>> = body.get("dryRun").and_then(|d| d.as_array()).map(|d| {
        d.iter()
            .map(|v| v.as_str().unwrap_or_default().to_string())
            .collect()
    });
    let dry_run = from_body.unwrap_or_else(|| query.get("dryRun").cloned().into_iter().collect());
    if dry_run.iter().any(|d| d != "All") {
        let listed = serde_json::to_string(&dry_run).expect("strings serialise");
        errors.push(FieldError::not_supported(
            "dryRun",
            BadValue::Raw(listed),
            &["All"],
        ));
    }
    if !errors.is_empty() {
        return Err(ApiError::invalid_options("DeleteOptions", &errors));
    }
    Ok(!dry_run.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delete_options_are_refused_as_kube_refuses_them() {
        use serde_json::json;
        let message =
            |query: &[(&str, &str)], body| delete_dry_run(&q(query), &body).unwrap_err().message;
        assert_eq!(
            message(&[], json!({"propagationPolicy": "x"})),
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"x\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
        );
        assert_eq!(
            message(
                &[],
                json!({"propagationPolicy": "Foreground", "orphanDependents": true})
            ),
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Foreground\": orphanDependents and deletionPropagation cannot be both set"
        );
        assert!(
            message(&[], json!({"dryRun": ["x"]})).contains("dryRun: Unsupported value: [\"x\"]")
        );
        assert!(message(&[("dryRun", "x")], json!({})).contains("[\"x\"]"));
        assert!(delete_dry_run(&q(&[("dryRun", "All")]), &json!({})).unwrap());
        assert!(delete_dry_run(&q(&[]), &json!({"dryRun": ["All"]})).unwrap());
        assert!(!delete_dry_run(&q(&[]), &json!({"propagationPolicy": "Orphan"})).unwrap());
    }

    #[test]
    fn write_options_are_refused_as_kube_refuses_them() {
        let message = |pairs: &[(&str, &str)], verb| {
            write_params(&q(pairs), verb)
                .map(|_| ())
                .unwrap_err()
                .message
        };
        assert_eq!(
            message(&[("dryRun", "Some")], WriteVerb::Create),
            "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"Some\"]: supported values: \"All\""
        );
        assert_eq!(
            message(&[], WriteVerb::Patch { apply: true }),
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
        );
        assert_eq!(
            message(&[("force", "false")], WriteVerb::Patch { apply: false }),
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
        );
        let long = "x".repeat(129);
        assert_eq!(
            message(
                &[("fieldManager", &long), ("fieldValidation", "Foo")],
                WriteVerb::Update
            ),
            "UpdateOptions.meta.k8s.io \"\" is invalid: [fieldManager: Too long: may not be more than 128 bytes, fieldValidation: Unsupported value: \"Foo\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"]"
        );
        let ok = write_params(
            &q(&[("dryRun", "All"), ("fieldManager", "me"), ("force", "true")]),
            WriteVerb::Patch { apply: true },
        )
        .unwrap();
        assert!(ok.dry_run && ok.force);
        assert_eq!(ok.field_manager, "me");
        assert!(!write_params(&q(&[]), WriteVerb::Create).unwrap().dry_run);
    }

    fn q(pairs: &[(&str, &str)]) -> Query {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn limit_and_continue() {
        assert_eq!(limit(&q(&[])).unwrap(), None);
        assert_eq!(limit(&q(&[("limit", "0")])).unwrap(), None);
        assert_eq!(limit(&q(&[("limit", "5")])).unwrap(), Some(5));
        // Negative is everything, as kube-apiserver reads it; not a number is Go's parse error.
        assert_eq!(limit(&q(&[("limit", "-1")])).unwrap(), None);
        assert_eq!(
            limit(&q(&[("limit", "x")])).unwrap_err().message,
            "strconv.ParseInt: parsing \"x\": invalid syntax"
        );
        assert_eq!(
            limit(&q(&[("limit", "99999999999999999999")]))
                .unwrap_err()
                .message,
            "strconv.ParseInt: parsing \"99999999999999999999\": value out of range"
        );
        let token = ContinueToken::after("/ConfigMap/ns/", "/ConfigMap/ns/a", 7);
        assert_eq!(token.start, "a\0");
        assert_eq!(token.last_key("/ConfigMap/ns/"), "/ConfigMap/ns/a");
        // Upstream's own token for the same place decodes to the same.
        let upstream = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6Nywic3RhcnQiOiJhXHUwMDAwIn0";
        let back = continue_token(&q(&[("continue", upstream)])).unwrap();
        assert_eq!(back, Some(token.clone()));
        let back = continue_token(&q(&[("continue", &token.encode())])).unwrap();
        assert_eq!(back, Some(token));
        assert!(continue_token(&q(&[("continue", "!!")])).is_err());
    }

    #[test]
    fn watch_parameters() {
        assert_eq!(watch_timeout(&q(&[])).unwrap(), DEFAULT_WATCH_TIMEOUT);
        // A huge timeout is capped so the deadline stays representable (it used to panic).
        let huge = watch_timeout(&q(&[("timeoutSeconds", "9223372036854775807")])).unwrap();
        assert!(tokio::time::Instant::now().checked_add(huge).is_some());
        assert!(watch_timeout(&q(&[("timeoutSeconds", "x")])).is_err());
        assert_eq!(
            watch_from(&q(&[("resourceVersion", "0")])).unwrap(),
            WatchFrom::Current {
                initial_events_end: false
            }
        );
        assert_eq!(
            watch_from(&q(&[("resourceVersion", "12")])).unwrap(),
            WatchFrom::Since(12)
        );
        assert_eq!(
            watch_from(&q(&[
                ("resourceVersion", "12"),
                ("sendInitialEvents", "true"),
                ("allowWatchBookmarks", "true")
            ]))
            .unwrap(),
            WatchFrom::Current {
                initial_events_end: true
            }
        );
        assert!(watch_from(&q(&[("resourceVersion", "abc")])).is_err());
    }
}

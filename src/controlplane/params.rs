//! Query parameters, parsed into values before any state is read: those of LIST and WATCH
//! requests (`limit`, `continue`, `timeoutSeconds`, `resourceVersion`, `sendInitialEvents`; a bad
//! value is a 400 naming the parameter) and the options of writes (`dryRun`, `fieldManager`,
//! `force`, `fieldValidation`; refused as kube-apiserver refuses its `CreateOptions`,
//! `UpdateOptions`, `PatchOptions` and `DeleteOptions`: 422 naming each field at fault).

use super::error::ApiError;
use super::http::Query;
use crate::crdschema::FieldValidation;
use crate::validate::field::{BadValue, FieldError};
use base64::Engine;
use std::time::Duration;

/// The watch timeout when the request sets none (upstream picks 30 to 60 minutes).
const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(1800);

/// The longest watch timeout honoured: larger values are served as this (about ten years), so
/// the deadline always fits in a clock reading.
const MAX_WATCH_TIMEOUT_SECS: u64 = 10 * 365 * 24 * 3600;

/// Where a LIST resumes: the list's resourceVersion and the last key already returned.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) struct ContinueToken {
    pub rv: u64,
    pub after: String,
}

impl ContinueToken {
    /// The opaque `continue` value handed to the client.
    pub fn encode(&self) -> String {
        let raw = serde_json::to_vec(self).expect("token serialises");
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
    }
}

/// `limit`: `None` when unset, empty or 0 (everything).
pub(super) fn limit(query: &Query) -> Result<Option<usize>, ApiError> {
    match query.get("limit").filter(|l| !l.is_empty()) {
        Some(l) => Ok(Some(
            l.parse::<usize>()
                .map_err(|_| ApiError::bad_request(format!("limit: invalid value {l:?}")))?,
        )
        .filter(|l| *l > 0)),
        None => Ok(None),
    }
}

/// `continue`: the token a previous page handed out.
pub(super) fn continue_token(query: &Query) -> Result<Option<ContinueToken>, ApiError> {
    let Some(c) = query.get("continue").filter(|c| !c.is_empty()) else {
        return Ok(None);
    };
    let invalid = |_| ApiError::bad_request("continue: invalid token");
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(c)
        .map_err(invalid)?;
    serde_json::from_slice::<ContinueToken>(&raw)
        .map(Some)
        .map_err(|_| ApiError::bad_request("continue: invalid token"))
}

/// `timeoutSeconds` of a watch.
pub(super) fn watch_timeout(query: &Query) -> Result<Duration, ApiError> {
    match query.get("timeoutSeconds").filter(|t| !t.is_empty()) {
        Some(t) => {
            let secs = t.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!("timeoutSeconds: invalid value {t:?}"))
            })?;
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
    rv.parse()
        .map(WatchFrom::Since)
        .map_err(|_| ApiError::bad_request(format!("resourceVersion: invalid value {rv:?}")))
}

/// The longest `fieldManager` kube-apiserver accepts, in bytes.
const MAX_FIELD_MANAGER_BYTES: usize = 128;

/// What a write does, for the options it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WriteVerb {
    Create,
    Update,
    Patch { apply: bool },
    Delete,
}

impl WriteVerb {
    /// The kind of its options, as a 422 names it.
    fn options_kind(self) -> &'static str {
        match self {
            WriteVerb::Create => "CreateOptions",
            WriteVerb::Update => "UpdateOptions",
            WriteVerb::Patch { .. } => "PatchOptions",
            WriteVerb::Delete => "DeleteOptions",
        }
    }
}

/// The options of a write, checked.
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
    if verb != WriteVerb::Delete && field_manager.len() > MAX_FIELD_MANAGER_BYTES {
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
    if verb != WriteVerb::Delete
        && let Some(v) = validation.filter(|v| !["", "Ignore", "Strict", "Warn"].contains(v))
    {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(message(&[("dryRun", "x")], WriteVerb::Delete).starts_with("DeleteOptions"));
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
        assert!(
            limit(&q(&[("limit", "-1")]))
                .unwrap_err()
                .message
                .contains("limit")
        );
        let token = ContinueToken {
            rv: 7,
            after: "/ConfigMap/ns/a".into(),
        };
        let back = continue_token(&q(&[("continue", &token.encode())])).unwrap();
        assert_eq!(back, Some(token));
        assert!(continue_token(&q(&[("continue", "!!")])).is_err());
    }

    #[test]
    fn watch_parameters() {
        assert_eq!(watch_timeout(&q(&[])).unwrap(), DEFAULT_WATCH_TIMEOUT);
        // A huge timeout is capped so the deadline stays representable (it used to panic).
        let huge = watch_timeout(&q(&[("timeoutSeconds", "18446744073709551615")])).unwrap();
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

//! Fuzzes server-side apply (`aro_gitops::machinery::ssa::apply`), the engine behind PATCH
//! with `application/apply-patch+yaml`. The input is `selector byte, live JSON, NUL, applied
//! JSON`; the selector picks the schema (built-in Service, ConfigMap, Deployment, or any object),
//! whether the object exists and whether the apply is forced.
//!
//! Properties checked besides "never panics":
//! - re-applying the same configuration by the same manager to the result succeeds and changes
//!   nothing (apply is idempotent), as `kubectl apply --server-side` run twice.

#![no_main]

use aro_gitops::machinery::ssa::{ApplyRequest, Schema, apply};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn schema(selector: u8) -> Schema {
    match selector % 4 {
        0 => Schema::builtin("", "Service"),
        1 => Schema::builtin("", "ConfigMap"),
        2 => Schema::builtin("apps", "Deployment"),
        _ => Schema::any_object(),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Some(split) = rest.iter().position(|&b| b == 0) else {
        return;
    };
    let (Ok(live), Ok(applied)) = (
        serde_json::from_slice::<Value>(&rest[..split]),
        serde_json::from_slice::<Value>(&rest[split + 1..]),
    ) else {
        return;
    };
    if !live.is_object() || !applied.is_object() {
        return;
    }
    let schema = schema(selector);
    let existing = selector & 0x10 != 0;
    let request = ApplyRequest {
        live: existing.then_some(&live),
        applied: &applied,
        manager: "fuzz",
        force: selector & 0x20 != 0,
        schema: &schema,
        subresource: None,
        api_version: "v1",
        now: "2026-01-01T00:00:00Z",
    };
    let Ok(first) = apply(&request) else {
        return;
    };
    let again = apply(&ApplyRequest {
        live: Some(&first),
        ..request
    })
    .expect("re-applying what was just applied conflicts");
    assert_eq!(
        again, first,
        "re-applying the same configuration changed the object"
    );
});

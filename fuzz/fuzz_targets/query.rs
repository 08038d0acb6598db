//! Fuzzes the query string of LIST and WATCH requests
//! (`aro_gitops::controlplane::fuzzing::list_request`): percent-decoding, `limit`, `continue`
//! tokens, `timeoutSeconds`, `resourceVersion`/`sendInitialEvents`, and both selectors. The input
//! is the raw query string (without `?`).
//!
//! Properties checked besides "never panics":
//! - a refusal is a 400 with a message;
//! - the watch deadline (`now + timeout`) is representable, so the watch task cannot overflow;
//! - the parsed selectors can be matched against an object without panicking.

#![no_main]

use aro_gitops::controlplane::fuzzing::list_request;
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let raw = String::from_utf8_lossy(data);
    match list_request(&raw) {
        Ok(req) => {
            assert!(
                std::time::Instant::now().checked_add(req.timeout).is_some(),
                "a watch deadline that overflows: {:?}",
                req.timeout
            );
            let obj = json!({"metadata": {"name": "a", "namespace": "n", "labels": {"app": "web", "tier": "1"}}});
            let _ = req.labels.matches(&obj) && req.fields.matches(&obj);
        }
        Err(e) => {
            assert_eq!(e.code, 400, "unexpected code for {raw:?}");
            assert!(!e.message.is_empty());
        }
    }
});

//! Fuzzes the control plane's request body decoding
//! (`aro_gitops::controlplane::fuzzing::decode_body`): JSON, YAML and Kubernetes protobuf, picked
//! by content type as the HTTP layer picks them. The input is `content-type selector byte, body`.
//!
//! Properties checked besides "never panics":
//! - a refusal is a 400 (or a 415 for a protobuf kind the server cannot read) with a message;
//! - a decoded body re-encoded as JSON decodes to the same value (when it holds no float, whose
//!   last digit JSON may not keep);
//! - reading it as DeleteOptions and the content type as a patch type never panics either.

#![no_main]

use aro_gitops::controlplane::fuzzing::{decode_body, delete_options, patch_type};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const CONTENT_TYPES: [&str; 9] = [
    "application/json",
    "application/yaml",
    "application/apply-patch+yaml",
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
    "application/vnd.kubernetes.protobuf",
    "application/json; charset=utf-8",
    "application/apply-patch+json",
];

fn has_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64(),
        Value::Array(a) => a.iter().any(has_float),
        Value::Object(m) => m.values().any(has_float),
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let content_type = CONTENT_TYPES[usize::from(selector) % CONTENT_TYPES.len()];
    let _ = patch_type(content_type);
    match decode_body(body, content_type) {
        Ok(value) => {
            let _ = delete_options(&value);
            if !has_float(&value) {
                let text = serde_json::to_vec(&value).expect("a decoded body serialises");
                let again = decode_body(&text, "application/json")
                    .expect("a decoded body re-encoded as JSON decodes");
                assert_eq!(again, value, "JSON round trip changed the body");
            }
        }
        Err(e) => {
            assert!(e.code == 400 || e.code == 415, "unexpected code {}", e.code);
            assert!(!e.message.is_empty(), "a refusal without a message");
        }
    }
});

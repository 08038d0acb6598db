//! Fuzzes the patch engines (`aro_gitops::machinery::patch`) on arbitrary JSON pairs. The input is
//! `selector byte, target JSON, NUL, patch JSON`; inputs that are not two JSON documents are skipped.
//!
//! Properties checked besides "never panics":
//! - every engine is atomic: on error the target is unchanged;
//! - a JSON merge patch (RFC 7386) is idempotent: applying it twice gives what applying it once gave;
//! - a strategic merge patch without `$` directives or lists behaves as a JSON merge patch.

#![no_main]

use aro_gitops::machinery::patch::{MergeKeys, json_patch, merge_patch, strategic_merge_patch};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn merge_keys(selector: u8) -> MergeKeys {
    match selector % 4 {
        0 => MergeKeys::builtin("", "Service"),
        1 => MergeKeys::builtin("", "ConfigMap"),
        2 => MergeKeys::builtin("example.com", "Widget")
            .with_key("spec.parts", "name")
            .with_key("spec.parts.ports", "port")
            .with_set("spec.tags"),
        _ => MergeKeys::new().with_key("", "name").with_set("items"),
    }
}

/// Whether `v` holds no list and no `$`-prefixed key (where strategic merge equals JSON merge).
fn plain(v: &Value) -> bool {
    match v {
        Value::Array(_) => false,
        Value::Object(m) => m.iter().all(|(k, v)| !k.starts_with('$') && plain(v)),
        _ => true,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Some(split) = rest.iter().position(|&b| b == 0) else {
        return;
    };
    let (Ok(target), Ok(patch)) = (
        serde_json::from_slice::<Value>(&rest[..split]),
        serde_json::from_slice::<Value>(&rest[split + 1..]),
    ) else {
        return;
    };

    let mut merged = target.clone();
    match merge_patch(&mut merged, &patch) {
        Ok(()) => {
            let mut twice = merged.clone();
            merge_patch(&mut twice, &patch)
                .expect("a merge patch that applied once fails the second time");
            assert_eq!(twice, merged, "merge patch is not idempotent");
        }
        Err(_) => assert_eq!(merged, target, "merge_patch changed the target and failed"),
    }

    let mut patched = target.clone();
    if json_patch(&mut patched, &patch).is_err() {
        assert_eq!(patched, target, "json_patch changed the target and failed");
    }

    let mut strategic = target.clone();
    match strategic_merge_patch(&mut strategic, &patch, &merge_keys(selector)) {
        Ok(()) => {
            if target.is_object() && plain(&target) && plain(&patch) {
                assert_eq!(
                    strategic, merged,
                    "strategic merge differs from merge patch on plain maps"
                );
            }
        }
        Err(_) => assert_eq!(
            strategic, target,
            "strategic_merge_patch changed the target and failed"
        ),
    }
});

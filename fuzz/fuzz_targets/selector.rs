//! Fuzzes label and field selectors (`aro_gitops::selector::LabelSelector`, shared by LIST/WATCH
//! and the renderer's patch targets, and the control plane's field selector). The input is
//! `label selector A, NUL, label selector B, NUL, field selector, NUL, labels` where the labels
//! are `key=value` lines of the object matched.
//!
//! Properties checked besides "never panics":
//! - matching an object equals matching through `matches_with` on its labels;
//! - a selector is the conjunction of its requirements: when A, B and `A,B` all parse, `A,B`
//!   matches exactly when A and B both do;
//! - the empty selector matches everything.

#![no_main]

use aro_gitops::controlplane::fuzzing::FieldSelector;
use aro_gitops::selector::LabelSelector;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(4, '\0');
    let (a, b, field, labels) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
    );
    let labels: Map<String, Value> = labels
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    let obj = json!({"metadata": {"name": "a", "namespace": "n", "labels": labels}});
    let get = |k: &str| labels.get(k).and_then(Value::as_str);

    assert!(LabelSelector::parse("").unwrap().matches(&obj));
    let sa = LabelSelector::parse(a);
    let sb = LabelSelector::parse(b);
    if let Ok(sa) = &sa {
        assert_eq!(
            sa.matches(&obj),
            sa.matches_with(get),
            "matches and matches_with differ"
        );
    }
    if let (Ok(sa), Ok(sb), Ok(both)) = (&sa, &sb, LabelSelector::parse(&format!("{a},{b}"))) {
        assert_eq!(
            both.matches(&obj),
            sa.matches(&obj) && sb.matches(&obj),
            "{a:?},{b:?} is not the conjunction of its parts"
        );
    }
    if let Ok(f) = FieldSelector::parse(field) {
        let _ = f.matches(&obj);
    }
});

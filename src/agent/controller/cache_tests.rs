//! Tests of [`super`]: what a watch's events make of the cache.

use super::*;

fn objects(entries: &[(&str, &str, &str)]) -> Objects {
    let mut out = Objects::new();
    for (ns, name, rv) in entries {
        let text = format!(r#"{{"metadata":{{"name":"{name}","resourceVersion":"{rv}"}}}}"#);
        out.entry(Some(ns.to_string()))
            .or_default()
            .insert(name.to_string(), text.into_boxed_str());
    }
    out
}

#[test]
fn a_relist_names_only_what_changed_meanwhile() {
    let old = objects(&[
        ("a", "kept", "1"),
        ("a", "changed", "2"),
        ("b", "gone", "3"),
    ]);
    let new = objects(&[("a", "kept", "1"), ("a", "changed", "7"), ("c", "new", "8")]);
    let place = |ns: &str, name: &str| (Some(ns.to_string()), name.to_string());
    assert_eq!(
        relisted(&old, &new),
        vec![
            (place("a", "changed"), Some("7".to_string())),
            (place("b", "gone"), None),
            (place("c", "new"), Some("8".to_string())),
        ]
    );
    // A re-list after a 410 that finds the same objects wakes nothing.
    assert!(relisted(&old, &old).is_empty());
}

#[test]
fn a_change_moves_the_stamp_of_its_namespace_only() {
    let (ready, _) = watch::channel(false);
    let mut f = Follower {
        store: Arc::default(),
        failed: Arc::default(),
        changed: Arc::default(),
        stamps: Arc::default(),
        ready,
        echoes: Echoes::default(),
        group: String::new(),
        kind: "ConfigMap".into(),
        building: None,
        echoed: BTreeSet::new(),
    };
    let cm = |ns: &str, name: &str| -> DynamicObject {
        serde_json::from_value(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns, "resourceVersion": "1"}}))
        .unwrap()
    };
    let stamp = |f: &Follower, ns: &str| f.stamps.read().unwrap().get(&Some(ns.into())).copied();
    f.on(Ok(watcher::Event::Init));
    f.on(Ok(watcher::Event::InitApply(cm("a", "x"))));
    f.on(Ok(watcher::Event::InitApply(cm("b", "y"))));
    f.on(Ok(watcher::Event::InitDone));
    let (a, b) = (stamp(&f, "a").unwrap(), stamp(&f, "b").unwrap());
    f.on(Ok(watcher::Event::Apply(cm("a", "z"))));
    assert!(stamp(&f, "a").unwrap() > a);
    assert_eq!(stamp(&f, "b"), Some(b));
    let a = stamp(&f, "a").unwrap();
    f.on(Ok(watcher::Event::Delete(cm("b", "y"))));
    assert!(stamp(&f, "b").unwrap() > b);
    assert_eq!(stamp(&f, "a"), Some(a));
    // A re-list moves every namespace's, gone ones included.
    let b = stamp(&f, "b").unwrap();
    f.on(Ok(watcher::Event::Init));
    f.on(Ok(watcher::Event::InitApply(cm("c", "w"))));
    f.on(Ok(watcher::Event::InitDone));
    assert!(stamp(&f, "a").unwrap() > a && stamp(&f, "b").unwrap() > b);
    assert!(stamp(&f, "c").is_some());
}

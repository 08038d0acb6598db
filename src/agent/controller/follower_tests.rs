//! Tests of [`super`]: what a watch's events make of the cache.

use super::*;

fn objects(entries: &[(&str, &str, &str)]) -> Objects {
    let mut out = Objects::new();
    for (ns, name, rv) in entries {
        let text = format!(r#"{{"metadata":{{"name":"{name}","resourceVersion":"{rv}"}}}}"#);
        out.entry(Some(ns.to_string()))
            .or_default()
            .insert(name.to_string(), PLAIN.pack(text.as_bytes()));
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
        relisted(&old, &new, &PLAIN),
        vec![
            (place("a", "changed"), Some("7".to_string())),
            (place("b", "gone"), None),
            (place("c", "new"), Some("8".to_string())),
        ]
    );
    // A re-list after a 410 that finds the same objects wakes nothing.
    assert!(relisted(&old, &old, &PLAIN).is_empty());
}

/// A follower of ConfigMaps.
fn follower() -> Follower {
    let (ready, _) = watch::channel(false);
    Follower {
        store: Arc::default(),
        codec: KindCodec::default(),
        failed: Arc::default(),
        changed: Arc::default(),
        stamps: Arc::default(),
        ready,
        echoes: Echoes::default(),
        group: Default::default(),
        kind: "ConfigMap".into(),
        building: None,
        echoed: BTreeSet::new(),
    }
}

fn cm(ns: &str, name: &str) -> DynamicObject {
    serde_json::from_value(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "resourceVersion": "1"},
        "data": {"unit": format!("clusters/{name}"), "fleet": "/srv/fleet"}}))
    .unwrap()
}

#[test]
fn a_kind_with_enough_objects_is_packed_with_a_dictionary_and_reads_the_same() {
    let mut f = follower();
    let names: Vec<String> = (0..crate::packed::SAMPLES + 5)
        .map(|i| format!("c{i:05}"))
        .collect();
    f.on(Ok(watcher::Event::Init));
    f.on(Ok(watcher::Event::InitApply(cm("a", &names[0]))));
    f.on(Ok(watcher::Event::InitDone));
    assert!(f.codec.get().is_none(), "one object trains nothing");
    for name in &names[1..] {
        f.on(Ok(watcher::Event::Apply(cm("a", name))));
    }
    let trained = f.codec.clone();
    let codec = trained.get().expect("trained");
    assert!(codec.has_dictionary());
    let before = f.store.read().unwrap().clone();
    for name in &names {
        let text = &before[&Some("a".to_string())][name];
        assert_eq!(
            parse(codec, text),
            serde_json::to_value(cm("a", name)).unwrap()
        );
    }
    // A re-list finding the same objects (packed the same or not) wakes nothing.
    f.on(Ok(watcher::Event::Init));
    for name in &names {
        f.on(Ok(watcher::Event::InitApply(cm("a", name))));
    }
    assert!(f.on(Ok(watcher::Event::InitDone)).is_empty());
    let mut plain = before.clone();
    for text in plain.values_mut().flat_map(HashMap::values_mut) {
        *text = PLAIN.pack(&codec.unpack(text));
    }
    assert!(relisted(&before, &plain, codec).is_empty());
}

#[test]
fn a_change_moves_the_stamp_of_its_namespace_only() {
    let mut f = follower();
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

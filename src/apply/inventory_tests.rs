//! Tests of `inventory.rs`.
use super::*;

fn key(kind: &str, name: &str, version: &str) -> ObjectKey {
    ObjectKey {
        group: "resources.azure.com".into(),
        version: version.into(),
        kind: kind.into(),
        namespace: Some("dev".into()),
        name: name.into(),
    }
}

#[test]
fn names_are_valid_and_distinct_for_similar_paths() {
    let a = name_for("", "clusters/dev");
    let b = name_for("", "clusters-dev");
    assert!(a.starts_with("inventory-clusters-dev-"), "{a}");
    assert_ne!(a, b);
    assert!(a.len() <= 253);
    assert!(
        a.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    );
    assert!(name_for("f", &"x/".repeat(300)).len() <= 253);
    // One unit path in two fleets: two inventories.
    assert_ne!(name_for("a", "clusters/dev"), name_for("b", "clusters/dev"));
    assert_ne!(name_for("a", "clusters/dev"), a);
}

#[test]
fn an_inventory_round_trips_through_its_config_map() {
    let mut inv = Inventory::new("clusters/dev");
    inv.revision = Some("abc".into());
    let created = Decision {
        provenance: Provenance::Created,
        policy: Policy::Manage,
        if_exists: false,
    };
    inv.record(
        &key("ResourceGroup", "rg", "v1api20200601"),
        created,
        Some("d1".into()),
    );
    inv.record(
        &key("ResourceGroup", "other", "v1api20200601"),
        Decision {
            provenance: Provenance::Adopted,
            policy: Policy::Skip,
            if_exists: true,
        },
        None,
    );
    let cm = inv.to_config_map("fleet");
    assert_eq!(cm["metadata"]["annotations"][FLEET_ANNOTATION], "fleet");
    let read = Inventory::from_config_map(&cm).unwrap();
    assert_eq!(read.read_from, Some(name_for("fleet", "clusters/dev")));
    assert_eq!(
        Inventory {
            read_from: None,
            ..read
        },
        inv
    );
}

#[test]
fn identity_ignores_the_api_version() {
    let mut inv = Inventory::new("u");
    let d = Decision {
        provenance: Provenance::Created,
        policy: Policy::Manage,
        if_exists: false,
    };
    inv.record(
        &key("ResourceGroup", "rg", "v1api20200601"),
        d,
        Some("x".into()),
    );
    let newer = key("ResourceGroup", "rg", "v1api20230701");
    assert!(inv.get(&newer).is_some());
    // Re-recording without a digest keeps the last applied one.
    inv.record(&newer, d, None);
    assert_eq!(inv.get(&newer).unwrap().applied.as_deref(), Some("x"));
    assert_eq!(inv.get(&newer).unwrap().version, "v1api20230701");
}

#[test]
fn an_inventory_written_by_another_manager_is_not_trusted() {
    let mut cm = Inventory::new("clusters/dev").to_config_map("");
    cm["data"]["entries"] = Value::String(
        r#"{"group":"","kind":"Namespace","name":"victim-ns","version":"v1","provenance":"created","policy":"manage"}"#.into(),
    );
    let ours = json!({"manager": FIELD_MANAGER, "operation": "Apply", "fieldsV1": {"f:data": {"f:entries": {}}}});
    cm["metadata"]["managedFields"] = json!([ours.clone()]);
    assert!(Inventory::from_config_map(&cm).is_ok());
    cm["metadata"]["managedFields"] = json!([ours, {"manager": "kubectl-edit", "operation": "Update",
        "fieldsV1": {"f:data": {"f:entries": {}}}}]);
    let e = Inventory::from_config_map(&cm).unwrap_err();
    assert!(e.to_string().contains("\"kubectl-edit\""), "{e}");
    assert_eq!(e.unit.as_deref(), Some("clusters/dev"));
    // Annotating it (consent to delete) is no write to its data.
    cm["metadata"]["managedFields"] = json!([{"manager": FIELD_MANAGER, "fieldsV1": {"f:data": {"f:entries": {}}}},
        {"manager": "kubectl-annotate", "fieldsV1": {"f:metadata": {"f:annotations": {}}}}]);
    assert!(Inventory::from_config_map(&cm).is_ok());
    // Entries nobody of the agent wrote.
    cm["metadata"]["managedFields"] =
        json!([{"manager": FIELD_MANAGER, "fieldsV1": {"f:metadata": {}}}]);
    assert!(Inventory::from_config_map(&cm).is_err());
}

#[test]
fn trust_is_judged_alike_on_the_facts_the_caches_keep() {
    let mut cm = Inventory::new("clusters/dev").to_config_map("");
    cm["data"]["entries"] = Value::String(
        r#"{"group":"","kind":"Namespace","name":"n","version":"v1","provenance":"created","policy":"manage"}"#.into(),
    );
    let ours = json!({"manager": FIELD_MANAGER, "operation": "Apply", "time": "t",
        "fieldsV1": {"f:data": {".": {}, "f:entries": {}, "f:revision": {}}, "f:metadata": {"f:labels": {}}}});
    let cases = [
        json!([ours.clone()]),
        json!([ours.clone(), {"manager": "kubectl-edit", "fieldsV1": {"f:data": {"f:entries": {}}}}]),
        json!([ours.clone(), {"manager": "kubectl-annotate", "fieldsV1": {"f:metadata": {"f:annotations": {}}}}]),
        json!([{"manager": FIELD_MANAGER, "fieldsV1": {"f:metadata": {}}}]),
        json!([{"manager": FIELD_MANAGER, "fieldsV1": {"f:data": {"f:revision": {}}}}]),
        json!([]),
    ];
    for managed in cases {
        let mut whole = cm.clone();
        whole["metadata"]["managedFields"] = managed.clone();
        let mut kept = cm.clone();
        kept["metadata"]["managedFields"] = trust_facts(&managed);
        assert_eq!(distrust(&whole), distrust(&kept), "{managed}");
        assert!(kept.to_string().len() <= whole.to_string().len());
    }
}

#[test]
fn a_config_map_named_for_another_unit_is_no_inventory_of_it() {
    let mut cm = Inventory::new("clusters/dev").to_config_map("");
    cm["metadata"]["name"] = Value::String("inventory-forged".into());
    let e = Inventory::from_config_map(&cm).unwrap_err();
    assert!(
        e.to_string()
            .contains("says it is the inventory of unit clusters/dev"),
        "{e}"
    );
    assert_eq!(
        e.unit, None,
        "the real inventory of clusters/dev is not refused for it"
    );
}

#[test]
fn a_config_map_a_unit_applied_is_no_inventory() {
    let victim = Inventory::new("clusters/prod");
    let mut forger = Inventory::new("clusters/evil");
    forger.record(
        &config_map_key(&name_for("", "clusters/prod")),
        Decision {
            provenance: Provenance::Created,
            policy: Policy::Manage,
            if_exists: false,
        },
        Some("d".into()),
    );
    let cms = [victim.to_config_map(""), forger.to_config_map("")];
    let (found, errors, _) = from_config_maps(cms, &FleetScope::default(), |_| true);
    assert_eq!(found.keys().collect::<Vec<_>>(), vec!["clusters/evil"]);
    assert!(
        errors[0]
            .to_string()
            .contains("applied from git by unit clusters/evil")
    );
}

#[test]
fn a_broken_inventory_names_its_config_map() {
    let mut cm = Inventory::new("u").to_config_map("");
    cm["data"]["entries"] = Value::String("{not json".into());
    let e = Inventory::from_config_map(&cm).unwrap_err();
    assert!(
        e.to_string()
            .contains("ConfigMap/aro-gitops-system/inventory-u-"),
        "{e}"
    );
    assert!(e.to_string().contains("line 1"), "{e}");
}

fn config_map(fleet: &str, unit: &str) -> Value {
    let mut inv = Inventory::new(unit);
    inv.record(
        &key("ResourceGroup", unit, "v1"),
        Decision {
            provenance: Provenance::Created,
            policy: Policy::Manage,
            if_exists: false,
        },
        Some("d".into()),
    );
    inv.to_config_map(fleet)
}

#[test]
fn an_agent_reads_its_fleets_inventories_and_leaves_the_others_alone() {
    let scope = FleetScope::new("a", None);
    let cms = vec![
        config_map("a", "clusters/mine"),
        config_map("b", "clusters/theirs"),
        config_map("b", "clusters/mine"),
        config_map("", "clusters/old-declared"),
        config_map("", "clusters/old-undeclared"),
    ];
    let declared = |u: &str| u != "clusters/old-undeclared";
    let (own, broken, foreign) = from_config_maps(cms.clone(), &scope, declared);
    assert!(broken.is_empty(), "{broken:?}");
    assert_eq!(
        own.keys().collect::<Vec<_>>(),
        ["clusters/mine", "clusters/old-declared"]
    );
    assert_eq!(own["clusters/mine"].read_from, None, "written as fleet a's");
    assert_eq!(
        own["clusters/old-declared"].read_from,
        Some(name_for("", "clusters/old-declared")),
        "named anew when written"
    );
    assert_eq!(foreign["b"], ["clusters/theirs", "clusters/mine"]);
    assert_eq!(foreign[""], ["clusters/old-undeclared"]);
    // Taking fleet b over: its inventories are read as this fleet's, ours first.
    let taking = FleetScope::new("a", Some("b".into()));
    let (own, _, foreign) = from_config_maps(cms, &taking, declared);
    assert!(!foreign.contains_key("b"));
    assert_eq!(own["clusters/mine"].read_from, None);
    assert_eq!(
        own["clusters/theirs"].read_from,
        Some(name_for("b", "clusters/theirs"))
    );
}

#[test]
fn a_config_map_at_the_same_resource_version_keeps_its_decoding() {
    let scope = FleetScope::new("a", None);
    let at = |unit: &str, rv: &str| {
        let mut cm = config_map("a", unit);
        cm["metadata"]["resourceVersion"] = Value::String(rv.into());
        cm
    };
    let first = decode_config_maps([at("clusters/x", "1"), at("clusters/y", "1")], &scope);
    // x's ConfigMap now holds nothing: at the same resourceVersion the earlier decoding is kept
    // (the cache never shows other contents at one version); at a new one it is decoded again.
    let mut emptied = Inventory::new("clusters/x").to_config_map("a");
    emptied["metadata"]["resourceVersion"] = Value::String("1".into());
    let kept = decode_config_maps_after([emptied.clone(), at("clusters/y", "1")], &scope, &first);
    let entries = |d: &[Decoded]| -> Vec<usize> {
        assemble(d, &scope, |_| true)
            .0
            .values()
            .map(|i| i.entries.len())
            .collect()
    };
    assert_eq!(entries(&kept), [1, 1]);
    emptied["metadata"]["resourceVersion"] = Value::String("2".into());
    let again = decode_config_maps_after([emptied, at("clusters/y", "1")], &scope, &first);
    assert_eq!(entries(&again), [0, 1]);
}

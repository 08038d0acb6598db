//! Tests of [`super::wakes_of`]: the wake index of a revision, each unit's keys kept while
//! nothing they are made of changed.

use super::*;
use crate::agent::controller::cache::Change;
use crate::agent::pass::prepare::{PreparedUnit, prepare};
use crate::object::ObjectKey;
use crate::unit::Unit;

fn examples() -> std::path::PathBuf {
    std::fs::canonicalize(concat!(env!("CARGO_MANIFEST_DIR"), "/examples-repo")).unwrap()
}

fn prepared(unit: &str) -> PreparedUnit {
    let unit = Unit { path: unit.into() };
    let p = prepare(&examples(), &unit);
    assert!(p.is_ok(), "{unit:?} prepares");
    (unit, p)
}

fn revision(units: Vec<PreparedUnit>) -> Revision {
    Revision::of_units(units)
}

fn created() -> crate::plan::policy::Decision {
    crate::plan::policy::decide_create(&serde_json::json!({}), None, Ok(false)).unwrap()
}

fn change(k: &ObjectKey) -> Change {
    Change::Object(inventory::Identity::from(k), None)
}

fn control_plane(rev: &Revision, unit: usize) -> ObjectKey {
    let p = rev.units[unit].1.as_ref().unwrap();
    (p.objects.iter())
        .find(|o| o.key.kind == "AROControlPlane")
        .map(|o| o.key.clone())
        .unwrap()
}

#[test]
fn a_units_keys_are_made_again_only_when_what_they_are_made_of_changed() {
    let rev = revision(vec![prepared("clusters/dev"), prepared("clusters/prod")]);
    let mut kept = WakeKeys::default();
    let w = wakes_of(&rev, &BTreeMap::new(), &mut kept);
    assert_eq!(w.units(&change(&control_plane(&rev, 0))), [0].into());
    assert_eq!(w.units(&change(&control_plane(&rev, 1))), [1].into());
    // The identity dev's clusters use (rendered by dev) wakes the units whose clusters use it.
    let identity = crate::identity::identity_key("aro-dev", "aro-identity");
    assert!(w.units(&change(&identity)).contains(&0));
    assert!(w.holding((&identity).into()).any(|u| u == 0));
    let dev_keys = kept.units["clusters/dev"].2.as_ptr();

    // prod's inventory holds an object no unit renders: its change wakes prod, and dev's keys
    // are the ones made before.
    let stray = ObjectKey {
        group: Default::default(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: Some("elsewhere".into()),
        name: "old".into(),
    };
    let mut inv = Inventory::new("clusters/prod");
    inv.record(&stray, created(), None);
    let inventories = BTreeMap::from([("clusters/prod".to_string(), inv.clone())]);
    let w = wakes_of(&rev, &inventories, &mut kept);
    assert_eq!(w.units(&change(&stray)), [1].into());
    assert_eq!(kept.units["clusters/dev"].2.as_ptr(), dev_keys);

    // The inventory written again (a new entry): made again.
    inv.record(
        &ObjectKey {
            name: "older".into(),
            ..stray.clone()
        },
        created(),
        None,
    );
    let inventories = BTreeMap::from([("clusters/prod".to_string(), inv)]);
    let w = wakes_of(&rev, &inventories, &mut kept);
    assert_eq!(
        w.units(&change(&ObjectKey {
            name: "older".into(),
            ..stray.clone()
        })),
        [1].into()
    );

    // dev prepared again (a new preparation, as a commit gives): its keys are made again; the
    // index answers as before.
    let rev = revision(vec![prepared("clusters/dev"), rev.units[1].clone()]);
    let w = wakes_of(&rev, &inventories, &mut kept);
    let now = rev.units[0].1.as_ref().unwrap();
    assert!(Arc::ptr_eq(&kept.units["clusters/dev"].0, now));
    assert_eq!(w.units(&change(&control_plane(&rev, 0))), [0].into());
    assert!(w.units(&change(&identity)).contains(&0));
    // A unit that is no longer prepared is no longer kept.
    let rev = revision(vec![
        (
            Unit {
                path: "clusters/dev".into(),
            },
            Err(vec![]),
        ),
        rev.units[1].clone(),
    ]);
    let w = wakes_of(&rev, &inventories, &mut kept);
    assert!(!kept.units.contains_key("clusters/dev"));
    assert!(
        w.units(&change(&control_plane(
            &revision(vec![prepared("clusters/dev")]),
            0
        )))
        .is_empty()
    );
}

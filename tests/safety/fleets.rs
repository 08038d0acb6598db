//! See `tests/safety.rs`. Case 4: fleets sharing a management cluster. Each agent names its fleet
//! on every inventory and object; another fleet's are left alone (never pruned, adopted or
//! updated) and reported once, and taking them over is explicit.
use super::ownership::{live_names, run, simulated_azure};
#[allow(unused_imports)]
use super::*;

/// A second fleet on `a`'s cluster: a copy of `a`'s repository (another URL, so another fleet)
/// without `clusters/dev`, committed in its own work tree.
fn second_fleet(a: &Fleet) -> Fleet {
    let repo = a.dir().join("repo-b");
    git::copy_dir(&a.repo, &repo);
    std::fs::remove_dir_all(repo.join(DEV)).expect("remove clusters/dev");
    git::init_and_commit(&repo, "fleet b: prod only");
    Fleet::at(repo, a.state.clone())
}

#[test]
fn case_04_another_fleets_clusters_are_left_alone_and_taking_them_over_is_explicit() {
    let (a, _) = Fleet::git();
    a.run_binary_once();
    let azure_before = simulated_azure(&a);
    let dev_objects = live_names(&a, "v1", "ConfigMap", Some("aro-dev"));
    let a_name = a.scope().name;
    let ns = a.get("v1", "Namespace", None, "aro-dev").expect("aro-dev");
    assert_eq!(
        ns["metadata"]["annotations"]["aro-gitops.dev/fleet"],
        a_name.as_str()
    );

    let b = second_fleet(&a);
    let warning = format!("warning: fleet {a_name:?} also lives on this cluster");

    // plan: fleet a is said, its clusters are not "removed from the fleet", and b's prod, whose
    // objects are a's, is refused by name.
    let plan = b.plan(&["--allow-deletion"]);
    assert_eq!(plan.code, 1, "{}", plan.all());
    assert!(plan.stdout.contains(&warning), "{}", plan.all());
    assert!(
        plan.stdout
            .contains(&format!("belongs to fleet {a_name:?}")),
        "{}",
        plan.all()
    );
    let json = b.plan(&["--allow-deletion", "-o", "json"]).json();
    let units: Vec<&str> = (json["clusters"].as_array().expect("clusters").iter())
        .map(|c| c["unit"].as_str().expect("unit"))
        .collect();
    assert_eq!(
        units,
        ["clusters/prod"],
        "fleet a's clusters are not b's to remove"
    );

    // run, with deletion allowed: nothing of fleet a is deleted or changed.
    let out = run(&b, &["--allow-deletion"]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert_eq!(
        out.stdout.matches(&warning).count(),
        1,
        "said once:\n{}",
        out.all()
    );
    assert!(
        out.all().contains(&format!("belongs to fleet {a_name:?}")),
        "{}",
        out.all()
    );
    assert!(out.all().contains("clusters/prod: Failed"), "{}", out.all());
    assert_eq!(simulated_azure(&a), azure_before);
    assert_eq!(
        live_names(&a, "v1", "ConfigMap", Some("aro-dev")),
        dev_objects
    );
    assert!(a.get("v1", "Namespace", None, "aro-dev").is_some());

    // drift of b reads only its own inventories (none): no checkout of a's commits.
    let drift = b.aro_gitops(&["drift"]);
    assert_eq!(drift.code, 0, "{}", drift.all());
    assert!(drift.stdout.contains(&warning), "{}", drift.all());

    // Fleet a goes on as before: converged, nothing to do.
    let again = run(&a, &[]);
    assert_eq!(again.code, 0, "{}", again.all());

    // Taking fleet a over is explicit, and plan says so.
    let plan = b.plan(&["--take-over-fleet", &a_name]);
    assert!(
        plan.stdout
            .contains(&format!("taking over fleet {a_name:?}")),
        "{}",
        plan.all()
    );
    assert!(!plan.stdout.contains(&warning), "{}", plan.all());
}

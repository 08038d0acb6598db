//! The repository's `rollout:` settings (issue 29) through the binary: `aro-gitops validate
//! <repo>` accepts a good section (saying which path globs select no unit), and for a bad one
//! names the settings file, the field and what is wrong, fails, and still validates every unit.

mod common;

use common::fleet::{Fleet, Output, aro_gitops_in};

const GOOD: &str = r#"rollout:
  waves:
    - name: dev
      units: ["clusters/dev*"]
    - name: prod
      selector: {matchLabels: {env: prod}}
  maxUnavailable: 25%
  soak: 10m
  failureThreshold: 1
  windows:
    - kind: deny
      schedule: "0 0 * * 6"
      duration: 48h
      timeZone: Europe/Berlin
      units: ["clusters/prod*"]
    - kind: allow
      schedule: "0 2 * * *"
      duration: 4h
      selfHeal: true
"#;

fn validate(fleet: &Fleet) -> Output {
    let repo = fleet.repo.to_str().expect("UTF-8 path");
    aro_gitops_in(fleet.dir(), &["validate", repo])
}

#[test]
fn validate_checks_the_rollout_settings() {
    let (fleet, _) = Fleet::git();
    fleet.write("aro-gitops.yaml", GOOD);
    fleet.commit("roll out in waves, inside maintenance windows");
    let good = validate(&fleet);
    good.expect_code(0);
    assert!(good.stdout.contains("clusters/prod: ok"), "{}", good.all());
    assert!(!good.stdout.contains("warning"), "{}", good.all());

    // A glob that selects no unit is said, and does not fail validation.
    fleet.write(
        "aro-gitops.yaml",
        &GOOD.replace("clusters/prod*", "clusters/prd*"),
    );
    let typo = validate(&fleet);
    typo.expect_code(0);
    assert!(
        typo.stdout.contains(
            "warning: aro-gitops.yaml: rollout.windows[0].units[0]: \"clusters/prd*\" selects no unit"
        ),
        "{}",
        typo.all()
    );

    for (edit, says) in [
        (
            ("timeZone: Europe/Berlin", "timeZone: Europe/Berln"),
            "error: aro-gitops.yaml: rollout.windows[0].timeZone: \"Europe/Berln\" is not an IANA time zone name",
        ),
        (
            ("maxUnavailable: 25%", "maxUnavailabel: 25%"),
            "error: aro-gitops.yaml: rollout.maxUnavailabel: unknown field; did you mean maxUnavailable?",
        ),
        (
            ("- name: prod", "- name: dev"),
            "error: aro-gitops.yaml: rollout.waves[1].name: wave \"dev\" is named twice",
        ),
        (
            ("\"0 2 * * *\"", "\"0 2 * *\""),
            "error: aro-gitops.yaml: rollout.windows[1].schedule: \"0 2 * *\" has 4 fields",
        ),
    ] {
        fleet.write("aro-gitops.yaml", &GOOD.replace(edit.0, edit.1));
        fleet.commit("a mistake in rollout:");
        let bad = validate(&fleet);
        assert_ne!(bad.code, 0, "{}", bad.all());
        assert!(
            bad.stdout.contains(says),
            "wanted {says:?} in\n{}",
            bad.all()
        );
        // The units are validated all the same.
        assert!(bad.stdout.contains("clusters/dev: ok"), "{}", bad.all());
        assert!(!bad.all().contains("panicked"), "{}", bad.all());
    }
}

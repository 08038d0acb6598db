//! The exit codes of `aro-gitops plan`, as `terraform plan -detailed-exitcode`: 0 no changes,
//! 2 changes, 1 errors (the plan is incomplete). One table, over plans against the base revision and
//! against live state (the fleet's first commit applied by one run); the first row of each code
//! against base is checked in every output format, live rows in JSON.

use super::base::{POLICY, add_invalid_rg, extra_rg, resize_dev_workers};
use super::*;

/// One row: what it shows, `--base` (None: against live state), `--head`, more arguments, the code.
type Row<'a> = (&'a str, Option<&'a str>, &'a str, &'a [&'a str], i32);

#[test]
fn exit_codes() {
    let (f, first) = Fleet::git();
    resize_dev_workers(&f);
    let resized = f.commit("bigger dev workers");
    f.checkout(&first, "components");
    add_invalid_rg(&f);
    let invalid = f.commit("both policies on one object");
    f.checkout(&first, DEV);
    f.write(
        "clusters/dev/extra-rg.yaml",
        &extra_rg(&format!("    {POLICY}: manage")),
    );
    f.add_resource(DEV, "extra-rg.yaml");
    let with_rg = f.commit("a resource group managed by the agent");
    let missing = "0123456789abcdef0123456789abcdef01234567";
    // Live state: the examples as the agent applies them.
    let out = f.aro_gitops(&[
        "run",
        "--ref",
        &first,
        "--once",
        "--sim-delay",
        "0s",
        "--timeout",
        "60s",
    ]);
    assert_eq!(out.code, 0, "the run did not converge:\n{}", out.all());

    let table: &[Row] = &[
        ("same revision", Some(&first), &first, &[], 0),
        ("a node pool resized", Some(&first), &resized, &[], 2),
        ("a validation error in head", Some(&first), &invalid, &[], 1),
        ("the resize reverted", Some(&resized), &first, &[], 2),
        // Head renders; a base that did not shows head as all new.
        (
            "a validation error in base only",
            Some(&invalid),
            &first,
            &[],
            2,
        ),
        // A blocked deletion changes nothing: the plan says why, and the code is 0.
        ("only a blocked deletion", Some(&with_rg), &first, &[], 0),
        (
            "that deletion allowed",
            Some(&with_rg),
            &first,
            &["--allow-deletion"],
            2,
        ),
        ("an unknown head commit", Some(&first), missing, &[], 1),
        (
            "an unknown base branch",
            Some("no-such-branch"),
            &first,
            &[],
            1,
        ),
        ("live: what was applied", None, &first, &[], 0),
        ("live: a node pool resized", None, &resized, &[], 2),
        ("live: a validation error", None, &invalid, &[], 1),
        ("live: a new managed resource group", None, &with_rg, &[], 2),
        (
            "live: a kubeconfig that does not exist, no base to fall back to",
            None,
            &first,
            &["--kubeconfig", "/nonexistent/kubeconfig"],
            1,
        ),
    ];
    let mut failures = Vec::new();
    let mut formats_checked = std::collections::BTreeSet::new();
    for (what, base, head, args, want) in table {
        let formats: &[&str] = if base.is_none() {
            &["json"]
        } else if formats_checked.insert(*want) {
            &["text", "json", "markdown"]
        } else {
            &["text"]
        };
        for format in formats {
            let mut all = vec!["-o", format];
            all.extend_from_slice(args);
            let out = match base {
                Some(base) => f.plan_revs(base, head, &all),
                None => {
                    all.extend_from_slice(&["--head", head]);
                    f.plan(&all)
                }
            };
            if out.code != *want {
                failures.push(format!(
                    "{what} ({format}): want {want}, got\n{}",
                    out.all()
                ));
            } else if *want == 1 && out.stdout.is_empty() && !out.stderr.contains("error") {
                failures.push(format!(
                    "{what} ({format}): exit 1 without saying why:\n{}",
                    out.all()
                ));
            } else if *format == "json" && !out.stdout.is_empty() {
                let plan = out.json();
                let against = if base.is_some() { "base" } else { "live" };
                if plan["against"] != against {
                    failures.push(format!("{what}: compared with {}", plan["against"]));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

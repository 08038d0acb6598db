//! Reports built from unit outcomes: phase rules, stable bytes, no Secret data, schema validity,
//! the Markdown and the terminal summary.

use super::fixtures::{REVISION, SECRET_VALUE, cluster_key, key, outcome_at, troubled_outcome};
use super::*;
use crate::validate::validate_report;
use crate::yaml;
use serde_json::Value;
use std::path::Path;

fn yaml_value(report: &ClusterReport) -> Value {
    yaml::from_str(&to_yaml(report)).expect("report YAML parses")
}

fn unknown_unit() -> UnitOutcome {
    UnitOutcome {
        rendered_at: None,
        held: None,
        unit: "clusters/broken".into(),
        cluster: None,
        revision: REVISION.into(),
        stale_source: Some("fetch failed: connection refused".into()),
        azure: AzureMode::Real,
        objects: Vec::new(),
        errors: vec![UnitError {
            object: None,
            file: Some("clusters/broken/kustomization.yaml".into()),
            message: "kustomize: accumulating resources:\n  missing file arocluster.yaml".into(),
            ..Default::default()
        }],
        standing: crate::report::Standing::unknown(None),
    }
}

#[test]
fn phase_rules() {
    assert_eq!(phase(&outcome_at(11)), Phase::Converged);
    assert_eq!(phase(&outcome_at(4)), Phase::Progressing);
    assert_eq!(phase(&troubled_outcome()), Phase::Failed);

    let mut blocked = troubled_outcome();
    blocked.errors.clear();
    blocked.objects.retain(|o| o.action != ObjectAction::Failed);
    assert_eq!(phase(&blocked), Phase::Blocked);

    let mut error_only = outcome_at(11);
    error_only.errors = unknown_unit().errors;
    assert_eq!(phase(&error_only), Phase::Failed);

    // A deleted object that is not ready does not hold convergence back.
    let mut deleted = outcome_at(11);
    deleted.objects.push(ObjectOutcome {
        key: key("cluster.x-k8s.io/v1beta2", "MachinePool", "old"),
        action: ObjectAction::Deleted,
        ready: false,
        reason: None,
        message: None,
    });
    assert_eq!(phase(&deleted), Phase::Converged);

    // A failed step on the chain (ASO severity Error) fails the unit even if every object applied.
    let mut chain_failed = outcome_at(11);
    let mut live = fixtures::live_at(11);
    for o in live.iter_mut().filter(|o| o["kind"] == "VirtualNetwork") {
        o["status"]["conditions"] =
            fixtures::not_ready("Conflict", "Error", "address space overlaps");
    }
    chain_failed.standing = crate::report::Standing::of(&live, chain_failed.cluster.as_ref());
    assert_eq!(phase(&chain_failed), Phase::Failed);
    assert_eq!(build(&chain_failed).phase, Phase::Failed);
}

#[test]
fn a_unit_no_pass_reached_or_cut_short_says_so_and_never_converged() {
    // Before any pass: no object, no error. Not "every object ready".
    let why = "not started: the run's deadline (--timeout) passed before a pass reached this unit";
    let mut not_started = outcome_at(11);
    not_started.objects.clear();
    not_started.standing = Standing::not_started(why.into());
    assert_eq!(phase(&not_started), Phase::NotStarted);
    let report = build(&not_started);
    assert_eq!(
        (report.phase, report.pass.as_deref()),
        (Phase::NotStarted, Some(why))
    );
    assert_eq!(validate_report(&yaml_value(&report)), Vec::<String>::new());
    let md = to_markdown(&report);
    assert!(md.contains("NotStarted (no pass yet)"), "{md}");
    assert!(md.contains("**Not started.**"), "{md}");
    assert!(
        md.contains("Not known: no pass has read the cluster yet."),
        "{md}"
    );
    assert_eq!(report.chain.stage, standing::NOT_READ);
    let table = summary_table(&[not_started.clone()], None);
    let row = table.lines().nth(1).expect("a row");
    assert!(row.contains("NotStarted") && row.ends_with(" -"), "{table}");
    // A check that failed it before any pass: Failed says more.
    not_started.errors = unknown_unit().errors;
    assert_eq!(phase(&not_started), Phase::Failed);

    // Cut short at step 4: interrupted, and the step it reached.
    let mut interrupted = outcome_at(4);
    interrupted.standing.pass = PassState::Interrupted("interrupted: the agent shut down".into());
    assert_eq!(phase(&interrupted), Phase::Interrupted);
    let report = build(&interrupted);
    assert_eq!(validate_report(&yaml_value(&report)), Vec::<String>::new());
    let md = to_markdown(&report);
    assert!(
        md.contains("Interrupted (reached step 4/10, HcpClusterReady)"),
        "{md}"
    );
    assert_eq!(
        yaml_value(&report)["pass"],
        "interrupted: the agent shut down"
    );
    // Even over objects that were all ready.
    let mut cut = outcome_at(11);
    cut.standing.pass = PassState::Interrupted("interrupted: lost the Lease".into());
    assert_eq!(phase(&cut), Phase::Interrupted);
}

#[test]
fn converged_needs_the_chain_s_last_step_when_the_unit_writes_aro_objects() {
    // Every object reported ready, but the chain waits at step 4: not converged.
    let mut ahead = outcome_at(4);
    for o in &mut ahead.objects {
        o.ready = true;
    }
    assert_eq!(phase(&ahead), Phase::Progressing);
    // The same chain, and the ARO objects only read (reconcile-policy skip): nothing for the agent
    // to wait for.
    for o in ahead.objects.iter_mut() {
        if crate::kinds::is_aro_kind(&o.key.group, &o.key.kind) {
            o.action = ObjectAction::Skipped;
        }
    }
    assert_eq!(phase(&ahead), Phase::Converged);
    // A unit of no ARO object converges on its objects alone.
    let mut plain = outcome_at(4);
    plain
        .objects
        .retain(|o| !crate::kinds::is_aro_kind(&o.key.group, &o.key.kind));
    for o in &mut plain.objects {
        o.ready = true;
    }
    assert_eq!(phase(&plain), Phase::Converged);
}

#[test]
fn same_state_same_bytes_whatever_the_input_order() {
    let outcome = troubled_outcome();
    let (a, b) = (build(&outcome), build(&outcome));
    assert_eq!(to_yaml(&a), to_yaml(&b));
    assert_eq!(to_markdown(&a), to_markdown(&b));

    let mut shuffled = outcome.clone();
    shuffled.objects.reverse();
    let mut live = fixtures::live_at(2);
    live.reverse();
    shuffled.standing = crate::report::Standing::of(&live, shuffled.cluster.as_ref());
    shuffled.errors.push(shuffled.errors[0].clone());
    shuffled.errors.reverse();
    let c = build(&shuffled);
    assert_eq!(to_yaml(&a), to_yaml(&c));
    assert_eq!(to_markdown(&a), to_markdown(&c));
}

#[test]
fn objects_follow_the_chain_and_blockers_are_sorted_once() {
    let report = build(&troubled_outcome());
    let kinds: Vec<&str> = report.objects.iter().map(|o| o.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "Namespace",
            "Cluster",
            "AROCluster",
            "AROControlPlane",
            "MachinePool",
            "AROMachinePool"
        ]
    );
    let blocked = &report.objects[3];
    assert_eq!(blocked.blocked_on, ["AROCluster/aro-dev/dev"]);
}

#[test]
fn no_secret_data_in_any_report() {
    let outcome = outcome_at(11);
    assert!(fixtures::live_at(11).iter().any(|o| o["kind"] == "Secret"));
    let report = build(&outcome);
    for text in [to_yaml(&report), to_markdown(&report)] {
        assert!(!text.contains(SECRET_VALUE), "{text}");
    }
    assert!(!summary_table(&[outcome], None).contains(SECRET_VALUE));
}

#[test]
fn messages_about_a_secret_are_withheld() {
    let mut outcome = outcome_at(11);
    let secret = key("v1", "Secret", "dev-kubeconfig");
    let leak = format!(
        "Secret \"dev-kubeconfig\" is invalid: data[value]: Invalid value: \"{SECRET_VALUE}\""
    );
    outcome.objects.push(ObjectOutcome {
        key: secret.clone(),
        action: ObjectAction::Failed,
        ready: false,
        reason: Some("Invalid".into()),
        message: Some(leak.clone()),
    });
    outcome.errors.push(UnitError {
        object: Some(secret),
        file: None,
        message: leak,
        ..Default::default()
    });
    let report = build(&outcome);
    let secret_row = report.objects.iter().find(|o| o.kind == "Secret").unwrap();
    assert_eq!(secret_row.reason.as_deref(), Some("Invalid"));
    assert_eq!(secret_row.message.as_deref(), Some(WITHHELD));
    assert_eq!(report.errors[0].message, WITHHELD);
    for text in [to_yaml(&report), to_markdown(&report)] {
        assert!(!text.contains(SECRET_VALUE), "{text}");
    }
}

#[test]
fn a_cluster_key_without_namespace_is_reported_as_default() {
    let mut outcome = outcome_at(1);
    outcome.cluster.as_mut().unwrap().namespace = None;
    let report = build(&outcome);
    assert_eq!(report.cluster.as_ref().unwrap().namespace, "default");
    assert_eq!(validate_report(&yaml_value(&report)), Vec::<String>::new());
    assert_eq!(
        report_paths(outcome.cluster.as_ref().unwrap()).0,
        Path::new("reports/default/dev.md")
    );
}

#[test]
fn yaml_validates_against_the_schema_and_round_trips() {
    for outcome in [
        outcome_at(1),
        outcome_at(6),
        outcome_at(11),
        troubled_outcome(),
        unknown_unit(),
    ] {
        let report = build(&outcome);
        let parsed = yaml_value(&report);
        assert_eq!(
            validate_report(&parsed),
            Vec::<String>::new(),
            "{}",
            to_yaml(&report)
        );
        assert_eq!(parsed, serde_json::to_value(&report).unwrap());
    }
}

#[test]
fn yaml_names_the_simulator_and_carries_no_time() {
    let text = to_yaml(&build(&outcome_at(4)));
    assert!(text.contains("azure: simulated\n"), "{text}");
    assert!(text.starts_with(
        "apiVersion: aro-gitops.dev/v1alpha1\nkind: ClusterReport\nunit: clusters/dev\n"
    ));
    assert!(!text.contains("lastTransitionTime") && !text.contains("2026-01-01"));
    let v = yaml_value(&build(&unknown_unit()));
    assert_eq!(v["cluster"], Value::Null);
    assert_eq!(v["staleSource"], "fetch failed: connection refused");
    assert_eq!(v["errors"][0]["object"], Value::Null);
    assert_eq!(v["chain"]["step"], 0);
}

#[test]
fn markdown_of_a_progressing_simulated_cluster() {
    let md = to_markdown(&build(&outcome_at(4)));
    let lines: Vec<&str> = md.lines().collect();
    assert_eq!(
        lines[0],
        "# aro-dev/dev: Progressing (step 4/10, HcpClusterReady)"
    );
    assert_eq!(
        lines[2],
        "**Stage:** waiting for the hosted control plane to be ready (HcpOpenShiftCluster is not yet ready)"
    );
    assert_eq!(lines[4], "> [!WARNING]");
    assert!(
        lines[5]
            .starts_with("> **Simulated Azure.** Nothing in this report happened in real Azure")
    );
    assert!(md.contains(
        "- **Revision:** `4ce1881` (`4ce1881c05da374ce1881c05da374ce1881c05da`), the commit"
    ));
    assert!(md.contains("- **Unit:** `clusters/dev`\n- **Azure:** simulated (not real Azure)\n"));
    assert!(md.contains(
        "| # | Step | State | Detail |\n|---|---|---|---|\n\
         | 1 | infrastructure created | done | 3/3 infrastructure resources exist |\n"
    ));
    assert!(md.contains(
        "| 4 | HcpClusterReady | **waiting** | HcpOpenShiftCluster is not yet ready |\n"
    ));
    assert!(md.contains(
        "| 5 | kubeconfig Secret written | waiting | Secret/dev-kubeconfig not written yet |\n"
    ));
    assert!(md.contains("Steps are numbered 1 to 10 by aro-gitops"));
    assert!(md.contains(
        "## Objects (4)\n\n| Kind | Name | Action | Ready | Reason / Message |\n|---|---|---|---|---|\n\
         | Namespace | aro-dev | unchanged | yes |  |\n\
         | Cluster | dev | created | no |  |\n\
         | AROCluster | dev | updated | no |  |\n\
         | AROMachinePool | dev-workers | unchanged | no |  |\n"
    ));
    assert!(md.ends_with("## Errors (0)\n\nNone.\n"), "{md}");
}

#[test]
fn markdown_of_a_failed_cluster_escapes_free_text() {
    let md = to_markdown(&build(&troubled_outcome()));
    assert!(
        md.starts_with("# aro-dev/dev: Failed (step 2/10, ResourcesReady)\n"),
        "{md}"
    );
    assert!(
        md.contains("| AROControlPlane | dev | blocked on `AROCluster/aro-dev/dev` | no |  |\n")
    );
    assert!(md.contains(
        "| MachinePool | dev-workers | **failed** | no | Invalid: spec.replicas: must be \\| at most &lt;10&gt; \\*now\\* |\n"
    ));
    assert!(md.contains(
        "## Errors (1)\n\n- `MachinePool/aro-dev/dev-workers` in `clusters/dev/machinepools.yaml`: \
         MachinePool.cluster.x-k8s.io \"dev-workers\" is invalid: spec.replicas: Invalid value: -1\n"
    ));
}

#[test]
fn markdown_of_a_unit_without_cluster_on_real_azure() {
    let md = to_markdown(&build(&unknown_unit()));
    assert!(
        md.starts_with("# unit clusters/broken: Failed (no cluster known)\n"),
        "{md}"
    );
    assert!(!md.contains("Simulated Azure"));
    assert!(md.contains("- **Azure:** real\n"));
    assert!(md.contains(
        "> **Stale source.** The repository could not be read (fetch failed: connection refused)"
    ));
    assert!(md.contains("## Objects (0)\n\nNo objects.\n"));
    assert!(md.contains(
        "## Errors (1)\n\n- in `clusters/broken/kustomization.yaml`:\n\n  ```text\n  kustomize: accumulating resources:\n    missing file arocluster.yaml\n  ```\n"
    ));
    assert!(md.ends_with("  ```\n"), "{md}");
    assert!(md.contains("## Dependency chain\n\nNo cluster known: the unit failed before its Cluster was read.\n\n## Objects"));
}

#[test]
fn markdown_of_a_refused_revision_says_so_rather_than_stale() {
    let mut unit = unknown_unit();
    unit.stale_source = Some(format!(
        "/repo: {} abc123: the commit (author Dev <dev@example.com>) is not signed",
        crate::source::signature::REFUSED
    ));
    let md = to_markdown(&build(&unit));
    assert!(
        md.contains(
            "> **Revision refused.** /repo: signature check refused revision abc123: the commit"
        ),
        "{md}"
    );
    assert!(
        md.contains("the last applied revision was applied again"),
        "{md}"
    );
    assert!(!md.contains("Stale source"), "{md}");
}

#[test]
fn markdown_of_a_complete_cluster_and_a_failed_step() {
    let md = to_markdown(&build(&outcome_at(11)));
    assert!(md.starts_with(
        "# aro-dev/dev: Converged (step 10/10, complete)\n\n**Stage:** complete: all steps done\n"
    ));
    let mut failed = outcome_at(11);
    let mut live = fixtures::live_at(11);
    for o in live.iter_mut().filter(|o| o["kind"] == "VirtualNetwork") {
        o["status"]["conditions"] =
            fixtures::not_ready("Conflict", "Error", "address space overlaps");
    }
    failed.standing = crate::report::Standing::of(&live, failed.cluster.as_ref());
    let md = to_markdown(&build(&failed));
    assert!(md.starts_with("# aro-dev/dev: Failed (step 2/10, ResourcesReady failed)\n\n\
        **Stage:** failed at step 2: VirtualNetwork/aro-dev-vnet: Conflict: address space overlaps\n"), "{md}");
    assert!(md.contains("| 2 | ResourcesReady | **FAILED** | VirtualNetwork/aro-dev-vnet: Conflict: address space overlaps |"));
}

#[test]
fn long_cells_are_cut_without_breaking_an_escape() {
    let mut outcome = outcome_at(11);
    outcome.objects[0].message = Some(format!("{}&&&&&&&&&&&&", "x".repeat(295)));
    let md = to_markdown(&build(&outcome));
    let row = md
        .lines()
        .find(|l| l.starts_with("| AROMachinePool"))
        .unwrap();
    assert!(
        row.ends_with(&format!("{}&amp;… |", "x".repeat(295))),
        "{row}"
    );
}

#[test]
fn paths_of_reports() {
    assert_eq!(
        report_paths(&cluster_key()),
        (
            Path::new("reports/aro-dev/dev.md").into(),
            Path::new("reports/aro-dev/dev.yaml").into()
        )
    );
    assert_eq!(
        unit_report_paths("clusters/team-a/dev"),
        (
            Path::new("reports/_units/clusters_team-a_dev.md").into(),
            Path::new("reports/_units/clusters_team-a_dev.yaml").into()
        )
    );
    assert_eq!(
        unit_report_paths("../..").0,
        Path::new("reports/_units/.._...md")
    );
    assert_eq!(
        unit_report_paths("..").0,
        Path::new("reports/_units/_...md")
    );
    assert_eq!(
        outcome_paths(&unknown_unit()).0,
        Path::new("reports/_units/clusters_broken.md")
    );
    assert_eq!(
        outcome_paths(&outcome_at(1)).1,
        Path::new("reports/aro-dev/dev.yaml")
    );
}

#[test]
fn summary_table_lines_up_and_counts_writes() {
    let table = summary_table(
        &[troubled_outcome(), unknown_unit(), outcome_at(11)],
        Some(42),
    );
    assert_eq!(
        table,
        "\
UNIT             CLUSTER      PHASE      CREATED  UPDATED  UNCHANGED  BLOCKED  FAILED  CHAIN
clusters/broken  -            Failed     0        0        0          0        0       0/10 unknown
clusters/dev     aro-dev/dev  Failed     1        1        2          1        1       2/10 ResourcesReady
clusters/dev     aro-dev/dev  Converged  1        1        2          0        0       10/10 complete
42 write requests
"
    );
    assert!(!summary_table(&[], None).contains("write"));
    assert!(summary_table(&[], Some(1)).ends_with("\n1 write request\n"));
}

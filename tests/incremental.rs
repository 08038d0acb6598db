//! Incremental rendering on a real git repository (a copy of `examples-repo/`): between two
//! revisions only the units whose input closure changed render again, as the agent loads a new
//! revision and as `plan --base/--head` renders head.

mod common;

use aro_gitops::agent::incremental::{self, Earlier, PreparedRevision, Why};
use aro_gitops::agent::{PlanRequest, RenderedUnits, Safety, plan};
use aro_gitops::source::{Source, SourceConfig, SyncOutcome};
use common::fleet::{DEV, Fleet, PROD};
use std::path::PathBuf;

/// The agent's source on the fleet's repository, and the revisions it loaded, as the agent loads
/// them: sync, the paths changed since the last revision, the units prepared incrementally.
struct Agent {
    source: Source,
    last: Option<(String, PreparedRevision)>,
}

impl Agent {
    fn new(f: &Fleet) -> Agent {
        let source = Source::open(SourceConfig {
            url: f.repo.display().to_string(),
            reference: "main".parse().expect("a reference"),
            state_dir: f.state.join("source"),
        })
        .expect("the source opens");
        Agent { source, last: None }
    }

    /// Loads the branch tip; returns the units rendered for it (name, why).
    fn load(&mut self) -> Vec<(String, Why)> {
        let revision = match self.source.sync().expect("the source syncs") {
            SyncOutcome::Stale { error, .. } => panic!("stale: {error}"),
            outcome => outcome.revision().clone(),
        };
        let changed: Option<Vec<PathBuf>> = self.last.as_ref().map(|(commit, _)| {
            self.source
                .changed_paths(commit, &revision.commit)
                .expect("the diff")
        });
        let earlier = self.last.as_ref().map(|(_, prepared)| Earlier {
            units: &prepared.units,
            inputs: &prepared.inputs,
            changed: changed.as_deref(),
        });
        let next = incremental::prepare_revision(&revision.checkout, earlier).expect("units");
        // A kept unit's preparation is what a full render gives.
        let full = incremental::prepare_revision(&revision.checkout, None).expect("units");
        for ((u, kept), (_, fresh)) in next.units.iter().zip(&full.units) {
            let (kept, fresh) = (kept.as_ref().expect("prepared"), fresh.as_ref().unwrap());
            let objects = |p: &aro_gitops::agent::prepare::Prepared| {
                p.objects
                    .iter()
                    .map(|o| serde_json::Value::clone(&o.object()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(objects(kept), objects(fresh), "{}", u.name());
        }
        assert_eq!(next.inputs, full.inputs);
        let rendered = next
            .rendered
            .iter()
            .map(|(u, why)| (u.name(), why.clone()))
            .collect();
        self.last = Some((revision.commit, next));
        rendered
    }
}

fn names(rendered: &[(String, Why)]) -> Vec<&str> {
    rendered.iter().map(|(u, _)| u.as_str()).collect()
}

#[test]
fn a_new_revision_renders_only_the_units_whose_inputs_changed() {
    let (f, _) = Fleet::git();
    let mut agent = Agent::new(&f);
    let first = agent.load();
    assert_eq!(names(&first), [DEV, PROD]);
    assert!(first.iter().all(|(_, why)| *why == Why::New), "{first:?}");

    // Nothing new: nothing renders.
    assert!(agent.load().is_empty());

    // One cluster's own parameters: that cluster only.
    f.replace(
        "clusters/dev/cluster-params.yaml",
        "location: eastus",
        "location: westus",
    );
    f.commit("dev moves west");
    assert_eq!(
        agent.load(),
        [(
            DEV.to_string(),
            Why::Changed("clusters/dev/cluster-params.yaml".into())
        )]
    );

    // A file outside every closure: nothing.
    f.write("README.md", "# the fleet, documented\n");
    f.write("clusters/prod/NOTES.md", "prod is prod\n");
    f.commit("docs");
    assert!(agent.load().is_empty());

    // A shared component and a shared base: every unit.
    bigger_disks(&f);
    f.commit("bigger disks everywhere");
    assert_eq!(names(&agent.load()), [DEV, PROD]);

    // The environment component of prod: prod only.
    f.replace(
        "components/prod/kustomization.yaml",
        "value: Standard_D8s_v3",
        "value: Standard_D16s_v3",
    );
    f.commit("bigger prod workers");
    assert_eq!(names(&agent.load()), [PROD]);

    // A new unit renders; the others stay as they were.
    common::git::copy_dir(&f.repo.join(DEV), &f.repo.join("clusters/qa"));
    f.replace("clusters/qa/cluster-params.yaml", "name: dev", "name: qa");
    f.replace(
        "clusters/qa/kustomization.yaml",
        "namespace: aro-dev",
        "namespace: aro-qa",
    );
    f.commit("a qa cluster");
    assert_eq!(agent.load(), [("clusters/qa".to_string(), Why::New)]);

    // A unit removed: the others are not rendered again.
    f.remove("clusters/qa");
    f.commit("no more qa");
    assert!(agent.load().is_empty());
    let (_, last) = agent.last.as_ref().unwrap();
    assert_eq!(last.units.len(), 2);
}

/// Bigger OS disks for every node pool of the shared base.
fn bigger_disks(f: &Fleet) {
    let file = "base/cluster/machinepools.yaml";
    f.write(file, &f.read(file).replace("sizeGiB: 128", "sizeGiB: 256"));
}

/// `plan --base BASE --head HEAD` without a cluster, in process.
fn plan_revs(f: &Fleet, base: &str, head: &str) -> aro_gitops::agent::PlanRun {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime
        .block_on(plan(PlanRequest {
            repo: f.repo.display().to_string(),
            head: head.parse().expect("a reference"),
            base: Some(base.parse().expect("a reference")),
            state_dir: f.state.clone(),
            kubeconfig: None,
            in_cluster: false,
            safety: Safety::default(),
            use_azure_simulator: false,
            fleet: Default::default(),
            verify_signatures: None,
        }))
        .expect("the plan runs")
}

#[test]
fn plan_renders_head_only_for_units_whose_inputs_changed() {
    let (f, base) = Fleet::git();

    // An unrelated change: head renders no unit, and the plan shows nothing to do.
    f.write("README.md", "# the fleet, documented\n");
    let docs = f.commit("docs");
    let run = plan_revs(&f, &base, &docs);
    assert_eq!(run.rendered, RenderedUnits { base: 2, head: 0 });
    assert_eq!(run.preview.exit_code(), 0);
    assert_eq!(run.preview.clusters.len(), 2);
    for c in &run.preview.clusters {
        assert!(c.changes.is_empty() && c.counts.unchanged > 0, "{c:?}");
    }

    // One cluster's change: that cluster renders at head, and only it changes.
    f.replace(
        "clusters/dev/cluster-params.yaml",
        "location: eastus",
        "location: westus",
    );
    let dev = f.commit("dev moves west");
    let run = plan_revs(&f, &docs, &dev);
    assert_eq!(run.rendered, RenderedUnits { base: 2, head: 1 });
    let changed: Vec<&str> = run
        .preview
        .clusters
        .iter()
        .filter(|c| !c.changes.is_empty())
        .map(|c| c.unit.as_str())
        .collect();
    assert_eq!(changed, [DEV]);

    // A shared component: both render at head.
    bigger_disks(&f);
    let shared = f.commit("bigger disks everywhere");
    let run = plan_revs(&f, &dev, &shared);
    assert_eq!(run.rendered, RenderedUnits { base: 2, head: 2 });
    assert!(
        run.preview.clusters.iter().all(|c| !c.changes.is_empty()),
        "{:?}",
        run.preview.clusters
    );
}

/// The long-running agent (`run` without `--once`), end to end: after a commit changing dev only,
/// its debug log shows dev rendered again, and prod kept.
#[test]
fn the_running_agent_renders_again_only_the_changed_unit() {
    use common::kubectl::LineReader;
    use std::process::{Command, Stdio};
    use std::time::Duration;
    let (f, f_first) = Fleet::git();
    let mut child = Command::new(env!("CARGO_BIN_EXE_aro-gitops"))
        .args(["run", "--sim-delay", "0s", "--interval", "1s", "--repo"])
        .arg(&f.repo)
        .arg("--state")
        .arg(&f.state)
        .env(
            "ARO_GITOPS_LOG",
            "warn,aro_gitops::agent=info,aro_gitops::agent::controller::incremental=debug",
        )
        .env("NO_COLOR", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("aro-gitops runs");
    let mut log = LineReader::new(child.stderr.take().expect("stderr"));
    // Stopped however the test ends.
    struct Stop(std::process::Child);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let child = Stop(child);
    let wait = Duration::from_secs(120);
    let first = log.wait_for(wait, "the first revision prepared", |l| {
        l.contains("units prepared")
    });
    assert!(
        first.contains("rendered=2") && first.contains("kept=0"),
        "{first}"
    );
    log.wait_for(wait, "the first reports", |l| {
        l.contains("reports committed")
    });
    let before_commit = log.seen.len();
    let status_before = f.status_commits();

    f.replace(
        "clusters/dev/cluster-params.yaml",
        "location: eastus",
        "location: westus",
    );
    f.commit("dev moves west");
    let line = log.wait_for(wait, "a unit rendered again", |l| {
        l.contains("unit rendered")
    });
    assert!(
        line.contains("unit=clusters/dev")
            && line.contains("clusters/dev/cluster-params.yaml changed"),
        "{line}"
    );
    let prepared = log.wait_for(wait, "the revision prepared", |l| {
        l.contains("units prepared")
    });
    assert!(
        prepared.contains("rendered=1") && prepared.contains("kept=1"),
        "{prepared}"
    );
    log.wait_for(wait, "the new revision", |l| l.contains("new revision"));
    // Issue 30: the new revision's reports are one commit changing dev's two files; prod's
    // report, which the commit leaves as it was, still names the commit it was rendered at.
    log.wait_for(wait, "the new revision's reports", |l| {
        l.contains("reports committed")
    });
    drop(child);
    let status = f.status_commits();
    assert_eq!(status.len(), status_before.len() + 1, "one report commit");
    let changed = common::git::git(
        &f.origin(),
        &["diff", "--name-only", &status_before[0], &status[0]],
    );
    let changed: Vec<&str> = changed.lines().collect();
    assert_eq!(
        changed,
        ["reports/aro-dev/dev.md", "reports/aro-dev/dev.yaml"],
        "only dev's reports change"
    );
    let prod = f
        .report("reports/aro-prod/prod.yaml")
        .expect("prod's report");
    assert!(
        prod.contains(&format!("revision: {f_first}")),
        "prod's report names the commit it was rendered at:\n{prod}"
    );
    let after: Vec<&String> = log
        .seen
        .iter()
        .skip(before_commit)
        .filter(|l| l.contains("unit rendered") && l.contains("clusters/prod"))
        .collect();
    assert!(after.is_empty(), "prod rendered again: {after:?}");
}

/// `plan --base/--head`, unit by unit: base renders each of its units once (that is how their
/// input closures are known); head renders only the units whose closure a change touches, or that
/// base does not have; the others are base's preparation, moved to head, and show no change.
#[test]
fn plan_renders_on_each_side_only_the_units_a_change_needs() {
    use aro_gitops::agent::RenderedNames;
    let (f, first) = Fleet::git();
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let sides = |base: &[&str], head: &[&str]| RenderedNames {
        base: names(base),
        head: names(head),
    };
    let changing = |run: &aro_gitops::agent::PlanRun| -> Vec<String> {
        run.preview
            .clusters
            .iter()
            .filter(|c| c.has_changes() || !c.blocked_deletions.is_empty())
            .map(|c| c.unit.clone())
            .collect()
    };

    // One unit's own file: head renders that unit.
    f.replace(
        "clusters/prod/cluster-params.yaml",
        "subscriptionID: 2c4e6a8b-0d1f-4b3c-8e5a-7c9e1b3d5f70",
        "subscriptionID: 2c4e6a8b-0d1f-4b3c-8e5a-7c9e1b3d5f71",
    );
    let one = f.commit("prod moves subscription");
    let run = plan_revs(&f, &first, &one);
    assert_eq!(run.rendered_names, sides(&[DEV, PROD], &[PROD]));
    assert_eq!(changing(&run), [PROD]);

    // A shared base: every unit renders on both sides.
    bigger_disks(&f);
    let shared = f.commit("bigger disks everywhere");
    let run = plan_revs(&f, &one, &shared);
    assert_eq!(run.rendered_names, sides(&[DEV, PROD], &[DEV, PROD]));
    assert_eq!(changing(&run), [DEV, PROD]);

    // A unit added: head renders it only.
    common::git::copy_dir(&f.repo.join(DEV), &f.repo.join("clusters/qa"));
    f.replace("clusters/qa/cluster-params.yaml", "name: dev", "name: qa");
    f.replace(
        "clusters/qa/kustomization.yaml",
        "namespace: aro-dev",
        "namespace: aro-qa",
    );
    let added = f.commit("a qa cluster");
    let run = plan_revs(&f, &shared, &added);
    assert_eq!(run.rendered_names, sides(&[DEV, PROD], &["clusters/qa"]));
    assert_eq!(changing(&run), ["clusters/qa"]);
    let qa = run
        .preview
        .clusters
        .iter()
        .find(|c| c.unit == "clusters/qa");
    assert!(qa.is_some_and(|c| c.counts.create > 0 && c.counts.unchanged == 0));

    // A unit removed: head renders nothing; what the unit declared leaves (from base's render).
    f.remove("clusters/qa");
    let removed = f.commit("no more qa");
    let run = plan_revs(&f, &added, &removed);
    assert_eq!(run.rendered_names, sides(&[DEV, PROD, "clusters/qa"], &[]));
    assert_eq!(changing(&run), ["clusters/qa"]);
    for c in run
        .preview
        .clusters
        .iter()
        .filter(|c| c.unit != "clusters/qa")
    {
        assert!(c.changes.is_empty() && c.counts.unchanged > 0, "{c:?}");
    }
}
